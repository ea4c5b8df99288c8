// Batch, layer and group normalization of ops_nn against float64 oracles written here:
// training and evaluation, with and without affine parameters and running statistics,
// float32 / float64 / 16-bit inputs, strided and transposed inputs, the backward ops against
// central finite differences of the oracles, and PyTorch's error messages.
#include "loom/ops/nn/normalization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

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

class NormalizationTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_nn(); }
};

/// d(sum(f(x) * g))/dx by central differences (f a float64 oracle).
Vec finite_difference(const std::function<Vec(const Vec&)>& f, Vec x, const Vec& g,
                      double h = 1e-6) {
  Vec grad(x.size());
  auto loss = [&](const Vec& v) {
    const Vec y = f(v);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += y[i] * g[i];
    return s;
  };
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    x[i] = xi + h;
    const double up = loss(x);
    x[i] = xi - h;
    const double down = loss(x);
    x[i] = xi;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

double at_or(const Vec& v, int64_t i, double fill) { return v.empty() ? fill : v[i]; }

// ---- batch norm oracle: x is [N, C, S] row-major ----

struct BatchNormRef {
  Vec out, mean, invstd, running_mean, running_var;
};

BatchNormRef batch_norm_ref(const Vec& x, int64_t N, int64_t C, int64_t S, const Vec& w,
                            const Vec& b, Vec rm, Vec rv, bool training, double momentum,
                            double eps) {
  BatchNormRef r;
  r.out.resize(x.size());
  for (int64_t c = 0; c < C; ++c) {
    double mean, invstd;
    if (training) {
      double sum = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) sum += x[(n * C + c) * S + s];
      const double cnt = static_cast<double>(N * S);
      mean = sum / cnt;
      double ss = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) ss += std::pow(x[(n * C + c) * S + s] - mean, 2);
      invstd = 1 / std::sqrt(ss / cnt + eps);
      if (!rm.empty()) rm[c] = momentum * mean + (1 - momentum) * rm[c];
      if (!rv.empty()) rv[c] = momentum * ss / (cnt - 1) + (1 - momentum) * rv[c];
    } else {
      mean = rm[c];
      invstd = 1 / std::sqrt(rv[c] + eps);
    }
    r.mean.push_back(mean);
    r.invstd.push_back(invstd);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = (n * C + c) * S + s;
        r.out[i] = (x[i] - mean) * invstd * at_or(w, c, 1) + at_or(b, c, 0);
      }
    }
  }
  r.running_mean = rm;
  r.running_var = rv;
  return r;
}

TEST_F(NormalizationTest, BatchNormTrainingMatchesOracleAndUpdatesRunningStats) {
  struct Case {
    std::vector<int64_t> sizes;
    DType dtype;
    bool strided;
  };
  for (const Case& c :
       {Case{{4, 3, 5}, DType::Float64, false}, Case{{4, 3, 5}, DType::Float32, true},
        Case{{2, 3, 2, 3}, DType::Float32, false}, Case{{6, 3}, DType::Float64, true}}) {
    SCOPED_TRACE(sizes_str(c.sizes));
    const int64_t N = c.sizes[0], C = c.sizes[1];
    int64_t S = 1;
    for (size_t d = 2; d < c.sizes.size(); ++d) S *= c.sizes[d];
    const Vec x = random_values(static_cast<size_t>(N * C * S), 1, -3, 5);
    const Vec w = random_values(3, 2, 0.5, 2), b = random_values(3, 3), rm0 = random_values(3, 4),
              rv0 = random_values(3, 5, 0.5, 2);
    const Tensor rm = make_tensor(rm0, {3}, DType::Float32);
    const Tensor rv = make_tensor(rv0, {3}, DType::Float32, /*strided=*/true);
    const uint32_t version = rm.version();
    const auto [out, mean, invstd] =
        native_batch_norm(make_tensor(x, c.sizes, c.dtype, c.strided), make_tensor(w, {3}, c.dtype),
                          make_tensor(b, {3}, c.dtype), rm, rv, true, 0.1, 1e-5);
    const BatchNormRef ref = batch_norm_ref(x, N, C, S, w, b, rm0, rv0, true, 0.1, 1e-5);
    const double tol = c.dtype == DType::Float64 ? 1e-12 : 1e-5;
    expect_close(out, c.sizes, ref.out, tol, tol);
    expect_close(mean, {3}, ref.mean, tol, tol);
    expect_close(invstd, {3}, ref.invstd, tol, tol);
    // In place, with the unbiased variance.
    expect_close(rm, {3}, ref.running_mean, 1e-6, 1e-6);
    expect_close(rv, {3}, ref.running_var, 1e-6, 1e-6);
    EXPECT_GT(rm.version(), version);
    EXPECT_EQ(out.dtype(), c.dtype);
  }
}

TEST_F(NormalizationTest, BatchNormEvaluationUsesRunningStats) {
  const Vec x = random_values(24, 6), rm0 = random_values(3, 7), rv0 = random_values(3, 8, 0.5, 2);
  const Tensor rm = make_tensor(rm0, {3}, DType::Float64),
               rv = make_tensor(rv0, {3}, DType::Float64);
  const auto [out, mean, invstd] =
      native_batch_norm(make_tensor(x, {2, 3, 4}, DType::Float64), std::nullopt, std::nullopt, rm,
                        rv, false, 0.1, 1e-3);
  const BatchNormRef ref = batch_norm_ref(x, 2, 3, 4, {}, {}, rm0, rv0, false, 0.1, 1e-3);
  expect_close(out, {2, 3, 4}, ref.out, 1e-12, 1e-12);
  // PyTorch's CPU backend returns empty saved statistics in evaluation mode.
  EXPECT_EQ(sizes_str(mean.sizes()), "[0]");
  EXPECT_EQ(sizes_str(invstd.sizes()), "[0]");
  expect_close(rm, {3}, rm0, 0, 0);
  expect_close(rv, {3}, rv0, 0, 0);
}

TEST_F(NormalizationTest, BatchNormTransposedInputAndNoParameters) {
  // [N, S, C] memory seen as [N, C, S]: a non-contiguous view.
  const Vec xs = random_values(2 * 5 * 3, 9);
  const Tensor x = transpose(make_tensor(xs, {2, 5, 3}, DType::Float64), 1, 2);
  ASSERT_FALSE(x.is_contiguous());
  const auto [out, mean, invstd] =
      native_batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5);
  const Vec xv = to_doubles(x);
  const BatchNormRef ref = batch_norm_ref(xv, 2, 3, 5, {}, {}, {}, {}, true, 0.1, 1e-5);
  expect_close(out, {2, 3, 5}, ref.out, 1e-12, 1e-12);
  expect_close(invstd, {3}, ref.invstd, 1e-12, 1e-12);
}

TEST_F(NormalizationTest, BatchNormFloat32StatisticsAccumulateInDouble) {
  // A large mean with a small spread: a float accumulator would lose the variance.
  Vec x = random_values(4 * 2 * 4096, 10, -1, 1);
  for (double& v : x) v = 1e4 + v;
  const Tensor xt = make_tensor(x, {4, 2, 4096}, DType::Float32);
  const Vec xf = to_doubles(xt);  // the float32 values the kernel sees
  const auto [out, mean, invstd] = native_batch_norm(xt, std::nullopt, std::nullopt, std::nullopt,
                                                     std::nullopt, true, 0.1, 1e-5);
  const BatchNormRef ref = batch_norm_ref(xf, 4, 2, 4096, {}, {}, {}, {}, true, 0.1, 1e-5);
  expect_close(mean, {2}, ref.mean, 1e-7, 0);
  expect_close(invstd, {2}, ref.invstd, 1e-5, 0);
}

TEST_F(NormalizationTest, BatchNormHalfInputs) {
  const Vec x = random_values(2 * 3 * 8, 11);
  for (DType t : {DType::Float16, DType::BFloat16}) {
    const Tensor xt = make_tensor(x, {2, 3, 8}, t);
    const auto [out, mean, invstd] = native_batch_norm(xt, std::nullopt, std::nullopt, std::nullopt,
                                                       std::nullopt, true, 0.1, 1e-5);
    EXPECT_EQ(out.dtype(), t);
    const BatchNormRef ref =
        batch_norm_ref(to_doubles(xt), 2, 3, 8, {}, {}, {}, {}, true, 0.1, 1e-5);
    expect_close(out, {2, 3, 8}, ref.out, 2e-2, 2e-2);
  }
}

TEST_F(NormalizationTest, BatchNormCompositeChecksAndEmptyBatch) {
  const Vec x = random_values(24, 12);
  const Tensor xt = make_tensor(x, {2, 3, 4}, DType::Float64);
  const Tensor rm = make_tensor({0, 0, 0}, {3}, DType::Float64);
  const Tensor rv = make_tensor({1, 1, 1}, {3}, DType::Float64);
  const Tensor out = batch_norm(xt, std::nullopt, std::nullopt, rm, rv, true, 0.1, 1e-5, false);
  expect_close(out, {2, 3, 4}, batch_norm_ref(x, 2, 3, 4, {}, {}, {}, {}, true, 0.1, 1e-5).out,
               1e-12, 1e-12);

  // An empty batch: a copy, running stats untouched.
  const Tensor e = make_tensor({}, {0, 3, 2}, DType::Float64);
  const Tensor rm2 = make_tensor({0, 0, 0}, {3}, DType::Float64);
  const Tensor r = batch_norm(e, std::nullopt, std::nullopt, rm2, rv, true, 0.1, 1e-5, false);
  EXPECT_EQ(sizes_str(r.sizes()), "[0, 3, 2]");
  expect_close(rm2, {3}, {0, 0, 0}, 0, 0);

  const Tensor w4 = make_tensor({1, 1, 1, 1}, {4}, DType::Float64);
  EXPECT_TRUE(contains(message_of([&] {
                         batch_norm(xt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                    false, 0.1, 1e-5, false);
                       }),
                       "batch_norm: running_mean must be defined in evaluation mode"));
  EXPECT_TRUE(contains(
      message_of([&] { batch_norm(xt, w4, std::nullopt, rm, rv, false, 0.1, 1e-5, false); }),
      "batch_norm: weight should contain 3 elements not 4"));
  EXPECT_TRUE(contains(message_of([&] {
                         batch_norm(xt, std::nullopt, std::nullopt, w4, rv, false, 0.1, 1e-5,
                                    false);
                       }),
                       "batch_norm: running_mean should contain 3 elements not 4"));
  EXPECT_TRUE(contains(message_of([&] {
                         native_batch_norm(make_tensor({1, 2, 3}, {3}), std::nullopt, std::nullopt,
                                           std::nullopt, std::nullopt, true, 0.1, 1e-5);
                       }),
                       "expected input with at least 2 dims (N, C, *), but got input of size [3]"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         native_batch_norm(make_tensor({1, 2, 3, 4}, {2, 2}, DType::Int32),
                                           std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                           true, 0.1, 1e-5);
                       }),
                       "expected a floating point input"));
  EXPECT_TRUE(contains(message_of([&] {
                         native_batch_norm(e, std::nullopt, std::nullopt, std::nullopt,
                                           std::nullopt, true, 0.1, 1e-5);
                       }),
                       "native_batch_norm: input tensor must have at least one element, but got "
                       "input_sizes = [0, 3, 2]"));
}

// PyTorch's torch.nn.functional.batch_norm check: in training, one value per channel has no
// variance (the output would be the bias alone, the unbiased running variance 0 / 0), so
// both the composite and the native op refuse it before touching the running statistics.
TEST_F(NormalizationTest, BatchNormTrainingNeedsMoreThanOneValuePerChannel) {
  const Tensor w = make_tensor({1, 2, 3}, {3}, DType::Float64);
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{1, 3}, std::vector<int64_t>{1, 3, 1}, {1, 3, 1, 1}}) {
    SCOPED_TRACE(sizes_str(sizes));
    const Tensor x = make_tensor({0.5, -1, 2}, sizes, DType::Float64);
    const Tensor rm = make_tensor({0, 0, 0}, {3}, DType::Float64);
    const Tensor rv = make_tensor({1, 1, 1}, {3}, DType::Float64);
    const uint32_t version = rv.version();
    const std::string want =
        "Expected more than 1 value per channel when training, got input size " + sizes_str(sizes);
    EXPECT_EQ(message_of([&] { native_batch_norm(x, w, w, rm, rv, true, 0.1, 1e-5); }),
              "native_batch_norm: " + want);
    EXPECT_EQ(message_of([&] { batch_norm(x, w, w, rm, rv, true, 0.1, 1e-5, false); }),
              "batch_norm: " + want);
    // Without running statistics too (a module that does not track them).
    EXPECT_EQ(message_of([&] {
                native_batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true,
                                  0.1, 1e-5);
              }),
              "native_batch_norm: " + want);
    expect_close(rm, {3}, {0, 0, 0}, 0, 0);
    expect_close(rv, {3}, {1, 1, 1}, 0, 0);
    EXPECT_EQ(rv.version(), version);
    // Evaluation normalises one value by the running statistics, as PyTorch does.
    expect_close(batch_norm(x, std::nullopt, std::nullopt, rm, rv, false, 0.1, 0, false), sizes,
                 {0.5, -1, 2}, 1e-12, 1e-12);
  }
  // Two values per channel, from the batch or from a spatial dim, are enough.
  const Tensor rv = make_tensor({1, 1}, {2}, DType::Float64);
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{2, 2}, {1, 2, 2}}) {
    const Tensor x = make_tensor({1, 2, 3, 5}, sizes, DType::Float64);
    const Tensor rm = make_tensor({0, 0}, {2}, DType::Float64);
    const Tensor out = batch_norm(x, std::nullopt, std::nullopt, rm, rv, true, 0.5, 0, false);
    for (double v : to_doubles(out)) EXPECT_NEAR(std::abs(v), 1.0, 1e-12);
  }
  for (double v : to_doubles(rv)) EXPECT_TRUE(std::isfinite(v));
}

TEST_F(NormalizationTest, BatchNormBackwardMatchesFiniteDifferences) {
  const int64_t N = 3, C = 2, S = 4;
  const Vec x = random_values(N * C * S, 13), g = random_values(N * C * S, 14);
  const Vec w = random_values(C, 15, 0.5, 2), b = random_values(C, 16);
  const Vec rm = random_values(C, 17), rv = random_values(C, 18, 0.5, 2);
  const double eps = 1e-3;
  const std::vector<int64_t> sizes{N, C, S};
  for (bool train : {true, false}) {
    SCOPED_TRACE(train ? "training" : "evaluation");
    const Tensor xt = make_tensor(x, sizes, DType::Float64, /*strided=*/true);
    const Tensor rmt = make_tensor(rm, {C}, DType::Float64),
                 rvt = make_tensor(rv, {C}, DType::Float64);
    const auto fwd =
        native_batch_norm(xt, make_tensor(w, {C}, DType::Float64),
                          make_tensor(b, {C}, DType::Float64), rmt, rvt, train, 0.1, eps);
    const auto [dx, dw, db] = native_batch_norm_backward(
        make_tensor(g, sizes, DType::Float64, true), xt, make_tensor(w, {C}, DType::Float64),
        make_tensor(rm, {C}, DType::Float64), make_tensor(rv, {C}, DType::Float64),
        std::get<1>(fwd), std::get<2>(fwd), train, eps, {true, true, true});
    auto out_of = [&](const Vec& xv, const Vec& wv, const Vec& bv) {
      return batch_norm_ref(xv, N, C, S, wv, bv, rm, rv, train, 0.1, eps).out;
    };
    expect_close(dx, sizes, finite_difference([&](const Vec& v) { return out_of(v, w, b); }, x, g),
                 1e-6, 1e-7);
    expect_close(dw, {C}, finite_difference([&](const Vec& v) { return out_of(x, v, b); }, w, g),
                 1e-6, 1e-7);
    expect_close(db, {C}, finite_difference([&](const Vec& v) { return out_of(x, w, v); }, b, g),
                 1e-6, 1e-7);
  }
}

TEST_F(NormalizationTest, BatchNormBackwardOutputMaskAndErrors) {
  const Tensor x = make_tensor(random_values(12, 19), {2, 3, 2}, DType::Float64);
  const Tensor g = make_tensor(random_values(12, 20), {2, 3, 2}, DType::Float64);
  const auto fwd =
      native_batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5);
  const auto [dx, dw, db] =
      native_batch_norm_backward(g, x, std::nullopt, std::nullopt, std::nullopt, std::get<1>(fwd),
                                 std::get<2>(fwd), true, 1e-5, {true, false, false});
  EXPECT_TRUE(dx.defined());
  EXPECT_FALSE(dw.defined());
  EXPECT_FALSE(db.defined());
  EXPECT_TRUE(contains(message_of([&] {
                         native_batch_norm_backward(g, x, std::nullopt, std::nullopt, std::nullopt,
                                                    std::nullopt, std::nullopt, true, 1e-5,
                                                    {true, true, true});
                       }),
                       "save_mean must be defined in training mode"));
  EXPECT_TRUE(contains(message_of([&] {
                         native_batch_norm_backward(
                             make_tensor(random_values(6, 1), {2, 3}, DType::Float64), x,
                             std::nullopt, std::nullopt, std::nullopt, std::get<1>(fwd),
                             std::get<2>(fwd), true, 1e-5, {true, true, true});
                       }),
                       "grad_out of size [2, 3] does not match input of size [2, 3, 2]"));
}

// ---- layer norm oracle: x is [M, N] row-major ----

struct LayerNormRef {
  Vec out, mean, rstd;
};

LayerNormRef layer_norm_ref(const Vec& x, int64_t M, int64_t N, const Vec& w, const Vec& b,
                            double eps) {
  LayerNormRef r;
  r.out.resize(x.size());
  for (int64_t i = 0; i < M; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < N; ++j) sum += x[i * N + j];
    const double mean = sum / N;
    double ss = 0;
    for (int64_t j = 0; j < N; ++j) ss += std::pow(x[i * N + j] - mean, 2);
    const double rstd = 1 / std::sqrt(ss / N + eps);
    for (int64_t j = 0; j < N; ++j) {
      r.out[i * N + j] = (x[i * N + j] - mean) * rstd * at_or(w, j, 1) + at_or(b, j, 0);
    }
    r.mean.push_back(mean);
    r.rstd.push_back(rstd);
  }
  return r;
}

TEST_F(NormalizationTest, LayerNormMatchesOracle) {
  struct Case {
    std::vector<int64_t> normalized;
    std::vector<int64_t> stat_sizes;
    bool affine;
    DType dtype;
  };
  const std::vector<int64_t> sizes{2, 3, 4};
  const Vec x = random_values(24, 21, -2, 6);
  for (const Case& c :
       {Case{{4}, {2, 3, 1}, true, DType::Float64}, Case{{3, 4}, {2, 1, 1}, true, DType::Float32},
        Case{{4}, {2, 3, 1}, false, DType::Float32},
        Case{{2, 3, 4}, {1, 1, 1}, true, DType::Float64}}) {
    SCOPED_TRACE(sizes_str(c.normalized));
    int64_t N = 1;
    for (int64_t s : c.normalized) N *= s;
    const Vec w = c.affine ? random_values(N, 22, 0.5, 2) : Vec{};
    const Vec b = c.affine ? random_values(N, 23) : Vec{};
    std::optional<Tensor> wt, bt;
    if (c.affine) {
      wt = make_tensor(w, c.normalized, c.dtype);
      bt = make_tensor(b, c.normalized, c.dtype, /*strided=*/true);
    }
    const auto [out, mean, rstd] = native_layer_norm(
        make_tensor(x, sizes, c.dtype, /*strided=*/true), c.normalized, wt, bt, 1e-5);
    const LayerNormRef ref = layer_norm_ref(x, 24 / N, N, w, b, 1e-5);
    const double tol = c.dtype == DType::Float64 ? 1e-12 : 1e-5;
    expect_close(out, sizes, ref.out, tol, tol);
    expect_close(mean, c.stat_sizes, ref.mean, tol, tol);
    expect_close(rstd, c.stat_sizes, ref.rstd, tol, tol);
    expect_close(layer_norm(make_tensor(x, sizes, c.dtype), c.normalized, wt, bt), sizes, ref.out,
                 tol, tol);
  }
}

TEST_F(NormalizationTest, LayerNormBackwardMatchesFiniteDifferences) {
  const int64_t M = 3, N = 5;
  const Vec x = random_values(M * N, 24), g = random_values(M * N, 25);
  const Vec w = random_values(N, 26, 0.5, 2), b = random_values(N, 27);
  const std::vector<int64_t> sizes{M, N};
  const Tensor xt = make_tensor(x, sizes, DType::Float64, true);
  const Tensor wt = make_tensor(w, {N}, DType::Float64), bt = make_tensor(b, {N}, DType::Float64);
  const auto fwd = native_layer_norm(xt, {N}, wt, bt, 1e-5);
  const auto [dx, dw, db] =
      native_layer_norm_backward(make_tensor(g, sizes, DType::Float64, true), xt, {N},
                                 std::get<1>(fwd), std::get<2>(fwd), wt, bt, {true, true, true});
  auto out_of = [&](const Vec& xv, const Vec& wv, const Vec& bv) {
    return layer_norm_ref(xv, M, N, wv, bv, 1e-5).out;
  };
  expect_close(dx, sizes, finite_difference([&](const Vec& v) { return out_of(v, w, b); }, x, g),
               1e-6, 1e-7);
  expect_close(dw, {N}, finite_difference([&](const Vec& v) { return out_of(x, v, b); }, w, g),
               1e-6, 1e-7);
  expect_close(db, {N}, finite_difference([&](const Vec& v) { return out_of(x, w, v); }, b, g),
               1e-6, 1e-7);
  const auto masked =
      native_layer_norm_backward(make_tensor(g, sizes, DType::Float64), xt, {N}, std::get<1>(fwd),
                                 std::get<2>(fwd), wt, bt, {false, true, false});
  EXPECT_FALSE(std::get<0>(masked).defined());
  EXPECT_FALSE(std::get<2>(masked).defined());
  expect_close(std::get<1>(masked), {N}, to_doubles(dw), 1e-12, 1e-12);
}

TEST_F(NormalizationTest, LayerNormErrors) {
  const Tensor x = make_tensor(random_values(24, 28), {2, 3, 4});
  EXPECT_TRUE(
      contains(message_of([&] { native_layer_norm(x, {3}, std::nullopt, std::nullopt, 1e-5); }),
               "native_layer_norm: Given normalized_shape=[3], expected input with shape [*, 3], "
               "but got input "
               "of size[2, 3, 4]"));
  EXPECT_TRUE(
      contains(message_of([&] { native_layer_norm(x, {}, std::nullopt, std::nullopt, 1e-5); }),
               "native_layer_norm: Expected normalized_shape to be at least 1-dimensional, i.e., "
               "containing at "
               "least one element, but got normalized_shape = []"));
  const Tensor three = make_tensor({1, 1, 1}, {3});
  EXPECT_TRUE(contains(message_of([&] { native_layer_norm(x, {4}, three, std::nullopt, 1e-5); }),
                       "Expected weight to be of same shape as normalized_shape, but got weight of "
                       "shape [3] and normalized_shape = [4]"));
  EXPECT_TRUE(
      contains(message_of([&] { layer_norm(x, {4}, std::nullopt, three); }),
               "layer_norm: Expected bias to be of same shape as normalized_shape, but got bias of "
               "shape [3] and normalized_shape = [4]"));
}

// ---- group norm oracle: x is [N, C, HxW] row-major ----

LayerNormRef group_norm_ref(const Vec& x, int64_t N, int64_t C, int64_t HxW, int64_t G,
                            const Vec& w, const Vec& b, double eps) {
  // Each (n, group) block is a row of (C / G) * HxW elements; the affine is per channel.
  const int64_t D = C / G;
  LayerNormRef r = layer_norm_ref(x, N * G, D * HxW, {}, {}, eps);
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    const int64_t c = (i / HxW) % C;
    r.out[i] = r.out[i] * at_or(w, c, 1) + at_or(b, c, 0);
  }
  return r;
}

TEST_F(NormalizationTest, GroupNormMatchesOracle) {
  struct Case {
    std::vector<int64_t> sizes;
    int64_t groups;
    DType dtype;
  };
  for (const Case& c : {Case{{2, 6, 5}, 3, DType::Float64}, Case{{2, 4, 3, 2}, 2, DType::Float32},
                        Case{{3, 4, 2}, 1, DType::Float64}, Case{{3, 4, 2}, 4, DType::Float32},
                        Case{{2, 4}, 2, DType::Float64}}) {
    SCOPED_TRACE(sizes_str(c.sizes));
    const int64_t N = c.sizes[0], C = c.sizes[1];
    int64_t HxW = 1;
    for (size_t d = 2; d < c.sizes.size(); ++d) HxW *= c.sizes[d];
    const Vec x = random_values(N * C * HxW, 29, -1, 3);
    const Vec w = random_values(C, 30, 0.5, 2), b = random_values(C, 31);
    const Tensor xt = make_tensor(x, c.sizes, c.dtype, /*strided=*/true);
    const auto [out, mean, rstd] = native_group_norm(
        xt, make_tensor(w, {C}, c.dtype), make_tensor(b, {C}, c.dtype), N, C, HxW, c.groups, 1e-5);
    const LayerNormRef ref = group_norm_ref(x, N, C, HxW, c.groups, w, b, 1e-5);
    const double tol = c.dtype == DType::Float64 ? 1e-12 : 1e-5;
    expect_close(out, c.sizes, ref.out, tol, tol);
    expect_close(mean, {N, c.groups}, ref.mean, tol, tol);
    expect_close(rstd, {N, c.groups}, ref.rstd, tol, tol);
    expect_close(
        group_norm(xt, c.groups, make_tensor(w, {C}, c.dtype), make_tensor(b, {C}, c.dtype)),
        c.sizes, ref.out, tol, tol);
    const LayerNormRef plain = group_norm_ref(x, N, C, HxW, c.groups, {}, {}, 1e-5);
    expect_close(group_norm(xt, c.groups), c.sizes, plain.out, tol, tol);
  }
}

TEST_F(NormalizationTest, GroupNormBackwardMatchesFiniteDifferences) {
  const int64_t N = 2, C = 4, HxW = 3, G = 2;
  const Vec x = random_values(N * C * HxW, 32), g = random_values(N * C * HxW, 33);
  const Vec w = random_values(C, 34, 0.5, 2), b = random_values(C, 35);
  const std::vector<int64_t> sizes{N, C, HxW};
  const Tensor xt = make_tensor(x, sizes, DType::Float64, true);
  const Tensor wt = make_tensor(w, {C}, DType::Float64);
  const auto fwd =
      native_group_norm(xt, wt, make_tensor(b, {C}, DType::Float64), N, C, HxW, G, 1e-5);
  const auto [dx, dw, db] =
      native_group_norm_backward(make_tensor(g, sizes, DType::Float64, true), xt, std::get<1>(fwd),
                                 std::get<2>(fwd), wt, N, C, HxW, G, {true, true, true});
  auto out_of = [&](const Vec& xv, const Vec& wv, const Vec& bv) {
    return group_norm_ref(xv, N, C, HxW, G, wv, bv, 1e-5).out;
  };
  expect_close(dx, sizes, finite_difference([&](const Vec& v) { return out_of(v, w, b); }, x, g),
               1e-6, 1e-7);
  expect_close(dw, {C}, finite_difference([&](const Vec& v) { return out_of(x, v, b); }, w, g),
               1e-6, 1e-7);
  expect_close(db, {C}, finite_difference([&](const Vec& v) { return out_of(x, w, v); }, b, g),
               1e-6, 1e-7);
  // Without weight: the gradient of the unscaled normalization.
  const auto fwd2 = native_group_norm(xt, std::nullopt, std::nullopt, N, C, HxW, G, 1e-5);
  const auto [dx2, dw2, db2] = native_group_norm_backward(
      make_tensor(g, sizes, DType::Float64), xt, std::get<1>(fwd2), std::get<2>(fwd2), std::nullopt,
      N, C, HxW, G, {true, false, false});
  expect_close(dx2, sizes, finite_difference([&](const Vec& v) { return out_of(v, {}, {}); }, x, g),
               1e-6, 1e-7);
  EXPECT_FALSE(dw2.defined());
}

TEST_F(NormalizationTest, GroupNormErrors) {
  const Tensor x = make_tensor(random_values(24, 36), {2, 3, 4});
  EXPECT_TRUE(
      contains(message_of([&] { group_norm(x, 2); }),
               "group_norm: Expected number of channels in input to be divisible by num_groups, "
               "but got input of shape [2, 3, 4] and num_groups=2"));
  const Tensor four = make_tensor({1, 1, 1, 1}, {4});
  EXPECT_TRUE(contains(message_of([&] { group_norm(x, 3, four); }),
                       "Expected weight to be a vector of size equal to the number of channels in "
                       "input, but got weight of shape [4] and input of shape [2, 3, 4]"));
  EXPECT_TRUE(contains(message_of([&] { group_norm(x, 3, std::nullopt, four); }),
                       "Expected bias to be a vector of size equal to the number of channels in "
                       "input, but got bias of shape [4] and input of shape [2, 3, 4]"));
  EXPECT_TRUE(contains(message_of([&] { group_norm(x, 0); }),
                       "group_norm: Expected num_groups to be positive"));
  EXPECT_TRUE(contains(
      message_of([&] { native_group_norm(x, std::nullopt, std::nullopt, 2, 3, 5, 3, 1e-5); }),
      "native_group_norm: expected input with N * C * HxW = 2 * 3 * 5 elements, "
      "but got input of shape [2, 3, 4]"));
  EXPECT_TRUE(contains(message_of([&] {
                         group_norm(make_tensor({1, 2, 3}, {3}), 1);
                       }),
                       "group_norm: expected input with at least 2 dims"));
}

}  // namespace
}  // namespace loom
