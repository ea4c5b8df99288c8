// The pointwise engine's per-ISA loops (declared in vec/pointwise_kernels.h). Compiled three
// times by loom_add_isa_sources (baseline, AVX2, AVX-512, at -O3): only raw pointer loops on
// GCC vector types of the level's width, nothing with an inline function of its own
// (Note [CPU kernels per instruction set] in loom/core/cpu_isa.h); the intrinsics headers
// define always-inline functions only.
//
// Note [Streaming stores]
// A store to a line that is not in the cache first reads it (read for ownership): an add of
// arrays larger than the last-level cache moves 16 bytes per element for the 12 it needs.
// Non-temporal stores write whole lines without reading them, as large memcpy does, so
// a large result costs its own size once. They also leave it out of the cache, which is
// right only when it would not fit there anyway: the engine asks for them only when the
// output is larger than kStreamBytes (cpu/tensor_iterator.h). The loop first writes single
// elements up to a vector-aligned address, then whole aligned vectors, then the tail, and
// ends with a store fence so that another thread that reads the result after the parallel
// region sees every line.
#include <cstdint>

#include "cpu/vec/pointwise_kernels.h"
#include "cpu/vec/reduce_simd.h"  // simd::exp, the softmax kernels' vector exp (float)

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LOOM_HAVE_STREAM 1
#endif

namespace loom::cpu::LOOM_ISA_NAMESPACE {
namespace {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif

/// A vector of T as wide as this level's registers (GCC vector extension: arithmetic,
/// comparisons and ?: work on it element by element as on a scalar T).
template <typename T>
using Vec __attribute__((vector_size(kVecBytes))) = T;

template <typename T>
Vec<T> load(const T* p) {
  Vec<T> v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <bool kStream, typename T, typename V>
void store(T* p, V v) {
#if defined(LOOM_HAVE_STREAM)
  if constexpr (kStream) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), reinterpret_cast<__m512i>(v));
#elif defined(__AVX__)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), reinterpret_cast<__m256i>(v));
#else
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), reinterpret_cast<__m128i>(v));
#endif
    return;
  }
#endif
  __builtin_memcpy(p, &v, sizeof v);
}

/// Whether streaming stores can be used for out: it must reach a vector-aligned address.
template <typename T>
bool can_stream(const T* out) {
#if defined(LOOM_HAVE_STREAM)
  return reinterpret_cast<uintptr_t>(out) % sizeof(T) == 0;
#else
  (void)out;
  return false;
#endif
}

/// out[i] = f(i-th element of each input) for i in [0, n); f takes scalars or vectors, and
/// at(v, i) gives an input's scalar or vector at i.
template <bool kStream, typename T, typename F>
void map(T* out, int64_t n, F f) {
  constexpr int64_t kLanes = kVecBytes / sizeof(T);
  int64_t i = 0;
  if constexpr (kStream) {
    for (; i < n && reinterpret_cast<uintptr_t>(out + i) % kVecBytes != 0; ++i) out[i] = f(i, T{});
  }
  for (; i + kLanes <= n; i += kLanes) store<kStream>(out + i, f(i, Vec<T>{}));
  for (; i < n; ++i) out[i] = f(i, T{});
#if defined(LOOM_HAVE_STREAM)
  if constexpr (kStream) _mm_sfence();
#endif
}

/// The element (X = T) or vector (X = Vec<T>) of p at i.
template <typename X, typename T>
X at(const T* p, int64_t i) {
  if constexpr (sizeof(X) == sizeof(T)) {
    return p[i];
  } else {
    return load(p + i);
  }
}

/// Runs map<true> or map<false>.
template <typename T, typename F>
void run(T* out, int64_t n, bool stream, F f) {
  if (stream && can_stream(out)) {
    map<true>(out, n, f);
  } else {
    map<false>(out, n, f);
  }
}

template <typename T>
void binary(BinaryKernel k, T* out, const T* a, const T* b, bool b_scalar, T alpha, int64_t n,
            bool stream) {
  if (b_scalar) {
    const T s = *b;
    switch (k) {
      case BinaryKernel::add:
        // a + alpha * s folded once (the engine's functor does the same for Scalar other).
        if (alpha != T(1)) {
          const T as = alpha * s;
          return run(out, n, stream, [=](int64_t i, auto x) { return at<decltype(x)>(a, i) + as; });
        }
        return run(out, n, stream, [=](int64_t i, auto x) { return at<decltype(x)>(a, i) + s; });
      case BinaryKernel::mul:
        return run(out, n, stream, [=](int64_t i, auto x) { return at<decltype(x)>(a, i) * s; });
      case BinaryKernel::div:
        return run(out, n, stream, [=](int64_t i, auto x) { return at<decltype(x)>(a, i) / s; });
    }
    return;
  }
  switch (k) {
    case BinaryKernel::add:
      if (alpha != T(1)) {
        return run(out, n, stream, [=](int64_t i, auto x) {
          using X = decltype(x);
          return at<X>(a, i) + alpha * at<X>(b, i);
        });
      }
      return run(out, n, stream, [=](int64_t i, auto x) {
        using X = decltype(x);
        return at<X>(a, i) + at<X>(b, i);
      });
    case BinaryKernel::mul:
      return run(out, n, stream, [=](int64_t i, auto x) {
        using X = decltype(x);
        return at<X>(a, i) * at<X>(b, i);
      });
    case BinaryKernel::div:
      return run(out, n, stream, [=](int64_t i, auto x) {
        using X = decltype(x);
        return at<X>(a, i) / at<X>(b, i);
      });
  }
}

/// exp(-v) for a float vector (X = Vec<float>) or one float (computed in lane 0 of a vector, so
/// a tail element gets the same value it would get in the vector body).
template <typename X>
X exp_neg(X v) {
  if constexpr (sizeof(X) == sizeof(float)) {
    return simd::exp(simd::splat(-v))[0];
  } else {
    return reinterpret_cast<X>(simd::exp(reinterpret_cast<simd::VF>(-v)));
  }
}

template <typename T>
void unary(UnaryKernel k, T* out, const T* x, int64_t n, bool stream) {
  switch (k) {
    case UnaryKernel::relu:
      // x where x > 0 or x is NaN (relu(NaN) is NaN), else +0 (also for -0 and -inf).
      return run(out, n, stream, [=](int64_t i, auto z) {
        using X = decltype(z);
        const X v = at<X>(x, i);
        return (v > z) | (v != v) ? v : z;
      });
    case UnaryKernel::sigmoid:
    case UnaryKernel::silu:
      // The functors' formulas with a vector exp (about 1 ulp; exp(-x) overflows to inf for
      // x < -88.8, giving 0 and -0 as 1 / inf does). float64 never gets here (flat_unary).
      if constexpr (sizeof(T) == sizeof(float)) {
        if (k == UnaryKernel::sigmoid) {
          return run(out, n, stream, [=](int64_t i, auto z) {
            using X = decltype(z);
            return (z + T(1)) / (z + T(1) + exp_neg(at<X>(x, i)));
          });
        }
        return run(out, n, stream, [=](int64_t i, auto z) {
          using X = decltype(z);
          const X v = at<X>(x, i);
          return v / (z + T(1) + exp_neg(v));
        });
      }
      return;
  }
}

template <typename T>
void threshold_backward(T* out, const T* grad, const T* x, T threshold, int64_t n, bool stream) {
  // 0 where x <= threshold, else grad (a NaN x passes its gradient).
  run(out, n, stream, [=](int64_t i, auto z) {
    using X = decltype(z);
    return at<X>(x, i) <= threshold ? z : at<X>(grad, i);
  });
}

template <typename U>
void fill(U* out, U value, int64_t n, bool stream) {
  run(out, n, stream, [=](int64_t, auto z) { return z + value; });
}

}  // namespace

void binary_f32(BinaryKernel k, float* out, const float* a, const float* b, bool b_scalar,
                float alpha, int64_t n, bool stream) {
  binary(k, out, a, b, b_scalar, alpha, n, stream);
}
void binary_f64(BinaryKernel k, double* out, const double* a, const double* b, bool b_scalar,
                double alpha, int64_t n, bool stream) {
  binary(k, out, a, b, b_scalar, alpha, n, stream);
}
void unary_f32(UnaryKernel k, float* out, const float* x, int64_t n, bool stream) {
  unary(k, out, x, n, stream);
}
void unary_f64(UnaryKernel k, double* out, const double* x, int64_t n, bool stream) {
  unary(k, out, x, n, stream);
}
void threshold_backward_f32(float* out, const float* grad, const float* x, float threshold,
                            int64_t n, bool stream) {
  threshold_backward(out, grad, x, threshold, n, stream);
}
void threshold_backward_f64(double* out, const double* grad, const double* x, double threshold,
                            int64_t n, bool stream) {
  threshold_backward(out, grad, x, threshold, n, stream);
}
void copy_bytes(void* out, const void* in, int64_t bytes, bool stream) {
  // The C library's memcpy does not stream at these sizes here (AMD Zen 4, 2 threads, 64 MiB:
  // 35 GB/s against 54 for this loop), so a large copy takes the streaming map.
  if (!stream) {
    __builtin_memcpy(out, in, static_cast<size_t>(bytes));
    return;
  }
  const auto* src = static_cast<const uint8_t*>(in);
  map<true>(static_cast<uint8_t*>(out), bytes, [=](int64_t i, auto x) { return at<decltype(x)>(src, i); });
}

void fill_bits(void* out, uint64_t bits, int elem_size, int64_t n, bool stream) {
  switch (elem_size) {
    case 1:
      return fill(static_cast<uint8_t*>(out), static_cast<uint8_t>(bits), n, stream);
    case 2:
      return fill(static_cast<uint16_t*>(out), static_cast<uint16_t>(bits), n, stream);
    case 4:
      return fill(static_cast<uint32_t*>(out), static_cast<uint32_t>(bits), n, stream);
    default:
      return fill(static_cast<uint64_t*>(out), bits, n, stream);
  }
}

}  // namespace loom::cpu::LOOM_ISA_NAMESPACE
