// Channels-last through the onednn provider (Note [Memory format] in
// loom/ops/nn/memory_format.h): convolution, pooling and batch norm give channels-last results
// and gradients where PyTorch does (input or, for convolution, weight channels-last), relu and
// its gradient keep the layout (plugins/cpu_onednn/eltwise.cpp), and every value equals the
// reference provider's.
#include <gtest/gtest.h>

#include <optional>
#include <tuple>
#include <vector>

#include "loom/ops/nn.h"
#include "loom/ops/nn/memory_format.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

using Sizes = std::vector<int64_t>;

class OnednnMemoryFormat : public ::testing::Test {
 protected:
  void SetUp() override { load_onednn(); }
};

Tensor cl(const Tensor& t) { return to_memory_format(t, MemoryFormat::ChannelsLast); }

TEST_F(OnednnMemoryFormat, ConvolutionFollowsInputOrWeight) {
  // A one-channel image (contiguous) with a channels-last weight: the first layer of a
  // converted CNN.
  for (int64_t cin : {1, 8}) {
    const Tensor x = random_tensor({4, cin, 12, 12}, 1), w = random_tensor({16, cin, 3, 3}, 2);
    const Tensor b = random_tensor({16}, 3), go = random_tensor({4, 16, 10, 10}, 4);
    const Tensor want = with_provider("reference", [&] { return conv2d(x, w, b); });
    const auto want_grads = with_provider("reference", [&] {
      return convolution_backward(go, x, w, Sizes{16}, {1}, {0}, {1}, false, {0}, 1,
                                  {true, true, true});
    });
    for (int mode = 0; mode < 4; ++mode) {
      const Tensor xi = mode & 1 ? cl(x) : x, wi = mode & 2 ? cl(w) : w;
      // cl() of a one-channel input sets its strides {H*W, 1, W, 1}: it suggests channels-last.
      const bool cl_out = mode != 0;
      const Tensor got = with_provider("onednn", [&] { return conv2d(xi, wi, b); });
      EXPECT_EQ(suggests_channels_last(got), cl_out) << "cin " << cin << " mode " << mode;
      expect_allclose(got, want, 1e-4, 1e-4, "conv2d");
      const auto [gi, gw, gb] = with_provider("onednn", [&] {
        return convolution_backward(mode ? cl(go) : go, xi, wi, Sizes{16}, {1}, {0}, {1}, false,
                                    {0}, 1, {true, true, true});
      });
      EXPECT_EQ(suggests_channels_last(gi), cl_out) << "cin " << cin << " mode " << mode;
      EXPECT_EQ(suggests_channels_last(gw), (mode & 2) != 0) << "cin " << cin << " mode " << mode;
      expect_allclose(gi, std::get<0>(want_grads), 1e-4, 1e-4, "grad_input");
      expect_allclose(gw, std::get<1>(want_grads), 1e-4, 1e-3, "grad_weight");
      expect_allclose(gb, std::get<2>(want_grads), 1e-4, 1e-3, "grad_bias");
    }
  }
}

TEST_F(OnednnMemoryFormat, PoolingAndBatchNormKeepChannelsLast) {
  const Tensor x = random_tensor({8, 32, 12, 12}, 5), xc = cl(x);
  const Tensor go = random_tensor({8, 32, 6, 6}, 6);
  const Tensor want = with_provider("reference", [&] { return max_pool2d(x, {2, 2}); });
  const Tensor want_gi =
      with_provider("reference", [&] { return max_pool2d_backward(go, x, {2, 2}, {2, 2}); });
  const Tensor got = with_provider("onednn", [&] { return max_pool2d(xc, {2, 2}); });
  EXPECT_TRUE(suggests_channels_last(got));
  expect_allclose(got, want, 0, 0, "max_pool2d");
  for (const Tensor& g : {go, cl(go)}) {
    const Tensor gi =
        with_provider("onednn", [&] { return max_pool2d_backward(g, xc, {2, 2}, {2, 2}); });
    EXPECT_TRUE(suggests_channels_last(gi));
    expect_allclose(gi, want_gi, 0, 0, "max_pool2d_backward");
  }
  const Tensor mean = zeros({32}), var = ones({32});
  const auto bn = with_provider("onednn", [&] {
    return native_batch_norm(xc, std::nullopt, std::nullopt, mean.clone(), var.clone(), true, 0.1,
                             1e-5);
  });
  const auto bn_ref = with_provider("reference", [&] {
    return native_batch_norm(x, std::nullopt, std::nullopt, mean.clone(), var.clone(), true, 0.1,
                             1e-5);
  });
  EXPECT_TRUE(suggests_channels_last(std::get<0>(bn)));
  expect_allclose(std::get<0>(bn), std::get<0>(bn_ref), 1e-4, 1e-4, "batch_norm");
}

TEST_F(OnednnMemoryFormat, ReluAndItsGradientKeepTheLayout) {
  const Tensor x = random_tensor({4, 32, 16, 16}, 7), xc = cl(x);  // 32768 elements
  const Tensor g = random_tensor({4, 32, 16, 16}, 8), gc = cl(g);
  const Tensor want = with_provider("reference", [&] { return relu(x); });
  const Tensor got = with_provider("onednn", [&] { return relu(xc); });
  EXPECT_EQ(got.strides().vec(), xc.strides().vec());
  expect_allclose(got, want, 0, 0, "relu");
  for (const Scalar t : {Scalar(0.0), Scalar(0.5)}) {
    const Tensor want_g =
        with_provider("reference", [&] { return threshold_backward(g, x, t); });
    const Tensor got_g = with_provider("onednn", [&] { return threshold_backward(gc, xc, t); });
    EXPECT_EQ(got_g.strides().vec(), xc.strides().vec());
    expect_allclose(got_g, want_g, 0, 0, "threshold_backward");
  }
  // Mixed layouts are handed on (and still right).
  const Tensor mixed = with_provider("onednn", [&] { return threshold_backward(g, xc, 0.0); });
  expect_allclose(mixed, with_provider("reference", [&] { return threshold_backward(g, x, 0.0); }),
                  0, 0, "threshold_backward mixed");
}

}  // namespace
}  // namespace loom::testing
