// Reference CPU kernels: softmax, log_softmax, their _-prefixed forms and backward ops.
// Stable: each line subtracts its max before exp. Contiguous float32 lines, forward and
// backward, run the per-ISA kernels (cpu/vec/softmax_kernels.h: vector exp, the cascade sum
// in float); other float and 16-bit lines compute in float with the line's sum in double;
// double computes in double.
#include "loom/ops/meta/softmax.h"

#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "cpu/vec/softmax_kernels.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu::reduction {
namespace {

namespace meta = loom::ops::meta;

/// The contiguous float line: the per-ISA kernels (cpu/vec/softmax_kernels.h).
template <bool kLog>
void float_line(const float* x, float* y, int64_t n) {
  if constexpr (kLog) {
    LOOM_ISA_CALL(log_softmax_line_f32)(x, y, n);
  } else {
    LOOM_ISA_CALL(softmax_line_f32)(x, y, n);
  }
}

/// Softmax over a middle dim of a contiguous [outer, len, inner] double tensor
/// (as dim 1 of NCHW): lines are `inner` apart, so a tile of kTile neighbouring lines is
/// done together and every load is contiguous.
template <bool kLog, typename T>
void tiled_lines(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  constexpr int64_t kTile = 32;
  const int64_t tiles = (inner + kTile - 1) / kTile;
  const bool big = outer * len * inner >= kGrain;
  maybe_parallel_for(big && outer * tiles > 1, outer * tiles, [&](int64_t t) {
    const int64_t o = t / tiles;
    const int64_t c0 = (t % tiles) * kTile;
    const int64_t nb = std::min(kTile, inner - c0);
    const T* xb = x + o * len * inner + c0;
    T* yb = y + o * len * inner + c0;
    T m[kTile];
    double sum[kTile];
    for (int64_t b = 0; b < nb; ++b) {
      m[b] = -std::numeric_limits<T>::infinity();
      sum[b] = 0;
    }
    for (int64_t j = 0; j < len; ++j) {
      const T* r = xb + j * inner;
      for (int64_t b = 0; b < nb; ++b) m[b] = r[b] > m[b] ? r[b] : m[b];
    }
    for (int64_t j = 0; j < len; ++j) {
      const T* r = xb + j * inner;
      T* w = yb + j * inner;
      for (int64_t b = 0; b < nb; ++b) {
        const T e = std::exp(r[b] - m[b]);
        if constexpr (!kLog) w[b] = e;
        sum[b] += static_cast<double>(e);
      }
    }
    T f[kTile];
    for (int64_t b = 0; b < nb; ++b) {
      f[b] = kLog ? static_cast<T>(std::log(sum[b])) : static_cast<T>(1.0 / sum[b]);
    }
    for (int64_t j = 0; j < len; ++j) {
      const T* r = xb + j * inner;
      T* w = yb + j * inner;
      for (int64_t b = 0; b < nb; ++b) {
        if constexpr (kLog) {
          w[b] = (r[b] - m[b]) - f[b];
        } else {
          w[b] *= f[b];
        }
      }
    }
  });
}

/// Softmax over a middle dim of a contiguous [outer, len, inner] float32 tensor on the per-ISA
/// column kernels: tiles of 64 neighbouring lines, every load contiguous.
template <bool kLog>
void float_cols(const float* x, float* y, int64_t outer, int64_t len, int64_t inner) {
  constexpr int64_t kTile = 64;
  const int64_t tiles = (inner + kTile - 1) / kTile;
  const bool big = outer * len * inner >= kGrain;
  const auto kernel = kLog ? LOOM_ISA_CALL(log_softmax_cols_f32) : LOOM_ISA_CALL(softmax_cols_f32);
  maybe_parallel_for(big && outer * tiles > 1, outer * tiles, [&](int64_t t) {
    const int64_t o = t / tiles;
    const int64_t c0 = (t % tiles) * kTile;
    const int64_t off = o * len * inner + c0;
    kernel(x + off, y + off, len, inner, std::min(kTile, inner - c0));
  });
}

/// op names the op called: _softmax, or softmax.int's "softmax" (so that its messages name it).
template <bool kLog>
Tensor softmax_forward(const char* op, const Tensor& self, int64_t dim, DType out_dtype) {
  meta::check_softmax_input(op, self, dim);
  const Tensor src = self.dtype() == out_dtype ? self : cast_contiguous(self, out_dtype);
  Tensor out = Tensor::empty(self.sizes(), options_like(self, out_dtype));
  if (out.numel() == 0 || is_meta(out)) return out;
  const int64_t w = self.dim() == 0 ? 0 : wrap_dim(dim, self.dim());
  int64_t inner = 1;
  for (int64_t d = w + 1; d < self.dim(); ++d) inner *= self.size(d);
  if (inner > 1 && src.is_contiguous() &&
      (out_dtype == DType::Float32 || out_dtype == DType::Float64)) {
    const int64_t len = self.size(w);
    const int64_t outer = self.numel() / (len * inner);
    if (out_dtype == DType::Float32) {
      float_cols<kLog>(data_of<float>(src), data_of<float>(out), outer, len, inner);
    } else {
      tiled_lines<kLog>(data_of<double>(src), data_of<double>(out), outer, len, inner);
    }
    return out;
  }
  const LinePlan plan = make_lines(dim, {&src, &out});
  dispatch_floats(op, src, [&]<typename T>(T*) {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in = data_of<T>(src);
    T* o = data_of<T>(out);
    const int64_t n = plan.len;
    const int64_t si = plan.stride[0];
    const int64_t so = plan.stride[1];
    for_each_line(plan, [&](int64_t, const int64_t* off) {
      const T* x = in + off[0];
      T* y = o + off[1];
      if constexpr (std::is_same_v<T, float>) {
        if (si == 1 && so == 1) {
          float_line<kLog>(x, y, n);
          return;
        }
      }
      C m = -std::numeric_limits<C>::infinity();
      for (int64_t i = 0; i < n; ++i) {
        const C v = load(x + i * si);
        m = v > m ? v : m;
      }
      // A NaN, or a line of -inf, makes x - m NaN below, so the whole line is NaN (as PyTorch).
      double sum = 0;
      if constexpr (kLog) {
        for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<C>(load(x + i * si)) - m);
        const C log_sum = static_cast<C>(std::log(sum));
        for (int64_t i = 0; i < n; ++i)
          store(y + i * so, (static_cast<C>(load(x + i * si)) - m) - log_sum);
      } else if constexpr (std::is_floating_point_v<T>) {
        for (int64_t i = 0; i < n; ++i) {
          const C e = std::exp(static_cast<C>(load(x + i * si)) - m);
          y[i * so] = e;
          sum += e;
        }
        const C inv = static_cast<C>(1.0 / sum);
        for (int64_t i = 0; i < n; ++i) y[i * so] *= inv;
      } else {
        // 16-bit outputs: recompute exp rather than round it twice.
        for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<C>(load(x + i * si)) - m);
        const C inv = static_cast<C>(1.0 / sum);
        for (int64_t i = 0; i < n; ++i) {
          store(y + i * so, std::exp(static_cast<C>(load(x + i * si)) - m) * inv);
        }
      }
    });
  });
  return out;
}

Tensor softmax_(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_forward<false>("_softmax", self, dim,
                                meta::softmax_half_to_float_dtype("_softmax", self, half_to_float));
}
Tensor log_softmax_(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_forward<true>(
      "_log_softmax", self, dim,
      meta::softmax_half_to_float_dtype("_log_softmax", self, half_to_float));
}
Tensor softmax_int(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax_forward<false>(
      "softmax",
      self.dtype() == dtype.value_or(self.dtype()) ? self : cast_contiguous(self, *dtype), dim,
      dtype.value_or(self.dtype()));
}
Tensor log_softmax_int(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax_forward<true>(
      "log_softmax",
      self.dtype() == dtype.value_or(self.dtype()) ? self : cast_contiguous(self, *dtype), dim,
      dtype.value_or(self.dtype()));
}

/// softmax: grad_in = y * (g - sum(g * y)); log_softmax: grad_in = g - exp(y) * sum(g).
template <bool kLog>
Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim, DType input_dtype) {
  const char* op = kLog ? "_log_softmax_backward_data" : "_softmax_backward_data";
  check_defined(op, {{"grad_output", grad}, {"output", output}});
  meta::check_softmax_backward(op, grad, output, dim);
  Tensor result = Tensor::empty(grad.sizes(), options_like(grad, grad.dtype()));
  if (result.numel() > 0 && !is_meta(result)) {
    const LinePlan plan = make_lines(dim, {&grad, &output, &result});
    dispatch_floats(op, grad, [&]<typename T>(T*) {
      const T* g0 = data_of<T>(grad);
      const T* y0 = data_of<T>(output);
      T* r0 = data_of<T>(result);
      const int64_t n = plan.len;
      const int64_t sg = plan.stride[0], sy = plan.stride[1], sr = plan.stride[2];
      for_each_line(plan, [&](int64_t, const int64_t* off) {
        const T* g = g0 + off[0];
        const T* y = y0 + off[1];
        T* r = r0 + off[2];
        if constexpr (std::is_same_v<T, float>) {
          if (sg == 1 && sy == 1 && sr == 1) {
            if constexpr (kLog) {
              LOOM_ISA_CALL(log_softmax_backward_line_f32)(g, y, r, n);
            } else {
              LOOM_ISA_CALL(softmax_backward_line_f32)(g, y, r, n);
            }
            return;
          }
        }
        double acc = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double gi = load(g + i * sg);
          acc += kLog ? gi : gi * static_cast<double>(load(y + i * sy));
        }
        for (int64_t i = 0; i < n; ++i) {
          const double gi = load(g + i * sg);
          const double yi = load(y + i * sy);
          store(r + i * sr, kLog ? gi - std::exp(yi) * acc : yi * (gi - acc));
        }
      });
    });
  }
  return input_dtype == result.dtype() ? result : cast_contiguous(result, input_dtype);
}

Tensor softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, DType dt) {
  return softmax_backward<false>(grad, output, dim, dt);
}
Tensor log_softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim, DType dt) {
  return softmax_backward<true>(grad, output, dim, dt);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("softmax.int", &softmax_int);
  m.impl("log_softmax.int", &log_softmax_int);
  m.impl("_softmax", &softmax_);
  m.impl("_log_softmax", &log_softmax_);
  m.impl("_softmax_backward_data", &softmax_backward_data);
  m.impl("_log_softmax_backward_data", &log_softmax_backward_data);
}

}  // namespace loom::ops::cpu::reduction
