// The harness of a libtorch peer program (see peer_bridge.h): harness.h's registration
// functions, keeping this peer's sides, and the C functions peer_server.cpp calls to run them.
// Compiled into each bench-<peer>-sides, never into loom-bench.
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "peer_bridge.h"

namespace loom::bench {
namespace {

struct PeerSide {
  std::string name;
  Side (*setup)();
};
struct Configuration {
  std::string who;
  std::string (*configure)();
};

std::vector<PeerSide>& sides() {
  static std::vector<PeerSide> v;
  return v;
}
std::vector<Configuration>& configurations() {
  static std::vector<Configuration> v;
  return v;
}
std::vector<Side>& set_up() {
  static std::vector<Side> v;
  return v;
}

void copy(const std::string& s, char* out, size_t len) {
  if (len == 0) return;
  std::snprintf(out, len, "%s", s.c_str());
}

/// What the sides print goes out before loom-bench prints on.
void flush() {
  std::fflush(stdout);
  std::fflush(stderr);
}

}  // namespace

bool register_benchmark(BenchmarkSpec, Side (*)()) { return true; }  // not in a peer library

bool register_peer(Peer, std::string name, Side (*setup)()) {
  sides().push_back({std::move(name), setup});
  return true;
}

bool register_configuration(std::string who, std::string (*configure)()) {
  configurations().push_back({std::move(who), configure});
  return true;
}

double& sample_ms() {
  static double ms = 20;
  return ms;
}

std::string bin_dir() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find loom-bench's own path: " + ec.message());
  return self.parent_path().string();
}

}  // namespace loom::bench

using namespace loom::bench;

extern "C" {

int loom_bench_peer_init(int abi, double ms, char* err, size_t err_len) {
  if (abi != LOOM_BENCH_PEER_ABI) {
    copy("peer interface " + std::to_string(LOOM_BENCH_PEER_ABI) + ", loom-bench asked for " +
             std::to_string(abi) + " (rebuild both)",
         err, err_len);
    return 1;
  }
  sample_ms() = ms;
  return 0;
}

int loom_bench_peer_configuration_count(void) {
  return static_cast<int>(configurations().size());
}

int loom_bench_peer_configure(int i, char* who, size_t who_len, char* line, size_t line_len) {
  if (i < 0 || i >= loom_bench_peer_configuration_count()) return 1;
  const Configuration& c = configurations()[static_cast<size_t>(i)];
  copy(c.who, who, who_len);
  try {
    copy(c.configure(), line, line_len);
  } catch (const std::exception& e) {
    copy(std::string("configuration failed: ") + e.what(), line, line_len);
  }
  flush();
  return 0;
}

int loom_bench_peer_side_count(void) { return static_cast<int>(sides().size()); }

int loom_bench_peer_side_name(int i, char* name, size_t name_len) {
  if (i < 0 || i >= loom_bench_peer_side_count()) return 1;
  copy(sides()[static_cast<size_t>(i)].name, name, name_len);
  return 0;
}

int loom_bench_peer_setup(int i, char* err, size_t err_len) {
  if (i < 0 || i >= loom_bench_peer_side_count()) {
    copy("no side " + std::to_string(i), err, err_len);
    return -2;
  }
  int result = -2;
  try {
    Side side = sides()[static_cast<size_t>(i)].setup();
    if (!side) {
      result = -1;
    } else {
      set_up().push_back(std::move(side));
      result = static_cast<int>(set_up().size()) - 1;
    }
  } catch (const std::exception& e) {
    copy(e.what(), err, err_len);
  } catch (...) {
    copy("setup threw an unknown exception", err, err_len);
  }
  flush();
  return result;
}

int loom_bench_peer_sample(int handle, double* values, int max, int* count, char* err,
                           size_t err_len) {
  if (handle < 0 || handle >= static_cast<int>(set_up().size())) {
    copy("no set-up side " + std::to_string(handle), err, err_len);
    return 1;
  }
  int result = 1;
  try {
    const Sample s = set_up()[static_cast<size_t>(handle)]();
    if (static_cast<int>(s.size()) > max) throw std::runtime_error("too many values");
    for (size_t k = 0; k < s.size(); ++k) values[k] = s[k];
    *count = static_cast<int>(s.size());
    result = 0;
  } catch (const std::exception& e) {
    copy(e.what(), err, err_len);
  } catch (...) {
    copy("sample threw an unknown exception", err, err_len);
  }
  flush();
  return result;
}

}  // extern "C"
