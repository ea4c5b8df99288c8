#pragma once
/// @file
/// Argument checks, parameter parsing and output shapes every backend of softmax,
/// log_softmax, their _-prefixed forms and backward ops shares, so that error messages are
/// word for word the same on every device. Each kernel checks its own devices first, then
/// calls these, then the dtypes it supports.

#include <cstdint>
#include <string_view>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::meta {

/// _softmax's / _log_softmax's checks of self: dim is in range (a 0-dim self takes 0 and
/// -1) and self is of a floating dtype.
inline void check_softmax_input(std::string_view op, const Tensor& self, int64_t dim) {
  wrap_dim(op, dim, self.dim());
  LOOM_CHECK_T(TypeError, is_floating_point(self.dtype()), op,
               ": expected a floating point input, got ", self.describe());
}

/// The result dtype of _softmax / _log_softmax: float32 for a float16 self with
/// half_to_float (which only float16 takes), else self's dtype.
inline DType softmax_half_to_float_dtype(std::string_view op, const Tensor& self,
                                         bool half_to_float) {
  if (!half_to_float) return self.dtype();
  LOOM_CHECK_T(TypeError, self.dtype() == DType::Float16, op,
               ": conversion is supported for Half type only, got ", self.describe());
  return DType::Float32;
}

/// The backward ops' checks: grad_output has output's sizes and dtype, and dim is in range.
inline void check_softmax_backward(std::string_view op, const Tensor& grad, const Tensor& output,
                                   int64_t dim) {
  LOOM_CHECK(grad.sizes() == output.sizes(), op, ": the size of grad_output ",
             sizes_str(grad.sizes()), " must match the size of output ", sizes_str(output.sizes()));
  check_same_dtype(op, {{"grad_output", grad}, {"output", output}});
  wrap_dim(op, dim, grad.dim());
}

}  // namespace loom::ops::meta
