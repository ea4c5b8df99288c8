// Derivative formulas of the convolution family (Note [Derivative kernels] in
// loom/autograd/derivative.h): every form calls convolution_backward, as PyTorch's
// derivatives.yaml does for convolution. conv1d, conv2d and conv_transpose* have kernels of
// their own here (not composites over convolution), so they get formulas too: they bring an
// unbatched input to a batch of one, and padding='same' with an odd total padding (the
// extra element on the right/bottom, which convolution cannot express) differentiates the
// convolution of the input padded by that extra element.
//
// convolution_backward has a formula too (double backward): its three results are linear in
// grad_output and in one of input / weight each, <gI, grad_input> being <conv(gI, w), go>
// and <gW, grad_weight> being <conv(x, gW), go>, so every part is a convolution or a
// convolution_backward again.
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;

/// The geometry of one convolution call.
struct ConvArgs {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

std::vector<int64_t> list(IntArrayRef v) { return {v.begin(), v.end()}; }

/// The gradients (input, weight, bias) of a batched convolution of input and weight.
variable_list conv_grads(BackwardContext& c, const Tensor& grad, const Tensor& input,
                         const Tensor& weight, const ConvArgs& a) {
  const std::vector<bool> mask{c.needs_grad(0), c.needs_grad(1), c.needs_grad(2)};
  std::optional<IntArrayRef> bias_sizes;
  if (mask[2]) bias_sizes = c.input_sizes(2);
  auto [gi, gw, gb] =
      convolution_backward(grad, input, weight, bias_sizes, a.stride, a.padding, a.dilation,
                           a.transposed, a.output_padding, a.groups, mask);
  return {gi, gw, gb};
}

/// conv_grads for conv1d/conv2d/conv_transpose*, whose input may be unbatched (spatial + 1
/// dims): it runs on a batch of one, and the input's gradient loses that dim again.
variable_list conv_nd_grads(BackwardContext& c, int64_t spatial, const ConvArgs& a) {
  Tensor input = c.saved("input");
  Tensor grad = c.grad();
  const bool unbatched = input.dim() == spatial + 1;
  if (unbatched) {
    input = input.unsqueeze(0);
    grad = grad.unsqueeze(0);
  }
  variable_list g = conv_grads(c, grad, input, c.saved("weight"), a);
  if (unbatched && g[0].defined()) g[0] = g[0].squeeze(0);
  return g;
}

ConvArgs plain_args(BackwardContext& c) {
  ConvArgs a;
  a.stride = list(c.ints("stride"));
  a.padding = list(c.ints("padding"));
  a.dilation = list(c.ints("dilation"));
  a.output_padding = {0};
  a.groups = c.integer("groups");
  return a;
}

ConvArgs transposed_args(BackwardContext& c) {
  ConvArgs a = plain_args(c);
  a.output_padding = list(c.ints("output_padding"));
  a.transposed = true;
  return a;
}

/// conv1d.padding / conv2d.padding: 'valid' is no padding; 'same' pads each side by half the
/// dilated kernel extent, the odd element on the right. That element is padded onto the input
/// explicitly (constant_pad_nd) so that convolution_backward sees a symmetric padding; the
/// input's gradient is cropped back.
variable_list conv_mode_grads(BackwardContext& c, int64_t spatial) {
  const std::string mode = c.arg("padding").to_string();
  ConvArgs a;
  a.stride = list(c.ints("stride"));
  a.dilation = list(c.ints("dilation"));
  a.output_padding = {0};
  a.groups = c.integer("groups");
  Tensor input = c.saved("input");
  const Tensor weight = c.saved("weight");
  Tensor grad = c.grad();
  const bool unbatched = input.dim() == spatial + 1;
  if (unbatched) {
    input = input.unsqueeze(0);
    grad = grad.unsqueeze(0);
  }
  std::vector<int64_t> extra_pad;  // constant_pad_nd's order: last dim first
  bool odd = false;
  if (mode == "same") {
    a.padding.assign(static_cast<size_t>(spatial), 0);
    extra_pad.assign(static_cast<size_t>(2 * spatial), 0);
    for (int64_t i = 0; i < spatial; ++i) {
      const int64_t d = a.dilation.size() == 1 ? a.dilation[0] : a.dilation[i];
      const int64_t total = d * (weight.size(i + 2) - 1);
      a.padding[i] = total / 2;
      const int64_t extra = total - 2 * a.padding[i];
      extra_pad[2 * (spatial - 1 - i) + 1] = extra;
      odd = odd || extra != 0;
    }
  } else {
    a.padding = {0};
  }
  if (odd) input = constant_pad_nd(input, extra_pad, 0);
  variable_list g = conv_grads(c, grad, input, weight, a);
  if (g[0].defined()) {
    if (odd) {
      for (int64_t& v : extra_pad) v = -v;
      g[0] = constant_pad_nd(g[0], extra_pad, 0);
    }
    if (unbatched) g[0] = g[0].squeeze(0);
  }
  return g;
}
/// The double backward of convolution_backward(go, x, w): gradients for (go, x, w) given
/// those of (grad_input, grad_weight, grad_bias), any of which may be undefined.
variable_list conv_double_backward(BackwardContext& c) {
  ConvArgs a = plain_args(c);
  a.output_padding = list(c.ints("output_padding"));
  a.transposed = c.flag("transposed");
  const Tensor go = c.saved("grad_output"), x = c.saved("input"), w = c.saved("weight");
  const Tensor& g_input = c.grad(0);
  const Tensor& g_weight = c.grad(1);
  const Tensor& g_bias = c.grad(2);
  auto conv = [&](const Tensor& in, const Tensor& weight, const Tensor& bias) {
    return convolution(in, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt,
                       a.stride, a.padding, a.dilation, a.transposed, a.output_padding, a.groups);
  };
  variable_list g(3);
  if (c.needs_grad(0)) {
    Tensor bias = g_bias;  // added once, by the first convolution
    Tensor ggo;
    if (g_input.defined()) {
      ggo = conv(g_input, w, bias);
      bias = Tensor();
    }
    if (g_weight.defined()) {
      const Tensor t = conv(x, g_weight, bias);
      ggo = ggo.defined() ? ggo + t : t;
      bias = Tensor();
    }
    if (bias.defined()) {
      std::vector<int64_t> shape(static_cast<size_t>(go.dim()), 1);
      shape[1] = bias.numel();
      ggo = bias.view(shape).expand(go.sizes());
    }
    g[0] = ggo;
  }
  auto backward = [&](const Tensor& in, const Tensor& weight, std::vector<bool> mask) {
    return convolution_backward(go, in, weight, std::nullopt, a.stride, a.padding, a.dilation,
                                a.transposed, a.output_padding, a.groups, mask);
  };
  if (c.needs_grad(1) && g_weight.defined()) {
    g[1] = std::get<0>(backward(x, g_weight, {true, false, false}));
  }
  if (c.needs_grad(2) && g_input.defined()) {
    g[2] = std::get<1>(backward(g_input, w, {false, true, false}));
  }
  return g;
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "convolution", {"input", "weight"}, [](BackwardContext& c) -> variable_list {
    ConvArgs a = plain_args(c);
    a.output_padding = list(c.ints("output_padding"));
    a.transposed = c.flag("transposed");
    return conv_grads(c, c.grad(), c.saved("input"), c.saved("weight"), a);
  });
  derivative(m, "conv1d", {"input", "weight"}, [](BackwardContext& c) -> variable_list {
    return conv_nd_grads(c, 1, plain_args(c));
  });
  derivative(m, "conv2d", {"input", "weight"}, [](BackwardContext& c) -> variable_list {
    return conv_nd_grads(c, 2, plain_args(c));
  });
  derivative(m, "conv1d.padding", {"input", "weight"},
             [](BackwardContext& c) -> variable_list { return conv_mode_grads(c, 1); });
  derivative(m, "conv2d.padding", {"input", "weight"},
             [](BackwardContext& c) -> variable_list { return conv_mode_grads(c, 2); });
  derivative(m, "conv_transpose1d", {"input", "weight"}, [](BackwardContext& c) -> variable_list {
    return conv_nd_grads(c, 1, transposed_args(c));
  });
  derivative(
      m, "conv_transpose2d.input", {"input", "weight"},
      [](BackwardContext& c) -> variable_list { return conv_nd_grads(c, 2, transposed_args(c)); });
  derivative(m, "convolution_backward", {"grad_output", "input", "weight"}, conv_double_backward);
}

}  // namespace loom
