// Reference CPU kernels of the shape ops that make new tensors: cat, stack, repeat, flip,
// roll, tril, triu. Each one lays its result out contiguously and fills it with
// copy_strided (cpu/strided_copy.h), so they serve every dtype and any input strides.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/meta.h"
#include "cpu/strided_copy.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/shape.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::cpu {
namespace {

using meta::skipped_in_cat;

using Dims = std::vector<int64_t>;

Tensor empty_like_contiguous(const Tensor& self, const Dims& sizes) {
  return Tensor::empty(sizes, TensorOptions{}.with(self.dtype()).with(self.device()));
}

// The sub-block [start, start + length) of dim of a tensor, as a raw (pointer, strides)
// copy target or source.
void* block_ptr(const Tensor& t, int64_t dim, int64_t start) {
  return static_cast<char*>(t.data_ptr()) +
         start * t.stride(dim) * static_cast<int64_t>(t.element_size());
}

// Copies src into dst (same sizes). Mixed dtypes (cat and stack promote, as PyTorch does)
// go through aten::copy_, which owns dtype conversion; same dtypes stay a byte copy.
void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype()) {
    copy_same_dtype(dst, src);
    return;
  }
  static const auto copy_op = Dispatcher::instance()
                                  .find_op_or_throw("aten::copy_")
                                  .typed<Tensor(const Tensor&, const Tensor&, bool)>();
  copy_op(dst, src, false);
}

Tensor cat(TensorList tensors, int64_t dim) {
  meta::check_cat_inputs(tensors);
  const Tensor& first = tensors[0];
  for (const Tensor& t : tensors) {
    LOOM_CHECK_T(DeviceError, t.device() == first.device(),
                 "Expected all tensors to be on the same device, but found ", first.device().str(),
                 " and ", t.device().str());
  }
  const meta::CatShape shape = meta::cat_shape(tensors, dim);
  if (shape.empty) {
    return Tensor::empty({0}, TensorOptions{}.with(shape.dtype).with(first.device()));
  }
  dim = shape.dim;
  Tensor out = Tensor::empty(shape.sizes, TensorOptions{}.with(shape.dtype).with(first.device()));
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    if (skipped_in_cat(t) || t.size(dim) == 0) continue;
    const int64_t offset = start * out.stride(dim);
    copy_into(out.as_strided_view(t.sizes(), out.strides(), offset), t);
    start += t.size(dim);
  }
  return out;
}

Tensor stack(TensorList tensors, int64_t dim) {
  dim = meta::check_stack_inputs(tensors, dim);
  const Tensor& first = tensors[0];
  const Dims sizes = meta::stack_sizes(tensors, dim);
  Tensor out = Tensor::empty(
      sizes, TensorOptions{}.with(meta::promoted_dtype(tensors)).with(first.device()));
  // Each input fills out.select(dim, i): out's strides without dim.
  Dims out_strides(out.strides().begin(), out.strides().end());
  out_strides.erase(out_strides.begin() + dim);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.numel() == 0) continue;
    copy_into(
        out.as_strided_view(t.sizes(), out_strides, static_cast<int64_t>(i) * out.stride(dim)), t);
  }
  return out;
}

Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  const meta::RepeatPlan plan = meta::repeat_plan(self, repeats);
  Tensor out = empty_like_contiguous(self, plan.sizes);
  if (out.numel() == 0 || is_meta(out)) return out;
  copy_strided(out.data_ptr(), plan.dst_strides, self.data_ptr(), plan.src_strides,
               plan.block_sizes, self.element_size());
  return out;
}

Tensor flip(const Tensor& self, IntArrayRef dims) {
  const std::vector<bool> flipped = meta::flip_dims(self, dims);
  Dims sizes(self.sizes().begin(), self.sizes().end());
  Tensor out = empty_like_contiguous(self, sizes);
  if (out.numel() == 0 || is_meta(out)) return out;
  // Read the input backwards along each flipped dim: start at its last element there.
  Dims src_strides(self.strides().begin(), self.strides().end());
  int64_t offset = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!flipped[d]) continue;
    offset += (sizes[d] - 1) * src_strides[d];
    src_strides[d] = -src_strides[d];
  }
  const char* src = static_cast<const char*>(self.data_ptr()) +
                    offset * static_cast<int64_t>(self.element_size());
  copy_strided(out.data_ptr(), out.strides(), src, src_strides, sizes, self.element_size());
  return out;
}

// out = self rolled by shift along dim: two block copies.
Tensor roll_one(const Tensor& self, int64_t shift, int64_t dim) {
  Dims sizes(self.sizes().begin(), self.sizes().end());
  Tensor out = empty_like_contiguous(self, sizes);
  if (out.numel() == 0 || is_meta(out)) return out;
  const int64_t n = sizes[dim];
  const int64_t s = meta::roll_shift(shift, n);
  // out[s:] = self[:n-s]; out[:s] = self[n-s:].
  Dims part = sizes;
  part[dim] = n - s;
  copy_strided(block_ptr(out, dim, s), out.strides(), self.data_ptr(), self.strides(), part,
               self.element_size());
  if (s > 0) {
    part[dim] = s;
    copy_strided(out.data_ptr(), out.strides(), block_ptr(self, dim, n - s), self.strides(), part,
                 self.element_size());
  }
  return out;
}

Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  meta::check_roll_shifts(shifts);
  if (dims.empty() && shifts.size() == 1) {
    // Roll the flattened tensor, then restore the shape.
    Tensor flat = contiguous_copy(self);
    Tensor line = flat.as_strided_view({self.numel()}, {1}, 0);
    Tensor rolled = roll_one(line, shifts[0], 0);
    return rolled.as_strided_view(self.sizes(), contiguous_strides(self.sizes()), 0);
  }
  meta::check_roll_dims(shifts, dims);
  Tensor out = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    out = roll_one(out, shifts[i], meta::wrap_dim("roll", dims[i], self.dim()));
  }
  if (dims.empty() || out.is_same(self)) out = contiguous_copy(self);
  return out;
}

// Zeroes the elements of a contiguous copy of self that lie above (upper=false, tril) or
// below (upper=true, triu) the diagonal-th diagonal of the last two dims.
Tensor triangle(const char* op, const Tensor& self, int64_t diagonal, bool upper) {
  meta::check_triangle_dims(op, self);
  Tensor out = contiguous_copy(self);
  if (out.numel() == 0 || is_meta(out)) return out;
  const int64_t rows = self.size(-2);
  const int64_t cols = self.size(-1);
  const int64_t batch = out.numel() / (rows * cols);
  const auto es = static_cast<int64_t>(out.element_size());
  char* p = static_cast<char*>(out.data_ptr());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      char* row = p + (b * rows + i) * cols * es;
      // tril keeps j <= i + diagonal; triu keeps j >= i + diagonal.
      const int64_t edge = std::clamp<int64_t>(i + diagonal + (upper ? 0 : 1), 0, cols);
      if (upper) {
        std::memset(row, 0, static_cast<size_t>(edge * es));
      } else {
        std::memset(row + edge * es, 0, static_cast<size_t>((cols - edge) * es));
      }
    }
  }
  return out;
}

// In place: zeroes self's elements outside the triangle, through its strides.
Tensor& triangle_(const char* op, Tensor& self, int64_t diagonal, bool upper) {
  meta::check_triangle_dims(op, self);
  self.bump_version();
  if (self.numel() == 0 || is_meta(self)) return self;
  const int64_t nd = self.dim();
  const int64_t rows = self.size(-2), cols = self.size(-1);
  const int64_t rs = self.stride(-2), cs = self.stride(-1);
  const auto es = static_cast<int64_t>(self.element_size());
  std::vector<int64_t> idx(static_cast<size_t>(nd - 2), 0);
  char* base = static_cast<char*>(self.data_ptr());
  while (true) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd - 2; ++d) off += idx[d] * self.stride(d);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t edge = std::clamp<int64_t>(i + diagonal + (upper ? 0 : 1), 0, cols);
      const int64_t j0 = upper ? 0 : edge;
      const int64_t j1 = upper ? edge : cols;
      for (int64_t j = j0; j < j1; ++j) {
        std::memset(base + (off + i * rs + j * cs) * es, 0, static_cast<size_t>(es));
      }
    }
    int64_t d = nd - 3;
    for (; d >= 0; --d) {
      if (++idx[d] < self.size(d)) break;
      idx[d] = 0;
    }
    if (d < 0) return self;
  }
}

Tensor& tril_(Tensor& self, int64_t diagonal) { return triangle_("tril_", self, diagonal, false); }
Tensor& triu_(Tensor& self, int64_t diagonal) { return triangle_("triu_", self, diagonal, true); }

// tile pads dims with leading ones up to self.dim(), then repeats (numpy's tile).
Tensor tile(const Tensor& self, IntArrayRef dims) {
  return repeat(self, meta::tile_repeats(self, dims));
}

Tensor tril(const Tensor& self, int64_t diagonal) {
  return triangle("tril", self, diagonal, false);
}
Tensor triu(const Tensor& self, int64_t diagonal) { return triangle("triu", self, diagonal, true); }

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("cat", &cat);
  m.impl("stack", &stack);
  m.impl("concat", &cat);
  m.impl("concatenate", &cat);
  m.impl("tile", &tile);
  m.impl("tril_", &tril_);
  m.impl("triu_", &triu_);
  m.impl("repeat", &repeat);
  m.impl("flip", &flip);
  m.impl("roll", &roll);
  m.impl("tril", &tril);
  m.impl("triu", &triu);
}

}  // namespace loom::ops::cpu
