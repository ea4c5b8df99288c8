#pragma once
/// @file
/// Argument checks, parameter parsing and output shapes every backend of the convolution ops
/// shares (the reference CPU kernels, cuDNN's, oneDNN's), so that error messages are word for
/// word the same on every device. PyTorch's ConvParams, check_shape_forward, batchify and
/// the checks of padding='same'. Device checks (defined, same device, on CUDA) and
/// backend-specific dtype checks stay with each kernel, which calls these after its own.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"
#include "loom/ops/meta/result_size.h"

namespace loom::ops::meta {

// ---- views (1-d ops run as 2-d with a unit height) ----

/// A view of t with a size-1 dim inserted at d (0 <= d <= t.dim()).
inline Tensor unsqueeze_view(const Tensor& t, int64_t d) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  const int64_t st = d < t.dim() ? t.stride(d) * std::max<int64_t>(t.size(d), 1) : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  return t.as_strided_view(sizes, strides, t.storage_offset());
}

/// A view of t without its size-1 dim d.
inline Tensor squeeze_view(const Tensor& t, int64_t d) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return t.as_strided_view(sizes, strides, t.storage_offset());
}

// ---- parameters ----

/// PyTorch's ConvParams, expanded to the spatial rank.
struct ConvParams {
  std::vector<int64_t> stride;          ///< per spatial dim
  std::vector<int64_t> padding;         ///< per spatial dim, both sides
  std::vector<int64_t> dilation;        ///< per spatial dim
  std::vector<int64_t> output_padding;  ///< per spatial dim (transposed only)
  std::vector<int64_t> extra;           ///< right/bottom padding beyond `padding` (padding='same')
  bool transposed = false;              ///< a transposed convolution
  int64_t groups = 1;                   ///< the groups
};

/// A parameter of one value or of `dim` values as `dim` values, with PyTorch's message.
inline std::vector<int64_t> expand_param(std::string_view op, IntArrayRef p, std::string_view name,
                                         int64_t dim) {
  if (p.size() == 1) return std::vector<int64_t>(static_cast<size_t>(dim), p[0]);
  LOOM_CHECK(static_cast<int64_t>(p.size()) == dim, op, ": expected ", name,
             " to be a single integer value or a list of ", dim,
             " values to match the convolution dimensions, but got ", name, "=", sizes_str(p));
  return {p.begin(), p.end()};
}

/// The first checks of a convolution's weight and groups: a weight of at least three dims
/// and positive groups. Returns the spatial rank (weight.dim() - 2).
inline int64_t check_weight_and_groups(std::string_view op, const Tensor& weight, int64_t groups) {
  const int64_t k = weight.dim();
  LOOM_CHECK(k > 2, op, ": weight should have at least three dimensions");
  LOOM_CHECK(groups > 0, op, ": non-positive groups is not supported");
  return k - 2;
}

/// Reads stride, padding, dilation and output_padding at spatial rank `dim`; `extra` (empty:
/// zeros) is the right/bottom padding of padding='same'.
inline ConvParams make_params(std::string_view op, int64_t dim, IntArrayRef stride,
                              IntArrayRef padding, IntArrayRef dilation, bool transposed,
                              IntArrayRef output_padding, int64_t groups, IntArrayRef extra = {}) {
  ConvParams p;
  p.stride = expand_param(op, stride, "stride", dim);
  p.padding = expand_param(op, padding, "padding", dim);
  p.dilation = expand_param(op, dilation, "dilation", dim);
  p.output_padding = expand_param(op, output_padding, "output_padding", dim);
  p.extra = extra.empty() ? std::vector<int64_t>(static_cast<size_t>(dim), 0)
                          : std::vector<int64_t>(extra.begin(), extra.end());
  p.transposed = transposed;
  p.groups = groups;
  return p;
}

// ---- sizes (Note [Result sizes that overflow]) ----

/// dilation * (kernel - 1) + 1, the extent of a dilated kernel; nullopt past int64.
inline std::optional<int64_t> try_conv_kernel_extent(int64_t kernel, int64_t dilation) {
  int64_t r = 0;
  if (__builtin_mul_overflow(dilation, kernel - 1, &r) || __builtin_add_overflow(r, 1, &r)) {
    return std::nullopt;
  }
  return r;
}

/// in + 2 * pad + extra, a plain convolution's padded input size; nullopt past int64.
inline std::optional<int64_t> try_conv_padded_input(int64_t in, int64_t pad, int64_t extra) {
  int64_t r = 0;
  if (__builtin_mul_overflow(pad, 2, &r) || __builtin_add_overflow(r, in, &r) ||
      __builtin_add_overflow(r, extra, &r)) {
    return std::nullopt;
  }
  return r;
}

/// A convolution's output size along one spatial dim: (in + 2 * pad + more - extent) / stride + 1
/// for a plain one (more: padding='same''s extra right padding), (in - 1) * stride - 2 * pad +
/// extent + more for a transposed one (more: output_padding), extent being the dilated kernel's.
/// nullopt when a step overflows int64, or a plain convolution's kernel is larger than its padded
/// input: oneDNN declines such a call, and the reference reports it.
inline std::optional<int64_t> try_conv_output_size(int64_t in, int64_t kernel, int64_t stride,
                                                   int64_t pad, int64_t dilation, int64_t more,
                                                   bool transposed) {
  const std::optional<int64_t> extent = try_conv_kernel_extent(kernel, dilation);
  if (!extent) return std::nullopt;
  int64_t r = 0;
  if (!transposed) {
    const std::optional<int64_t> padded = try_conv_padded_input(in, pad, more);
    if (!padded || *padded < *extent) return std::nullopt;
    return (*padded - *extent) / stride + 1;
  }
  if (__builtin_mul_overflow(in - 1, stride, &r) || __builtin_sub_overflow(r, pad, &r) ||
      __builtin_sub_overflow(r, pad, &r) || __builtin_add_overflow(r, *extent, &r) ||
      __builtin_add_overflow(r, more, &r)) {
    return std::nullopt;
  }
  return r;
}

/// try_conv_output_size for spatial dim `dim` of op, after check_shape_forward (the kernel fits):
/// an overflow is refused with a message naming op.
inline int64_t conv_output_size(std::string_view op, int64_t dim, int64_t in, int64_t kernel,
                                int64_t stride, int64_t pad, int64_t dilation, int64_t more,
                                bool transposed) {
  const std::optional<int64_t> r =
      try_conv_output_size(in, kernel, stride, pad, dilation, more, transposed);
  if (!r) {
    throw_result_size_overflow(op, "the output size of spatial dimension ", dim, " from input ", in,
                               ", kernel ", kernel, ", stride ", stride, ", padding ", pad,
                               ", dilation ", dilation);
  }
  return *r;
}

// ---- checks ----

/// PyTorch's check_shape_forward for input, a weight of sizes ws and bias (undefined: none).
/// The sizes in messages include the extra padding of padding='same', as PyTorch pads the
/// input before convolving it.
inline void check_shape_forward(std::string_view op, const Tensor& input, IntArrayRef ws,
                                const Tensor& bias, const ConvParams& p) {
  const int64_t k = input.dim(), weight_dim = static_cast<int64_t>(ws.size());
  const int64_t groups = p.groups;
  const auto any = [](const std::vector<int64_t>& v, auto pred) {
    return std::any_of(v.begin(), v.end(), pred);
  };
  LOOM_CHECK(!any(p.padding, [](int64_t v) { return v < 0; }), op,
             ": negative padding is not supported");
  LOOM_CHECK(!any(p.output_padding, [](int64_t v) { return v < 0; }), op,
             ": negative output_padding is not supported");
  LOOM_CHECK(!any(p.stride, [](int64_t v) { return v <= 0; }), op,
             ": non-positive stride is not supported");
  LOOM_CHECK(!any(p.dilation, [](int64_t v) { return v < 1; }), op,
             ": dilation should be greater than zero");
  LOOM_CHECK(weight_dim == k, op, ": Expected ", weight_dim, "-dimensional input for ", weight_dim,
             "-dimensional weight ", sizes_str(ws), ", but got ", k, "-dimensional input of size ",
             sizes_str(input.sizes()), " instead");
  LOOM_CHECK(ws[0] >= groups, op, ": Given groups=", groups, ", expected weight to be at least ",
             groups, " at dimension 0, but got weight of size ", sizes_str(ws), " instead");
  LOOM_CHECK(ws[0] % groups == 0, op, ": Given groups=", groups,
             ", expected weight to be divisible by ", groups,
             " at dimension 0, but got weight of size [", sizes_str(ws), "] instead");
  std::vector<int64_t> shown(input.sizes().begin(), input.sizes().end());
  for (int64_t i = 2; i < k; ++i) shown[i] += p.extra[i - 2];
  if (!p.transposed) {
    LOOM_CHECK(input.size(1) == ws[1] * groups, op, ": Given groups=", groups, ", weight of size ",
               sizes_str(ws), ", expected input", sizes_str(shown), " to have ", ws[1] * groups,
               " channels, but got ", input.size(1), " channels instead");
    LOOM_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == ws[0]), op,
               ": Given weight of size ", sizes_str(ws),
               ", expected bias to be 1-dimensional with ", ws[0],
               " elements, but got bias of size ", sizes_str(bias.sizes()), " instead");
    std::string in_s, k_s;
    bool fits = true;
    for (int64_t i = 2; i < k; ++i) {
      // Note [Result sizes that overflow]: huge paddings or dilations are refused, not wrapped.
      const std::optional<int64_t> in =
          try_conv_padded_input(input.size(i), p.padding[i - 2], p.extra[i - 2]);
      if (!in) {
        throw_size_overflow(op, "the padded input size", "spatial dimension ", i - 2, ": ",
                            input.size(i), " + 2 * ", p.padding[i - 2]);
      }
      const std::optional<int64_t> ker = try_conv_kernel_extent(ws[i], p.dilation[i - 2]);
      if (!ker) {
        throw_size_overflow(op, "the dilated kernel size", "spatial dimension ", i - 2, ": ",
                            p.dilation[i - 2], " * (", ws[i], " - 1) + 1");
      }
      fits &= *in >= *ker;
      in_s += str_cat(i > 2 ? " x " : "", *in);
      k_s += str_cat(i > 2 ? " x " : "", *ker);
    }
    LOOM_CHECK(fits, op, ": Calculated padded input size per channel: (", in_s, "). Kernel size: (",
               k_s, "). Kernel size can't be greater than actual input size");
  } else {
    LOOM_CHECK(input.size(1) == ws[0], op, ": Given transposed=1, weight of size ", sizes_str(ws),
               ", expected input", sizes_str(shown), " to have ", ws[0], " channels, but got ",
               input.size(1), " channels instead");
    LOOM_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == ws[1] * groups), op,
               ": Given transposed=1, weight of size ", sizes_str(ws),
               ", expected bias to be 1-dimensional with ", ws[1] * groups,
               " elements, but got bias of size ", sizes_str(bias.sizes()), " instead");
  }
}

/// convolution_backward's refusal of output_padding for a plain convolution.
inline void check_no_output_padding(std::string_view op,
                                    const std::vector<int64_t>& output_padding) {
  for (int64_t v : output_padding) {
    LOOM_CHECK(v == 0, op,
               ": output_padding is not supported for non-transposed convolutions; got: ",
               sizes_str(output_padding));
  }
}

/// A transposed convolution's check of output_padding against stride and dilation (2-d;
/// a 1-d one passes its unit height).
inline void check_transposed_output_padding(std::string_view op, int64_t opH, int64_t opW,
                                            int64_t sH, int64_t sW, int64_t dH, int64_t dW) {
  LOOM_CHECK((opW < sW || opW < dW) && (opH < sH || opH < dH), op,
             ": output padding must be smaller than either stride or dilation, but got "
             "output_padding_height: ",
             opH, " output_padding_width: ", opW, " stride_height: ", sH, " stride_width: ", sW,
             " dilation_height: ", dH, " dilation_width: ", dW);
}

/// A transposed convolution's check that its output (oH x oW from H x W) is not empty.
inline void check_transposed_output_size(std::string_view op, int64_t H, int64_t W, int64_t oH,
                                         int64_t oW) {
  LOOM_CHECK(oH >= 1 && oW >= 1, op, ": Given input size per channel: (", H, " x ", W,
             "). Calculated output size per channel: (", oH, " x ", oW,
             "). Output size is too small");
}

/// convolution_backward's check that grad_output has the sizes of the forward's output.
inline void check_grad_output_sizes(std::string_view op, const Tensor& grad_output,
                                    const Tensor& input, const Tensor& weight,
                                    const std::vector<int64_t>& out_sizes) {
  LOOM_CHECK(grad_output.sizes() == IntArrayRef(out_sizes), op, ": expected grad_output of size ",
             sizes_str(out_sizes), " (the output of this convolution of input ",
             sizes_str(input.sizes()), " and weight ", sizes_str(weight.sizes()), "), but got ",
             sizes_str(grad_output.sizes()));
}

/// The output sizes at the op's rank of a convolution brought to 2-d: {N, C, oH, oW}, or
/// {N, C, oW} for a 1-d one.
inline std::vector<int64_t> conv_out_sizes(int64_t N, int64_t C, int64_t oH, int64_t oW,
                                           bool one_d) {
  std::vector<int64_t> s = {N, C};
  if (!one_d) s.push_back(oH);
  s.push_back(oW);
  return s;
}

// ---- conv1d / conv2d ----

/// PyTorch's batchify's check: conv1d/conv2d take a (spatial+1)-d (unbatched) or
/// (spatial+2)-d (batched) input. Returns whether it is batched.
inline bool check_batchify(std::string_view op, const Tensor& input, int64_t spatial) {
  const int64_t unbatched = spatial + 1, batched_dim = spatial + 2;
  const bool batched = input.dim() == batched_dim;
  LOOM_CHECK(input.dim() == unbatched || batched, op, ": Expected ", unbatched, "D (unbatched) or ",
             batched_dim, "D (batched) input to ", op,
             ", but got input of size: ", sizes_str(input.sizes()));
  return batched;
}

/// PyTorch's batchify (after the caller's device check): the input with a batch of one if it
/// is unbatched, and whether it was batched.
inline std::pair<Tensor, bool> batchify(std::string_view op, const Tensor& input, int64_t spatial) {
  const bool batched = check_batchify(op, input, spatial);
  return {batched ? input : unsqueeze_view(input, 0), batched};
}

/// The inverse of batchify for the output.
inline Tensor unbatchify(const Tensor& out, bool batched) {
  return batched ? out : squeeze_view(out, 0);
}

/// padding='same''s checks of stride and dilation at spatial rank `dim` (stride 1 only).
/// Returns the total padding per spatial dim: dilation * (kernel - 1).
inline std::vector<int64_t> same_padding_totals(std::string_view op, const Tensor& weight,
                                                IntArrayRef stride, IntArrayRef dilation) {
  const auto dim = static_cast<size_t>(weight.dim() - 2);
  LOOM_CHECK(stride.size() == dim || stride.size() == 1, op, ": stride cannot broadcast to ", dim,
             " dimensions");
  LOOM_CHECK(dilation.size() == dim || dilation.size() == 1, op, ": dilation cannot broadcast to ",
             dim, " dimensions");
  for (int64_t s : stride) {
    LOOM_CHECK(s == 1, op, ": padding='same' is not supported for strided convolutions");
  }
  std::vector<int64_t> total(dim);
  for (size_t i = 0; i < dim; ++i) {
    const int64_t d = dilation.size() == 1 ? dilation[0] : dilation[i];
    total[i] = d * (weight.size(static_cast<int64_t>(i) + 2) - 1);
  }
  return total;
}

}  // namespace loom::ops::meta
