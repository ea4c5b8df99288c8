#pragma once
/// @file
/// Creation ops (fill_, empty, zeros, ones, full, arange, linspace, eye, the random factories and
/// the *_like forms): argument checks, parameter parsing and output shapes every backend of these
/// ops shares, so that error messages are word for word the same on every device. Header-only,
/// no state, no device-specific code.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor.h"
#include "loom/ops/meta/result_size.h"

namespace loom::ops::meta {

/// fill_.Tensor: the value must be a defined 0-d tensor.
inline void check_fill_value(const Tensor& value) {
  LOOM_CHECK(value.defined() && value.dim() == 0,
             "fill_.Tensor: fill_ only supports 0-dimension "
             "value tensor but got tensor with ",
             value.defined() ? value.dim() : 0, " dimensions.");
}

/// Rejects any layout but torch.strided (layout 0, the only one Loom's backends have).
inline void check_layout(const char* op, std::optional<int64_t> layout) {
  LOOM_CHECK_T(NotImplementedError, !layout || *layout == 0, op, ": layout ", *layout,
               " is not supported (only torch.strided)");
}

/// Rejects a negative size in a factory's `size` argument.
inline void check_sizes(IntArrayRef size) {
  for (int64_t s : size) {
    LOOM_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ",
               sizes_str(size));
  }
}

/// The dtype of a floating factory (empty, zeros, rand ...): `dtype`, else the default float.
inline DType float_dtype(std::optional<DType> dtype) {
  return dtype.value_or(default_float_dtype());
}

/// full's dtype when none is given, inferred from the fill value as PyTorch does: bool, int64 or
/// the default float.
inline DType scalar_default_dtype(const Scalar& s) {
  if (s.is_bool()) return DType::Bool;
  if (s.is_integral()) return DType::Int64;
  return default_float_dtype();
}

/// arange's parsed arguments: the result's dtype and length, and whether its values are computed
/// exactly in int64 (all of start, end, step integral and an integral result dtype) rather than
/// as start + i * step in double.
struct ArangeParams {
  DType dtype;   ///< the result's dtype
  int64_t size;  ///< the result's length
  bool exact;    ///< values in int64 (start.to_int() + i * step.to_int())
  double start;  ///< start as a double
  double step;   ///< step as a double
};

/// Checks arange's start, end and step and computes the result's dtype and length.
inline ArangeParams arange_params(const Scalar& start, const Scalar& end, const Scalar& step,
                                  std::optional<DType> dtype) {
  const bool all_integral =
      !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  ArangeParams p;
  p.dtype = dtype.value_or(all_integral ? DType::Int64 : default_float_dtype());
  const double xstart = start.to_double();
  const double xend = end.to_double();
  const double xstep = step.to_double();
  p.start = xstart;
  p.step = xstep;
  LOOM_CHECK(xstep != 0, "arange: step must be nonzero");
  LOOM_CHECK(std::isfinite(xstart) && std::isfinite(xend), "arange: unsupported range: ", xstart,
             " -> ", xend);
  // PyTorch's C++ text says "upper bound and larger bound" (its Python reference fixed the
  // word); the values show which bound is on the wrong side.
  LOOM_CHECK((xstep > 0 && xend >= xstart) || (xstep < 0 && xend <= xstart),
             "arange: upper bound and lower bound inconsistent with step sign (start=", start.str(),
             ", end=", end.str(), ", step=", step.str(), ")");
  p.exact = all_integral && is_integral(p.dtype, /*include_bool=*/false);
  // Note [Result sizes that overflow]: the length is computed wide enough not to wrap (end -
  // start of two int64 needs 65 bits), and refused when it does not fit int64.
  const auto too_long = [&] {
    throw_result_size_overflow("arange", "the length of the range from ", start.str(), " to ",
                               end.str(), " by ", step.str());
  };
  if (p.exact) {
    const __int128 a = start.to_int(), b = end.to_int(), s = step.to_int();
    const __int128 size = s > 0 ? (b - a + s - 1) / s : (a - b - s - 1) / -s;
    if (size > std::numeric_limits<int64_t>::max()) too_long();
    p.size = static_cast<int64_t>(size);
  } else {
    const double size_d = std::ceil((xend - xstart) / xstep);
    // 2^63 itself does not convert to int64; NaN (inf / inf) is no length either.
    if (!(size_d >= 0 && size_d < 9223372036854775808.0)) too_long();
    p.size = static_cast<int64_t>(size_d);
  }
  check_result_numel("arange", {p.size}, p.dtype);
  return p;
}

/// linspace: the number of steps must be non-negative.
inline void check_linspace_steps(int64_t steps) {
  LOOM_CHECK(steps >= 0, "number of steps must be non-negative");
}

/// eye and eye.m: both sizes must be non-negative, and the n x m result of the given dtype must
/// be countable in int64 (Note [Result sizes that overflow]).
inline void check_eye_sizes(int64_t n, int64_t m, std::optional<DType> dtype) {
  LOOM_CHECK(n >= 0, "eye: n must be greater or equal to 0, got ", n);
  LOOM_CHECK(m >= 0, "eye: m must be greater or equal to 0, got ", m);
  check_result_numel("eye", {n, m}, float_dtype(dtype));
}

/// rand, randn and their *_like forms: the result's dtype must be floating.
inline void check_floating(const char* op, DType t) {
  LOOM_CHECK_T(TypeError, is_floating_point(t), op, ": expected a floating point dtype, got ",
               dtype_name(t));
}

/// randint: the range [low, high) must not be empty.
inline void check_randint_range(int64_t low, int64_t high) {
  LOOM_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low,
             " >= to=", high);
}

/// bernoulli.p and the element check of bernoulli: a probability lies in [0, 1].
inline void check_probability(double prob) {
  LOOM_CHECK(prob >= 0 && prob <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", prob);
}

/// bernoulli (Tensor): the tensor of probabilities must be floating.
inline void check_bernoulli_self(const Tensor& self) {
  LOOM_CHECK_T(TypeError, is_floating_point(self.dtype()),
               "bernoulli: expected a floating point tensor of probabilities, got ",
               self.describe());
}

/// The strides of a *_like result. PyTorch's preserve_format (the default, memory_format 1): a
/// dense, non-overlapping self (a permutation of a contiguous layout, e.g. a transpose) gives its
/// strides to the result; anything else, or memory_format 0 (contiguous), gets contiguous
/// strides. channels_last (2, 3) is not supported.
inline std::vector<int64_t> like_strides(const Tensor& self, std::optional<int64_t> memory_format) {
  const int64_t nd = self.dim();
  const DimVector contiguous = contiguous_strides(self.sizes());
  std::vector<int64_t> fallback(contiguous.begin(), contiguous.end());
  LOOM_CHECK_T(NotImplementedError, !memory_format || *memory_format <= 1, "memory_format ",
               memory_format.value_or(0),
               " is not supported by the reference kernels (contiguous and preserve are)");
  if ((memory_format && *memory_format == 0) || self.is_contiguous()) return fallback;
  std::vector<int64_t> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  // Outermost first: larger stride, ties keep dim order.
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return self.stride(a) > self.stride(b); });
  std::vector<int64_t> strides(nd);
  int64_t expected = 1;
  for (int64_t k = nd - 1; k >= 0; --k) {
    const int64_t d = perm[k];
    if (self.size(d) != 1 && self.stride(d) != expected) return fallback;
    strides[d] = expected;
    expected *= std::max<int64_t>(self.size(d), 1);
  }
  return strides;
}

}  // namespace loom::ops::meta
