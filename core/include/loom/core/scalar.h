#pragma once
/// @file
/// Scalar: a number that is an int64, a double or a bool, as PyTorch's c10::Scalar.

#include <cstdint>
#include <string>
#include <type_traits>

#include "loom/core/dtype.h"

namespace loom {

/// A dynamically typed number. Its category (bool, integral, floating) matters for
/// type promotion: `t + 1` keeps an int tensor int, `t + 1.5` makes it float.
class Scalar {
 public:
  /// Which alternative is held.
  enum class Kind : uint8_t { Bool, Int, Float };
  /// Zero (int).
  Scalar() : Scalar(int64_t{0}) {}
  /// An integral scalar from any integer type.
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int) {  // NOLINT: implicit like c10::Scalar
    i_ = static_cast<int64_t>(v);
  }
  /// A floating scalar.
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float) {  // NOLINT: implicit like c10::Scalar
    d_ = static_cast<double>(v);
  }
  /// A boolean scalar.
  Scalar(bool v) : kind_(Kind::Bool) { i_ = v; }  // NOLINT: implicit like c10::Scalar
  /// A string is not a number (without this, a pointer would silently become `true`).
  Scalar(const char*) = delete;

  /// The held alternative.
  Kind kind() const { return kind_; }
  /// True when floating.
  bool is_floating_point() const { return kind_ == Kind::Float; }
  /// True when integral (not bool).
  bool is_integral() const { return kind_ == Kind::Int; }
  /// True when bool.
  bool is_bool() const { return kind_ == Kind::Bool; }
  /// The value converted to T (C++ conversion rules).
  template <typename T>
  T to() const {
    return kind_ == Kind::Float ? static_cast<T>(d_) : static_cast<T>(i_);
  }
  /// The value as double.
  double to_double() const { return to<double>(); }
  /// The value as int64 (floating values truncate).
  int64_t to_int() const { return to<int64_t>(); }
  /// The dtype PyTorch gives a tensor made from this scalar: bool, int64 or the default float.
  DType dtype() const;
  /// "1", "2.5", "True".
  std::string str() const;
  /// Same kind and value.
  friend bool operator==(const Scalar& a, const Scalar& b);

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

}  // namespace loom
