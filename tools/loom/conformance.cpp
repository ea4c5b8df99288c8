// `loom conformance onnx [DIR] [--provider NAME]`: runs ONNX's node tests on Loom's ops
// (tools/loom/onnx), on the reference CPU kernels or those of another provider (onednn).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "commands.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_loader.h"
#include "onnx/onnx_runner.h"

namespace loom::cli {
namespace {

/// Loads ops_core (required) and ops_nn (optional: without it the nn tests skip).
void load_op_packs() {
  PluginLoader& loader = PluginLoader::instance();
  try {
    loader.load("ops_core");
  } catch (const PluginError& e) {
    throw Error(str_cat("cannot load the ops_core plugin: ", e.what()));
  }
  try {
    loader.load("ops_nn");
  } catch (const PluginError& e) {
    std::cerr << "loom: warning: ops_nn was not loaded, so its tests skip: " << e.what() << "\n";
  }
}

/// Makes provider the CPU provider for the run: loads the rest of the installed plugins (a
/// backend such as cpu_onednn) and checks that some op has a CPU kernel from it.
void use_cpu_provider(const std::string& provider) {
  for (const PluginFailure& f : PluginLoader::instance().load_all()) {
    std::cerr << "loom: warning: plugin " << f.path << " was not loaded: " << f.message << "\n";
  }
  Dispatcher& d = Dispatcher::instance();
  std::set<std::string> known;
  for (const OperatorHandle& op : d.ops()) {
    for (const KernelInfo& k : d.kernels(op)) {
      if (k.key == DispatchKey::CPU) known.insert(k.provider);
    }
  }
  if (!known.contains(provider)) {
    throw UsageError(str_cat("--provider: no CPU kernels from provider '", provider,
                             "' are registered (known: ", absl::StrJoin(known, ", "), ")"));
  }
  d.set_preferred_provider(DispatchKey::CPU, provider);
  std::cout << "CPU provider: " << provider << "\n";
}

double parse_tolerance(std::string_view option, const std::string& value) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
  }
  if (used != value.size() || !(v >= 0)) {
    throw UsageError(str_cat(option, " expects a non-negative number, got '", value, "'"));
  }
  return v;
}

/// Refuses, before any test runs, a --json path that cannot be written: a directory, or a
/// file in a folder that does not exist (a long run must not end in "cannot write").
void check_json_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    throw InvalidInput(str_cat("--json ", path, ": is a directory, not a file to write"));
  }
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir)) {
    throw InvalidInput(str_cat("--json ", path, ": its folder ", dir.string(),
                               fs::exists(dir) ? " is a file" : " does not exist"));
  }
}

/// The tests to run, or why there are none: a missing DIR, a file, a folder without test_*
/// folders and a --filter that matches nothing are refused (exit 2) rather than reported as
/// "0 passed", which a script would take for success.
void check_tests(const onnx::RunOptions& options) {
  namespace fs = std::filesystem;
  const std::string dir = options.dir.string();
  if (!fs::exists(options.dir)) {
    throw InvalidInput(str_cat(dir, ": no such folder (the folder of ONNX node tests)"));
  }
  if (!fs::is_directory(options.dir)) {
    throw InvalidInput(str_cat(dir, ": is a file, not a folder of ONNX node tests"));
  }
  if (!onnx::list_tests(options).empty()) return;
  onnx::RunOptions unfiltered = options;
  unfiltered.filter.clear();
  if (options.filter.empty() || onnx::list_tests(unfiltered).empty()) {
    throw InvalidInput(str_cat("no ONNX node tests found in ", dir, " (folders named test_*)"));
  }
  throw InvalidInput(str_cat("no test matches --filter ", options.filter, " in ", dir));
}

void write_json(const std::string& path, const onnx::RunOptions& options,
                const onnx::Summary& summary) {
  using json = nlohmann::ordered_json;
  static constexpr const char* kWord[] = {"pass", "fail", "skip"};
  json tests = json::array();
  for (const onnx::TestResult& r : summary.results) {
    tests.push_back({{"name", r.name},
                     {"outcome", kWord[static_cast<int>(r.outcome)]},
                     {"reason", r.reason},
                     {"ops", r.op_types}});
  }
  const json report = {{"dir", options.dir.string()},
                       {"rtol", options.rtol},
                       {"atol", options.atol},
                       {"passed", summary.passed},
                       {"failed", summary.failed},
                       {"skipped", summary.skipped},
                       {"tests", tests}};
  std::ofstream out(path);
  out << report.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  if (!out) throw Error(str_cat("cannot write ", path));
}

}  // namespace

int run_conformance_onnx(Args& args) {
  onnx::RunOptions options;
  options.filter = args.take_option("--filter").value_or("");
  options.verbose = args.take_flag("--verbose");
  const std::optional<std::string> json_path = args.take_option("--json");
  const bool list_ops = args.take_flag("--list-ops");
  const std::optional<std::string> provider = args.take_option("--provider");
  if (auto rtol = args.take_option("--rtol")) options.rtol = parse_tolerance("--rtol", *rtol);
  if (auto atol = args.take_option("--atol")) options.atol = parse_tolerance("--atol", *atol);
  const std::vector<std::string> dirs = args.positionals(0, 1);
  if (!dirs.empty()) options.dir = dirs.front();

  if (list_ops) {
    for (const std::string& op : onnx::mapped_op_types()) std::cout << op << "\n";
    return kExitOk;
  }
  check_tests(options);
  if (json_path) check_json_path(*json_path);
  load_op_packs();
  if (provider) use_cpu_provider(*provider);
  const onnx::Summary summary = onnx::run_all(options, std::cout);
  std::cout << onnx::summary_line(summary) << "\n";
  if (json_path) write_json(*json_path, options, summary);
  return summary.failed == 0 ? kExitOk : kExitFailure;
}

}  // namespace loom::cli
