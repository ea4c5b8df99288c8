#pragma once
// Element types of the reference CPU kernels: storage structs for the 16-bit floats, the
// computation type of each storage type, conversions between them, dtype dispatch and
// PyTorch's names for dtypes in messages ("Float", "Long").

#include <cmath>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "loom/core/half.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::ops::cpu {

/// Storage of one float16 element (IEEE binary16 bits).
struct Half {
  uint16_t bits;
};
/// Storage of one bfloat16 element.
struct BFloat16 {
  uint16_t bits;
};

/// The type an element of storage type T is computed in: float for the 16-bit floats
/// (as PyTorch's opmath_type), T itself otherwise.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<Half> {
  using type = float;
};
template <>
struct ComputeType<BFloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

/// The storage type's DType.
template <typename T>
inline constexpr DType storage_dtype = dtype_of<T>;
template <>
inline constexpr DType storage_dtype<Half> = DType::Float16;
template <>
inline constexpr DType storage_dtype<BFloat16> = DType::BFloat16;

template <typename T>
inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// Converts a value between storage/compute types with C++ rules (to bool: != 0), going
/// through float for the 16-bit floats.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half>) {
    return convert<To>(half_to_float(v.bits));
  } else if constexpr (std::is_same_v<From, BFloat16>) {
    return convert<To>(bfloat16_to_float(v.bits));
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half{float_to_half(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16{float_to_bfloat16(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // Out-of-range float -> int is undefined in C++; go through int64 as PyTorch's CPU
    // kernels effectively do, so NaN/inf give a defined (if arbitrary) value.
    if (!std::isfinite(v)) return To(0);
    if constexpr (std::is_same_v<To, int64_t>) return static_cast<int64_t>(v);
    return static_cast<To>(static_cast<int64_t>(v));
  } else {
    return static_cast<To>(v);
  }
}

/// Calls f with a typed null pointer (`[&]<typename T>(T*) {...}`) for dtype d.
template <typename F>
decltype(auto) dispatch_all(DType d, F&& f) {
  switch (d) {
    case DType::Bool:
      return f(static_cast<bool*>(nullptr));
    case DType::UInt8:
      return f(static_cast<uint8_t*>(nullptr));
    case DType::Int8:
      return f(static_cast<int8_t*>(nullptr));
    case DType::Int16:
      return f(static_cast<int16_t*>(nullptr));
    case DType::Int32:
      return f(static_cast<int32_t*>(nullptr));
    case DType::Int64:
      return f(static_cast<int64_t*>(nullptr));
    case DType::Float16:
      return f(static_cast<Half*>(nullptr));
    case DType::BFloat16:
      return f(static_cast<BFloat16*>(nullptr));
    case DType::Float32:
      return f(static_cast<float*>(nullptr));
    case DType::Float64:
      break;
  }
  return f(static_cast<double*>(nullptr));
}

/// Calls f with a typed null pointer for the floating dtypes; TypeError naming op otherwise.
template <typename F>
decltype(auto) dispatch_floats(std::string_view op, const Tensor& t, F&& f) {
  switch (t.dtype()) {
    case DType::Float16:
      return f(static_cast<Half*>(nullptr));
    case DType::BFloat16:
      return f(static_cast<BFloat16*>(nullptr));
    case DType::Float32:
      return f(static_cast<float*>(nullptr));
    case DType::Float64:
      return f(static_cast<double*>(nullptr));
    default:
      LOOM_THROW(TypeError, op, ": expected a floating point input, got ", t.describe());
  }
}

// PyTorch's dtype names in messages and the "not implemented for" error, shared with every
// backend (loom/ops/meta/pointwise.h).
using meta::c_type_name;
using meta::throw_dtype_unsupported;
using meta::torch_type_name;

}  // namespace loom::ops::cpu
