#pragma once
/// @file
/// Pointwise operators of the core pack: arithmetic, comparisons, activations, fill.

#include "loom/ops/op_handle.h"

namespace loom {

/// self + alpha * other.
inline Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::add.Tensor", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, other, alpha);
}

/// Elementwise product.
inline Tensor mul(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::mul.Tensor", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}

/// Fills self with value in place; returns self.
inline Tensor fill_(const Tensor& self, const Scalar& value) {
  LOOM_TYPED_OP(op, "aten::fill_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, value);
}

/// operator+ as in PyTorch.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
/// operator* as in PyTorch.
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }

}  // namespace loom
