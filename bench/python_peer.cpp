#include "python_peer.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#ifndef LOOM_BENCH_PYTHON_DIR
#define LOOM_BENCH_PYTHON_DIR ""
#endif

namespace loom::bench {

namespace fs = std::filesystem;

nlohmann::json run_for_report(const std::string& command, const std::string& report, bool passive) {
  fs::remove(report);
  const std::string line =
      (passive ? "OMP_WAIT_POLICY=passive " : "") + command + " > /dev/null 2>&1";
  if (std::system(line.c_str()) != 0) throw std::runtime_error("failed: " + command);
  std::ifstream in(report);
  if (!in) throw std::runtime_error(command + " wrote no report " + report);
  return nlohmann::json::parse(in);
}

std::string scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("loom-bench-" + name);
  fs::create_directories(p);
  return p.string();
}

PythonPeer python_peer(const std::string& script_name) {
  const char* python = std::getenv("LOOM_BENCH_PYTHON");
  if (!python || !*python) return {};
  const char* dir = std::getenv("LOOM_BENCH_PYTHON_DIR");
  const std::string script =
      std::string(dir && *dir ? dir : LOOM_BENCH_PYTHON_DIR) + "/" + script_name;
  if (!fs::is_regular_file(python) || !fs::is_regular_file(script)) {
    std::printf("  python peer: %s or %s is missing; the torch column is C++ only\n", python,
                script.c_str());
    return {};
  }
  return {python, script};
}

}  // namespace loom::bench
