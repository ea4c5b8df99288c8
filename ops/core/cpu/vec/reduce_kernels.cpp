// Per-ISA float reductions (built three times by loom_add_isa_sources; declared in
// reduce_kernels.h). Raw pointer loops only: see Note [CPU kernels per instruction set] in
// loom/core/cpu_isa.h and Note [Cascade sum] in reduce_simd.h.
#include "cpu/vec/reduce_simd.h"

namespace loom::cpu::LOOM_ISA_NAMESPACE {

using namespace simd;

namespace {

/// The terms x (or x * x, or (x - c)^2) of a contiguous row, zero past the end.
template <int kKind>
struct RowTerms {
  const float* p;
  float c;
  LOOM_SIMD_INLINE VF operator()(int64_t i, int k) const {
    VF x = k == kW ? loadu(p + i) : load_partial(p + i, k, c);
    if constexpr (kKind == 1) x = x * x;
    if constexpr (kKind == 2) {
      x = x - splat(c);
      x = x * x;
    }
    return x;
  }
};

/// Column sums of one tile of w (<= kLanes) columns: the cascade runs down the rows (blocks
/// of kBlockRows rows, then pairwise), each column in its own lane.
template <bool kFull>
void sum_cols_tile(const float* p, int64_t rows, int64_t w, int64_t row_stride, double* out) {
  auto load = [&](const float* q) {
    if constexpr (kFull) {
      Lanes a;
#pragma GCC unroll 16
      for (int k = 0; k < kAcc; ++k) a.v[k] = loadu(q + k * kW);
      return a;
    } else {
      return load_lanes(q, w);
    }
  };
  PairwiseStack stack;
  int64_t r = 0;
  for (; r + kBlockRows <= rows; r += kBlockRows) {
    Lanes b = load(p + r * row_stride);
    for (int64_t j = 1; j < kBlockRows; ++j) add_into(b, load(p + (r + j) * row_stride));
    stack.push(b);
  }
  Lanes t;
  for (int k = 0; k < kAcc; ++k) t.v[k] = VF{};
  for (; r < rows; ++r) add_into(t, load(p + r * row_stride));
  double lanes[kLanes];
  PairwiseStack::widen(t, lanes);
  stack.total_lanes(lanes);
  for (int64_t j = 0; j < w; ++j) out[j] = lanes[j];
}

/// Column sums of kT * kLanes full columns at once: each row contributes kT * 256 contiguous
/// bytes, not 256 bytes at a 4 KiB stride (a third of the speed on a [4096, 1024] matrix).
/// Every column is summed in the same order as by sum_cols_tile.
#if defined(__AVX512F__)
inline constexpr int kWideTiles = 4;  // 16 of the 32 vector registers
#elif defined(__AVX2__)
inline constexpr int kWideTiles = 2;  // all 16
#else
inline constexpr int kWideTiles = 1;
#endif

void sum_cols_wide(const float* p, int64_t rows, int64_t row_stride, double* out) {
  PairwiseStack stack[kWideTiles];
  Lanes b[kWideTiles];
  auto add_row = [&](const float* q, bool first) {
#pragma GCC unroll 4
    for (int t = 0; t < kWideTiles; ++t) {
#pragma GCC unroll 16
      for (int k = 0; k < kAcc; ++k) {
        const VF v = loadu(q + t * kLanes + k * kW);
        b[t].v[k] = first ? v : b[t].v[k] + v;
      }
    }
  };
  int64_t r = 0;
  for (; r + kBlockRows <= rows; r += kBlockRows) {
    add_row(p + r * row_stride, true);
    for (int64_t j = 1; j < kBlockRows; ++j) add_row(p + (r + j) * row_stride, false);
    for (int t = 0; t < kWideTiles; ++t) stack[t].push(b[t]);
  }
  for (int t = 0; t < kWideTiles; ++t) {
    for (int k = 0; k < kAcc; ++k) b[t].v[k] = VF{};
  }
  for (; r < rows; ++r) add_row(p + r * row_stride, false);
  for (int t = 0; t < kWideTiles; ++t) {
    double lanes[kLanes];
    PairwiseStack::widen(b[t], lanes);
    stack[t].total_lanes(lanes);
    for (int j = 0; j < kLanes; ++j) out[t * kLanes + j] = lanes[j];
  }
}

/// NaN-propagating max (kMax) or min of a contiguous row; n >= 1.
template <bool kMax>
float extreme_row(const float* p, int64_t n) {
  constexpr float kInit = kMax ? -__builtin_inff() : __builtin_inff();
  VF m[4] = {splat(kInit), splat(kInit), splat(kInit), splat(kInit)};
  VI nan{};
  auto take = [&](VF& acc, VF x) {
    acc = kMax ? (x > acc ? x : acc) : (x < acc ? x : acc);
    nan |= x != x;
  };
  int64_t i = 0;
  for (; i + 4 * kW <= n; i += 4 * kW) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) take(m[k], loadu(p + i + k * kW));
  }
  for (; i + kW <= n; i += kW) take(m[0], loadu(p + i));
  if (i < n) take(m[0], load_partial(p + i, static_cast<int>(n - i), kInit));
  VF a = kMax ? (m[0] > m[1] ? m[0] : m[1]) : (m[0] < m[1] ? m[0] : m[1]);
  VF b = kMax ? (m[2] > m[3] ? m[2] : m[3]) : (m[2] < m[3] ? m[2] : m[3]);
  a = kMax ? (a > b ? a : b) : (a < b ? a : b);
  float t[kW];
  storeu(t, a);
  float r = t[0];
  bool any_nan = false;
  for (int k = 0; k < kW; ++k) {
    r = kMax ? (t[k] > r ? t[k] : r) : (t[k] < r ? t[k] : r);
    any_nan |= nan[k] != 0;
  }
  return any_nan ? __builtin_nanf("") : r;
}

/// x beats the best so far b: strictly greater (smaller), or the first NaN.
template <bool kMax>
LOOM_SIMD_INLINE bool beats(float x, float b) {
  if (b != b) return false;
  return x != x || (kMax ? x > b : x < b);
}

/// Index of the first maximum (minimum) of a contiguous row, a NaN counting as the
/// greatest (PyTorch's rule); n >= 1, n < 2^31.
template <bool kMax>
int64_t arg_extreme_segment(const float* p, int64_t n, float* value) {
  int64_t i = 0;
  float best = p[0];
  int64_t best_i = 0;
  if (n >= 2 * kW) {
    VI iota;
    for (int k = 0; k < kW; ++k) iota[k] = k;
    VF bv = loadu(p);
    VI bi = iota;
    for (i = kW; i + kW <= n; i += kW) {
      const VF x = loadu(p + i);
      const VI better = (kMax ? x > bv : x < bv) | ((x != x) & (bv == bv));
      bv = better ? x : bv;
      bi = better ? iota + static_cast<int32_t>(i) : bi;
    }
    // Lanes hold the first best of their own elements: pick the best, then the lowest index.
    best = bv[0];
    best_i = bi[0];
    for (int k = 1; k < kW; ++k) {
      if (beats<kMax>(bv[k], best) || ((bv[k] == best || (bv[k] != bv[k] && best != best)) &&
                                       bi[k] < best_i)) {
        best = bv[k];
        best_i = bi[k];
      }
    }
  } else {
    i = 1;
  }
  for (; i < n; ++i) {
    if (beats<kMax>(p[i], best)) {
      best = p[i];
      best_i = i;
    }
  }
  *value = best;
  return best_i;
}

template <bool kMax>
int64_t arg_extreme_row(const float* p, int64_t n, float* value) {
  constexpr int64_t kSeg = int64_t{1} << 30;
  float best = 0;
  int64_t best_i = -1;
  for (int64_t s = 0; s < n; s += kSeg) {
    float v;
    const int64_t len = n - s < kSeg ? n - s : kSeg;
    const int64_t j = arg_extreme_segment<kMax>(p + s, len, &v) + s;
    if (best_i < 0 || beats<kMax>(v, best)) {
      best = v;
      best_i = j;
    }
  }
  *value = best;
  return best_i;
}

/// Rows shorter than the 64 lanes add in double, one by one: cheaper than the lanes' widening
/// and fold (sum(dim=-1) of [N, 4] calls this N times), as exact, and the same at every level.
template <int kKind>
double row_sum(const float* p, int64_t n, float c) {
  if (n < kLanes) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(p[i]) - static_cast<double>(c);
      s += kKind == 0 ? static_cast<double>(p[i]) : x * x;
    }
    return s;
  }
  return cascade_sum(n, RowTerms<kKind>{p, c});
}

}  // namespace

double sum_f32(const float* p, int64_t n) { return row_sum<0>(p, n, 0.0f); }
double sum_squares_f32(const float* p, int64_t n) { return row_sum<1>(p, n, 0.0f); }
double sum_sq_dev_f32(const float* p, int64_t n, float mean) { return row_sum<2>(p, n, mean); }

void sum_cols_f32(const float* p, int64_t rows, int64_t cols, int64_t row_stride, double* out) {
  int64_t c = 0;
  for (; c + kWideTiles * kLanes <= cols; c += kWideTiles * kLanes) {
    sum_cols_wide(p + c, rows, row_stride, out + c);
  }
  for (; c + kLanes <= cols; c += kLanes) sum_cols_tile<true>(p + c, rows, kLanes, row_stride, out + c);
  if (c < cols) sum_cols_tile<false>(p + c, rows, cols - c, row_stride, out + c);
}

float max_f32(const float* p, int64_t n) { return extreme_row<true>(p, n); }
float min_f32(const float* p, int64_t n) { return extreme_row<false>(p, n); }

int64_t argmax_f32(const float* p, int64_t n, float* value) {
  return arg_extreme_row<true>(p, n, value);
}
int64_t argmin_f32(const float* p, int64_t n, float* value) {
  return arg_extreme_row<false>(p, n, value);
}

}  // namespace loom::cpu::LOOM_ISA_NAMESPACE
