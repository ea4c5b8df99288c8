#pragma once
/// @file
/// Reductions and scans (sum, prod, mean, max/min, amax/amin, argmax/argmin, var/std, norm,
/// cumsum/cumprod): argument checks, parameter parsing and output shapes every backend of these
/// ops shares, so that error messages are word for word the same on every device. Header-only,
/// no state, no device-specific code.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/ops/meta/wrap_dim.h"

namespace loom::ops::meta {

/// Which dims of self a reduction reduces: dims absent or empty (when empty_means_all)
/// means every dim. Negative dims wrap; a repeated dim is an error, as in PyTorch.
inline std::vector<bool> reduce_mask(std::string_view op, const Tensor& self,
                                     std::optional<IntArrayRef> dims, bool empty_means_all = true) {
  const int64_t nd = self.dim();
  std::vector<bool> mask(static_cast<size_t>(nd), false);
  if (!dims || (dims->empty() && empty_means_all)) {
    mask.assign(static_cast<size_t>(nd), true);
    return mask;
  }
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(nd, 1)), false);
  for (int64_t d : *dims) {
    const int64_t w = wrap_dim(op, d, nd);
    LOOM_CHECK(!seen[w], op, ": dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    if (nd > 0) mask[w] = true;
  }
  return mask;
}

/// The mask of one dim.
inline std::vector<bool> reduce_mask_one(std::string_view op, const Tensor& self, int64_t dim) {
  const int64_t w = wrap_dim(op, dim, self.dim());
  std::vector<bool> mask(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) mask[w] = true;
  return mask;
}

/// Throws IndexError (PyTorch's wording) if a reduced dim has size 0: ops without identity.
inline void check_nonzero_reduced(std::string_view op, const Tensor& self,
                                  const std::vector<bool>& mask) {
  for (int64_t d = 0; d < self.dim(); ++d) {
    LOOM_CHECK_T(IndexError, !mask[d] || self.size(d) != 0, op, "(): Expected reduction dim ", d,
                 " to have non-zero size.");
  }
}

/// sum, prod, cumsum and cumprod: integers (and bool) give int64 unless dtype says otherwise; a
/// dtype converts the input first, as PyTorch does.
inline DType sum_dtype(const Tensor& self, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_integral(self.dtype()) ? DType::Int64 : self.dtype();
}

/// all and any: bool, except for uint8 inputs, which give uint8 (PyTorch's legacy rule).
inline DType logical_reduce_dtype(const Tensor& self) {
  return self.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;
}

/// mean: the result dtype (dtype, else self's), which must be floating.
inline DType mean_dtype(const Tensor& self, std::optional<DType> dtype) {
  const DType out = dtype.value_or(self.dtype());
  LOOM_CHECK_T(TypeError, is_floating_point(out), "mean(): could not infer output dtype. ",
               dtype ? "Optional dtype" : "Input dtype",
               " must be either a floating point or complex dtype. Got: ", dtype_name(out));
  return out;
}

/// max() and min() without dim: the input must not be empty.
inline void check_full_extreme(std::string_view op, const Tensor& self) {
  LOOM_CHECK(self.numel() > 0, op,
             "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
             "reduction dim with the 'dim' argument.");
}

/// argmax() and argmin() without dim: the input must not be empty.
inline void check_arg_full(std::string_view op, const Tensor& self) {
  LOOM_CHECK(self.numel() > 0, op,
             "(): Expected reduction dim to be specified for input.numel() == 0.");
}

/// var, std, var_mean, std_mean: the input must be floating.
inline void check_var_std_dtype(std::string_view op, const Tensor& self) {
  LOOM_CHECK_T(TypeError, is_floating_point(self.dtype()),
               "std and var only support floating point and complex dtypes, got ", self.describe(),
               " in ", op);
}

/// norm: a given dtype, and the (converted) input, must be floating.
inline void check_norm_dtypes(std::optional<DType> dtype, const Tensor& self) {
  LOOM_CHECK_T(TypeError, !dtype || is_floating_point(*dtype),
               "norm(): the dtype should be either floating point or complex. Got ",
               dtype_name(*dtype), " instead.");
  LOOM_CHECK_T(TypeError, is_floating_point(self.dtype()),
               "norm(): input dtype should be either floating point or complex. Got ",
               dtype_name(self.dtype()), " instead.");
}

/// The kind of a p-norm of order `order`, in a backend's enum Kind (with the enumerators Zero,
/// One, Two, Inf, NegInf and General).
template <typename Kind>
Kind norm_kind(double order) {
  Kind kind = Kind::General;
  if (order == 0) kind = Kind::Zero;
  if (order == 1) kind = Kind::One;
  if (order == 2) kind = Kind::Two;
  if (std::isinf(order)) kind = order > 0 ? Kind::Inf : Kind::NegInf;
  return kind;
}

/// norm of order +-inf has no identity: no reduced dim may be empty.
inline void check_norm_nonempty(const Tensor& self, const std::vector<bool>& mask, double order) {
  if (!std::isinf(order)) return;
  for (int64_t d = 0; d < self.dim(); ++d) {
    LOOM_CHECK_T(IndexError, !mask[d] || self.size(d) != 0,
                 "linalg.vector_norm cannot compute the ", order > 0 ? "inf" : "-inf",
                 " norm on an empty tensor because the operation does not have an identity");
  }
}

}  // namespace loom::ops::meta
