// Whole networks end to end: the gradients of every parameter of a small MLP and of a
// small CNN (conv, batch norm, pooling, cross entropy) equal finite differences, and a
// few steps of gradient descent lower the loss.
#include <gtest/gtest.h>

#include "loom/autograd/autograd.h"
#include "loom/loom.h"
#include "loom/ops/nn.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using autograd::variable_list;
using testing::make_tensor;
using testing::random_values;

class NetworkTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
  static Tensor param(std::vector<int64_t> sizes, uint64_t seed, double scale = 0.5) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    Tensor t = make_tensor(random_values(static_cast<size_t>(n), seed, -scale, scale), sizes,
                           DType::Float64);
    t.set_requires_grad(true);
    return t;
  }
};

// x -> tanh(x W1^T + b1) -> W2 -> mse against y
Tensor mlp_loss(const variable_list& p, const Tensor& x, const Tensor& y) {
  const Tensor h = tanh(linear(x, p[0], p[1]));
  return mse_loss(linear(h, p[2], p[3]), y);
}

TEST_F(NetworkTest, MlpGradientsMatchFiniteDifferences) {
  const Tensor x = make_tensor(random_values(16 * 4, 1), {16, 4}, DType::Float64);
  const Tensor y = make_tensor(random_values(16 * 2, 2), {16, 2}, DType::Float64);
  const variable_list params = {param({8, 4}, 3), param({8}, 4), param({2, 8}, 5), param({2}, 6)};
  EXPECT_TRUE(autograd::gradcheck(
      [&](const variable_list& p) -> variable_list { return {mlp_loss(p, x, y)}; }, params));
  EXPECT_TRUE(autograd::gradgradcheck(
      [&](const variable_list& p) -> variable_list { return {mlp_loss(p, x, y)}; }, params));
}

TEST_F(NetworkTest, CnnGradientsMatchFiniteDifferences) {
  // [2, 1, 6, 6] -> conv 3x3 (2 channels, padding 1) -> batch norm (training) -> relu ->
  // max pool 2 -> flatten -> linear to 3 classes -> cross entropy.
  const Tensor x = make_tensor(random_values(2 * 36, 7), {2, 1, 6, 6}, DType::Float64);
  const Tensor target = make_tensor({2, 0}, {2}, DType::Int64);
  const variable_list params = {param({2, 1, 3, 3}, 8), param({2}, 9), param({2}, 10, 1.0),
                                param({2}, 11), param({3, 18}, 12), param({3}, 13)};
  auto loss = [&](const variable_list& p) -> variable_list {
    Tensor h = conv2d(x, p[0], p[1], 1, 1);
    h = batch_norm(h, p[2] + 1.5, p[3], std::nullopt, std::nullopt, /*training=*/true, 0.1, 1e-5);
    h = max_pool2d(relu(h), {2, 2});
    return {cross_entropy(linear(h.flatten(1), p[4], p[5]), target)};
  };
  EXPECT_TRUE(autograd::gradcheck(loss, params, {.eps = 1e-6, .atol = 1e-5, .rtol = 1e-3}));
}

TEST_F(NetworkTest, GradientDescentLowersTheLoss) {
  const Tensor x = make_tensor(random_values(32 * 4, 21), {32, 4}, DType::Float64);
  const Tensor y = make_tensor(random_values(32 * 2, 22), {32, 2}, DType::Float64);
  variable_list params = {param({8, 4}, 23), param({8}, 24), param({2, 8}, 25), param({2}, 26)};
  const double first = mlp_loss(params, x, y).item<double>();
  double last = first;
  for (int step = 0; step < 50; ++step) {
    for (const Tensor& p : params) p.set_grad(Tensor());
    Tensor l = mlp_loss(params, x, y);
    last = l.item<double>();
    l.backward();
    autograd::NoGradGuard no_grad;
    for (const Tensor& p : params) sub_(p, p.grad() * 0.2);
  }
  EXPECT_LT(last, first * 0.8) << "first " << first << ", last " << last;
  for (const Tensor& p : params) EXPECT_TRUE(p.is_leaf());
}

}  // namespace
}  // namespace loom
