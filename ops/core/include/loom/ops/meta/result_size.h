#pragma once
/// @file
/// Note [Result sizes that overflow]: an op that computes its result's sizes from its arguments
/// (repeat's size * repeats, pad's size + left + right, conv's and pooling's output formula,
/// eye's n * m, one_hot's classes, upsampling's output size, arange's length) computes them
/// here, with int64 overflow checked, and names itself when they do not fit: "repeat: the result
/// size overflows int64 (2 * 4611686018427387904 at dimension 0)". A plain int64 computation
/// would wrap, and the allocation that follows would report a negative or absurd size in the
/// words of `empty`, an op the caller never called. Header-only, no state, no device-specific
/// code.

#include <cstdint>
#include <string_view>

#include "loom/core/dtype.h"
#include "loom/core/error.h"
#include "loom/core/tensor.h"

namespace loom::ops::meta {

/// Throws "<op>: <what> overflows int64 (<detail>)" for a size op computes on the way to its
/// result (a dilated kernel's extent); detail says which computation overflowed.
template <typename... Detail>
[[noreturn]] void throw_size_overflow(std::string_view op, std::string_view what,
                                      const Detail&... detail) {
  LOOM_THROW(ValueError, op, ": ", what, " overflows int64 (", detail..., ")");
}

/// Throws "<op>: the result size overflows int64 (<detail>)" (Note [Result sizes that
/// overflow]); detail says which computation overflowed.
template <typename... Detail>
[[noreturn]] void throw_result_size_overflow(std::string_view op, const Detail&... detail) {
  throw_size_overflow(op, "the result size", detail...);
}

/// a + b for a result size of op, refusing int64 overflow.
inline int64_t result_size_add(std::string_view op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw_result_size_overflow(op, a, " + ", b);
  return r;
}

/// a * b for a result size of op, refusing int64 overflow.
inline int64_t result_size_mul(std::string_view op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw_result_size_overflow(op, a, " * ", b);
  return r;
}

/// Whether a tensor of the given sizes (non-negative) and dtype has an element count and a byte
/// count that int64 can hold: for a kernel that declines such a call and leaves the reference to
/// report it (check_result_numel).
inline bool result_numel_fits(IntArrayRef sizes, DType dtype) {
  for (int64_t s : sizes) {
    if (s == 0) return true;
  }
  int64_t n = static_cast<int64_t>(element_size(dtype));
  for (int64_t s : sizes) {
    if (__builtin_mul_overflow(n, s, &n)) return false;
  }
  return true;
}

/// The result of op, of the given sizes and dtype, must have an element count and a byte count
/// that int64 can hold (every dim is non-negative here; a size 0 makes any others fine); the
/// op is named, not `empty`.
inline void check_result_numel(std::string_view op, IntArrayRef sizes, DType dtype) {
  for (int64_t s : sizes) {
    if (s == 0) return;  // no elements, whatever the other sizes
  }
  int64_t numel = 1;
  for (int64_t s : sizes) {
    if (__builtin_mul_overflow(numel, s, &numel)) {
      throw_result_size_overflow(op, "the number of elements of sizes ", sizes_str(sizes));
    }
  }
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(element_size(dtype)), &nbytes)) {
    throw_result_size_overflow(op, "the number of bytes of sizes ", sizes_str(sizes), " of ",
                               dtype_name(dtype));
  }
}

}  // namespace loom::ops::meta
