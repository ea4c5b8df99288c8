#pragma once
/// @file
/// Embedding lookup of the nn pack, with PyTorch's semantics, and its backward ops. The
/// ops_nn plugin must be loaded.

#include "loom/ops/op_handle.h"

namespace loom {

/// Rows of weight [num_weights, D] picked by indices (int32 or int64, any shape): the
/// result has indices' sizes followed by D (aten::embedding). An index outside
/// [0, num_weights) is an IndexError ("embedding: index out of range in self"). padding_idx and
/// scale_grad_by_freq only change the gradient; unlike F.embedding, a negative padding_idx
/// is not wrapped here (-1 means none, as in the aten op). sparse is accepted and ignored
/// (the gradient is always dense).
inline Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                        bool scale_grad_by_freq = false, bool sparse = false) {
  LOOM_TYPED_OP(op, "aten::embedding", Tensor(const Tensor&, const Tensor&, int64_t, bool, bool));
  return op(weight, indices, padding_idx, scale_grad_by_freq, sparse);
}

/// Gradient of embedding with respect to weight: [num_weights, D], the rows of grad_output
/// summed per index; rows of padding_idx get none, and with scale_grad_by_freq each row is
/// divided by how often its index occurs in indices.
inline Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                       int64_t num_weights, int64_t padding_idx,
                                       bool scale_grad_by_freq) {
  LOOM_TYPED_OP(op, "aten::embedding_dense_backward",
                Tensor(const Tensor&, const Tensor&, int64_t, int64_t, bool));
  return op(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq);
}

/// embedding_dense_backward, or a NotImplementedError for sparse = true (no sparse tensors).
inline Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                                 int64_t padding_idx, bool scale_grad_by_freq, bool sparse) {
  LOOM_TYPED_OP(op, "aten::embedding_backward",
                Tensor(const Tensor&, const Tensor&, int64_t, int64_t, bool, bool));
  return op(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse);
}

}  // namespace loom
