// The switches of backend_flags.h: an atomic each, seeded from the environment once.
#include "loom/core/backend_flags.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace loom::backends {
namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && (std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0 ||
                          std::strcmp(v, "ON") == 0 || std::strcmp(v, "on") == 0);
}

std::atomic<bool>& flag(int which) {
  static std::atomic<bool> flags[3] = {env_on("LOOM_DETERMINISTIC"),
                                       env_on("LOOM_CUDNN_BENCHMARK"), env_on("LOOM_ALLOW_TF32")};
  return flags[which];
}

}  // namespace

bool deterministic() { return flag(0).load(std::memory_order_relaxed); }
void set_deterministic(bool on) { flag(0).store(on, std::memory_order_relaxed); }
bool benchmark() { return flag(1).load(std::memory_order_relaxed); }
void set_benchmark(bool on) { flag(1).store(on, std::memory_order_relaxed); }
bool allow_tf32() { return flag(2).load(std::memory_order_relaxed); }
void set_allow_tf32(bool on) { flag(2).store(on, std::memory_order_relaxed); }

}  // namespace loom::backends
