#pragma once
// For the suites of per-ISA kernels (ops/core/cpu/vec/, plugins/optim/ops/vec/): run a test
// at every instruction-set level this CPU supports (loom::cpu::set_isa), either as a
// parameterized suite or as a loop over the levels, and build the flat inputs they take.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loom/core/cpu_isa.h"
#include "loom/core/tensor.h"
#include "ops_test_util.h"

namespace loom::testing {

/// Every level, lowest first (the parameters of an IsaLevelTest suite).
inline std::vector<cpu::Isa> all_isa_levels() {
  return {cpu::Isa::baseline, cpu::Isa::avx2, cpu::Isa::avx512};
}

/// The levels this CPU supports, lowest first (for a loop that compares levels).
inline std::vector<cpu::Isa> supported_isa_levels() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa l : all_isa_levels()) {
    if (l <= cpu::supported_isa()) out.push_back(l);
  }
  return out;
}

/// A suite parameterized by level: each test runs with the kernels of its level (skipped
/// where this CPU lacks it), and the best level is restored after it. Instantiate with
///   INSTANTIATE_TEST_SUITE_P(Levels, Suite, ::testing::ValuesIn(testing::all_isa_levels()),
///                            testing::isa_level_name);
class IsaLevelTest : public ::testing::TestWithParam<cpu::Isa> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu::supported_isa()) GTEST_SKIP() << "this CPU lacks the level";
    ASSERT_EQ(cpu::set_isa(GetParam()), GetParam());
  }
  void TearDown() override { cpu::set_isa(cpu::supported_isa()); }
};

/// The test name of a level ("baseline", "avx2", "avx512").
inline std::string isa_level_name(const ::testing::TestParamInfo<cpu::Isa>& info) {
  return std::string(cpu::isa_name(info.param));
}

/// A contiguous 1-D tensor of dtype holding values (rounded to the dtype).
inline Tensor flat_tensor(const std::vector<double>& values, DType dtype) {
  return make_tensor(values, {static_cast<int64_t>(values.size())}, dtype);
}

}  // namespace loom::testing
