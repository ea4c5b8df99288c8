// libloom.so: tensor and autograd entries of the C ABI (Note [C ABI handles]).
#include <absl/strings/str_join.h>

#include <cstring>

#include "capi_internal.h"
#include "loom/autograd/grad_mode.h"
#include "loom/core/error.h"
#include "loom/ops/creation.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/tensor_methods.h"

namespace loom::capi {
namespace {

DType dtype_of_token(const char* fn, int32_t dtype) {
  LOOM_CHECK_T(TypeError, dtype >= 0 && dtype < kNumDTypes, fn, ": unknown dtype token ", dtype,
               " (get tokens from DTypeFromName)");
  return static_cast<DType>(dtype);
}

std::vector<int64_t> sizes_of(const char* fn, const int64_t* sizes, size_t ndim) {
  LOOM_CHECK_T(InvalidArgumentError, ndim == 0 || sizes != nullptr, fn,
               ": sizes is NULL but ndim is ", ndim);
  std::vector<int64_t> v(sizes, sizes + ndim);
  for (size_t i = 0; i < ndim; ++i) {
    LOOM_CHECK_T(ValueError, v[i] >= 0, fn, ": negative dimension ", v[i], " at index ", i,
                 " of sizes [", absl::StrJoin(v, ", "), "]");
  }
  return v;
}

LoomStatus* copy_dims(const char* fn, IntArrayRef dims, int64_t* out, size_t capacity,
                      size_t* ndim) {
  *ndim = dims.size();
  if (capacity < dims.size()) {
    return make_status(LOOM_INVALID_ARGUMENT, str_cat(fn, ": the tensor has ", dims.size(),
                                                      " dimensions but capacity is ", capacity));
  }
  if (!dims.empty()) std::memcpy(out, dims.data(), dims.size() * sizeof(int64_t));
  return nullptr;
}

LoomStatus* tensor_from_data(const void* data, const int64_t* sizes, size_t ndim, int32_t dtype,
                             const char* device, LoomTensor** out) {
  LOOM_CAPI_NOT_NULL("TensorFromData", out);
  LOOM_CAPI_TRY
  const DType d = dtype_of_token("TensorFromData", dtype);
  const std::vector<int64_t> shape = sizes_of("TensorFromData", sizes, ndim);
  const Device dev = device ? Device(device) : Device();
  // A meta tensor keeps no data (as PyTorch's torch.tensor(data, device="meta")).
  Tensor cpu = Tensor::empty(shape, TensorOptions{}.with(d).with(dev.is_meta() ? dev : Device()));
  const size_t nbytes = static_cast<size_t>(cpu.numel()) * element_size(d);
  LOOM_CHECK_T(InvalidArgumentError, nbytes == 0 || data != nullptr,
               "TensorFromData: data is NULL for a tensor of ", cpu.numel(), " elements");
  if (nbytes && !dev.is_meta()) std::memcpy(cpu.data_ptr(), data, nbytes);
  *out = give(dev.is_cpu() || dev.is_meta() ? cpu : cpu.to(dev));
  LOOM_CAPI_CATCH
}

LoomStatus* tensor_empty(const int64_t* sizes, size_t ndim, int32_t dtype, const char* device,
                         LoomTensor** out) {
  LOOM_CAPI_NOT_NULL("TensorEmpty", out);
  LOOM_CAPI_TRY
  const DType d = dtype_of_token("TensorEmpty", dtype);
  const Device dev = device ? Device(device) : Device();
  *out =
      give(Tensor::empty(sizes_of("TensorEmpty", sizes, ndim), TensorOptions{}.with(d).with(dev)));
  LOOM_CAPI_CATCH_ECHOING(device ? device : "")
}

LoomStatus* tensor_zeros(const int64_t* sizes, size_t ndim, int32_t dtype, const char* device,
                         LoomTensor** out) {
  LOOM_CAPI_NOT_NULL("TensorZeros", out);
  LOOM_CAPI_TRY
  const DType d = dtype_of_token("TensorZeros", dtype);
  const Device dev = device ? Device(device) : Device();
  *out = give(loom::zeros(sizes_of("TensorZeros", sizes, ndim), d, dev));
  LOOM_CAPI_CATCH_ECHOING(device ? device : "")
}

LoomTensor* tensor_retain(LoomTensor* t) {
  if (t) intrusive_ptr_add_ref(impl_of(t));
  return t;
}
void tensor_release(LoomTensor* t) {
  if (t) intrusive_ptr_release(impl_of(t));
}

#define LOOM_CAPI_TENSOR(fn, t) \
  LOOM_CAPI_NOT_NULL(fn, t);    \
  const TensorImpl& self = *impl_of(t)

LoomStatus* tensor_dim(const LoomTensor* t, size_t* out) {
  LOOM_CAPI_TENSOR("TensorDim", t);
  LOOM_CAPI_NOT_NULL("TensorDim", out);
  *out = self.sizes().size();
  return nullptr;
}
LoomStatus* tensor_numel(const LoomTensor* t, int64_t* out) {
  LOOM_CAPI_TENSOR("TensorNumel", t);
  LOOM_CAPI_NOT_NULL("TensorNumel", out);
  *out = self.numel();
  return nullptr;
}
LoomStatus* tensor_sizes(const LoomTensor* t, int64_t* out, size_t capacity, size_t* ndim) {
  LOOM_CAPI_TENSOR("TensorSizes", t);
  LOOM_CAPI_NOT_NULL("TensorSizes", ndim);
  if (capacity > 0) LOOM_CAPI_NOT_NULL("TensorSizes", out);
  return copy_dims("TensorSizes", self.sizes(), out, capacity, ndim);
}
LoomStatus* tensor_strides(const LoomTensor* t, int64_t* out, size_t capacity, size_t* ndim) {
  LOOM_CAPI_TENSOR("TensorStrides", t);
  LOOM_CAPI_NOT_NULL("TensorStrides", ndim);
  if (capacity > 0) LOOM_CAPI_NOT_NULL("TensorStrides", out);
  return copy_dims("TensorStrides", self.strides(), out, capacity, ndim);
}
LoomStatus* tensor_dtype(const LoomTensor* t, int32_t* out) {
  LOOM_CAPI_TENSOR("TensorDType", t);
  LOOM_CAPI_NOT_NULL("TensorDType", out);
  *out = static_cast<int32_t>(self.dtype());
  return nullptr;
}
LoomStatus* write_text(const char* fn, const std::string& text, char* out, size_t capacity) {
  LOOM_CAPI_NOT_NULL(fn, out);
  if (capacity < text.size() + 1) {
    return make_status(LOOM_INVALID_ARGUMENT, str_cat(fn, ": the text needs ", text.size() + 1,
                                                      " bytes but capacity is ", capacity));
  }
  std::memcpy(out, text.c_str(), text.size() + 1);
  return nullptr;
}
LoomStatus* tensor_device(const LoomTensor* t, char* out, size_t capacity) {
  LOOM_CAPI_NOT_NULL("TensorDevice", t);
  LOOM_CAPI_TRY
  return write_text("TensorDevice", impl_of(t)->device().str(), out, capacity);
  LOOM_CAPI_CATCH
}
// Note [Meta tensors] (core/src/allocator.cpp): a meta tensor has no data to read. A NULL
// data pointer for elements that exist would be a trap in C, so the reading entries refuse it.
void check_has_data(const char* fn, const Tensor& x) {
  LOOM_CHECK_T(DeviceError, !x.device().is_meta(), fn, ": the meta tensor ", x.describe(),
               " has no data (a meta tensor carries only sizes, strides and dtype)");
}

LoomStatus* tensor_data_ptr(const LoomTensor* t, void** out) {
  LOOM_CAPI_NOT_NULL("TensorDataPtr", t);
  LOOM_CAPI_NOT_NULL("TensorDataPtr", out);
  LOOM_CAPI_TRY
  if (impl_of(t)->numel() == 0) {
    *out = nullptr;
    return nullptr;
  }
  const BorrowedTensor x(t);
  check_has_data("TensorDataPtr", x.get());
  *out = x.get().data_ptr();
  LOOM_CAPI_CATCH
}
LoomStatus* tensor_copy_to_host(const LoomTensor* t, void* out, size_t nbytes) {
  LOOM_CAPI_NOT_NULL("TensorCopyToHost", t);
  LOOM_CAPI_TRY
  Tensor x = borrow(t);
  const size_t need = static_cast<size_t>(x.numel()) * element_size(x.dtype());
  LOOM_CHECK_T(InvalidArgumentError, nbytes == need, "TensorCopyToHost: the tensor ", x.describe(),
               " holds ", need, " bytes but nbytes is ", nbytes);
  if (need == 0) return nullptr;
  LOOM_CHECK_T(InvalidArgumentError, out != nullptr, "TensorCopyToHost: out is NULL");
  check_has_data("TensorCopyToHost", x);
  Tensor host = x.device().is_cpu() ? x : x.to(Device());
  host = host.contiguous();
  std::memcpy(out, host.data_ptr(), need);
  LOOM_CAPI_CATCH
}
LoomStatus* tensor_item(const LoomTensor* t, double* out) {
  LOOM_CAPI_NOT_NULL("TensorItem", t);
  LOOM_CAPI_NOT_NULL("TensorItem", out);
  LOOM_CAPI_TRY
  Tensor x = borrow(t);
  // PyTorch's words: "Tensor.item() cannot be called on meta tensors".
  LOOM_CHECK_T(DeviceError, !x.device().is_meta(),
               "TensorItem: item() cannot be called on meta tensors (got ", x.describe(), ")");
  *out = (x.device().is_cpu() ? x : x.to(Device())).item<double>();
  LOOM_CAPI_CATCH
}
LoomStatus* tensor_describe(const LoomTensor* t, char* out, size_t capacity) {
  LOOM_CAPI_NOT_NULL("TensorDescribe", t);
  LOOM_CAPI_TRY
  return write_text("TensorDescribe", borrow(t).describe(), out, capacity);
  LOOM_CAPI_CATCH
}

// ---- autograd ----
LoomStatus* tensor_requires_grad(const LoomTensor* t, bool* out) {
  LOOM_CAPI_TENSOR("TensorRequiresGrad", t);
  LOOM_CAPI_NOT_NULL("TensorRequiresGrad", out);
  *out = self.requires_grad();
  return nullptr;
}
LoomStatus* tensor_set_requires_grad(LoomTensor* t, bool value) {
  LOOM_CAPI_NOT_NULL("TensorSetRequiresGrad", t);
  LOOM_CAPI_TRY
  borrow(t).set_requires_grad(value);
  LOOM_CAPI_CATCH
}
LoomStatus* tensor_grad(const LoomTensor* t, LoomTensor** out) {
  LOOM_CAPI_NOT_NULL("TensorGrad", t);
  LOOM_CAPI_NOT_NULL("TensorGrad", out);
  LOOM_CAPI_TRY
  *out = give(borrow(t).grad());
  LOOM_CAPI_CATCH
}
LoomStatus* tensor_set_grad(LoomTensor* t, LoomTensor* grad) {
  LOOM_CAPI_NOT_NULL("TensorSetGrad", t);
  LOOM_CAPI_TRY
  borrow(t).set_grad(borrow(grad));
  LOOM_CAPI_CATCH
}
LoomStatus* tensor_detach(const LoomTensor* t, LoomTensor** out) {
  LOOM_CAPI_NOT_NULL("TensorDetach", t);
  LOOM_CAPI_NOT_NULL("TensorDetach", out);
  LOOM_CAPI_TRY
  *out = give(borrow(t).detach());
  LOOM_CAPI_CATCH
}
LoomStatus* backward(LoomTensor* root, LoomTensor* grad, bool retain_graph) {
  LOOM_CAPI_NOT_NULL("Backward", root);
  LOOM_CAPI_TRY
  borrow(root).backward(borrow(grad), retain_graph);
  LOOM_CAPI_CATCH
}
bool grad_enabled() { return autograd::GradMode::is_enabled(); }
bool set_grad_enabled(bool enabled) {
  const bool previous = autograd::GradMode::is_enabled();
  autograd::GradMode::set_enabled(enabled);
  return previous;
}

}  // namespace

void fill_tensor_entries(LoomApi& api) {
  api.TensorFromData = &tensor_from_data;
  api.TensorEmpty = &tensor_empty;
  api.TensorZeros = &tensor_zeros;
  api.TensorRetain = &tensor_retain;
  api.TensorRelease = &tensor_release;
  api.TensorDim = &tensor_dim;
  api.TensorNumel = &tensor_numel;
  api.TensorSizes = &tensor_sizes;
  api.TensorStrides = &tensor_strides;
  api.TensorDType = &tensor_dtype;
  api.TensorDevice = &tensor_device;
  api.TensorDataPtr = &tensor_data_ptr;
  api.TensorCopyToHost = &tensor_copy_to_host;
  api.TensorItem = &tensor_item;
  api.TensorDescribe = &tensor_describe;
  api.TensorRequiresGrad = &tensor_requires_grad;
  api.TensorSetRequiresGrad = &tensor_set_requires_grad;
  api.TensorGrad = &tensor_grad;
  api.TensorSetGrad = &tensor_set_grad;
  api.TensorDetach = &tensor_detach;
  api.Backward = &backward;
  api.GradEnabled = &grad_enabled;
  api.SetGradEnabled = &set_grad_enabled;
}

}  // namespace loom::capi
