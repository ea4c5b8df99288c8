#pragma once
/// @file
/// Linear-algebra operators of the core pack: products of matrices, batches and vectors,
/// linear, einsum. Semantics, shapes and errors follow PyTorch's.

#include <optional>
#include <string_view>

#include "loom/ops/op_handle.h"

namespace loom {

/// Matrix product of 2-D self [n, k] and mat2 [k, m]: [n, m].
inline Tensor mm(const Tensor& self, const Tensor& mat2) {
  LOOM_TYPED_OP(op, "aten::mm", Tensor(const Tensor&, const Tensor&));
  return op(self, mat2);
}

/// mm into out (resized when its storage allows); returns out.
inline Tensor mm_out(const Tensor& out, const Tensor& self, const Tensor& mat2) {
  LOOM_TYPED_OP(op, "aten::mm.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, mat2, out);
}

/// Batched matrix product of 3-D self [b, n, k] and mat2 [b, k, m]: [b, n, m].
inline Tensor bmm(const Tensor& self, const Tensor& mat2) {
  LOOM_TYPED_OP(op, "aten::bmm", Tensor(const Tensor&, const Tensor&));
  return op(self, mat2);
}

/// bmm into out; returns out.
inline Tensor bmm_out(const Tensor& out, const Tensor& self, const Tensor& mat2) {
  LOOM_TYPED_OP(op, "aten::bmm.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, mat2, out);
}

/// torch.matmul: dot, mv, mm or a batched product with broadcast batch dims, by rank.
inline Tensor matmul(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::matmul", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}

/// Matrix [n, m] times vector [m]: [n].
inline Tensor mv(const Tensor& self, const Tensor& vec) {
  LOOM_TYPED_OP(op, "aten::mv", Tensor(const Tensor&, const Tensor&));
  return op(self, vec);
}

/// beta * self + alpha * (mat1 @ mat2), self broadcast to the product's shape; beta = 0
/// ignores self (NaN there does not propagate).
inline Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                    const Scalar& beta = 1, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::addmm",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&));
  return op(self, mat1, mat2, beta, alpha);
}

/// addmm into out (out may be self); returns out.
inline Tensor addmm_out(const Tensor& out, const Tensor& self, const Tensor& mat1,
                        const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::addmm.out",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&,
                       const Tensor&));
  return op(self, mat1, mat2, beta, alpha, out);
}

/// beta * self + alpha * sum over b of batch1[b] @ batch2[b]: [n, m].
inline Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
                     const Scalar& beta = 1, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::addbmm",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&));
  return op(self, batch1, batch2, beta, alpha);
}

/// beta * self + alpha * bmm(batch1, batch2), self broadcast to [b, n, m].
inline Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
                      const Scalar& beta = 1, const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::baddbmm",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&));
  return op(self, batch1, batch2, beta, alpha);
}

/// input @ weight.T + bias, weight [out_features, in_features], input [..., in_features].
inline Tensor linear(const Tensor& input, const Tensor& weight,
                     const std::optional<Tensor>& bias = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::linear",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&));
  return op(input, weight, bias);
}

/// Inner product of two 1-D tensors: a 0-dim tensor.
inline Tensor dot(const Tensor& self, const Tensor& tensor) {
  LOOM_TYPED_OP(op, "aten::dot", Tensor(const Tensor&, const Tensor&));
  return op(self, tensor);
}

/// Outer product of 1-D self [n] and vec2 [m]: [n, m] (dtypes promote, as in PyTorch).
inline Tensor outer(const Tensor& self, const Tensor& vec2) {
  LOOM_TYPED_OP(op, "aten::outer", Tensor(const Tensor&, const Tensor&));
  return op(self, vec2);
}

/// Einstein summation, torch.einsum: "ij,jk->ik", "bij,bjk->bik", "ii->i", "...ij,...jk",
/// implicit output (labels seen once, sorted) when "->" is absent.
inline Tensor einsum(std::string_view equation, TensorList tensors,
                     std::optional<IntArrayRef> path = std::nullopt) {
  // Checked before the call, as cat and stack do: without a tensor there is no dispatch key,
  // and the dispatcher would report a missing kernel instead of the kernel's own check.
  LOOM_CHECK(!tensors.empty(), "einsum(): must provide at least one operand");
  LOOM_TYPED_OP(op, "aten::einsum",
                Tensor(std::string_view, TensorList, std::optional<IntArrayRef>));
  return op(equation, tensors, path);
}

}  // namespace loom
