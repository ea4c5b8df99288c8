#include "loom/core/cpu_isa.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "loom/core/str_cat.h"
#include "loom/core/warning.h"

namespace loom::cpu {
namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports checks cpuid and that the OS saves the wider registers (XCR0).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    return Isa::avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
  return Isa::baseline;
}

Isa from_environment(Isa supported) {
  const char* env = std::getenv("LOOM_CPU_ISA");
  if (env == nullptr || *env == '\0') return supported;
  Isa cap;
  if (std::strcmp(env, "default") == 0) {
    cap = Isa::baseline;
  } else if (std::strcmp(env, "avx2") == 0) {
    cap = Isa::avx2;
  } else if (std::strcmp(env, "avx512") == 0) {
    cap = Isa::avx512;
  } else {
    warn(str_cat("LOOM_CPU_ISA='", env, "' is not one of default, avx2, avx512; using ",
                 isa_name(supported)));
    return supported;
  }
  return cap < supported ? cap : supported;
}

std::atomic<int>& level() {
  static std::atomic<int> value{static_cast<int>(from_environment(supported_isa()))};
  return value;
}

}  // namespace

Isa supported_isa() {
  static const Isa supported = detect();
  return supported;
}

Isa isa() { return static_cast<Isa>(level().load(std::memory_order_relaxed)); }

Isa set_isa(Isa cap) {
  const Isa supported = supported_isa();
  const Isa chosen = cap < supported ? cap : supported;
  level().store(static_cast<int>(chosen), std::memory_order_relaxed);
  return chosen;
}

const char* isa_name(Isa level) {
  switch (level) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::baseline: break;
  }
  return "default";
}

}  // namespace loom::cpu
