// Per-ISA softmax and log_softmax lines, forward and backward, and a vector exp (built three
// times by loom_add_isa_sources; declared in softmax_kernels.h). Raw pointer loops only: see
// Note [CPU kernels per instruction set] in loom/core/cpu_isa.h. Sums are Note [Cascade sum]
// (reduce_simd.h), exp is simd::exp (about 1 ulp).
#include "cpu/vec/reduce_simd.h"

namespace loom::cpu::LOOM_ISA_NAMESPACE {

using namespace simd;

namespace {

/// Max of a line, ignoring NaN (a NaN reaches every output through exp and the sum).
LOOM_SIMD_INLINE float line_max(const float* x, int64_t n) {
  const VF ninf = splat(-__builtin_inff());
  VF m[4] = {ninf, ninf, ninf, ninf};
  int64_t i = 0;
  for (; i + 4 * kW <= n; i += 4 * kW) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const VF v = loadu(x + i + k * kW);
      m[k] = v > m[k] ? v : m[k];
    }
  }
  for (; i + kW <= n; i += kW) {
    const VF v = loadu(x + i);
    m[0] = v > m[0] ? v : m[0];
  }
  if (i < n) {
    const VF v = load_partial(x + i, static_cast<int>(n - i), -__builtin_inff());
    m[0] = v > m[0] ? v : m[0];
  }
  m[0] = m[1] > m[0] ? m[1] : m[0];
  m[2] = m[3] > m[2] ? m[3] : m[2];
  m[0] = m[2] > m[0] ? m[2] : m[0];
  float t[kW];
  storeu(t, m[0]);
  float r = t[0];
  for (int k = 1; k < kW; ++k) r = t[k] > r ? t[k] : r;
  return r;
}

/// y[i] = f(x[i]) for a lane-wise f.
template <typename F>
LOOM_SIMD_INLINE void map(const float* x, float* y, int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) storeu(y + i, f(loadu(x + i)));
  if (i < n) {
    const int k = static_cast<int>(n - i);
    store_partial(y + i, f(load_partial(x + i, k)), k);
  }
}

}  // namespace

void exp_f32(const float* x, float* y, int64_t n) {
  map(x, y, n, [](VF v) { return simd::exp(v); });
}

void softmax_line_f32(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const VF m = splat(line_max(x, n));
  // exp(x - m) goes to y while the cascade sums it; a NaN (or a line of -inf, where
  // x - m is NaN) makes the sum and so every output NaN, as in PyTorch.
  const double sum = cascade_sum(n, [&](int64_t i, int k) {
    if (k == kW) {
      const VF e = simd::exp(loadu(x + i) - m);
      storeu(y + i, e);
      return e;
    }
    const VF e = simd::exp(load_partial(x + i, k) - m);
    store_partial(y + i, e, k);
    return select(first_lanes(k), e, VF{});
  });
  const VF inv = splat(static_cast<float>(1.0 / sum));
  map(y, y, n, [&](VF v) { return v * inv; });
}

void log_softmax_line_f32(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const VF m = splat(line_max(x, n));
  const double sum = cascade_sum(n, [&](int64_t i, int k) {
    if (k == kW) return simd::exp(loadu(x + i) - m);
    return select(first_lanes(k), simd::exp(load_partial(x + i, k) - m), VF{});
  });
  const VF log_sum = splat(static_cast<float>(__builtin_log(sum)));
  map(x, y, n, [&](VF v) { return (v - m) - log_sum; });
}

void softmax_backward_line_f32(const float* g, const float* y, float* r, int64_t n) {
  if (n <= 0) return;
  const double dot = cascade_sum(n, [&](int64_t i, int k) {
    if (k == kW) return loadu(g + i) * loadu(y + i);
    return load_partial(g + i, k) * load_partial(y + i, k);
  });
  const VF s = splat(static_cast<float>(dot));
  int64_t i = 0;
  for (; i + kW <= n; i += kW) storeu(r + i, loadu(y + i) * (loadu(g + i) - s));
  if (i < n) {
    const int k = static_cast<int>(n - i);
    store_partial(r + i, load_partial(y + i, k) * (load_partial(g + i, k) - s), k);
  }
}

void log_softmax_backward_line_f32(const float* g, const float* y, float* r, int64_t n) {
  if (n <= 0) return;
  const double total = cascade_sum(n, [&](int64_t i, int k) {
    return k == kW ? loadu(g + i) : load_partial(g + i, k);
  });
  const VF s = splat(static_cast<float>(total));
  int64_t i = 0;
  for (; i + kW <= n; i += kW) storeu(r + i, loadu(g + i) - simd::exp(loadu(y + i)) * s);
  if (i < n) {
    const int k = static_cast<int>(n - i);
    store_partial(r + i, load_partial(g + i, k) - simd::exp(load_partial(y + i, k)) * s, k);
  }
}

namespace {

/// Stores the first w (<= kLanes) lanes of a to p (load_lanes' inverse); nothing past p + w.
LOOM_SIMD_INLINE void store_cols(float* p, const Lanes& a, int64_t w) {
#pragma GCC unroll 16
  for (int k = 0; k < kAcc; ++k) {
    const int64_t left = w - k * kW;
    if (left >= kW) {
      storeu(p + k * kW, a.v[k]);
    } else if (left > 0) {
      store_partial(p + k * kW, a.v[k], static_cast<int>(left));
    }
  }
}

template <bool kLog>
void softmax_cols(const float* x, float* y, int64_t len, int64_t stride, int64_t w) {
  Lanes m;
  for (int k = 0; k < kAcc; ++k) m.v[k] = splat(-__builtin_inff());
  for (int64_t j = 0; j < len; ++j) {
    const Lanes v = load_lanes(x + j * stride, w);
    for (int k = 0; k < kAcc; ++k) m.v[k] = v.v[k] > m.v[k] ? v.v[k] : m.v[k];
  }
  // exp(x - m) down the rows by the cascade (Note [Cascade sum]), one column per lane.
  auto row = [&](int64_t j) {
    Lanes e = load_lanes(x + j * stride, w);
    for (int k = 0; k < kAcc; ++k) e.v[k] = simd::exp(e.v[k] - m.v[k]);
    if constexpr (!kLog) store_cols(y + j * stride, e, w);
    return e;
  };
  PairwiseStack stack;
  int64_t j = 0;
  for (; j + kBlockRows <= len; j += kBlockRows) {
    Lanes b = row(j);
    for (int64_t r = 1; r < kBlockRows; ++r) add_into(b, row(j + r));
    stack.push(b);
  }
  Lanes t;
  for (int k = 0; k < kAcc; ++k) t.v[k] = VF{};
  for (; j < len; ++j) add_into(t, row(j));
  double sum[kLanes];
  PairwiseStack::widen(t, sum);
  stack.total_lanes(sum);
  float f[kLanes];
  for (int c = 0; c < kLanes; ++c) {
    f[c] = kLog ? static_cast<float>(__builtin_log(sum[c])) : static_cast<float>(1.0 / sum[c]);
  }
  Lanes fl;
  for (int k = 0; k < kAcc; ++k) fl.v[k] = loadu(f + k * kW);
  for (j = 0; j < len; ++j) {
    Lanes v = load_lanes(kLog ? x + j * stride : y + j * stride, w);
    for (int k = 0; k < kAcc; ++k) {
      v.v[k] = kLog ? (v.v[k] - m.v[k]) - fl.v[k] : v.v[k] * fl.v[k];
    }
    store_cols(y + j * stride, v, w);
  }
}

}  // namespace

void softmax_cols_f32(const float* x, float* y, int64_t len, int64_t stride, int64_t w) {
  softmax_cols<false>(x, y, len, stride, w);
}

void log_softmax_cols_f32(const float* x, float* y, int64_t len, int64_t stride, int64_t w) {
  softmax_cols<true>(x, y, len, stride, w);
}

double sum_exp_f32(const float* x, int64_t n, float shift) {
  const VF m = splat(shift);
  return cascade_sum(n, [&](int64_t i, int k) {
    if (k == kW) return simd::exp(loadu(x + i) - m);
    return select(first_lanes(k), simd::exp(load_partial(x + i, k) - m), VF{});
  });
}

}  // namespace loom::cpu::LOOM_ISA_NAMESPACE
