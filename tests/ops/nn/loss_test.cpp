// The loss ops of ops_nn against float64 oracles written here from PyTorch's documented
// formulas: every reduction, contiguous and strided inputs, broadcasting, class weights,
// ignore_index, label smoothing, K-D inputs; the backward ops against central finite
// differences of the oracles; and PyTorch's error messages.
#include "loom/ops/nn/loss.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
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

using Values = std::vector<double>;
using Sizes = std::vector<int64_t>;

constexpr Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};
const double kNan = std::numeric_limits<double>::quiet_NaN();

std::string name_of(Reduction r) {
  return r == Reduction::None ? "none" : r == Reduction::Mean ? "mean" : "sum";
}

/// The oracle of a reduction: the elementwise values, their mean or their sum.
Values reduce(const Values& v, Reduction r) {
  if (r == Reduction::None) return v;
  const double s = std::accumulate(v.begin(), v.end(), 0.0);
  return {r == Reduction::Sum ? s : s / static_cast<double>(v.size())};
}
Sizes reduced_sizes(const Sizes& sizes, Reduction r) {
  return r == Reduction::None ? sizes : Sizes{};
}

/// The values a tensor of dtype t holds for v (float32 rounds), so oracles see them exactly.
Values as_stored(Values v, DType t) {
  if (t == DType::Float32) {
    for (double& x : v) x = static_cast<float>(x);
  }
  return v;
}

int64_t numel_of(const Sizes& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
}

class Loss : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_nn(); }
};

// ---- pointwise losses: forward ----------------------------------------------------------------

/// A pointwise loss of (self, target), its elementwise oracle, and its backward op with the
/// oracle's derivative checked by finite differences.
struct PointwiseCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&, Reduction)> forward;
  std::function<double(double, double)> oracle;
  std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, Reduction)> backward;
  double lo = -2, hi = 2;  // the range of self and target
};

std::vector<PointwiseCase> pointwise_cases() {
  std::vector<PointwiseCase> c;
  c.push_back(
      {"mse", [](auto& x, auto& y, Reduction r) { return mse_loss(x, y, r); },
       [](double x, double y) { return (x - y) * (x - y); },
       [](auto& g, auto& x, auto& y, Reduction r) { return mse_loss_backward(g, x, y, r); }});
  c.push_back({"l1", [](auto& x, auto& y, Reduction r) { return l1_loss(x, y, r); },
               [](double x, double y) { return std::fabs(x - y); }, nullptr});
  for (double beta : {1.0, 0.5}) {
    c.push_back({"smooth_l1 beta " + std::to_string(beta),
                 [beta](auto& x, auto& y, Reduction r) { return smooth_l1_loss(x, y, r, beta); },
                 [beta](double x, double y) {
                   const double z = std::fabs(x - y);
                   return z < beta ? 0.5 * z * z / beta : z - 0.5 * beta;
                 },
                 [beta](auto& g, auto& x, auto& y, Reduction r) {
                   return smooth_l1_loss_backward(g, x, y, r, beta);
                 }});
  }
  // beta = 0 is the L1 loss.
  c.push_back({"smooth_l1 beta 0",
               [](auto& x, auto& y, Reduction r) { return smooth_l1_loss(x, y, r, 0.0); },
               [](double x, double y) { return std::fabs(x - y); },
               [](auto& g, auto& x, auto& y, Reduction r) {
                 return smooth_l1_loss_backward(g, x, y, r, 0.0);
               }});
  for (double delta : {1.0, 0.7}) {
    c.push_back({"huber delta " + std::to_string(delta),
                 [delta](auto& x, auto& y, Reduction r) { return huber_loss(x, y, r, delta); },
                 [delta](double x, double y) {
                   const double z = std::fabs(x - y);
                   return z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta);
                 },
                 [delta](auto& g, auto& x, auto& y, Reduction r) {
                   return huber_loss_backward(g, x, y, r, delta);
                 }});
  }
  c.push_back({"soft_margin",
               [](auto& x, auto& y, Reduction r) { return soft_margin_loss(x, y, r); },
               [](double x, double y) { return std::log(1 + std::exp(-y * x)); },
               [](auto& g, auto& x, auto& y, Reduction r) {
                 return soft_margin_loss_backward(g, x, y, r);
               }});
  c.push_back({"bce",
               [](auto& x, auto& y, Reduction r) { return binary_cross_entropy(x, y, {}, r); },
               [](double x, double y) { return -(y * std::log(x) + (1 - y) * std::log(1 - x)); },
               [](auto& g, auto& x, auto& y, Reduction r) {
                 return binary_cross_entropy_backward(g, x, y, {}, r);
               },
               0.02, 0.98});
  c.push_back({"bce_with_logits",
               [](auto& x, auto& y, Reduction r) {
                 return binary_cross_entropy_with_logits(x, y, {}, {}, r);
               },
               [](double x, double y) {
                 const double s = 1 / (1 + std::exp(-x));
                 return -(y * std::log(s) + (1 - y) * std::log(1 - s));
               },
               nullptr});
  return c;
}

TEST_F(Loss, PointwiseLossesMatchOracle) {
  const Sizes sizes{3, 5};
  uint64_t seed = 1;
  for (const PointwiseCase& c : pointwise_cases()) {
    const Values x0 = random_values(15, seed++, c.lo, c.hi);
    const Values y0 = random_values(15, seed++, c.lo, c.hi);
    for (DType t : {DType::Float32, DType::Float64}) {
      const Values x = as_stored(x0, t), y = as_stored(y0, t);
      Values want(x.size());
      for (size_t i = 0; i < x.size(); ++i) want[i] = c.oracle(x[i], y[i]);
      for (bool strided : {false, true}) {
        for (Reduction r : kReductions) {
          SCOPED_TRACE(c.name + " " + std::string(dtype_name(t)) + (strided ? " strided " : " ") +
                       name_of(r));
          const Tensor got =
              c.forward(make_tensor(x, sizes, t, strided), make_tensor(y, sizes, t, !strided), r);
          EXPECT_EQ(got.dtype(), t);
          const double tol = t == DType::Float32 ? 2e-5 : 1e-12;
          expect_close(got, reduced_sizes(sizes, r), reduce(want, r), tol, tol);
        }
      }
    }
  }
}

TEST_F(Loss, PointwiseLossesOfNothing) {
  // A mean over no elements is nan, a sum 0, as in PyTorch.
  const Tensor e = make_tensor({}, {0, 3});
  expect_close(mse_loss(e, e), {}, {kNan});
  expect_close(mse_loss(e, e, Reduction::Sum), {}, {0});
  expect_close(mse_loss(e, e, Reduction::None), {0, 3}, {});
  expect_close(huber_loss(e, e), {}, {kNan});
  expect_close(binary_cross_entropy(e, e, {}, Reduction::Sum), {}, {0});
}

TEST_F(Loss, PointwiseLossesBroadcastAndPromote) {
  // target [5] broadcasts along self [3, 5] (PyTorch's functional layer only warns).
  const Values x = random_values(15, 7), y = random_values(5, 8);
  Values want;
  for (size_t i = 0; i < 15; ++i) want.push_back((x[i] - y[i % 5]) * (x[i] - y[i % 5]));
  const Tensor xs = make_tensor(x, {3, 5}, DType::Float64),
               ys = make_tensor(y, {5}, DType::Float64);
  expect_close(mse_loss(xs, ys, Reduction::None), {3, 5}, want, 1e-12, 1e-12);
  expect_close(mse_loss(ys, xs), {}, reduce(want, Reduction::Mean), 1e-12, 1e-12);
  // float32 with float64 computes in float64; a 0-dim float64 does not lift float32.
  EXPECT_EQ(mse_loss(make_tensor(x, {3, 5}), ys).dtype(), DType::Float64);
  EXPECT_EQ(mse_loss(make_tensor(x, {3, 5}), make_tensor({1}, {}, DType::Float64)).dtype(),
            DType::Float32);
  // An integer target promotes to self's floating dtype.
  expect_close(
      l1_loss(make_tensor({1.5, -2}, {2}), make_tensor({1, 1}, {2}, DType::Int64), Reduction::None),
      {2}, {0.5, 3});
  expect_close(smooth_l1_loss(make_tensor({1.5, -2}, {2}), make_tensor({1, 1}, {2}, DType::Int64),
                              Reduction::None),
               {2}, {0.125, 2.5});
  const std::string msg = message_of([&] {
    mse_loss(make_tensor(x, {3, 5}), make_tensor(y, {5, 1}));
  });
  EXPECT_TRUE(contains(msg,
                       "mse_loss: The size of tensor self (3) must match the size of tensor "
                       "target (5) at non-singleton dimension 0"))
      << msg;
}

TEST_F(Loss, PointwiseLossesIn16BitFloats) {
  const Values x = random_values(8, 3), y = random_values(8, 4);
  for (DType t : {DType::Float16, DType::BFloat16}) {
    const Values xs = to_doubles(make_tensor(x, {8}, t)), ys = to_doubles(make_tensor(y, {8}, t));
    Values want;
    for (size_t i = 0; i < 8; ++i) want.push_back((xs[i] - ys[i]) * (xs[i] - ys[i]));
    const Tensor got = mse_loss(make_tensor(x, {8}, t), make_tensor(y, {8}, t));
    EXPECT_EQ(got.dtype(), t);
    expect_close(got, {}, reduce(want, Reduction::Mean), 1e-2, 1e-2);
  }
}

TEST_F(Loss, SmoothL1AndHuberBranches) {
  const Tensor x = make_tensor({0, 0.5, 1, 3, -3}, {5}, DType::Float64);
  const Tensor y = make_tensor({0, 0, 0, 0, 0}, {5}, DType::Float64);
  expect_close(smooth_l1_loss(x, y, Reduction::None, 1.0), {5}, {0, 0.125, 0.5, 2.5, 2.5});
  expect_close(smooth_l1_loss(x, y, Reduction::None, 0.0), {5}, {0, 0.5, 1, 3, 3});
  expect_close(huber_loss(x, y, Reduction::None, 2.0), {5}, {0, 0.125, 0.5, 4, 4});
  // Huber with delta is delta times smooth L1 with beta = delta.
  const Tensor h = huber_loss(x, y, Reduction::Sum, 0.5);
  const Tensor s = smooth_l1_loss(x, y, Reduction::Sum, 0.5);
  EXPECT_NEAR(h.item<double>(), 0.5 * s.item<double>(), 1e-12);
}

// ---- pointwise losses: backward ---------------------------------------------------------------

/// d/dx of f at x by central differences.
double derivative(const std::function<double(double)>& f, double x, double h = 1e-6) {
  return (f(x + h) - f(x - h)) / (2 * h);
}

TEST_F(Loss, PointwiseBackwardMatchesFiniteDifferences) {
  const Sizes sizes{4, 3};
  uint64_t seed = 100;
  for (const PointwiseCase& c : pointwise_cases()) {
    if (!c.backward) continue;
    Values x = random_values(12, seed++, c.lo, c.hi);
    const Values y = random_values(12, seed++, c.lo, c.hi);
    // Keep clear of the kinks (|x - y| = beta or delta, and x = y for the L1 case).
    for (size_t i = 0; i < x.size(); ++i) {
      for (double k : {0.0, 0.5, 0.7, 1.0}) {
        if (std::fabs(std::fabs(x[i] - y[i]) - k) < 1e-3) x[i] += 0.01;
      }
    }
    const Values g = random_values(12, seed++);
    for (Reduction r : kReductions) {
      for (bool strided : {false, true}) {
        SCOPED_TRACE(c.name + " " + name_of(r) + (strided ? " strided" : ""));
        const double g0 = 0.75;  // the reduced loss's grad_output
        const Tensor grad = r == Reduction::None ? make_tensor(g, sizes, DType::Float64, strided)
                                                 : make_tensor({g0}, {}, DType::Float64);
        const double scale = r == Reduction::Mean ? g0 / 12 : g0;
        Values want;
        for (size_t i = 0; i < x.size(); ++i) {
          const double d = derivative([&](double v) { return c.oracle(v, y[i]); }, x[i]);
          want.push_back(d * (r == Reduction::None ? g[i] : scale));
        }
        const Tensor got = c.backward(grad, make_tensor(x, sizes, DType::Float64, strided),
                                      make_tensor(y, sizes, DType::Float64, strided), r);
        expect_close(got, sizes, want, 1e-6, 1e-7);
      }
    }
  }
}

TEST_F(Loss, BackwardBroadcastsTargetAndKeepsSelfDtype) {
  const Values x = random_values(6, 11), y = random_values(3, 12);
  Values want;
  for (size_t i = 0; i < 6; ++i) want.push_back(2 * (x[i] - y[i % 3]) / 6);
  const Tensor got = mse_loss_backward(make_tensor({1}, {}, DType::Float64),
                                       make_tensor(x, {2, 3}, DType::Float64),
                                       make_tensor(y, {3}, DType::Float64), Reduction::Mean);
  expect_close(got, {2, 3}, want, 1e-12, 1e-12);
  // A float64 target computes in float64, but the gradient has self's dtype.
  EXPECT_EQ(mse_loss_backward(make_tensor({1}, {}), make_tensor(x, {2, 3}),
                              make_tensor(y, {3}, DType::Float64), Reduction::Sum)
                .dtype(),
            DType::Float32);
  // The gradient has self's shape: a target that widens the broadcast is refused.
  const std::string msg = message_of([&] {
    mse_loss_backward(make_tensor({1}, {}), make_tensor(y, {3}), make_tensor(x, {2, 3}),
                      Reduction::Sum);
  });
  EXPECT_TRUE(contains(msg, "mse_loss_backward: the inputs broadcast to [2, 3]")) << msg;
  // smooth_l1 with beta 0 takes PyTorch's sign branches, -1 at x == y included.
  expect_close(smooth_l1_loss_backward(make_tensor({1}, {}), make_tensor({1, 2, 3}, {3}),
                                       make_tensor({2, 2, 2}, {3}), Reduction::Sum, 0.0),
               {3}, {-1, -1, 1});
}

// ---- binary cross entropy ---------------------------------------------------------------------

TEST_F(Loss, BinaryCrossEntropyWithWeight) {
  const Values x = random_values(12, 21, 0.02, 0.98), y = random_values(12, 22, 0, 1);
  const Values w = random_values(4, 23, 0.5, 2);
  Values want;
  for (size_t i = 0; i < 12; ++i) {
    want.push_back(-w[i % 4] * (y[i] * std::log(x[i]) + (1 - y[i]) * std::log(1 - x[i])));
  }
  const Tensor xs = make_tensor(x, {3, 4}, DType::Float64, true);
  const Tensor ys = make_tensor(y, {3, 4}, DType::Float64);
  const Tensor ws = make_tensor(w, {4}, DType::Float64);
  for (Reduction r : kReductions) {
    SCOPED_TRACE(name_of(r));
    expect_close(binary_cross_entropy(xs, ys, ws, r), reduced_sizes({3, 4}, r), reduce(want, r),
                 1e-12, 1e-12);
    // Backward against finite differences of the weighted oracle.
    const double g0 = 1.5;
    Values want_grad;
    for (size_t i = 0; i < 12; ++i) {
      const double d = derivative(
          [&](double v) { return -w[i % 4] * (y[i] * std::log(v) + (1 - y[i]) * std::log(1 - v)); },
          x[i], 1e-7);
      want_grad.push_back(d * (r == Reduction::Mean ? g0 / 12 : g0));
    }
    const Tensor grad = r == Reduction::None ? make_tensor(Values(12, g0), {3, 4}, DType::Float64)
                                             : make_tensor({g0}, {}, DType::Float64);
    expect_close(binary_cross_entropy_backward(grad, xs, ys, ws, r), {3, 4}, want_grad, 1e-6, 1e-6);
  }
}

TEST_F(Loss, BinaryCrossEntropyClampsTheLogAndChecksRange) {
  // log is clamped at -100: certainty about the wrong class costs 100, not inf.
  expect_close(binary_cross_entropy(make_tensor({0, 1, 0, 1}, {4}), make_tensor({1, 0, 0, 1}, {4}),
                                    {}, Reduction::None),
               {4}, {100, 100, 0, 0});
  std::string msg = message_of([] {
    binary_cross_entropy(make_tensor({0.5, 1.5}, {2}), make_tensor({0, 1}, {2}));
  });
  EXPECT_TRUE(contains(msg, "all elements of input should be between 0 and 1")) << msg;
  msg = message_of([] { binary_cross_entropy(make_tensor({kNan}, {1}), make_tensor({0}, {1})); });
  EXPECT_TRUE(contains(msg, "all elements of input should be between 0 and 1")) << msg;
  msg = message_of([] {
    binary_cross_entropy(make_tensor({0.5, 0.5}, {2}), make_tensor({0, 2}, {2}));
  });
  EXPECT_TRUE(contains(msg, "all elements of target should be between 0 and 1")) << msg;
  msg = message_of([] {
    binary_cross_entropy(make_tensor({0.5, 0.5}, {2}), make_tensor({0, 1, 1, 0}, {2, 2}));
  });
  EXPECT_TRUE(contains(msg,
                       "Using a target size ([2, 2]) that is different to the input size "
                       "([2]) is deprecated. Please ensure they have the same size."))
      << msg;
}

TEST_F(Loss, BinaryCrossEntropyWithLogits) {
  const Values x = random_values(12, 31, -4, 4), y = random_values(12, 32, 0, 1);
  const Values w = random_values(12, 33, 0.5, 2), pw = random_values(4, 34, 0.5, 3);
  Values want;
  for (size_t i = 0; i < 12; ++i) {
    const double s = 1 / (1 + std::exp(-x[i]));
    // PyTorch's documented form: -w [p y log(s) + (1 - y) log(1 - s)].
    want.push_back(-w[i] * (pw[i % 4] * y[i] * std::log(s) + (1 - y[i]) * std::log(1 - s)));
  }
  for (Reduction r : kReductions) {
    SCOPED_TRACE(name_of(r));
    expect_close(binary_cross_entropy_with_logits(make_tensor(x, {3, 4}, DType::Float64, true),
                                                  make_tensor(y, {3, 4}, DType::Float64),
                                                  make_tensor(w, {3, 4}, DType::Float64),
                                                  make_tensor(pw, {4}, DType::Float64), r),
                 reduced_sizes({3, 4}, r), reduce(want, r), 1e-12, 1e-12);
  }
  // Stable for large logits: no exp overflows into inf or nan.
  expect_close(
      binary_cross_entropy_with_logits(make_tensor({100, -100, 100, -100}, {4}),
                                       make_tensor({0, 1, 1, 0}, {4}), {}, {}, Reduction::None),
      {4}, {100, 100, 0, 0});
}

// ---- kl_div, margin ranking ---------------------------------------------------------------------

TEST_F(Loss, KlDiv) {
  const Values x = random_values(12, 41, -3, 0);
  Values t = random_values(12, 42, 0, 1);
  t[3] = 0;  // contributes 0, whatever x
  const Tensor xs = make_tensor(x, {3, 4}, DType::Float64, true);
  Values want, want_log;
  for (size_t i = 0; i < 12; ++i) {
    want.push_back(t[i] > 0 ? t[i] * (std::log(t[i]) - x[i]) : 0.0);
    want_log.push_back(std::exp(t[i]) * (t[i] - x[i]));
  }
  for (Reduction r : kReductions) {
    SCOPED_TRACE(name_of(r));
    expect_close(kl_div(xs, make_tensor(t, {3, 4}, DType::Float64), r), reduced_sizes({3, 4}, r),
                 reduce(want, r), 1e-12, 1e-12);
    expect_close(kl_div(xs, make_tensor(t, {3, 4}, DType::Float64), r, true),
                 reduced_sizes({3, 4}, r), reduce(want_log, r), 1e-12, 1e-12);
  }
  // batchmean: the sum over the batch size, the true KL divergence per sample.
  const double sum = reduce(want, Reduction::Sum)[0];
  expect_close(kl_div(xs, make_tensor(t, {3, 4}, DType::Float64), KlDivReduction::BatchMean), {},
               {sum / 3}, 1e-12, 1e-12);
  expect_close(kl_div(xs, make_tensor(t, {3, 4}, DType::Float64), KlDivReduction::Mean), {},
               {sum / 12}, 1e-12, 1e-12);
  expect_close(kl_div(make_tensor({-1}, {}), make_tensor({0.5}, {}), KlDivReduction::BatchMean), {},
               {0.5 * (std::log(0.5) + 1)});
  const std::string msg = message_of<TypeError>(
      [] { kl_div(make_tensor({1}, {1}, DType::Int64), make_tensor({1}, {1})); });
  EXPECT_TRUE(contains(msg, "kl_div: Integral inputs not supported")) << msg;
}

TEST_F(Loss, MarginRankingLoss) {
  const Values a = random_values(6, 51), b = random_values(6, 52);
  const Values t{1, -1, 1, 1, -1, -1};
  for (double margin : {0.0, 0.5}) {
    Values want;
    for (size_t i = 0; i < 6; ++i) want.push_back(std::max(0.0, -t[i] * (a[i] - b[i]) + margin));
    for (Reduction r : kReductions) {
      expect_close(margin_ranking_loss(make_tensor(a, {6}, DType::Float64),
                                       make_tensor(b, {6}, DType::Float64, true),
                                       make_tensor(t, {6}, DType::Float64), margin, r),
                   reduced_sizes({6}, r), reduce(want, r), 1e-12, 1e-12);
    }
  }
}

TEST_F(Loss, MarginRankingLossOfIntegersDoesNotWrap) {
  // The float margin makes the result float32; computing there, uint8 1 - 3 is -2, not 254.
  const Tensor got = margin_ranking_loss(
      make_tensor({1, 3}, {2}, DType::UInt8), make_tensor({3, 1}, {2}, DType::UInt8),
      make_tensor({1, 1}, {2}, DType::Int64), 0.5, Reduction::None);
  EXPECT_EQ(got.dtype(), DType::Float32);
  expect_close(got, {2}, {2.5, 0});
}

// ---- negative log-likelihood ------------------------------------------------------------------

/// The oracle of the nll family on log-probabilities x laid out [N, C, S] (row-major; S the
/// product of the spatial dims, 1 without) with targets [N, S]: the output (per pair for
/// None, else reduced) and total_weight.
struct NllRef {
  Values out;
  double total_weight = 0;
};
NllRef nll_ref(const Values& x, const std::vector<int64_t>& target, int64_t n, int64_t c, int64_t s,
               const Values& weight, Reduction r, int64_t ignore_index = -100) {
  NllRef ref;
  double sum = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < s; ++p) {
      const int64_t t = target[b * s + p];
      double loss = 0;
      if (t != ignore_index) {
        const double w = weight.empty() ? 1.0 : weight[t];
        loss = -w * x[(b * c + t) * s + p];
        ref.total_weight += w;
      }
      sum += loss;
      ref.out.push_back(loss);
    }
  }
  if (r == Reduction::Sum) ref.out = {sum};
  if (r == Reduction::Mean) ref.out = {sum / ref.total_weight};
  return ref;
}

Values to_values(const std::vector<int64_t>& v) { return Values(v.begin(), v.end()); }

TEST_F(Loss, NllLossForwardMatchesOracle) {
  const int64_t n = 5, c = 4;
  const Values x = random_values(20, 61, -3, 0);
  const std::vector<int64_t> target{0, 3, 1, 3, 2};
  const Values w{0.5, 2, 1.5, 0.25};
  for (bool weighted : {false, true}) {
    for (int64_t ignore : {int64_t{-100}, int64_t{3}}) {
      for (bool strided : {false, true}) {
        for (Reduction r : kReductions) {
          SCOPED_TRACE(std::string(weighted ? "weighted " : "") + "ignore " +
                       std::to_string(ignore) + (strided ? " strided " : " ") + name_of(r));
          const NllRef ref = nll_ref(x, target, n, c, 1, weighted ? w : Values{}, r, ignore);
          const std::optional<Tensor> ws =
              weighted ? std::optional<Tensor>(make_tensor(w, {c})) : std::nullopt;
          const auto [out, total] = nll_loss_forward(
              make_tensor(x, {n, c}, DType::Float32, strided),
              make_tensor(to_values(target), {n}, DType::Int64, strided), ws, r, ignore);
          expect_close(out, r == Reduction::None ? Sizes{n} : Sizes{}, ref.out);
          // total_weight is left 0 by the unreduced form, as in PyTorch.
          expect_close(total, {}, {r == Reduction::None ? 0.0 : ref.total_weight});
          expect_close(nll_loss(make_tensor(x, {n, c}, DType::Float32, strided),
                                make_tensor(to_values(target), {n}, DType::Int64), ws, r, ignore),
                       r == Reduction::None ? Sizes{n} : Sizes{}, ref.out);
        }
      }
    }
  }
}

TEST_F(Loss, NllLossUnbatchedByteTargetsAndTransposedInput) {
  const Values x = random_values(4, 62, -3, 0);
  // Input [C] with a 0-dim target: a 0-dim loss, even unreduced.
  for (Reduction r : kReductions) {
    const auto [out, total] =
        nll_loss_forward(make_tensor(x, {4}), make_tensor({2}, {}, DType::Int64),
                         make_tensor({1, 1, 3, 1}, {4}), r, -100);
    expect_close(out, {}, {r == Reduction::Mean ? -x[2] : -3 * x[2]});
    expect_close(total, {}, {3});
  }
  // uint8 targets, as PyTorch accepts.
  const Values xs = random_values(6, 63, -3, 0);
  expect_close(
      nll_loss(make_tensor(xs, {2, 3}), make_tensor({2, 0}, {2}, DType::UInt8), {}, Reduction::Sum),
      {}, {-xs[2] - xs[3]});
  // A transposed [N, C] view (strides [1, N]).
  const Tensor xt = transpose(make_tensor(xs, {3, 2}), 0, 1);  // xt[b][k] = xs[k * 2 + b]
  expect_close(nll_loss(xt, make_tensor({2, 0}, {2}, DType::Int64), {}, Reduction::None), {2},
               {-xs[4], -xs[1]});
}

TEST_F(Loss, NllLossEdgeCases) {
  const Tensor x = make_tensor({-1, -2, -3, -4}, {2, 2});
  const Tensor all_ignored = make_tensor({-100, -100}, {2}, DType::Int64);
  // Every target ignored: the mean is 0 / 0.
  auto [out, total] = nll_loss_forward(x, all_ignored, std::nullopt, Reduction::Mean, -100);
  expect_close(out, {}, {kNan});
  expect_close(total, {}, {0});
  expect_close(nll_loss(x, all_ignored, {}, Reduction::Sum), {}, {0});
  // An empty batch: nan for the mean, 0 for the sum, [0] unreduced.
  const Tensor e = make_tensor({}, {0, 3});
  const Tensor et = make_tensor({}, {0}, DType::Int64);
  expect_close(nll_loss(e, et), {}, {kNan});
  expect_close(nll_loss(e, et, {}, Reduction::Sum), {}, {0});
  expect_close(nll_loss(e, et, {}, Reduction::None), {0}, {});
  // An ignore_index that is a valid class ignores it.
  expect_close(nll_loss(x, make_tensor({0, 1}, {2}, DType::Int64), {}, Reduction::Mean, 1), {},
               {1});
}

TEST_F(Loss, NllLossBackwardMatchesFiniteDifferences) {
  const int64_t n = 4, c = 3;
  const Values x = random_values(12, 64, -3, 0);
  const std::vector<int64_t> target{2, 0, 1, 2};
  const Values w{0.5, 2, 1.5};
  const Values g = random_values(4, 65);
  for (bool weighted : {false, true}) {
    for (Reduction r : kReductions) {
      SCOPED_TRACE(std::string(weighted ? "weighted " : "") + name_of(r));
      const Values wv = weighted ? w : Values{};
      const int64_t ignore = 1;
      // The scalar whose gradient grad_input is: sum of grad_output times output.
      auto objective = [&](const Values& xv) {
        const NllRef ref = nll_ref(xv, target, n, c, 1, wv, r, ignore);
        double s = 0;
        for (size_t i = 0; i < ref.out.size(); ++i) {
          s += ref.out[i] * (r == Reduction::None ? g[i] : 0.75);
        }
        return s;
      };
      Values want(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        Values xp = x, xm = x;
        xp[i] += 1e-6;
        xm[i] -= 1e-6;
        want[i] = (objective(xp) - objective(xm)) / 2e-6;
      }
      const Tensor xs = make_tensor(x, {n, c}, DType::Float64, true);
      const Tensor ts = make_tensor(to_values(target), {n}, DType::Int64);
      const std::optional<Tensor> ws =
          weighted ? std::optional<Tensor>(make_tensor(w, {c}, DType::Float64)) : std::nullopt;
      const Tensor total = std::get<1>(nll_loss_forward(xs, ts, ws, Reduction::Mean, ignore));
      const Tensor grad = r == Reduction::None ? make_tensor(g, {n}, DType::Float64)
                                               : make_tensor({0.75}, {}, DType::Float64);
      expect_close(nll_loss_backward(grad, xs, ts, ws, r, ignore, total), {n, c}, want, 1e-6, 1e-8);
    }
  }
}

TEST_F(Loss, NllLoss2dAndNd) {
  const int64_t n = 2, c = 3, h = 2, w = 3;
  const Values x = random_values(36, 66, -3, 0);
  const std::vector<int64_t> target{0, 2, 1, 1, -100, 2, 2, 2, 0, 1, 0, 1};
  const Values wt{0.5, 2, 1.5};
  const Tensor ts = make_tensor(to_values(target), {n, h, w}, DType::Int64, true);
  for (Reduction r : kReductions) {
    SCOPED_TRACE(name_of(r));
    const NllRef ref = nll_ref(x, target, n, c, h * w, wt, r);
    const Tensor xs = make_tensor(x, {n, c, h, w}, DType::Float64, true);
    const Tensor ws = make_tensor(wt, {c}, DType::Float64);
    const auto [out, total] = nll_loss2d_forward(xs, ts, ws, r, -100);
    expect_close(out, r == Reduction::None ? Sizes{n, h, w} : Sizes{}, ref.out, 1e-12, 1e-12);
    expect_close(nll_loss2d(xs, ts, ws, r), r == Reduction::None ? Sizes{n, h, w} : Sizes{},
                 ref.out, 1e-12, 1e-12);
    // nll_loss_nd on the same data as 3-D ([N, C, H * W]), 4-D and 5-D ([N, C, H, W, 1]).
    for (const Sizes& shape : {Sizes{n, c, h * w}, Sizes{n, c, h, w}, Sizes{n, c, h, w, 1}}) {
      Sizes tshape(shape.begin(), shape.end());
      tshape.erase(tshape.begin() + 1);
      expect_close(nll_loss_nd(make_tensor(x, shape, DType::Float64, true),
                               make_tensor(to_values(target), tshape, DType::Int64), ws, r),
                   r == Reduction::None ? tshape : Sizes{}, ref.out, 1e-12, 1e-12);
    }
    // nll_loss2d_backward: grad_output times the weight at each target class.
    const Values g = random_values(12, 67);
    const Tensor grad = r == Reduction::None ? make_tensor(g, {n, h, w}, DType::Float64)
                                             : make_tensor({0.75}, {}, DType::Float64);
    Values want(36, 0.0);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t p = 0; p < h * w; ++p) {
        const int64_t t = target[b * h * w + p];
        if (t < 0) continue;
        const double gv = r == Reduction::None   ? g[b * h * w + p]
                          : r == Reduction::Mean ? 0.75 / ref.total_weight
                                                 : 0.75;
        want[(b * c + t) * h * w + p] = -wt[t] * gv;
      }
    }
    expect_close(
        nll_loss2d_backward(grad, xs, ts, ws, r, -100,
                            std::get<1>(nll_loss2d_forward(xs, ts, ws, Reduction::Mean, -100))),
        {n, c, h, w}, want, 1e-12, 1e-12);
  }
  // An empty batch through the K-D path.
  expect_close(nll_loss_nd(make_tensor({}, {0, 3, 2}), make_tensor({}, {0, 2}, DType::Int64), {},
                           Reduction::None),
               {0, 2}, {});
}

TEST_F(Loss, NllLossErrors) {
  const Tensor x = make_tensor(random_values(12, 68, -3, 0), {3, 4});
  std::string msg = message_of<IndexError>([&] {
    nll_loss(x, make_tensor({0, 5, 1}, {3}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg, "Target 5 is out of bounds.")) << msg;
  msg = message_of<IndexError>([&] {
    nll_loss(x, make_tensor({0, -1, 7}, {3}, DType::Int64), {}, Reduction::None);
  });
  EXPECT_TRUE(contains(msg, "Target -1 is out of bounds.")) << msg;
  msg = message_of<IndexError>([&] {
    nll_loss_backward(make_tensor({1}, {}), x, make_tensor({0, 4, 1}, {3}, DType::Int64), {},
                      Reduction::Sum, -100, make_tensor({3}, {}));
  });
  EXPECT_TRUE(contains(msg, "Target 4 is out of bounds.")) << msg;
  msg = message_of<ValueError>([&] { nll_loss_nd(x, make_tensor({0, 1}, {2}, DType::Int64)); });
  EXPECT_TRUE(contains(msg, "Expected input batch_size (3) to match target batch_size (2)."))
      << msg;
  msg = message_of([&] { nll_loss(x, make_tensor({0}, {}, DType::Int64)); });
  EXPECT_TRUE(contains(msg, "size mismatch (got input: [3, 4], target: [])")) << msg;
  msg = message_of([&] { nll_loss(x, make_tensor({0, 1}, {2}, DType::Int64)); });
  EXPECT_TRUE(contains(msg, "size mismatch (got input: [3, 4], target: [2])")) << msg;
  msg = message_of([&] {
    nll_loss(x, make_tensor({0, 1, 2}, {3}, DType::Int64), make_tensor({1, 1}, {2}));
  });
  EXPECT_TRUE(contains(msg,
                       "weight tensor should be defined either for all 4 classes or no "
                       "classes but got weight tensor of shape: [2]"))
      << msg;
  msg = message_of<TypeError>([&] { nll_loss(x, make_tensor({0, 1, 2}, {3}, DType::Int32)); });
  EXPECT_TRUE(contains(msg, "expected scalar type Long but found Int")) << msg;
  msg = message_of([&] {
    nll_loss(make_tensor(Values(24, -1), {2, 3, 4}),
             make_tensor(Values(8, 0), {2, 4}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg, "input tensor should be 1D or 2D")) << msg;
  msg = message_of([&] {
    nll_loss_nd(make_tensor(Values(24, -1), {2, 3, 4}),
                make_tensor(Values(6, 0), {2, 3}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg, "Expected target size [2, 4], got [2, 3]")) << msg;
  msg = message_of([&] { nll_loss_nd(make_tensor({1}, {}), make_tensor({0}, {}, DType::Int64)); });
  EXPECT_TRUE(contains(msg, "Expected 1 or more dimensions (got 0)")) << msg;
  msg = message_of([&] {
    nll_loss2d(make_tensor(Values(24, -1), {2, 3, 2, 2}),
               make_tensor(Values(6, 0), {2, 3, 1}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg, "size mismatch (got input: [2, 3, 2, 2], target: [2, 3, 1])")) << msg;
  msg = message_of([&] {
    nll_loss(x, make_tensor({0, 1, 2}, {3}, DType::Int64), {}, static_cast<Reduction>(5));
  });
  EXPECT_TRUE(contains(msg, "reduction must be 0 (none), 1 (mean) or 2 (sum), got 5")) << msg;
  msg = message_of<TypeError>([&] {
    nll_loss(make_tensor({1, 2}, {1, 2}, DType::Int64), make_tensor({0}, {1}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg, "expected a floating point input")) << msg;
}

// ---- cross entropy ----------------------------------------------------------------------------

/// log_softmax over the classes of logits laid out [N, C, S].
Values log_softmax_ref(const Values& z, int64_t n, int64_t c, int64_t s) {
  Values lp(z.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < s; ++p) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k) m = std::max(m, z[(b * c + k) * s + p]);
      double sum = 0;
      for (int64_t k = 0; k < c; ++k) sum += std::exp(z[(b * c + k) * s + p] - m);
      for (int64_t k = 0; k < c; ++k) {
        lp[(b * c + k) * s + p] = z[(b * c + k) * s + p] - m - std::log(sum);
      }
    }
  }
  return lp;
}

/// PyTorch's documented cross entropy with class indices and label smoothing eps:
/// l = (1 - eps) (-w[y] lp[y]) + eps / C sum_c (-w[c] lp[c]); the mean divides by the sum
/// of w[y] over the targets that are not ignored.
Values ce_indices_ref(const Values& z, const std::vector<int64_t>& target, int64_t n, int64_t c,
                      int64_t s, const Values& weight, Reduction r, int64_t ignore, double eps) {
  const Values lp = log_softmax_ref(z, n, c, s);
  auto w = [&](int64_t k) { return weight.empty() ? 1.0 : weight[k]; };
  Values out;
  double total = 0, sum = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < s; ++p) {
      const int64_t t = target[b * s + p];
      double l = 0;
      if (t != ignore) {
        double smooth = 0;
        for (int64_t k = 0; k < c; ++k) smooth -= w(k) * lp[(b * c + k) * s + p];
        l = (1 - eps) * -w(t) * lp[(b * c + t) * s + p] + eps / static_cast<double>(c) * smooth;
        total += w(t);
      }
      out.push_back(l);
      sum += l;
    }
  }
  if (r == Reduction::Sum) return {sum};
  if (r == Reduction::Mean) return {sum / total};
  return out;
}

/// Cross entropy with class probabilities q, smoothed to q (1 - eps) + eps / C:
/// l = -sum_c w[c] q[c] lp[c]; the mean divides by the number of samples N * S.
Values ce_probs_ref(const Values& z, const Values& q, int64_t n, int64_t c, int64_t s,
                    const Values& weight, Reduction r, double eps) {
  const Values lp = log_softmax_ref(z, n, c, s);
  Values out;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < s; ++p) {
      double l = 0;
      for (int64_t k = 0; k < c; ++k) {
        const size_t i = static_cast<size_t>((b * c + k) * s + p);
        const double qk = q[i] * (1 - eps) + eps / static_cast<double>(c);
        l -= (weight.empty() ? 1.0 : weight[k]) * qk * lp[i];
      }
      out.push_back(l);
    }
  }
  return r == Reduction::None ? out : reduce(out, r);
}

/// The shapes cross entropy is checked on: input shape, N, C, S and the target shape.
struct CeShape {
  Sizes input;
  int64_t n, c, s;
  Sizes target;
};
const std::vector<CeShape>& ce_shapes() {
  static const std::vector<CeShape> shapes = {
      {{4}, 1, 4, 1, {}},
      {{5, 4}, 5, 4, 1, {5}},
      {{2, 4, 3}, 2, 4, 3, {2, 3}},
      {{2, 4, 2, 2}, 2, 4, 4, {2, 2, 2}},
      {{2, 4, 1, 2, 2}, 2, 4, 4, {2, 1, 2, 2}},
  };
  return shapes;
}

TEST_F(Loss, CrossEntropyWithClassIndices) {
  const Values w{0.5, 2, 1.5, 0.75};
  uint64_t seed = 200;
  for (const CeShape& sh : ce_shapes()) {
    const int64_t count = sh.n * sh.s;
    const Values z = random_values(static_cast<size_t>(numel_of(sh.input)), seed++, -3, 3);
    std::vector<int64_t> target;
    for (int64_t i = 0; i < count; ++i) target.push_back((i * 7 + 3) % sh.c);
    if (count > 2) target[1] = -100;
    for (double eps : {0.0, 0.2}) {
      for (bool weighted : {false, true}) {
        for (Reduction r : kReductions) {
          SCOPED_TRACE(::testing::PrintToString(sh.input) + " eps " + std::to_string(eps) +
                       (weighted ? " weighted " : " ") + name_of(r));
          const Values want =
              ce_indices_ref(z, target, sh.n, sh.c, sh.s, weighted ? w : Values{}, r, -100, eps);
          const std::optional<Tensor> ws =
              weighted ? std::optional<Tensor>(make_tensor(w, {4}, DType::Float64)) : std::nullopt;
          const Tensor got = cross_entropy_loss(
              make_tensor(z, sh.input, DType::Float64, true),
              make_tensor(to_values(target), sh.target, DType::Int64), ws, r, -100, eps);
          expect_close(got, r == Reduction::None ? sh.target : Sizes{}, want, 1e-12, 1e-12);
        }
      }
    }
  }
}

TEST_F(Loss, CrossEntropyWithClassProbabilities) {
  const Values w{0.5, 2, 1.5, 0.75};
  uint64_t seed = 300;
  for (const CeShape& sh : ce_shapes()) {
    const Values z = random_values(static_cast<size_t>(numel_of(sh.input)), seed++, -3, 3);
    const Values q = random_values(z.size(), seed++, 0, 1);  // need not sum to 1
    for (double eps : {0.0, 0.3}) {
      for (bool weighted : {false, true}) {
        for (Reduction r : kReductions) {
          SCOPED_TRACE(::testing::PrintToString(sh.input) + " eps " + std::to_string(eps) +
                       (weighted ? " weighted " : " ") + name_of(r));
          const Values want = ce_probs_ref(z, q, sh.n, sh.c, sh.s, weighted ? w : Values{}, r, eps);
          const std::optional<Tensor> ws =
              weighted ? std::optional<Tensor>(make_tensor(w, {4}, DType::Float64)) : std::nullopt;
          const Tensor got =
              cross_entropy_loss(make_tensor(z, sh.input, DType::Float64),
                                 make_tensor(q, sh.input, DType::Float64, true), ws, r, -1, eps);
          expect_close(got, r == Reduction::None ? sh.target : Sizes{}, want, 1e-12, 1e-12);
        }
      }
    }
  }
}

TEST_F(Loss, CrossEntropyInFloat32AndIgnoredTargets) {
  const Values z = random_values(12, 400, -3, 3);
  const std::vector<int64_t> target{1, 2, 0};
  const Tensor zs = make_tensor(z, {3, 4});
  const Values want =
      ce_indices_ref(as_stored(z, DType::Float32), target, 3, 4, 1, {}, Reduction::Mean, 2, 0.1);
  const Tensor got = cross_entropy_loss(zs, make_tensor(to_values(target), {3}, DType::Int64),
                                        std::nullopt, Reduction::Mean, 2, 0.1);
  EXPECT_EQ(got.dtype(), DType::Float32);
  expect_close(got, {}, want);
  // With every target ignored, the smoothed mean is 0 / 0 too.
  expect_close(cross_entropy_loss(zs, make_tensor({-100, -100, -100}, {3}, DType::Int64), {},
                                  Reduction::Mean, -100, 0.1),
               {}, {kNan});
}

TEST_F(Loss, LargeInputsAcrossChunks) {
  // Enough elements for several fixed chunks and the parallel loops.
  const int64_t n = 200003;
  const Values x = random_values(static_cast<size_t>(n), 81),
               y = random_values(static_cast<size_t>(n), 82);
  Values sq(x.size());
  for (size_t i = 0; i < x.size(); ++i) sq[i] = (x[i] - y[i]) * (x[i] - y[i]);
  const Tensor xs = make_tensor(x, {n}, DType::Float64),
               ys = make_tensor(y, {n}, DType::Float64, true);
  expect_close(mse_loss(xs, ys), {}, reduce(sq, Reduction::Mean), 1e-12, 1e-12);
  expect_close(mse_loss(xs, ys, Reduction::None), {n}, sq, 1e-12, 1e-12);
  // nll over 100000 samples of 3 classes, a quarter of them ignored.
  const int64_t b = 100000, c = 3;
  const Values lp = random_values(static_cast<size_t>(b * c), 83, -3, 0);
  std::vector<int64_t> target(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) target[i] = i % 4 == 3 ? -100 : i % 3;
  const Values w{0.5, 2, 1.5};
  for (Reduction r : kReductions) {
    SCOPED_TRACE(name_of(r));
    const NllRef ref = nll_ref(lp, target, b, c, 1, w, r);
    const Tensor ls = make_tensor(lp, {b, c}, DType::Float64);
    const Tensor ts = make_tensor(to_values(target), {b}, DType::Int64);
    const auto [out, total] =
        nll_loss_forward(ls, ts, make_tensor(w, {c}, DType::Float64), r, -100);
    expect_close(out, r == Reduction::None ? Sizes{b} : Sizes{}, ref.out, 1e-12, 1e-12);
    const Tensor gi =
        nll_loss_backward(r == Reduction::None ? make_tensor(Values(b, 1.0), {b}, DType::Float64)
                                               : make_tensor({1.0}, {}, DType::Float64),
                          ls, ts, make_tensor(w, {c}, DType::Float64), r, -100,
                          std::get<1>(nll_loss_forward(ls, ts, make_tensor(w, {c}, DType::Float64),
                                                       Reduction::Mean, -100)));
    const Values g = to_doubles(gi);
    const double scale = r == Reduction::Mean ? 1 / ref.total_weight : 1.0;
    for (int64_t i : {int64_t{0}, int64_t{7}, b - 1}) {
      const int64_t t = target[i];
      for (int64_t k = 0; k < c; ++k) {
        EXPECT_NEAR(g[i * c + k], t == k ? -w[k] * scale : 0.0, 1e-15) << i << " " << k;
      }
    }
  }
}

TEST_F(Loss, SixteenBitNllAndCrossEntropy) {
  const Values z = random_values(12, 84, -3, 3);
  const std::vector<int64_t> target{1, 2, 0};
  for (DType t : {DType::Float16, DType::BFloat16}) {
    const Tensor zs = make_tensor(z, {3, 4}, t);
    const Values want =
        ce_indices_ref(to_doubles(zs), target, 3, 4, 1, {}, Reduction::Mean, -100, 0);
    const Tensor got = cross_entropy_loss(zs, make_tensor(to_values(target), {3}, DType::Int64));
    EXPECT_EQ(got.dtype(), t);
    expect_close(got, {}, want, 2e-2, 2e-2);
  }
}

TEST_F(Loss, CrossEntropyErrors) {
  const Tensor z = make_tensor(random_values(12, 401), {3, 4});
  std::string msg = message_of([&] {
    cross_entropy_loss(z, make_tensor({0, 1, 2}, {3}, DType::Int64), {}, Reduction::Mean, -100,
                       1.5);
  });
  EXPECT_TRUE(contains(msg, "label_smoothing must be between 0.0 and 1.0. Got: 1.5")) << msg;
  msg = message_of<TypeError>([&] {
    cross_entropy_loss(z, make_tensor(Values(12, 0), {3, 4}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg,
                       "Expected floating point type for target with class probabilities, "
                       "got Long"))
      << msg;
  msg = message_of([&] {
    cross_entropy_loss(z, make_tensor(Values(12, 0.25), {3, 4}), {}, Reduction::Mean, 0);
  });
  EXPECT_TRUE(contains(msg, "ignore_index is not supported for floating point target")) << msg;
  msg = message_of([&] {
    cross_entropy_loss(z, make_tensor(Values(12, 0.25), {3, 4}), make_tensor({1, 1}, {2}));
  });
  EXPECT_TRUE(contains(msg,
                       "cross_entropy: weight tensor should be defined either for all 4 "
                       "classes or no classes but got weight tensor of shape: [2]"))
      << msg;
  msg = message_of<IndexError>([&] {
    cross_entropy_loss(z, make_tensor({0, 4, 1}, {3}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg, "Target 4 is out of bounds.")) << msg;
  msg = message_of<ValueError>([&] {
    cross_entropy_loss(z, make_tensor({0, 1}, {2}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg, "Expected input batch_size (3) to match target batch_size (2)."))
      << msg;
}

TEST_F(Loss, PointwiseErrors) {
  const Tensor x = make_tensor({1, 2, 3}, {3});
  std::string msg = message_of<TypeError>([] {
    mse_loss(make_tensor({1, 2}, {2}, DType::Int64), make_tensor({1, 2}, {2}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg, "\"mse_loss\" not implemented for 'Long'")) << msg;
  msg = message_of([&] { smooth_l1_loss(x, x, Reduction::Mean, -1); });
  EXPECT_TRUE(contains(msg, "smooth_l1_loss does not support negative values for beta")) << msg;
  msg = message_of([&] { huber_loss(x, x, Reduction::Mean, 0); });
  EXPECT_TRUE(contains(msg, "huber_loss does not support non-positive values for delta")) << msg;
  msg = message_of([&] { mse_loss(x, x, static_cast<Reduction>(3)); });
  EXPECT_TRUE(contains(msg, "mse_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), got 3"))
      << msg;
  msg = message_of([&] {
    binary_cross_entropy(make_tensor({0.5, 0.5}, {2}), make_tensor({0, 1}, {2}),
                         make_tensor({1, 1, 1, 1}, {2, 2}));
  });
  EXPECT_TRUE(contains(msg,
                       "binary_cross_entropy: the inputs broadcast to [2, 2], but the result "
                       "must have the shape of self"))
      << msg;
  msg = message_of<TypeError>([&] { mse_loss(x, Tensor()); });
  EXPECT_TRUE(contains(msg, "undefined Tensor for argument 'target'")) << msg;
}

// The composite losses check their shapes up front: a mismatch named the op inside them
// ("mul: ...", "sub.Tensor: ...") that the caller never called.
TEST_F(Loss, CompositeLossesNameThemselvesOnShapeMismatch) {
  const Tensor two = make_tensor({1, 2}, {2}), three = make_tensor({1, 2, 3}, {3});
  EXPECT_EQ(message_of([&] { l1_loss(two, three); }),
            "l1_loss: The size of tensor self (2) must match the size of tensor target (3) at "
            "non-singleton dimension 0");
  EXPECT_EQ(message_of([&] { kl_div(two, three); }),
            "kl_div: The size of tensor self (2) must match the size of tensor target (3) at "
            "non-singleton dimension 0");
  EXPECT_EQ(message_of([&] { kl_div(two, three, KlDivReduction::Mean, true); }),
            "kl_div: The size of tensor self (2) must match the size of tensor target (3) at "
            "non-singleton dimension 0");
  EXPECT_EQ(message_of([&] { margin_ranking_loss(two, three, two); }),
            "margin_ranking_loss: The size of tensor input1 (2) must match the size of tensor "
            "input2 (3) at non-singleton dimension 0");
  EXPECT_EQ(message_of([&] { margin_ranking_loss(two, two, three); }),
            "margin_ranking_loss: The size of tensor input1 (2) must match the size of tensor "
            "target (3) at non-singleton dimension 0");
  // Shapes that broadcast still do, as in PyTorch.
  EXPECT_EQ(sizes_str(l1_loss(make_tensor({1, 2}, {2, 1}), two, Reduction::None).sizes()),
            "[2, 2]");
}

TEST_F(Loss, CrossEntropyIsFunctionalsName) {
  // log_softmax([0, ln 3]) = [-ln 4, ln 3 - ln 4]; target 1 -> ln 4 - ln 3.
  const Tensor logits = make_tensor({0, std::log(3.0)}, {1, 2}, DType::Float64);
  const Tensor target = Tensor::from_vector<int64_t>({1}, {1});
  expect_close(cross_entropy(logits, target), {}, {std::log(4.0) - std::log(3.0)}, 1e-12, 1e-12);
  expect_close(cross_entropy(logits, target, std::nullopt, Reduction::None), {1},
               to_doubles(cross_entropy_loss(logits, target, std::nullopt, Reduction::None)));
}

}  // namespace
}  // namespace loom
