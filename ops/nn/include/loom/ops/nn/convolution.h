#pragma once
/// @file
/// Convolution operators of the nn pack: the general convolution (plain or transposed, with
/// groups), conv1d/conv2d (with explicit padding or padding "valid"/"same"),
/// conv_transpose1d/2d and convolution_backward. Shapes, defaults and errors follow
/// PyTorch's: a list argument of one value applies to every spatial dim, conv1d/conv2d and
/// the transposed forms also take unbatched [C, L] / [C, H, W] inputs.

#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "loom/ops/op_handle.h"

namespace loom {

/// The general convolution: input [N, C_in, *], weight [C_out, C_in/groups, *k] (transposed:
/// [C_in, C_out/groups, *k]), bias [C_out] or none; output_padding is used only when
/// transposed.
inline Tensor convolution(const Tensor& input, const Tensor& weight,
                          const std::optional<Tensor>& bias, IntArrayRef stride,
                          IntArrayRef padding, IntArrayRef dilation, bool transposed,
                          IntArrayRef output_padding, int64_t groups) {
  LOOM_TYPED_OP(op, "aten::convolution",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       IntArrayRef, IntArrayRef, bool, IntArrayRef, int64_t));
  return op(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
}

/// The gradients of convolution(input, weight, bias, ...) given grad_output, as
/// (grad_input, grad_weight, grad_bias); an entry whose output_mask is false is undefined.
/// bias_sizes is the bias's sizes (or none); the kernels do not need it.
inline std::tuple<Tensor, Tensor, Tensor> convolution_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    std::optional<IntArrayRef> bias_sizes, IntArrayRef stride, IntArrayRef padding,
    IntArrayRef dilation, bool transposed, IntArrayRef output_padding, int64_t groups,
    const std::vector<bool>& output_mask) {
  LOOM_TYPED_OP(op, "aten::convolution_backward",
                std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                   std::optional<IntArrayRef>, IntArrayRef,
                                                   IntArrayRef, IntArrayRef, bool, IntArrayRef,
                                                   int64_t, const std::vector<bool>&));
  return op(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
            output_padding, groups, output_mask);
}

/// 1-d convolution of input [N, C_in, L] or [C_in, L] with weight [C_out, C_in/groups, k].
inline Tensor conv1d(const Tensor& input, const Tensor& weight,
                     const std::optional<Tensor>& bias = std::nullopt, IntArrayRef stride = 1,
                     IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1) {
  LOOM_TYPED_OP(op, "aten::conv1d",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       IntArrayRef, IntArrayRef, int64_t));
  return op(input, weight, bias, stride, padding, dilation, groups);
}

/// 2-d convolution of input [N, C_in, H, W] or [C_in, H, W] with weight
/// [C_out, C_in/groups, kH, kW].
inline Tensor conv2d(const Tensor& input, const Tensor& weight,
                     const std::optional<Tensor>& bias = std::nullopt, IntArrayRef stride = 1,
                     IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1) {
  LOOM_TYPED_OP(op, "aten::conv2d",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       IntArrayRef, IntArrayRef, int64_t));
  return op(input, weight, bias, stride, padding, dilation, groups);
}

/// @cond INTERNAL
namespace detail {
/// A padding mode argument: anything a string_view is made from, but not a braced list, so
/// conv2d(x, w, b, 1, {0, 0}) still means explicit padding.
template <typename P>
inline constexpr bool kIsPaddingMode =
    std::is_convertible_v<const P&, std::string_view> && !std::is_arithmetic_v<P>;
}  // namespace detail
/// @endcond

/// conv1d with padding "valid" (none) or "same" (output as long as the input; stride 1
/// only; an odd total padding puts the extra element on the right) (conv1d.padding).
template <typename P, std::enable_if_t<detail::kIsPaddingMode<P>, int> = 0>
inline Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                     IntArrayRef stride, const P& padding, IntArrayRef dilation = 1,
                     int64_t groups = 1) {
  LOOM_TYPED_OP(op, "aten::conv1d.padding",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       std::string_view, IntArrayRef, int64_t));
  return op(input, weight, bias, stride, std::string_view(padding), dilation, groups);
}

/// conv2d with padding "valid" or "same" (conv2d.padding); see the conv1d form.
template <typename P, std::enable_if_t<detail::kIsPaddingMode<P>, int> = 0>
inline Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                     IntArrayRef stride, const P& padding, IntArrayRef dilation = 1,
                     int64_t groups = 1) {
  LOOM_TYPED_OP(op, "aten::conv2d.padding",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       std::string_view, IntArrayRef, int64_t));
  return op(input, weight, bias, stride, std::string_view(padding), dilation, groups);
}

/// 1-d transposed convolution of input [N, C_in, L] or [C_in, L] with weight
/// [C_in, C_out/groups, k]: output length (L-1)*stride - 2*padding + dilation*(k-1) +
/// output_padding + 1.
inline Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                               const std::optional<Tensor>& bias = std::nullopt,
                               IntArrayRef stride = 1, IntArrayRef padding = 0,
                               IntArrayRef output_padding = 0, int64_t groups = 1,
                               IntArrayRef dilation = 1) {
  LOOM_TYPED_OP(op, "aten::conv_transpose1d",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       IntArrayRef, IntArrayRef, int64_t, IntArrayRef));
  return op(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

/// 2-d transposed convolution of input [N, C_in, H, W] or [C_in, H, W] with weight
/// [C_in, C_out/groups, kH, kW] (conv_transpose2d.input).
inline Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                               const std::optional<Tensor>& bias = std::nullopt,
                               IntArrayRef stride = 1, IntArrayRef padding = 0,
                               IntArrayRef output_padding = 0, int64_t groups = 1,
                               IntArrayRef dilation = 1) {
  LOOM_TYPED_OP(op, "aten::conv_transpose2d.input",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       IntArrayRef, IntArrayRef, int64_t, IntArrayRef));
  return op(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

}  // namespace loom
