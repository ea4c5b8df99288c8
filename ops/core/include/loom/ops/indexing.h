#pragma once
/// @file
/// Indexing operators of the core pack, as PyTorch's C++ API spells them: selection and
/// scatter along one dim (index_select, gather, scatter, scatter_add, scatter_reduce,
/// index_add, index_fill, take), masks (masked_fill, masked_select, masked_scatter), advanced
/// indexing with a list of optional index tensors (index, index_put_), nonzero and one_hot.
/// Each function calls its schema through the dispatcher; `_` suffixes are in place (they
/// bump self's version and return self).
///
/// Index values out of range throw loom::IndexError with PyTorch's wording ("index 5 is out
/// of bounds for dimension 0 with size 3"); an index of the wrong dtype throws TypeError.

#include <optional>
#include <string_view>
#include <vector>

#include "loom/ops/op_handle.h"

namespace loom {

// ---- along one dim ----------------------------------------------------------------------------

/// The slices self.select(dim, i) for i in index (int32 or int64, 0-D or 1-D, each in
/// [0, size)), stacked along dim.
inline Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  LOOM_TYPED_OP(op, "aten::index_select", Tensor(const Tensor&, int64_t, const Tensor&));
  return op(self, dim, index);
}
/// index_select into out (resized when its storage allows); returns out.
inline Tensor index_select_out(const Tensor& out, const Tensor& self, int64_t dim,
                               const Tensor& index) {
  LOOM_TYPED_OP(op, "aten::index_select.out",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op(self, dim, index, out);
}
/// The gradient of index_select: zeros of self_sizes with grad's slices added at index.
inline Tensor index_select_backward(const Tensor& grad, IntArrayRef self_sizes, int64_t dim,
                                    const Tensor& index) {
  LOOM_TYPED_OP(op, "aten::index_select_backward",
                Tensor(const Tensor&, IntArrayRef, int64_t, const Tensor&));
  return op(grad, self_sizes, dim, index);
}
/// out[i][j] = self[index[i][j]][j] (dim 0; likewise for any dim); index is int64 with
/// self's number of dims, no larger than self except along dim. sparse_grad only matters to
/// autograd.
inline Tensor gather(const Tensor& self, int64_t dim, const Tensor& index,
                     bool sparse_grad = false) {
  LOOM_TYPED_OP(op, "aten::gather", Tensor(const Tensor&, int64_t, const Tensor&, bool));
  return op(self, dim, index, sparse_grad);
}
/// The elements of self at the flat (row-major) positions in index (int64; negative counts
/// from the end), shaped like index.
inline Tensor take(const Tensor& self, const Tensor& index) {
  LOOM_TYPED_OP(op, "aten::take", Tensor(const Tensor&, const Tensor&));
  return op(self, index);
}

/// A copy of self with out[index[i][j]][j] = src[i][j] (dim 0); the last of duplicate
/// indices wins.
inline Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  LOOM_TYPED_OP(op, "aten::scatter.src",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op(self, dim, index, src);
}
/// scatter of one value.
inline Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  LOOM_TYPED_OP(op, "aten::scatter.value",
                Tensor(const Tensor&, int64_t, const Tensor&, const Scalar&));
  return op(self, dim, index, value);
}
/// scatter combining with reduce "add" or "multiply" (PyTorch deprecates this form for
/// scatter_reduce).
inline Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce) {
  LOOM_TYPED_OP(op, "aten::scatter.reduce",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, std::string_view));
  return op(self, dim, index, src, reduce);
}
/// scatter of one value, combining with reduce "add" or "multiply".
inline Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                      std::string_view reduce) {
  LOOM_TYPED_OP(op, "aten::scatter.value_reduce",
                Tensor(const Tensor&, int64_t, const Tensor&, const Scalar&, std::string_view));
  return op(self, dim, index, value, reduce);
}
/// In-place scatter; returns self.
inline Tensor scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  LOOM_TYPED_OP(op, "aten::scatter_.src",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op(self, dim, index, src);
}
/// In-place scatter of one value; returns self.
inline Tensor scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  LOOM_TYPED_OP(op, "aten::scatter_.value",
                Tensor(const Tensor&, int64_t, const Tensor&, const Scalar&));
  return op(self, dim, index, value);
}
/// In-place scatter with reduce "add" or "multiply"; returns self.
inline Tensor scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                       std::string_view reduce) {
  LOOM_TYPED_OP(op, "aten::scatter_.reduce",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, std::string_view));
  return op(self, dim, index, src, reduce);
}
/// In-place scatter of one value with reduce "add" or "multiply"; returns self.
inline Tensor scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                       std::string_view reduce) {
  LOOM_TYPED_OP(op, "aten::scatter_.value_reduce",
                Tensor(const Tensor&, int64_t, const Tensor&, const Scalar&, std::string_view));
  return op(self, dim, index, value, reduce);
}
/// A copy of self with out[index[i][j]][j] += src[i][j] (dim 0); duplicates add up.
inline Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  LOOM_TYPED_OP(op, "aten::scatter_add",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op(self, dim, index, src);
}
/// In-place scatter_add; returns self.
inline Tensor scatter_add_(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src) {
  LOOM_TYPED_OP(op, "aten::scatter_add_",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op(self, dim, index, src);
}
/// scatter reducing with "sum", "prod", "mean", "amax" or "amin"; include_self=false
/// ignores self's values where something is scattered.
inline Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& src, std::string_view reduce, bool include_self = true) {
  LOOM_TYPED_OP(
      op, "aten::scatter_reduce.two",
      Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, std::string_view, bool));
  return op(self, dim, index, src, reduce, include_self);
}
/// In-place scatter_reduce; returns self.
inline Tensor scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& src, std::string_view reduce,
                              bool include_self = true) {
  LOOM_TYPED_OP(
      op, "aten::scatter_reduce_.two",
      Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, std::string_view, bool));
  return op(self, dim, index, src, reduce, include_self);
}
/// A copy of self with self.select(dim, index[i]) += alpha * source.select(dim, i).
inline Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                        const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::index_add",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&));
  return op(self, dim, index, source, alpha);
}
/// In-place index_add; returns self.
inline Tensor index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha = 1) {
  LOOM_TYPED_OP(op, "aten::index_add_",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&));
  return op(self, dim, index, source, alpha);
}
/// A copy of self with the slices at index (int64, negative from the end) set to value.
inline Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index,
                         const Scalar& value) {
  LOOM_TYPED_OP(op, "aten::index_fill.int_Scalar",
                Tensor(const Tensor&, int64_t, const Tensor&, const Scalar&));
  return op(self, dim, index, value);
}
/// index_fill with a 0-dim value tensor.
inline Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index,
                         const Tensor& value) {
  LOOM_TYPED_OP(op, "aten::index_fill.int_Tensor",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op(self, dim, index, value);
}
/// In-place index_fill; returns self.
inline Tensor index_fill_(const Tensor& self, int64_t dim, const Tensor& index,
                          const Scalar& value) {
  LOOM_TYPED_OP(op, "aten::index_fill_.int_Scalar",
                Tensor(const Tensor&, int64_t, const Tensor&, const Scalar&));
  return op(self, dim, index, value);
}
/// In-place index_fill with a 0-dim value tensor; returns self.
inline Tensor index_fill_(const Tensor& self, int64_t dim, const Tensor& index,
                          const Tensor& value) {
  LOOM_TYPED_OP(op, "aten::index_fill_.int_Tensor",
                Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op(self, dim, index, value);
}

// ---- masks ------------------------------------------------------------------------------------

/// self with value where mask (bool, broadcast with self) is true.
inline Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  LOOM_TYPED_OP(op, "aten::masked_fill.Scalar",
                Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, mask, value);
}
/// masked_fill with a 0-dim value tensor.
inline Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  LOOM_TYPED_OP(op, "aten::masked_fill.Tensor",
                Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, mask, value);
}
/// In-place masked_fill (mask broadcasts to self); returns self.
inline Tensor masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value) {
  LOOM_TYPED_OP(op, "aten::masked_fill_.Scalar",
                Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op(self, mask, value);
}
/// In-place masked_fill with a 0-dim value tensor; returns self.
inline Tensor masked_fill_(const Tensor& self, const Tensor& mask, const Tensor& value) {
  LOOM_TYPED_OP(op, "aten::masked_fill_.Tensor",
                Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, mask, value);
}
/// The elements of self where mask (bool, broadcast with self) is true, as a 1-D tensor in
/// row-major order.
inline Tensor masked_select(const Tensor& self, const Tensor& mask) {
  LOOM_TYPED_OP(op, "aten::masked_select", Tensor(const Tensor&, const Tensor&));
  return op(self, mask);
}
/// A copy of self (broadcast with mask) whose masked positions take source's elements in
/// row-major order.
inline Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  LOOM_TYPED_OP(op, "aten::masked_scatter", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, mask, source);
}
/// In-place masked_scatter (mask broadcasts to self); returns self.
inline Tensor masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source) {
  LOOM_TYPED_OP(op, "aten::masked_scatter_", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op(self, mask, source);
}

// ---- advanced indexing ------------------------------------------------------------------------

/// PyTorch's advanced indexing, `self[i0, i1, ...]` with one optional index tensor per
/// leading dim (nullopt keeps the dim; int64/int32 tensors broadcast together; a bool mask
/// covers as many dims as it has). When the indexed dims are not adjacent the index shape
/// comes first in the result. Always a copy. See Note [Advanced indexing].
inline Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  LOOM_TYPED_OP(op, "aten::index.Tensor",
                Tensor(const Tensor&, const std::vector<std::optional<Tensor>>&));
  return op(self, indices);
}
/// `self[indices] = values` in place (values broadcast to the indexing result; same dtype
/// as self, except that one mask with a one-element value fills as masked_fill_ does). With
/// accumulate, duplicate indices add up; without, the last one wins. Returns self.
inline Tensor index_put_(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                         const Tensor& values, bool accumulate = false) {
  LOOM_TYPED_OP(
      op, "aten::index_put_",
      Tensor(const Tensor&, const std::vector<std::optional<Tensor>>&, const Tensor&, bool));
  return op(self, indices, values, accumulate);
}
/// index_put_ on a copy of self.
inline Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                        const Tensor& values, bool accumulate = false) {
  LOOM_TYPED_OP(
      op, "aten::index_put",
      Tensor(const Tensor&, const std::vector<std::optional<Tensor>>&, const Tensor&, bool));
  return op(self, indices, values, accumulate);
}

// ---- nonzero ----------------------------------------------------------------------------------

/// The coordinates of self's nonzero elements (NaN is nonzero), [n, self.dim()] int64 in
/// row-major order.
inline Tensor nonzero(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::nonzero", Tensor(const Tensor&));
  return op(self);
}
/// nonzero (NumPy's name).
inline Tensor argwhere(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::argwhere", Tensor(const Tensor&));
  return op(self);
}
/// where(condition): the coordinates of the nonzero elements, one [n] int64 tensor per dim.
inline std::vector<Tensor> where(const Tensor& condition) {
  LOOM_TYPED_OP(op, "aten::where", std::vector<Tensor>(const Tensor&));
  return op(condition);
}
/// One-hot encoding of an int64 tensor of class values: a new last dim of num_classes
/// (-1: the largest value plus one), int64.
inline Tensor one_hot(const Tensor& self, int64_t num_classes = -1) {
  LOOM_TYPED_OP(op, "aten::one_hot", Tensor(const Tensor&, int64_t));
  return op(self, num_classes);
}

}  // namespace loom
