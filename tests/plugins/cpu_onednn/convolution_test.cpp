// Tests for plugins/cpu_onednn/convolution.cpp: the onednn provider against the reference
// provider, forward and backward, over 1-d/2-d, stride, padding, dilation, groups (depthwise
// too), transposed with output_padding, bias or none; channels-last and non-contiguous
// operands; a weight updated in place between calls (the weight cache must see it); calls
// handed on (float64, malformed: the reference's result and message exactly); padding
// 'valid'/'same'; autograd.
// float32 results agree within rtol 1e-4, atol 1e-4 (sums of at most a few hundred products
// of values in [-1, 1], in another order).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

using Sizes = std::vector<int64_t>;

constexpr double kRtol = 1e-4, kAtol = 1e-4;

class OnednnConvolutionTest : public ::testing::Test {
 protected:
  void SetUp() override { load_onednn(); }
};

Tensor random(const Sizes& sizes, uint64_t seed, DType dtype = DType::Float32,
              bool strided = false) {
  return random_tensor(sizes, seed, dtype, strided, -1, 1);
}

/// A channels-last copy of a 4-d tensor.
Tensor channels_last(const Tensor& t) {
  const Tensor nhwc = permute(t, {0, 2, 3, 1}).contiguous();
  return permute(nhwc, {0, 3, 1, 2});
}

bool is_channels_last_4d(const Tensor& t) {
  return t.dim() == 4 && t.stride(1) == 1 && t.stride(3) == t.size(1) &&
         t.stride(2) == t.size(1) * t.size(3);
}

/// One convolution of the grid.
struct Case {
  int64_t spatial = 2, stride = 1, padding = 0, dilation = 1, groups = 1, output_padding = 0;
  bool transposed = false, bias = false;
  int64_t N = 2, Cin = 4, Cout = 8, size = 7, kernel = 3;

  std::string name() const {
    return str_cat(spatial, "d", transposed ? " transposed" : "", " stride ", stride, " padding ",
                   padding, " dilation ", dilation, " groups ", groups, " output_padding ",
                   output_padding, bias ? " bias" : "");
  }
  Sizes input_sizes() const {
    Sizes s{N, Cin};
    for (int64_t i = 0; i < spatial; ++i) s.push_back(size);
    return s;
  }
  Sizes weight_sizes() const {
    Sizes s = transposed ? Sizes{Cin, Cout / groups} : Sizes{Cout, Cin / groups};
    for (int64_t i = 0; i < spatial; ++i) s.push_back(kernel);
    return s;
  }
  std::optional<Tensor> bias_tensor(uint64_t seed) const {
    if (!bias) return std::nullopt;
    return random({Cout}, seed);
  }
};

Tensor run_convolution(const Case& c, const Tensor& x, const Tensor& w,
                       const std::optional<Tensor>& b) {
  return convolution(x, w, b, {c.stride}, {c.padding}, {c.dilation}, c.transposed,
                     {c.transposed ? c.output_padding : 0}, c.groups);
}

/// The same call through the op of its own (conv1d, conv2d, conv_transpose1d/2d).
Tensor run_named(const Case& c, const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) {
  if (c.transposed) {
    return c.spatial == 1 ? conv_transpose1d(x, w, b, {c.stride}, {c.padding}, {c.output_padding},
                                             c.groups, {c.dilation})
                          : conv_transpose2d(x, w, b, {c.stride}, {c.padding}, {c.output_padding},
                                             c.groups, {c.dilation});
  }
  return c.spatial == 1 ? conv1d(x, w, b, {c.stride}, {c.padding}, {c.dilation}, c.groups)
                        : conv2d(x, w, b, {c.stride}, {c.padding}, {c.dilation}, c.groups);
}

std::tuple<Tensor, Tensor, Tensor> run_backward(const Case& c, const Tensor& go, const Tensor& x,
                                                const Tensor& w, std::vector<bool> mask) {
  const std::vector<int64_t> bias_sizes{c.Cout};
  return convolution_backward(go, x, w,
                              mask[2] ? std::optional<IntArrayRef>(bias_sizes) : std::nullopt,
                              {c.stride}, {c.padding}, {c.dilation}, c.transposed,
                              {c.transposed ? c.output_padding : 0}, c.groups, mask);
}

/// Forward and backward of c under both providers, with x and w as given.
void check_case(const Case& c, const Tensor& x, const Tensor& w, uint64_t seed) {
  SCOPED_TRACE(c.name());
  const std::optional<Tensor> b = c.bias_tensor(seed + 2);
  const Tensor want = with_provider("reference", [&] { return run_convolution(c, x, w, b); });
  const Tensor got = with_provider("onednn", [&] { return run_convolution(c, x, w, b); });
  expect_allclose(got, want, kRtol, kAtol, "convolution");
  const Tensor named = with_provider("onednn", [&] { return run_named(c, x, w, b); });
  expect_allclose(named, want, kRtol, kAtol, "conv op of its own");

  const Tensor go = random(want.sizes().vec(), seed + 3);
  const std::vector<bool> mask{true, true, c.bias};
  const auto [gi0, gw0, gb0] =
      with_provider("reference", [&] { return run_backward(c, go, x, w, mask); });
  const auto [gi, gw, gb] =
      with_provider("onednn", [&] { return run_backward(c, go, x, w, mask); });
  expect_allclose(gi, gi0, kRtol, kAtol, "grad_input");
  expect_allclose(gw, gw0, kRtol, kAtol, "grad_weight");
  ASSERT_EQ(gb.defined(), gb0.defined());
  if (gb0.defined()) expect_allclose(gb, gb0, kRtol, kAtol, "grad_bias");
}

void check_case(const Case& c, uint64_t seed) {
  check_case(c, random(c.input_sizes(), seed), random(c.weight_sizes(), seed + 1), seed);
}

/// The message f throws under provider (any loom::Error).
template <typename F>
std::string message_under(const std::string& provider, F&& f) {
  return with_provider(provider, [&] { return message_of(f); });
}

TEST_F(OnednnConvolutionTest, MatchesReferenceOverTheGrid) {
  uint64_t seed = 100;
  int cases = 0;
  for (int64_t spatial : {1, 2}) {
    for (bool transposed : {false, true}) {
      for (int64_t stride : {1, 2}) {
        for (int64_t padding : {0, 1, 2}) {
          for (int64_t dilation : {1, 2}) {
            for (int64_t groups : {1, 2, 4}) {  // 4 = Cin: depthwise
              Case c;
              c.spatial = spatial;
              c.transposed = transposed;
              c.stride = stride;
              c.padding = padding;
              c.dilation = dilation;
              c.groups = groups;
              c.bias = (seed / 10) % 2 == 0;
              // output_padding must stay below stride or dilation.
              if (transposed && (stride > 1 || dilation > 1) && padding != 1) c.output_padding = 1;
              if (spatial == 1) c.size = 9;
              check_case(c, seed);
              seed += 10;
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 144);
}

TEST_F(OnednnConvolutionTest, OneByOneAndWideKernels) {
  Case pointwise;
  pointwise.kernel = 1;
  check_case(pointwise, 7);
  Case wide;
  wide.kernel = 5;
  wide.padding = 2;
  wide.stride = 2;
  wide.bias = true;
  check_case(wide, 8);
  Case wide_transposed = wide;
  wide_transposed.transposed = true;
  wide_transposed.output_padding = 1;
  check_case(wide_transposed, 9);
}

TEST_F(OnednnConvolutionTest, WideChannelsInBlockedLayouts) {
  // 32 channels: oneDNN picks blocked layouts (16 channels a block) for the backward.
  uint64_t seed = 500;
  for (bool transposed : {false, true}) {
    for (int64_t groups : {1, 2, 32}) {
      for (int64_t stride : {1, 2}) {
        Case c;
        c.Cin = 32;
        c.Cout = 32;
        c.size = 12;
        c.transposed = transposed;
        c.groups = groups;
        c.stride = stride;
        c.padding = 1;
        c.output_padding = transposed && stride == 2 ? 1 : 0;
        c.bias = groups != 2;
        check_case(c, seed);
        check_case(c, channels_last(random(c.input_sizes(), seed + 5)),
                   random(c.weight_sizes(), seed + 6), seed + 7);
        seed += 10;
      }
    }
  }
}

TEST_F(OnednnConvolutionTest, ChannelsLastInputGivesChannelsLastResults) {
  for (bool transposed : {false, true}) {
    Case c;
    c.transposed = transposed;
    c.padding = 1;
    c.bias = true;
    const Tensor x = channels_last(random(c.input_sizes(), 31));
    const Tensor w = random(c.weight_sizes(), 32);
    ASSERT_TRUE(is_channels_last_4d(x));
    check_case(c, x, w, 33);
    const Tensor y =
        with_provider("onednn", [&] { return run_convolution(c, x, w, std::nullopt); });
    EXPECT_TRUE(is_channels_last_4d(y)) << "the output keeps the input's memory format";
    const Tensor go = random(y.sizes().vec(), 34);
    const auto grads = with_provider("onednn", [&] {
      return run_backward(c, go, x, w, {true, true, false});
    });
    EXPECT_TRUE(is_channels_last_4d(std::get<0>(grads)));
    // A contiguous input gives contiguous results.
    const Tensor xc = random(c.input_sizes(), 35);
    EXPECT_TRUE(with_provider("onednn", [&] {
                  return run_convolution(c, xc, w, std::nullopt);
                }).is_contiguous());
  }
}

TEST_F(OnednnConvolutionTest, NonContiguousOperands) {
  for (int64_t spatial : {1, 2}) {
    for (bool transposed : {false, true}) {
      Case c;
      c.spatial = spatial;
      c.transposed = transposed;
      c.padding = 1;
      c.groups = 2;
      c.bias = true;
      // The last dim with stride 2: a view of a larger storage.
      check_case(c, random(c.input_sizes(), 41, DType::Float32, /*strided=*/true),
                 random(c.weight_sizes(), 42, DType::Float32, /*strided=*/true), 43);
      // A transposed view of the input's spatial dims (2-d) or of a [N, L, C] tensor (1-d).
      Sizes swapped = c.input_sizes();
      std::swap(swapped[1], swapped.back());
      const Tensor base = random(swapped, 44);
      const Tensor x = base.transpose(1, spatial + 1);
      ASSERT_FALSE(x.is_contiguous());
      check_case(c, x, random(c.weight_sizes(), 45), 46);
    }
  }
}

TEST_F(OnednnConvolutionTest, UnbatchedInput) {
  const Tensor x = random({4, 7, 7}, 51), w = random({8, 4, 3, 3}, 52);
  const Tensor want = with_provider("reference", [&] { return conv2d(x, w, std::nullopt, 1, 1); });
  const Tensor got = with_provider("onednn", [&] { return conv2d(x, w, std::nullopt, 1, 1); });
  expect_allclose(got, want, kRtol, kAtol, "conv2d unbatched");
  const Tensor x1 = random({4, 9}, 53), w1 = random({4, 2, 3}, 54);
  const Tensor want1 = with_provider(
      "reference", [&] { return conv_transpose1d(x1, w1, std::nullopt, 2, 1, 1, 2, 1); });
  const Tensor got1 = with_provider(
      "onednn", [&] { return conv_transpose1d(x1, w1, std::nullopt, 2, 1, 1, 2, 1); });
  expect_allclose(got1, want1, kRtol, kAtol, "conv_transpose1d unbatched");
}

TEST_F(OnednnConvolutionTest, PaddingValidAndSame) {
  // 'same' with an even kernel or an odd dilated extent pads one more on the right/bottom.
  for (int64_t kernel : {2, 3, 4}) {
    for (int64_t dilation : {1, 2}) {
      SCOPED_TRACE(str_cat("kernel ", kernel, " dilation ", dilation));
      // 8 output channels: the reference kernel returns garbage for 3 per group with a 4x4
      // kernel (w [6, 2, 4, 4], groups 2), a bug of its own.
      const Tensor x = random({2, 4, 9, 8}, 111), w = random({8, 2, kernel, kernel}, 112);
      const Tensor b = random({8}, 113);
      for (const char* mode : {"same", "valid"}) {
        const Tensor want =
            with_provider("reference", [&] { return conv2d(x, w, b, 1, mode, dilation, 2); });
        const Tensor got =
            with_provider("onednn", [&] { return conv2d(x, w, b, 1, mode, dilation, 2); });
        expect_allclose(got, want, kRtol, kAtol, mode);
      }
      const Tensor x1 = random({2, 4, 11}, 114), w1 = random({6, 4, kernel}, 115);
      const Tensor want1 = with_provider(
          "reference", [&] { return conv1d(x1, w1, std::nullopt, 1, "same", dilation); });
      const Tensor got1 = with_provider(
          "onednn", [&] { return conv1d(x1, w1, std::nullopt, 1, "same", dilation); });
      expect_allclose(got1, want1, kRtol, kAtol, "conv1d same");
    }
  }
  // Gradients through conv2d.padding 'same' with an odd total padding.
  auto grads = [](const std::string& provider) {
    return with_provider(provider, [&] {
      const Tensor x = random({2, 4, 9, 9}, 116), w = random({6, 4, 4, 4}, 117);
      x.set_requires_grad(true);
      w.set_requires_grad(true);
      sum(mul(conv2d(x, w, std::nullopt, 1, "same"), random({2, 6, 9, 9}, 118))).backward();
      return std::pair<Tensor, Tensor>{x.grad(), w.grad()};
    });
  };
  const auto want = grads("reference"), got = grads("onednn");
  expect_allclose(got.first, want.first, kRtol, kAtol, "x.grad");
  expect_allclose(got.second, want.second, kRtol, kAtol, "w.grad");
  // Strided 'same' and an unknown mode are the reference's errors.
  const Tensor x = random({2, 4, 9, 9}, 119), w = random({6, 4, 3, 3}, 120);
  for (const char* mode : {"same", "full"}) {
    const int64_t stride = std::string(mode) == "same" ? 2 : 1;
    const auto call = [&] { conv2d(x, w, std::nullopt, stride, mode); };
    EXPECT_EQ(message_under("onednn", call), message_under("reference", call)) << mode;
  }
}

TEST_F(OnednnConvolutionTest, WeightUpdatedInPlaceIsSeen) {
  // A plain weight (the shared weight cache) and grouped / transposed / 1-d ones (reaching
  // oneDNN through a kept view of the weight, Note [Weight views]).
  for (int variant = 0; variant < 4; ++variant) {
    Case c;
    c.padding = 1;
    if (variant == 1) c.groups = 2;
    if (variant == 2) c.transposed = true;
    if (variant == 3) c.spatial = 1;
    SCOPED_TRACE(c.name());
    const Tensor x = random(c.input_sizes(), 61), w = random(c.weight_sizes(), 62);
    const Tensor before =
        with_provider("onednn", [&] { return run_convolution(c, x, w, std::nullopt); });
    const Tensor go = random(before.sizes().vec(), 63);
    const Tensor gi_before = std::get<0>(with_provider("onednn", [&] {
      return run_backward(c, go, x, w, {true, false, false});
    }));
    mul_(w, Scalar(-3.0));
    const Tensor after =
        with_provider("onednn", [&] { return run_convolution(c, x, w, std::nullopt); });
    const Tensor want =
        with_provider("reference", [&] { return run_convolution(c, x, w, std::nullopt); });
    expect_allclose(after, want, kRtol, kAtol, "forward after the update");
    expect_allclose(after, mul(before, Scalar(-3.0)), kRtol, kAtol, "forward scaled");
    const Tensor gi_after = std::get<0>(with_provider("onednn", [&] {
      return run_backward(c, go, x, w, {true, false, false});
    }));
    expect_allclose(gi_after, mul(gi_before, Scalar(-3.0)), kRtol, kAtol, "grad_input scaled");
    // A second update, of the same weight again.
    mul_(w, Scalar(0.5));
    const Tensor again =
        with_provider("onednn", [&] { return run_convolution(c, x, w, std::nullopt); });
    expect_allclose(again, mul(before, Scalar(-1.5)), kRtol, kAtol, "forward after two updates");
  }
}

TEST_F(OnednnConvolutionTest, PartialOutputMasks) {
  Case c;
  c.padding = 1;
  c.bias = true;
  const Tensor x = random(c.input_sizes(), 71), w = random(c.weight_sizes(), 72);
  const Tensor go = random({2, 8, 7, 7}, 73);
  for (const std::vector<bool>& mask : {std::vector<bool>{true, false, false},
                                        {false, true, false},
                                        {false, false, true},
                                        {false, true, true}}) {
    const auto [gi0, gw0, gb0] =
        with_provider("reference", [&] { return run_backward(c, go, x, w, mask); });
    const auto [gi, gw, gb] =
        with_provider("onednn", [&] { return run_backward(c, go, x, w, mask); });
    EXPECT_EQ(gi.defined(), mask[0]);
    EXPECT_EQ(gw.defined(), mask[1]);
    EXPECT_EQ(gb.defined(), mask[2]);
    if (mask[0]) expect_allclose(gi, gi0, kRtol, kAtol, "grad_input");
    if (mask[1]) expect_allclose(gw, gw0, kRtol, kAtol, "grad_weight");
    if (mask[2]) expect_allclose(gb, gb0, kRtol, kAtol, "grad_bias");
  }
}

TEST_F(OnednnConvolutionTest, Float64IsHandedOnUnchanged) {
  Case c;
  c.padding = 1;
  c.groups = 2;
  c.bias = true;
  const Tensor x = random(c.input_sizes(), 81, DType::Float64);
  const Tensor w = random(c.weight_sizes(), 82, DType::Float64);
  const std::optional<Tensor> b = random({c.Cout}, 83, DType::Float64);
  const Tensor want = with_provider("reference", [&] { return run_convolution(c, x, w, b); });
  const Tensor got = with_provider("onednn", [&] { return run_convolution(c, x, w, b); });
  EXPECT_EQ(got.dtype(), DType::Float64);
  EXPECT_EQ(to_doubles(got), to_doubles(want));
  EXPECT_EQ(to_doubles(with_provider("onednn", [&] { return run_named(c, x, w, b); })),
            to_doubles(want));
  const Tensor go = random(want.sizes().vec(), 84, DType::Float64);
  const auto ref = with_provider("reference", [&] {
    return run_backward(c, go, x, w, {true, true, true});
  });
  const auto one = with_provider("onednn", [&] {
    return run_backward(c, go, x, w, {true, true, true});
  });
  EXPECT_EQ(to_doubles(std::get<0>(one)), to_doubles(std::get<0>(ref)));
  EXPECT_EQ(to_doubles(std::get<1>(one)), to_doubles(std::get<1>(ref)));
  EXPECT_EQ(to_doubles(std::get<2>(one)), to_doubles(std::get<2>(ref)));
}

TEST_F(OnednnConvolutionTest, MalformedCallsGiveTheReferenceMessages) {
  const Tensor x = random({2, 4, 7, 7}, 91), w = random({8, 4, 3, 3}, 92);
  const Tensor x5 = random({2, 5, 7, 7}, 93), tiny = random({2, 4, 2, 2}, 94);
  const Tensor bad_bias = random({7}, 95);
  const Tensor x64 = random({2, 4, 7, 7}, 96, DType::Float64);
  const std::vector<std::function<void()>> calls = {
      // channels do not match the weight
      [&] { convolution(x5, w, std::nullopt, {1}, {0}, {1}, false, {0}, 1); },
      [&] { conv2d(x5, w); },
      // bias of the wrong size
      [&] { convolution(x, w, bad_bias, {1}, {0}, {1}, false, {0}, 1); },
      // kernel larger than the padded input
      [&] { conv2d(tiny, w); },
      // negative padding, zero stride, groups not dividing the channels
      [&] { conv2d(x, w, std::nullopt, 1, -1); },
      [&] { conv2d(x, w, std::nullopt, 0, 1); },
      [&] { conv2d(x, w, std::nullopt, 1, 1, 1, 3); },
      // a stride list of the wrong length
      [&] {
        convolution(x, w, std::nullopt, {1, 1, 1}, {0}, {1}, false, {0}, 1);
      },
      // output_padding not below stride or dilation (transposed)
      [&] {
        conv_transpose2d(x, random({4, 2, 3, 3}, 97), std::nullopt, 1, 0, 1);
      },
      // mixed dtypes
      [&] { conv2d(x64, w); },
      // grad_output of the wrong size
      [&] {
        convolution_backward(random({2, 8, 6, 6}, 98), x, w, std::nullopt, {1}, {0}, {1}, false,
                             {0}, 1, {true, true, false});
      },
      // output_padding on a plain convolution's backward
      [&] {
        convolution_backward(random({2, 8, 5, 5}, 99), x, w, std::nullopt, {1}, {0}, {1}, false,
                             {1}, 1, {true, true, false});
      },
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string want = message_under("reference", calls[i]);
    const std::string got = message_under("onednn", calls[i]);
    EXPECT_FALSE(want.empty()) << "call " << i;
    EXPECT_EQ(got, want) << "call " << i;
  }
}

TEST_F(OnednnConvolutionTest, AutogradThroughConv2dGivesTheSameGradients) {
  struct Grads {
    Tensor x, w, b;
  };
  auto step = [](const std::string& provider, bool channels_last_input) {
    return with_provider(provider, [&] {
      Tensor x = random({2, 4, 9, 9}, 101);
      if (channels_last_input) x = channels_last(x);
      const Tensor w = random({6, 2, 3, 3}, 102), b = random({6}, 103);
      const Tensor g = random({2, 6, 5, 5}, 104);
      x.set_requires_grad(true);
      w.set_requires_grad(true);
      b.set_requires_grad(true);
      const Tensor y = conv2d(x, w, b, 2, 1, 1, 2);
      const Tensor loss = sum(mul(mul(y, y), g));
      loss.backward();
      return Grads{x.grad(), w.grad(), b.grad()};
    });
  };
  for (bool cl : {false, true}) {
    SCOPED_TRACE(cl ? "channels-last input" : "contiguous input");
    const Grads want = step("reference", cl), got = step("onednn", cl);
    ASSERT_TRUE(got.x.defined() && got.w.defined() && got.b.defined());
    expect_allclose(got.x, want.x, kRtol, kAtol, "x.grad");
    expect_allclose(got.w, want.w, kRtol, kAtol, "w.grad");
    expect_allclose(got.b, want.b, kRtol, kAtol, "b.grad");
  }
}

}  // namespace
}  // namespace loom::testing
