#pragma once
/// @file
/// Note [Checked scalar conversion]: a Scalar that an op writes into a tensor (fill_, full,
/// masked_fill, index_fill, scatter's value, add's alpha, clamp's bounds, constant pad) must be
/// representable in that tensor's dtype. PyTorch converts such values with c10::checked_convert
/// and refuses "value cannot be converted to type int8_t without overflow"; a plain cast would
/// wrap 300 to 44 in int8, and turn NaN or 1e30 into INT_MIN, silently. The rule, as c10's:
///  - bool never overflows, and a bool Scalar fits anything;
///  - into a floating dtype: NaN and +-inf fit; a finite value must lie within the dtype's
///    finite range (1e300 does not fit float32, 1e5 does not fit float16);
///  - a floating value into an integer dtype must lie within its range (NaN and inf never do);
///  - an integer into an unsigned dtype may also be negative down to -max (it wraps, so that
///    uint8 arithmetic can be written with negative constants), otherwise within range.
/// Values that a tensor op reads as a wrapped number (`int8_tensor + 1000`) are not checked:
/// PyTorch casts those like tensors. Every backend calls these checks before it converts.
/// Header-only, no state, no device-specific code.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "loom/core/dtype.h"
#include "loom/core/error.h"
#include "loom/core/scalar.h"

namespace loom::ops::meta {

/// The C type c10's checked_convert names in its overflow message ("int8_t", "int", "at::Half").
inline std::string_view checked_convert_type_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8_t";
    case DType::Int8:
      return "int8_t";
    case DType::Int16:
      return "int16_t";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "int64_t";
    case DType::Float16:
      return "at::Half";
    case DType::BFloat16:
      return "at::BFloat16";
    case DType::Float32:
      return "float";
    case DType::Float64:
      break;
  }
  return "double";
}

namespace detail {

/// The largest finite value of a dtype other than bool, in double.
inline double largest_finite(DType t) {
  switch (t) {
    case DType::UInt8:
      return 255.0;
    case DType::Int8:
      return 127.0;
    case DType::Int16:
      return 32767.0;
    case DType::Int32:
      return 2147483647.0;
    case DType::Int64:
      return 9223372036854775807.0;  // rounds to 2^63, which is handled by the caller
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;  // 0x7f7f
    case DType::Float32:
      return static_cast<double>(std::numeric_limits<float>::max());
    default:
      return std::numeric_limits<double>::max();
  }
}

/// The smallest value of an integer dtype, as int64 (0 for uint8).
inline int64_t lowest_integer(DType t) {
  switch (t) {
    case DType::UInt8:
      return 0;
    case DType::Int8:
      return -128;
    case DType::Int16:
      return -32768;
    case DType::Int32:
      return -2147483648LL;
    default:
      return std::numeric_limits<int64_t>::min();
  }
}

}  // namespace detail

/// Whether writing value into a tensor of dtype t overflows (Note [Checked scalar conversion]).
inline bool scalar_overflows(const Scalar& value, DType t) {
  if (t == DType::Bool || value.is_bool()) return false;
  const double hi = detail::largest_finite(t);
  if (value.is_floating_point()) {
    const double f = value.to_double();
    if (is_floating_point(t)) return std::isfinite(f) && (f < -hi || f > hi);
    if (std::isnan(f)) return true;
    // c10 compares f > max in double; for int64 max rounds up to 2^63, which does not convert
    // either (the cast would be undefined), so 2^63 counts as an overflow here too.
    if (t == DType::Int64 && f >= 9223372036854775808.0) return true;
    return f < static_cast<double>(detail::lowest_integer(t)) || f > hi;
  }
  const int64_t i = value.to_int();
  if (is_floating_point(t)) {
    const auto d = static_cast<double>(i);
    return d < -hi || d > hi;  // only float16 is narrow enough to overflow
  }
  if (t == DType::Int64) return false;
  const auto max = static_cast<int64_t>(hi);
  if (t == DType::UInt8) return i > max || i < -max;  // negative values wrap, as in c10
  return i < detail::lowest_integer(t) || i > max;
}

/// Throws PyTorch's overflow error ("fill_.Scalar: value cannot be converted to type int8_t
/// without overflow") when value does not fit dtype t (Note [Checked scalar conversion]).
inline void check_scalar_fits(std::string_view op, const Scalar& value, DType t) {
  LOOM_CHECK(!scalar_overflows(value, t), op, ": value cannot be converted to type ",
             checked_convert_type_name(t), " without overflow");
}

}  // namespace loom::ops::meta
