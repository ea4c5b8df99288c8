#pragma once
// Helpers shared by the reference CPU kernels of this pack. The full strided
// elementwise engine (broadcasting, promotion, non-contiguous inputs) is the
// operator issue's; these kernels cover same-shape tensors and say so.

#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/ivalue.h"

namespace loom::ops::cpu {

/// Calls f with a typed null pointer for the floating dtypes the seed kernels support.
template <typename F>
decltype(auto) dispatch_floating(std::string_view op, const Tensor& t, F&& f) {
  switch (t.dtype()) {
    case DType::Float32:
      return f(static_cast<float*>(nullptr));
    case DType::Float64:
      return f(static_cast<double*>(nullptr));
    default:
      LOOM_THROW(TypeError, op, ": dtype ", dtype_name(t.dtype()), " of tensor ", t.describe(),
                 " is not supported by the reference kernel yet (float32, float64)");
  }
}

/// Checks what the seed kernels need: CPU, same sizes, same dtype, contiguous.
inline void check_same_layout(std::string_view op, const Tensor& self, const Tensor& other) {
  check_defined(op, {{"self", self}, {"other", other}});
  check_same_device(op, {{"self", self}, {"other", other}});
  LOOM_CHECK(self.sizes() == other.sizes(), op, ": the size of self ", sizes_str(self.sizes()),
             " must match the size of other ", sizes_str(other.sizes()),
             " (broadcasting arrives with the elementwise engine) in ",
             describe_call(op, {{"self", self}, {"other", other}}));
  check_same_dtype(op, {{"self", self}, {"other", other}});
  LOOM_CHECK(self.is_contiguous() && other.is_contiguous(), op,
             ": the reference kernel needs contiguous inputs, got self ", self.describe(),
             " strides ", sizes_str(self.strides()), " and other strides ",
             sizes_str(other.strides()));
}

}  // namespace loom::ops::cpu
