// CUDA kernels of index_select (and .out), gather, masked_fill (four forms), tril/triu (and
// their in-place forms), with the checks and messages of ops/core/cpu/{indexing,
// index_advanced,shape_copies}.cpp.
//
// Note [CUDA index checks]: the CPU kernels refuse an index out of range with an IndexError;
// here the kernel flags it on the device and the host reads the flag back after the launch
// (one device-to-host copy and a stream synchronization per call) and throws the CPU's
// message. When several indices are bad the one reported may not be the first.
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/copy_kernel.h"
#include "kernels/cuda_iterator.h"
#include "loom/core/memory_overlap.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/indexing.h"
#include "loom/ops/meta/shape.h"
#include "loom/ops/op_handle.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

using ops::meta::check_gather_shape;
using ops::meta::check_index_add;

using Dims = std::vector<int64_t>;

using ops::meta::is_index_dtype;

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
  dim = ops::meta::wrap_dim("index_select", dim, self.dim());
  const Dims out_sizes = ops::meta::index_select_sizes(self, dim, index);
  Tensor out = Tensor::empty(out_sizes, TensorOptions{}.with(self.dtype()).with(self.device()));
  ops::meta::check_index_select_axis(self, dim, index);
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
  LOOM_CHECK_T(IndexError, !badv, "index_select: index out of range in self");
  return out;
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  return index_select_compute(self, dim, index);
}

Tensor& index_select_out(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  ops::meta::check_index_select_out(self, out);
  const Tensor r = index_select_compute(self, dim, index);
  resize_output("index_select.out", out, r.sizes());
  copy_kernel("index_select.out", out, r);
  out.bump_version();
  return out;
}

// ---- gather ----------------------------------------------------------------------------------

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/) {
  check_cuda_tensors("gather", {{"self", self}, {"index", index}});
  dim = ops::meta::wrap_dim("gather", dim, self.dim());
  Tensor out = Tensor::empty(index.sizes(), TensorOptions{}.with(self.dtype()).with(self.device()));
  if (index.numel() == 0) return out;
  ops::meta::check_gather_index_dtype(index);
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
  LOOM_CHECK_T(IndexError, !badv,
               ops::meta::index_out_of_bounds("gather", badv.value_or(0), dim, bound));
  return out;
}

// ---- scatter family: index_add, index_select_backward, scatter, scatter_add -------------------

// A 0-d tensor as a 1-element vector (the CPU's nonempty_geometry).
Tensor as_vector(const Tensor& t) {
  return t.dim() == 0 ? t.as_strided_view({1}, {1}, t.storage_offset()) : t;
}

// Runs sl over the iteration shape of src_view (dst_view, index_view over the same shape);
// throws message(bad index) if the kernel flagged one (Note [CUDA index checks]).
template <typename Message>
void run_scatter(const char* op, kernels::ScatterLaunch sl, const Tensor& dst_view,
                 const Tensor& index_view, const Tensor& src_view, Message message) {
  const int64_t numel = index_view.numel();
  if (numel == 0) return;
  const int dev = device_index(dst_view);
  Tensor bad = Tensor::empty({2}, TensorOptions{}.with(DType::Int64).with(dst_view.device()));
  DeviceGuard guard(dev);
  const cudaStream_t stream = current_stream(dev);
  LOOM_CUDA_CHECK(cudaMemsetAsync(bad.data_ptr(), 0, 2 * sizeof(int64_t), stream), op);
  const kernels::Geometry g =
      make_geometry(op, index_view.sizes(), {&dst_view, &index_view, &src_view});
  sl.dst = dst_view.data_ptr();
  sl.index = index_view.data_ptr();
  sl.index_is_int32 = index_view.dtype() == DType::Int32;
  sl.bad = static_cast<int64_t*>(bad.data_ptr());
  kernels::launch_scatter(sl, g, numel, stream);
  check_launch(op);
  int64_t host[2] = {0, 0};
  LOOM_CUDA_CHECK(
      cudaMemcpyAsync(host, bad.data_ptr(), sizeof(host), cudaMemcpyDeviceToHost, stream), op);
  LOOM_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  LOOM_CHECK_T(IndexError, host[0] == 0, message(host[1]));
}

void check_scatter_add_dtype(const char* op, const Tensor& t) {
  LOOM_CHECK_T(TypeError, kernels::scatter_add_supported(to_dt(t.dtype())), op, ": dtype ",
               dtype_name(t.dtype()), " is not supported on ", t.device().str(),
               " (float32, float64, float16, bfloat16, int32 and int64 are)");
}

// result.select(dim, index[i]) += alpha * source.select(dim, i).
void index_add_into(const char* op, const Tensor& result, int64_t dim, const Tensor& index,
                    const Tensor& source, const Scalar& alpha) {
  check_scatter_add_dtype(op, result);
  ops::meta::check_scalar_fits(op, alpha, result.dtype());  // as the CPU kernel
  if (index.numel() == 0 || result.numel() == 0) return;
  const Tensor r = as_vector(result);
  // A source sharing memory with result is read from a copy.
  const Tensor src =
      as_vector(source.is_alias_of(result) ? cast_copy(source, source.dtype()) : source);
  Dims dst_strides(r.strides().begin(), r.strides().end());
  dst_strides[dim] = 0;
  Dims index_strides(static_cast<size_t>(src.dim()), 0);
  index_strides[dim] = index.dim() == 0 ? 0 : index.stride(0);
  kernels::ScatterLaunch sl;
  sl.mode = kernels::ScatterMode::Add;
  sl.dtype = to_dt(result.dtype());
  sl.src = src.data_ptr();
  sl.dst_dim_stride = r.stride(dim);
  sl.bound = r.size(dim);
  sl.alpha_d = alpha.to<double>();
  sl.alpha_i = alpha.to<int64_t>();
  run_scatter(op, sl, r.as_strided_view(src.sizes(), dst_strides, r.storage_offset()),
              index.as_strided_view(src.sizes(), index_strides, index.storage_offset()), src,
              [op](int64_t) { return str_cat(op, ": index out of range in self"); });
}

Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha) {
  check_cuda_tensors("index_add_", {{"self", self}, {"index", index}, {"source", source}});
  dim = ops::meta::wrap_dim("index_add_", dim, self.dim());
  check_index_add(self, dim, index, source);
  assert_no_internal_overlap("index_add_", self);  // Note [Memory overlap]
  index_add_into("index_add_", self, dim, index, source, alpha);
  self.bump_version();
  return self;
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  check_cuda_tensors("index_add", {{"self", self}, {"index", index}, {"source", source}});
  dim = ops::meta::wrap_dim("index_add", dim, self.dim());
  check_index_add(self, dim, index, source);
  Tensor result = cast_copy(self, self.dtype());
  index_add_into("index_add", result, dim, index, source, alpha);
  return result;
}

Tensor index_select_backward(const Tensor& grad, IntArrayRef self_sizes, int64_t dim,
                             const Tensor& index) {
  check_cuda_tensors("index_select_backward", {{"grad", grad}, {"index", index}});
  Tensor result = Tensor::empty(self_sizes, TensorOptions{}.with(grad.dtype()).with(grad.device()));
  {
    const int dev = device_index(result);
    DeviceGuard guard(dev);
    LOOM_CUDA_CHECK(cudaMemsetAsync(result.data_ptr(), 0,
                                    static_cast<size_t>(result.numel()) * result.element_size(),
                                    current_stream(dev)),
                    "index_select_backward");
  }
  dim = ops::meta::wrap_dim("index_select_backward", dim, result.dim());
  check_index_add(result, dim, index, grad);
  index_add_into("index_select_backward", result, dim, index, grad, Scalar(1));
  return result;
}

// The CPU's check_scatter (scatter_gather_dtype_check, scatter_shape_check); dim wrapped.
int64_t check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  check_cuda_tensors("scatter", {{"self", self}, {"index", index}, {"src", src ? *src : self}});
  dim = ops::meta::wrap_dim("scatter", dim, self.dim());
  ops::meta::check_scatter(self, dim, index, src);
  return dim;
}

// out (self or its copy) scattered along dim: src's elements (or value) at index.
void scatter_into(const char* op, const Tensor& out, int64_t dim, const Tensor& index,
                  const Tensor* src, const Scalar* value, kernels::ScatterMode mode) {
  if (index.numel() == 0) return;
  if (mode == kernels::ScatterMode::Add) check_scatter_add_dtype(op, out);
  const Tensor o = as_vector(out), x = as_vector(index);
  Dims dst_strides(o.strides().begin(), o.strides().end());
  dst_strides[dim] = 0;
  kernels::ScatterLaunch sl;
  sl.mode = mode;
  sl.dtype = to_dt(out.dtype());
  sl.dst_dim_stride = o.stride(dim);
  sl.bound = o.size(dim);
  Tensor src_view;
  if (src != nullptr) {
    const Tensor v = as_vector(src->is_alias_of(out) ? cast_copy(*src, src->dtype()) : *src);
    src_view = v.as_strided_view(x.sizes(), v.strides(), v.storage_offset());
    sl.src = src_view.data_ptr();
  } else {
    src_view = x;  // a placeholder operand: Value mode reads no src
    // The value's bits in out's dtype, from the CPU's fill_ (convert<T>(value.to<C>())).
    const Tensor host = Tensor::empty({1}, TensorOptions{}.with(out.dtype()));
    LOOM_TYPED_OP(fill_op, "aten::fill_.Scalar", Tensor(const Tensor&, const Scalar&));
    fill_op(host, *value);
    std::memcpy(&sl.value_bits, host.data_ptr(), host.element_size());
  }
  const int64_t bound = sl.bound;
  run_scatter(op, sl, o.as_strided_view(x.sizes(), dst_strides, o.storage_offset()), x, src_view,
              [&](int64_t v) { return ops::meta::index_out_of_bounds("scatter", v, dim, bound); });
}

Tensor scatter_run(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                   const Tensor* src, const Scalar* value, kernels::ScatterMode mode,
                   Tensor* inplace) {
  dim = check_scatter(self, dim, index, src);
  if (value != nullptr) {  // Note [Checked scalar conversion], named as the CPU kernel does
    ops::meta::check_scalar_fits(inplace != nullptr ? "scatter_.value" : "scatter.value", *value,
                                 self.dtype());
  }
  if (inplace != nullptr) assert_no_internal_overlap(op, *inplace);  // Note [Memory overlap]
  Tensor out = inplace != nullptr ? *inplace : cast_copy(self, self.dtype());
  scatter_into(op, out, dim, index, src, value, mode);
  if (inplace != nullptr) out.bump_version();
  return out;
}

Tensor scatter_src(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_run("scatter", self, dim, index, &src, nullptr, kernels::ScatterMode::Copy,
                     nullptr);
}
Tensor& scatter_src_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_run("scatter_", self, dim, index, &src, nullptr, kernels::ScatterMode::Copy, &self);
  return self;
}
Tensor scatter_value(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_run("scatter", self, dim, index, nullptr, &value, kernels::ScatterMode::Value,
                     nullptr);
}
Tensor& scatter_value_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  scatter_run("scatter_", self, dim, index, nullptr, &value, kernels::ScatterMode::Value, &self);
  return self;
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_run("scatter_add", self, dim, index, &src, nullptr, kernels::ScatterMode::Add,
                     nullptr);
}
Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_run("scatter_add_", self, dim, index, &src, nullptr, kernels::ScatterMode::Add, &self);
  return self;
}

// ---- index_fill ------------------------------------------------------------------------------

Tensor& index_fill_impl(std::string_view op, Tensor& self, int64_t dim, const Tensor& index,
                        const Scalar& value) {
  check_cuda_tensors("index_fill_", {{"self", self}, {"index", index}});
  dim = ops::meta::index_fill_dim(self, dim, index);
  ops::meta::check_scalar_fits(op, value, self.dtype());  // Note [Checked scalar conversion]
  assert_no_internal_overlap("index_fill_", self);        // Note [Memory overlap]
  const Tensor s = as_vector(self);
  const int64_t size = s.size(dim);
  if (index.numel() > 0 && s.numel() > 0) {
    // Iterate over self's shape with dim replaced by the indices.
    Dims sizes(s.sizes().begin(), s.sizes().end());
    sizes[dim] = index.numel();
    Dims dst_strides(s.strides().begin(), s.strides().end());
    dst_strides[dim] = 0;
    Dims index_strides(sizes.size(), 0);
    index_strides[dim] = index.dim() == 0 ? 0 : index.stride(0);
    const Tensor index_view = index.as_strided_view(sizes, index_strides, index.storage_offset());
    kernels::ScatterLaunch sl;
    sl.mode = kernels::ScatterMode::Value;
    sl.dtype = to_dt(self.dtype());
    sl.dst_dim_stride = s.stride(dim);
    sl.bound = size;
    sl.wrap_negative = true;
    // The value's bits in self's dtype, from the CPU's fill_ (convert<T>(value.to<C>())).
    const Tensor host = Tensor::empty({1}, TensorOptions{}.with(self.dtype()));
    LOOM_TYPED_OP(fill_op, "aten::fill_.Scalar", Tensor(const Tensor&, const Scalar&));
    fill_op(host, value);
    std::memcpy(&sl.value_bits, host.data_ptr(), host.element_size());
    run_scatter("index_fill_", sl, s.as_strided_view(sizes, dst_strides, s.storage_offset()),
                index_view, index_view,
                [&](int64_t v) { return ops::meta::index_out_of_bounds(op, v, dim, size); });
  }
  self.bump_version();
  return self;
}

Scalar index_fill_value(const Tensor& value) {
  ops::meta::check_index_fill_value(value);
  if (value.device().is_cpu()) return value.item();
  LOOM_TYPED_OP(copy_op, "aten::copy_", Tensor(const Tensor&, const Tensor&, bool));
  Tensor host = Tensor::empty({}, TensorOptions{}.with(value.dtype()));
  copy_op(host, value, false);  // device to host (runtime/copy.cpp)
  return host.item();
}

Tensor& index_fill_scalar_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return index_fill_impl("index_fill_", self, dim, index, value);
}
Tensor& index_fill_tensor_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  return index_fill_impl("index_fill_", self, dim, index, index_fill_value(value));
}
Tensor index_fill_scalar(const Tensor& self, int64_t dim, const Tensor& index,
                         const Scalar& value) {
  check_cuda_tensors("index_fill", {{"self", self}});
  Tensor result = cast_copy(self, self.dtype());
  return index_fill_impl("index_fill", result, dim, index, value);
}
Tensor index_fill_tensor(const Tensor& self, int64_t dim, const Tensor& index,
                         const Tensor& value) {
  check_cuda_tensors("index_fill", {{"self", self}});
  Tensor result = cast_copy(self, self.dtype());
  return index_fill_impl("index_fill", result, dim, index, index_fill_value(value));
}

// ---- masked_fill -----------------------------------------------------------------------------

void check_fill_mask(const Tensor& mask) { ops::meta::check_masked_fill_mask(mask); }

// self[mask] = value (value a Scalar, or a 0-d tensor read as the common dtype).
Tensor masked_fill_run(std::string_view op, const Tensor& self, const Tensor& mask,
                       const Scalar* value, const Tensor* value_tensor, bool inplace) {
  check_fill_mask(mask);
  // Note [Checked scalar conversion]; a value on the device is cast like a tensor.
  if (value != nullptr) ops::meta::check_scalar_fits(op, *value, self.dtype());
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

void check_fill_value(const Tensor& value) { ops::meta::check_masked_fill_value(value); }

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
  ops::meta::check_triangle_dims(op, self);
  Tensor out = cast_copy(self, self.dtype());
  zero_triangle(op, out, diagonal, upper);
  return out;
}

Tensor& triangle_(const char* op, Tensor& self, int64_t diagonal, bool upper) {
  check_cuda_tensors(op, {{"self", self}});
  ops::meta::check_triangle_dims(op, self);
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
  m.impl("index_add", &index_add);
  m.impl("index_add_", &index_add_);
  m.impl("index_select_backward", &index_select_backward);
  m.impl("scatter.src", &scatter_src);
  m.impl("scatter_.src", &scatter_src_);
  m.impl("scatter.value", &scatter_value);
  m.impl("scatter_.value", &scatter_value_);
  m.impl("scatter_add", &scatter_add);
  m.impl("scatter_add_", &scatter_add_);
  m.impl("index_select.out", &index_select_out);
  m.impl("gather", &gather);
  m.impl("index_fill.int_Scalar", &index_fill_scalar);
  m.impl("index_fill.int_Tensor", &index_fill_tensor);
  m.impl("index_fill_.int_Scalar", &index_fill_scalar_);
  m.impl("index_fill_.int_Tensor", &index_fill_tensor_);
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
