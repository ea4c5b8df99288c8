// A per-ISA kernel for cpu_isa_test (compiled three times by loom_add_isa_sources): reports
// which copy ran and what the compiler was allowed to use, and does a little arithmetic.
#include <cstdint>

namespace loom::cpu::LOOM_ISA_NAMESPACE {

int compiled_vector_bits() {
#if defined(__AVX512F__)
  return 512;
#elif defined(__AVX2__)
  return 256;
#else
  return 128;
#endif
}

float dot(const float* a, const float* b, int64_t n) {
  float acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

}  // namespace loom::cpu::LOOM_ISA_NAMESPACE
