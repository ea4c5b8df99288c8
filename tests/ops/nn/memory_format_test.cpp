// Tests for loom/ops/nn/memory_format.h and the channels-last paths of the reference nn
// kernels (ops/nn/cpu/convolution.cpp, pooling.cpp, pooling_nhwc.h): PyTorch's
// suggest-memory-format rule, channels-last results where PyTorch gives them, the same values as
// the NCHW path, and gradients (gradcheck in float64 on channels-last inputs).
#include "loom/ops/nn/memory_format.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "gradcheck_util.h"
#include "loom/ops/nn.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

using Sizes = std::vector<int64_t>;

class MemoryFormatTest : public ::testing::Test {
 protected:
  void SetUp() override { load_ops_nn(); }
};

Tensor random(const Sizes& sizes, uint64_t seed, DType dtype = DType::Float32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return make_tensor(random_values(static_cast<size_t>(n), seed), sizes, dtype);
}

Tensor cl(const Tensor& t) { return to_memory_format(t, MemoryFormat::ChannelsLast); }

/// Expects equal sizes and values within tol.
void expect_close(const Tensor& got, const Tensor& want, double tol, const char* what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  const std::vector<double> g = to_doubles(got), w = to_doubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], tol) << what << ": element " << i;
  }
}

TEST_F(MemoryFormatTest, SuggestsChannelsLastFollowsPyTorchsStrideRule) {
  const Tensor x = random({2, 3, 4, 5}, 1);
  EXPECT_FALSE(suggests_channels_last(x));
  const Tensor y = cl(x);
  EXPECT_TRUE(suggests_channels_last(y));
  EXPECT_EQ(y.strides().vec(), (Sizes{60, 1, 15, 3}));
  EXPECT_TRUE(is_channels_last_dense(y));
  EXPECT_EQ(to_doubles(y), to_doubles(x));
  // One channel: both layouts are contiguous; the strides decide.
  const Tensor one = random({2, 1, 4, 5}, 2);
  EXPECT_TRUE(one.is_contiguous());
  EXPECT_FALSE(suggests_channels_last(one));
  const Tensor one_cl = cl(one);
  EXPECT_EQ(one_cl.strides().vec(), (Sizes{20, 1, 5, 1}));
  EXPECT_TRUE(suggests_channels_last(one_cl));
  // [N, C, 1, 1]: contiguous stays contiguous.
  EXPECT_FALSE(suggests_channels_last(random({2, 3, 1, 1}, 3)));
  EXPECT_TRUE(suggests_channels_last(cl(random({2, 3, 1, 1}, 3))));
  // Other ranks never suggest channels-last; a 3-d tensor cannot be made so.
  EXPECT_FALSE(suggests_channels_last(random({3, 4, 5}, 4)));
  EXPECT_THROW(cl(random({3, 4, 5}, 4)), Error);
  // Already channels-last: no copy.
  EXPECT_TRUE(cl(y).is_same(y));
}

TEST_F(MemoryFormatTest, ConvolutionFollowsInputOrWeight) {
  const Tensor x = random({2, 3, 7, 6}, 5), w = random({4, 3, 3, 3}, 6), b = random({4}, 7);
  const Tensor want = conv2d(x, w, b, 1, 1);
  EXPECT_FALSE(suggests_channels_last(want));
  for (int mode = 1; mode < 4; ++mode) {
    const Tensor xi = mode & 1 ? cl(x) : x, wi = mode & 2 ? cl(w) : w;
    const Tensor got = conv2d(xi, wi, b, 1, 1);
    EXPECT_TRUE(suggests_channels_last(got)) << "mode " << mode;
    expect_close(got, want, 1e-5, "conv2d");
    const Tensor go = random(want.sizes().vec(), 8);
    const auto [gi, gw, gb] = convolution_backward(go, xi, wi, Sizes{4}, {1}, {1}, {1}, false,
                                                   {0}, 1, {true, true, true});
    const auto [gi0, gw0, gb0] = convolution_backward(go, x, w, Sizes{4}, {1}, {1}, {1}, false,
                                                      {0}, 1, {true, true, true});
    EXPECT_TRUE(suggests_channels_last(gi)) << "mode " << mode;
    EXPECT_EQ(suggests_channels_last(gw), (mode & 2) != 0) << "mode " << mode;
    expect_close(gi, gi0, 1e-4, "grad_input");
    expect_close(gw, gw0, 1e-4, "grad_weight");
    expect_close(gb, gb0, 1e-4, "grad_bias");
  }
}

TEST_F(MemoryFormatTest, PoolingKeepsChannelsLastWithTheSameValues) {
  struct Case {
    Sizes sizes;
    Sizes k, s, p, d;
    bool ceil;
  };
  const std::vector<Case> cases = {
      {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {{2, 70, 7, 9}, {3, 2}, {2, 1}, {1, 1}, {1, 1}, true},  // more channels than one run
      {{1, 5, 9, 7}, {3, 3}, {2, 2}, {1, 0}, {2, 1}, false},  // dilated
  };
  for (const Case& c : cases) {
    const Tensor x = random(c.sizes, 11), xc = cl(x);
    // max pooling, with and without indices
    const auto [out, idx] = max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
    const auto [out_cl, idx_cl] = max_pool2d_with_indices(xc, c.k, c.s, c.p, c.d, c.ceil);
    EXPECT_TRUE(suggests_channels_last(out_cl));
    EXPECT_TRUE(suggests_channels_last(idx_cl));
    expect_close(out_cl, out, 0, "max_pool2d_with_indices");
    EXPECT_EQ(to_doubles(idx_cl), to_doubles(idx));
    const Tensor plain_cl = max_pool2d(xc, c.k, c.s, c.p, c.d, c.ceil);
    EXPECT_TRUE(suggests_channels_last(plain_cl));
    expect_close(plain_cl, out, 0, "max_pool2d");
    // max backward: by indices, and by recomputing the windows
    const Tensor go = random(out.sizes().vec(), 12), go_cl = cl(go);
    const Tensor gi = max_pool2d_with_indices_backward(go, x, c.k, c.s, c.p, c.d, c.ceil, idx);
    const Tensor gi_cl =
        max_pool2d_with_indices_backward(go_cl, xc, c.k, c.s, c.p, c.d, c.ceil, idx_cl);
    EXPECT_TRUE(suggests_channels_last(gi_cl));
    expect_close(gi_cl, gi, 1e-6, "max_pool2d_with_indices_backward");
    for (const Tensor& input : {x, xc}) {
      for (const Tensor& g : {go, go_cl}) {
        const Tensor r = max_pool2d_backward(g, input, c.k, c.s, c.p, c.d, c.ceil);
        EXPECT_EQ(suggests_channels_last(r), suggests_channels_last(input));
        expect_close(r, gi, 1e-6, "max_pool2d_backward");
      }
    }
    // average pooling (no dilation), both divisor rules
    for (bool include : {false, true}) {
      const Tensor a = avg_pool2d(x, c.k, c.s, c.p, c.ceil, include, std::nullopt);
      const Tensor go = random(a.sizes().vec(), 14), go_cl = cl(go);
      const Tensor a_cl = avg_pool2d(xc, c.k, c.s, c.p, c.ceil, include, std::nullopt);
      EXPECT_TRUE(suggests_channels_last(a_cl));
      expect_close(a_cl, a, 1e-6, "avg_pool2d");
      const Tensor ga = avg_pool2d_backward(go, x, c.k, c.s, c.p, c.ceil, include, std::nullopt);
      const Tensor ga_cl =
          avg_pool2d_backward(go_cl, xc, c.k, c.s, c.p, c.ceil, include, std::nullopt);
      EXPECT_TRUE(suggests_channels_last(ga_cl));
      expect_close(ga_cl, ga, 1e-6, "avg_pool2d_backward");
    }
  }
}

TEST_F(MemoryFormatTest, MaxPoolingPropagatesNaNInBothLayouts) {
  Tensor x = random({1, 3, 4, 4}, 13);
  std::vector<double> v = to_doubles(x);
  v[5] = std::numeric_limits<double>::quiet_NaN();
  x = make_tensor(v, {1, 3, 4, 4});
  const Tensor a = max_pool2d(x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
  const Tensor b = max_pool2d(cl(x), {2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
  const std::vector<double> av = to_doubles(a), bv = to_doubles(b);
  ASSERT_EQ(av.size(), bv.size());
  int nans = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    EXPECT_EQ(std::isnan(av[i]), std::isnan(bv[i])) << i;
    nans += std::isnan(bv[i]);
    if (!std::isnan(av[i])) {
      EXPECT_EQ(av[i], bv[i]) << i;
    }
  }
  EXPECT_EQ(nans, 1);
}

TEST_F(MemoryFormatTest, GradcheckOnChannelsLastInputs) {
  auto leaf = [](const Sizes& sizes, uint64_t seed) {
    Tensor t = cl(random(sizes, seed, DType::Float64));
    t.set_requires_grad(true);
    return t;
  };
  const Tensor x = leaf({2, 3, 5, 5}, 21), w = leaf({2, 3, 3, 3}, 22);
  expect_gradcheck(
      [](const autograd::variable_list& in) -> autograd::variable_list {
        return {conv2d(in[0], in[1], std::nullopt, 1, 1)};
      },
      {x, w}, "conv2d channels-last");
  expect_gradcheck(
      [](const autograd::variable_list& in) -> autograd::variable_list {
        return {max_pool2d(in[0], {2, 2}, {1, 1}, {0, 0}, {1, 1}, false)};
      },
      {x}, "max_pool2d channels-last");
  expect_gradcheck(
      [](const autograd::variable_list& in) -> autograd::variable_list {
        return {avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, true, false, std::nullopt)};
      },
      {x}, "avg_pool2d channels-last");
}

}  // namespace
}  // namespace loom::testing
