// Reference CPU kernels of the shape ops that make new tensors: cat, stack, repeat, flip,
// roll, tril, triu. Each one lays its result out contiguously and fills it with
// copy_strided (cpu/strided_copy.h), so they serve every dtype and any input strides.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/strided_copy.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {
namespace {

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

// PyTorch skips legacy 1-D empty tensors ([0]) when concatenating.
bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

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

DType promoted_dtype(TensorList tensors) {
  DType t = tensors[0].dtype();
  for (const Tensor& x : tensors) t = promote_types(t, x.dtype());
  return t;
}

Tensor cat(TensorList tensors, int64_t dim) {
  LOOM_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    LOOM_CHECK(tensors[i].dim() > 0, "zero-dimensional tensor (at position ", i,
               ") cannot be concatenated");
  }
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors) {
    if (!skipped_in_cat(t)) {
      ref = &t;
      break;
    }
  }
  const Tensor& first = tensors[0];
  for (const Tensor& t : tensors) {
    LOOM_CHECK_T(DeviceError, t.device() == first.device(),
                 "Expected all tensors to be on the same device, but found ", first.device().str(),
                 " and ", t.device().str());
  }
  const DType out_dtype = promoted_dtype(tensors);
  if (ref == nullptr) {
    return Tensor::empty({0}, TensorOptions{}.with(out_dtype).with(first.device()));
  }
  dim = wrap_dim(dim, ref->dim());
  Dims sizes(ref->sizes().begin(), ref->sizes().end());
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped_in_cat(t)) continue;
    LOOM_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ",
               ref->dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == dim) continue;
      LOOM_CHECK(t.size(d) == sizes[d], "Sizes of tensors must match except in dimension ", dim,
                 ". Expected size ", sizes[d], " but got size ", t.size(d), " for tensor number ",
                 i, " in the list.");
    }
    total += t.size(dim);
  }
  sizes[dim] = total;
  Tensor out = Tensor::empty(sizes, TensorOptions{}.with(out_dtype).with(first.device()));
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
  LOOM_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  const Tensor& first = tensors[0];
  dim = wrap_dim(dim, first.dim() + 1);
  for (size_t i = 1; i < tensors.size(); ++i) {
    LOOM_CHECK(tensors[i].sizes() == first.sizes(),
               "stack expects each tensor to be equal size, but got ", sizes_str(first.sizes()),
               " at entry 0 and ", sizes_str(tensors[i].sizes()), " at entry ", i);
  }
  Dims sizes(first.sizes().begin(), first.sizes().end());
  sizes.insert(sizes.begin() + dim, static_cast<int64_t>(tensors.size()));
  Tensor out =
      Tensor::empty(sizes, TensorOptions{}.with(promoted_dtype(tensors)).with(first.device()));
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
  const auto nd = static_cast<int64_t>(repeats.size());
  LOOM_CHECK(nd >= self.dim(),
             "Number of dimensions of repeat dims can not be smaller than "
             "number of dimensions of tensor");
  Dims sizes(nd);
  Dims in_sizes(nd, 1), in_strides(nd, 0);
  const int64_t lead = nd - self.dim();
  for (int64_t d = 0; d < self.dim(); ++d) {
    in_sizes[lead + d] = self.size(d);
    in_strides[lead + d] = self.stride(d);
  }
  for (int64_t d = 0; d < nd; ++d) {
    LOOM_CHECK(repeats[d] >= 0, "Trying to create tensor with negative dimension ", repeats[d],
               ": ", sizes_str(repeats));
    sizes[d] = in_sizes[d] * repeats[d];
  }
  Tensor out = empty_like_contiguous(self, sizes);
  if (out.numel() == 0) return out;
  // View out as [r0, s0, r1, s1, ...] and copy the input into it with stride 0 over each r.
  Dims block_sizes, dst_strides, src_strides;
  for (int64_t d = 0; d < nd; ++d) {
    block_sizes.push_back(repeats[d]);
    block_sizes.push_back(in_sizes[d]);
    dst_strides.push_back(in_sizes[d] * out.stride(d));
    dst_strides.push_back(out.stride(d));
    src_strides.push_back(0);
    src_strides.push_back(in_strides[d]);
  }
  copy_strided(out.data_ptr(), dst_strides, self.data_ptr(), src_strides, block_sizes,
               self.element_size());
  return out;
}

Tensor flip(const Tensor& self, IntArrayRef dims) {
  std::vector<bool> flipped(self.dim(), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, self.dim());
    if (self.dim() == 0) continue;
    LOOM_CHECK(!flipped[w], "dims has duplicates, original flip dims size=", dims.size(),
               ", but unique flip dims size=", dims.size() - 1);
    flipped[w] = true;
  }
  Dims sizes(self.sizes().begin(), self.sizes().end());
  Tensor out = empty_like_contiguous(self, sizes);
  if (out.numel() == 0) return out;
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
  if (out.numel() == 0) return out;
  const int64_t n = sizes[dim];
  const int64_t s = ((shift % n) + n) % n;
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
  LOOM_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    // Roll the flattened tensor, then restore the shape.
    Tensor flat = contiguous_copy(self);
    Tensor line = flat.as_strided_view({self.numel()}, {1}, 0);
    Tensor rolled = roll_one(line, shifts[0], 0);
    return rolled.as_strided_view(self.sizes(), contiguous_strides(self.sizes()), 0);
  }
  LOOM_CHECK(shifts.size() == dims.size(),
             "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  Tensor out = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    out = roll_one(out, shifts[i], wrap_dim(dims[i], self.dim()));
  }
  if (dims.empty() || out.is_same(self)) out = contiguous_copy(self);
  return out;
}

// Zeroes the elements of a contiguous copy of self that lie above (upper=false, tril) or
// below (upper=true, triu) the diagonal-th diagonal of the last two dims.
Tensor triangle(const char* op, const Tensor& self, int64_t diagonal, bool upper) {
  LOOM_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  Tensor out = contiguous_copy(self);
  if (out.numel() == 0) return out;
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
  LOOM_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  self.bump_version();
  if (self.numel() == 0) return self;
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
  std::vector<int64_t> reps(dims.begin(), dims.end());
  if (static_cast<int64_t>(reps.size()) < self.dim()) {
    reps.insert(reps.begin(), self.dim() - static_cast<int64_t>(reps.size()), 1);
  }
  return repeat(self, reps);
}

Tensor tril(const Tensor& self, int64_t diagonal) {
  return triangle("tril", self, diagonal, false);
}
Tensor triu(const Tensor& self, int64_t diagonal) { return triangle("triu", self, diagonal, true); }

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
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
