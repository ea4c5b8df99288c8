#pragma once
/// @file
/// DType (a token looked up by name), the cached dtype::float32() etc., dtype_of<T>, Device.
/// Part of loom/stable.hpp (include that).

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

#include "loom/stable/error.hpp"

namespace loom::stable {

/// A device as text: "cpu", "cuda", "cuda:0".
using Device = std::string;

/// An element type: a token looked up by name in the loaded library (never an ordinal fixed
/// at compile time, Note [Stable ABI rules]).
class DType {
 public:
  /// An invalid dtype (token -1).
  DType() = default;
  /// Wraps a token returned by the library.
  explicit DType(int32_t token) noexcept : token_(token) {}
  /// The dtype named name ("float32", "float", "int64", "long", "bool", ...); throws on an
  /// unknown name.
  static DType from_name(const char* name) {
    int32_t token = -1;
    check(api()->DTypeFromName(name, &token));
    return DType(token);
  }
  /// from_name for a std::string.
  static DType from_name(const std::string& name) { return from_name(name.c_str()); }
  /// The token (what LOOM_VALUE_DTYPE values and the C calls take).
  int32_t token() const noexcept { return token_; }
  /// The canonical name ("float32"); "invalid" for a token the library does not know.
  const char* name() const {
    const char* n = api()->DTypeName(token_);
    return n != nullptr ? n : "invalid";
  }
  /// Bytes per element.
  size_t itemsize() const {
    size_t size = 0;
    check(api()->DTypeItemSize(token_, &size));
    return size;
  }
  /// Same token.
  friend bool operator==(DType a, DType b) noexcept { return a.token_ == b.token_; }
  /// Different token.
  friend bool operator!=(DType a, DType b) noexcept { return a.token_ != b.token_; }
  /// Prints the name.
  friend std::ostream& operator<<(std::ostream& os, DType d) { return os << d.name(); }

 private:
  int32_t token_ = -1;
};

/// The dtypes by name, each looked up once and cached.
namespace dtype {
/// bool.
inline DType bool_() {
  static const DType d = DType::from_name("bool");
  return d;
}
/// uint8.
inline DType uint8() {
  static const DType d = DType::from_name("uint8");
  return d;
}
/// int8.
inline DType int8() {
  static const DType d = DType::from_name("int8");
  return d;
}
/// int16.
inline DType int16() {
  static const DType d = DType::from_name("int16");
  return d;
}
/// int32.
inline DType int32() {
  static const DType d = DType::from_name("int32");
  return d;
}
/// int64.
inline DType int64() {
  static const DType d = DType::from_name("int64");
  return d;
}
/// float16.
inline DType float16() {
  static const DType d = DType::from_name("float16");
  return d;
}
/// bfloat16.
inline DType bfloat16() {
  static const DType d = DType::from_name("bfloat16");
  return d;
}
/// float32.
inline DType float32() {
  static const DType d = DType::from_name("float32");
  return d;
}
/// float64.
inline DType float64() {
  static const DType d = DType::from_name("float64");
  return d;
}
}  // namespace dtype

/// The dtype of a C++ element type (float -> float32, int64_t -> int64, bool -> bool, ...).
template <typename T>
DType dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) {
    return dtype::bool_();
  } else if constexpr (std::is_same_v<U, float>) {
    return dtype::float32();
  } else if constexpr (std::is_same_v<U, double>) {
    return dtype::float64();
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 8) {
    return dtype::int64();
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 4) {
    return dtype::int32();
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 2) {
    return dtype::int16();
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 1) {
    return dtype::int8();
  } else if constexpr (std::is_same_v<U, uint8_t>) {
    return dtype::uint8();
  } else {
    static_assert(std::is_same_v<U, bool>,
                  "dtype_of<T>: T must be bool, float, double, int8/16/32/64_t or uint8_t");
    return DType();
  }
}

}  // namespace loom::stable
