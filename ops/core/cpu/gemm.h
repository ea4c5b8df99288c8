#pragma once
// Private to the linalg kernels of ops_core: a cache-blocked GEMM over strided operands,
// C = beta*C + alpha*(A @ B), with a GEMV for the thin cases.
//
// Note [Reference GEMM]: operands are read through (row stride, column stride), so
// transposed, strided and broadcast (stride 0) views cost nothing beyond the packing every
// blocked GEMM does anyway. The loop order is BLIS's, parallel over tiles of C: an OpenMP
// task owns NB columns and a group of MC-row blocks; for each KC slice of K it packs its
// KC x NB panel of B once, then for each row block packs the MC x KC block of A and runs an
// MR x NR register micro-kernel over the tile, written with GCC vector
// extensions. The micro-kernel is compiled twice, for the baseline ISA and for AVX2+FMA,
// and chosen at run time by loom::cpu::isa(), so the plugin needs no -march flag and still
// runs everywhere.
// 16-bit floats are packed as float32 and accumulated over the whole K in a float32 tile,
// so the output is rounded once, as PyTorch does. Integers accumulate in int64.
// beta == 0 never reads C, so NaN or garbage there does not leak into the result.
//
// Note [Serial GEMM inside a parallel loop]: gemm(..., parallel=false) must contain no
// OpenMP worksharing construct, since its callers (batched matmul, the narrow-group
// convolution) call it from inside their own `omp for`. An orphaned `omp for` there binds
// to the caller's team and nests in the caller's loop, which OpenMP forbids; libgomp then
// replaces the caller's work share, and the caller's remaining iterations are silently
// skipped (their outputs left uninitialized). So the serial case is a plain loop.

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cpu/elementwise.h"
#include "cpu/parallel.h"
#include "loom/core/cpu_isa.h"
#include "loom/core/error.h"
#include "loom/core/half.h"
#include "loom/core/tensor.h"

namespace loom::ops::cpu::gemm {

/// Threads a parallel region may use (1 without OpenMP).
inline int64_t max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Half and BFloat16 (the 16-bit storage structs) come from cpu/elementwise.h.

/// How a storage type S is computed: its accumulator type and the conversions.
template <typename S>
struct Elem {
  using Acc = std::conditional_t<std::is_floating_point_v<S>, S, int64_t>;
  static Acc load(S v) { return static_cast<Acc>(v); }
  static S store(Acc v) { return static_cast<S>(v); }
};
template <>
struct Elem<Half> {
  using Acc = float;
  static float load(Half v) { return half_to_float(v.bits); }
  static Half store(float v) { return Half{float_to_half(v)}; }
};
template <>
struct Elem<BFloat16> {
  using Acc = float;
  static float load(BFloat16 v) { return bfloat16_to_float(v.bits); }
  static BFloat16 store(float v) { return BFloat16{float_to_bfloat16(v)}; }
};
template <typename S>
using AccOf = typename Elem<S>::Acc;

/// A strided matrix: element (i, j) at data[i * rs + j * cs].
template <typename T>
struct Mat {
  T* data;
  int64_t rs, cs;
  T& at(int64_t i, int64_t j) const { return data[i * rs + j * cs]; }
};

/// Block sizes for an accumulator type (32-byte vectors, two per micro-tile row).
template <typename A>
struct Blocking {
  static constexpr int kVec = 32 / static_cast<int>(sizeof(A));
  static constexpr int MR = 6;
  static constexpr int NR = 2 * kVec;
  static constexpr int64_t MC = 96;
  static constexpr int64_t KC = 256;
  static constexpr int64_t NB = 256;  // columns of one parallel task (a multiple of NR)
};

template <typename T>
struct Vec32Of;
template <>
struct Vec32Of<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct Vec32Of<double> {
  typedef double type __attribute__((vector_size(32)));
};
template <>
struct Vec32Of<int64_t> {
  typedef int64_t type __attribute__((vector_size(32)));
};
template <typename T>
using Vec32 = typename Vec32Of<T>::type;

/// tile[MR x NR] = packed A sliver (kc x MR) times packed B sliver (kc x NR).
template <typename A>
[[gnu::always_inline]] inline void micro_kernel(int64_t kc, const A* __restrict pa,
                                                const A* __restrict pb, A* __restrict tile) {
  using B = Blocking<A>;
  using V = Vec32<A>;
  constexpr int NV = B::NR / B::kVec;
  V c[B::MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < B::MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) c[i][j] = V{};
  for (int64_t p = 0; p < kc; ++p) {
    V b[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) std::memcpy(&b[j], pb + j * B::kVec, sizeof(V));
#pragma GCC unroll 8
    for (int i = 0; i < B::MR; ++i) {
      const A ai = pa[i];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) c[i][j] += b[j] * ai;
    }
    pa += B::MR;
    pb += B::NR;
  }
#pragma GCC unroll 8
  for (int i = 0; i < B::MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) std::memcpy(tile + i * B::NR + j * B::kVec, &c[i][j], sizeof(V));
}

/// One task: C[mc x nc] (+)= alpha * packed A (mc x kc) @ packed B (kc x nc).
template <typename S>
struct MacroArgs {
  int64_t mc, nc, kc;
  const AccOf<S>* pa;
  const AccOf<S>* pb;
  AccOf<S> alpha, beta;
  bool beta_zero;
  Mat<S> c;
};

template <typename S>
[[gnu::always_inline]] inline void macro_kernel_body(const MacroArgs<S>& m) {
  using A = AccOf<S>;
  using B = Blocking<A>;
  alignas(64) A tile[B::MR * B::NR];
  for (int64_t jr = 0; jr < m.nc; jr += B::NR) {
    const int64_t nr = std::min<int64_t>(B::NR, m.nc - jr);
    for (int64_t ir = 0; ir < m.mc; ir += B::MR) {
      const int64_t mr = std::min<int64_t>(B::MR, m.mc - ir);
      micro_kernel<A>(m.kc, m.pa + ir * m.kc, m.pb + jr * m.kc, tile);
      for (int64_t i = 0; i < mr; ++i) {
        S* row = m.c.data + (ir + i) * m.c.rs + jr * m.c.cs;
        const A* t = tile + i * B::NR;
        if (m.beta_zero) {
          for (int64_t j = 0; j < nr; ++j) row[j * m.c.cs] = Elem<S>::store(m.alpha * t[j]);
        } else {
          for (int64_t j = 0; j < nr; ++j) {
            S& o = row[j * m.c.cs];
            o = Elem<S>::store(m.beta * Elem<S>::load(o) + m.alpha * t[j]);
          }
        }
      }
    }
  }
}

template <typename S>
void macro_kernel_baseline(const MacroArgs<S>& m) {
  macro_kernel_body<S>(m);
}
template <typename S>
[[gnu::target("avx2,fma")]] void macro_kernel_avx2(const MacroArgs<S>& m) {
  macro_kernel_body<S>(m);
}

/// Whether the AVX2+FMA copy may run: the level loom::cpu::isa() allows (Note [CPU kernels
/// per instruction set]: cpuid, capped by LOOM_CPU_ISA, so a capped run tests this path too).
inline bool has_avx2_fma() { return loom::cpu::isa() >= loom::cpu::Isa::avx2; }

/// Packs rows [0, mc) x cols [0, kc) of a into MR-row slivers (zero-padded), k-major.
template <typename S>
void pack_a(Mat<const S> a, int64_t mc, int64_t kc, AccOf<S>* out) {
  constexpr int MR = Blocking<AccOf<S>>::MR;
  for (int64_t s = 0; s < mc; s += MR) {
    const int64_t mr = std::min<int64_t>(MR, mc - s);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < mr; ++i) out[p * MR + i] = Elem<S>::load(a.at(s + i, p));
      for (int64_t i = mr; i < MR; ++i) out[p * MR + i] = 0;
    }
    out += MR * kc;
  }
}

/// Packs NR-column sliver number `s` of b (kc x nc) into out (kc x NR, zero-padded).
template <typename S>
void pack_b_sliver(Mat<const S> b, int64_t kc, int64_t nc, int64_t s, AccOf<S>* out) {
  constexpr int NR = Blocking<AccOf<S>>::NR;
  const int64_t j0 = s * NR, nr = std::min<int64_t>(NR, nc - j0);
  out += j0 * kc;
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t j = 0; j < nr; ++j) out[p * NR + j] = Elem<S>::load(b.at(p, j0 + j));
    for (int64_t j = nr; j < NR; ++j) out[p * NR + j] = 0;
  }
}

/// y[m] = beta*y + alpha * (a[m x k] @ x[k]); y and x with element strides ys, xs.
template <typename S>
void gemv(int64_t m, int64_t k, AccOf<S> alpha, Mat<const S> a, const S* x, int64_t xs,
          AccOf<S> beta, S* y, int64_t ys, bool parallel) {
  using A = AccOf<S>;
  auto finish = [&](int64_t i, A acc) {
    S& o = y[i * ys];
    o = beta == A(0) ? Elem<S>::store(alpha * acc)
                     : Elem<S>::store(beta * Elem<S>::load(o) + alpha * acc);
  };
  const bool par = parallel && m * k >= (1 << 15);
  if (a.cs == 1 || a.rs != 1) {
    // Row-wise dot products; 8 partial sums let the compiler vectorise a contiguous row.
    maybe_parallel_for(par, m, [&](int64_t i) {
      const S* row = a.data + i * a.rs;
      A part[8] = {};
      int64_t p = 0;
      if (a.cs == 1 && xs == 1) {
        for (; p + 8 <= k; p += 8)
          for (int u = 0; u < 8; ++u)
            part[u] += Elem<S>::load(row[p + u]) * Elem<S>::load(x[p + u]);
      }
      for (; p < k; ++p) part[p & 7] += Elem<S>::load(row[p * a.cs]) * Elem<S>::load(x[p * xs]);
      A acc = 0;
      for (A v : part) acc += v;
      finish(i, acc);
    });
  } else {
    // Column-major a: axpy over contiguous columns.
    const int64_t nt = par ? max_threads() : 1;
    const int64_t chunk = (m + nt - 1) / nt;
    maybe_parallel_for(par, nt, [&](int64_t t) {
      const int64_t i0 = t * chunk, i1 = std::min(m, i0 + chunk);
      if (i0 >= i1) return;
      std::vector<A> acc(static_cast<size_t>(i1 - i0), A(0));
      for (int64_t p = 0; p < k; ++p) {
        const A xv = Elem<S>::load(x[p * xs]);
        const S* col = a.data + p * a.cs;
        for (int64_t i = i0; i < i1; ++i) acc[i - i0] += Elem<S>::load(col[i]) * xv;
      }
      for (int64_t i = i0; i < i1; ++i) finish(i, acc[i - i0]);
    });
  }
}

/// c[m x n] = beta*c + alpha * (a[m x k] @ b[k x n]) for strided a, b, c (Note [Reference GEMM]).
/// c must not overlap a or b. parallel=false keeps it on the calling thread.
template <typename S>
void gemm(int64_t m, int64_t n, int64_t k, AccOf<S> alpha, Mat<const S> a, Mat<const S> b,
          AccOf<S> beta, Mat<S> c, bool parallel = true) {
  using A = AccOf<S>;
  using Bl = Blocking<A>;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        S& o = c.at(i, j);
        o = beta == A(0) ? Elem<S>::store(A(0)) : Elem<S>::store(beta * Elem<S>::load(o));
      }
    return;
  }
  if (m * n * k <= 4096) {
    // Tiny (a 16x4 by 4x8 layer): packing panels costs more than the arithmetic.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        A acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += Elem<S>::load(a.at(i, p)) * Elem<S>::load(b.at(p, j));
        S& o = c.at(i, j);
        o = beta == A(0) ? Elem<S>::store(alpha * acc)
                         : Elem<S>::store(beta * Elem<S>::load(o) + alpha * acc);
      }
    return;
  }
  if (n == 1) return gemv<S>(m, k, alpha, a, b.data, b.rs, beta, c.data, c.rs, parallel);
  if (m == 1) {
    return gemv<S>(n, k, alpha, Mat<const S>{b.data, b.cs, b.rs}, a.data, a.cs, beta, c.data, c.cs,
                   parallel);
  }
  // 16-bit floats: the micro-kernel accumulates into a float32 tile over all of K, and C is
  // rounded once at the end (CS is what the micro-kernel writes).
  constexpr bool kWide = sizeof(S) == 2 && std::is_floating_point_v<A>;
  using CS = std::conditional_t<kWide, A, S>;
  const int64_t kc_max = std::min<int64_t>(k, Bl::KC);
  const bool par = parallel && m * n * k >= 64 * 64 * 64 && max_threads() > 1;
  auto* macro = has_avx2_fma() ? &macro_kernel_avx2<CS> : &macro_kernel_baseline<CS>;

  // Tasks are (column block of NB, group of row blocks) tiles of C, each running the whole
  // K loop with its own packed panels: no barrier inside the parallel loop, so on a busy
  // machine a descheduled thread delays only its own tiles (schedule(dynamic) hands the rest
  // to the others). A B panel is packed once per task and reused over its row blocks.
  const int64_t n_jb = (n + Bl::NB - 1) / Bl::NB;
  const int64_t n_ic = (m + Bl::MC - 1) / Bl::MC;
  const int64_t threads = par ? max_threads() : 1;
  const int64_t want_groups = std::max<int64_t>(1, (4 * threads + n_jb - 1) / n_jb);
  const int64_t ic_per_group =
      (n_ic + std::min(n_ic, want_groups) - 1) / std::min(n_ic, want_groups);
  const int64_t groups = (n_ic + ic_per_group - 1) / ic_per_group;
  const int64_t nb_alloc = (std::min<int64_t>(n, Bl::NB) + Bl::NR - 1) / Bl::NR * Bl::NR;
  // The buffers of one thread, and one task run with them.
  struct Buffers {
    std::vector<A> pa, pb;
    std::vector<A> wide;  // kWide only: the task's float32 tile of C
  };
  auto make_buffers = [&] {
    return Buffers{std::vector<A>(static_cast<size_t>(Bl::MC * kc_max)),
                   std::vector<A>(static_cast<size_t>(kc_max * nb_alloc)),
                   {}};
  };
  auto run_task = [&](int64_t task, Buffers& buf) {
    std::vector<A>& pa = buf.pa;
    std::vector<A>& pb = buf.pb;
    std::vector<A>& wide = buf.wide;
    const int64_t jb = task / groups * Bl::NB, nc = std::min<int64_t>(Bl::NB, n - jb);
    const int64_t ic0 = task % groups * ic_per_group * Bl::MC;
    const int64_t ic1 = std::min<int64_t>(m, ic0 + ic_per_group * Bl::MC);
    const int64_t n_slivers = (nc + Bl::NR - 1) / Bl::NR;
    if constexpr (kWide) wide.resize(static_cast<size_t>((ic1 - ic0) * nc));
    for (int64_t pc = 0; pc < k; pc += kc_max) {
      const int64_t kc = std::min(kc_max, k - pc);
      const bool first = pc == 0;
      const Mat<const S> bpanel{b.data + pc * b.rs + jb * b.cs, b.rs, b.cs};
      for (int64_t s = 0; s < n_slivers; ++s) pack_b_sliver<S>(bpanel, kc, nc, s, pb.data());
      for (int64_t ic = ic0; ic < ic1; ic += Bl::MC) {
        const int64_t mc = std::min<int64_t>(Bl::MC, m - ic);
        pack_a<S>(Mat<const S>{a.data + ic * a.rs + pc * a.cs, a.rs, a.cs}, mc, kc, pa.data());
        if constexpr (kWide) {
          macro(MacroArgs<CS>{mc, nc, kc, pa.data(), pb.data(), alpha, first ? A(0) : A(1), first,
                              Mat<CS>{wide.data() + (ic - ic0) * nc, nc, 1}});
        } else {
          macro(MacroArgs<CS>{mc, nc, kc, pa.data(), pb.data(), alpha, first ? beta : A(1),
                              first && beta == A(0),
                              Mat<CS>{c.data + ic * c.rs + jb * c.cs, c.rs, c.cs}});
        }
      }
    }
    if constexpr (kWide) {
      for (int64_t i = ic0; i < ic1; ++i)
        for (int64_t j = 0; j < nc; ++j) {
          S& o = c.at(i, jb + j);
          const A v = wide[static_cast<size_t>((i - ic0) * nc + j)];
          o = beta == A(0) ? Elem<S>::store(v) : Elem<S>::store(beta * Elem<S>::load(o) + v);
        }
    }
  };
  const int64_t tasks = n_jb * groups;
  if (par) {
#pragma omp parallel
    {
      Buffers buf = make_buffers();
#pragma omp for schedule(dynamic)
      for (int64_t task = 0; task < tasks; ++task) run_task(task, buf);
    }
  } else {
    // A plain loop, not an orphaned `omp for`: callers run this inside their own `omp for`
    // (one product per thread), and a worksharing loop nested in another one of the same
    // team is not allowed; libgomp then ends the caller's loop early, so its later
    // iterations were never run (Note [Serial GEMM inside a parallel loop]).
    Buffers buf = make_buffers();
    for (int64_t task = 0; task < tasks; ++task) run_task(task, buf);
  }
}

// ---- Tensor-level helpers shared by cpu/linalg*.cpp ----

/// Calls f with a typed null pointer for the storage type of dtype t; bool is refused with
/// PyTorch's wording ("\"addmm_impl_cpu_\" not implemented for 'Bool'").
template <typename F>
void dispatch(std::string_view op, DType t, F&& f) {
  switch (t) {
    case DType::Float32:
      return f(static_cast<float*>(nullptr));
    case DType::Float64:
      return f(static_cast<double*>(nullptr));
    case DType::Float16:
      return f(static_cast<Half*>(nullptr));
    case DType::BFloat16:
      return f(static_cast<BFloat16*>(nullptr));
    case DType::Int8:
      return f(static_cast<int8_t*>(nullptr));
    case DType::UInt8:
      return f(static_cast<uint8_t*>(nullptr));
    case DType::Int16:
      return f(static_cast<int16_t*>(nullptr));
    case DType::Int32:
      return f(static_cast<int32_t*>(nullptr));
    case DType::Int64:
      return f(static_cast<int64_t*>(nullptr));
    case DType::Bool:
      break;
  }
  LOOM_THROW(TypeError, op, ": \"addmm_impl_cpu_\" not implemented for 'Bool'");
}

/// The 2-D matrix of t (dims d0, d1) at element offset off.
template <typename S>
Mat<S> mat_of(const Tensor& t, int64_t d0, int64_t d1, int64_t off = 0) {
  return Mat<S>{static_cast<S*>(t.data_ptr()) + off, t.stride(d0), t.stride(d1)};
}

/// The C type names of PyTorch's messages live with the other dtype helpers.
using cpu::c_type_name;

/// Calls f(offset of operand 0, offset of operand 1, ...) for every index of sizes, in
/// row-major order, with one stride list per operand.
template <size_t N, typename F>
void for_each_offset(IntArrayRef sizes, const std::array<IntArrayRef, N>& strides, F&& f) {
  const auto nd = static_cast<int64_t>(sizes.size());
  for (int64_t s : sizes)
    if (s == 0) return;
  std::array<int64_t, N> off{};
  if (nd == 0) return f(off);
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  const int64_t inner = sizes[nd - 1];
  while (true) {
    std::array<int64_t, N> o = off;
    for (int64_t j = 0; j < inner; ++j) {
      f(o);
      for (size_t q = 0; q < N; ++q) o[q] += strides[q][nd - 1];
    }
    int64_t d = nd - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      for (size_t q = 0; q < N; ++q) off[q] += strides[q][d];
      if (idx[d] < sizes[d]) break;
      for (size_t q = 0; q < N; ++q) off[q] -= idx[d] * strides[q][d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/// Row-major contiguous strides for sizes.
inline std::vector<int64_t> row_major_strides(IntArrayRef sizes) {
  std::vector<int64_t> st(sizes.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    st[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  return st;
}

}  // namespace loom::ops::cpu::gemm

namespace loom::ops::cpu {
/// c[i] = beta*c[i] + alpha*(a[i] @ b[i]) over the leading (batch) dims of equal-rank a, b, c
/// (cpu/linalg.cpp); broadcast batch dims may have stride 0 in a and b; c must not overlap them.
void batched_gemm_into(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& c,
                       const Scalar& beta, const Scalar& alpha);
}  // namespace loom::ops::cpu
