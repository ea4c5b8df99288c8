// The `loom` command: what this Loom installation holds (info, ops) and checks for schemas
// and plugins. Each subcommand lives in its own file; this one finds it and reports errors.
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "args.h"
#include "commands.h"
#include "loom/core/error.h"

namespace loom::cli {
namespace {

struct Command {
  std::string_view name;      ///< one or two words: "info", "schema check"
  std::string_view synopsis;  ///< the arguments after the name
  std::string_view summary;   ///< one line for the usage text
  int (*run)(Args&);
};

constexpr Command kCommands[] = {
    {"info", "", "version, build configuration, devices, plugins and preferred providers",
     &run_info},
    {"ops", "[--backend KEY]", "every operator's schema and its providers per dispatch key",
     &run_ops},
    {"schema check", "SCHEMA", "parse an operator schema and print its canonical form",
     &run_schema_check},
    {"plugin check", "[--json] [--timeout SECONDS] PATH",
     "load one plugin in a separate process and report what it registers", &run_plugin_check},
    {"bench", "[--json FILE] [--filter REGEX] [--rounds N] [--list]",
     "run the benchmarks against libtorch (runs loom-bench)", &run_bench},
    {"train", "[--model mlp|cnn] [--epochs N] [--config FILE] [--out DIR] ...",
     "train a model on Fashion-MNIST (runs loom-train; loom train --help)", &run_train},
    {"profile", "[--out DIR] [--shapes] [--flush-seconds S] -- PROGRAM [ARGS...]",
     "run a program that uses Loom with the profiler on; writes DIR/trace.json (Perfetto) and "
     "DIR/profile.txt, prints the time per op",
     &run_profile},
    {"conformance onnx",
     "[--filter SUBSTR] [--verbose] [--json FILE] [--rtol R] [--atol A] [--provider NAME] "
     "[--list-ops] [DIR]",
     "run ONNX's node tests (DIR: /usr/share/libonnx-testdata/data/node) on Loom's ops "
     "(--provider onednn: on that CPU provider's kernels)",
     &run_conformance_onnx},
};

void print_usage(std::ostream& out) {
  out << "usage: loom <command> [arguments]\n\ncommands:\n";
  for (const Command& c : kCommands) {
    std::string head = std::string(c.name);
    if (!c.synopsis.empty()) head += " " + std::string(c.synopsis);
    out << "  " << head << "\n      " << c.summary << "\n";
  }
  out << "\noptions:\n"
         "  -h, --help   show this help (`loom <command> --help` for one command)\n"
         "  --version    print the Loom version\n"
         "\nexit status: 0 success, 1 a check failed or an error occurred, "
         "2 a usage error or invalid input\n";
}

void print_command_usage(std::ostream& out, const Command& c) {
  out << "usage: loom " << c.name << (c.synopsis.empty() ? "" : " ") << c.synopsis << "\n  "
      << c.summary << "\n";
}

/// The command named by argv[1] (and argv[2] for two-word commands), or nullptr.
const Command* find_command(const std::vector<std::string>& words, size_t* consumed) {
  for (const Command& c : kCommands) {
    const size_t space = c.name.find(' ');
    if (space == std::string_view::npos) {
      if (!words.empty() && words[0] == c.name) {
        *consumed = 1;
        return &c;
      }
    } else if (words.size() >= 2 && words[0] == c.name.substr(0, space) &&
               words[1] == c.name.substr(space + 1)) {
      *consumed = 2;
      return &c;
    }
  }
  return nullptr;
}

/// A group word ("schema", "plugin") given without, or with an unknown, subcommand.
bool is_group_word(std::string_view word) {
  for (const Command& c : kCommands) {
    const size_t space = c.name.find(' ');
    if (space != std::string_view::npos && c.name.substr(0, space) == word) return true;
  }
  return false;
}

int main_impl(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) {
    print_usage(std::cerr);
    return kExitUsage;
  }
  if (words[0] == "--help" || words[0] == "-h" || words[0] == "help") {
    print_usage(std::cout);
    return kExitOk;
  }
  if (words[0] == "--version") {
    std::cout << "loom " << LOOM_VERSION_STRING << "\n";
    return kExitOk;
  }
  size_t consumed = 0;
  const Command* command = find_command(words, &consumed);
  if (command == nullptr) {
    if (is_group_word(words[0])) {
      std::cerr << "loom: error: '" << words[0] << "' needs a subcommand"
                << (words.size() > 1 ? " (unknown: '" + words[1] + "')" : std::string()) << "\n\n";
    } else {
      std::cerr << "loom: error: unknown command '" << words[0] << "'\n\n";
    }
    print_usage(std::cerr);
    return kExitUsage;
  }
  Args args(std::vector<std::string>(words.begin() + consumed, words.end()));
  // `loom bench --help` and `loom train --help` are their programs' own; every other command
  // answers here.
  if (command->run != &run_bench && command->run != &run_train && args.take_help()) {
    print_command_usage(std::cout, *command);
    return kExitOk;
  }
  try {
    return command->run(args);
  } catch (const UsageError& e) {
    std::cerr << "loom " << command->name << ": error: " << e.what() << "\n";
    print_command_usage(std::cerr, *command);
    return kExitUsage;
  }
}

}  // namespace
}  // namespace loom::cli

int main(int argc, char** argv) {
  try {
    return loom::cli::main_impl(argc, argv);
  } catch (const loom::cli::InvalidInput& e) {
    std::cerr << "loom: error: " << e.what() << "\n";
    return loom::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "loom: error: " << e.what() << "\n";
    return loom::cli::kExitFailure;
  } catch (...) {
    std::cerr << "loom: error: an unknown exception was thrown\n";
    return loom::cli::kExitFailure;
  }
}
