// Dropout of ops_nn: the mask and scale of native_dropout (checked element by element
// against the float64 formula), reproducibility through loom::manual_seed (with any thread
// count), evaluation and p = 0 / p = 1, the composites (dropout, feature_dropout, alpha_dropout),
// the backward op against its closed form, strided inputs and PyTorch's error messages.
#include "loom/ops/nn/dropout.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "loom/core/generator.h"
#include "loom/ops/shape.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::expect_close;
using testing::make_tensor;
using testing::message_of;
using testing::random_values;
using testing::to_doubles;
using Vec = std::vector<double>;

class DropoutTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_nn(); }
};

/// out == x * mask / (1 - p) element by element, mask a bool tensor of x's size.
void expect_dropout_of(const Tensor& out, const Tensor& mask, const Vec& x, double p) {
  ASSERT_EQ(mask.dtype(), DType::Bool);
  const Vec m = to_doubles(mask);
  ASSERT_EQ(m.size(), x.size());
  Vec want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] * m[i] / (1 - p);
  expect_close(out, out.sizes(), want, 1e-6, 1e-6);
}

double kept_fraction(const Tensor& mask) {
  double kept = 0;
  for (double v : to_doubles(mask)) kept += v;
  return kept / static_cast<double>(mask.numel());
}

TEST_F(DropoutTest, NativeDropoutMasksAndScales) {
  const Vec x = random_values(4000, 1);
  for (DType t : {DType::Float32, DType::Float64}) {
    for (bool strided : {false, true}) {
      const Tensor xt = make_tensor(x, {40, 100}, t, strided);
      const auto [out, mask] = native_dropout(xt, 0.3, true);
      EXPECT_EQ(out.dtype(), t);
      EXPECT_EQ(sizes_str(mask.sizes()), "[40, 100]");
      expect_dropout_of(out, mask, to_doubles(xt), 0.3);
      EXPECT_NEAR(kept_fraction(mask), 0.7, 0.03);
    }
  }
  // train = None means training, as in PyTorch.
  const auto [out, mask] =
      native_dropout(make_tensor(x, {4000}, DType::Float64), 0.5, std::nullopt);
  EXPECT_NEAR(kept_fraction(mask), 0.5, 0.03);
  expect_dropout_of(out, mask, x, 0.5);
}

TEST_F(DropoutTest, ManualSeedReproducesTheMask) {
  const Tensor x = make_tensor(random_values(500, 2), {500});
  manual_seed(1234);
  const Vec a = to_doubles(std::get<1>(native_dropout(x, 0.4, true)));
  const Vec b = to_doubles(std::get<1>(native_dropout(x, 0.4, true)));
  manual_seed(1234);
  const Vec c = to_doubles(std::get<1>(native_dropout(x, 0.4, true)));
  EXPECT_EQ(a, c);
  EXPECT_NE(a, b);
  manual_seed(1234);
  const Vec d = to_doubles(dropout(x, 0.4, true));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(d[i] != 0, a[i] != 0) << i;
}

TEST_F(DropoutTest, TheMaskIsTheSameForEveryThreadCountAndKeepsItsShare) {
  // One seed a call, the mask from its counter-based stream (Note [Counter-based draws]):
  // one thread and two give the same mask; a large mask keeps 1 - p of the elements, and
  // neighbouring calls differ.
  const Tensor x = Tensor::empty({300001});
  std::memset(x.data_ptr(), 0, 4 * 300001);
  const int threads = omp_get_max_threads();
  Vec masks[2];
  for (int t : {1, 2}) {
    omp_set_num_threads(t);
    manual_seed(99);
    masks[t - 1] = to_doubles(std::get<1>(native_dropout(x, 0.3, true)));
  }
  omp_set_num_threads(threads);
  EXPECT_EQ(masks[0], masks[1]);
  double kept = 0;
  for (double v : masks[0]) kept += v;
  EXPECT_NEAR(kept / 300001, 0.7, 0.005);
  EXPECT_NE(to_doubles(std::get<1>(native_dropout(x, 0.3, true))), masks[0]);
}

TEST_F(DropoutTest, EvaluationAndExtremeProbabilities) {
  const Vec x = random_values(64, 3);
  const Tensor xt = make_tensor(x, {8, 8}, DType::Float64, /*strided=*/true);
  const auto [eval_out, eval_mask] = native_dropout(xt, 0.7, false);
  expect_close(eval_out, {8, 8}, x, 0, 0);
  EXPECT_FALSE(eval_out.is_alias_of(xt));
  EXPECT_EQ(kept_fraction(eval_mask), 1.0);

  const auto [keep_all, all_mask] = native_dropout(xt, 0.0, true);
  expect_close(keep_all, {8, 8}, x, 0, 0);
  EXPECT_EQ(kept_fraction(all_mask), 1.0);
  const auto [none, none_mask] = native_dropout(xt, 1.0, true);
  expect_close(none, {8, 8}, Vec(64, 0.0), 0, 0);
  EXPECT_EQ(kept_fraction(none_mask), 0.0);
}

TEST_F(DropoutTest, DropoutCompositeFollowsPyTorch) {
  const Vec x = random_values(1000, 4);
  const Tensor xt = make_tensor(x, {1000}, DType::Float64);
  // Identity cases return the input itself.
  EXPECT_TRUE(dropout(xt, 0.0, true).is_same(xt));
  EXPECT_TRUE(dropout(xt, 0.5, false).is_same(xt));
  const Tensor empty = make_tensor({}, {0, 3});
  EXPECT_TRUE(dropout(empty, 0.5, true).is_same(empty));
  // p = 1 multiplies by zero, so an infinite input gives NaN as in PyTorch.
  expect_close(dropout(xt, 1.0, true), {1000}, Vec(1000, 0.0), 0, 0);
  const double inf = std::numeric_limits<double>::infinity();
  const Vec nan_out = to_doubles(dropout(make_tensor({inf, 1.0}, {2}), 1.0, true));
  EXPECT_TRUE(std::isnan(nan_out[0]));
  EXPECT_EQ(nan_out[1], 0.0);
  // Otherwise each element is dropped or scaled by 1 / (1 - p).
  const Vec out = to_doubles(dropout(xt, 0.25, true));
  int kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (out[i] == 0) continue;
    ++kept;
    EXPECT_NEAR(out[i], x[i] / 0.75, 1e-12) << i;
  }
  EXPECT_NEAR(kept / 1000.0, 0.75, 0.05);
  for (double p : {1.5, -0.5}) {
    EXPECT_TRUE(contains(message_of([&] { dropout(xt, p, false); }),
                         "dropout probability has to be between 0 and 1, but got "));
  }
  EXPECT_EQ(message_of([&] { native_dropout(xt, 1.5, true); }),
            "native_dropout: dropout probability has to be between 0 and 1, but got 1.5");
  EXPECT_EQ(message_of([&] { dropout(xt, -0.5, true); }),
            "dropout: dropout probability has to be between 0 and 1, but got -0.5");
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         native_dropout(make_tensor({1, 2}, {2}, DType::Int64), 0.5, true);
                       }),
                       "native_dropout: expected a floating point input"));
}

TEST_F(DropoutTest, BackwardIsGradTimesMaskTimesScale) {
  const Vec g = random_values(30, 5);
  const Tensor x = make_tensor(random_values(30, 6), {5, 6}, DType::Float64);
  const auto [out, mask] = native_dropout(x, 0.4, true);
  const Tensor gt = make_tensor(g, {5, 6}, DType::Float64, /*strided=*/true);
  const Tensor grad = native_dropout_backward(gt, mask, 1 / 0.6);
  const Vec m = to_doubles(mask);
  Vec want(30);
  for (size_t i = 0; i < 30; ++i) want[i] = g[i] * m[i] / 0.6;
  expect_close(grad, {5, 6}, want, 1e-12, 1e-12);
  // Through a transposed mask.
  const Tensor gT = transpose(make_tensor(g, {6, 5}, DType::Float32), 0, 1);
  const Tensor mT = transpose(make_tensor(to_doubles(mask), {6, 5}, DType::Bool), 0, 1);
  const Vec gTv = to_doubles(gT), mTv = to_doubles(mT);
  for (size_t i = 0; i < 30; ++i) want[i] = gTv[i] * mTv[i] * 2;
  expect_close(native_dropout_backward(gT, mT, 2.0), {5, 6}, want, 1e-6, 1e-6);

  EXPECT_TRUE(contains(message_of<TypeError>([&] { native_dropout_backward(gt, x, 2.0); }),
                       "Mask should be Bool Scalar Type"));
  EXPECT_TRUE(contains(
      message_of([&] { native_dropout_backward(make_tensor(g, {30}, DType::Float64), mask, 2.0); }),
      "grad_output of size [30] does not match mask of size [5, 6]"));
}

TEST_F(DropoutTest, FeatureDropoutDropsWholeChannels) {
  const Tensor x = make_tensor(Vec(8 * 16 * 6, 1.0), {8, 16, 2, 3}, DType::Float32);
  const Vec out = to_doubles(feature_dropout(x, 0.5, true));
  int kept = 0;
  for (int64_t nc = 0; nc < 8 * 16; ++nc) {
    const double first = out[nc * 6];
    EXPECT_TRUE(first == 0.0 || first == 2.0) << first;
    for (int64_t s = 1; s < 6; ++s) EXPECT_EQ(out[nc * 6 + s], first) << nc;
    kept += first != 0;
  }
  EXPECT_NEAR(kept / 128.0, 0.5, 0.15);
  EXPECT_TRUE(feature_dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(contains(message_of([&] {
                         feature_dropout(make_tensor({1, 2, 3}, {3}), 0.5, true);
                       }),
                       "feature_dropout: Feature dropout requires at least 2 dimensions in the "
                       "input"));
}

TEST_F(DropoutTest, AlphaDropoutKeepsMeanAndVariance) {
  constexpr double kAlpha = 1.7580993408473766;
  const double p = 0.2;
  const double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
  // SELU-like standardized input.
  Vec x(20000);
  const Vec u = random_values(x.size() * 2, 7, 0, 1);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sqrt(-2 * std::log(1 - u[2 * i])) * std::cos(2 * M_PI * u[2 * i + 1]);
  }
  const Vec out = to_doubles(alpha_dropout(make_tensor(x, {20000}, DType::Float64), p, true));
  double sum = 0, sq = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double kept = a * x[i] + kAlpha * a * p;
    const double dropped = -kAlpha * a + kAlpha * a * p;
    EXPECT_TRUE(std::fabs(out[i] - kept) < 1e-12 || std::fabs(out[i] - dropped) < 1e-12) << i;
    sum += out[i];
    sq += out[i] * out[i];
  }
  const double mean = sum / x.size();
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(sq / x.size() - mean * mean, 1.0, 0.05);
  const Tensor feat = make_tensor(Vec(4 * 6 * 5, 1.0), {4, 6, 5}, DType::Float64);
  const Vec fo = to_doubles(feature_alpha_dropout(feat, 0.5, true));
  for (int64_t nc = 0; nc < 24; ++nc) {
    for (int64_t s = 1; s < 5; ++s) EXPECT_EQ(fo[nc * 5 + s], fo[nc * 5]) << nc;
  }
}

}  // namespace
}  // namespace loom
