#pragma once
// What the nn suites share: loading the op packs once, and comparing tensors.

#include <gtest/gtest.h>

#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom::nn::testing {

using loom::testing::contains;
using loom::testing::message_of;
using loom::testing::to_doubles;

/// Loads ops_core and ops_nn (idempotent).
inline void load_packs() { loom::init(); }

/// Expects a and b to have the same sizes and values within atol + rtol * |b|.
inline void expect_tensors_near(const Tensor& a, const Tensor& b, double rtol = 1e-5,
                                double atol = 1e-6) {
  loom::testing::expect_close(a, b.sizes(), to_doubles(b), rtol, atol);
}

/// A fixture that loads the packs and seeds the default generator.
class NnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    load_packs();
    loom::manual_seed(0);
  }
};

}  // namespace loom::nn::testing
