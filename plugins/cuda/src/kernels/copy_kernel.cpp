// The device-to-device copy (copy_kernel.h) and the CUDA kernels of clone, contiguous and
// to.dtype (ops/core/cpu/copy.cpp's semantics: clone is always contiguous).
#include "kernels/copy_kernel.h"

#include <optional>

#include "kernels/cuda_iterator.h"
#include "loom/core/memory_overlap.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "runtime/context.h"

namespace loom::cuda {

void copy_kernel(std::string_view op, const Tensor& dst, const Tensor& src) {
  check_cuda_tensors(op, {{"self", dst}, {"src", src}});
  const DimVector full = broadcast_shapes(op, dst.sizes(), src.sizes());
  LOOM_CHECK(IntArrayRef(full.data(), full.size()) == dst.sizes(), op, ": output with shape ",
             sizes_str(dst.sizes()), " doesn't match the broadcast shape ",
             sizes_str({full.data(), full.size()}));
  if (dst.numel() == 0) return;
  // Note [Memory overlap]: the written-to tensor must not overlap itself, nor partly overlap
  // src; an undecided overlap reads src from a copy.
  assert_no_internal_overlap(op, dst);
  if (ops::meta::input_needs_copy(op, dst, "src", src)) {
    copy_kernel(op, dst, cast_copy(src, src.dtype()));
    return;
  }
  const int device = device_index(dst);
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  if (dst.dtype() == src.dtype() && dst.sizes() == src.sizes() && dst.is_contiguous() &&
      src.is_contiguous()) {
    if (dst.data_ptr() != src.data_ptr()) {
      LOOM_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(),
                                      static_cast<size_t>(dst.numel()) * dst.element_size(),
                                      cudaMemcpyDeviceToDevice, stream),
                      op);
    }
    return;
  }
  const kernels::Geometry g = make_geometry(op, dst.sizes(), {&dst, &src});
  kernels::launch_copy(dst.data_ptr(), to_dt(dst.dtype()), src.data_ptr(), to_dt(src.dtype()), g,
                       dst.numel(), stream);
  check_launch(op);
}

void copy_kernel(const Tensor& dst, const Tensor& src) { copy_kernel("copy_", dst, src); }

Tensor cast_copy(const Tensor& t, DType dtype) {
  Tensor out = Tensor::empty(t.sizes(), TensorOptions{}.with(dtype).with(t.device()));
  copy_kernel("to", out, t);
  return out;
}

Tensor contiguous_cuda(const Tensor& t) { return t.is_contiguous() ? t : cast_copy(t, t.dtype()); }

namespace {

Tensor clone(const Tensor& self, std::optional<int64_t> /*memory_format*/) {
  check_cuda_tensors("clone", {{"self", self}});
  return cast_copy(self, self.dtype());
}

Tensor contiguous(const Tensor& self, int64_t /*memory_format*/) {
  check_cuda_tensors("contiguous", {{"self", self}});
  return contiguous_cuda(self);
}

Tensor to_dtype(const Tensor& self, DType dtype, bool /*non_blocking*/, bool copy,
                std::optional<int64_t> /*memory_format*/) {
  check_cuda_tensors("to.dtype", {{"self", self}});
  if (dtype == self.dtype() && !copy) return self;
  return cast_copy(self, dtype);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("clone", &clone);
  m.impl("contiguous", &contiguous);
  m.impl("to.dtype", &to_dtype);
}

}  // namespace loom::cuda
