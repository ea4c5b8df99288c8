#pragma once
/// @file
/// Pooling operators of the nn pack: max pooling (with dilation and indices), average
/// pooling (ceil_mode, count_include_pad, divisor_override), adaptive average and max
/// pooling, their backward ops and the 1-d forms. Inputs are [N, C, H, W] or unbatched
/// [C, H, W] ([N, C, L] or [C, L] for 1-d); an empty stride means the kernel size; a list of
/// one value applies to both dims. Semantics and errors follow PyTorch's, including
/// ceil_mode's rule that the last window must start inside the input or its left padding.

#include <optional>
#include <tuple>

#include "loom/ops/op_handle.h"

namespace loom {

/// 2-d max pooling; stride {} means kernel_size.
inline Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                         IntArrayRef padding = 0, IntArrayRef dilation = 1,
                         bool ceil_mode = false) {
  LOOM_TYPED_OP(op, "aten::max_pool2d",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool));
  return op(self, kernel_size, stride, padding, dilation, ceil_mode);
}

/// 2-d max pooling and the int64 index (h * W + w within its plane) of each maximum.
inline std::tuple<Tensor, Tensor> max_pool2d_with_indices(
    const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
    IntArrayRef dilation = 1, bool ceil_mode = false) {
  LOOM_TYPED_OP(op, "aten::max_pool2d_with_indices",
                std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                           IntArrayRef, bool));
  return op(self, kernel_size, stride, padding, dilation, ceil_mode);
}

/// The gradient of max_pool2d_with_indices: grad_output added at indices, shaped as self.
inline Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                               IntArrayRef kernel_size, IntArrayRef stride,
                                               IntArrayRef padding, IntArrayRef dilation,
                                               bool ceil_mode, const Tensor& indices) {
  LOOM_TYPED_OP(op, "aten::max_pool2d_with_indices_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                       IntArrayRef, bool, const Tensor&));
  return op(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices);
}

/// The gradient of max_pool2d, finding the maxima again (no indices needed).
inline Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& self,
                                  IntArrayRef kernel_size, IntArrayRef stride = {},
                                  IntArrayRef padding = 0, IntArrayRef dilation = 1,
                                  bool ceil_mode = false) {
  LOOM_TYPED_OP(op, "aten::max_pool2d_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                       IntArrayRef, bool));
  return op(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode);
}

/// 1-d max pooling of [N, C, L] or [C, L].
inline Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                         IntArrayRef padding = 0, IntArrayRef dilation = 1,
                         bool ceil_mode = false) {
  LOOM_TYPED_OP(op, "aten::max_pool1d",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool));
  return op(self, kernel_size, stride, padding, dilation, ceil_mode);
}

/// 1-d max pooling and the index (along L) of each maximum.
inline std::tuple<Tensor, Tensor> max_pool1d_with_indices(
    const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
    IntArrayRef dilation = 1, bool ceil_mode = false) {
  LOOM_TYPED_OP(op, "aten::max_pool1d_with_indices",
                std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                           IntArrayRef, bool));
  return op(self, kernel_size, stride, padding, dilation, ceil_mode);
}

/// 2-d average pooling. Each window's divisor is divisor_override if given, else its size
/// counting the padding (count_include_pad) or only the input elements it covers.
inline Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                         IntArrayRef padding = 0, bool ceil_mode = false,
                         bool count_include_pad = true,
                         std::optional<int64_t> divisor_override = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::avg_pool2d",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool,
                       std::optional<int64_t>));
  return op(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

/// The gradient of avg_pool2d, shaped as self.
inline Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self,
                                  IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                  bool ceil_mode, bool count_include_pad,
                                  std::optional<int64_t> divisor_override) {
  LOOM_TYPED_OP(op, "aten::avg_pool2d_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool,
                       bool, std::optional<int64_t>));
  return op(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
            divisor_override);
}

/// 1-d average pooling of [N, C, L] or [C, L].
inline Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                         IntArrayRef padding = 0, bool ceil_mode = false,
                         bool count_include_pad = true) {
  LOOM_TYPED_OP(op, "aten::avg_pool1d",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool));
  return op(self, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

/// Adaptive average pooling to output_size [oH, oW]: bin i of n over L inputs covers
/// [floor(i*L/n), ceil((i+1)*L/n)).
inline Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  LOOM_TYPED_OP(op, "aten::adaptive_avg_pool2d", Tensor(const Tensor&, IntArrayRef));
  return op(self, output_size);
}

/// The kernel adaptive_avg_pool2d calls (no special case for a 1x1 output).
inline Tensor _adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  LOOM_TYPED_OP(op, "aten::_adaptive_avg_pool2d", Tensor(const Tensor&, IntArrayRef));
  return op(self, output_size);
}

/// The gradient of adaptive average pooling, shaped as self (the output size is
/// grad_output's).
inline Tensor _adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::_adaptive_avg_pool2d_backward", Tensor(const Tensor&, const Tensor&));
  return op(grad_output, self);
}

/// 1-d adaptive average pooling of [N, C, L] or [C, L].
inline Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size) {
  LOOM_TYPED_OP(op, "aten::adaptive_avg_pool1d", Tensor(const Tensor&, IntArrayRef));
  return op(self, output_size);
}

/// Adaptive max pooling to output_size, with the index (h * W + w) of each maximum.
inline std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  LOOM_TYPED_OP(op, "aten::adaptive_max_pool2d",
                std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef));
  return op(self, output_size);
}

/// The gradient of adaptive_max_pool2d: grad_output added at indices, shaped as self.
inline Tensor adaptive_max_pool2d_backward(const Tensor& grad_output, const Tensor& self,
                                           const Tensor& indices) {
  LOOM_TYPED_OP(op, "aten::adaptive_max_pool2d_backward",
                Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(grad_output, self, indices);
}

/// 1-d adaptive max pooling of [N, C, L] or [C, L], with indices along L.
inline std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& self, IntArrayRef output_size) {
  LOOM_TYPED_OP(op, "aten::adaptive_max_pool1d",
                std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef));
  return op(self, output_size);
}

}  // namespace loom
