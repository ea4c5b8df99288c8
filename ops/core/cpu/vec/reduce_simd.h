#pragma once
// Vector helpers for the per-ISA reduction and softmax kernels (reduce_kernels.cpp,
// softmax_kernels.cpp). Include only from a file built by loom_add_isa_sources: everything
// here lives in LOOM_ISA_NAMESPACE, so each copy is its own function (Note [CPU kernels per
// instruction set] in loom/core/cpu_isa.h); it includes nothing but <cstdint> and the
// intrinsics header, whose functions are always inlined.
//
// Note [Cascade sum]: a float sum adds its elements in float lanes, not double: 64 logical
// lanes (four 512-bit vectors, eight 256-bit or sixteen 128-bit ones: the same lanes in
// every build), lane j adding elements j, j+64, ... of a block of 16 x 64 elements. Only
// the blocks' sums widen to double (64 conversions per 1024 elements): they add pairwise (a
// binary counter of partial sums, so a block's sum meets one of equal weight) and the 64
// lanes fold in halves at the end. The error is that of 16 float roundings per element,
// whatever n; the order of additions depends on n only, so the result is the same bit for
// bit at every ISA level and thread count (threads take fixed chunks). Rows shorter than
// the 64 lanes (reduce_kernels.cpp) simply add in double.

#include <immintrin.h>

#include <cstdint>

#ifndef LOOM_ISA_NAMESPACE
#error "reduce_simd.h belongs to files built by loom_add_isa_sources"
#endif

namespace loom::cpu::LOOM_ISA_NAMESPACE::simd {

#if defined(__AVX512F__)
inline constexpr int kW = 16;
using VF = __m512;
#elif defined(__AVX2__)
inline constexpr int kW = 8;
using VF = __m256;
#else
inline constexpr int kW = 4;
using VF = __m128;
#endif
/// 32-bit integer lanes, as many as VF has (what a float comparison gives).
typedef int32_t VI __attribute__((vector_size(kW * 4)));

inline constexpr int kLanes = 64;            ///< logical lanes of the cascade sum
inline constexpr int kAcc = kLanes / kW;     ///< native vectors per logical vector
inline constexpr int64_t kBlockRows = 16;    ///< sequential adds per lane in one block
inline constexpr int64_t kBlock = kLanes * kBlockRows;

#define LOOM_SIMD_INLINE [[gnu::always_inline]] inline

LOOM_SIMD_INLINE VF splat(float x) { return VF{} + x; }
LOOM_SIMD_INLINE VF loadu(const float* p) {
  VF v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
LOOM_SIMD_INLINE void storeu(float* p, VF v) { __builtin_memcpy(p, &v, sizeof v); }
/// Lanes 0..k-1 (k < kW) true.
LOOM_SIMD_INLINE VI first_lanes(int k) {
  VI iota;
  for (int i = 0; i < kW; ++i) iota[i] = i;
  return iota < k;
}
LOOM_SIMD_INLINE VF select(VI m, VF a, VF b) { return m ? a : b; }
/// k (< kW) floats from p, the other lanes `fill`; reads nothing past p[k-1].
LOOM_SIMD_INLINE VF load_partial(const float* p, int k, float fill = 0.0f) {
#if defined(__AVX512F__)
  return _mm512_mask_loadu_ps(splat(fill), static_cast<__mmask16>((1u << k) - 1), p);
#else
  float t[kW];
  for (int i = 0; i < kW; ++i) t[i] = i < k ? p[i] : fill;
  return loadu(t);
#endif
}
/// Stores lanes 0..k-1 (k < kW) of v.
LOOM_SIMD_INLINE void store_partial(float* p, VF v, int k) {
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << k) - 1), v);
#else
  float t[kW];
  storeu(t, v);
  for (int i = 0; i < k; ++i) p[i] = t[i];
#endif
}
LOOM_SIMD_INLINE VF fmadd(VF a, VF b, VF c) {
#if defined(__AVX512F__)
  return _mm512_fmadd_ps(a, b, c);
#elif defined(__FMA__)
  return _mm256_fmadd_ps(a, b, c);
#else
  return a * b + c;
#endif
}

/// Sum of the lanes, folding halves (the same pairing as the logical-lane fold).
LOOM_SIMD_INLINE float hsum(VF v) {
  float t[kW];
  storeu(t, v);
  for (int w = kW / 2; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) t[i] += t[i + w];
  }
  return t[0];
}

/// One logical vector of kLanes floats.
struct Lanes {
  VF v[kAcc];
};

/// Loads w (<= kLanes) floats from p as a logical vector; lanes past w hold 0 and nothing
/// past p + w is read.
LOOM_SIMD_INLINE Lanes load_lanes(const float* p, int64_t w) {
  Lanes a;
#pragma GCC unroll 16
  for (int k = 0; k < kAcc; ++k) {
    const int64_t left = w - k * kW;
    a.v[k] = left >= kW ? loadu(p + k * kW)
             : left > 0 ? load_partial(p + k * kW, static_cast<int>(left))
                        : VF{};
  }
  return a;
}

LOOM_SIMD_INLINE void add_into(Lanes& a, const Lanes& b) {
#pragma GCC unroll 16
  for (int k = 0; k < kAcc; ++k) a.v[k] = b.v[k] + a.v[k];
}

/// Folds kLanes doubles in halves (lane j with j + 32, then j + 16, ...) to one.
LOOM_SIMD_INLINE double fold(double* a) {
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int k = 0; k < w; ++k) a[k] += a[k + w];
  }
  return a[0];
}

/// Pairwise partial sums of equal weight in double lanes (Note [Cascade sum]): push adds a
/// block's float sums the way a binary counter carries.
struct PairwiseStack {
  double level[40][kLanes];
  int64_t count = 0;

  LOOM_SIMD_INLINE static void widen(const Lanes& s, double* out) {
    float f[kLanes];
    for (int k = 0; k < kAcc; ++k) storeu(f + k * kW, s.v[k]);
    for (int j = 0; j < kLanes; ++j) out[j] = f[j];
  }
  LOOM_SIMD_INLINE void push(const Lanes& s) {
    double t[kLanes];
    widen(s, t);
    int l = 0;
    for (int64_t c = count; c & 1; c >>= 1, ++l) {
      for (int j = 0; j < kLanes; ++j) t[j] = level[l][j] + t[j];
    }
    for (int j = 0; j < kLanes; ++j) level[l][j] = t[j];
    ++count;
  }
  /// The total, with tail added first and then the levels from the lowest up.
  LOOM_SIMD_INLINE double total(const Lanes& tail) const {
    double t[kLanes];
    widen(tail, t);
    total_lanes(t);
    return fold(t);
  }
  /// Each lane's total into t (which holds the tail's lanes).
  LOOM_SIMD_INLINE void total_lanes(double* t) const {
    int l = 0;
    for (int64_t c = count; c != 0; c >>= 1, ++l) {
      if (c & 1) {
        for (int j = 0; j < kLanes; ++j) t[j] = level[l][j] + t[j];
      }
    }
  }
};

/// The cascade sum (Note [Cascade sum]) of n terms; term(i, k) gives the terms of elements
/// i .. i+k-1 (k <= kW; lanes from k on must be 0), called with k == kW except at the end.
template <typename Term>
LOOM_SIMD_INLINE double cascade_sum(int64_t n, Term&& term) {
  PairwiseStack stack;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    Lanes b;
#pragma GCC unroll 16
    for (int k = 0; k < kAcc; ++k) b.v[k] = term(i + k * kW, kW);
    // One row of the block per iteration, so loads go through memory in order: unrolled
    // whole, GCC groups each accumulator's loads, a 256-byte stride that streams from DRAM
    // at two thirds of the speed on AMD Zen 4.
#pragma GCC unroll 1
    for (int64_t r = 1; r < kBlockRows; ++r) {
#pragma GCC unroll 16
      for (int k = 0; k < kAcc; ++k) b.v[k] += term(i + r * kLanes + k * kW, kW);
    }
    stack.push(b);
  }
  Lanes t;
  for (int k = 0; k < kAcc; ++k) t.v[k] = VF{};
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 16
    for (int k = 0; k < kAcc; ++k) t.v[k] += term(i + k * kW, kW);
  }
  for (int k = 0; i < n; ++k, i += kW) {
    const int64_t left = n - i;
    t.v[k] += left >= kW ? term(i, kW) : term(i, static_cast<int>(left));
  }
  return stack.total(t);
}

/// exp for every lane, within about 1 ulp over the whole float range: n = round(x / ln 2),
/// r = x - n ln 2 in two parts, exp(r) = 1 + r + r^2 P(r) with P a degree-4 fit (minimax
/// over |r| <= ln2 / 2, relative error 3e-9), times 2^n in two steps so that results near
/// the overflow and denormal ends round once. NaN stays NaN, -inf gives 0, +inf gives inf.
LOOM_SIMD_INLINE VF exp(VF x) {
  x = x < splat(-104.0f) ? splat(-104.0f) : x;  // a NaN compares false and passes
  x = x > splat(88.8f) ? splat(88.8f) : x;
  const VF n = (x * splat(1.44269504f) + splat(12582912.0f)) - splat(12582912.0f);
  VF r = fmadd(n, splat(-0.693359375f), x);  // ln 2 = 0.693359375 - 2.12194440e-4
  r = fmadd(n, splat(2.12194440e-4f), r);
  VF p = splat(0.001381461275741458f);
  p = fmadd(p, r, splat(0.008368710055947304f));
  p = fmadd(p, r, splat(0.04166838899254799f));
  p = fmadd(p, r, splat(0.1666652113199234f));
  p = fmadd(p, r, splat(0.4999999403953552f));
  const VF y = fmadd(p, r * r, r) + splat(1.0f);
#if defined(__AVX512F__)
  // The masked form: the plain one trips GCC 12's -Wmaybe-uninitialized in its header.
  return _mm512_mask_scalef_ps(y, static_cast<__mmask16>(0xffff), y, n);
#else
  const VI ni = __builtin_convertvector(n, VI);
  const VI n1 = ni >> 1;
  const VI n2 = ni - n1;
  const VF s1 = (VF)((n1 + 127) << 23);
  const VF s2 = (VF)((n2 + 127) << 23);
  return (y * s1) * s2;
#endif
}

}  // namespace loom::cpu::LOOM_ISA_NAMESPACE::simd
