#pragma once
/// @file
/// Integer arithmetic of the pointwise kernels with a defined result wherever C++ has none.
///
/// Note [Wrapping integer arithmetic]
/// PyTorch's integer tensors wrap on overflow (two's complement), and its CPU kernels give
/// INT_MIN / -1 == INT_MIN and INT_MIN % -1 == 0. In C++ signed overflow is undefined
/// behaviour (UBSan stops the test suite on it, and optimizers may assume it never happens)
/// and x86's idiv traps on INT_MIN / -1, killing the process with SIGFPE. Every integer
/// kernel therefore computes through these helpers: sums, products and negations in unsigned
/// arithmetic (modular by definition; the conversion back is modular since C++20), division
/// and modulo with the -1 divisor taken aside. They are constexpr and `__host__ __device__`
/// under nvcc, so the CPU reference kernels and the CUDA kernels give the same results from
/// one copy. A division by zero is the caller's to refuse (ZeroDivisionError); these functions
/// require a nonzero divisor. Header-only, no Loom dependency, so device code can include it.

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
/// Marks a function callable from host and device code when compiled by nvcc.
#define LOOM_HOST_DEVICE __host__ __device__
#else
/// Marks a function callable from host and device code when compiled by nvcc.
#define LOOM_HOST_DEVICE
#endif

namespace loom::ops::meta {

/// An integer type other than bool (the helpers' domain).
template <typename C>
concept WrappingInt = std::is_integral_v<C> && !std::is_same_v<C, bool>;

/// The unsigned type integer C computes in: C's own unsigned type, but at least `unsigned`, so
/// that narrow types do not promote back to (overflowing) `int`: uint16 * uint16 as int is
/// undefined for 65535 * 65535.
template <WrappingInt C>
using wrap_unsigned_t =
    std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;

/// a + b, wrapping on overflow.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C wrapping_add(C a, C b) {
  using U = wrap_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}

/// a - b, wrapping on overflow.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C wrapping_sub(C a, C b) {
  using U = wrap_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}

/// a * b, wrapping on overflow.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C wrapping_mul(C a, C b) {
  using U = wrap_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

/// -x, wrapping: the minimum of a signed type is its own negation.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C wrapping_neg(C x) {
  using U = wrap_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(U(0) - static_cast<U>(x)));
}

/// |x|, wrapping: abs of a signed minimum is that minimum, as in PyTorch.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C wrapping_abs(C x) {
  if constexpr (std::is_signed_v<C>) {
    return x < 0 ? wrapping_neg(x) : x;
  } else {
    return x;
  }
}

/// a / b rounded toward zero (b != 0); MIN / -1 wraps to MIN instead of trapping.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C div_trunc_int(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return wrapping_neg(a);
  }
  return static_cast<C>(a / b);
}

/// a / b rounded toward negative infinity, as Python's // (b != 0); MIN // -1 wraps to MIN.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C div_floor_int(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return wrapping_neg(a);
    const C q = static_cast<C>(a / b);
    // |b| >= 2 here, so q - 1 cannot overflow.
    if (static_cast<C>(a % b) != 0 && ((a < 0) != (b < 0))) return static_cast<C>(q - 1);
    return q;
  } else {
    return static_cast<C>(a / b);
  }
}

/// C's a % b: the sign of the dividend (torch.fmod; b != 0). Anything % -1 is 0.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C fmod_int(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return C(0);
  }
  return static_cast<C>(a % b);
}

/// Python's a % b: the sign of the divisor (torch.remainder; b != 0). Anything % -1 is 0.
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C remainder_int(C a, C b) {
  C m = fmod_int(a, b);
  if constexpr (std::is_signed_v<C>) {
    // m and b have opposite signs here, so m + b cannot overflow.
    if (m != 0 && ((b < 0) != (m < 0))) m = static_cast<C>(m + b);
  }
  return m;
}

/// base ** exp by squaring, wrapping on overflow as PyTorch's integer pow does. A negative
/// exponent gives 1 / base ** |exp| truncated: 1 for base 1, +-1 for base -1, 0 otherwise
/// (the scalar-exponent forms refuse negative exponents before getting here).
template <WrappingInt C>
LOOM_HOST_DEVICE constexpr C pow_int(C base, C exp) {
  if constexpr (std::is_signed_v<C>) {
    if (exp < 0) {
      if (base == 1) return C(1);
      if (base == -1) return (exp & 1) ? C(-1) : C(1);
      return C(0);
    }
  }
  using U = wrap_unsigned_t<C>;
  U r = 1, b = static_cast<U>(base);
  for (U e = static_cast<U>(exp); e != 0; e >>= 1) {
    if (e & 1u) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<C>(r);
}

}  // namespace loom::ops::meta
