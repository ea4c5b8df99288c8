// CUDA kernels of the 2-d pooling ops on the own kernels of libs/pooling.cu: max_pool2d (with
// indices, dilation, ceil_mode) and its backward ops, avg_pool2d and its backward,
// adaptive_avg_pool2d / _adaptive_avg_pool2d and its backward, adaptive_max_pool2d and its
// backward, and the 1-d forms max_pool1d, avg_pool1d, adaptive_avg_pool1d and
// adaptive_max_pool1d (as 2-d with a unit height). cuDNN's pooling returns no
// indices, so max pooling is our own to match the reference's index semantics (h * W + w
// within a plane). Checks and messages are the reference CPU kernels' (ops/nn/cpu/pooling.cpp),
// shared through loom/ops/nn/meta/pooling.h. Inputs may be strided; backward inputs are made
// contiguous.
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
#include "loom/ops/nn/meta/pooling.h"

namespace loom::cuda::libs {
namespace {

// ---- geometry (checks: loom/ops/nn/meta/pooling.h, shared with the reference) ----

using ops::meta::Pool2d;
using ops::meta::pooled_sizes;
using ops::meta::squeeze_h;
using ops::meta::unsqueeze_h;

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

// ---- max pooling ----

std::tuple<Tensor, Tensor> max_pool2d_impl(std::string_view op, const Tensor& self, const Pool2d& p,
                                           bool with_indices) {
  check_cuda_tensors(op, {{"self", self}});
  check_float_dtype(op, "self", self);
  const auto [oH, oW] = ops::meta::check_max_pool2d(op, self, p);
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
  ops::meta::check_grad_dtype(op, self, grad_output, "gradOutput");
  ops::meta::check_indices_dtype(op, indices);
  check_float_dtype(op, "self", self);
  const auto [oH, oW] = ops::meta::check_max_pool2d(op, self, p);
  ops::meta::check_pool2d_grad_shapes(op, grad_output, indices, self, oH, oW);
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
  const Pool2d p =
      ops::meta::parse_pool2d("max_pool2d", kernel_size, stride, padding, &dilation, ceil_mode);
  return max_pool2d_impl("max_pool2d_with_indices", self, p, true);
}

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const Pool2d p =
      ops::meta::parse_pool2d("max_pool2d", kernel_size, stride, padding, &dilation, ceil_mode);
  return std::get<0>(max_pool2d_impl("max_pool2d", self, p, false));
}

Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices) {
  constexpr std::string_view op = "max_pool2d_with_indices_backward";
  const Pool2d p = ops::meta::parse_pool2d(op, kernel_size, stride, padding, &dilation, ceil_mode);
  return max_pool2d_backward_impl(op, grad_output, self, p, indices);
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           bool ceil_mode) {
  constexpr std::string_view op = "max_pool2d_backward";
  const Pool2d p = ops::meta::parse_pool2d(op, kernel_size, stride, padding, &dilation, ceil_mode);
  const Tensor indices = std::get<1>(max_pool2d_impl(op, self, p, true));
  return max_pool2d_backward_impl(op, grad_output, self, p, indices);
}

// ---- 1-d forms ----

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  constexpr std::string_view op = "max_pool1d";
  check_cuda_tensors(op, {{"self", self}});
  const Pool2d p =
      ops::meta::parse_max_pool1d(op, self, kernel_size, stride, padding, dilation, ceil_mode);
  auto [out, idx] = max_pool2d_impl("max_pool1d_with_indices", unsqueeze_h(self), p, true);
  return {squeeze_h(out), squeeze_h(idx)};
}

Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  constexpr std::string_view op = "max_pool1d";
  check_cuda_tensors(op, {{"self", self}});
  const Pool2d p =
      ops::meta::parse_max_pool1d(op, self, kernel_size, stride, padding, dilation, ceil_mode);
  return squeeze_h(std::get<0>(max_pool2d_impl(op, unsqueeze_h(self), p, false)));
}

// ---- average pooling ----

Tensor avg_pool2d_impl(std::string_view op, const Tensor& self, const Pool2d& p,
                       bool count_include_pad, std::optional<int64_t> divisor_override) {
  check_cuda_tensors(op, {{"self", self}});
  check_float_dtype(op, "self", self);
  ops::meta::check_pool2d_rank(op, self);
  const auto [oH, oW] = ops::meta::check_avg_pool2d(op, self, p, divisor_override);
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
  const Pool2d p =
      ops::meta::parse_pool2d("avg_pool2d", kernel_size, stride, padding, nullptr, ceil_mode);
  return avg_pool2d_impl("avg_pool2d", self, p, count_include_pad, divisor_override);
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr std::string_view op = "avg_pool2d_backward";
  check_cuda_tensors(op, {{"grad_output", grad_output}, {"self", self}});
  const Pool2d p = ops::meta::parse_pool2d(op, kernel_size, stride, padding, nullptr, ceil_mode);
  ops::meta::check_pool2d_rank(op, self);
  const auto [oH, oW] = ops::meta::check_avg_pool2d(op, self, p, divisor_override);
  ops::meta::check_grad_dtype(op, self, grad_output, "gradOutput");
  check_float_dtype(op, "self", self);
  ops::meta::check_pool2d_grad_shapes(op, grad_output, Tensor(), self, oH, oW);
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
  check_cuda_tensors(op, {{"self", self}});
  const Pool2d p = ops::meta::parse_avg_pool1d(op, self, kernel_size, stride, padding, ceil_mode);
  return squeeze_h(avg_pool2d_impl(op, unsqueeze_h(self), p, count_include_pad, std::nullopt));
}

// ---- adaptive average pooling ----

Tensor adaptive_avg_impl(std::string_view op, const Tensor& self, IntArrayRef output_size) {
  check_cuda_tensors(op, {{"self", self}});
  ops::meta::check_adaptive_avg_pool2d(self, output_size);
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
  ops::meta::check_adaptive_avg_pool2d_backward(op, grad_output, self);
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
  check_cuda_tensors(op, {{"self", self}});
  ops::meta::check_adaptive_pool1d(op, self, output_size, /*is_max=*/false);
  const int64_t sizes[2] = {1, output_size[0]};
  return squeeze_h(adaptive_avg_impl(op, unsqueeze_h(self), IntArrayRef(sizes, 2)));
}

// ---- adaptive max pooling ----

std::tuple<Tensor, Tensor> adaptive_max_impl(std::string_view op, const Tensor& self,
                                             IntArrayRef output_size) {
  check_cuda_tensors(op, {{"self", self}});
  ops::meta::check_adaptive_max_pool2d(op, self, output_size);
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
  ops::meta::check_adaptive_max_pool2d_backward(op, grad_output, self, indices);
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
  check_cuda_tensors(op, {{"self", self}});
  ops::meta::check_adaptive_pool1d(op, self, output_size, /*is_max=*/true);
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
