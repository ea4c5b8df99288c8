#pragma once
/// @file
/// The command line of one `loom` subcommand, and the errors that end it.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loom::cli {

/// Exit status of `loom`: 0 success, 1 a failed check or error, 2 a usage error or invalid input.
enum ExitCode : int { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

/// A malformed command line: `loom` prints the message and the command's usage, then exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Input that is well-formed on the command line but invalid (a bad schema, an unknown
/// dispatch key): `loom` prints the message and exits 2, without the usage text.
class InvalidInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The arguments after the subcommand's name. Options are taken out by name; what remains
/// must be positionals.
class Args {
 public:
  /// Wraps the arguments (argv without the program and subcommand names).
  explicit Args(std::vector<std::string> args) : args_(std::move(args)) {}

  /// Removes `--name VALUE` or `--name=VALUE` and returns VALUE (the last one wins).
  /// @throws UsageError if the value is missing.
  std::optional<std::string> take_option(std::string_view name);
  /// Removes `--name` and returns true if it was present.
  bool take_flag(std::string_view name);
  /// True if -h or --help is present (and removes it).
  bool take_help() { return take_flag("--help") || take_flag("-h"); }
  /// The remaining arguments, which must all be positionals (anything after `--` is one),
  /// between min and max of them.
  /// @throws UsageError naming an unknown option or the wrong count.
  std::vector<std::string> positionals(size_t min, size_t max);
  /// Everything left, untouched (for `loom bench`, which forwards its arguments).
  const std::vector<std::string>& rest() const { return args_; }

 private:
  std::vector<std::string> args_;
};

}  // namespace loom::cli
