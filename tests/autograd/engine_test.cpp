// The autograd engine: graph recording, backward, accumulation, grad(), hooks, views and
// in-place ops, and PyTorch's errors, checked against gradients worked out by hand.
#include <gtest/gtest.h>

#include "loom/autograd/autograd.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::make_tensor;
using testing::message_of;
using testing::to_doubles;
using Values = std::vector<double>;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
  static Tensor leaf(Values v, std::vector<int64_t> sizes) {
    Tensor t = make_tensor(v, sizes);
    t.set_requires_grad(true);
    return t;
  }
};

TEST_F(EngineTest, MulAddBackward) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor w = leaf({4, 5, 6}, {3});
  Tensor y = (x * w + x).sum();
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  y.backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{5, 6, 7}));
  EXPECT_EQ(to_doubles(w.grad()), (Values{1, 2, 3}));
}

}  // namespace
}  // namespace loom
