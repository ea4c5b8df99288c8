// loom::cpu::isa(): detection, the LOOM_CPU_ISA cap, and loom_add_isa_sources' three copies.
#include "loom/core/cpu_isa.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace loom::cpu {
LOOM_ISA_DECLARE(int compiled_vector_bits(); float dot(const float* a, const float* b, int64_t n);)

namespace {

int expected_bits(Isa level) {
  switch (level) {
    case Isa::avx512: return 512;
    case Isa::avx2: return 256;
    case Isa::baseline: break;
  }
  return 128;
}

class CpuIsaTest : public ::testing::Test {
 protected:
  void TearDown() override { set_isa(supported_isa()); }
};

TEST_F(CpuIsaTest, NamesAreTheEnvironmentValues) {
  EXPECT_STREQ(isa_name(Isa::baseline), "default");
  EXPECT_STREQ(isa_name(Isa::avx2), "avx2");
  EXPECT_STREQ(isa_name(Isa::avx512), "avx512");
}

TEST_F(CpuIsaTest, CapNeverExceedsWhatTheCpuSupports) {
  EXPECT_EQ(set_isa(Isa::avx512), supported_isa());
  EXPECT_EQ(set_isa(Isa::baseline), Isa::baseline);
  EXPECT_EQ(isa(), Isa::baseline);
}

TEST_F(CpuIsaTest, EachLevelRunsItsOwnCopyWithTheSameResult) {
  std::vector<float> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25f;
    b[i] = static_cast<float>(i % 5) - 2.0f;
  }
  double expected = 0;
  for (int i = 0; i < 1000; ++i) expected += static_cast<double>(a[i]) * b[i];
  for (Isa level : {Isa::baseline, Isa::avx2, Isa::avx512}) {
    if (level > supported_isa()) continue;
    ASSERT_EQ(set_isa(level), level);
#if defined(LOOM_ISA_ALL_LEVELS)
    EXPECT_EQ(LOOM_ISA_CALL(compiled_vector_bits)(), expected_bits(level)) << isa_name(level);
#else
    EXPECT_EQ(LOOM_ISA_CALL(compiled_vector_bits)(), 128);
#endif
    EXPECT_NEAR(LOOM_ISA_CALL(dot)(a.data(), b.data(), 1000), expected, 1e-3) << isa_name(level);
  }
}

}  // namespace
}  // namespace loom::cpu
