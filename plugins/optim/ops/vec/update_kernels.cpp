// The fused update ops' per-ISA loops (SGD, Adam/AdamW, RMSprop, Adagrad; declared in
// vec/update_kernels.h). Compiled three times by loom_add_isa_sources (baseline, AVX2, AVX-512,
// at -O3, with -fno-math-errno so that sqrt is one instruction): raw pointer loops only,
// nothing with an inline function of its own (Note [CPU kernels per instruction set] in
// loom/core/cpu_isa.h), hence __builtin_sqrt and no <cmath> or <algorithm>.
//
// Note [Vectorized update loops]: each option is a template flag, so the loop holds no test;
// the scalars are copied into locals that no store through x, m or v can alias; and every
// element is computed alone (no reduction), so the result does not depend on the vector
// width or the number of threads beyond the contraction of a * b + c into one fused
// multiply-add where the level has one.
#include <cstdint>

#include "vec/update_kernels.h"

namespace loom::cpu::LOOM_ISA_NAMESPACE {
namespace {

inline float root(float x) { return __builtin_sqrtf(x); }
inline double root(double x) { return __builtin_sqrt(x); }

template <bool kDecoupled, bool kL2, bool kAmsgrad, bool kFromM, typename T>
void adam_loop(const AdamStepArgs<T>& a, T* __restrict x, const T* __restrict gr,
               T* __restrict m, T* __restrict v, T* __restrict vm, int64_t n) {
  const T step_size = a.step_size, bc2_sqrt = a.bc2_sqrt, decay = a.decay;
  const T wd = a.weight_decay, w1 = a.w1, b2 = a.beta2, w2 = a.w2, eps = a.eps, sign = a.sign;
  const T w1c = T(1) - w1;
  for (int64_t i = 0; i < n; ++i) {
    T g = sign * gr[i];
    T xi = x[i];
    if constexpr (kDecoupled) {
      xi = xi * decay;
    } else if constexpr (kL2) {
      g = g + wd * xi;
    }
    const T mi = m[i];
    const T mn = kFromM ? mi + w1 * (g - mi) : g - (g - mi) * w1c;
    const T vn = b2 * v[i] + w2 * (g * g);
    m[i] = mn;
    v[i] = vn;
    T denom;
    if constexpr (kAmsgrad) {
      const T vmi = vm[i];
      const T vmax = vmi < vn ? vn : vmi;  // std::max(vm, v)
      vm[i] = vmax;
      denom = root(vmax) / bc2_sqrt + eps;
    } else {
      denom = root(vn) / bc2_sqrt + eps;
    }
    x[i] = xi - step_size * (mn / denom);
  }
}

template <bool kDecoupled, bool kL2, bool kAmsgrad, typename T>
void adam_lerp(const AdamStepArgs<T>& a, T* x, const T* g, T* m, T* v, T* vm, int64_t n) {
  // PyTorch's lerp(m, g, w1) is computed from the nearer end: chosen once, outside the loop.
  if ((a.w1 < T(0) ? -a.w1 : a.w1) < T(0.5)) {
    adam_loop<kDecoupled, kL2, kAmsgrad, true>(a, x, g, m, v, vm, n);
  } else {
    adam_loop<kDecoupled, kL2, kAmsgrad, false>(a, x, g, m, v, vm, n);
  }
}

template <typename T>
void adam(const AdamStepArgs<T>& a, T* x, const T* g, T* m, T* v, T* vm, int64_t n) {
  if (a.amsgrad) {
    if (a.decoupled) return adam_lerp<true, false, true>(a, x, g, m, v, vm, n);
    if (a.has_l2) return adam_lerp<false, true, true>(a, x, g, m, v, vm, n);
    return adam_lerp<false, false, true>(a, x, g, m, v, vm, n);
  }
  if (a.decoupled) return adam_lerp<true, false, false>(a, x, g, m, v, vm, n);
  if (a.has_l2) return adam_lerp<false, true, false>(a, x, g, m, v, vm, n);
  return adam_lerp<false, false, false>(a, x, g, m, v, vm, n);
}

template <bool kWd, bool kMomentum, bool kNesterov, bool kFirst, typename T>
void sgd_loop(const SgdStepArgs<T>& a, T* __restrict x, const T* __restrict gr, T* __restrict b,
              int64_t n) {
  const T lr = a.lr, mom = a.momentum, damp = a.one_minus_dampening, wd = a.weight_decay;
  const T sign = a.sign;
  for (int64_t i = 0; i < n; ++i) {
    T g = sign * gr[i];
    if constexpr (kWd) g = g + wd * x[i];
    if constexpr (kMomentum) {
      T bi;
      if constexpr (kFirst) {
        bi = g;
      } else {
        bi = mom * b[i] + damp * g;
      }
      b[i] = bi;
      if constexpr (kNesterov) {
        g = g + mom * bi;
      } else {
        g = bi;
      }
    }
    x[i] = x[i] - lr * g;
  }
}

template <bool kWd, bool kMomentum, typename T>
void sgd_nesterov_first(const SgdStepArgs<T>& a, T* x, const T* g, T* b, int64_t n) {
  if (a.nesterov) {
    if (a.first) return sgd_loop<kWd, kMomentum, true, true>(a, x, g, b, n);
    return sgd_loop<kWd, kMomentum, true, false>(a, x, g, b, n);
  }
  if (a.first) return sgd_loop<kWd, kMomentum, false, true>(a, x, g, b, n);
  return sgd_loop<kWd, kMomentum, false, false>(a, x, g, b, n);
}

template <typename T>
void sgd(const SgdStepArgs<T>& a, T* x, const T* g, T* b, int64_t n) {
  if (!a.has_momentum) {
    if (a.has_wd) return sgd_loop<true, false, false, false>(a, x, g, b, n);
    return sgd_loop<false, false, false, false>(a, x, g, b, n);
  }
  if (a.has_wd) return sgd_nesterov_first<true, true>(a, x, g, b, n);
  return sgd_nesterov_first<false, true>(a, x, g, b, n);
}

template <bool kWd, bool kCentered, bool kMomentum, bool kFromSelf, typename T>
void rmsprop_loop(const RmspropStepArgs<T>& a, T* __restrict x, const T* __restrict gr,
                  T* __restrict sq, T* __restrict ga, T* __restrict b, int64_t n) {
  const T lr = a.lr, alpha = a.alpha, w = a.one_minus_alpha, eps = a.eps, wd = a.weight_decay;
  const T mom = a.momentum, sign = a.sign, wc = T(1) - w;
  for (int64_t i = 0; i < n; ++i) {
    T g = sign * gr[i];
    if constexpr (kWd) g = g + wd * x[i];
    const T s = alpha * sq[i] + w * (g * g);
    sq[i] = s;
    T avg;
    if constexpr (kCentered) {
      const T gi = ga[i];
      const T gn = kFromSelf ? gi + w * (g - gi) : g - (g - gi) * wc;  // lerp(ga, g, w)
      ga[i] = gn;
      avg = root(s - gn * gn) + eps;
    } else {
      avg = root(s) + eps;
    }
    if constexpr (kMomentum) {
      const T bn = mom * b[i] + g / avg;
      b[i] = bn;
      x[i] = x[i] - lr * bn;
    } else {
      x[i] = x[i] - lr * (g / avg);
    }
  }
}

template <bool kWd, bool kCentered, bool kMomentum, typename T>
void rmsprop_lerp(const RmspropStepArgs<T>& a, T* x, const T* g, T* sq, T* ga, T* b, int64_t n) {
  if ((a.one_minus_alpha < T(0) ? -a.one_minus_alpha : a.one_minus_alpha) < T(0.5)) {
    rmsprop_loop<kWd, kCentered, kMomentum, true>(a, x, g, sq, ga, b, n);
  } else {
    rmsprop_loop<kWd, kCentered, kMomentum, false>(a, x, g, sq, ga, b, n);
  }
}

template <bool kWd, typename T>
void rmsprop_options(const RmspropStepArgs<T>& a, T* x, const T* g, T* sq, T* ga, T* b,
                     int64_t n) {
  if (a.centered) {
    if (a.has_momentum) return rmsprop_lerp<kWd, true, true>(a, x, g, sq, ga, b, n);
    return rmsprop_lerp<kWd, true, false>(a, x, g, sq, ga, b, n);
  }
  if (a.has_momentum) return rmsprop_lerp<kWd, false, true>(a, x, g, sq, ga, b, n);
  return rmsprop_lerp<kWd, false, false>(a, x, g, sq, ga, b, n);
}

template <typename T>
void rmsprop(const RmspropStepArgs<T>& a, T* x, const T* g, T* sq, T* ga, T* b, int64_t n) {
  if (a.has_wd) return rmsprop_options<true>(a, x, g, sq, ga, b, n);
  rmsprop_options<false>(a, x, g, sq, ga, b, n);
}

template <bool kWd, typename T>
void adagrad_loop(const AdagradStepArgs<T>& a, T* __restrict x, const T* __restrict gr,
                  T* __restrict sum, int64_t n) {
  const T clr = a.clr, wd = a.weight_decay, eps = a.eps, sign = a.sign;
  for (int64_t i = 0; i < n; ++i) {
    T g = sign * gr[i];
    if constexpr (kWd) g = g + wd * x[i];
    const T s = sum[i] + g * g;
    sum[i] = s;
    x[i] = x[i] - clr * (g / (root(s) + eps));
  }
}

template <typename T>
void adagrad(const AdagradStepArgs<T>& a, T* x, const T* g, T* sum, int64_t n) {
  if (a.has_wd) return adagrad_loop<true>(a, x, g, sum, n);
  adagrad_loop<false>(a, x, g, sum, n);
}

}  // namespace

void rmsprop_step_f32(const RmspropStepArgs<float>& a, float* x, const float* g, float* sq,
                      float* gavg, float* buf, int64_t n) {
  rmsprop(a, x, g, sq, gavg, buf, n);
}
void rmsprop_step_f64(const RmspropStepArgs<double>& a, double* x, const double* g, double* sq,
                      double* gavg, double* buf, int64_t n) {
  rmsprop(a, x, g, sq, gavg, buf, n);
}
void adagrad_step_f32(const AdagradStepArgs<float>& a, float* x, const float* g, float* sum,
                      int64_t n) {
  adagrad(a, x, g, sum, n);
}
void adagrad_step_f64(const AdagradStepArgs<double>& a, double* x, const double* g, double* sum,
                      int64_t n) {
  adagrad(a, x, g, sum, n);
}

void adam_step_f32(const AdamStepArgs<float>& a, float* x, const float* g, float* m, float* v,
                   float* vmax, int64_t n) {
  adam(a, x, g, m, v, vmax, n);
}
void adam_step_f64(const AdamStepArgs<double>& a, double* x, const double* g, double* m,
                   double* v, double* vmax, int64_t n) {
  adam(a, x, g, m, v, vmax, n);
}
void sgd_step_f32(const SgdStepArgs<float>& a, float* x, const float* g, float* buf, int64_t n) {
  sgd(a, x, g, buf, n);
}
void sgd_step_f64(const SgdStepArgs<double>& a, double* x, const double* g, double* buf,
                  int64_t n) {
  sgd(a, x, g, buf, n);
}

}  // namespace loom::cpu::LOOM_ISA_NAMESPACE
