#pragma once
/// @file
/// Pointwise operators of the core pack, as PyTorch's C++ API spells them: arithmetic,
/// comparisons, logical and bitwise ops, unary math, activations, copy and fill; plus the
/// operators (`a + b * 2`, `a == b`, `a += 1`). Each function calls its schema through the
/// dispatcher; `_` suffixes are in place (they bump self's version) and `_out` variants take
/// the output first, as at::add_out does.

#include <optional>
#include <string_view>

#include "loom/ops/op_handle.h"

namespace loom {

/// -self
inline Tensor neg(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::neg", Tensor(const Tensor&));
  return op(self);
}
/// In-place neg; returns self.
inline Tensor neg_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::neg_", Tensor(const Tensor&));
  return op(self);
}
/// neg into out; returns out.
inline Tensor neg_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::neg.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// |self|
inline Tensor abs(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::abs", Tensor(const Tensor&));
  return op(self);
}
/// In-place abs; returns self.
inline Tensor abs_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::abs_", Tensor(const Tensor&));
  return op(self);
}
/// abs into out; returns out.
inline Tensor abs_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::abs.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// -1, 0 or 1 by the sign of self (bool: self)
inline Tensor sign(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sign", Tensor(const Tensor&));
  return op(self);
}
/// In-place sign; returns self.
inline Tensor sign_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sign_", Tensor(const Tensor&));
  return op(self);
}
/// sign into out; returns out.
inline Tensor sign_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sign.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// E^self
inline Tensor exp(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::exp", Tensor(const Tensor&));
  return op(self);
}
/// In-place exp; returns self.
inline Tensor exp_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::exp_", Tensor(const Tensor&));
  return op(self);
}
/// exp into out; returns out.
inline Tensor exp_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::exp.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// 2^self
inline Tensor exp2(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::exp2", Tensor(const Tensor&));
  return op(self);
}
/// In-place exp2; returns self.
inline Tensor exp2_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::exp2_", Tensor(const Tensor&));
  return op(self);
}
/// exp2 into out; returns out.
inline Tensor exp2_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::exp2.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Natural logarithm
inline Tensor log(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log", Tensor(const Tensor&));
  return op(self);
}
/// In-place log; returns self.
inline Tensor log_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log_", Tensor(const Tensor&));
  return op(self);
}
/// log into out; returns out.
inline Tensor log_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Base-2 logarithm
inline Tensor log2(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log2", Tensor(const Tensor&));
  return op(self);
}
/// In-place log2; returns self.
inline Tensor log2_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log2_", Tensor(const Tensor&));
  return op(self);
}
/// log2 into out; returns out.
inline Tensor log2_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log2.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Log(1 + self)
inline Tensor log1p(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log1p", Tensor(const Tensor&));
  return op(self);
}
/// In-place log1p; returns self.
inline Tensor log1p_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log1p_", Tensor(const Tensor&));
  return op(self);
}
/// log1p into out; returns out.
inline Tensor log1p_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::log1p.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Exp(self) - 1
inline Tensor expm1(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::expm1", Tensor(const Tensor&));
  return op(self);
}
/// In-place expm1; returns self.
inline Tensor expm1_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::expm1_", Tensor(const Tensor&));
  return op(self);
}
/// expm1 into out; returns out.
inline Tensor expm1_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::expm1.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Square root
inline Tensor sqrt(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sqrt", Tensor(const Tensor&));
  return op(self);
}
/// In-place sqrt; returns self.
inline Tensor sqrt_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sqrt_", Tensor(const Tensor&));
  return op(self);
}
/// sqrt into out; returns out.
inline Tensor sqrt_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sqrt.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// 1 / sqrt(self)
inline Tensor rsqrt(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::rsqrt", Tensor(const Tensor&));
  return op(self);
}
/// In-place rsqrt; returns self.
inline Tensor rsqrt_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::rsqrt_", Tensor(const Tensor&));
  return op(self);
}
/// rsqrt into out; returns out.
inline Tensor rsqrt_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::rsqrt.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// 1 / self
inline Tensor reciprocal(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::reciprocal", Tensor(const Tensor&));
  return op(self);
}
/// In-place reciprocal; returns self.
inline Tensor reciprocal_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::reciprocal_", Tensor(const Tensor&));
  return op(self);
}
/// reciprocal into out; returns out.
inline Tensor reciprocal_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::reciprocal.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Sine
inline Tensor sin(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sin", Tensor(const Tensor&));
  return op(self);
}
/// In-place sin; returns self.
inline Tensor sin_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sin_", Tensor(const Tensor&));
  return op(self);
}
/// sin into out; returns out.
inline Tensor sin_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sin.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Cosine
inline Tensor cos(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::cos", Tensor(const Tensor&));
  return op(self);
}
/// In-place cos; returns self.
inline Tensor cos_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::cos_", Tensor(const Tensor&));
  return op(self);
}
/// cos into out; returns out.
inline Tensor cos_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::cos.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Tangent
inline Tensor tan(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::tan", Tensor(const Tensor&));
  return op(self);
}
/// In-place tan; returns self.
inline Tensor tan_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::tan_", Tensor(const Tensor&));
  return op(self);
}
/// tan into out; returns out.
inline Tensor tan_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::tan.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Hyperbolic tangent
inline Tensor tanh(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::tanh", Tensor(const Tensor&));
  return op(self);
}
/// In-place tanh; returns self.
inline Tensor tanh_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::tanh_", Tensor(const Tensor&));
  return op(self);
}
/// tanh into out; returns out.
inline Tensor tanh_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::tanh.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// 1 / (1 + exp(-self))
inline Tensor sigmoid(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sigmoid", Tensor(const Tensor&));
  return op(self);
}
/// In-place sigmoid; returns self.
inline Tensor sigmoid_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sigmoid_", Tensor(const Tensor&));
  return op(self);
}
/// sigmoid into out; returns out.
inline Tensor sigmoid_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::sigmoid.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Error function
inline Tensor erf(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::erf", Tensor(const Tensor&));
  return op(self);
}
/// In-place erf; returns self.
inline Tensor erf_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::erf_", Tensor(const Tensor&));
  return op(self);
}
/// erf into out; returns out.
inline Tensor erf_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::erf.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Rounds down
inline Tensor floor(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::floor", Tensor(const Tensor&));
  return op(self);
}
/// In-place floor; returns self.
inline Tensor floor_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::floor_", Tensor(const Tensor&));
  return op(self);
}
/// floor into out; returns out.
inline Tensor floor_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::floor.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Rounds up
inline Tensor ceil(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::ceil", Tensor(const Tensor&));
  return op(self);
}
/// In-place ceil; returns self.
inline Tensor ceil_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::ceil_", Tensor(const Tensor&));
  return op(self);
}
/// ceil into out; returns out.
inline Tensor ceil_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::ceil.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Rounds half to even
inline Tensor round(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::round", Tensor(const Tensor&));
  return op(self);
}
/// In-place round; returns self.
inline Tensor round_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::round_", Tensor(const Tensor&));
  return op(self);
}
/// round into out; returns out.
inline Tensor round_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::round.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Rounds toward zero
inline Tensor trunc(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::trunc", Tensor(const Tensor&));
  return op(self);
}
/// In-place trunc; returns self.
inline Tensor trunc_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::trunc_", Tensor(const Tensor&));
  return op(self);
}
/// trunc into out; returns out.
inline Tensor trunc_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::trunc.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Self * sigmoid(self)
inline Tensor silu(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::silu", Tensor(const Tensor&));
  return op(self);
}
/// In-place silu; returns self.
inline Tensor silu_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::silu_", Tensor(const Tensor&));
  return op(self);
}
/// silu into out; returns out.
inline Tensor silu_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::silu.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Self * tanh(softplus(self))
inline Tensor mish(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::mish", Tensor(const Tensor&));
  return op(self);
}
/// In-place mish; returns self.
inline Tensor mish_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::mish_", Tensor(const Tensor&));
  return op(self);
}
/// mish into out; returns out.
inline Tensor mish_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::mish.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Relu6(self + 3) / 6
inline Tensor hardsigmoid(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::hardsigmoid", Tensor(const Tensor&));
  return op(self);
}
/// In-place hardsigmoid; returns self.
inline Tensor hardsigmoid_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::hardsigmoid_", Tensor(const Tensor&));
  return op(self);
}
/// hardsigmoid into out; returns out.
inline Tensor hardsigmoid_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::hardsigmoid.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Self * relu6(self + 3) / 6
inline Tensor hardswish(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::hardswish", Tensor(const Tensor&));
  return op(self);
}
/// In-place hardswish; returns self.
inline Tensor hardswish_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::hardswish_", Tensor(const Tensor&));
  return op(self);
}
/// hardswish into out; returns out.
inline Tensor hardswish_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::hardswish.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// Self == 0, as bool
inline Tensor logical_not(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::logical_not", Tensor(const Tensor&));
  return op(self);
}
/// In-place logical_not; returns self.
inline Tensor logical_not_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::logical_not_", Tensor(const Tensor&));
  return op(self);
}
/// logical_not into out; returns out.
inline Tensor logical_not_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::logical_not.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// ~self (integers and bool)
inline Tensor bitwise_not(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::bitwise_not", Tensor(const Tensor&));
  return op(self);
}
/// In-place bitwise_not; returns self.
inline Tensor bitwise_not_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::bitwise_not_", Tensor(const Tensor&));
  return op(self);
}
/// bitwise_not into out; returns out.
inline Tensor bitwise_not_out(const Tensor& out, const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::bitwise_not.out", Tensor(const Tensor&, const Tensor&));
  return op(self, out);
}
/// max(self, 0)
inline Tensor relu(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::relu", Tensor(const Tensor&));
  return op(self);
}
/// relu's backward: grad_output where self > threshold, else 0 (a NaN self passes it).
inline Tensor threshold_backward(const Tensor& grad_output, const Tensor& self,
                                 const Scalar& threshold) {
  LOOM_TYPED_OP(op, "aten::threshold_backward",
                Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(grad_output, self, threshold);
}
/// In-place relu; returns self.
inline Tensor relu_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::relu_", Tensor(const Tensor&));
  return op(self);
}
/// min(max(self, 0), 6)
inline Tensor relu6(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::relu6", Tensor(const Tensor&));
  return op(self);
}
/// In-place relu6; returns self.
inline Tensor relu6_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::relu6_", Tensor(const Tensor&));
  return op(self);
}
/// scaled elu with PyTorch's constants
inline Tensor selu(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::selu", Tensor(const Tensor&));
  return op(self);
}
/// In-place selu; returns self.
inline Tensor selu_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::selu_", Tensor(const Tensor&));
  return op(self);
}
/// Rounds to `decimals` decimal places (half to even).
inline Tensor round(const Tensor& self, int64_t decimals) {
  LOOM_TYPED_OP(op, "aten::round.decimals", Tensor(const Tensor&, int64_t));
  return op(self, decimals);
}
/// In-place round(self, decimals).
inline Tensor round_(const Tensor& self, int64_t decimals) {
  LOOM_TYPED_OP(op, "aten::round_.decimals", Tensor(const Tensor&, int64_t));
  return op(self, decimals);
}
/// round(self, decimals) into out.
inline Tensor round_out(const Tensor& out, const Tensor& self, int64_t decimals) {
  LOOM_TYPED_OP(op, "aten::round.decimals_out", Tensor(const Tensor&, int64_t, const Tensor&));
  return op(self, decimals, out);
}
/// Clamps to [min, max] (either may be absent, not both).
inline Tensor clamp(const Tensor& self, std::optional<Scalar> min = std::nullopt,
                    std::optional<Scalar> max = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::clamp",
                Tensor(const Tensor&, std::optional<Scalar>, std::optional<Scalar>));
  return op(self, min, max);
}
/// In-place clamp.
inline Tensor clamp_(const Tensor& self, std::optional<Scalar> min = std::nullopt,
                     std::optional<Scalar> max = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::clamp_",
                Tensor(const Tensor&, std::optional<Scalar>, std::optional<Scalar>));
  return op(self, min, max);
}
/// clamp into out.
inline Tensor clamp_out(const Tensor& out, const Tensor& self,
                        std::optional<Scalar> min = std::nullopt,
                        std::optional<Scalar> max = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::clamp.out",
                Tensor(const Tensor&, std::optional<Scalar>, std::optional<Scalar>, const Tensor&));
  return op(self, min, max, out);
}
/// Clamps to tensor bounds (broadcast).
inline Tensor clamp(const Tensor& self, const std::optional<Tensor>& min,
                    const std::optional<Tensor>& max = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::clamp.Tensor",
                Tensor(const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&));
  return op(self, min, max);
}
/// In-place clamp with tensor bounds.
inline Tensor clamp_(const Tensor& self, const std::optional<Tensor>& min,
                     const std::optional<Tensor>& max = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::clamp_.Tensor",
                Tensor(const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&));
  return op(self, min, max);
}
/// clamp with tensor bounds into out.
inline Tensor clamp_out(const Tensor& out, const Tensor& self, const std::optional<Tensor>& min,
                        const std::optional<Tensor>& max = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::clamp.Tensor_out",
                Tensor(const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&,
                       const Tensor&));
  return op(self, min, max, out);
}
/// Replaces NaN (default 0), +inf and -inf (default: the dtype's largest/lowest finite).
inline Tensor nan_to_num(const Tensor& self, std::optional<double> nan = std::nullopt,
                         std::optional<double> posinf = std::nullopt,
                         std::optional<double> neginf = std::nullopt) {
  LOOM_TYPED_OP(
      op, "aten::nan_to_num",
      Tensor(const Tensor&, std::optional<double>, std::optional<double>, std::optional<double>));
  return op(self, nan, posinf, neginf);
}
/// In-place nan_to_num.
inline Tensor nan_to_num_(const Tensor& self, std::optional<double> nan = std::nullopt,
                          std::optional<double> posinf = std::nullopt,
                          std::optional<double> neginf = std::nullopt) {
  LOOM_TYPED_OP(
      op, "aten::nan_to_num_",
      Tensor(const Tensor&, std::optional<double>, std::optional<double>, std::optional<double>));
  return op(self, nan, posinf, neginf);
}
/// nan_to_num into out.
inline Tensor nan_to_num_out(const Tensor& out, const Tensor& self,
                             std::optional<double> nan = std::nullopt,
                             std::optional<double> posinf = std::nullopt,
                             std::optional<double> neginf = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::nan_to_num.out",
                Tensor(const Tensor&, std::optional<double>, std::optional<double>,
                       std::optional<double>, const Tensor&));
  return op(self, nan, posinf, neginf, out);
}
/// self if positive, else negative_slope * self.
inline Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01) {
  LOOM_TYPED_OP(op, "aten::leaky_relu", Tensor(const Tensor&, const Scalar&));
  return op(self, negative_slope);
}
/// In-place leaky_relu.
inline Tensor leaky_relu_(const Tensor& self, const Scalar& negative_slope = 0.01) {
  LOOM_TYPED_OP(op, "aten::leaky_relu_", Tensor(const Tensor&, const Scalar&));
  return op(self, negative_slope);
}
/// leaky_relu into out.
inline Tensor leaky_relu_out(const Tensor& out, const Tensor& self,
                             const Scalar& negative_slope = 0.01) {
  LOOM_TYPED_OP(op, "aten::leaky_relu.out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, negative_slope, out);
}
/// scale * (self if positive, else alpha * (exp(input_scale * self) - 1)).
inline Tensor elu(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1,
                  const Scalar& input_scale = 1) {
  LOOM_TYPED_OP(op, "aten::elu",
                Tensor(const Tensor&, const Scalar&, const Scalar&, const Scalar&));
  return op(self, alpha, scale, input_scale);
}
/// In-place elu.
inline Tensor elu_(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1,
                   const Scalar& input_scale = 1) {
  LOOM_TYPED_OP(op, "aten::elu_",
                Tensor(const Tensor&, const Scalar&, const Scalar&, const Scalar&));
  return op(self, alpha, scale, input_scale);
}
/// elu into out.
inline Tensor elu_out(const Tensor& out, const Tensor& self, const Scalar& alpha = 1,
                      const Scalar& scale = 1, const Scalar& input_scale = 1) {
  LOOM_TYPED_OP(op, "aten::elu.out",
                Tensor(const Tensor&, const Scalar&, const Scalar&, const Scalar&, const Tensor&));
  return op(self, alpha, scale, input_scale, out);
}
/// Gaussian error linear unit; approximate is "none" or "tanh".
inline Tensor gelu(const Tensor& self, std::string_view approximate = "none") {
  LOOM_TYPED_OP(op, "aten::gelu", Tensor(const Tensor&, std::string_view));
  return op(self, approximate);
}
/// In-place gelu.
inline Tensor gelu_(const Tensor& self, std::string_view approximate = "none") {
  LOOM_TYPED_OP(op, "aten::gelu_", Tensor(const Tensor&, std::string_view));
  return op(self, approximate);
}
/// gelu into out.
inline Tensor gelu_out(const Tensor& out, const Tensor& self,
                       std::string_view approximate = "none") {
  LOOM_TYPED_OP(op, "aten::gelu.out", Tensor(const Tensor&, std::string_view, const Tensor&));
  return op(self, approximate, out);
}
/// log(1 + exp(beta * self)) / beta, linear above threshold.
inline Tensor softplus(const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20) {
  LOOM_TYPED_OP(op, "aten::softplus", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op(self, beta, threshold);
}
/// softplus into out.
inline Tensor softplus_out(const Tensor& out, const Tensor& self, const Scalar& beta = 1,
                           const Scalar& threshold = 20) {
  LOOM_TYPED_OP(op, "aten::softplus.out",
                Tensor(const Tensor&, const Scalar&, const Scalar&, const Tensor&));
  return op(self, beta, threshold, out);
}
/// Clamps to [min_val, max_val].
inline Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1) {
  LOOM_TYPED_OP(op, "aten::hardtanh", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op(self, min_val, max_val);
}
/// In-place hardtanh.
inline Tensor hardtanh_(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1) {
  LOOM_TYPED_OP(op, "aten::hardtanh_", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op(self, min_val, max_val);
}
/// hardtanh into out.
inline Tensor hardtanh_out(const Tensor& out, const Tensor& self, const Scalar& min_val = -1,
                           const Scalar& max_val = 1) {
  LOOM_TYPED_OP(op, "aten::hardtanh.out",
                Tensor(const Tensor&, const Scalar&, const Scalar&, const Tensor&));
  return op(self, min_val, max_val, out);
}
/// self + alpha * other (broadcast, promoted).
inline Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::add.Tensor", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, other, alpha);
}
/// In-place add; returns self.
inline Tensor add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::add_.Tensor", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, other, alpha);
}
/// add into out; returns out.
inline Tensor add_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::add.out",
                Tensor(const Tensor&, const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, alpha, out);
}
/// add with a Scalar other (a wrapped number in type promotion).
inline Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::add.Scalar", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op(self, other, alpha);
}
/// In-place add with a Scalar.
inline Tensor add_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::add_.Scalar", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op(self, other, alpha);
}
/// add with a Scalar into out.
inline Tensor add_out(const Tensor& out, const Tensor& self, const Scalar& other,
                      const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::add.Scalar_out",
                Tensor(const Tensor&, const Scalar&, const Scalar&, const Tensor&));
  return op(self, other, alpha, out);
}
/// self - alpha * other.
inline Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::sub.Tensor", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, other, alpha);
}
/// In-place sub; returns self.
inline Tensor sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::sub_.Tensor", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, other, alpha);
}
/// sub into out; returns out.
inline Tensor sub_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::sub.out",
                Tensor(const Tensor&, const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, alpha, out);
}
/// sub with a Scalar other (a wrapped number in type promotion).
inline Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::sub.Scalar", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op(self, other, alpha);
}
/// In-place sub with a Scalar.
inline Tensor sub_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::sub_.Scalar", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op(self, other, alpha);
}
/// sub with a Scalar into out.
inline Tensor sub_out(const Tensor& out, const Tensor& self, const Scalar& other,
                      const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::sub.Scalar_out",
                Tensor(const Tensor&, const Scalar&, const Scalar&, const Tensor&));
  return op(self, other, alpha, out);
}
/// Elementwise product.
inline Tensor mul(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::mul.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place mul; returns self.
inline Tensor mul_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::mul_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// mul into out; returns out.
inline Tensor mul_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::mul.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// mul with a Scalar other (a wrapped number in type promotion).
inline Tensor mul(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::mul.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place mul with a Scalar.
inline Tensor mul_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::mul_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// mul with a Scalar into out.
inline Tensor mul_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::mul.Scalar_out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// True division (integers give float32).
inline Tensor div(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::div.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place div; returns self.
inline Tensor div_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::div_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// div into out; returns out.
inline Tensor div_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::div.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// div with a Scalar other (a wrapped number in type promotion).
inline Tensor div(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::div.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place div with a Scalar.
inline Tensor div_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::div_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// Division with rounding_mode None, "trunc" or "floor".
inline Tensor div(const Tensor& self, const Tensor& other,
                  std::optional<std::string_view> rounding_mode) {
  LOOM_TYPED_OP(op, "aten::div.Tensor_mode",
                Tensor(const Tensor&, const Tensor&, std::optional<std::string_view>));
  return op(self, other, rounding_mode);
}
/// In-place div with rounding_mode.
inline Tensor div_(const Tensor& self, const Tensor& other,
                   std::optional<std::string_view> rounding_mode) {
  LOOM_TYPED_OP(op, "aten::div_.Tensor_mode",
                Tensor(const Tensor&, const Tensor&, std::optional<std::string_view>));
  return op(self, other, rounding_mode);
}
/// div with rounding_mode into out.
inline Tensor div_out(const Tensor& out, const Tensor& self, const Tensor& other,
                      std::optional<std::string_view> rounding_mode) {
  LOOM_TYPED_OP(
      op, "aten::div.out_mode",
      Tensor(const Tensor&, const Tensor&, std::optional<std::string_view>, const Tensor&));
  return op(self, other, rounding_mode, out);
}
/// Division by a Scalar with rounding_mode.
inline Tensor div(const Tensor& self, const Scalar& other,
                  std::optional<std::string_view> rounding_mode) {
  LOOM_TYPED_OP(op, "aten::div.Scalar_mode",
                Tensor(const Tensor&, const Scalar&, std::optional<std::string_view>));
  return op(self, other, rounding_mode);
}
/// In-place division by a Scalar with rounding_mode.
inline Tensor div_(const Tensor& self, const Scalar& other,
                   std::optional<std::string_view> rounding_mode) {
  LOOM_TYPED_OP(op, "aten::div_.Scalar_mode",
                Tensor(const Tensor&, const Scalar&, std::optional<std::string_view>));
  return op(self, other, rounding_mode);
}
/// Python's %: the result has the sign of other.
inline Tensor remainder(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::remainder.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place remainder; returns self.
inline Tensor remainder_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::remainder_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// remainder into out; returns out.
inline Tensor remainder_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::remainder.Tensor_out",
                Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// remainder with a Scalar other (a wrapped number in type promotion).
inline Tensor remainder(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::remainder.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place remainder with a Scalar.
inline Tensor remainder_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::remainder_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// remainder with a Scalar into out.
inline Tensor remainder_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::remainder.Scalar_out",
                Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// C's fmod: the result has the sign of self.
inline Tensor fmod(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::fmod.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place fmod; returns self.
inline Tensor fmod_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::fmod_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// fmod into out; returns out.
inline Tensor fmod_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::fmod.Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// fmod with a Scalar other (a wrapped number in type promotion).
inline Tensor fmod(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::fmod.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place fmod with a Scalar.
inline Tensor fmod_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::fmod_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// fmod with a Scalar into out.
inline Tensor fmod_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::fmod.Scalar_out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// Scalar % tensor (Python semantics).
inline Tensor remainder(const Scalar& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::remainder.Scalar_Tensor", Tensor(const Scalar&, const Tensor&));
  return op(self, other);
}
/// self ** exponent.
inline Tensor pow(const Tensor& self, const Tensor& exponent) {
  LOOM_TYPED_OP(op, "aten::pow.Tensor_Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, exponent);
}
/// pow into out.
inline Tensor pow_out(const Tensor& out, const Tensor& self, const Tensor& exponent) {
  LOOM_TYPED_OP(op, "aten::pow.Tensor_Tensor_out",
                Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, exponent, out);
}
/// In-place pow.
inline Tensor pow_(const Tensor& self, const Tensor& exponent) {
  LOOM_TYPED_OP(op, "aten::pow_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, exponent);
}
/// self ** Scalar.
inline Tensor pow(const Tensor& self, const Scalar& exponent) {
  LOOM_TYPED_OP(op, "aten::pow.Tensor_Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, exponent);
}
/// self ** Scalar into out.
inline Tensor pow_out(const Tensor& out, const Tensor& self, const Scalar& exponent) {
  LOOM_TYPED_OP(op, "aten::pow.Tensor_Scalar_out",
                Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, exponent, out);
}
/// In-place self ** Scalar.
inline Tensor pow_(const Tensor& self, const Scalar& exponent) {
  LOOM_TYPED_OP(op, "aten::pow_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, exponent);
}
/// Scalar ** exponent.
inline Tensor pow(const Scalar& self, const Tensor& exponent) {
  LOOM_TYPED_OP(op, "aten::pow.Scalar", Tensor(const Scalar&, const Tensor&));
  return op(self, exponent);
}
/// Scalar ** exponent into out.
inline Tensor pow_out(const Tensor& out, const Scalar& self, const Tensor& exponent) {
  LOOM_TYPED_OP(op, "aten::pow.Scalar_out", Tensor(const Scalar&, const Tensor&, const Tensor&));
  return op(self, exponent, out);
}
/// Elementwise maximum (NaN propagates).
inline Tensor maximum(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::maximum", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// maximum into out; returns out.
inline Tensor maximum_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::maximum.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// Elementwise minimum (NaN propagates).
inline Tensor minimum(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::minimum", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// minimum into out; returns out.
inline Tensor minimum_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::minimum.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// atan2(self, other), in float for integer inputs.
inline Tensor atan2(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::atan2", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place atan2; returns self.
inline Tensor atan2_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::atan2_", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// atan2 into out; returns out.
inline Tensor atan2_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::atan2.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// self eq other, as bool.
inline Tensor eq(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::eq.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place eq; returns self.
inline Tensor eq_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::eq_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// eq into out; returns out.
inline Tensor eq_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::eq.Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// eq with a Scalar other (a wrapped number in type promotion).
inline Tensor eq(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::eq.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place eq with a Scalar.
inline Tensor eq_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::eq_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// eq with a Scalar into out.
inline Tensor eq_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::eq.Scalar_out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// self ne other, as bool.
inline Tensor ne(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::ne.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place ne; returns self.
inline Tensor ne_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::ne_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// ne into out; returns out.
inline Tensor ne_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::ne.Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// ne with a Scalar other (a wrapped number in type promotion).
inline Tensor ne(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::ne.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place ne with a Scalar.
inline Tensor ne_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::ne_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// ne with a Scalar into out.
inline Tensor ne_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::ne.Scalar_out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// self lt other, as bool.
inline Tensor lt(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::lt.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place lt; returns self.
inline Tensor lt_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::lt_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// lt into out; returns out.
inline Tensor lt_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::lt.Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// lt with a Scalar other (a wrapped number in type promotion).
inline Tensor lt(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::lt.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place lt with a Scalar.
inline Tensor lt_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::lt_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// lt with a Scalar into out.
inline Tensor lt_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::lt.Scalar_out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// self le other, as bool.
inline Tensor le(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::le.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place le; returns self.
inline Tensor le_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::le_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// le into out; returns out.
inline Tensor le_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::le.Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// le with a Scalar other (a wrapped number in type promotion).
inline Tensor le(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::le.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place le with a Scalar.
inline Tensor le_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::le_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// le with a Scalar into out.
inline Tensor le_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::le.Scalar_out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// self gt other, as bool.
inline Tensor gt(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::gt.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place gt; returns self.
inline Tensor gt_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::gt_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// gt into out; returns out.
inline Tensor gt_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::gt.Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// gt with a Scalar other (a wrapped number in type promotion).
inline Tensor gt(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::gt.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place gt with a Scalar.
inline Tensor gt_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::gt_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// gt with a Scalar into out.
inline Tensor gt_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::gt.Scalar_out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// self ge other, as bool.
inline Tensor ge(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::ge.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place ge; returns self.
inline Tensor ge_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::ge_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// ge into out; returns out.
inline Tensor ge_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::ge.Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// ge with a Scalar other (a wrapped number in type promotion).
inline Tensor ge(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::ge.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place ge with a Scalar.
inline Tensor ge_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::ge_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// ge with a Scalar into out.
inline Tensor ge_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::ge.Scalar_out", Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// logical_and, as bool (nonzero is true).
inline Tensor logical_and(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_and", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place logical_and; returns self.
inline Tensor logical_and_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_and_", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// logical_and into out; returns out.
inline Tensor logical_and_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_and.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// logical_or, as bool (nonzero is true).
inline Tensor logical_or(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_or", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place logical_or; returns self.
inline Tensor logical_or_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_or_", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// logical_or into out; returns out.
inline Tensor logical_or_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_or.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// logical_xor, as bool (nonzero is true).
inline Tensor logical_xor(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_xor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place logical_xor; returns self.
inline Tensor logical_xor_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_xor_", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// logical_xor into out; returns out.
inline Tensor logical_xor_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::logical_xor.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// bitwise_and (integers and bool).
inline Tensor bitwise_and(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_and.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place bitwise_and; returns self.
inline Tensor bitwise_and_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_and_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// bitwise_and into out; returns out.
inline Tensor bitwise_and_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_and.Tensor_out",
                Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// bitwise_and with a Scalar other (a wrapped number in type promotion).
inline Tensor bitwise_and(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_and.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place bitwise_and with a Scalar.
inline Tensor bitwise_and_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_and_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// bitwise_and with a Scalar into out.
inline Tensor bitwise_and_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_and.Scalar_out",
                Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// bitwise_or (integers and bool).
inline Tensor bitwise_or(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_or.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place bitwise_or; returns self.
inline Tensor bitwise_or_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_or_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// bitwise_or into out; returns out.
inline Tensor bitwise_or_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_or.Tensor_out",
                Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// bitwise_or with a Scalar other (a wrapped number in type promotion).
inline Tensor bitwise_or(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_or.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place bitwise_or with a Scalar.
inline Tensor bitwise_or_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_or_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// bitwise_or with a Scalar into out.
inline Tensor bitwise_or_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_or.Scalar_out",
                Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// bitwise_xor (integers and bool).
inline Tensor bitwise_xor(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_xor.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// In-place bitwise_xor; returns self.
inline Tensor bitwise_xor_(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_xor_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}
/// bitwise_xor into out; returns out.
inline Tensor bitwise_xor_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_xor.Tensor_out",
                Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, other, out);
}
/// bitwise_xor with a Scalar other (a wrapped number in type promotion).
inline Tensor bitwise_xor(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_xor.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// In-place bitwise_xor with a Scalar.
inline Tensor bitwise_xor_(const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_xor_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, other);
}
/// bitwise_xor with a Scalar into out.
inline Tensor bitwise_xor_out(const Tensor& out, const Tensor& self, const Scalar& other) {
  LOOM_TYPED_OP(op, "aten::bitwise_xor.Scalar_out",
                Tensor(const Tensor&, const Scalar&, const Tensor&));
  return op(self, other, out);
}
/// condition ? self : other (broadcast; condition must be bool).
inline Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::where.self", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(condition, self, other);
}
/// where into out.
inline Tensor where_out(const Tensor& out, const Tensor& condition, const Tensor& self,
                        const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::where.self_out",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&));
  return op(condition, self, other, out);
}
/// self + weight * (end - self).
inline Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
  LOOM_TYPED_OP(op, "aten::lerp.Scalar", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, end, weight);
}
/// In-place lerp.
inline Tensor lerp_(const Tensor& self, const Tensor& end, const Scalar& weight) {
  LOOM_TYPED_OP(op, "aten::lerp_.Scalar", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, end, weight);
}
/// lerp into out.
inline Tensor lerp_out(const Tensor& out, const Tensor& self, const Tensor& end,
                       const Scalar& weight) {
  LOOM_TYPED_OP(op, "aten::lerp.Scalar_out",
                Tensor(const Tensor&, const Tensor&, const Scalar&, const Tensor&));
  return op(self, end, weight, out);
}
/// lerp with a tensor weight.
inline Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight) {
  LOOM_TYPED_OP(op, "aten::lerp.Tensor", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, end, weight);
}
/// In-place lerp with a tensor weight.
inline Tensor lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) {
  LOOM_TYPED_OP(op, "aten::lerp_.Tensor", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, end, weight);
}
/// lerp with a tensor weight into out.
inline Tensor lerp_out(const Tensor& out, const Tensor& self, const Tensor& end,
                       const Tensor& weight) {
  LOOM_TYPED_OP(op, "aten::lerp.Tensor_out",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&));
  return op(self, end, weight, out);
}
/// self + value * tensor1 * tensor2.
inline Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                      const Scalar& value = 1) {
  LOOM_TYPED_OP(op, "aten::addcmul",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&));
  return op(self, tensor1, tensor2, value);
}
/// In-place addcmul.
inline Tensor addcmul_(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                       const Scalar& value = 1) {
  LOOM_TYPED_OP(op, "aten::addcmul_",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&));
  return op(self, tensor1, tensor2, value);
}
/// addcmul into out.
inline Tensor addcmul_out(const Tensor& out, const Tensor& self, const Tensor& tensor1,
                          const Tensor& tensor2, const Scalar& value = 1) {
  LOOM_TYPED_OP(op, "aten::addcmul.out",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Tensor&));
  return op(self, tensor1, tensor2, value, out);
}
/// self + value * tensor1 / tensor2.
inline Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                      const Scalar& value = 1) {
  LOOM_TYPED_OP(op, "aten::addcdiv",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&));
  return op(self, tensor1, tensor2, value);
}
/// In-place addcdiv.
inline Tensor addcdiv_(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                       const Scalar& value = 1) {
  LOOM_TYPED_OP(op, "aten::addcdiv_",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&));
  return op(self, tensor1, tensor2, value);
}
/// addcdiv into out.
inline Tensor addcdiv_out(const Tensor& out, const Tensor& self, const Tensor& tensor1,
                          const Tensor& tensor2, const Scalar& value = 1) {
  LOOM_TYPED_OP(op, "aten::addcdiv.out",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Tensor&));
  return op(self, tensor1, tensor2, value, out);
}
/// Copies src into self (broadcast, converting dtype); returns self.
inline Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking = false) {
  LOOM_TYPED_OP(op, "aten::copy_", Tensor(const Tensor&, const Tensor&, bool));
  return op(self, src, non_blocking);
}
/// A contiguous copy.
inline Tensor clone(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::clone", Tensor(const Tensor&, std::optional<int64_t>));
  return op(self, std::nullopt);
}
/// self if contiguous, else a contiguous copy.
inline Tensor contiguous(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::contiguous", Tensor(const Tensor&, int64_t));
  return op(self, 0);
}
/// self converted to dtype (self itself if it has dtype already, unless copy).
inline Tensor to(const Tensor& self, DType dtype, bool non_blocking = false, bool copy = false) {
  LOOM_TYPED_OP(op, "aten::to.dtype",
                Tensor(const Tensor&, DType, bool, bool, std::optional<int64_t>));
  return op(self, dtype, non_blocking, copy, std::nullopt);
}
/// Fills self with value in place; returns self.
inline Tensor fill_(const Tensor& self, const Scalar& value) {
  LOOM_TYPED_OP(op, "aten::fill_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, value);
}
/// Fills self with the value of a 0-d tensor; returns self.
inline Tensor fill_(const Tensor& self, const Tensor& value) {
  LOOM_TYPED_OP(op, "aten::fill_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, value);
}
/// Fills self with zeros; returns self.
inline Tensor zero_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::zero_", Tensor(const Tensor&));
  return op(self);
}

namespace detail {
/// A 0-d tensor holding s in the dtype PyTorch gives a wrapped number (int64, float32, bool),
/// for `2 - a` and `2 / a`, which have no Scalar-first schema.
inline Tensor scalar_tensor(const Scalar& s) {
  Tensor t = Tensor::empty({}, TensorOptions{}.with(s.dtype()));
  fill_(t, s);
  return t;
}
}  // namespace detail

/// a + b.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
/// a + s.
inline Tensor operator+(const Tensor& a, const Scalar& s) { return add(a, s); }
/// s + a.
inline Tensor operator+(const Scalar& s, const Tensor& a) { return add(a, s); }
/// a - b.
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
/// a - s.
inline Tensor operator-(const Tensor& a, const Scalar& s) { return sub(a, s); }
/// s - a.
inline Tensor operator-(const Scalar& s, const Tensor& a) {
  return sub(detail::scalar_tensor(s), a);
}
/// a * b.
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
/// a * s.
inline Tensor operator*(const Tensor& a, const Scalar& s) { return mul(a, s); }
/// s * a.
inline Tensor operator*(const Scalar& s, const Tensor& a) { return mul(a, s); }
/// a / b (true division).
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
/// a / s.
inline Tensor operator/(const Tensor& a, const Scalar& s) { return div(a, s); }
/// s / a.
inline Tensor operator/(const Scalar& s, const Tensor& a) {
  return div(detail::scalar_tensor(s), a);
}
/// a % b (Python remainder).
inline Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
/// a % s.
inline Tensor operator%(const Tensor& a, const Scalar& s) { return remainder(a, s); }
/// -a.
inline Tensor operator-(const Tensor& a) { return neg(a); }
/// ~a (bitwise not; logical not on bool).
inline Tensor operator~(const Tensor& a) { return bitwise_not(a); }
/// a & b.
inline Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
/// a | b.
inline Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
/// a ^ b.
inline Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }

/// a == b elementwise, as a bool tensor.
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
/// a == s elementwise, as a bool tensor.
inline Tensor operator==(const Tensor& a, const Scalar& s) { return eq(a, s); }
/// a != b elementwise, as a bool tensor.
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
/// a != s elementwise, as a bool tensor.
inline Tensor operator!=(const Tensor& a, const Scalar& s) { return ne(a, s); }
/// a < b elementwise, as a bool tensor.
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
/// a < s elementwise, as a bool tensor.
inline Tensor operator<(const Tensor& a, const Scalar& s) { return lt(a, s); }
/// a <= b elementwise, as a bool tensor.
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
/// a <= s elementwise, as a bool tensor.
inline Tensor operator<=(const Tensor& a, const Scalar& s) { return le(a, s); }
/// a > b elementwise, as a bool tensor.
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
/// a > s elementwise, as a bool tensor.
inline Tensor operator>(const Tensor& a, const Scalar& s) { return gt(a, s); }
/// a >= b elementwise, as a bool tensor.
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
/// a >= s elementwise, as a bool tensor.
inline Tensor operator>=(const Tensor& a, const Scalar& s) { return ge(a, s); }
/// s == a elementwise, as a bool tensor.
inline Tensor operator==(const Scalar& s, const Tensor& a) { return eq(a, s); }
/// s != a elementwise, as a bool tensor.
inline Tensor operator!=(const Scalar& s, const Tensor& a) { return ne(a, s); }
/// s < a elementwise, as a bool tensor.
inline Tensor operator<(const Scalar& s, const Tensor& a) { return gt(a, s); }
/// s <= a elementwise, as a bool tensor.
inline Tensor operator<=(const Scalar& s, const Tensor& a) { return ge(a, s); }
/// s > a elementwise, as a bool tensor.
inline Tensor operator>(const Scalar& s, const Tensor& a) { return lt(a, s); }
/// s >= a elementwise, as a bool tensor.
inline Tensor operator>=(const Scalar& s, const Tensor& a) { return le(a, s); }
/// a += b in place; returns a.
inline const Tensor& operator+=(const Tensor& a, const Tensor& b) {
  add_(a, b);
  return a;
}
/// a += s in place; returns a.
inline const Tensor& operator+=(const Tensor& a, const Scalar& s) {
  add_(a, s);
  return a;
}
/// a -= b in place; returns a.
inline const Tensor& operator-=(const Tensor& a, const Tensor& b) {
  sub_(a, b);
  return a;
}
/// a -= s in place; returns a.
inline const Tensor& operator-=(const Tensor& a, const Scalar& s) {
  sub_(a, s);
  return a;
}
/// a *= b in place; returns a.
inline const Tensor& operator*=(const Tensor& a, const Tensor& b) {
  mul_(a, b);
  return a;
}
/// a *= s in place; returns a.
inline const Tensor& operator*=(const Tensor& a, const Scalar& s) {
  mul_(a, s);
  return a;
}
/// a /= b in place; returns a.
inline const Tensor& operator/=(const Tensor& a, const Tensor& b) {
  div_(a, b);
  return a;
}
/// a /= s in place; returns a.
inline const Tensor& operator/=(const Tensor& a, const Scalar& s) {
  div_(a, s);
  return a;
}

}  // namespace loom
