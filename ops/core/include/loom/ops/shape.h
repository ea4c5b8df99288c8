#pragma once
/// @file
/// View and shape operators of the core pack. Views (view, reshape when the strides allow,
/// squeeze, transpose, slice, ...) share storage and version counter with self; cat, stack,
/// repeat, flip, roll, tril and triu return new tensors.

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "loom/ops/op_handle.h"

namespace loom {

/// A view of self with the given sizes (one may be -1); throws if the strides do not allow it.
inline Tensor view(const Tensor& self, IntArrayRef size) {
  LOOM_TYPED_OP(op, "aten::view", Tensor(const Tensor&, IntArrayRef));
  return op(self, size);
}

/// self with the given shape: a view when possible, else a contiguous copy.
inline Tensor reshape(const Tensor& self, IntArrayRef shape) {
  LOOM_TYPED_OP(op, "aten::reshape", Tensor(const Tensor&, IntArrayRef));
  return op(self, shape);
}

/// Flattens dims start_dim..end_dim into one (a view when possible).
inline Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1) {
  LOOM_TYPED_OP(op, "aten::flatten.using_ints", Tensor(const Tensor&, int64_t, int64_t));
  return op(self, start_dim, end_dim);
}

/// Splits dim into sizes (one may be -1).
inline Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  LOOM_TYPED_OP(op, "aten::unflatten.int", Tensor(const Tensor&, int64_t, IntArrayRef));
  return op(self, dim, sizes);
}

/// Removes every dimension of size 1.
inline Tensor squeeze(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::squeeze", Tensor(const Tensor&));
  return op(self);
}

/// Removes dim if its size is 1.
inline Tensor squeeze(const Tensor& self, int64_t dim) {
  LOOM_TYPED_OP(op, "aten::squeeze.dim", Tensor(const Tensor&, int64_t));
  return op(self, dim);
}

/// Removes those of dims whose size is 1.
inline Tensor squeeze(const Tensor& self, IntArrayRef dims) {
  LOOM_TYPED_OP(op, "aten::squeeze.dims", Tensor(const Tensor&, IntArrayRef));
  return op(self, dims);
}

/// Inserts a dimension of size 1 at dim.
inline Tensor unsqueeze(const Tensor& self, int64_t dim) {
  LOOM_TYPED_OP(op, "aten::unsqueeze", Tensor(const Tensor&, int64_t));
  return op(self, dim);
}

/// Swaps dim0 and dim1.
inline Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  LOOM_TYPED_OP(op, "aten::transpose.int", Tensor(const Tensor&, int64_t, int64_t));
  return op(self, dim0, dim1);
}

/// Reorders the dimensions: result dim i is self dim dims[i].
inline Tensor permute(const Tensor& self, IntArrayRef dims) {
  LOOM_TYPED_OP(op, "aten::permute", Tensor(const Tensor&, IntArrayRef));
  return op(self, dims);
}

/// Transpose of a tensor of at most 2 dims.
inline Tensor t(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::t", Tensor(const Tensor&));
  return op(self);
}

/// Broadcasts self to size (-1 keeps a size) with stride 0 on the expanded dims.
inline Tensor expand(const Tensor& self, IntArrayRef size, bool implicit = false) {
  LOOM_TYPED_OP(op, "aten::expand", Tensor(const Tensor&, IntArrayRef, bool));
  return op(self, size, implicit);
}

/// expand(self, other.sizes()).
inline Tensor expand_as(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::expand_as", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}

/// Elements start..start+length of dim.
inline Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  LOOM_TYPED_OP(op, "aten::narrow", Tensor(const Tensor&, int64_t, int64_t, int64_t));
  return op(self, dim, start, length);
}

/// self[..., start:end:step, ...] along dim (Python slice rules: negative and clamped bounds).
inline Tensor slice(const Tensor& self, int64_t dim = 0,
                    std::optional<int64_t> start = std::nullopt,
                    std::optional<int64_t> end = std::nullopt, int64_t step = 1) {
  LOOM_TYPED_OP(
      op, "aten::slice.Tensor",
      Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>, int64_t));
  return op(self, dim, start, end, step);
}

/// self[..., index, ...] along dim, removing dim.
inline Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  LOOM_TYPED_OP(op, "aten::select.int", Tensor(const Tensor&, int64_t, int64_t));
  return op(self, dim, index);
}

/// A view with arbitrary sizes, strides and storage offset (default: self's).
inline Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                         std::optional<int64_t> storage_offset = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::as_strided",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, std::optional<int64_t>));
  return op(self, size, stride, storage_offset);
}

/// Views of split_size elements along dim (the last may be shorter).
inline std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0) {
  LOOM_TYPED_OP(op, "aten::split.Tensor", std::vector<Tensor>(const Tensor&, int64_t, int64_t));
  return op(self, split_size, dim);
}

/// Views of the given sizes along dim (they must sum to self.size(dim)).
inline std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes,
                                            int64_t dim = 0) {
  LOOM_TYPED_OP(op, "aten::split_with_sizes",
                std::vector<Tensor>(const Tensor&, IntArrayRef, int64_t));
  return op(self, split_sizes, dim);
}

/// split(self, ceil(size(dim) / chunks), dim): at most chunks views.
inline std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0) {
  LOOM_TYPED_OP(op, "aten::chunk", std::vector<Tensor>(const Tensor&, int64_t, int64_t));
  return op(self, chunks, dim);
}

/// select(self, dim, i) for every i.
inline std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0) {
  LOOM_TYPED_OP(op, "aten::unbind.int", std::vector<Tensor>(const Tensor&, int64_t));
  return op(self, dim);
}

/// Concatenation along dim (1-D empty tensors are skipped, as in PyTorch).
inline Tensor cat(TensorList tensors, int64_t dim = 0) {
  // An empty list has no tensor to dispatch on: say so as PyTorch does.
  LOOM_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  LOOM_TYPED_OP(op, "aten::cat", Tensor(TensorList, int64_t));
  return op(tensors, dim);
}

/// Stacks equal-size tensors along a new dim.
inline Tensor stack(TensorList tensors, int64_t dim = 0) {
  LOOM_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  LOOM_TYPED_OP(op, "aten::stack", Tensor(TensorList, int64_t));
  return op(tensors, dim);
}

/// Tiles self repeats[i] times along each dim (leading repeats add dims).
inline Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  LOOM_TYPED_OP(op, "aten::repeat", Tensor(const Tensor&, IntArrayRef));
  return op(self, repeats);
}

/// Reverses the order of elements along dims.
inline Tensor flip(const Tensor& self, IntArrayRef dims) {
  LOOM_TYPED_OP(op, "aten::flip", Tensor(const Tensor&, IntArrayRef));
  return op(self, dims);
}

/// Rolls self by shifts along dims (no dims: the flattened tensor).
inline Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims = {}) {
  LOOM_TYPED_OP(op, "aten::roll", Tensor(const Tensor&, IntArrayRef, IntArrayRef));
  return op(self, shifts, dims);
}

/// The lower triangle (j <= i + diagonal) of the last two dims; the rest zero.
inline Tensor tril(const Tensor& self, int64_t diagonal = 0) {
  LOOM_TYPED_OP(op, "aten::tril", Tensor(const Tensor&, int64_t));
  return op(self, diagonal);
}

/// The upper triangle (j >= i + diagonal) of the last two dims; the rest zero.
inline Tensor triu(const Tensor& self, int64_t diagonal = 0) {
  LOOM_TYPED_OP(op, "aten::triu", Tensor(const Tensor&, int64_t));
  return op(self, diagonal);
}

/// view(self, other.sizes()).
inline Tensor view_as(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::view_as", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}

/// reshape(self, other.sizes()).
inline Tensor reshape_as(const Tensor& self, const Tensor& other) {
  LOOM_TYPED_OP(op, "aten::reshape_as", Tensor(const Tensor&, const Tensor&));
  return op(self, other);
}

/// Moves dims source to positions destination; the others keep their order.
inline Tensor movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  LOOM_TYPED_OP(op, "aten::movedim.intlist", Tensor(const Tensor&, IntArrayRef, IntArrayRef));
  return op(self, source, destination);
}

/// Moves dim source to position destination.
inline Tensor movedim(const Tensor& self, int64_t source, int64_t destination) {
  LOOM_TYPED_OP(op, "aten::movedim.int", Tensor(const Tensor&, int64_t, int64_t));
  return op(self, source, destination);
}

/// numpy's name for transpose.
inline Tensor swapaxes(const Tensor& self, int64_t axis0, int64_t axis1) {
  LOOM_TYPED_OP(op, "aten::swapaxes", Tensor(const Tensor&, int64_t, int64_t));
  return op(self, axis0, axis1);
}

/// split with a list of sizes (as torch.split(t, [2, 3])).
inline std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0) {
  LOOM_TYPED_OP(op, "aten::split.sizes", std::vector<Tensor>(const Tensor&, IntArrayRef, int64_t));
  return op(self, split_sizes, dim);
}

/// numpy's tile: repeat, with dims padded by leading ones up to self.dim().
inline Tensor tile(const Tensor& self, IntArrayRef dims) {
  LOOM_TYPED_OP(op, "aten::tile", Tensor(const Tensor&, IntArrayRef));
  return op(self, dims);
}

/// In place: inserts a dimension of size 1 at dim; returns self.
inline Tensor unsqueeze_(const Tensor& self, int64_t dim) {
  LOOM_TYPED_OP(op, "aten::unsqueeze_", Tensor(const Tensor&, int64_t));
  return op(self, dim);
}

/// In place: removes every dimension of size 1; returns self.
inline Tensor squeeze_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::squeeze_", Tensor(const Tensor&));
  return op(self);
}

/// In place: removes dim if its size is 1; returns self.
inline Tensor squeeze_(const Tensor& self, int64_t dim) {
  LOOM_TYPED_OP(op, "aten::squeeze_.dim", Tensor(const Tensor&, int64_t));
  return op(self, dim);
}

/// In place: swaps dim0 and dim1; returns self.
inline Tensor transpose_(const Tensor& self, int64_t dim0, int64_t dim1) {
  LOOM_TYPED_OP(op, "aten::transpose_", Tensor(const Tensor&, int64_t, int64_t));
  return op(self, dim0, dim1);
}

/// In place: transposes a tensor of at most 2 dims; returns self.
inline Tensor t_(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::t_", Tensor(const Tensor&));
  return op(self);
}

/// In place: zeroes the elements above the diagonal-th diagonal; returns self.
inline Tensor tril_(const Tensor& self, int64_t diagonal = 0) {
  LOOM_TYPED_OP(op, "aten::tril_", Tensor(const Tensor&, int64_t));
  return op(self, diagonal);
}

/// In place: zeroes the elements below the diagonal-th diagonal; returns self.
inline Tensor triu_(const Tensor& self, int64_t diagonal = 0) {
  LOOM_TYPED_OP(op, "aten::triu_", Tensor(const Tensor&, int64_t));
  return op(self, diagonal);
}

}  // namespace loom
