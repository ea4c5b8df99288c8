// CUDA kernels of the shape ops that make new tensors: cat (concat, concatenate), stack,
// repeat, tile, roll. The recipes of ops/core/cpu/shape_copies.cpp (same checks, messages and
// result dtypes): each result is laid out contiguously and filled through strided views of it
// by copy_kernel, which converts dtypes (cat and stack promote) and broadcasts (repeat).
#include <vector>

#include "kernels/copy_kernel.h"
#include "kernels/cuda_iterator.h"
#include "kernels/kernel_api.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

using Dims = std::vector<int64_t>;

Tensor empty_contiguous(const Tensor& like, DType dtype, const Dims& sizes) {
  return Tensor::empty(sizes, TensorOptions{}.with(dtype).with(like.device()));
}

bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

DType promoted_dtype(TensorList tensors) {
  DType t = tensors[0].dtype();
  for (const Tensor& x : tensors) t = promote_types(t, x.dtype());
  return t;
}

void check_devices(const char* op, TensorList tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_cuda_tensors(op, {{"tensors", tensors[i]}});
    LOOM_CHECK_T(DeviceError, tensors[i].device() == tensors[0].device(),
                 "Expected all tensors to be on the same device, but found ",
                 tensors[0].device().str(), " and ", tensors[i].device().str());
  }
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
  check_devices("cat", tensors);
  const Tensor& first = tensors[0];
  const DType out_dtype = promoted_dtype(tensors);
  if (ref == nullptr) return empty_contiguous(first, out_dtype, {0});
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
  Tensor out = empty_contiguous(first, out_dtype, sizes);
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    if (skipped_in_cat(t) || t.size(dim) == 0) continue;
    copy_kernel("cat", out.as_strided_view(t.sizes(), out.strides(), start * out.stride(dim)), t);
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
  check_devices("stack", tensors);
  Dims sizes(first.sizes().begin(), first.sizes().end());
  sizes.insert(sizes.begin() + dim, static_cast<int64_t>(tensors.size()));
  Tensor out = empty_contiguous(first, promoted_dtype(tensors), sizes);
  Dims out_strides(out.strides().begin(), out.strides().end());
  out_strides.erase(out_strides.begin() + dim);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.numel() == 0) continue;
    copy_kernel(
        "stack",
        out.as_strided_view(t.sizes(), out_strides, static_cast<int64_t>(i) * out.stride(dim)), t);
  }
  return out;
}

Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  check_cuda_tensors("repeat", {{"self", self}});
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
  Tensor out = empty_contiguous(self, self.dtype(), sizes);
  if (out.numel() == 0) return out;
  // View out as [r0, s0, r1, s1, ...] and copy the input in with stride 0 over each r.
  Dims block_sizes, dst_strides, src_strides;
  for (int64_t d = 0; d < nd; ++d) {
    block_sizes.push_back(repeats[d]);
    block_sizes.push_back(in_sizes[d]);
    dst_strides.push_back(in_sizes[d] * out.stride(d));
    dst_strides.push_back(out.stride(d));
    src_strides.push_back(0);
    src_strides.push_back(in_strides[d]);
  }
  copy_kernel("repeat", out.as_strided_view(block_sizes, dst_strides, 0),
              self.as_strided_view(block_sizes, src_strides, self.storage_offset()));
  return out;
}

Tensor tile(const Tensor& self, IntArrayRef dims) {
  std::vector<int64_t> reps(dims.begin(), dims.end());
  if (static_cast<int64_t>(reps.size()) < self.dim()) {
    reps.insert(reps.begin(), self.dim() - static_cast<int64_t>(reps.size()), 1);
  }
  return repeat(self, reps);
}

// self rolled by shift along dim: two block copies.
Tensor roll_one(const Tensor& self, int64_t shift, int64_t dim) {
  Dims sizes(self.sizes().begin(), self.sizes().end());
  Tensor out = empty_contiguous(self, self.dtype(), sizes);
  if (out.numel() == 0) return out;
  const int64_t n = sizes[dim];
  const int64_t s = ((shift % n) + n) % n;
  // out[s:] = self[:n-s]; out[:s] = self[n-s:].
  Dims part = sizes;
  part[dim] = n - s;
  copy_kernel("roll", out.as_strided_view(part, out.strides(), s * out.stride(dim)),
              self.as_strided_view(part, self.strides(), self.storage_offset()));
  if (s > 0) {
    part[dim] = s;
    copy_kernel("roll", out.as_strided_view(part, out.strides(), 0),
                self.as_strided_view(part, self.strides(),
                                     self.storage_offset() + (n - s) * self.stride(dim)));
  }
  return out;
}

Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  check_cuda_tensors("roll", {{"self", self}});
  LOOM_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    Tensor flat = cast_copy(self, self.dtype());
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
  if (dims.empty() || out.is_same(self)) out = cast_copy(self, self.dtype());
  return out;
}

// The input read backwards along each flipped dim: a geometry with negative source strides
// from the last element there (views cannot have negative strides; the kernels can).
Tensor flip(const Tensor& self, IntArrayRef dims) {
  check_cuda_tensors("flip", {{"self", self}});
  std::vector<bool> flipped(self.dim(), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, self.dim());
    if (self.dim() == 0) continue;
    LOOM_CHECK(!flipped[w], "dims has duplicates, original flip dims size=", dims.size(),
               ", but unique flip dims size=", dims.size() - 1);
    flipped[w] = true;
  }
  Dims sizes(self.sizes().begin(), self.sizes().end());
  Tensor out = empty_contiguous(self, self.dtype(), sizes);
  if (out.numel() == 0) return out;
  const int64_t nd = self.dim();
  LOOM_CHECK_T(ValueError, nd <= kernels::kMaxDims, "flip: CUDA kernels take at most ",
               kernels::kMaxDims, " dimensions, got ", nd);
  kernels::Geometry g;
  g.ndim = nd == 0 ? 1 : static_cast<int>(nd);
  g.sizes[0] = 1;
  int64_t offset = 0;
  for (int64_t d = 0; d < nd; ++d) {
    const int k = static_cast<int>(nd - 1 - d);  // innermost first
    g.sizes[k] = sizes[d];
    g.strides[0][k] = out.stride(d);
    g.strides[1][k] = flipped[d] ? -self.stride(d) : self.stride(d);
    if (flipped[d]) offset += (sizes[d] - 1) * self.stride(d);
  }
  const char* src = static_cast<const char*>(self.data_ptr()) +
                    offset * static_cast<int64_t>(self.element_size());
  const int dev = device_index(self);
  DeviceGuard guard(dev);
  kernels::launch_copy(out.data_ptr(), to_dt(out.dtype()), src, to_dt(self.dtype()), g, out.numel(),
                       current_stream(dev));
  check_launch("flip");
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("flip", &flip);
  m.impl("cat", &cat);
  m.impl("stack", &stack);
  m.impl("concat", &cat);
  m.impl("concatenate", &cat);
  m.impl("repeat", &repeat);
  m.impl("tile", &tile);
  m.impl("roll", &roll);
}

}  // namespace loom::cuda
