// Upsampling of ops_nn and loom::interpolate against a float64 oracle written here with
// PyTorch's source-index rules (nearest: floor(dst * scale) in float; nearest-exact:
// floor((dst + 0.5) * scale); linear: area_pixel_compute_source_index), plus values printed
// by PyTorch (scale factors passed through, recompute_scale_factor, align_corners). 1-3
// spatial dims, up and down, strided inputs, integer and 16-bit dtypes, every backward op
// against finite differences of the oracle, and PyTorch's error messages.
#include "loom/ops/nn/upsample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

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
using Sizes = std::vector<int64_t>;
using Scales = std::vector<std::optional<double>>;

class UpsampleTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_nn(); }
};

enum class Mode { Nearest, NearestExact, Linear };

struct Tap {
  int64_t index;
  double weight;
};

/// The taps of output index j along one dim, by PyTorch's rules (UpSample.h). The nearest
/// rules compute in float as PyTorch does, since the chosen index can depend on it.
std::vector<Tap> taps(Mode mode, int64_t j, int64_t in, int64_t out, bool align,
                      std::optional<double> scale) {
  const bool given = scale && *scale > 0;
  if (mode != Mode::Linear) {
    if (mode == Mode::Nearest && out == in) return {{j, 1}};
    if (mode == Mode::Nearest && out == 2 * in) return {{j / 2, 1}};
    const float s =
        given ? static_cast<float>(1.0 / *scale) : static_cast<float>(in) / static_cast<float>(out);
    const float f =
        mode == Mode::Nearest ? static_cast<float>(j) * s : static_cast<float>((j + 0.5) * s);
    return {{std::min<int64_t>(static_cast<int64_t>(std::floor(f)), in - 1), 1}};
  }
  if (out == in) return {{j, 1}};
  double real;
  if (align) {
    real = out > 1 ? static_cast<double>(in - 1) / (out - 1) * j : 0.0;
  } else {
    const double ratio = given ? 1.0 / *scale : static_cast<double>(in) / out;
    real = std::max(ratio * (j + 0.5) - 0.5, 0.0);
  }
  const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(real)), in - 1);
  const double l1 = std::clamp(real - i0, 0.0, 1.0);
  return {{i0, 1 - l1}, {i0 + (i0 < in - 1 ? 1 : 0), l1}};
}

/// The oracle: x of sizes [N, C, spatial...] resized to out spatial sizes.
Vec upsample_ref(const Vec& x, const Sizes& sizes, const Sizes& out, Mode mode, bool align,
                 const Scales& scales) {
  const size_t K = out.size();
  Sizes in(sizes.begin() + 2, sizes.end());
  int64_t in_plane = 1, out_plane = 1;
  for (size_t k = 0; k < K; ++k) {
    in_plane *= in[k];
    out_plane *= out[k];
  }
  Vec r;
  for (int64_t q = 0; q < sizes[0] * sizes[1]; ++q) {
    Sizes j(K, 0);
    for (int64_t o = 0; o < out_plane; ++o) {
      // Sum over every combination of the dims' taps.
      std::vector<std::vector<Tap>> t;
      for (size_t k = 0; k < K; ++k) {
        t.push_back(
            taps(mode, j[k], in[k], out[k], align, scales.empty() ? std::nullopt : scales[k]));
      }
      double acc = 0;
      Sizes pick(K, 0);
      while (true) {
        int64_t off = 0;
        double w = 1;
        for (size_t k = 0; k < K; ++k) {
          off = off * in[k] + t[k][pick[k]].index;
          w *= t[k][pick[k]].weight;
        }
        acc += w * x[q * in_plane + off];
        size_t k = K;
        while (k-- > 0 && ++pick[k] == static_cast<int64_t>(t[k].size())) pick[k] = 0;
        if (k == static_cast<size_t>(-1)) break;
      }
      r.push_back(acc);
      for (size_t k = K; k-- > 0;) {
        if (++j[k] < out[k]) break;
        j[k] = 0;
      }
    }
  }
  return r;
}

Sizes out_sizes(const Sizes& sizes, const Sizes& out) {
  Sizes s{sizes[0], sizes[1]};
  s.insert(s.end(), out.begin(), out.end());
  return s;
}

int64_t numel(const Sizes& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/// Calls the op for mode and rank with output size and scales.
Tensor run_op(Mode mode, const Tensor& x, const Sizes& out, bool align, const Scales& sc) {
  auto s = [&](size_t i) { return sc.empty() ? std::nullopt : sc[i]; };
  switch (out.size()) {
    case 1:
      return mode == Mode::Nearest        ? upsample_nearest1d(x, out, s(0))
             : mode == Mode::NearestExact ? upsample_nearest_exact1d(x, out, s(0))
                                          : upsample_linear1d(x, out, align, s(0));
    case 2:
      return mode == Mode::Nearest        ? upsample_nearest2d(x, out, s(0), s(1))
             : mode == Mode::NearestExact ? upsample_nearest_exact2d(x, out, s(0), s(1))
                                          : upsample_bilinear2d(x, out, align, s(0), s(1));
    default:
      return mode == Mode::Nearest        ? upsample_nearest3d(x, out, s(0), s(1), s(2))
             : mode == Mode::NearestExact ? upsample_nearest_exact3d(x, out, s(0), s(1), s(2))
                                          : upsample_trilinear3d(x, out, align, s(0), s(1), s(2));
  }
}

Tensor run_backward(Mode mode, const Tensor& g, const Sizes& out, const Sizes& in, bool align,
                    const Scales& sc) {
  auto s = [&](size_t i) { return sc.empty() ? std::nullopt : sc[i]; };
  switch (out.size()) {
    case 1:
      return mode == Mode::Nearest        ? upsample_nearest1d_backward(g, out, in, s(0))
             : mode == Mode::NearestExact ? upsample_nearest_exact1d_backward(g, out, in, s(0))
                                          : upsample_linear1d_backward(g, out, in, align, s(0));
    case 2:
      return mode == Mode::Nearest ? upsample_nearest2d_backward(g, out, in, s(0), s(1))
             : mode == Mode::NearestExact
                 ? upsample_nearest_exact2d_backward(g, out, in, s(0), s(1))
                 : upsample_bilinear2d_backward(g, out, in, align, s(0), s(1));
    default:
      return mode == Mode::Nearest ? upsample_nearest3d_backward(g, out, in, s(0), s(1), s(2))
             : mode == Mode::NearestExact
                 ? upsample_nearest_exact3d_backward(g, out, in, s(0), s(1), s(2))
                 : upsample_trilinear3d_backward(g, out, in, align, s(0), s(1), s(2));
  }
}

struct Case {
  Sizes sizes;
  Sizes out;
  Scales scales;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c{{{2, 3, 5}, {5}, {}},
                                   {{2, 3, 5}, {10}, {}},
                                   {{1, 2, 7}, {3}, {}},
                                   {{1, 2, 5}, {8}, {1.7}},
                                   {{2, 2, 3, 4}, {5, 7}, {}},
                                   {{1, 3, 3, 4}, {6, 8}, {}},
                                   {{1, 2, 6, 5}, {4, 3}, {}},
                                   {{1, 1, 3, 4}, {5, 5}, {1.7, 1.3}},
                                   {{1, 2, 4, 4}, {2, 7}, {0.6, 1.8}},
                                   {{1, 2, 2, 3, 4}, {3, 5, 4}, {}},
                                   {{1, 1, 2, 3, 2}, {4, 4, 3}, {2.1, 1.5, 1.6}}};
  return c;
}

TEST_F(UpsampleTest, NearestModesMatchOracle) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(sizes_str(c.sizes) + " -> " + sizes_str(c.out));
    const Vec x = random_values(numel(c.sizes), 1);
    for (Mode mode : {Mode::Nearest, Mode::NearestExact}) {
      for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::UInt8}) {
        const Vec xs =
            t == DType::UInt8 || t == DType::Int64 ? random_values(x.size(), 2, 0, 200) : x;
        const Tensor xt = make_tensor(xs, c.sizes, t, /*strided=*/true);
        const Vec xv = to_doubles(xt);
        const Tensor got = run_op(mode, xt, c.out, false, c.scales);
        EXPECT_EQ(got.dtype(), t);
        expect_close(got, out_sizes(c.sizes, c.out),
                     upsample_ref(xv, c.sizes, c.out, mode, false, c.scales), 0, 0);
      }
    }
  }
}

TEST_F(UpsampleTest, LinearModesMatchOracle) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(sizes_str(c.sizes) + " -> " + sizes_str(c.out));
    const Vec x = random_values(numel(c.sizes), 3);
    for (bool align : {false, true}) {
      for (DType t : {DType::Float32, DType::Float64}) {
        const Tensor xt = make_tensor(x, c.sizes, t, /*strided=*/true);
        const double tol = t == DType::Float64 ? 1e-12 : 2e-6;
        expect_close(run_op(Mode::Linear, xt, c.out, align, c.scales), out_sizes(c.sizes, c.out),
                     upsample_ref(to_doubles(xt), c.sizes, c.out, Mode::Linear, align, c.scales),
                     tol, tol);
      }
    }
  }
  // 16-bit floats compute in float.
  const Tensor h = make_tensor(random_values(24, 4), {1, 2, 3, 4}, DType::BFloat16);
  const Tensor got = upsample_bilinear2d(h, {5, 6}, false);
  EXPECT_EQ(got.dtype(), DType::BFloat16);
  expect_close(got, {1, 2, 5, 6},
               upsample_ref(to_doubles(h), {1, 2, 3, 4}, {5, 6}, Mode::Linear, false, {}), 1e-2,
               2e-2);
}

TEST_F(UpsampleTest, ValuesPrintedByPyTorch) {
  Vec a12(12);
  for (int i = 0; i < 12; ++i) a12[i] = i;
  const Tensor u = make_tensor(a12, {1, 1, 3, 4}, DType::Float32);
  // F.interpolate(u, scale_factor=(1.7, 1.3)): the scales reach the op.
  expect_close(interpolate(u, InterpolateOptions().with_scale_factor({1.7, 1.3})), {1, 1, 5, 5},
               {0, 0, 1, 2, 3, 0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 4, 4, 5, 6, 7, 8, 8, 9, 10, 11}, 0, 0);
  expect_close(
      interpolate(u, InterpolateOptions().with_scale_factor({1.7, 1.3}).with_mode("bilinear")),
      {1, 1, 5, 5},
      {0,           0.6538461447, 1.423076868, 2.192307711, 2.961538553, 1.529411912, 2.183258057,
       2.952488899, 3.721719742,  4.490950584, 3.882353306, 4.53619957,  5.305430412, 6.074661255,
       6.843892097, 6.235294342,  6.889140606, 7.658370972, 8.427602768, 9.196833611, 8,
       8.653845787, 9.42307663,   10.19230747, 10.96153831},
      1e-6, 1e-6);
  expect_close(interpolate(u, InterpolateOptions()
                                  .with_scale_factor({1.7, 1.3})
                                  .with_mode("bilinear")
                                  .with_recompute_scale_factor(true)),
               {1, 1, 5, 5}, {0,   0.7, 1.5, 2.3, 3,   1.6, 2.3, 3.1, 3.9, 4.6, 4,    4.7, 5.5,
                              6.3, 7,   6.4, 7.1, 7.9, 8.7, 9.4, 8,   8.7, 9.5, 10.3, 11},
               1e-6, 1e-6);
  expect_close(interpolate(u, {5, 7}, "bilinear", true), {1, 1, 5, 7},
               {0, 0.5, 1, 1.5, 2,   2.5, 3,   2, 2.5, 3, 3.5, 4,   4.5, 5,   4,  4.5,  5, 5.5,
                6, 6.5, 7, 6,   6.5, 7,   7.5, 8, 8.5, 9, 8,   8.5, 9,   9.5, 10, 10.5, 11},
               1e-6, 1e-6);
  expect_close(interpolate(u, {5, 7}, "nearest-exact"), {1, 1, 5, 7},
               {0, 0, 1, 2, 2, 3, 3,  0,  0,  1,  2, 2, 3, 3,  4,  4,  5, 6,
                6, 7, 7, 8, 8, 9, 10, 10, 11, 11, 8, 8, 9, 10, 10, 11, 11},
               0, 0);
  expect_close(interpolate(u, {5, 7}), {1, 1, 5, 7},
               {0, 0, 1, 1, 2, 2, 3, 0, 0, 1, 1, 2, 2, 3, 4,  4,  5, 5,
                6, 6, 7, 4, 4, 5, 5, 6, 6, 7, 8, 8, 9, 9, 10, 10, 11},
               0, 0);
  expect_close(interpolate(u, {2, 3}, "bilinear"), {1, 1, 2, 3},
               {1.166666746, 2.5, 3.833333492, 7.166666985, 8.5, 9.833333015}, 1e-6, 1e-6);
  const Tensor r4 = make_tensor({0, 1, 2, 3}, {1, 1, 4}, DType::Float32);
  expect_close(interpolate(r4, InterpolateOptions().with_scale_factor({2.5}).with_mode("linear")),
               {1, 1, 10}, {0, 0.1, 0.5, 0.9, 1.3, 1.7, 2.1, 2.5, 2.9, 3}, 1e-6, 1e-6);
  Vec a10(10);
  for (int i = 0; i < 10; ++i) a10[i] = i;
  const Tensor r10 = make_tensor(a10, {1, 1, 10}, DType::Float32);
  expect_close(interpolate(r10, InterpolateOptions().with_scale_factor({0.35})), {1, 1, 3},
               {0, 2, 5}, 0, 0);
  expect_close(
      interpolate(r10, InterpolateOptions().with_scale_factor({0.35}).with_mode("nearest-exact")),
      {1, 1, 3}, {1, 4, 7}, 0, 0);
  expect_close(upsample_nearest1d(make_tensor({0, 1, 2}, {1, 1, 3}), {7}), {1, 1, 7},
               {0, 0, 0, 1, 1, 2, 2}, 0, 0);
  expect_close(upsample_nearest1d(make_tensor({0, 1, 2, 3, 4}, {1, 1, 5}), {3}, 0.6), {1, 1, 3},
               {0, 1, 3}, 0, 0);
  Vec a35(35), a25(25);
  for (int i = 0; i < 35; ++i) a35[i] = i;
  for (int i = 0; i < 25; ++i) a25[i] = i;
  expect_close(
      upsample_bilinear2d_backward(make_tensor(a35, {1, 1, 5, 7}), {5, 7}, {1, 1, 3, 4}, false),
      {1, 1, 3, 4},
      {8.45714283, 13.44285583, 18.69999695, 22.40000343, 44.6142807, 51.68570709, 57.59999084,
       60.30000305, 70.85714722, 78.44285583, 83.69999695, 84.80001831},
      1e-5, 1e-5);
  expect_close(upsample_bilinear2d_backward(make_tensor(a25, {1, 1, 5, 5}), {5, 5}, {1, 1, 3, 4},
                                            false, 1.7, 1.3),
               {1, 1, 3, 4},
               {5.123301983, 7.140270233, 9.930992126, 11.18778229, 25.1685524, 25.68665123,
                29.28619766, 28.97624779, 38.74660492, 37.74999619, 41.35972595, 39.64367294},
               1e-5, 1e-5);
  expect_close(upsample_nearest2d_backward(make_tensor(a35, {1, 1, 5, 7}), {5, 7}, {1, 1, 3, 4}),
               {1, 1, 3, 4}, {16, 24, 32, 19, 72, 80, 88, 47, 57, 61, 65, 34}, 0, 0);
}

TEST_F(UpsampleTest, BackwardMatchesFiniteDifferences) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(sizes_str(c.sizes) + " -> " + sizes_str(c.out));
    const Vec x = random_values(numel(c.sizes), 5);
    const Sizes osz = out_sizes(c.sizes, c.out);
    const Vec g = random_values(numel(osz), 6);
    for (Mode mode : {Mode::Nearest, Mode::NearestExact, Mode::Linear}) {
      for (bool align : {false, true}) {
        if (mode != Mode::Linear && align) continue;
        Vec fd(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          auto loss = [&](double delta) {
            Vec xv = x;
            xv[i] += delta;
            const Vec y = upsample_ref(xv, c.sizes, c.out, mode, align, c.scales);
            double s = 0;
            for (size_t k = 0; k < y.size(); ++k) s += y[k] * g[k];
            return s;
          };
          fd[i] = (loss(1e-6) - loss(-1e-6)) / 2e-6;
        }
        const Tensor gt = make_tensor(g, osz, DType::Float64, /*strided=*/true);
        expect_close(run_backward(mode, gt, c.out, c.sizes, align, c.scales), c.sizes, fd, 1e-7,
                     1e-8);
      }
    }
  }
}

TEST_F(UpsampleTest, OpErrors) {
  const Tensor u = make_tensor(random_values(12, 7), {1, 1, 3, 4});
  EXPECT_EQ(message_of([&] {
              upsample_nearest2d(make_tensor(random_values(12, 7), {1, 3, 4}), {2, 2});
            }),
            "upsample_nearest2d: It is expected input_size equals to 4, but got size 3");
  EXPECT_EQ(
      message_of([&] {
        upsample_nearest2d(u, {0, 2});
      }),
      "upsample_nearest2d: Input and output sizes should be greater than 0, but got input (H: "
      "3, W: 4) output (H: 0, W: 2)");
  EXPECT_EQ(
      message_of([&] {
        upsample_linear1d(make_tensor({1, 2}, {1, 1, 2}), {0}, false);
      }),
      "upsample_linear1d: Input and output sizes should be greater than 0, but got input (W: 2) "
      "and output (W: 0)");
  EXPECT_EQ(message_of([&] { upsample_bilinear2d(u, {2}, false); }),
            "upsample_bilinear2d: It is expected output_size equals to 2, but got size 1");
  EXPECT_EQ(message_of([&] {
              upsample_nearest2d(make_tensor({}, {1, 0, 3, 4}), {2, 2});
            }),
            "upsample_nearest2d: Non-empty 4D data tensor expected but got a tensor with sizes [1, "
            "0, 3, 4]");
  EXPECT_EQ(sizes_str(upsample_nearest2d(make_tensor({}, {0, 1, 3, 4}), {2, 2}).sizes()),
            "[0, 1, 2, 2]");
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         upsample_bilinear2d(
                             make_tensor(random_values(12, 7), {1, 1, 3, 4}, DType::Int64), {2, 2},
                             false);
                       }),
                       "expected a floating point input"));
  EXPECT_EQ(message_of([&] {
              upsample_nearest2d_backward(make_tensor(random_values(25, 7), {1, 1, 5, 5}), {5, 6},
                                          {1, 1, 3, 4});
            }),
            "upsample_nearest2d_backward: Expected grad_output to have the same shape as output; "
            "output.size(3) = 6 but got grad_output.size(3) = 5");
  EXPECT_EQ(message_of([&] {
              upsample_nearest2d_backward(make_tensor(random_values(25, 7), {1, 5, 5}), {5, 6},
                                          {1, 1, 3, 4});
            }),
            "upsample_nearest2d_backward: Expected grad_output to be a tensor of dimension 4 but "
            "got: dimension 3");
  // Note [Result sizes that overflow]: the op names itself, not empty.
  constexpr int64_t k40 = int64_t{1} << 40, k31 = int64_t{1} << 31;
  EXPECT_EQ(message_of([&] {
              upsample_nearest2d(u, {k40, k40});
            }),
            "upsample_nearest2d: the result size overflows int64 (the number of elements of sizes "
            "[1, 1, 1099511627776, 1099511627776])");
  EXPECT_EQ(message_of([&] {
              upsample_bilinear2d(u, {k31, k31}, false);
            }),
            "upsample_bilinear2d: the result size overflows int64 (the number of bytes of sizes "
            "[1, 1, 2147483648, 2147483648] of float32)");
}

TEST_F(UpsampleTest, InterpolatePicksTheOp) {
  const Tensor x3 = make_tensor(random_values(2 * 3 * 5, 8), {2, 3, 5}, DType::Float64);
  const Tensor x4 = make_tensor(random_values(2 * 3 * 4, 9), {1, 2, 3, 4}, DType::Float64, true);
  const Tensor x5 = make_tensor(random_values(2 * 2 * 3 * 2, 10), {1, 2, 2, 3, 2}, DType::Float64);
  auto same = [](const Tensor& a, const Tensor& b) {
    expect_close(a, b.sizes(), to_doubles(b), 0, 0);
  };
  same(interpolate(x3, {9}), upsample_nearest1d(x3, {9}));
  same(interpolate(x3, {9}, "linear"), upsample_linear1d(x3, {9}, false));
  same(interpolate(x3, {9}, "linear", true), upsample_linear1d(x3, {9}, true));
  same(interpolate(x4, {5, 7}, "nearest-exact"), upsample_nearest_exact2d(x4, {5, 7}));
  same(interpolate(x4, {5, 7}, "bilinear"), upsample_bilinear2d(x4, {5, 7}, false));
  same(interpolate(x5, {3, 4, 5}, "trilinear"), upsample_trilinear3d(x5, {3, 4, 5}, false));
  same(interpolate(x5, {3, 4, 5}), upsample_nearest3d(x5, {3, 4, 5}));
  // One scale applies to every spatial dim, and reaches the op unless recomputed.
  same(interpolate(x4, InterpolateOptions().with_scale_factor({1.5}).with_mode("bilinear")),
       upsample_bilinear2d(x4, {4, 6}, false, 1.5, 1.5));
  same(interpolate(x4, InterpolateOptions()
                           .with_scale_factor({1.5, 2.4})
                           .with_mode("bilinear")
                           .with_recompute_scale_factor(true)),
       upsample_bilinear2d(x4, {4, 9}, false));
}

TEST_F(UpsampleTest, InterpolateErrors) {
  const Tensor x4 = make_tensor(random_values(12, 11), {1, 1, 3, 4});
  const Tensor x3 = make_tensor(random_values(6, 12), {1, 2, 3});
  EXPECT_EQ(message_of([&] {
              interpolate(x4, {5, 6}, "nearest", true);
            }),
            "align_corners option can only be set with the interpolating modes: linear | bilinear "
            "| bicubic | trilinear");
  EXPECT_EQ(message_of([&] { interpolate(x4, InterpolateOptions()); }),
            "either size or scale_factor should be defined");
  EXPECT_EQ(message_of([&] {
              interpolate(x4, InterpolateOptions().with_size({5, 6}).with_scale_factor({2, 2}));
            }),
            "only one of size or scale_factor should be defined");
  EXPECT_TRUE(contains(message_of([&] {
                         interpolate(x4, {5, 6, 7});
                       }),
                       "Input and output must have the same number of spatial dimensions, but got "
                       "input with spatial dimensions of [3, 4] and output size of [5, 6, 7]."));
  // A size is a list, one entry per spatial dim, as in PyTorch: {5} was read as {5, 5}.
  EXPECT_TRUE(contains(message_of([&] { interpolate(x4, {5}); }),
                       "Input and output must have the same number of spatial dimensions, but got "
                       "input with spatial dimensions of [3, 4] and output size of [5]."));
  EXPECT_TRUE(contains(message_of([&] {
                         interpolate(x4, InterpolateOptions().with_scale_factor({2, 2, 2}));
                       }),
                       "Input and scale_factor must have the same number of spatial dimensions, "
                       "but got input with spatial dimensions of [3, 4] and scale_factor of shape "
                       "[2, 2, 2]."));
  EXPECT_EQ(
      message_of([&] {
        interpolate(x4, InterpolateOptions().with_size({5, 6}).with_recompute_scale_factor(true));
      }),
      "recompute_scale_factor is not meaningful with an explicit size.");
  EXPECT_EQ(message_of<NotImplementedError>([&] {
              interpolate(x4, {5, 6}, "linear");
            }),
            "Got 4D input, but linear mode needs 3D input");
  EXPECT_EQ(message_of<NotImplementedError>([&] { interpolate(x3, {5}, "bilinear"); }),
            "Got 3D input, but bilinear mode needs 4D input");
  EXPECT_EQ(message_of<NotImplementedError>([&] {
              interpolate(make_tensor({1, 2}, {1, 2}), InterpolateOptions().with_scale_factor({2}));
            }),
            "Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D) for the modes: "
            "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got "
            "nearest)");
  EXPECT_TRUE(contains(message_of<NotImplementedError>([&] {
                         interpolate(x4, {5, 6}, "bicubic");
                       }),
                       "mode 'bicubic' is not implemented yet"));
  EXPECT_EQ(
      message_of([&] {
        interpolate(x4, InterpolateOptions().with_scale_factor({0.1, 0.1}));
      }),
      "upsample_nearest2d: Input and output sizes should be greater than 0, but got input (H: "
      "3, W: 4) output "
      "(H: 0, W: 0)");
}

}  // namespace
}  // namespace loom
