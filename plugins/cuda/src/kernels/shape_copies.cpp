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
#include "loom/ops/meta/shape.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

using ops::meta::skipped_in_cat;

using Dims = std::vector<int64_t>;

Tensor empty_contiguous(const Tensor& like, DType dtype, const Dims& sizes) {
  return Tensor::empty(sizes, TensorOptions{}.with(dtype).with(like.device()));
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
  ops::meta::check_cat_inputs(tensors);
  check_devices("cat", tensors);
  const Tensor& first = tensors[0];
  const ops::meta::CatShape shape = ops::meta::cat_shape(tensors, dim);
  if (shape.empty) return empty_contiguous(first, shape.dtype, {0});
  dim = shape.dim;
  Tensor out = empty_contiguous(first, shape.dtype, shape.sizes);
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    if (skipped_in_cat(t) || t.size(dim) == 0) continue;
    copy_kernel("cat", out.as_strided_view(t.sizes(), out.strides(), start * out.stride(dim)), t);
    start += t.size(dim);
  }
  return out;
}

Tensor stack(TensorList tensors, int64_t dim) {
  dim = ops::meta::check_stack_inputs(tensors, dim);
  check_devices("stack", tensors);
  const Tensor& first = tensors[0];
  const Dims sizes = ops::meta::stack_sizes(tensors, dim);
  Tensor out = empty_contiguous(first, ops::meta::promoted_dtype(tensors), sizes);
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
  const ops::meta::RepeatPlan plan = ops::meta::repeat_plan(self, repeats);
  Tensor out = empty_contiguous(self, self.dtype(), plan.sizes);
  if (out.numel() == 0) return out;
  copy_kernel("repeat", out.as_strided_view(plan.block_sizes, plan.dst_strides, 0),
              self.as_strided_view(plan.block_sizes, plan.src_strides, self.storage_offset()));
  return out;
}

Tensor tile(const Tensor& self, IntArrayRef dims) {
  return repeat(self, ops::meta::tile_repeats(self, dims));
}

// self rolled by shift along dim: two block copies.
Tensor roll_one(const Tensor& self, int64_t shift, int64_t dim) {
  Dims sizes(self.sizes().begin(), self.sizes().end());
  Tensor out = empty_contiguous(self, self.dtype(), sizes);
  if (out.numel() == 0) return out;
  const int64_t n = sizes[dim];
  const int64_t s = ops::meta::roll_shift(shift, n);
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
  ops::meta::check_roll_shifts(shifts);
  if (dims.empty() && shifts.size() == 1) {
    Tensor flat = cast_copy(self, self.dtype());
    Tensor line = flat.as_strided_view({self.numel()}, {1}, 0);
    Tensor rolled = roll_one(line, shifts[0], 0);
    return rolled.as_strided_view(self.sizes(), contiguous_strides(self.sizes()), 0);
  }
  ops::meta::check_roll_dims(shifts, dims);
  Tensor out = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    out = roll_one(out, shifts[i], ops::meta::wrap_dim("roll", dims[i], self.dim()));
  }
  if (dims.empty() || out.is_same(self)) out = cast_copy(self, self.dtype());
  return out;
}

// The input read backwards along each flipped dim: a geometry with negative source strides
// from the last element there (views cannot have negative strides; the kernels can).
Tensor flip(const Tensor& self, IntArrayRef dims) {
  check_cuda_tensors("flip", {{"self", self}});
  const std::vector<bool> flipped = ops::meta::flip_dims(self, dims);
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
