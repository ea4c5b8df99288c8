// CUDA kernels of the 2-d pooling ops on the own kernels of libs/pooling.cu: max_pool2d (with
// indices, dilation, ceil_mode) and its backward ops, avg_pool2d and its backward,
// adaptive_avg_pool2d / _adaptive_avg_pool2d and its backward, adaptive_max_pool2d and its
// backward, and the 1-d forms max_pool1d, avg_pool1d, adaptive_avg_pool1d and
// adaptive_max_pool1d (as 2-d with a unit height). cuDNN's pooling returns no
// indices, so max pooling is our own to match the reference's index semantics (h * W + w
// within a plane). Checks and messages follow the reference CPU kernels
// (ops/nn/cpu/pooling.cpp). Inputs may be strided; backward inputs are made contiguous.
// float32, float64, float16 and bfloat16 (the CPU also takes integers for max and average
// pooling; CUDA refuses them with a TypeError).
#include <algorithm>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "libs/common.h"
#include "libs/kernels.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"

namespace loom::cuda::libs {
namespace {

// ---- geometry and checks (the reference's) ----

int64_t div_rtn(int64_t x, int64_t y) {
  int64_t q = x / y;
  const int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) --q;
  return q;
}

int64_t pooling_output_shape(std::string_view op, int64_t in, int64_t k, int64_t pad,
                             int64_t stride, int64_t dilation, bool ceil_mode) {
  LOOM_CHECK(stride != 0, op, ": stride should not be zero");
  LOOM_CHECK(pad >= 0, op, ": pad must be non-negative, but got pad: ", pad);
  LOOM_CHECK(pad <= ((k - 1) * dilation + 1) / 2, op,
             ": pad should be at most half of effective kernel size, but got pad=", pad,
             ", kernel_size=", k, " and dilation=", dilation);
  int64_t out =
      div_rtn(in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

struct Pool2d {
  int64_t kH, kW, sH, sW, pH, pW, dH = 1, dW = 1;
  bool ceil_mode = false;
};

Pool2d parse_pool2d(std::string_view op, IntArrayRef kernel, IntArrayRef stride,
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

void pool2d_shape_check(std::string_view op, const Tensor& input, const Pool2d& p, int64_t oH,
                        int64_t oW) {
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

void check_dim_size(std::string_view op, const Tensor& t, std::string_view name, int64_t dim,
                    int64_t d, int64_t size) {
  LOOM_CHECK(t.dim() == dim && t.size(d) == size, op, ": Expected a tensor of dimension ", dim,
             " and tensor.size[", d, "] == ", size, " but got: dimension ", t.dim(),
             " and tensor.size[", d, "] = ", t.dim() > d ? t.size(d) : -1, " (", name, ")");
}

void check_same_batch(std::string_view op, const Tensor& input, const Tensor& t,
                      std::string_view name) {
  if (input.dim() != 4 || t.dim() != 4) return;
  LOOM_CHECK(t.size(0) == input.size(0), op, ": expected ", name, " to have batch size ",
             input.size(0), " as the input ", input.describe(), " has, but got ", t.describe());
}

std::vector<int64_t> pooled_sizes(const Tensor& t, int64_t oH, int64_t oW) {
  std::vector<int64_t> s(t.sizes().begin(), t.sizes().end() - 2);
  s.push_back(oH);
  s.push_back(oW);
  return s;
}

/// The kernels' geometry of input t (3-d or 4-d, any strides) pooled to oH x oW.
PoolGeometry geometry_of(const Tensor& t, int64_t oH, int64_t oW, const Pool2d* p) {
  PoolGeometry g;
  const bool batched = t.dim() == 4;
  g.C = t.size(-3);
  g.planes = (batched ? t.size(0) : 1) * g.C;
  g.H = t.size(-2);
  g.W = t.size(-1);
  g.sn = batched ? t.stride(0) : 0;
  g.sc = t.stride(-3);
  g.sh = t.stride(-2);
  g.sw = t.stride(-1);
  g.oH = oH;
  g.oW = oW;
  if (p != nullptr) {
    g.kH = p->kH;
    g.kW = p->kW;
    g.sH = p->sH;
    g.sW = p->sW;
    g.pH = p->pH;
    g.pW = p->pW;
    g.dH = p->dH;
    g.dW = p->dW;
  }
  return g;
}

Tensor unsqueeze_h(const Tensor& t) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  const int64_t d = t.dim() - 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, t.stride(d) * std::max<int64_t>(t.size(d), 1));
  return t.as_strided_view(sizes, strides, t.storage_offset());
}

Tensor squeeze_h(const Tensor& t) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  const int64_t d = t.dim() - 2;
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return t.as_strided_view(sizes, strides, t.storage_offset());
}

// ---- max pooling ----

std::pair<int64_t, int64_t> check_max_pool2d(std::string_view op, const Tensor& input,
                                             const Pool2d& p) {
  LOOM_CHECK(input.dim() == 3 || input.dim() == 4, op,
             ": non-empty 3D or 4D (batch mode) tensor expected for input, but got ",
             input.describe());
  const int64_t H = input.size(-2), W = input.size(-1);
  const int64_t oH = pooling_output_shape(op, H, p.kH, p.pH, p.sH, p.dH, p.ceil_mode);
  const int64_t oW = pooling_output_shape(op, W, p.kW, p.pW, p.sW, p.dW, p.ceil_mode);
  pool2d_shape_check(op, input, p, oH, oW);
  return {oH, oW};
}

std::tuple<Tensor, Tensor> max_pool2d_impl(std::string_view op, const Tensor& self, const Pool2d& p,
                                           bool with_indices) {
  check_cuda_tensors(op, {{"self", self}});
  check_float_dtype(op, "self", self);
  const auto [oH, oW] = check_max_pool2d(op, self, p);
  const std::vector<int64_t> sizes = pooled_sizes(self, oH, oW);
  OpGuard g(op, self);
  Tensor out = new_on(self, sizes, self.dtype());
  Tensor idx = with_indices ? new_on(self, sizes, DType::Int64) : Tensor();
  if (out.numel() == 0) return {out, idx};
  launch_max_pool2d(kind_of(self.dtype()), ptr(self), geometry_of(self, oH, oW, &p), ptr(out),
                    with_indices ? static_cast<int64_t*>(ptr(idx)) : nullptr, g.stream());
  check_launch(op);
  return {out, idx};
}

Tensor max_pool2d_backward_impl(std::string_view op, const Tensor& grad_output, const Tensor& self,
                                const Pool2d& p, const Tensor& indices) {
  check_cuda_tensors(op, {{"grad_output", grad_output}, {"self", self}, {"indices", indices}});
  LOOM_CHECK_T(TypeError, self.dtype() == grad_output.dtype(), op, ": expected dtype ",
               dtype_name(self.dtype()), " for `gradOutput` but got dtype ",
               dtype_name(grad_output.dtype()));
  LOOM_CHECK_T(TypeError, indices.dtype() == DType::Int64, op,
               ": expected indices of dtype int64, but got ", indices.describe());
  check_float_dtype(op, "self", self);
  const auto [oH, oW] = check_max_pool2d(op, self, p);
  const int64_t nd = self.dim(), C = self.size(-3);
  check_dim_size(op, grad_output, "grad_output", nd, nd - 3, C);
  check_dim_size(op, grad_output, "grad_output", nd, nd - 2, oH);
  check_dim_size(op, grad_output, "grad_output", nd, nd - 1, oW);
  check_dim_size(op, indices, "indices", nd, nd - 3, C);
  check_dim_size(op, indices, "indices", nd, nd - 2, oH);
  check_dim_size(op, indices, "indices", nd, nd - 1, oW);
  check_same_batch(op, self, grad_output, "grad_output");
  check_same_batch(op, self, indices, "indices");
  OpGuard g(op, self);
  Tensor gi = new_on(self, self.sizes(), self.dtype());
  if (gi.numel() == 0) return gi;
  const Tensor go = dense(grad_output), ix = dense(indices);
  launch_max_pool2d_backward(kind_of(self.dtype()), ptr(go), static_cast<const int64_t*>(ptr(ix)),
                             geometry_of(self, oH, oW, &p), ptr(gi), g.stream());
  check_launch(op);
  return gi;
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const Pool2d p = parse_pool2d("max_pool2d", kernel_size, stride, padding, &dilation, ceil_mode);
  return max_pool2d_impl("max_pool2d_with_indices", self, p, true);
}

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const Pool2d p = parse_pool2d("max_pool2d", kernel_size, stride, padding, &dilation, ceil_mode);
  return std::get<0>(max_pool2d_impl("max_pool2d", self, p, false));
}

Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices) {
  constexpr std::string_view op = "max_pool2d_with_indices_backward";
  const Pool2d p = parse_pool2d(op, kernel_size, stride, padding, &dilation, ceil_mode);
  return max_pool2d_backward_impl(op, grad_output, self, p, indices);
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           bool ceil_mode) {
  constexpr std::string_view op = "max_pool2d_backward";
  const Pool2d p = parse_pool2d(op, kernel_size, stride, padding, &dilation, ceil_mode);
  const Tensor indices = std::get<1>(max_pool2d_impl(op, self, p, true));
  return max_pool2d_backward_impl(op, grad_output, self, p, indices);
}

// ---- 1-d forms ----

void check_1d_input(std::string_view op, const Tensor& self) {
  check_cuda_tensors(op, {{"self", self}});
  LOOM_CHECK(self.dim() >= 2 && self.dim() < 4, op, ": Expected 2 to 3 dimensions, but got ",
             self.dim(),
             "-dimensional tensor for argument #1 'self' (while checking arguments for ", op, ")");
}

void check1d(std::string_view op, std::string_view arg, IntArrayRef v) {
  LOOM_CHECK(v.size() == 1, op, "() argument '", arg, "' should contain one int (got ", v.size(),
             ")");
}

/// A 1-d pooling's parameters as 2-d with a unit height.
Pool2d lift_1d(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, int64_t dilation,
               bool ceil_mode) {
  Pool2d p;
  p.kH = 1;
  p.kW = kernel[0];
  p.sH = 1;
  p.sW = stride[0];
  p.pH = 0;
  p.pW = padding[0];
  p.dH = 1;
  p.dW = dilation;
  p.ceil_mode = ceil_mode;
  return p;
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  constexpr std::string_view op = "max_pool1d";
  if (stride.empty()) stride = kernel_size;
  check_1d_input(op, self);
  check1d(op, "kernel_size", kernel_size);
  check1d(op, "stride", stride);
  check1d(op, "padding", padding);
  check1d(op, "dilation", dilation);
  const Pool2d p = lift_1d(kernel_size, stride, padding, dilation[0], ceil_mode);
  auto [out, idx] = max_pool2d_impl("max_pool1d_with_indices", unsqueeze_h(self), p, true);
  return {squeeze_h(out), squeeze_h(idx)};
}

Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  constexpr std::string_view op = "max_pool1d";
  if (stride.empty()) stride = kernel_size;
  check_1d_input(op, self);
  check1d(op, "kernel_size", kernel_size);
  check1d(op, "stride", stride);
  check1d(op, "padding", padding);
  check1d(op, "dilation", dilation);
  const Pool2d p = lift_1d(kernel_size, stride, padding, dilation[0], ceil_mode);
  return squeeze_h(std::get<0>(max_pool2d_impl(op, unsqueeze_h(self), p, false)));
}

// ---- average pooling ----

std::pair<int64_t, int64_t> check_avg_pool2d(std::string_view op, const Tensor& input,
                                             const Pool2d& p,
                                             std::optional<int64_t> divisor_override) {
  LOOM_CHECK(!divisor_override || *divisor_override != 0, op, ": divisor must be not zero");
  LOOM_CHECK(input.dim() == 3 || input.dim() == 4, op,
             ": non-empty 3D or 4D (batch mode) tensor expected for input, but got ",
             input.describe());
  const int64_t H = input.size(-2), W = input.size(-1);
  const int64_t oH = pooling_output_shape(op, H, p.kH, p.pH, p.sH, 1, p.ceil_mode);
  const int64_t oW = pooling_output_shape(op, W, p.kW, p.pW, p.sW, 1, p.ceil_mode);
  pool2d_shape_check(op, input, p, oH, oW);
  return {oH, oW};
}

Tensor avg_pool2d_impl(std::string_view op, const Tensor& self, const Pool2d& p,
                       bool count_include_pad, std::optional<int64_t> divisor_override) {
  check_cuda_tensors(op, {{"self", self}});
  check_float_dtype(op, "self", self);
  const auto [oH, oW] = check_avg_pool2d(op, self, p, divisor_override);
  OpGuard g(op, self);
  Tensor out = new_on(self, pooled_sizes(self, oH, oW), self.dtype());
  if (out.numel() == 0) return out;
  launch_avg_pool2d(kind_of(self.dtype()), ptr(self), geometry_of(self, oH, oW, &p),
                    count_include_pad, divisor_override.value_or(0), ptr(out), g.stream());
  check_launch(op);
  return out;
}

Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const Pool2d p = parse_pool2d("avg_pool2d", kernel_size, stride, padding, nullptr, ceil_mode);
  return avg_pool2d_impl("avg_pool2d", self, p, count_include_pad, divisor_override);
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr std::string_view op = "avg_pool2d_backward";
  check_cuda_tensors(op, {{"grad_output", grad_output}, {"self", self}});
  const Pool2d p = parse_pool2d(op, kernel_size, stride, padding, nullptr, ceil_mode);
  const auto [oH, oW] = check_avg_pool2d(op, self, p, divisor_override);
  LOOM_CHECK_T(TypeError, self.dtype() == grad_output.dtype(), op, ": expected dtype ",
               dtype_name(self.dtype()), " for `gradOutput` but got dtype ",
               dtype_name(grad_output.dtype()));
  check_float_dtype(op, "self", self);
  const int64_t nd = self.dim();
  check_dim_size(op, grad_output, "grad_output", nd, nd - 3, self.size(-3));
  check_dim_size(op, grad_output, "grad_output", nd, nd - 2, oH);
  check_dim_size(op, grad_output, "grad_output", nd, nd - 1, oW);
  check_same_batch(op, self, grad_output, "grad_output");
  OpGuard g(op, self);
  Tensor gi = new_on(self, self.sizes(), self.dtype());
  if (gi.numel() == 0) return gi;
  const Tensor go = dense(grad_output);
  launch_avg_pool2d_backward(kind_of(self.dtype()), ptr(go), geometry_of(self, oH, oW, &p),
                             count_include_pad, divisor_override.value_or(0), ptr(gi), g.stream());
  check_launch(op);
  return gi;
}

Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  constexpr std::string_view op = "avg_pool1d";
  if (stride.empty()) stride = kernel_size;
  check_1d_input(op, self);
  check1d(op, "kernel_size", kernel_size);
  check1d(op, "stride", stride);
  check1d(op, "padding", padding);
  const Pool2d p = lift_1d(kernel_size, stride, padding, 1, ceil_mode);
  return squeeze_h(avg_pool2d_impl(op, unsqueeze_h(self), p, count_include_pad, std::nullopt));
}

// ---- adaptive average pooling ----

void check_adaptive_avg(const Tensor& input, IntArrayRef output_size) {
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

Tensor adaptive_avg_impl(std::string_view op, const Tensor& self, IntArrayRef output_size) {
  check_cuda_tensors(op, {{"self", self}});
  check_adaptive_avg(self, output_size);
  check_float_dtype(op, "self", self);
  const int64_t oH = output_size[0], oW = output_size[1];
  OpGuard g(op, self);
  Tensor out = new_on(self, pooled_sizes(self, oH, oW), self.dtype());
  if (out.numel() == 0) return out;
  launch_adaptive_avg_pool2d(kind_of(self.dtype()), ptr(self), geometry_of(self, oH, oW, nullptr),
                             ptr(out), g.stream());
  check_launch(op);
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  return adaptive_avg_impl("adaptive_avg_pool2d", self, output_size);
}

Tensor adaptive_avg_pool2d_internal(const Tensor& self, IntArrayRef output_size) {
  return adaptive_avg_impl("_adaptive_avg_pool2d", self, output_size);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  constexpr std::string_view op = "_adaptive_avg_pool2d_backward";
  check_cuda_tensors(op, {{"grad_output", grad_output}, {"self", self}});
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
  LOOM_CHECK_T(TypeError, self.dtype() == grad_output.dtype(), op, ": expected dtype ",
               dtype_name(self.dtype()), " for `grad_output` but got dtype ",
               dtype_name(grad_output.dtype()));
  LOOM_CHECK(self.dim() == ndim && self.size(-3) == grad_output.size(-3) &&
                 (ndim == 3 || self.size(0) == grad_output.size(0)),
             op, ": expected grad_output ", grad_output.describe(),
             " to have the batch and channel sizes of the input ", self.describe());
  check_float_dtype(op, "self", self);
  OpGuard g(op, self);
  Tensor gi = new_on(self, self.sizes(), self.dtype());
  if (gi.numel() == 0) return gi;
  const Tensor go = dense(grad_output);
  launch_adaptive_avg_pool2d_backward(kind_of(self.dtype()), ptr(go),
                                      geometry_of(self, go.size(-2), go.size(-1), nullptr), ptr(gi),
                                      g.stream());
  check_launch(op);
  return gi;
}

Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size) {
  constexpr std::string_view op = "adaptive_avg_pool1d";
  check_1d_input(op, self);
  check1d(op, "output_size", output_size);
  const int64_t sizes[2] = {1, output_size[0]};
  return squeeze_h(adaptive_avg_impl(op, unsqueeze_h(self), IntArrayRef(sizes, 2)));
}

// ---- adaptive max pooling ----

std::tuple<Tensor, Tensor> adaptive_max_impl(std::string_view op, const Tensor& self,
                                             IntArrayRef output_size) {
  check_cuda_tensors(op, {{"self", self}});
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
  check_float_dtype(op, "self", self);
  const int64_t oH = output_size[0], oW = output_size[1];
  const std::vector<int64_t> sizes = pooled_sizes(self, oH, oW);
  OpGuard g(op, self);
  Tensor out = new_on(self, sizes, self.dtype());
  Tensor idx = new_on(self, sizes, DType::Int64);
  if (out.numel() == 0) return {out, idx};
  launch_adaptive_max_pool2d(kind_of(self.dtype()), ptr(self), geometry_of(self, oH, oW, nullptr),
                             ptr(out), static_cast<int64_t*>(ptr(idx)), g.stream());
  check_launch(op);
  return {out, idx};
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  return adaptive_max_impl("adaptive_max_pool2d", self, output_size);
}

Tensor adaptive_max_pool2d_backward(const Tensor& grad_output, const Tensor& self,
                                    const Tensor& indices) {
  constexpr std::string_view op = "adaptive_max_pool2d_backward";
  check_cuda_tensors(op, {{"grad_output", grad_output}, {"self", self}, {"indices", indices}});
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
  LOOM_CHECK_T(TypeError, self.dtype() == grad_output.dtype(), op, ": expected dtype ",
               dtype_name(self.dtype()), " for `grad_output` but got dtype ",
               dtype_name(grad_output.dtype()));
  LOOM_CHECK_T(TypeError, indices.dtype() == DType::Int64, op,
               ": expected indices of dtype int64, but got ", indices.describe());
  LOOM_CHECK(indices.sizes() == grad_output.sizes(), op, ": expected indices ", indices.describe(),
             " to have the sizes of grad_output ", grad_output.describe());
  LOOM_CHECK(self.dim() == ndim && self.size(-3) == grad_output.size(-3) &&
                 (ndim == 3 || self.size(0) == grad_output.size(0)),
             op, ": expected grad_output ", grad_output.describe(),
             " to have the batch and channel sizes of the input ", self.describe());
  check_float_dtype(op, "self", self);
  OpGuard g(op, self);
  Tensor gi = new_on(self, self.sizes(), self.dtype());
  if (gi.numel() == 0) return gi;
  const Tensor go = dense(grad_output), ix = dense(indices);
  launch_adaptive_max_pool2d_backward(kind_of(self.dtype()), ptr(go),
                                      static_cast<const int64_t*>(ptr(ix)),
                                      geometry_of(self, go.size(-2), go.size(-1), nullptr), ptr(gi),
                                      g.stream());
  check_launch(op);
  return gi;
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& self, IntArrayRef output_size) {
  constexpr std::string_view op = "adaptive_max_pool1d";
  check_1d_input(op, self);
  check1d(op, "output_size", output_size);
  for (int64_t i = 1; i < self.dim(); ++i) {
    LOOM_CHECK(self.size(i) > 0, op,
               "(): Expected input to have non-zero size for non-batch dimensions, but input has "
               "sizes ",
               sizes_str(self.sizes()), " with dimension ", i, " being empty");
  }
  const int64_t sizes[2] = {1, output_size[0]};
  auto [out, idx] = adaptive_max_impl(op, unsqueeze_h(self), IntArrayRef(sizes, 2));
  return {squeeze_h(out), squeeze_h(idx)};
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("max_pool2d", &max_pool2d);
  m.impl("max_pool2d_with_indices", &max_pool2d_with_indices);
  m.impl("max_pool2d_with_indices_backward", &max_pool2d_with_indices_backward);
  m.impl("max_pool2d_backward", &max_pool2d_backward);
  m.impl("max_pool1d", &max_pool1d);
  m.impl("max_pool1d_with_indices", &max_pool1d_with_indices);
  m.impl("avg_pool2d", &avg_pool2d);
  m.impl("avg_pool2d_backward", &avg_pool2d_backward);
  m.impl("avg_pool1d", &avg_pool1d);
  m.impl("adaptive_avg_pool2d", &adaptive_avg_pool2d);
  m.impl("_adaptive_avg_pool2d", &adaptive_avg_pool2d_internal);
  m.impl("_adaptive_avg_pool2d_backward", &adaptive_avg_pool2d_backward);
  m.impl("adaptive_avg_pool1d", &adaptive_avg_pool1d);
  m.impl("adaptive_max_pool2d", &adaptive_max_pool2d);
  m.impl("adaptive_max_pool2d_backward", &adaptive_max_pool2d_backward);
  m.impl("adaptive_max_pool1d", &adaptive_max_pool1d);
}

}  // namespace loom::cuda::libs
