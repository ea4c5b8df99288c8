#pragma once
/// @file
/// Sorting operators of the core pack, as PyTorch's C++ API spells them: sort, argsort,
/// msort, topk and unique. NaN is greater than every number: it sorts last ascending, first
/// descending, and topk(largest=true) takes NaNs first (Note [Sorting order]).

#include <optional>
#include <tuple>

#include "loom/ops/op_handle.h"

namespace loom {

/// (values, indices) of self sorted along dim; ties may come in any order (as PyTorch's
/// std::sort-based CPU kernel leaves them).
inline std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1,
                                       bool descending = false) {
  LOOM_TYPED_OP(op, "aten::sort", std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool));
  return op(self, dim, descending);
}
/// sort with a choice of stability: stable=true keeps ties in their original order (in
/// descending order too). Mind that sort(x, true) is sort(x, /*dim=*/1), as in libtorch.
inline std::tuple<Tensor, Tensor> sort(const Tensor& self, std::optional<bool> stable,
                                       int64_t dim = -1, bool descending = false) {
  LOOM_TYPED_OP(op, "aten::sort.stable",
                std::tuple<Tensor, Tensor>(const Tensor&, std::optional<bool>, int64_t, bool));
  return op(self, stable, dim, descending);
}
/// The indices that sort self along dim.
inline Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false) {
  LOOM_TYPED_OP(op, "aten::argsort", Tensor(const Tensor&, int64_t, bool));
  return op(self, dim, descending);
}
/// argsort with a choice of stability (libtorch's overload: pass dim as int64_t).
inline Tensor argsort(const Tensor& self, bool stable, int64_t dim = -1, bool descending = false) {
  LOOM_TYPED_OP(op, "aten::argsort.stable", Tensor(const Tensor&, bool, int64_t, bool));
  return op(self, stable, dim, descending);
}
/// self sorted along dim 0 (values only).
inline Tensor msort(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::msort", Tensor(const Tensor&));
  return op(self);
}
/// (values, indices) of the k largest (or smallest) elements along dim, in order when
/// sorted (PyTorch's CPU selection: ties resolve as there).
inline std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1,
                                       bool largest = true, bool sorted = true) {
  LOOM_TYPED_OP(op, "aten::topk",
                std::tuple<Tensor, Tensor>(const Tensor&, int64_t, int64_t, bool, bool));
  return op(self, k, dim, largest, sorted);
}

/// (unique values, inverse, counts) of the flattened self, sorted (always, as PyTorch's
/// CPU kernel). inverse has self's shape when return_inverse, counts one entry per value
/// when return_counts; each is empty ([0]) otherwise.
inline std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor& self, bool sorted = true,
                                                   bool return_inverse = false,
                                                   bool return_counts = false) {
  LOOM_TYPED_OP(op, "aten::_unique2",
                std::tuple<Tensor, Tensor, Tensor>(const Tensor&, bool, bool, bool));
  return op(self, sorted, return_inverse, return_counts);
}
/// The unique slices of self along dim, sorted lexicographically, with the inverse (one
/// entry per slice) and the counts.
inline std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& self, int64_t dim,
                                                     bool sorted = true,
                                                     bool return_inverse = false,
                                                     bool return_counts = false) {
  LOOM_TYPED_OP(op, "aten::unique_dim",
                std::tuple<Tensor, Tensor, Tensor>(const Tensor&, int64_t, bool, bool, bool));
  return op(self, dim, sorted, return_inverse, return_counts);
}
/// Collapses runs of equal consecutive elements (of the flattened self, or of slices along
/// dim): (values, inverse, counts).
inline std::tuple<Tensor, Tensor, Tensor> unique_consecutive(
    const Tensor& self, bool return_inverse = false, bool return_counts = false,
    std::optional<int64_t> dim = std::nullopt) {
  LOOM_TYPED_OP(
      op, "aten::unique_consecutive",
      std::tuple<Tensor, Tensor, Tensor>(const Tensor&, bool, bool, std::optional<int64_t>));
  return op(self, return_inverse, return_counts, dim);
}
/// torch.unique: _unique2 of the flattened self, or unique_dim along dim when given.
inline std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self, bool sorted = true,
                                                 bool return_inverse = false,
                                                 bool return_counts = false,
                                                 std::optional<int64_t> dim = std::nullopt) {
  if (dim) return unique_dim(self, *dim, sorted, return_inverse, return_counts);
  return _unique2(self, sorted, return_inverse, return_counts);
}

}  // namespace loom
