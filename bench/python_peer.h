#pragma once
/// @file
/// Child processes that write a JSON report, and the Python peer: PyTorch in Python (the
/// interpreter named by LOOM_BENCH_PYTHON, which scripts/run-bench.sh sets), for the rows
/// whose strongest PyTorch configuration is only reachable from Python (torch.compile).

#include <nlohmann/json.hpp>
#include <string>

namespace loom::bench {

/// Runs command (its output discarded) and returns the JSON report it wrote to report.
/// passive: run it with OMP_WAIT_POLICY=passive. Each side runs in its fastest configuration:
/// libtorch passive (as the issue measured it), Loom with the OpenMP default (passive makes
/// every small parallel region of an MLP step wake the second thread through the kernel: 0.39
/// s per epoch becomes 0.78).
/// @throws std::runtime_error if the command fails or writes no report.
nlohmann::json run_for_report(const std::string& command, const std::string& report, bool passive);

/// A folder of the temporary directory for the named run ("loom-bench-<name>"), created.
std::string scratch(const std::string& name);

/// A Python peer: an interpreter and one of bench/python's scripts. False when
/// LOOM_BENCH_PYTHON is unset or either file is missing.
struct PythonPeer {
  std::string python;  ///< the interpreter
  std::string script;  ///< the script's path
  /// True when both are there.
  explicit operator bool() const { return !python.empty(); }
  /// `python script args`, for run_for_report.
  std::string command(const std::string& args) const { return python + " " + script + " " + args; }
};

/// The Python peer running script_name (a file of bench/python, or of LOOM_BENCH_PYTHON_DIR
/// where set); prints one line and returns an empty peer when a file is missing.
PythonPeer python_peer(const std::string& script_name);

}  // namespace loom::bench
