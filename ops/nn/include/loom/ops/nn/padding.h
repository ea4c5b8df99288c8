#pragma once
/// @file
/// Padding of the nn pack, with PyTorch's semantics, and the backward ops autograd uses.
/// The ops_nn plugin must be loaded.
///
/// A pad list names the last dim first, as PyTorch: {left, right} pads the last dim,
/// {left, right, top, bottom} the last two, and so on. Negative pads crop.

#include <optional>
#include <string_view>

#include "loom/ops/op_handle.h"

namespace loom {

/// Pads with `value` (constant_pad_nd); negative pads remove elements. Any dtype.
inline Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value = 0) {
  LOOM_TYPED_OP(op, "aten::constant_pad_nd", Tensor(const Tensor&, IntArrayRef, const Scalar&));
  return op(self, pad, value);
}

/// F.pad: mode "constant" (value, default 0), "reflect", "replicate" or "circular". The
/// non-constant modes pad the last 1, 2 or 3 dims of a tensor with one or two more dims
/// (batch and channel) and take no value.
inline Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode = "constant",
                  std::optional<double> value = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::pad",
                Tensor(const Tensor&, IntArrayRef, std::string_view, std::optional<double>));
  return op(self, pad, mode, value);
}

/// Circular (wrap-around) padding of the last pad.size() / 2 dims (_pad_circular); a pad
/// may not exceed its dim's size.
inline Tensor pad_circular(const Tensor& self, IntArrayRef pad) {
  LOOM_TYPED_OP(op, "aten::_pad_circular", Tensor(const Tensor&, IntArrayRef));
  return op(self, pad);
}

/// Reflection padding (the edge element is not repeated) of the last dim of [C, W] or [N, C,
/// W]; each pad must be less than W.
inline Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::reflection_pad1d", Tensor(const Tensor&, IntArrayRef));
  return op(self, padding);
}

/// Gradient of reflection_pad1d with respect to self: grad_output summed onto the elements each
/// output element copied.
inline Tensor reflection_pad1d_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::reflection_pad1d_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef));
  return op(grad_output, self, padding);
}

/// Reflection padding of the last two dims of [C, H, W] or [N, C, H, W]; each pad must be less
/// than its dim.
inline Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::reflection_pad2d", Tensor(const Tensor&, IntArrayRef));
  return op(self, padding);
}

/// Gradient of reflection_pad2d with respect to self: grad_output summed onto the elements each
/// output element copied.
inline Tensor reflection_pad2d_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::reflection_pad2d_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef));
  return op(grad_output, self, padding);
}

/// Reflection padding of the last three dims of [C, D, H, W] or [N, C, D, H, W]; each pad must
/// be less than its dim.
inline Tensor reflection_pad3d(const Tensor& self, IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::reflection_pad3d", Tensor(const Tensor&, IntArrayRef));
  return op(self, padding);
}

/// Gradient of reflection_pad3d with respect to self: grad_output summed onto the elements each
/// output element copied.
inline Tensor reflection_pad3d_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::reflection_pad3d_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef));
  return op(grad_output, self, padding);
}

/// Edge-replicating padding of the last dim of [C, W] or [N, C, W].
inline Tensor replication_pad1d(const Tensor& self, IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::replication_pad1d", Tensor(const Tensor&, IntArrayRef));
  return op(self, padding);
}

/// Gradient of replication_pad1d with respect to self: grad_output summed onto the elements each
/// output element copied.
inline Tensor replication_pad1d_backward(const Tensor& grad_output, const Tensor& self,
                                         IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::replication_pad1d_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef));
  return op(grad_output, self, padding);
}

/// Edge-replicating padding of the last two dims of [C, H, W] or [N, C, H, W].
inline Tensor replication_pad2d(const Tensor& self, IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::replication_pad2d", Tensor(const Tensor&, IntArrayRef));
  return op(self, padding);
}

/// Gradient of replication_pad2d with respect to self: grad_output summed onto the elements each
/// output element copied.
inline Tensor replication_pad2d_backward(const Tensor& grad_output, const Tensor& self,
                                         IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::replication_pad2d_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef));
  return op(grad_output, self, padding);
}

/// Edge-replicating padding of the last three dims of [C, D, H, W] or [N, C, D, H, W].
inline Tensor replication_pad3d(const Tensor& self, IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::replication_pad3d", Tensor(const Tensor&, IntArrayRef));
  return op(self, padding);
}

/// Gradient of replication_pad3d with respect to self: grad_output summed onto the elements each
/// output element copied.
inline Tensor replication_pad3d_backward(const Tensor& grad_output, const Tensor& self,
                                         IntArrayRef padding) {
  LOOM_TYPED_OP(op, "aten::replication_pad3d_backward",
                Tensor(const Tensor&, const Tensor&, IntArrayRef));
  return op(grad_output, self, padding);
}

}  // namespace loom
