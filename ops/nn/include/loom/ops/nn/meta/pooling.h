#pragma once
/// @file
/// Argument checks, parameter parsing and output shapes every backend of the pooling ops
/// shares (the reference CPU kernels, the CUDA plugin's), so that error messages are word for
/// word the same on every device. PyTorch's pooling_output_shape, pool2d_shape_check,
/// check_dim_size, the parsing of kernel_size/stride/padding/dilation, and the checks of the
/// adaptive and 1-d forms. Device checks (defined, same device, on CUDA) and dtype checks a
/// backend adds stay with each kernel, which calls these after its own first line.

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/ops/nn/meta/convolution.h"

namespace loom::ops::meta {

// ---- geometry ----

/// Rounds x / y towards negative infinity (PyTorch's div_rtn).
inline int64_t div_rtn(int64_t x, int64_t y) {
  int64_t q = x / y;
  const int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) --q;
  return q;
}

/// The output length of pooling_output_shape's formula, computed in 128 bits since int64
/// arguments near their limits overflow it (Note [Result sizes that overflow]); nullopt when the
/// length does not fit int64. The arguments must pass pooling_output_shape's checks; a backend
/// that declines malformed calls (oneDNN) calls this after its own.
inline std::optional<int64_t> pooling_output_length(int64_t in, int64_t k, int64_t pad,
                                                    int64_t stride, int64_t dilation,
                                                    bool ceil_mode) {
  using Wide = __int128;
  const Wide extent = Wide{dilation} * (k - 1) + 1;
  const Wide num = Wide{in} + Wide{2} * pad - extent + (ceil_mode ? Wide{stride} - 1 : Wide{0});
  // Rounded towards negative infinity, as div_rtn.
  Wide out = num / stride;
  if (num % stride != 0 && ((num % stride < 0) != (stride < 0))) --out;
  ++out;
  // The last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * stride >= Wide{in} + pad) --out;
  if (out > std::numeric_limits<int64_t>::max() || out < std::numeric_limits<int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<int64_t>(out);
}

/// PyTorch's pooling_output_shape, with its checks: the output length of a window of k
/// (dilated by `dilation`) over `in` with padding `pad` on each side. A kernel size that is not
/// positive is refused first, by name (PyTorch's padding check would misreport it), and the
/// padding check computes the dilated kernel without wrapping.
inline int64_t pooling_output_shape(std::string_view op, int64_t in, int64_t k, int64_t pad,
                                    int64_t stride, int64_t dilation, bool ceil_mode) {
  LOOM_CHECK(k > 0, op, ": kernel_size must be greater than zero, but got ", k);
  LOOM_CHECK(stride != 0, op, ": stride should not be zero");
  LOOM_CHECK(pad >= 0, op, ": pad must be non-negative, but got pad: ", pad);
  LOOM_CHECK(pad <= (__int128{dilation} * (k - 1) + 1) / 2, op,
             ": pad should be at most half of effective kernel size, but got pad=", pad,
             ", kernel_size=", k, " and dilation=", dilation);
  const std::optional<int64_t> out = pooling_output_length(in, k, pad, stride, dilation, ceil_mode);
  if (!out) {
    throw_result_size_overflow(op, "the output size from input ", in, ", kernel ", k, ", stride ",
                               stride, ", padding ", pad, ", dilation ", dilation);
  }
  return *out;
}

/// Parameters of a 2-d max or average pooling.
struct Pool2d {
  int64_t kH;              ///< kernel height
  int64_t kW;              ///< kernel width
  int64_t sH;              ///< stride along the height
  int64_t sW;              ///< stride along the width
  int64_t pH;              ///< padding of the top and the bottom
  int64_t pW;              ///< padding of the left and the right
  int64_t dH = 1;          ///< dilation along the height
  int64_t dW = 1;          ///< dilation along the width
  bool ceil_mode = false;  ///< the output length rounds up
};

/// Reads kernel_size, stride (empty: the kernel), padding and, for max pooling, dilation
/// (nullptr: none), each one int or two, with PyTorch's messages.
inline Pool2d parse_pool2d(std::string_view op, IntArrayRef kernel, IntArrayRef stride,
                           IntArrayRef padding, const IntArrayRef* dilation, bool ceil_mode) {
  Pool2d p;
  LOOM_CHECK(kernel.size() == 1 || kernel.size() == 2, op,
             ": kernel_size must either be a single int, or a tuple of two ints");
  p.kH = kernel[0];
  p.kW = kernel.size() == 1 ? p.kH : kernel[1];
  LOOM_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 2, op,
             ": stride must either be omitted, a single int, or a tuple of two ints");
  p.sH = stride.empty() ? p.kH : stride[0];
  p.sW = stride.empty() ? p.kW : (stride.size() == 1 ? p.sH : stride[1]);
  LOOM_CHECK(padding.size() == 1 || padding.size() == 2, op,
             ": padding must either be a single int, or a tuple of two ints");
  p.pH = padding[0];
  p.pW = padding.size() == 1 ? p.pH : padding[1];
  if (dilation) {
    LOOM_CHECK(dilation->size() == 1 || dilation->size() == 2, op,
               ": dilation must be either a single int, or a tuple of two ints");
    p.dH = (*dilation)[0];
    p.dW = dilation->size() == 1 ? p.dH : (*dilation)[1];
  }
  p.ceil_mode = ceil_mode;
  return p;
}

/// PyTorch's pool2d_shape_check of a 3-d or 4-d input pooled to oH x oW.
inline void pool2d_shape_check(std::string_view op, const Tensor& input, const Pool2d& p,
                               int64_t oH, int64_t oW) {
  const int64_t ndim = input.dim();
  LOOM_CHECK(p.kW > 0 && p.kH > 0, op,
             ": kernel size should be greater than zero, but got kH: ", p.kH, " kW: ", p.kW);
  LOOM_CHECK(p.sW > 0 && p.sH > 0, op, ": stride should be greater than zero, but got dH: ", p.sH,
             " dW: ", p.sW);
  LOOM_CHECK(p.dH > 0 && p.dW > 0, op,
             ": dilation should be greater than zero, but got dilationH: ", p.dH,
             " dilationW: ", p.dW);
  const bool valid_dims = input.size(1) != 0 && input.size(2) != 0;
  LOOM_CHECK((ndim == 3 && input.size(0) != 0 && valid_dims) ||
                 (ndim == 4 && valid_dims && input.size(3) != 0),
             op,
             ": Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
             "but got:",
             sizes_str(input.sizes()));
  LOOM_CHECK(p.kW / 2 >= p.pW && p.kH / 2 >= p.pH, op,
             ": pad should be smaller than or equal to half of kernel size, but got padW = ", p.pW,
             ", padH = ", p.pH, ", kW = ", p.kW, ", kH = ", p.kH);
  const int64_t C = input.size(-3), H = input.size(-2), W = input.size(-1);
  LOOM_CHECK(oW >= 1 && oH >= 1, op, ": Given input size: (", C, "x", H, "x", W,
             "). Calculated output size: (", C, "x", oH, "x", oW, "). Output size is too small");
}

/// PyTorch's check_dim_size: t has `dim` dims and size `size` at dim d (`name` names t).
inline void check_dim_size(std::string_view op, const Tensor& t, std::string_view name, int64_t dim,
                           int64_t d, int64_t size) {
  LOOM_CHECK(t.dim() == dim && t.size(d) == size, op, ": Expected a tensor of dimension ", dim,
             " and tensor.size[", d, "] == ", size, " but got: dimension ", t.dim(),
             " and tensor.size[", d, "] = ", t.dim() > d ? t.size(d) : -1, " (", name, ")");
}

/// The leading (batch) dim of a 4-d t (grad_output, indices) must match the input's, so no
/// plane is read outside the tensors (PyTorch leaves it unchecked).
inline void check_same_batch(std::string_view op, const Tensor& input, const Tensor& t,
                             std::string_view name) {
  if (input.dim() != 4 || t.dim() != 4) return;
  LOOM_CHECK(t.size(0) == input.size(0), op, ": expected ", name, " to have batch size ",
             input.size(0), " as the input ", input.describe(), " has, but got ", t.describe());
}

/// The sizes of a pooled tensor: t's leading dims, then oH, oW.
inline std::vector<int64_t> pooled_sizes(const Tensor& t, int64_t oH, int64_t oW) {
  std::vector<int64_t> s(t.sizes().begin(), t.sizes().end() - 2);
  s.push_back(oH);
  s.push_back(oW);
  return s;
}

/// A view of t with a size-1 dim inserted before its last dim (unsqueeze(-2)): a 1-d
/// pooling's input as 2-d.
inline Tensor unsqueeze_h(const Tensor& t) { return unsqueeze_view(t, t.dim() - 1); }

/// A view of t without its size-1 dim -2 (squeeze(-2)): the inverse of unsqueeze_h.
inline Tensor squeeze_h(const Tensor& t) { return squeeze_view(t, t.dim() - 2); }

// ---- max and average pooling ----

/// The rank check of max_pool2d (and of CUDA's avg_pool2d): a 3-d or 4-d input.
inline void check_pool2d_rank(std::string_view op, const Tensor& input) {
  LOOM_CHECK(input.dim() == 3 || input.dim() == 4, op,
             ": non-empty 3D or 4D (batch mode) tensor expected for input, but got ",
             input.describe());
}

/// max_pool2d's checks; returns the output size {oH, oW}.
inline std::pair<int64_t, int64_t> check_max_pool2d(std::string_view op, const Tensor& input,
                                                    const Pool2d& p) {
  check_pool2d_rank(op, input);
  const int64_t H = input.size(-2), W = input.size(-1);
  const int64_t oH = pooling_output_shape(op, H, p.kH, p.pH, p.sH, p.dH, p.ceil_mode);
  const int64_t oW = pooling_output_shape(op, W, p.kW, p.pW, p.sW, p.dW, p.ceil_mode);
  pool2d_shape_check(op, input, p, oH, oW);
  return {oH, oW};
}

/// avg_pool2d's parameter checks (the input's rank is the caller's); returns {oH, oW}.
inline std::pair<int64_t, int64_t> check_avg_pool2d(std::string_view op, const Tensor& input,
                                                    const Pool2d& p,
                                                    std::optional<int64_t> divisor_override) {
  LOOM_CHECK(!divisor_override || *divisor_override != 0, op, ": divisor must be not zero");
  // Dim -3 is read first: the reference takes a 2-d input to PyTorch's IndexError naming it.
  [[maybe_unused]] const int64_t C = input.size(-3);
  const int64_t H = input.size(-2), W = input.size(-1);
  const int64_t oH = pooling_output_shape(op, H, p.kH, p.pH, p.sH, 1, p.ceil_mode);
  const int64_t oW = pooling_output_shape(op, W, p.kW, p.pW, p.sW, 1, p.ceil_mode);
  pool2d_shape_check(op, input, p, oH, oW);
  return {oH, oW};
}

/// A backward op's check that grad_output has self's dtype; `name` is how the message names
/// grad_output (PyTorch says `gradOutput` for max/avg pooling, `grad_output` for adaptive).
inline void check_grad_dtype(std::string_view op, const Tensor& self, const Tensor& grad_output,
                             std::string_view name) {
  LOOM_CHECK_T(TypeError, self.dtype() == grad_output.dtype(), op, ": expected dtype ",
               dtype_name(self.dtype()), " for `", name, "` but got dtype ",
               dtype_name(grad_output.dtype()));
}

/// A max pooling backward's check that indices are int64.
inline void check_indices_dtype(std::string_view op, const Tensor& indices) {
  LOOM_CHECK_T(TypeError, indices.dtype() == DType::Int64, op,
               ": expected indices of dtype int64, but got ", indices.describe());
}

/// avg_pool2d_backward's (and, with indices, max_pool2d backward's) check that grad_output
/// and indices (undefined: none) have the output's sizes {.., C, oH, oW} and self's batch.
inline void check_pool2d_grad_shapes(std::string_view op, const Tensor& grad_output,
                                     const Tensor& indices, const Tensor& self, int64_t oH,
                                     int64_t oW) {
  const int64_t nd = self.dim(), C = self.size(-3);
  check_dim_size(op, grad_output, "grad_output", nd, nd - 3, C);
  check_dim_size(op, grad_output, "grad_output", nd, nd - 2, oH);
  check_dim_size(op, grad_output, "grad_output", nd, nd - 1, oW);
  if (indices.defined()) {
    check_dim_size(op, indices, "indices", nd, nd - 3, C);
    check_dim_size(op, indices, "indices", nd, nd - 2, oH);
    check_dim_size(op, indices, "indices", nd, nd - 1, oW);
  }
  check_same_batch(op, self, grad_output, "grad_output");
  if (indices.defined()) check_same_batch(op, self, indices, "indices");
}

// ---- 1-d forms ----

/// PyTorch's checkDimRange for the 1-d ops: a 2-d or 3-d input (after the caller's device
/// check).
inline void check_1d_input_rank(std::string_view op, const Tensor& self) {
  LOOM_CHECK(self.dim() >= 2 && self.dim() < 4, op, ": Expected 2 to 3 dimensions, but got ",
             self.dim(),
             "-dimensional tensor for argument #1 'self' (while checking arguments for ", op, ")");
}

/// PyTorch's check1d: "max_pool1d() argument 'stride' should contain one int (got 2)".
inline void check1d(std::string_view op, std::string_view arg, IntArrayRef v) {
  LOOM_CHECK(v.size() == 1, op, "() argument '", arg, "' should contain one int (got ", v.size(),
             ")");
}

/// The 2-d parameters of a 1-d pooling: a 1 x k window over [.., 1, L]; an empty stride is
/// the kernel.
inline Pool2d lift_1d(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, int64_t dilation,
                      bool ceil_mode) {
  Pool2d p;
  p.kH = 1;
  p.kW = kernel[0];
  p.sH = 1;
  p.sW = stride.empty() ? kernel[0] : stride[0];
  p.pH = 0;
  p.pW = padding[0];
  p.dH = 1;
  p.dW = dilation;
  p.ceil_mode = ceil_mode;
  return p;
}

/// max_pool1d_with_indices' checks of self's rank and of its parameters (one int each; an
/// empty stride is the kernel), as 2-d parameters.
inline Pool2d parse_max_pool1d(std::string_view op, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                               bool ceil_mode) {
  if (stride.empty()) stride = kernel_size;
  check_1d_input_rank(op, self);
  check1d(op, "kernel_size", kernel_size);
  check1d(op, "stride", stride);
  check1d(op, "padding", padding);
  check1d(op, "dilation", dilation);
  return lift_1d(kernel_size, stride, padding, dilation[0], ceil_mode);
}

/// avg_pool1d's checks of self's rank and of its parameters, as 2-d parameters.
inline Pool2d parse_avg_pool1d(std::string_view op, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode) {
  if (stride.empty()) stride = kernel_size;
  check_1d_input_rank(op, self);
  check1d(op, "kernel_size", kernel_size);
  check1d(op, "stride", stride);
  check1d(op, "padding", padding);
  return lift_1d(kernel_size, stride, padding, 1, ceil_mode);
}

/// adaptive_avg_pool1d's and adaptive_max_pool1d's checks of self's rank and output_size;
/// the max form also wants every non-batch dim non-empty.
inline void check_adaptive_pool1d(std::string_view op, const Tensor& self, IntArrayRef output_size,
                                  bool is_max) {
  check_1d_input_rank(op, self);
  check1d(op, "output_size", output_size);
  if (!is_max) return;
  for (int64_t i = 1; i < self.dim(); ++i) {
    LOOM_CHECK(self.size(i) > 0, op,
               "(): Expected input to have non-zero size for non-batch dimensions, but input has "
               "sizes ",
               sizes_str(self.sizes()), " with dimension ", i, " being empty");
  }
}

// ---- adaptive pooling ----

/// _adaptive_avg_pool2d's checks (adaptive_avg_pool2d_out_cpu_template); PyTorch's
/// messages name the function already.
inline void check_adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  LOOM_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  LOOM_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
             "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
             "but received {",
             output_size[0], ", ", output_size[1], "}");
  const int64_t ndim = input.dim();
  LOOM_CHECK(ndim == 3 || ndim == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
             sizes_str(input.sizes()));
  for (int64_t i : {-2, -1}) {
    LOOM_CHECK(input.size(i) > 0,
               "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
               "dimensions, but input has sizes ",
               sizes_str(input.sizes()), " with dimension ", i + ndim, " being empty");
  }
}

/// The check of an adaptive pooling backward that grad_output has self's rank, batch and
/// channels.
inline void check_adaptive_grad_planes(std::string_view op, const Tensor& grad_output,
                                       const Tensor& self) {
  const int64_t ndim = grad_output.dim();
  LOOM_CHECK(self.dim() == ndim && self.size(-3) == grad_output.size(-3) &&
                 (ndim == 3 || self.size(0) == grad_output.size(0)),
             op, ": expected grad_output ", grad_output.describe(),
             " to have the batch and channel sizes of the input ", self.describe());
}

/// _adaptive_avg_pool2d_backward's checks of grad_output and self.
inline void check_adaptive_avg_pool2d_backward(std::string_view op, const Tensor& grad_output,
                                               const Tensor& self) {
  const int64_t ndim = grad_output.dim();
  for (int64_t i = 1; i < ndim; ++i) {
    LOOM_CHECK(grad_output.size(i) > 0,
               "adaptive_avg_pool2d_backward(): Expected grad_output to have non-zero size for "
               "non-batch dimensions, but grad_output has sizes ",
               sizes_str(grad_output.sizes()), " with dimension ", i, " being empty");
  }
  LOOM_CHECK(ndim == 3 || ndim == 4,
             "adaptive_avg_pool2d_backward(): Expected 3D or 4D tensor, but got ",
             sizes_str(self.sizes()));
  check_grad_dtype(op, self, grad_output, "grad_output");
  check_adaptive_grad_planes(op, grad_output, self);
}

/// adaptive_max_pool2d's checks of self and output_size.
inline void check_adaptive_max_pool2d(std::string_view op, const Tensor& self,
                                      IntArrayRef output_size) {
  const int64_t ndim = self.dim();
  LOOM_CHECK(ndim == 3 || ndim == 4,
             "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: ", sizes_str(self.sizes()));
  for (int64_t i = 1; i < ndim; ++i) {
    LOOM_CHECK(self.size(i) > 0,
               "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch "
               "dimensions, but input has sizes ",
               sizes_str(self.sizes()), " with dimension ", i, " being empty");
  }
  LOOM_CHECK(output_size.size() == 2,
             "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
  LOOM_CHECK(output_size[0] >= 0 && output_size[1] >= 0, op,
             ": elements of output_size must be greater than or equal to 0 but received {",
             output_size[0], ", ", output_size[1], "}");
}

/// adaptive_max_pool2d_backward's checks of grad_output, self and indices.
inline void check_adaptive_max_pool2d_backward(std::string_view op, const Tensor& grad_output,
                                               const Tensor& self, const Tensor& indices) {
  const int64_t ndim = grad_output.dim();
  LOOM_CHECK(ndim == 3 || ndim == 4,
             "adaptive_max_pooling2d_backward(): Expected 3D or 4D grad_output, but got: ",
             sizes_str(grad_output.sizes()));
  for (int64_t i = 1; i < ndim; ++i) {
    LOOM_CHECK(grad_output.size(i) > 0,
               "adaptive_max_pool2d_backward(): Expected grad_output to have non-zero size for "
               "non-batch dimensions, but grad_output has sizes ",
               sizes_str(grad_output.sizes()), " with dimension ", i, " being empty");
  }
  check_grad_dtype(op, self, grad_output, "grad_output");
  check_indices_dtype(op, indices);
  LOOM_CHECK(indices.sizes() == grad_output.sizes(), op, ": expected indices ", indices.describe(),
             " to have the sizes of grad_output ", grad_output.describe());
  check_adaptive_grad_planes(op, grad_output, self);
}

}  // namespace loom::ops::meta
