#include "loom/core/tensor_checks.h"

#include <vector>

#include "absl/strings/str_join.h"

namespace loom {

std::string describe_call(std::string_view op, std::initializer_list<TensorArg> args) {
  std::vector<std::string> parts;
  for (const TensorArg& a : args) parts.push_back(str_cat(a.name, ": ", a.tensor.describe()));
  return str_cat(op, "(", absl::StrJoin(parts, ", "), ")");
}

void check_defined(std::string_view op, std::initializer_list<TensorArg> args) {
  for (const TensorArg& a : args) {
    LOOM_CHECK_T(TypeError, a.tensor.defined(), op,
                 ": expected a proper Tensor but got an undefined Tensor for argument '", a.name,
                 "'");
  }
}

void check_same_device(std::string_view op, std::initializer_list<TensorArg> args) {
  const Tensor* first = nullptr;
  for (const TensorArg& a : args) {
    if (!a.tensor.defined()) continue;
    if (!first) {
      first = &a.tensor;
    } else if (!(a.tensor.device() == first->device())) {
      LOOM_THROW(DeviceError, "Expected all tensors to be on the same device, but found ",
                 first->device().str(), " and ", a.tensor.device().str(), " in ",
                 describe_call(op, args));
    }
  }
}

void check_same_dtype(std::string_view op, std::initializer_list<TensorArg> args) {
  const Tensor* first = nullptr;
  for (const TensorArg& a : args) {
    if (!a.tensor.defined()) continue;
    if (!first) {
      first = &a.tensor;
    } else if (a.tensor.dtype() != first->dtype()) {
      LOOM_THROW(TypeError, "Expected all tensors to have the same dtype, but found ",
                 dtype_name(first->dtype()), " and ", dtype_name(a.tensor.dtype()), " in ",
                 describe_call(op, args));
    }
  }
}

void check_dim(std::string_view op, TensorArg arg, int64_t ndim) {
  LOOM_CHECK(arg.tensor.dim() == ndim, op, ": expected ", arg.name, " to be ", ndim,
             "-D, but got a ", arg.tensor.dim(), "-D tensor ", arg.tensor.describe());
}

bool resize_output(std::string_view op, const Tensor& out, IntArrayRef sizes) {
  LOOM_CHECK(out.defined(), op, ": out is an undefined tensor");
  if (out.sizes() == sizes) return false;
  // PyTorch warns (deprecated) when a non-empty out is resized, then resizes all the same.
  out.resize_(sizes);
  return true;
}

}  // namespace loom
