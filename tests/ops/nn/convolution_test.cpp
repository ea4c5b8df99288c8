// Tests for ops/nn/cpu/convolution.cpp: every convolution op against a float64 direct-loop
// oracle (stride, padding, dilation, groups, 1-d, transposed with output_padding, bias or
// none, padding "same"/"valid", unbatched, strided and permuted operands, 16-bit floats,
// empty batches), convolution_backward against the adjoint loops of the same oracle, a sweep
// of small shapes through every GEMM path of both, and PyTorch's error messages.
#include "loom/ops/nn/convolution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

using Values = std::vector<double>;
using Sizes = std::vector<int64_t>;

class ConvolutionTest : public ::testing::Test {
 protected:
  void SetUp() override { load_ops_nn(); }
};

int64_t numel_of(const Sizes& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/// One convolution: input and weight sizes (1-d or 2-d, batched) and its parameters, each
/// list either one value or one per spatial dim.
struct Conv {
  Sizes in, w;
  Sizes stride{1}, padding{0}, dilation{1}, output_padding{0};
  int64_t groups = 1;
  bool transposed = false;
  bool bias = true;
};

/// The oracle's 2-d view of a convolution (1-d has H = 1).
struct Geo {
  int64_t N, Cin, H, W, Cout, oH, oW, kH, kW, sH, sW, pH, pW, dH, dW, G;
  bool transposed;
};

int64_t at2(const Sizes& v, int64_t i, bool one_d) {
  if (one_d) return i == 0 ? -1 : v[0];
  return v.size() == 1 ? v[0] : v[i];
}

Geo geo_of(const Conv& c) {
  const bool one_d = c.in.size() == 3;
  auto p = [&](const Sizes& v, int64_t i, int64_t unit) {
    const int64_t x = at2(v, i, one_d);
    return x < 0 ? unit : x;
  };
  Geo g{};
  g.N = c.in[0];
  g.Cin = c.in[1];
  g.H = one_d ? 1 : c.in[2];
  g.W = c.in.back();
  g.kH = one_d ? 1 : c.w[2];
  g.kW = c.w.back();
  g.sH = p(c.stride, 0, 1);
  g.sW = p(c.stride, 1, 1);
  g.pH = p(c.padding, 0, 0);
  g.pW = p(c.padding, 1, 0);
  g.dH = p(c.dilation, 0, 1);
  g.dW = p(c.dilation, 1, 1);
  g.G = c.groups;
  g.transposed = c.transposed;
  if (!c.transposed) {
    g.Cout = c.w[0];
    g.oH = (g.H + 2 * g.pH - g.dH * (g.kH - 1) - 1) / g.sH + 1;
    g.oW = (g.W + 2 * g.pW - g.dW * (g.kW - 1) - 1) / g.sW + 1;
  } else {
    g.Cout = c.w[1] * c.groups;
    g.oH = (g.H - 1) * g.sH - 2 * g.pH + g.dH * (g.kH - 1) + p(c.output_padding, 0, 0) + 1;
    g.oW = (g.W - 1) * g.sW - 2 * g.pW + g.dW * (g.kW - 1) + p(c.output_padding, 1, 0) + 1;
  }
  return g;
}

Sizes out_sizes(const Conv& c) {
  const Geo g = geo_of(c);
  if (c.in.size() == 3) return {g.N, g.Cout, g.oW};
  return {g.N, g.Cout, g.oH, g.oW};
}

/// Calls f(x index, w index, out index) for every product the convolution sums, written
/// from its definition: a plain convolution gathers input pixels into each output pixel,
/// a transposed one scatters each input pixel over the output.
template <typename F>
void visit(const Geo& g, F&& f) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.G; ++grp) {
      const int64_t cig = g.Cin / g.G, cog = g.Cout / g.G;
      for (int64_t ic = 0; ic < cig; ++ic)
        for (int64_t oc = 0; oc < cog; ++oc)
          for (int64_t kh = 0; kh < g.kH; ++kh)
            for (int64_t kw = 0; kw < g.kW; ++kw) {
              const int64_t ci = grp * cig + ic, co = grp * cog + oc;
              if (!g.transposed) {
                const int64_t wi = ((co * cig + ic) * g.kH + kh) * g.kW + kw;
                for (int64_t oh = 0; oh < g.oH; ++oh)
                  for (int64_t ow = 0; ow < g.oW; ++ow) {
                    const int64_t ih = oh * g.sH - g.pH + kh * g.dH;
                    const int64_t iw = ow * g.sW - g.pW + kw * g.dW;
                    if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                    f(((n * g.Cin + ci) * g.H + ih) * g.W + iw, wi,
                      ((n * g.Cout + co) * g.oH + oh) * g.oW + ow);
                  }
              } else {
                const int64_t wi = ((ci * cog + oc) * g.kH + kh) * g.kW + kw;
                for (int64_t ih = 0; ih < g.H; ++ih)
                  for (int64_t iw = 0; iw < g.W; ++iw) {
                    const int64_t oh = ih * g.sH - g.pH + kh * g.dH;
                    const int64_t ow = iw * g.sW - g.pW + kw * g.dW;
                    if (oh < 0 || oh >= g.oH || ow < 0 || ow >= g.oW) continue;
                    f(((n * g.Cin + ci) * g.H + ih) * g.W + iw, wi,
                      ((n * g.Cout + co) * g.oH + oh) * g.oW + ow);
                  }
              }
            }
    }
}

Values ref_forward(const Conv& c, const Values& x, const Values& w, const Values& b) {
  const Geo g = geo_of(c);
  Values out(static_cast<size_t>(numel_of(out_sizes(c))), 0.0);
  if (c.bias) {
    const int64_t L = g.oH * g.oW;
    for (size_t i = 0; i < out.size(); ++i) out[i] = b[(i / L) % g.Cout];
  }
  visit(g, [&](int64_t xi, int64_t wi, int64_t oi) { out[oi] += x[xi] * w[wi]; });
  return out;
}

/// The adjoints of ref_forward: grad_input, grad_weight, grad_bias.
void ref_backward(const Conv& c, const Values& x, const Values& w, const Values& go, Values* gi,
                  Values* gw, Values* gb) {
  const Geo g = geo_of(c);
  gi->assign(x.size(), 0.0);
  gw->assign(w.size(), 0.0);
  gb->assign(static_cast<size_t>(g.Cout), 0.0);
  visit(g, [&](int64_t xi, int64_t wi, int64_t oi) {
    (*gi)[xi] += go[oi] * w[wi];
    (*gw)[wi] += go[oi] * x[xi];
  });
  const int64_t L = g.oH * g.oW;
  for (size_t i = 0; i < go.size(); ++i) (*gb)[(i / L) % g.Cout] += go[i];
}

/// Operands of one test case, as tensors of dtype t (input strided if asked) and the values
/// they actually hold (after rounding to t).
struct Operands {
  Tensor x, w, b;
  Values xv, wv, bv;
};

Operands operands(const Conv& c, DType t, bool strided, uint64_t seed) {
  Operands o;
  const int64_t bias_n = c.transposed ? c.w[1] * c.groups : c.w[0];
  o.x = make_tensor(random_values(numel_of(c.in), seed), c.in, t, strided);
  o.w = make_tensor(random_values(numel_of(c.w), seed + 1), c.w, t);
  o.xv = to_doubles(o.x);
  o.wv = to_doubles(o.w);
  if (c.bias) {
    o.b = make_tensor(random_values(bias_n, seed + 2), {bias_n}, t);
    o.bv = to_doubles(o.b);
  }
  return o;
}

std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

Tensor run_convolution(const Conv& c, const Operands& o) {
  return convolution(o.x, o.w, opt(o.b), c.stride, c.padding, c.dilation, c.transposed,
                     c.output_padding, c.groups);
}

double rtol_of(DType t) {
  return t == DType::Float64 ? 1e-10 : (t == DType::Float32 ? 1e-4 : 2e-2);
}
double atol_of(DType t) {
  return t == DType::Float64 ? 1e-10 : (t == DType::Float32 ? 1e-4 : 5e-2);
}

/// Cases covering the parameters one at a time and together.
std::vector<Conv> cases() {
  std::vector<Conv> v;
  // 2-d
  v.push_back({{2, 3, 7, 6}, {4, 3, 3, 3}});
  v.push_back({{1, 3, 7, 6}, {4, 3, 3, 3}, {1}, {0}, {1}, {0}, 1, false, false});
  v.push_back({{2, 3, 9, 8}, {5, 3, 3, 2}, {2, 1}, {1, 0}});
  v.push_back({{2, 4, 9, 9}, {6, 2, 3, 3}, {2}, {1}, {2}, {0}, 2});
  v.push_back({{1, 6, 8, 7}, {6, 1, 3, 3}, {1}, {1}, {1}, {0}, 6});  // depthwise
  v.push_back({{3, 5, 6, 6}, {7, 5, 1, 1}});                         // pointwise
  v.push_back({{2, 4, 6, 5}, {3, 4, 1, 1}, {2}, {0}});
  v.push_back({{2, 3, 10, 11}, {4, 3, 4, 3}, {3, 2}, {2, 1}, {1, 2}});
  v.push_back({{1, 2, 5, 5}, {3, 2, 5, 5}, {1}, {2}});
  v.push_back({{2, 0, 5, 5}, {3, 0, 3, 3}});              // no input channels
  v.push_back({{1, 4, 6, 6}, {100, 4, 3, 3}, {1}, {1}});  // more output channels than a GEMM block
  // 1-d
  v.push_back({{2, 3, 11}, {4, 3, 3}});
  v.push_back({{2, 4, 13}, {6, 2, 4}, {3}, {2}, {2}, {0}, 2, false, false});
  // transposed
  v.push_back({{2, 3, 5, 4}, {3, 4, 3, 3}, {1}, {0}, {1}, {0}, 1, true});
  v.push_back({{2, 4, 5, 4}, {4, 3, 3, 2}, {2, 3}, {1, 0}, {1}, {1, 2}, 2, true});
  v.push_back({{1, 2, 4, 4}, {2, 3, 3, 3}, {2}, {2}, {2}, {1}, 1, true, false});
  v.push_back({{2, 3, 4, 4}, {3, 2, 1, 1}, {1}, {0}, {1}, {0}, 1, true});  // pointwise
  v.push_back({{2, 4, 9}, {4, 2, 3}, {2}, {1}, {1}, {1}, 2, true});        // 1-d
  v.push_back({{1, 3, 7}, {3, 2, 2}, {3}, {0}, {2}, {2}, 1, true, false});
  return v;
}

std::string name_of(const Conv& c) {
  return str_cat("input ", sizes_str(c.in), " weight ", sizes_str(c.w), " stride ",
                 sizes_str(c.stride), " padding ", sizes_str(c.padding), " dilation ",
                 sizes_str(c.dilation), " output_padding ", sizes_str(c.output_padding), " groups ",
                 c.groups, c.transposed ? " transposed" : "", c.bias ? "" : " no bias");
}

TEST_F(ConvolutionTest, ConvolutionMatchesOracle) {
  for (DType t : {DType::Float64, DType::Float32}) {
    for (const Conv& c : cases()) {
      SCOPED_TRACE(name_of(c) + " " + std::string(dtype_name(t)));
      const Operands o = operands(c, t, false, 11);
      expect_close(run_convolution(c, o), out_sizes(c), ref_forward(c, o.xv, o.wv, o.bv),
                   rtol_of(t), atol_of(t));
    }
  }
}

TEST_F(ConvolutionTest, StridedInputMatchesOracle) {
  for (const Conv& c : cases()) {
    SCOPED_TRACE(name_of(c));
    const Operands o = operands(c, DType::Float32, /*strided=*/true, 21);
    ASSERT_FALSE(o.x.numel() > 1 && o.x.is_contiguous());
    expect_close(run_convolution(c, o), out_sizes(c), ref_forward(c, o.xv, o.wv, o.bv), 1e-4, 1e-4);
  }
}

/// A [N, C, H, W] tensor stored as [N, H, W, C] (channels-last), or with H and W swapped.
Tensor permuted(const Values& v, const Sizes& s, bool channels_last) {
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  Values p(v.size());
  Sizes strides;
  if (channels_last) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            p[((n * H + h) * W + w) * C + c] = v[((n * C + c) * H + h) * W + w];
    strides = {H * W * C, 1, W * C, C};
  } else {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            p[((n * C + c) * W + w) * H + h] = v[((n * C + c) * H + h) * W + w];
    strides = {C * H * W, H * W, 1, H};
  }
  Tensor base = make_tensor(p, {numel_of(s)}, DType::Float64);
  return base.as_strided_view(s, strides, 0);
}

TEST_F(ConvolutionTest, PermutedOperandsMatchOracle) {
  for (bool channels_last : {true, false}) {
    for (const Conv& c :
         {Conv{{2, 3, 7, 6}, {4, 3, 3, 3}, {2}, {1}}, Conv{{2, 5, 6, 6}, {7, 5, 1, 1}},
          Conv{{2, 3, 5, 4}, {3, 4, 3, 3}, {1}, {0}, {1}, {0}, 1, true}}) {
      SCOPED_TRACE(name_of(c) + (channels_last ? " channels-last" : " H/W swapped"));
      const Values xv = random_values(numel_of(c.in), 5), wv = random_values(numel_of(c.w), 6);
      const int64_t nb = c.transposed ? c.w[1] : c.w[0];
      const Values bv = random_values(nb, 7);
      const Tensor x = permuted(xv, c.in, channels_last);
      const Tensor w = permuted(wv, c.w, channels_last);
      const Tensor b = make_tensor(bv, {nb}, DType::Float64);
      expect_close(convolution(x, w, b, c.stride, c.padding, c.dilation, c.transposed,
                               c.output_padding, c.groups),
                   out_sizes(c), ref_forward(c, xv, wv, bv), 1e-10, 1e-10);
    }
  }
}

TEST_F(ConvolutionTest, LargeCasesUseChunksAndThreads) {
  // Enough columns that im2col is split in chunks, and enough work to run in parallel.
  for (const Conv& c :
       {Conv{{3, 32, 30, 31}, {16, 32, 3, 3}, {1}, {1}}, Conv{{2, 32, 20, 20}, {8, 32, 1, 1}},
        Conv{{2, 16, 12, 12}, {16, 8, 3, 3}, {2}, {1}, {1}, {1}, 1, true}}) {
    SCOPED_TRACE(name_of(c));
    const Operands o = operands(c, DType::Float32, false, 31);
    expect_close(run_convolution(c, o), out_sizes(c), ref_forward(c, o.xv, o.wv, o.bv), 1e-4, 2e-4);
  }
}

TEST_F(ConvolutionTest, SixteenBitFloats) {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    for (const Conv& c : {Conv{{2, 3, 7, 6}, {4, 3, 3, 3}, {2}, {1}},
                          Conv{{2, 4, 5, 4}, {4, 3, 3, 2}, {2, 3}, {1, 0}, {1}, {1, 2}, 2, true}}) {
      SCOPED_TRACE(name_of(c) + " " + std::string(dtype_name(t)));
      const Operands o = operands(c, t, false, 41);
      const Tensor got = run_convolution(c, o);
      EXPECT_EQ(got.dtype(), t);
      expect_close(got, out_sizes(c), ref_forward(c, o.xv, o.wv, o.bv), 2e-2, 6e-2);
    }
  }
}

TEST_F(ConvolutionTest, Conv1dAndConv2dWrappers) {
  // conv2d = convolution(transposed=false); unbatched inputs drop the batch dim again.
  const Conv c2{{1, 4, 8, 7}, {6, 2, 3, 2}, {2, 1}, {1}, {1, 2}, {0}, 2};
  const Operands o2 = operands(c2, DType::Float64, false, 51);
  const Values want2 = ref_forward(c2, o2.xv, o2.wv, o2.bv);
  expect_close(conv2d(o2.x, o2.w, o2.b, c2.stride, c2.padding, c2.dilation, c2.groups),
               out_sizes(c2), want2);
  const Tensor x3 = o2.x.as_strided_view({4, 8, 7}, {56, 7, 1}, 0);
  Sizes s3 = out_sizes(c2);
  s3.erase(s3.begin());
  expect_close(conv2d(x3, o2.w, o2.b, c2.stride, c2.padding, c2.dilation, c2.groups), s3, want2);

  const Conv c1{{1, 3, 12}, {5, 3, 3}, {2}, {2}, {3}, {0}, 1, false, false};
  const Operands o1 = operands(c1, DType::Float64, false, 52);
  const Values want1 = ref_forward(c1, o1.xv, o1.wv, o1.bv);
  expect_close(conv1d(o1.x, o1.w, std::nullopt, 2, 2, 3), out_sizes(c1), want1);
  const Tensor x2 = o1.x.as_strided_view({3, 12}, {12, 1}, 0);
  expect_close(conv1d(x2, o1.w, std::nullopt, 2, 2, 3), {5, out_sizes(c1)[2]}, want1);

  // Defaults: stride 1, padding 0, dilation 1, groups 1, no bias.
  const Conv cd{{2, 3, 6, 5}, {2, 3, 2, 2}, {1}, {0}, {1}, {0}, 1, false, false};
  const Operands od = operands(cd, DType::Float64, false, 53);
  expect_close(conv2d(od.x, od.w), out_sizes(cd), ref_forward(cd, od.xv, od.wv, od.bv));
}

TEST_F(ConvolutionTest, ConvTransposeWrappers) {
  const Conv c2{{2, 4, 5, 4}, {4, 3, 3, 2}, {2, 3}, {1, 0}, {1, 2}, {1, 2}, 2, true};
  const Operands o2 = operands(c2, DType::Float64, false, 61);
  const Values want2 = ref_forward(c2, o2.xv, o2.wv, o2.bv);
  expect_close(conv_transpose2d(o2.x, o2.w, o2.b, c2.stride, c2.padding, c2.output_padding,
                                c2.groups, c2.dilation),
               out_sizes(c2), want2);

  const Conv c1{{1, 2, 6}, {2, 3, 3}, {2}, {1}, {1}, {1}, 1, true};
  const Operands o1 = operands(c1, DType::Float64, false, 62);
  const Values want1 = ref_forward(c1, o1.xv, o1.wv, o1.bv);
  expect_close(conv_transpose1d(o1.x, o1.w, o1.b, 2, 1, 1), out_sizes(c1), want1);
  const Tensor x2 = o1.x.as_strided_view({2, 6}, {6, 1}, 0);
  expect_close(conv_transpose1d(x2, o1.w, o1.b, 2, 1, 1), {3, out_sizes(c1)[2]}, want1);
}

TEST_F(ConvolutionTest, PaddingValidAndSame) {
  // 'same' keeps the spatial size; with an even effective kernel the extra padding element
  // goes on the right/bottom, which is the explicit-padding oracle on an input padded so.
  struct Case {
    Sizes in, w, dilation;
    int64_t groups;
  };
  for (const Case& k :
       {Case{{2, 3, 7, 6}, {4, 3, 3, 3}, {1}, 1}, Case{{1, 4, 6, 7}, {4, 2, 4, 2}, {1}, 2},
        Case{{1, 2, 8, 8}, {3, 2, 2, 3}, {3, 1}, 1}, Case{{2, 3, 9}, {2, 3, 4}, {1}, 1},
        Case{{1, 2, 9}, {2, 2, 3}, {2}, 1}}) {
    const bool one_d = k.in.size() == 3;
    SCOPED_TRACE(str_cat("input ", sizes_str(k.in), " weight ", sizes_str(k.w)));
    const Values xv = random_values(numel_of(k.in), 71), wv = random_values(numel_of(k.w), 72);
    const Values bv = random_values(k.w[0], 73);
    const Tensor x = make_tensor(xv, k.in, DType::Float64);
    const Tensor w = make_tensor(wv, k.w, DType::Float64);
    const Tensor b = make_tensor(bv, {k.w[0]}, DType::Float64);
    // The oracle: pad the input explicitly by (total/2 left, total - total/2 right).
    Sizes padded = k.in, lefts;
    const int64_t sp = static_cast<int64_t>(k.in.size()) - 2;
    for (int64_t i = 0; i < sp; ++i) {
      const int64_t d = k.dilation.size() == 1 ? k.dilation[0] : k.dilation[i];
      const int64_t total = d * (k.w[i + 2] - 1);
      lefts.push_back(total / 2);
      padded[i + 2] += total;
    }
    Values pv(static_cast<size_t>(numel_of(padded)), 0.0);
    const int64_t H = one_d ? 1 : k.in[2], W = k.in.back();
    const int64_t pH = one_d ? 1 : padded[2], pW = padded.back();
    const int64_t lH = one_d ? 0 : lefts[0], lW = lefts.back();
    for (int64_t nc = 0; nc < k.in[0] * k.in[1]; ++nc)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t ww = 0; ww < W; ++ww)
          pv[(nc * pH + h + lH) * pW + ww + lW] = xv[(nc * H + h) * W + ww];
    const Conv c{padded, k.w, {1}, {0}, k.dilation, {0}, k.groups};
    const Values want = ref_forward(c, pv, wv, bv);
    ASSERT_EQ(out_sizes(c), k.in.size() == 3 ? Sizes({k.in[0], k.w[0], k.in[2]})
                                             : Sizes({k.in[0], k.w[0], k.in[2], k.in[3]}));
    const Tensor got = one_d ? conv1d(x, w, b, 1, "same", k.dilation, k.groups)
                             : conv2d(x, w, b, 1, "same", k.dilation, k.groups);
    expect_close(got, out_sizes(c), want, 1e-10, 1e-10);
    // 'valid' is padding 0.
    const Conv cv{k.in, k.w, {1}, {0}, k.dilation, {0}, k.groups};
    const Tensor valid = one_d ? conv1d(x, w, b, 1, "valid", k.dilation, k.groups)
                               : conv2d(x, w, b, 1, std::string("valid"), k.dilation, k.groups);
    expect_close(valid, out_sizes(cv), ref_forward(cv, xv, wv, bv), 1e-10, 1e-10);
  }
  // Unbatched 'same'.
  const Tensor x = make_tensor(random_values(3 * 5 * 5, 74), {3, 5, 5}, DType::Float64);
  const Tensor w = make_tensor(random_values(2 * 3 * 2 * 2, 75), {2, 3, 2, 2}, DType::Float64);
  EXPECT_EQ(sizes_str(conv2d(x, w, std::nullopt, 1, "same").sizes()), "[2, 5, 5]");
}

TEST_F(ConvolutionTest, EmptyBatch) {
  const Tensor x = Tensor::empty({0, 3, 5, 5});
  const Tensor w = make_tensor(random_values(4 * 3 * 9, 1), {4, 3, 3, 3});
  EXPECT_EQ(sizes_str(conv2d(x, w).sizes()), "[0, 4, 3, 3]");
  const Tensor wt = make_tensor(random_values(3 * 4 * 9, 1), {3, 4, 3, 3});
  EXPECT_EQ(sizes_str(conv_transpose2d(x, wt).sizes()), "[0, 4, 7, 7]");
}

// ---- backward ----

void check_backward(const Conv& c, DType t, uint64_t seed, const std::vector<bool>& mask) {
  const Operands o = operands(c, t, /*strided=*/seed % 2 == 1, seed);
  const Sizes os = out_sizes(c);
  const Tensor go = make_tensor(random_values(numel_of(os), seed + 7), os, t, seed % 3 == 0);
  Values gi, gw, gb;
  ref_backward(c, o.xv, o.wv, to_doubles(go), &gi, &gw, &gb);
  const std::optional<IntArrayRef> bias_sizes =
      c.bias ? std::optional<IntArrayRef>(o.b.sizes()) : std::nullopt;
  const auto [tgi, tgw, tgb] =
      convolution_backward(go, o.x, o.w, bias_sizes, c.stride, c.padding, c.dilation, c.transposed,
                           c.output_padding, c.groups, mask);
  const double rtol = rtol_of(t) * (t == DType::Float32 ? 3 : 1), atol = atol_of(t) * 5;
  if (mask[0]) {
    expect_close(tgi, c.in, gi, rtol, atol);
  } else {
    EXPECT_FALSE(tgi.defined());
  }
  if (mask[1]) {
    expect_close(tgw, c.w, gw, rtol, atol);
  } else {
    EXPECT_FALSE(tgw.defined());
  }
  if (mask[2]) {
    expect_close(tgb, {geo_of(c).Cout}, gb, rtol, atol);
  } else {
    EXPECT_FALSE(tgb.defined());
  }
}

TEST_F(ConvolutionTest, BackwardMatchesAdjointOracle) {
  uint64_t seed = 100;
  for (DType t : {DType::Float64, DType::Float32}) {
    for (const Conv& c : cases()) {
      SCOPED_TRACE(name_of(c) + " " + std::string(dtype_name(t)));
      check_backward(c, t, seed++, {true, true, true});
    }
  }
}

TEST_F(ConvolutionTest, BackwardLargeCases) {
  for (const Conv& c :
       {Conv{{3, 32, 30, 31}, {16, 32, 3, 3}, {1}, {1}}, Conv{{2, 32, 20, 20}, {8, 32, 1, 1}},
        Conv{{5, 3, 17, 17}, {8, 3, 3, 3}, {2}, {1}},
        Conv{{2, 16, 12, 12}, {16, 8, 3, 3}, {2}, {1}, {1}, {1}, 1, true}}) {
    SCOPED_TRACE(name_of(c));
    check_backward(c, DType::Float32, 200, {true, true, true});
  }
}

TEST_F(ConvolutionTest, BackwardOutputMask) {
  const Conv c{{2, 4, 6, 5}, {6, 2, 3, 3}, {2, 1}, {1}, {1}, {0}, 2};
  const Conv ct{{2, 4, 4, 3}, {4, 3, 3, 3}, {2}, {1}, {1}, {1}, 2, true};
  for (const std::vector<bool>& mask :
       {std::vector<bool>{true, false, false}, std::vector<bool>{false, true, false},
        std::vector<bool>{false, false, true}, std::vector<bool>{false, false, false}}) {
    check_backward(c, DType::Float64, 300, mask);
    check_backward(ct, DType::Float64, 301, mask);
  }
}

TEST_F(ConvolutionTest, BackwardSixteenBit) {
  const Conv c{{2, 3, 6, 6}, {4, 3, 3, 3}, {1}, {1}};
  for (DType t : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    const Operands o = operands(c, t, false, 400);
    const Sizes os = out_sizes(c);
    const Tensor go = make_tensor(random_values(numel_of(os), 401), os, t);
    Values gi, gw, gb;
    ref_backward(c, o.xv, o.wv, to_doubles(go), &gi, &gw, &gb);
    const auto [tgi, tgw, tgb] =
        convolution_backward(go, o.x, o.w, o.b.sizes(), c.stride, c.padding, c.dilation, false, {0},
                             1, {true, true, true});
    EXPECT_EQ(tgi.dtype(), t);
    expect_close(tgi, c.in, gi, 2e-2, 1e-1);
    expect_close(tgw, c.w, gw, 2e-2, 2e-1);
    expect_close(tgb, {4}, gb, 2e-2, 2e-1);
  }
}

TEST_F(ConvolutionTest, BackwardEmptyBatchGivesZeroWeightGrad) {
  const Tensor x = Tensor::empty({0, 3, 5, 5});
  const Tensor w = make_tensor(random_values(4 * 3 * 9, 1), {4, 3, 3, 3});
  const Tensor go = Tensor::empty({0, 4, 3, 3});
  const auto [gi, gw, gb] = convolution_backward(go, x, w, std::nullopt, {1}, {0}, {1}, false, {0},
                                                 1, {true, true, true});
  EXPECT_EQ(sizes_str(gi.sizes()), "[0, 3, 5, 5]");
  expect_close(gw, {4, 3, 3, 3}, Values(4 * 3 * 9, 0.0));
  expect_close(gb, {4}, Values(4, 0.0));
}

// ---- sweep of small shapes ----

/// Number of elements of got (dtype any) farther than atol + rtol*|want| from want; the first
/// few are reported, so that a sweep of many cases does not flood the log.
int64_t count_mismatches(const Tensor& got, const Sizes& want_sizes, const Values& want,
                         double rtol, double atol) {
  EXPECT_TRUE(got.defined());
  if (!got.defined()) return 1;
  EXPECT_EQ(sizes_str(got.sizes()), sizes_str(want_sizes));
  const Values g = to_doubles(got);
  EXPECT_EQ(g.size(), want.size());
  if (g.size() != want.size()) return 1;
  int64_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::fabs(g[i] - want[i]) <= atol + rtol * std::fabs(want[i])) continue;
    if (bad++ < 3) {
      ADD_FAILURE() << "element " << i << ": got " << g[i] << ", expected " << want[i];
    }
  }
  return bad;
}

/// The sweep's cases: groups 1..3, square and oblong kernels 1..5, 1..4 output channels per
/// group (below and at the 4 where the forward kernel changes path), 1..2 input channels per
/// group, odd spatial sizes, and stride/padding/dilation, plain and transposed, 2-d and 1-d.
/// A bug in the GEMM paths chosen by size (tiny, GEMV, blocked) or in the packing of
/// partial slivers shows up here as a wrong element, whatever the size that triggers it.
/// Every case has two images, so a kernel that skips later (image, group) tasks fails too:
/// fewer than 4 output channels per group with m*n*k above the GEMM's tiny bound once ran
/// the blocked GEMM's `omp for` inside the convolution's own, and libgomp then dropped every
/// task after the first (Note [Serial GEMM inside a parallel loop] in ops/core/cpu/gemm.h).
std::vector<Conv> sweep_cases() {
  struct Spd {
    int64_t s, p, d;
  };
  const Spd spds[] = {{1, 1, 1}, {2, 0, 1}, {1, 2, 2}};
  std::vector<Conv> v;
  for (int64_t g : {1, 2, 3})
    for (int64_t k = 1; k <= 5; ++k)
      for (int64_t cs = 1; cs <= 4; ++cs)
        for (const Spd& q : spds) {
          const int64_t cb = 1 + (k + cs) % 2;
          const int64_t kw = k == 5 ? 3 : k;  // one oblong kernel
          auto add = [&](Sizes in, Sizes w, int64_t padding, int64_t output_padding,
                         bool transposed, bool bias) {
            Conv c{std::move(in), std::move(w)};
            c.stride = {q.s};
            c.padding = {padding};
            c.dilation = {q.d};
            c.output_padding = {output_padding};
            c.groups = g;
            c.transposed = transposed;
            c.bias = bias;
            v.push_back(c);
          };
          // Plain 2-d: input [2, G*Cb, 9, 8] (grown with the dilated kernel), weight
          // [G*Cs, Cb, k, kw]; then 1-d, input [2, G*Cb, 11].
          const int64_t grow_h = (k - 1) * (q.d - 1), grow_w = (kw - 1) * (q.d - 1);
          add({2, g * cb, 9 + grow_h, 8 + grow_w}, {g * cs, cb, k, kw}, q.p, 0, false, cs % 2 == 1);
          add({2, g * cb, 11 + grow_h}, {g * cs, cb, k}, q.p, 0, false, cs % 2 == 0);
          // Transposed 2-d: input [2, G*Cs, 5, 7], weight [G*Cs, Cb, k, kw]; the output
          // padding must stay below the stride or dilation.
          add({2, g * cs, 5, 7}, {g * cs, cb, k, kw}, q.p > k - 1 ? 0 : q.p,
              q.s > 1 || q.d > 1 ? 1 : 0, true, cs % 2 == 1);
        }
  // The reported case: a 4x4 kernel, 3 output channels per group, 2 groups.
  v.push_back({{2, 4, 9, 8}, {6, 2, 4, 4}, {1}, {1}, {1}, {0}, 2});
  v.push_back({{2, 4, 9, 8}, {6, 2, 4, 4}, {1}, {1}, {1}, {0}, 2, false, false});
  return v;
}

TEST_F(ConvolutionTest, SweepOfSmallShapesMatchesOracle) {
  int64_t n_cases = 0, n_bad = 0;
  uint64_t seed = 500;
  for (DType t : {DType::Float64, DType::Float32}) {
    for (const Conv& c : sweep_cases()) {
      SCOPED_TRACE(name_of(c) + " " + std::string(dtype_name(t)));
      const Operands o = operands(c, t, false, seed++);
      ++n_cases;
      n_bad += count_mismatches(run_convolution(c, o), out_sizes(c),
                                ref_forward(c, o.xv, o.wv, o.bv), rtol_of(t), atol_of(t)) > 0;
    }
  }
  EXPECT_EQ(n_bad, 0) << "of " << n_cases << " cases";
}

TEST_F(ConvolutionTest, SweepOfSmallShapesBackwardMatchesAdjointOracle) {
  int64_t n_cases = 0, n_bad = 0;
  uint64_t seed = 900;
  for (DType t : {DType::Float64, DType::Float32}) {
    const double rtol = rtol_of(t) * 3, atol = atol_of(t) * 5;
    for (const Conv& c : sweep_cases()) {
      SCOPED_TRACE(name_of(c) + " " + std::string(dtype_name(t)));
      const Operands o = operands(c, t, /*strided=*/seed % 2 == 1, seed);
      const Sizes os = out_sizes(c);
      const Tensor go = make_tensor(random_values(numel_of(os), seed + 7), os, t);
      ++seed;
      Values gi, gw, gb;
      ref_backward(c, o.xv, o.wv, to_doubles(go), &gi, &gw, &gb);
      const auto [tgi, tgw, tgb] = convolution_backward(
          go, o.x, o.w, std::optional<IntArrayRef>(Sizes{geo_of(c).Cout}), c.stride, c.padding,
          c.dilation, c.transposed, c.output_padding, c.groups, {true, true, true});
      ++n_cases;
      const int64_t bad = count_mismatches(tgi, c.in, gi, rtol, atol) +
                          count_mismatches(tgw, c.w, gw, rtol, atol) +
                          count_mismatches(tgb, {geo_of(c).Cout}, gb, rtol, atol);
      n_bad += bad > 0;
    }
  }
  EXPECT_EQ(n_bad, 0) << "of " << n_cases << " cases";
}

// ---- errors ----

// Note [Result sizes that overflow]: huge paddings, dilations and strides wrapped in int64, or
// gave sizes that empty, not the convolution, refused.
TEST_F(ConvolutionTest, SizesPastInt64NameTheOp) {
  const Tensor x = make_tensor(Values(4, 1.0), {1, 1, 2, 2});
  const Tensor w1 = make_tensor({1}, {1, 1, 1, 1}), w3 = make_tensor(Values(9, 1.0), {1, 1, 3, 3});
  constexpr int64_t k61 = int64_t{1} << 61, k62 = int64_t{1} << 62;
  EXPECT_EQ(message_of([&] { conv2d(x, w1, std::nullopt, 1, k61); }),
            "conv2d: the result size overflows int64 (the number of elements of sizes [1, 1, "
            "4611686018427387906, 4611686018427387906])");
  EXPECT_EQ(message_of([&] { conv2d(x, w1, std::nullopt, 1, k62); }),
            "conv2d: the padded input size overflows int64 (spatial dimension 0: 2 + 2 * "
            "4611686018427387904)");
  EXPECT_EQ(message_of([&] { conv2d(x, w3, std::nullopt, 1, 0, k62); }),
            "conv2d: the dilated kernel size overflows int64 (spatial dimension 0: "
            "4611686018427387904 * (3 - 1) + 1)");
  const Tensor x3 = make_tensor(Values(9, 1.0), {1, 1, 3, 3});
  EXPECT_EQ(message_of([&] { conv_transpose2d(x3, w1, std::nullopt, k62); }),
            "conv_transpose2d: the result size overflows int64 (the output size of spatial "
            "dimension 0 from input 3, kernel 1, stride 4611686018427387904, padding 0, dilation "
            "1)");
  EXPECT_EQ(
      message_of([&] {
        conv1d(make_tensor({1, 2}, {1, 1, 2}), make_tensor({1}, {1, 1, 1}), std::nullopt, 1, k62);
      }),
      "conv1d: the padded input size overflows int64 (spatial dimension 0: 2 + 2 * "
      "4611686018427387904)");
  // A huge stride that fits is a one-element output, as in PyTorch.
  EXPECT_EQ(sizes_str(conv2d(x, w1, std::nullopt, std::numeric_limits<int64_t>::max()).sizes()),
            "[1, 1, 1, 1]");
}

TEST_F(ConvolutionTest, ErrorsUsePyTorchWording) {
  const auto t = [](Sizes s, DType d = DType::Float32) {
    return make_tensor(Values(static_cast<size_t>(numel_of(s)), 1.0), s, d);
  };
  auto msg = [](auto&& f) { return message_of(f); };
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 4, 5, 5}), t({8, 3, 3, 3}));
                       }),
                       "Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 4, 5, 5] "
                       "to have 3 channels, but got 4 channels instead"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({4, 5, 5}), t({8, 3, 3, 3}));
                       }),
                       "expected input[1, 4, 5, 5] to have 3 channels"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 3, 2, 2}), t({8, 3, 3, 3}));
                       }),
                       "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). "
                       "Kernel size can't be greater than actual input size"));
  EXPECT_TRUE(contains(msg([&] {
                         conv1d(t({1, 3, 4}), t({8, 3, 3}), std::nullopt, 1, 0, 2);
                       }),
                       "Calculated padded input size per channel: (4). Kernel size: (5)."));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 3, 5, 5}), t({8, 3, 3, 3}), std::nullopt, 2, "same");
                       }),
                       "padding='same' is not supported for strided convolutions"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 3, 5, 5}), t({8, 3, 3, 3}), std::nullopt, 1, "full");
                       }),
                       "Invalid padding string: 'full'"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({5, 5}), t({8, 3, 3, 3}));
                       }),
                       "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of "
                       "size: [5, 5]"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 3, 5, 5}), t({8, 3, 3, 3}), std::nullopt, {1, 1, 1});
                       }),
                       "expected stride to be a single integer value or a list of 2 values to "
                       "match the convolution dimensions, but got stride=[1, 1, 1]"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 4, 5, 5}), t({3, 2, 3, 3}), std::nullopt, 1, 0, 1, 2);
                       }),
                       "Given groups=2, expected weight to be divisible by 2 at dimension 0, but "
                       "got weight of size [[3, 2, 3, 3]] instead"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 3, 5, 5}), t({8, 3, 3, 3}), t({4}));
                       }),
                       "Given weight of size [8, 3, 3, 3], expected bias to be 1-dimensional with "
                       "8 elements, but got bias of size [4] instead"));
  EXPECT_TRUE(
      contains(msg([&] {
                 conv_transpose2d(t({1, 3, 5, 5}), t({4, 2, 3, 3}));
               }),
               "Given transposed=1, weight of size [4, 2, 3, 3], expected input[1, 3, 5, 5] "
               "to have 4 channels, but got 3 channels instead"));
  EXPECT_TRUE(contains(msg([&] {
                         conv_transpose2d(t({1, 4, 5, 5}), t({4, 2, 3, 3}), std::nullopt, 1, 0, 1);
                       }),
                       "output padding must be smaller than either stride or dilation, but got "
                       "output_padding_height: 1 output_padding_width: 1 stride_height: 1 "
                       "stride_width: 1 dilation_height: 1 dilation_width: 1"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 3, 5, 5}), t({8, 3, 3, 3}), std::nullopt, 1, -1);
                       }),
                       "negative padding is not supported"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 3, 5, 5}), t({8, 3, 3, 3}), std::nullopt, 0);
                       }),
                       "non-positive stride is not supported"));
  EXPECT_TRUE(contains(msg([&] {
                         conv2d(t({1, 3, 5, 5}), t({8, 3, 3, 3}), std::nullopt, 1, 0, 1, 0);
                       }),
                       "non-positive groups is not supported"));
  EXPECT_TRUE(contains(
      msg([&] {
        convolution(t({1, 3, 5, 5}), t({8, 3, 3}), std::nullopt, {1}, {0}, {1}, false, {0}, 1);
      }),
      "Expected 3-dimensional input for 3-dimensional weight [8, 3, 3], but got "
      "4-dimensional input of size [1, 3, 5, 5] instead"));
  EXPECT_TRUE(contains(
      msg([&] {
        convolution(t({1, 3, 5, 5}), t({8, 3}), std::nullopt, {1}, {0}, {1}, false, {0}, 1);
      }),
      "weight should have at least three dimensions"));
  EXPECT_TRUE(
      contains(message_of<TypeError>([&] {
                 conv2d(t({1, 3, 5, 5}, DType::Float64), t({8, 3, 3, 3}));
               }),
               "Input type (CPUDoubleType) and weight type (CPUFloatType) should be the same"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         conv2d(t({1, 3, 5, 5}), t({8, 3, 3, 3}), t({8}, DType::Float64));
                       }),
                       "Input type (float) and bias type (double) should be the same"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         conv2d(t({1, 3, 5, 5}, DType::Int64), t({8, 3, 3, 3}, DType::Int64));
                       }),
                       "\"slow_conv2d_cpu\" not implemented for 'Long'"));
  EXPECT_TRUE(contains(msg([&] {
                         convolution_backward(t({1, 8, 3, 3}), t({1, 3, 5, 5}), t({8, 3, 3, 3}),
                                              std::nullopt, {1}, {0}, {1}, false, {1}, 1,
                                              {true, true, true});
                       }),
                       "output_padding is not supported for non-transposed convolutions; got: "
                       "[1, 1]"));
  EXPECT_TRUE(contains(msg([&] {
                         convolution_backward(t({1, 8, 4, 3}), t({1, 3, 5, 5}), t({8, 3, 3, 3}),
                                              std::nullopt, {1}, {0}, {1}, false, {0}, 1,
                                              {true, true, true});
                       }),
                       "expected grad_output of size [1, 8, 3, 3]"));
  // The op the user called names the error.
  EXPECT_TRUE(contains(msg([&] { conv2d(t({1, 4, 5, 5}), t({8, 3, 3, 3})); }), "conv2d: "));
}

}  // namespace
}  // namespace loom::testing
