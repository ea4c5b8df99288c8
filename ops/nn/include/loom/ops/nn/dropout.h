#pragma once
/// @file
/// Dropout of the nn pack, with PyTorch's semantics. The ops_nn plugin must be loaded.
///
/// Random draws come from the CPU default generator, so loom::manual_seed(s) makes them
/// reproducible (one draw per element, in row-major order).

#include <optional>
#include <tuple>

#include "loom/ops/op_handle.h"

namespace loom {

/// Zeroes each element with probability p and scales the others by 1 / (1 - p) when train
/// is true or absent (native_dropout); otherwise a copy. Returns (output, mask), mask a
/// bool tensor of the kept elements (all true when not training).
inline std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                                 std::optional<bool> train) {
  LOOM_TYPED_OP(op, "aten::native_dropout",
                std::tuple<Tensor, Tensor>(const Tensor&, double, std::optional<bool>));
  return op(input, p, train);
}

/// Gradient of native_dropout: grad_output * mask * scale (scale = 1 / (1 - p)).
inline Tensor native_dropout_backward(const Tensor& grad_output, const Tensor& mask, double scale) {
  LOOM_TYPED_OP(op, "aten::native_dropout_backward", Tensor(const Tensor&, const Tensor&, double));
  return op(grad_output, mask, scale);
}

/// torch.dropout (F.dropout): input itself when p == 0, when not training or when empty;
/// input * 0 when p == 1; native_dropout's output otherwise. p must lie in [0, 1].
inline Tensor dropout(const Tensor& input, double p, bool train) {
  LOOM_TYPED_OP(op, "aten::dropout", Tensor(const Tensor&, double, bool));
  return op(input, p, train);
}

/// Dropout of whole channels (torch.feature_dropout, nn.Dropout2d/3d): one draw per
/// (sample, channel) of input [N, C, *], shared by the channel's elements.
inline Tensor feature_dropout(const Tensor& input, double p, bool train) {
  LOOM_TYPED_OP(op, "aten::feature_dropout", Tensor(const Tensor&, double, bool));
  return op(input, p, train);
}

/// Alpha dropout (torch.alpha_dropout, for SELU networks): dropped elements take SELU's
/// negative saturation value and the result is rescaled to keep mean and variance.
inline Tensor alpha_dropout(const Tensor& input, double p, bool train) {
  LOOM_TYPED_OP(op, "aten::alpha_dropout", Tensor(const Tensor&, double, bool));
  return op(input, p, train);
}

/// Alpha dropout of whole channels (torch.feature_alpha_dropout).
inline Tensor feature_alpha_dropout(const Tensor& input, double p, bool train) {
  LOOM_TYPED_OP(op, "aten::feature_alpha_dropout", Tensor(const Tensor&, double, bool));
  return op(input, p, train);
}

}  // namespace loom
