#pragma once
/// @file
/// Shape ops that make new tensors (cat, stack, repeat, tile, flip, roll): argument checks,
/// parameter parsing and output shapes every backend of these ops shares, so that error messages
/// are word for word the same on every device. Header-only, no state, no device-specific code.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/ops/meta/result_size.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::meta {

/// PyTorch skips legacy 1-D empty tensors ([0]) when concatenating.
inline bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

/// The promoted dtype of a non-empty list of tensors (cat and stack promote, as PyTorch does).
inline DType promoted_dtype(TensorList tensors) {
  DType t = tensors[0].dtype();
  for (const Tensor& x : tensors) t = promote_types(t, x.dtype());
  return t;
}

/// cat: the list must be non-empty and hold no 0-d tensor. Devices are the caller's to check,
/// after this and before cat_shape.
inline void check_cat_inputs(TensorList tensors) {
  LOOM_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    LOOM_CHECK(tensors[i].dim() > 0, "cat: zero-dimensional tensor (at position ", i,
               ") cannot be concatenated");
  }
}

/// cat's result: its dtype, and unless every input is skipped (empty), the wrapped dim and the
/// sizes.
struct CatShape {
  DType dtype;                 ///< the promoted dtype of the inputs
  bool empty;                  ///< every input is a legacy [0] tensor: the result is [0]
  int64_t dim;                 ///< the wrapped concatenation dim (unless empty)
  std::vector<int64_t> sizes;  ///< the result's sizes (unless empty)
};

/// cat's checks (same rank, same sizes but in dim) and result shape; after check_cat_inputs.
inline CatShape cat_shape(TensorList tensors, int64_t dim) {
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors) {
    if (!skipped_in_cat(t)) {
      ref = &t;
      break;
    }
  }
  CatShape r{promoted_dtype(tensors), ref == nullptr, 0, {}};
  if (ref == nullptr) return r;
  dim = wrap_dim("cat", dim, ref->dim());
  std::vector<int64_t> sizes(ref->sizes().begin(), ref->sizes().end());
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped_in_cat(t)) continue;
    LOOM_CHECK(t.dim() == ref->dim(), "cat: Tensors must have same number of dimensions: got ",
               ref->dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == dim) continue;
      LOOM_CHECK(t.size(d) == sizes[d], "cat: Sizes of tensors must match except in dimension ",
                 dim, ". Expected size ", sizes[d], " but got size ", t.size(d),
                 " for tensor number ", i, " in the list.");
    }
    total = result_size_add("cat", total, t.size(dim));  // Note [Result sizes that overflow]
  }
  sizes[dim] = total;
  r.dim = dim;
  r.sizes = std::move(sizes);
  return r;
}

/// stack: a non-empty list of tensors of one size; returns the wrapped dim.
inline int64_t check_stack_inputs(TensorList tensors, int64_t dim) {
  LOOM_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  const Tensor& first = tensors[0];
  dim = wrap_dim("stack", dim, first.dim() + 1);
  for (size_t i = 1; i < tensors.size(); ++i) {
    LOOM_CHECK(tensors[i].sizes() == first.sizes(),
               "stack expects each tensor to be equal size, but got ", sizes_str(first.sizes()),
               " at entry 0 and ", sizes_str(tensors[i].sizes()), " at entry ", i);
  }
  return dim;
}

/// stack's result sizes: the inputs' with the list's length inserted at dim.
inline std::vector<int64_t> stack_sizes(TensorList tensors, int64_t dim) {
  std::vector<int64_t> sizes(tensors[0].sizes().begin(), tensors[0].sizes().end());
  sizes.insert(sizes.begin() + dim, static_cast<int64_t>(tensors.size()));
  return sizes;
}

/// repeat as one strided copy: the result's sizes, and the copy's geometry viewing the
/// (contiguous) result as [r0, s0, r1, s1, ...] with the input read at stride 0 over each r.
struct RepeatPlan {
  std::vector<int64_t> sizes;        ///< the result's sizes
  std::vector<int64_t> block_sizes;  ///< the copy's sizes [r0, s0, r1, s1, ...]
  std::vector<int64_t> src_strides;  ///< the input's element strides over block_sizes
  std::vector<int64_t> dst_strides;  ///< the result's element strides over block_sizes
};

/// repeat's checks and plan (the result is contiguous).
inline RepeatPlan repeat_plan(const Tensor& self, IntArrayRef repeats) {
  const auto nd = static_cast<int64_t>(repeats.size());
  LOOM_CHECK(nd >= self.dim(),
             "repeat: Number of dimensions of repeat dims can not be smaller than "
             "number of dimensions of tensor");
  RepeatPlan p;
  p.sizes.resize(nd);
  std::vector<int64_t> in_sizes(nd, 1), in_strides(nd, 0);
  const int64_t lead = nd - self.dim();
  for (int64_t d = 0; d < self.dim(); ++d) {
    in_sizes[lead + d] = self.size(d);
    in_strides[lead + d] = self.stride(d);
  }
  for (int64_t d = 0; d < nd; ++d) {
    LOOM_CHECK(repeats[d] >= 0, "repeat: Trying to create tensor with negative dimension ",
               repeats[d], ": ", sizes_str(repeats));
    // Note [Result sizes that overflow]
    if (__builtin_mul_overflow(in_sizes[d], repeats[d], &p.sizes[d])) {
      throw_result_size_overflow("repeat", in_sizes[d], " * ", repeats[d], " at dimension ", d);
    }
  }
  check_result_numel("repeat", p.sizes, self.dtype());
  const DimVector out_strides = contiguous_strides(p.sizes);
  for (int64_t d = 0; d < nd; ++d) {
    p.block_sizes.push_back(repeats[d]);
    p.block_sizes.push_back(in_sizes[d]);
    p.dst_strides.push_back(in_sizes[d] * out_strides[d]);
    p.dst_strides.push_back(out_strides[d]);
    p.src_strides.push_back(0);
    p.src_strides.push_back(in_strides[d]);
  }
  return p;
}

/// tile's repeats: dims padded with leading ones up to self.dim() (numpy's tile).
inline std::vector<int64_t> tile_repeats(const Tensor& self, IntArrayRef dims) {
  std::vector<int64_t> reps(dims.begin(), dims.end());
  if (static_cast<int64_t>(reps.size()) < self.dim()) {
    reps.insert(reps.begin(), self.dim() - static_cast<int64_t>(reps.size()), 1);
  }
  return reps;
}

/// flip: which dims are flipped (wrapped; a duplicate is an error).
inline std::vector<bool> flip_dims(const Tensor& self, IntArrayRef dims) {
  std::vector<bool> flipped(self.dim(), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim("flip", d, self.dim());
    if (self.dim() == 0) continue;
    LOOM_CHECK(!flipped[w], "flip: dims has duplicates, original flip dims size=", dims.size(),
               ", but unique flip dims size=", dims.size() - 1);
    flipped[w] = true;
  }
  return flipped;
}

/// roll: shifts is required.
inline void check_roll_shifts(IntArrayRef shifts) {
  LOOM_CHECK(!shifts.empty(), "roll: `shifts` required");
}

/// roll with dims: one shift per dim.
inline void check_roll_dims(IntArrayRef shifts, IntArrayRef dims) {
  LOOM_CHECK(shifts.size() == dims.size(),
             "roll: shifts and dimensions must align. shifts: ", shifts.size(),
             ", dims:", dims.size());
}

/// roll along a dim of size n > 0: the shift in [0, n).
inline int64_t roll_shift(int64_t shift, int64_t n) { return ((shift % n) + n) % n; }

/// tril and triu: the input must have at least 2 dims.
inline void check_triangle_dims(const char* op, const Tensor& self) {
  LOOM_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
}

}  // namespace loom::ops::meta
