// Tests for ops/nn/cpu/pooling.cpp: max, average and adaptive pooling (2-d and 1-d,
// batched and unbatched, strided inputs, several dtypes) and their backward ops against
// float64 oracles written from the definitions, the ceil_mode rule, NaN propagation, the
// adjoint identity of the linear poolings, and PyTorch's error messages.
#include "loom/ops/nn/pooling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ops_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

using Values = std::vector<double>;
using Sizes = std::vector<int64_t>;

class PoolingTest : public ::testing::Test {
 protected:
  void SetUp() override { load_ops_nn(); }
};

int64_t numel_of(const Sizes& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/// Number of windows along one dim (PyTorch's rule written out: floor or ceil of the
/// padded span over the stride, and in ceil mode no window may start past the input).
int64_t windows(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? static_cast<int64_t>(std::ceil(double(span) / double(s)))
                           : static_cast<int64_t>(std::floor(double(span) / double(s)))) +
                1;
  while (ceil_mode && (out - 1) * s - p >= in) --out;
  return out;
}

/// One 2-d pooling: input sizes ([N, C, H, W] or [C, H, W]) and parameters.
struct Pool {
  Sizes in;
  int64_t kH, kW, sH, sW, pH, pW, dH = 1, dW = 1;
  bool ceil_mode = false;
};

struct Dims {
  int64_t planes, H, W, oH, oW;
};

Dims dims_of(const Pool& p) {
  const int64_t nd = static_cast<int64_t>(p.in.size());
  Dims d{};
  d.H = p.in[nd - 2];
  d.W = p.in[nd - 1];
  d.planes = numel_of(p.in) / (d.H * d.W);
  d.oH = windows(d.H, p.kH, p.sH, p.pH, p.dH, p.ceil_mode);
  d.oW = windows(d.W, p.kW, p.sW, p.pW, p.dW, p.ceil_mode);
  return d;
}

Sizes out_sizes(const Sizes& in, int64_t oH, int64_t oW) {
  Sizes s(in.begin(), in.end() - 2);
  s.push_back(oH);
  s.push_back(oW);
  return s;
}

/// Max pooling oracle: the largest element of each dilated window (positions inside the
/// input), scanned row-major from minus infinity at the first position: a larger element
/// or a NaN takes over, so ties keep the first and the last NaN wins. idx gets h * W + w.
void ref_max_pool(const Pool& p, const Values& x, Values* out, Values* idx) {
  const Dims d = dims_of(p);
  out->clear();
  idx->clear();
  for (int64_t pl = 0; pl < d.planes; ++pl)
    for (int64_t oh = 0; oh < d.oH; ++oh)
      for (int64_t ow = 0; ow < d.oW; ++ow) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t where = -1;
        for (int64_t i = 0; i < p.kH; ++i)
          for (int64_t j = 0; j < p.kW; ++j) {
            const int64_t h = oh * p.sH - p.pH + i * p.dH, w = ow * p.sW - p.pW + j * p.dW;
            if (h < 0 || h >= d.H || w < 0 || w >= d.W) continue;
            const double v = x[(pl * d.H + h) * d.W + w];
            if (where < 0) where = h * d.W + w;
            if (v > best || std::isnan(v)) {
              best = v;
              where = h * d.W + w;
            }
          }
        out->push_back(best);
        idx->push_back(static_cast<double>(where));
      }
}

Tensor make(const Sizes& s, DType t, bool strided, uint64_t seed) {
  return make_tensor(random_values(numel_of(s), seed), s, t, strided);
}

std::vector<Pool> max_cases() {
  return {
      {{2, 3, 8, 7}, 2, 2, 2, 2, 0, 0},
      {{2, 3, 8, 7}, 3, 3, 2, 2, 1, 1},
      {{1, 2, 9, 9}, 3, 2, 2, 3, 1, 1, 2, 1},
      {{1, 2, 7, 6}, 3, 3, 1, 1, 1, 1, 2, 2},
      {{1, 2, 5, 5}, 2, 2, 2, 2, 1, 1, 1, 1, true},  // ceil rule drops the last window
      {{2, 1, 6, 7}, 3, 2, 2, 2, 1, 0, 1, 1, true},
      {{3, 5, 4}, 2, 2, 1, 1, 0, 0},  // unbatched
      {{3, 6, 6}, 3, 3, 3, 3, 1, 1, 1, 1, true},
      {{0, 2, 5, 5}, 2, 2, 2, 2, 0, 0},  // empty batch
  };
}

std::string name_of(const Pool& p) {
  return str_cat("input ", sizes_str(p.in), " kernel ", p.kH, "x", p.kW, " stride ", p.sH, "x",
                 p.sW, " padding ", p.pH, "x", p.pW, " dilation ", p.dH, "x", p.dW,
                 p.ceil_mode ? " ceil" : "");
}

std::tuple<Tensor, Tensor> run_max(const Pool& p, const Tensor& x) {
  return max_pool2d_with_indices(x, {p.kH, p.kW}, {p.sH, p.sW}, {p.pH, p.pW}, {p.dH, p.dW},
                                 p.ceil_mode);
}

TEST_F(PoolingTest, OutputSizeRule) {
  // Known PyTorch shapes: with ceil_mode a window may run past the end, but none may start
  // beyond the input (or its left padding).
  EXPECT_EQ(windows(5, 2, 2, 0, 1, true), 3);
  EXPECT_EQ(windows(5, 2, 2, 1, 1, true), 3);
  EXPECT_EQ(windows(5, 2, 2, 1, 1, false), 3);
  EXPECT_EQ(windows(6, 3, 2, 1, 1, true), 4);
  EXPECT_EQ(windows(6, 3, 2, 0, 1, true), 3);
  const Tensor x = make({1, 1, 5, 6}, DType::Float32, false, 1);
  EXPECT_EQ(sizes_str(max_pool2d(x, 2, 2, 1, 1, true).sizes()), "[1, 1, 3, 4]");
  EXPECT_EQ(sizes_str(avg_pool2d(x, 2, 2, 1, true).sizes()), "[1, 1, 3, 4]");
  EXPECT_EQ(sizes_str(max_pool2d(x, 2).sizes()), "[1, 1, 2, 3]");
  EXPECT_EQ(sizes_str(max_pool2d(x, {3, 2}, {}, 0, 1, true).sizes()), "[1, 1, 2, 3]");
}

TEST_F(PoolingTest, MaxPool2dMatchesOracle) {
  for (DType t : {DType::Float64, DType::Float32, DType::Int64, DType::Float16, DType::BFloat16}) {
    uint64_t seed = 10;
    for (const Pool& p : max_cases()) {
      for (bool strided : {false, true}) {
        SCOPED_TRACE(name_of(p) + " " + std::string(dtype_name(t)) + (strided ? " strided" : ""));
        Tensor x = make(p.in, t, strided, seed++);
        if (t == DType::Int64)
          x = make_tensor(random_values(numel_of(p.in), seed, -50, 50), p.in, t, strided);
        Values want, widx;
        ref_max_pool(p, to_doubles(x), &want, &widx);
        const Dims d = dims_of(p);
        const Sizes os = out_sizes(p.in, d.oH, d.oW);
        const auto [out, idx] = run_max(p, x);
        EXPECT_EQ(out.dtype(), t);
        EXPECT_EQ(idx.dtype(), DType::Int64);
        expect_close(out, os, want, 0, 0);
        expect_close(idx, os, widx, 0, 0);
        expect_close(
            max_pool2d(x, {p.kH, p.kW}, {p.sH, p.sW}, {p.pH, p.pW}, {p.dH, p.dW}, p.ceil_mode), os,
            want, 0, 0);
      }
    }
  }
}

TEST_F(PoolingTest, MaxPoolPropagatesNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = make_tensor({1, nan, 3, 4, 5, 6, nan, 8, 9}, {1, 3, 3}, DType::Float32);
  const auto [out, idx] = max_pool2d_with_indices(x, 2, 1);
  // A NaN takes over a window; a later larger number does not replace it.
  expect_close(out, {1, 2, 2}, {nan, nan, nan, 9}, 0, 0);
  expect_close(idx, {1, 2, 2}, {1, 1, 6, 8}, 0, 0);
  const auto [o2, i2] = max_pool2d_with_indices(make_tensor({nan, 1, nan, 2}, {1, 2, 2}), 2);
  expect_close(i2, {1, 1, 1}, {2}, 0, 0);  // the last NaN wins
}

TEST_F(PoolingTest, MaxPool2dBackwardMatchesOracle) {
  for (DType t : {DType::Float64, DType::Float32}) {
    uint64_t seed = 50;
    for (const Pool& p : max_cases()) {
      SCOPED_TRACE(name_of(p) + " " + std::string(dtype_name(t)));
      const Tensor x = make(p.in, t, false, seed++);
      const auto [out, idx] = run_max(p, x);
      const Tensor go = make(out_sizes(p.in, out.size(-2), out.size(-1)), t, seed % 2 == 0, seed);
      const Dims d = dims_of(p);
      Values want(x.numel(), 0.0);
      const Values g = to_doubles(go), ix = to_doubles(idx);
      for (size_t i = 0; i < g.size(); ++i) {
        const int64_t pl = static_cast<int64_t>(i) / (d.oH * d.oW);
        want[pl * d.H * d.W + static_cast<int64_t>(ix[i])] += g[i];
      }
      const Tensor gi = max_pool2d_with_indices_backward(
          go, x, {p.kH, p.kW}, {p.sH, p.sW}, {p.pH, p.pW}, {p.dH, p.dW}, p.ceil_mode, idx);
      expect_close(gi, p.in, want, 1e-6, 1e-6);
      expect_close(max_pool2d_backward(go, x, {p.kH, p.kW}, {p.sH, p.sW}, {p.pH, p.pW},
                                       {p.dH, p.dW}, p.ceil_mode),
                   p.in, want, 1e-6, 1e-6);
    }
  }
}

// The 2x2 stride-2 backward (its own loop) sends each gradient where the indices path does:
// ties go to the first maximum, a later NaN wins, -inf windows to their first element, and
// the row and column no window covers get zeros.
TEST_F(PoolingTest, MaxPool2dBackward2x2FollowsTheWindowRule) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> pool = {1, 1, 2, 2, nan, -inf, -inf, 0, -0.0, 3, nan, 3};
  for (DType t : {DType::Float32, DType::Float64}) {
    Values v(2 * 3 * 9 * 7);
    for (size_t i = 0; i < v.size(); ++i) v[i] = pool[(i * 7 + i / 5) % pool.size()];
    const Tensor x = make_tensor(v, {2, 3, 9, 7}, t);
    const auto [out, idx] = max_pool2d_with_indices(x, {2, 2}, {2, 2});
    const Tensor go = make(out_sizes({2, 3, 9, 7}, out.size(-2), out.size(-1)), t, false, 7);
    const Tensor want = max_pool2d_with_indices_backward(go, x, {2, 2}, {2, 2}, {0, 0}, {1, 1},
                                                         false, idx);
    const Tensor got = max_pool2d_backward(go, x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
    EXPECT_EQ(to_doubles(got), to_doubles(want)) << dtype_name(t);
  }
}

TEST_F(PoolingTest, MaxPool1d) {
  // 1-d is 2-d with a unit height; indices count along L.
  for (bool batched : {true, false}) {
    const Sizes in = batched ? Sizes{2, 3, 11} : Sizes{3, 11};
    const Tensor x = make(in, DType::Float64, true, 7);
    Sizes in2 = in;
    in2.insert(in2.end() - 1, 1);
    const Pool p{in2, 1, 3, 1, 2, 0, 1, 1, 2, true};
    Values want, widx;
    ref_max_pool(p, to_doubles(x), &want, &widx);
    Sizes os = in;
    os.back() = dims_of(p).oW;
    expect_close(max_pool1d(x, 3, 2, 1, 2, true), os, want, 0, 0);
    const auto [out, idx] = max_pool1d_with_indices(x, 3, 2, 1, 2, true);
    expect_close(out, os, want, 0, 0);
    expect_close(idx, os, widx, 0, 0);
  }
}

// ---- average pooling ----

struct Avg {
  Pool p;
  bool count_include_pad = true;
  std::optional<int64_t> divisor = std::nullopt;
};

/// Average pooling oracle: each window (in padded coordinates, clipped to the padded input
/// for its size) sums the input elements it covers and divides by divisor_override, or by
/// its size counting padding, or by the number of input elements.
Values ref_avg_pool(const Avg& a, const Values& x, bool integer = false) {
  const Pool& p = a.p;
  const Dims d = dims_of(p);
  Values out;
  for (int64_t pl = 0; pl < d.planes; ++pl)
    for (int64_t oh = 0; oh < d.oH; ++oh)
      for (int64_t ow = 0; ow < d.oW; ++ow) {
        double sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < p.kH; ++i)
          for (int64_t j = 0; j < p.kW; ++j) {
            const int64_t h = oh * p.sH - p.pH + i, w = ow * p.sW - p.pW + j;
            if (h >= d.H + p.pH || w >= d.W + p.pW) continue;  // past the right padding
            ++padded;
            if (h < 0 || h >= d.H || w < 0 || w >= d.W) continue;
            ++inside;
            sum += x[(pl * d.H + h) * d.W + w];
          }
        const int64_t div = a.divisor ? *a.divisor : (a.count_include_pad ? padded : inside);
        if (inside == 0) {
          out.push_back(0);
        } else if (integer) {
          out.push_back(static_cast<double>(static_cast<int64_t>(sum) / div));
        } else {
          out.push_back(sum / static_cast<double>(div));
        }
      }
  return out;
}

Values ref_avg_backward(const Avg& a, const Values& go, int64_t numel) {
  const Pool& p = a.p;
  const Dims d = dims_of(p);
  Values gi(static_cast<size_t>(numel), 0.0);
  size_t o = 0;
  for (int64_t pl = 0; pl < d.planes; ++pl)
    for (int64_t oh = 0; oh < d.oH; ++oh)
      for (int64_t ow = 0; ow < d.oW; ++ow, ++o) {
        int64_t inside = 0, padded = 0;
        std::vector<int64_t> cells;
        for (int64_t i = 0; i < p.kH; ++i)
          for (int64_t j = 0; j < p.kW; ++j) {
            const int64_t h = oh * p.sH - p.pH + i, w = ow * p.sW - p.pW + j;
            if (h >= d.H + p.pH || w >= d.W + p.pW) continue;
            ++padded;
            if (h < 0 || h >= d.H || w < 0 || w >= d.W) continue;
            ++inside;
            cells.push_back((pl * d.H + h) * d.W + w);
          }
        const int64_t div = a.divisor ? *a.divisor : (a.count_include_pad ? padded : inside);
        for (int64_t c : cells) gi[c] += go[o] / static_cast<double>(div);
      }
  return gi;
}

std::vector<Avg> avg_cases() {
  return {
      {{{2, 3, 8, 7}, 2, 2, 2, 2, 0, 0}},
      {{{2, 3, 8, 7}, 3, 3, 2, 2, 1, 1}},
      {{{2, 3, 8, 7}, 3, 3, 2, 2, 1, 1}, false},
      {{{1, 2, 7, 7}, 3, 2, 2, 3, 1, 1, 1, 1, true}},
      {{{1, 2, 7, 7}, 3, 2, 2, 3, 1, 1, 1, 1, true}, false},
      {{{1, 2, 5, 5}, 2, 2, 2, 2, 1, 1, 1, 1, true}, true, 3},
      {{{3, 5, 6}, 3, 3, 1, 1, 1, 1}, false, 7},
      {{{2, 4, 4}, 4, 4, 3, 3, 2, 2, 1, 1, true}},
  };
}

TEST_F(PoolingTest, AvgPool2dMatchesOracle) {
  for (DType t : {DType::Float64, DType::Float32, DType::Float16}) {
    uint64_t seed = 70;
    for (const Avg& a : avg_cases()) {
      for (bool strided : {false, true}) {
        SCOPED_TRACE(name_of(a.p) + (a.count_include_pad ? " include_pad" : " exclude_pad") +
                     (a.divisor ? str_cat(" divisor ", *a.divisor) : "") + " " +
                     std::string(dtype_name(t)));
        const Pool& p = a.p;
        const Tensor x = make(p.in, t, strided, seed++);
        const Dims d = dims_of(p);
        const double tol = t == DType::Float16 ? 1e-2 : 1e-6;
        expect_close(avg_pool2d(x, {p.kH, p.kW}, {p.sH, p.sW}, {p.pH, p.pW}, p.ceil_mode,
                                a.count_include_pad, a.divisor),
                     out_sizes(p.in, d.oH, d.oW), ref_avg_pool(a, to_doubles(x)), tol, tol);
      }
    }
  }
}

TEST_F(PoolingTest, AvgPool2dLongDividesAsIntegers) {
  const Avg a{{{1, 2, 5, 5}, 2, 2, 2, 2, 1, 1, 1, 1, true}, false};
  const Tensor x = make_tensor(random_values(50, 3, 0, 100), {1, 2, 5, 5}, DType::Int64);
  const Tensor y = avg_pool2d(x, 2, 2, 1, true, false);
  EXPECT_EQ(y.dtype(), DType::Int64);
  expect_close(y, {1, 2, 3, 3}, ref_avg_pool(a, to_doubles(x), true), 0, 0);
}

TEST_F(PoolingTest, AvgPool2dBackwardMatchesOracleAndAdjoint) {
  uint64_t seed = 90;
  for (const Avg& a : avg_cases()) {
    SCOPED_TRACE(name_of(a.p));
    const Pool& p = a.p;
    const Dims d = dims_of(p);
    const Tensor x = make(p.in, DType::Float64, false, seed++);
    const Sizes os = out_sizes(p.in, d.oH, d.oW);
    const Tensor go = make(os, DType::Float64, true, seed++);
    const Tensor gi = avg_pool2d_backward(go, x, {p.kH, p.kW}, {p.sH, p.sW}, {p.pH, p.pW},
                                          p.ceil_mode, a.count_include_pad, a.divisor);
    const Values want = ref_avg_backward(a, to_doubles(go), x.numel());
    expect_close(gi, p.in, want, 1e-12, 1e-12);
    // <avg_pool(x), go> == <x, avg_pool_backward(go)>.
    const Values y = to_doubles(avg_pool2d(x, {p.kH, p.kW}, {p.sH, p.sW}, {p.pH, p.pW}, p.ceil_mode,
                                           a.count_include_pad, a.divisor));
    const Values g = to_doubles(go), xs = to_doubles(x), gis = to_doubles(gi);
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < y.size(); ++i) lhs += y[i] * g[i];
    for (size_t i = 0; i < xs.size(); ++i) rhs += xs[i] * gis[i];
    EXPECT_NEAR(lhs, rhs, 1e-9);
  }
  // float32 and bfloat16 grads.
  const Avg a = avg_cases()[1];
  for (DType t : {DType::Float32, DType::BFloat16}) {
    const Tensor x = make(a.p.in, t, false, 5);
    const Dims d = dims_of(a.p);
    const Tensor go = make(out_sizes(a.p.in, d.oH, d.oW), t, false, 6);
    const double tol = t == DType::Float32 ? 1e-5 : 2e-2;
    expect_close(avg_pool2d_backward(go, x, 3, 2, 1, false, true, std::nullopt), a.p.in,
                 ref_avg_backward(a, to_doubles(go), x.numel()), tol, tol);
  }
}

TEST_F(PoolingTest, AvgPool1d) {
  for (bool batched : {true, false}) {
    const Sizes in = batched ? Sizes{2, 3, 10} : Sizes{3, 10};
    Sizes in2 = in;
    in2.insert(in2.end() - 1, 1);
    for (bool include : {true, false}) {
      const Avg a{{in2, 1, 3, 1, 2, 0, 1, 1, 1, true}, include};
      const Tensor x = make(in, DType::Float64, true, 9);
      Sizes os = in;
      os.back() = dims_of(a.p).oW;
      expect_close(avg_pool1d(x, 3, 2, 1, true, include), os, ref_avg_pool(a, to_doubles(x)), 1e-12,
                   1e-12);
    }
  }
}

// ---- adaptive pooling ----

/// Bin i of n over L inputs: [floor(i*L/n), ceil((i+1)*L/n)).
std::pair<int64_t, int64_t> bin(int64_t i, int64_t n, int64_t L) {
  return {static_cast<int64_t>(std::floor(double(i * L) / double(n))),
          static_cast<int64_t>(std::ceil(double((i + 1) * L) / double(n)))};
}

struct Adaptive {
  Sizes in;
  int64_t oH, oW;
};

void ref_adaptive(const Adaptive& a, const Values& x, Values* avg, Values* mx, Values* idx) {
  const int64_t nd = static_cast<int64_t>(a.in.size());
  const int64_t H = a.in[nd - 2], W = a.in[nd - 1], planes = numel_of(a.in) / (H * W);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < a.oH; ++oh)
      for (int64_t ow = 0; ow < a.oW; ++ow) {
        const auto [h0, h1] = bin(oh, a.oH, H);
        const auto [w0, w1] = bin(ow, a.oW, W);
        double sum = 0, best = -std::numeric_limits<double>::infinity();
        int64_t where = -1;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const double v = x[(pl * H + h) * W + w];
            sum += v;
            if (where < 0 || v > best) {
              best = v;
              where = h * W + w;
            }
          }
        avg->push_back(sum / double((h1 - h0) * (w1 - w0)));
        mx->push_back(best);
        idx->push_back(double(where));
      }
}

TEST_F(PoolingTest, AdaptivePooling2dMatchesOracle) {
  for (const Adaptive& a :
       {Adaptive{{2, 3, 7, 9}, 3, 4}, Adaptive{{2, 3, 5, 5}, 7, 6}, Adaptive{{3, 6, 6}, 1, 1},
        Adaptive{{1, 2, 10, 3}, 4, 3}, Adaptive{{1, 2, 4, 4}, 4, 4}}) {
    for (DType t : {DType::Float64, DType::Float32}) {
      SCOPED_TRACE(
          str_cat("input ", sizes_str(a.in), " output ", a.oH, "x", a.oW, " ", dtype_name(t)));
      const Tensor x = make(a.in, t, true, 17);
      Values avg, mx, idx;
      ref_adaptive(a, to_doubles(x), &avg, &mx, &idx);
      const Sizes os = out_sizes(a.in, a.oH, a.oW);
      expect_close(adaptive_avg_pool2d(x, {a.oH, a.oW}), os, avg, 1e-6, 1e-6);
      expect_close(_adaptive_avg_pool2d(x, {a.oH, a.oW}), os, avg, 1e-6, 1e-6);
      const auto [out, ix] = adaptive_max_pool2d(x, {a.oH, a.oW});
      expect_close(out, os, mx, 0, 0);
      expect_close(ix, os, idx, 0, 0);

      // Backward: each output's gradient spread over its bin (average) or added at its
      // maximum; the average one is also checked as the adjoint.
      const Tensor go = make(os, t, false, 18);
      const Values g = to_doubles(go), xs = to_doubles(x);
      const int64_t nd = static_cast<int64_t>(a.in.size());
      const int64_t H = a.in[nd - 2], W = a.in[nd - 1];
      Values want_avg(xs.size(), 0.0), want_max(xs.size(), 0.0);
      for (size_t o = 0; o < g.size(); ++o) {
        const int64_t pl = static_cast<int64_t>(o) / (a.oH * a.oW);
        const int64_t oh = static_cast<int64_t>(o) / a.oW % a.oH,
                      ow = static_cast<int64_t>(o) % a.oW;
        const auto [h0, h1] = bin(oh, a.oH, H);
        const auto [w0, w1] = bin(ow, a.oW, W);
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w)
            want_avg[(pl * H + h) * W + w] += g[o] / double((h1 - h0) * (w1 - w0));
        want_max[pl * H * W + static_cast<int64_t>(idx[o])] += g[o];
      }
      expect_close(_adaptive_avg_pool2d_backward(go, x), a.in, want_avg, 1e-5, 1e-6);
      expect_close(adaptive_max_pool2d_backward(go, x, ix), a.in, want_max, 1e-6, 1e-6);
    }
  }
}

TEST_F(PoolingTest, AdaptivePooling1d) {
  for (bool batched : {true, false}) {
    const Sizes in = batched ? Sizes{2, 3, 10} : Sizes{3, 10};
    Sizes in2 = in;
    in2.insert(in2.end() - 1, 1);
    const Adaptive a{in2, 1, 4};
    const Tensor x = make(in, DType::Float64, true, 27);
    Values avg, mx, idx;
    ref_adaptive(a, to_doubles(x), &avg, &mx, &idx);
    Sizes os = in;
    os.back() = 4;
    expect_close(adaptive_avg_pool1d(x, 4), os, avg, 1e-12, 1e-12);
    const auto [out, ix] = adaptive_max_pool1d(x, 4);
    expect_close(out, os, mx, 0, 0);
    expect_close(ix, os, idx, 0, 0);
  }
}

// ---- errors ----

// A kernel size that is not positive is named before the padding check, which misreported it
// ("pad should be at most half of effective kernel size, but got pad=0, kernel_size=-2").
TEST_F(PoolingTest, NonPositiveKernelSizeIsNamed) {
  const Tensor x = make_tensor(Values(16, 1.0), {1, 1, 4, 4});
  EXPECT_EQ(message_of([&] {
              avg_pool1d(make_tensor(Values(4, 1.0), {1, 1, 4}), {-2});
            }),
            "avg_pool1d: kernel_size must be greater than zero, but got -2");
  EXPECT_EQ(message_of([&] { max_pool2d(x, 0); }),
            "max_pool2d: kernel_size must be greater than zero, but got 0");
  EXPECT_EQ(message_of([&] {
              avg_pool2d(x, {2, -1});
            }),
            "avg_pool2d: kernel_size must be greater than zero, but got -1");
}

// Note [Result sizes that overflow]: the output length is computed without wrapping, so a
// stride near INT64_MAX with ceil_mode gives PyTorch's one window rather than a wrapped size.
TEST_F(PoolingTest, HugeStridesAndDilationsDoNotWrap) {
  const Tensor x =
      make_tensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4});
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  expect_close(avg_pool2d(x, 2, kMax, 0, /*ceil_mode=*/true), {1, 1, 1, 1}, {3.5});
  expect_close(std::get<0>(max_pool2d_with_indices(x, 2, kMax, 0, 1, true)), {1, 1, 1, 1}, {6});
  // A dilation whose kernel extent passes int64 is a window larger than the input.
  EXPECT_TRUE(contains(message_of([&] { max_pool2d(x, 3, 1, 0, int64_t{1} << 62); }),
                       "Output size is too small"));
}

TEST_F(PoolingTest, ErrorsUsePyTorchWording) {
  const auto t = [](Sizes s, DType d = DType::Float32) {
    return make_tensor(Values(static_cast<size_t>(numel_of(s)), 1.0), s, d);
  };
  auto msg = [](auto&& f) { return message_of(f); };
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d(t({1, 1, 5, 5}), 3, 1, 2);
                       }),
                       "pad should be at most half of effective kernel size, but got pad=2, "
                       "kernel_size=3 and dilation=1"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d(t({1, 1, 9, 9}), 3, 1, 2, 2);
                       }),
                       "pad should be smaller than or equal to half of kernel size, but got padW = "
                       "2, padH = 2, kW = 3, kH = 3"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d(t({1, 1, 2, 2}), 3);
                       }),
                       "Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is "
                       "too small"));
  EXPECT_TRUE(
      contains(msg([&] {
                 max_pool2d(t({1, 1, 5, 5}), {2, 2, 2});
               }),
               "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d(t({1, 1, 5, 5}), 2, {1, 1, 1});
                       }),
                       "max_pool2d: stride must either be omitted, a single int, or a tuple of two "
                       "ints"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d(t({5, 5}), 2);
                       }),
                       "non-empty 3D or 4D (batch mode) tensor expected for input"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d(t({1, 0, 5, 5}), 2);
                       }),
                       "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
                       "input, but got:[1, 0, 5, 5]"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d(t({1, 1, 5, 5}), 2, 0);
                       }),
                       "stride should not be zero"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d(t({1, 1, 5, 5}), 2, 2, 0, 0);
                       }),
                       "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"));
  EXPECT_TRUE(contains(message_of<IndexError>([&] {
                         avg_pool2d(t({5, 5}), 2);
                       }),
                       "Dimension out of range (expected to be in range of [-2, 1], but got -3)"));
  EXPECT_TRUE(contains(msg([&] {
                         avg_pool2d(t({1, 1, 5, 5}), 2, {}, 0, false, true, 0);
                       }),
                       "divisor must be not zero"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         avg_pool2d(t({1, 1, 4, 4}, DType::Int32), 2);
                       }),
                       "\"avg_pool2d\" not implemented for 'Int'"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         max_pool2d(t({1, 1, 4, 4}, DType::Bool), 2);
                       }),
                       "\"max_pool2d\" not implemented for 'Bool'"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         adaptive_avg_pool2d(t({1, 1, 4, 4}, DType::Int64), {2, 2});
                       }),
                       "\"adaptive_avg_pool2d\" not implemented for 'Long'"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool1d(t({1, 1, 5}), 3, 1, 2);
                       }),
                       "max_pool1d() padding should be at most half of kernel size, but got "
                       "padding=2 and kernel_size=3"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool1d(t({1, 1, 1, 5}), 3);
                       }),
                       "max_pool1d() Expected 2D or 3D input tensor, but got [1, 1, 1, 5]"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool1d_with_indices(t({1, 1, 5}), {2, 2});
                       }),
                       "max_pool1d() argument 'kernel_size' should contain one int (got 2)"));
  EXPECT_TRUE(contains(msg([&] {
                         avg_pool1d(t({1, 1, 1, 5}), 2);
                       }),
                       "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 "
                       "'self' (while checking arguments for avg_pool1d)"));
  EXPECT_TRUE(contains(msg([&] {
                         adaptive_avg_pool2d(t({4}), {2, 2});
                       }),
                       "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [4]"));
  EXPECT_TRUE(
      contains(msg([&] {
                 adaptive_avg_pool2d(t({1, 2, 0, 4}), {2, 2});
               }),
               "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
               "dimensions, but input has sizes [1, 2, 0, 4] with dimension 2 being empty"));
  EXPECT_TRUE(contains(msg([&] {
                         adaptive_avg_pool2d(t({1, 2, 4, 4}), {2, -1});
                       }),
                       "elements of output_size must be greater than or equal to 0 but received "
                       "{2, -1}"));
  EXPECT_TRUE(contains(msg([&] {
                         adaptive_max_pool2d(t({2, 4}), {2, 2});
                       }),
                       "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [2, 4]"));
  EXPECT_TRUE(contains(msg([&] {
                         max_pool2d_with_indices_backward(t({1, 2, 2, 3}), t({1, 2, 6, 6}), 2, 2, 0,
                                                          1, false, t({1, 2, 3, 3}, DType::Int64));
                       }),
                       "Expected a tensor of dimension 4 and tensor.size[2] == 3 but got: "
                       "dimension 4 and tensor.size[2] = 2"));
  EXPECT_TRUE(contains(
      msg([&] {
        avg_pool2d_backward(t({1, 3, 3, 3}), t({1, 2, 6, 6}), 2, 2, 0, false, true, std::nullopt);
      }),
      "Expected a tensor of dimension 4 and tensor.size[1] == 2 but got: "
      "dimension 4 and tensor.size[1] = 3"));
  EXPECT_TRUE(contains(message_of<IndexError>([&] {
                         max_pool2d_with_indices_backward(
                             t({1, 1, 1, 1}), t({1, 1, 2, 2}), 2, 2, 0, 1, false,
                             make_tensor({7}, {1, 1, 1, 1}, DType::Int64));
                       }),
                       "is outside its input plane"));
}

}  // namespace
}  // namespace loom::testing
