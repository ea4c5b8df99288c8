// CUDA kernels of index_select (and .out), gather, masked_fill (four forms), tril/triu (and
// their in-place forms), with the checks and messages of ops/core/cpu/{indexing,
// index_advanced,shape_copies}.cpp.
//
// Note [CUDA index checks]: the CPU kernels refuse an index out of range with an IndexError;
// here the kernel flags it on the device and the host reads the flag back after the launch
// (one device-to-host copy and a stream synchronization per call) and throws the CPU's
// message. When several indices are bad the one reported may not be the first.
#include <optional>
#include <string_view>
#include <vector>

#include "kernels/copy_kernel.h"
#include "kernels/cuda_iterator.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

using Dims = std::vector<int64_t>;

bool is_index_dtype(DType d) { return d == DType::Int64 || d == DType::Int32; }

// Runs the gather kernel producing out (iteration shape out.sizes()); index_view and
// self_view are views of index and self over that shape (self's gathered dim of stride 0).
// Returns the bad index found, if any (Note [CUDA index checks]).
std::optional<int64_t> run_gather(const char* op, const Tensor& out, const Tensor& self_view,
                                  const Tensor& index_view, int64_t step, int64_t bound) {
  if (out.numel() == 0) return std::nullopt;
  const int dev = device_index(out);
  Tensor bad = Tensor::empty({2}, TensorOptions{}.with(DType::Int64).with(out.device()));
  DeviceGuard guard(dev);
  const cudaStream_t stream = current_stream(dev);
  LOOM_CUDA_CHECK(cudaMemsetAsync(bad.data_ptr(), 0, 2 * sizeof(int64_t), stream), op);
  const kernels::Geometry g = make_geometry(op, out.sizes(), {&out, &index_view, &self_view});
  kernels::launch_gather(out.data_ptr(), self_view.data_ptr(), index_view.data_ptr(),
                         index_view.dtype() == DType::Int32, static_cast<int>(out.element_size()),
                         step, bound, g, out.numel(), static_cast<int64_t*>(bad.data_ptr()),
                         stream);
  check_launch(op);
  int64_t host[2] = {0, 0};
  LOOM_CUDA_CHECK(
      cudaMemcpyAsync(host, bad.data_ptr(), sizeof(host), cudaMemcpyDeviceToHost, stream), op);
  LOOM_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  if (host[0] != 0) return host[1];
  return std::nullopt;
}

// ---- index_select ----------------------------------------------------------------------------

Tensor index_select_compute(const Tensor& self, int64_t dim, const Tensor& index) {
  check_cuda_tensors("index_select", {{"self", self}, {"index", index}});
  dim = wrap_dim(dim, self.dim());
  const int64_t n = index.numel();
  LOOM_CHECK_T(IndexError, index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  LOOM_CHECK(!(self.dim() == 0 && n != 1),
             "index_select(): Index to scalar can have only 1 value, got ", n, " value(s)");
  LOOM_CHECK_T(TypeError, is_index_dtype(index.dtype()),
               "index_select(): Expected dtype int32 or int64 for index");
  Dims out_sizes(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) out_sizes[dim] = n;
  Tensor out = Tensor::empty(out_sizes, TensorOptions{}.with(self.dtype()).with(self.device()));
  if (self.dim() > 1 && n > 0 && self.numel() == 0) {
    LOOM_CHECK(self.size(dim) > 0, "index_select(): self indexing axis dim should be positive");
  }
  // A 0-d self is a 1-element vector here.
  const Tensor s = self.dim() == 0 ? self.as_strided_view({1}, {1}, self.storage_offset()) : self;
  const Tensor o = self.dim() == 0 ? out.as_strided_view({1}, {1}, out.storage_offset()) : out;
  const int64_t bound = s.size(dim), step = s.stride(dim);
  Dims self_strides(s.strides().begin(), s.strides().end());
  self_strides[dim] = 0;
  Dims index_strides(static_cast<size_t>(o.dim()), 0);
  index_strides[dim] = index.dim() == 0 ? 0 : index.stride(0);
  const Tensor self_view = s.as_strided_view(o.sizes(), self_strides, s.storage_offset());
  const Tensor index_view = index.as_strided_view(o.sizes(), index_strides, index.storage_offset());
  const std::optional<int64_t> badv =
      run_gather("index_select", o, self_view, index_view, step, bound);
  LOOM_CHECK_T(IndexError, !badv, "index out of range in self");
  return out;
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  return index_select_compute(self, dim, index);
}

Tensor& index_select_out(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  LOOM_CHECK_T(TypeError, out.dtype() == self.dtype(),
               "index_select(): self and result must have the same scalar type");
  const Tensor r = index_select_compute(self, dim, index);
  resize_output("index_select.out", out, r.sizes());
  copy_kernel("index_select.out", out, r);
  out.bump_version();
  return out;
}

// ---- gather ----------------------------------------------------------------------------------

void check_gather_shape(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t self_dims = std::max<int64_t>(self.dim(), 1);
  LOOM_CHECK(self_dims == std::max<int64_t>(index.dim(), 1),
             "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t i = 0; i < self_dims; ++i) {
    if (i == dim) continue;
    const int64_t is = index.dim() == 0 ? 1 : index.size(i);
    const int64_t ss = self.dim() == 0 ? 1 : self.size(i);
    LOOM_CHECK(is <= ss, "Size does not match at dimension ", i, " expected index ",
               sizes_str(index.sizes()), " to be no larger than self ", sizes_str(self.sizes()),
               " apart from dimension ", dim);
  }
}

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/) {
  check_cuda_tensors("gather", {{"self", self}, {"index", index}});
  dim = wrap_dim(dim, self.dim());
  Tensor out = Tensor::empty(index.sizes(), TensorOptions{}.with(self.dtype()).with(self.device()));
  if (index.numel() == 0) return out;
  LOOM_CHECK_T(TypeError, index.dtype() == DType::Int64,
               "gather(): Expected dtype int64 for index");
  check_gather_shape(self, dim, index);
  // 0-d tensors are 1-element vectors here.
  auto vec = [](const Tensor& t) {
    return t.dim() == 0 ? t.as_strided_view({1}, {1}, t.storage_offset()) : t;
  };
  const Tensor s = vec(self), x = vec(index), o = vec(out);
  const int64_t bound = s.size(dim), step = s.stride(dim);
  Dims self_strides(s.strides().begin(), s.strides().end());
  self_strides[dim] = 0;
  const Tensor self_view = s.as_strided_view(x.sizes(), self_strides, s.storage_offset());
  const std::optional<int64_t> badv = run_gather("gather", o, self_view, x, step, bound);
  LOOM_CHECK_T(IndexError, !badv, "index ", badv.value_or(0), " is out of bounds for dimension ",
               dim, " with size ", bound);
  return out;
}

// ---- masked_fill -----------------------------------------------------------------------------

// The C type name PyTorch prints for a dtype (the CPU's c_type_name).
std::string_view c_type_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "unsigned char";
    case DType::Int8:
      return "signed char";
    case DType::Int16:
      return "short int";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "long int";
    case DType::Float16:
      return "c10::Half";
    case DType::BFloat16:
      return "c10::BFloat16";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
  }
  return "?";
}

void check_fill_mask(const Tensor& mask) {
  LOOM_CHECK_T(TypeError, mask.dtype() == DType::Bool,
               "masked_fill_ only supports boolean masks, but got mask with dtype ",
               c_type_name(mask.dtype()));
}

// self[mask] = value (value a Scalar, or a 0-d tensor read as the common dtype).
Tensor masked_fill_run(std::string_view op, const Tensor& self, const Tensor& mask,
                       const Scalar* value, const Tensor* value_tensor, bool inplace) {
  check_fill_mask(mask);
  CudaIterator it(op);
  it.add_input("self", self).add_input("mask", mask, /*promote=*/false);
  if (value != nullptr) {
    it.add_scalar(*value, /*promote=*/false);
  } else {
    it.add_input("value", *value_tensor, /*promote=*/false);
  }
  if (inplace) it.set_output(self, OutputKind::InPlace);
  it.build();
  kernels::PointwiseLaunch p;
  p.op = kernels::PwOp::MaskedFill;
  it.run(p);
  return it.finish();
}

void check_fill_value(const Tensor& value) {
  LOOM_CHECK(value.dim() == 0,
             "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
             value.dim(), " dimension(s).");
}

Tensor masked_fill_scalar(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_run("masked_fill.Scalar", self, mask, &value, nullptr, false);
}
Tensor masked_fill_tensor(const Tensor& self, const Tensor& mask, const Tensor& value) {
  check_fill_mask(mask);
  check_fill_value(value);
  if (value.device().is_cpu()) {
    const Scalar v = value.item();
    return masked_fill_run("masked_fill.Tensor", self, mask, &v, nullptr, false);
  }
  return masked_fill_run("masked_fill.Tensor", self, mask, nullptr, &value, false);
}
Tensor& masked_fill_scalar_(Tensor& self, const Tensor& mask, const Scalar& value) {
  masked_fill_run("masked_fill_.Scalar", self, mask, &value, nullptr, true);
  return self;
}
Tensor& masked_fill_tensor_(Tensor& self, const Tensor& mask, const Tensor& value) {
  check_fill_mask(mask);
  check_fill_value(value);
  if (value.device().is_cpu()) {
    const Scalar v = value.item();
    masked_fill_run("masked_fill_.Tensor", self, mask, &v, nullptr, true);
  } else {
    masked_fill_run("masked_fill_.Tensor", self, mask, nullptr, &value, true);
  }
  return self;
}

// ---- tril / triu -------------------------------------------------------------------------------

void zero_triangle(const char* op, const Tensor& t, int64_t diagonal, bool upper) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  if (t.numel() == 0) return;
  const int dev = device_index(t);
  DeviceGuard guard(dev);
  kernels::launch_triangle(t.data_ptr(), static_cast<int>(t.element_size()),
                           t.numel() / (rows * cols), rows, cols, diagonal, upper,
                           current_stream(dev));
  check_launch(op);
}

Tensor triangle(const char* op, const Tensor& self, int64_t diagonal, bool upper) {
  check_cuda_tensors(op, {{"self", self}});
  LOOM_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  Tensor out = cast_copy(self, self.dtype());
  zero_triangle(op, out, diagonal, upper);
  return out;
}

Tensor& triangle_(const char* op, Tensor& self, int64_t diagonal, bool upper) {
  check_cuda_tensors(op, {{"self", self}});
  LOOM_CHECK(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  self.bump_version();
  if (self.is_contiguous()) {
    zero_triangle(op, self, diagonal, upper);
  } else {
    const Tensor t = cast_copy(self, self.dtype());
    zero_triangle(op, t, diagonal, upper);
    copy_kernel(op, self, t);
  }
  return self;
}

Tensor tril(const Tensor& self, int64_t diagonal) {
  return triangle("tril", self, diagonal, false);
}
Tensor triu(const Tensor& self, int64_t diagonal) { return triangle("triu", self, diagonal, true); }
Tensor& tril_(Tensor& self, int64_t diagonal) { return triangle_("tril_", self, diagonal, false); }
Tensor& triu_(Tensor& self, int64_t diagonal) { return triangle_("triu_", self, diagonal, true); }

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("index_select", &index_select);
  m.impl("index_select.out", &index_select_out);
  m.impl("gather", &gather);
  m.impl("masked_fill.Scalar", &masked_fill_scalar);
  m.impl("masked_fill.Tensor", &masked_fill_tensor);
  m.impl("masked_fill_.Scalar", &masked_fill_scalar_);
  m.impl("masked_fill_.Tensor", &masked_fill_tensor_);
  m.impl("tril", &tril);
  m.impl("triu", &triu);
  m.impl("tril_", &tril_);
  m.impl("triu_", &triu_);
}

}  // namespace loom::cuda
