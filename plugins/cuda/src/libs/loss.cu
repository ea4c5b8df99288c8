// Own kernels of the nll loss and the pointwise losses (mse, smooth L1, Huber, soft margin,
// binary cross entropy with and without logits), forward and backward (libs/kernels.h). Reductions
// are summed in double in a fixed order (one block, or per-block partials then one block):
// deterministic. A target outside [0, c) is reported through a device flag the caller reads.
#include "libs/device_utils.cuh"
#include "libs/kernels.h"

namespace loom::cuda::libs {
namespace {

using dev::kThreads;

template <typename T>
__device__ __forceinline__ double ld(const T* p) {
  return static_cast<double>(static_cast<dev::acc_t<T>>(*p));
}

/// Offsets of pair p (row-major over [n, h, w]) in the input (at class 0) and the target.
__device__ __forceinline__ void pair_offsets(const NllGeometry& g, int64_t p, int64_t* xo,
                                             int64_t* to) {
  const int64_t j = p % g.w, i = (p / g.w) % g.h, b = p / (g.w * g.h);
  *xo = b * g.xn + i * g.xh + j * g.xw;
  *to = b * g.tn + i * g.th + j * g.tw;
}

/// The class of a pair, or -1 when ignored or out of range (then flagged in bad).
template <typename I>
__device__ __forceinline__ int64_t class_of(const I* t, int64_t to, const NllGeometry& g,
                                            int64_t ignore_index, int64_t* bad) {
  const auto cls = static_cast<int64_t>(t[to]);
  if (cls == ignore_index) return -1;
  if (cls < 0 || cls >= g.c) {
    if (atomicCAS(reinterpret_cast<unsigned long long*>(bad), 0ull, 1ull) == 0ull) bad[1] = cls;
    return -1;
  }
  return cls;
}

template <typename T, typename I>
__global__ void nll_unreduced_kernel(const T* x, const I* t, NllGeometry g, const T* weight,
                                     int64_t ignore_index, T* out, T* total_weight, int64_t* bad) {
  const int64_t pairs = g.n * g.h * g.w;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    int64_t xo, to;
    pair_offsets(g, p, &xo, &to);
    const int64_t cls = class_of(t, to, g, ignore_index, bad);
    double v = 0;
    if (cls >= 0) v = -ld(x + xo + cls * g.xc) * (weight != nullptr ? ld(weight + cls) : 1.0);
    dev::store(out + p, v);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) dev::store(total_weight, 0.0);
}

template <typename T, typename I>
__global__ void nll_reduced_kernel(const T* x, const I* t, NllGeometry g, const T* weight,
                                   int64_t ignore_index, bool mean, T* out, T* total_weight,
                                   int64_t* bad) {
  __shared__ double shared[kThreads];
  const int64_t pairs = g.n * g.h * g.w;
  double loss = 0, wsum = 0;
  for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    int64_t xo, to;
    pair_offsets(g, p, &xo, &to);
    const int64_t cls = class_of(t, to, g, ignore_index, bad);
    if (cls < 0) continue;
    const double wt = weight != nullptr ? ld(weight + cls) : 1.0;
    loss -= ld(x + xo + cls * g.xc) * wt;
    wsum += wt;
  }
  loss = dev::block_sum(loss, shared);
  wsum = dev::block_sum(wsum, shared);
  if (threadIdx.x == 0) {
    double v = loss;
    if (pairs == 0) {
      v = mean ? __longlong_as_double(0x7ff8000000000000ll) : 0.0;
    } else if (mean) {
      v = loss / wsum;  // every target ignored: 0 / 0, NaN as in PyTorch
    }
    dev::store(out, v);
    dev::store(total_weight, wsum);
  }
}

template <typename T, typename I>
__global__ void nll_backward_kernel(const I* t, NllGeometry g, const T* weight,
                                    int64_t ignore_index, bool mean, bool unreduced, const T* go,
                                    const T* total_weight, T* gi, int64_t* bad) {
  const int64_t pairs = g.n * g.h * g.w, hw = g.h * g.w;
  double scale = 0;
  if (!unreduced) {
    scale = -ld(go);
    if (mean) scale /= ld(total_weight);
  }
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    int64_t xo, to;
    pair_offsets(g, p, &xo, &to);
    const int64_t cls = class_of(t, to, g, ignore_index, bad);
    if (cls < 0) continue;
    const double wt = weight != nullptr ? ld(weight + cls) : 1.0;
    const double gv = unreduced ? -ld(go + p) : scale;
    dev::store(gi + (p / hw) * g.c * hw + p % hw + cls * hw, wt * gv);
  }
}

/// The loss of one element (the reference's formulas), in the compute type A.
template <typename A>
__device__ __forceinline__ A loss_value(PointwiseLoss loss, A x, A y, A w, A pw, A param,
                                        int64_t* flags) {
  switch (loss) {
    case PointwiseLoss::Mse: {
      const A d = x - y;
      return d * d;
    }
    case PointwiseLoss::SmoothL1: {
      const A z = fabs(x - y);
      return z < param ? A(0.5) * z * z / param : z - A(0.5) * param;
    }
    case PointwiseLoss::Huber: {
      const A z = fabs(x - y);
      return z < param ? A(0.5) * z * z : param * (z - A(0.5) * param);
    }
    case PointwiseLoss::SoftMargin:
      return log1p(exp(-x * y));
    case PointwiseLoss::Bce: {
      if (!(x >= A(0) && x <= A(1))) flags[0] = 1;
      if (!(y >= A(0) && y <= A(1))) flags[1] = 1;
      // Each log is clamped at -100, so x = 0 or 1 costs at most 100, as in PyTorch.
      return w * ((y - A(1)) * fmax(log1p(-x), A(-100)) - y * fmax(log(x), A(-100)));
    }
    default: {  // BceWithLogits: no exp overflows whatever the sign of x.
      const A log_sigmoid = fmin(x, A(0)) - log1p(exp(-fabs(x)));
      return w * ((A(1) - y) * x - (A(1) + (pw - A(1)) * y) * log_sigmoid);
    }
  }
}

/// d loss / dx times g, with k = norm (2 * norm for mse).
template <typename A>
__device__ __forceinline__ A loss_grad(PointwiseLoss loss, A g, A x, A y, A w, A param, A k) {
  switch (loss) {
    case PointwiseLoss::Mse:
      return A(2) * k * (x - y) * g;
    case PointwiseLoss::SmoothL1: {
      const A d = x - y;
      return d <= -param ? -k * g : (d >= param ? k * g : k * d * g / param);
    }
    case PointwiseLoss::Huber: {
      const A d = x - y;
      return d <= -param ? -k * g * param : (d >= param ? k * g * param : k * d * g);
    }
    case PointwiseLoss::SoftMargin: {
      const A z = exp(-y * x);
      return -k * y * z / (A(1) + z) * g;
    }
    default:  // Bce
      return k * w * g * (x - y) / fmax((A(1) - x) * x, A(1e-12f));
  }
}

template <typename T>
__device__ __forceinline__ dev::acc_t<T> at_or_one(const T* p, int64_t i) {
  return p != nullptr ? static_cast<dev::acc_t<T>>(p[i]) : dev::acc_t<T>(1);
}

template <typename T>
__global__ void loss_unreduced_kernel(PointwiseLoss loss, const T* x, const T* y, const T* w,
                                      const T* pw, double param, int64_t n, T* out,
                                      int64_t* flags) {
  using A = dev::acc_t<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    dev::store(out + i, loss_value<A>(loss, static_cast<A>(x[i]), static_cast<A>(y[i]),
                                      at_or_one(w, i), at_or_one(pw, i), static_cast<A>(param),
                                      flags));
  }
}

template <typename T>
__global__ void loss_partial_kernel(PointwiseLoss loss, const T* x, const T* y, const T* w,
                                    const T* pw, double param, int64_t n, double* partials,
                                    int64_t* flags) {
  using A = dev::acc_t<T>;
  __shared__ double shared[kThreads];
  double s = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    s += static_cast<double>(loss_value<A>(loss, static_cast<A>(x[i]), static_cast<A>(y[i]),
                                           at_or_one(w, i), at_or_one(pw, i),
                                           static_cast<A>(param), flags));
  }
  s = dev::block_sum(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <typename T>
__global__ void loss_finish_kernel(const double* partials, int64_t count, int64_t n, bool mean,
                                   T* out) {
  __shared__ double shared[kThreads];
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = dev::block_sum(s, shared);
  if (threadIdx.x == 0) dev::store(out, mean ? s / static_cast<double>(n) : s);
}

template <typename T>
__global__ void loss_backward_kernel(PointwiseLoss loss, const T* g, bool g_scalar, const T* x,
                                     const T* y, const T* w, double param, int64_t n, double norm,
                                     T* gi) {
  using A = dev::acc_t<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const A gv = static_cast<A>(g_scalar ? g[0] : g[i]);
    dev::store(gi + i, loss_grad<A>(loss, gv, static_cast<A>(x[i]), static_cast<A>(y[i]),
                                    at_or_one(w, i), static_cast<A>(param), static_cast<A>(norm)));
  }
}

}  // namespace

void launch_nll_forward(int kind, bool target_u8, const void* x, const void* target,
                        const NllGeometry& g, const void* weight, int64_t ignore_index,
                        bool mean, bool unreduced, void* out, void* total_weight, int64_t* bad,
                        cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto* t) {
      if (unreduced) {
        nll_unreduced_kernel<<<dev::blocks_for(g.n * g.h * g.w), kThreads, 0, stream>>>(
            static_cast<const T*>(x), t, g, static_cast<const T*>(weight), ignore_index,
            static_cast<T*>(out), static_cast<T*>(total_weight), bad);
      } else {
        nll_reduced_kernel<<<1, kThreads, 0, stream>>>(
            static_cast<const T*>(x), t, g, static_cast<const T*>(weight), ignore_index, mean,
            static_cast<T*>(out), static_cast<T*>(total_weight), bad);
      }
    };
    if (target_u8) {
      run(static_cast<const uint8_t*>(target));
    } else {
      run(static_cast<const int64_t*>(target));
    }
  });
}

void launch_nll_backward(int kind, bool target_u8, const void* target, const NllGeometry& g,
                         const void* weight, int64_t ignore_index, bool mean, bool unreduced,
                         const void* grad_output, const void* total_weight, void* grad_input,
                         int64_t* bad, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto* t) {
      nll_backward_kernel<<<dev::blocks_for(g.n * g.h * g.w), kThreads, 0, stream>>>(
          t, g, static_cast<const T*>(weight), ignore_index, mean, unreduced,
          static_cast<const T*>(grad_output), static_cast<const T*>(total_weight),
          static_cast<T*>(grad_input), bad);
    };
    if (target_u8) {
      run(static_cast<const uint8_t*>(target));
    } else {
      run(static_cast<const int64_t*>(target));
    }
  });
}

int64_t loss_partials(int64_t n) {
  const int64_t per_block = int64_t{kThreads} * 8;
  const int64_t b = (n + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > 1024 ? 1024 : b);
}

void launch_pointwise_loss(int kind, PointwiseLoss loss, const void* x, const void* y,
                           const void* w, const void* pw, double param, int64_t n, bool reduce,
                           bool mean, void* out, double* partials, int64_t* flags,
                           cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x);
    const T* yp = static_cast<const T*>(y);
    const T* wp = static_cast<const T*>(w);
    const T* pp = static_cast<const T*>(pw);
    if (!reduce) {
      if (n > 0) {
        loss_unreduced_kernel<<<dev::blocks_for(n), kThreads, 0, stream>>>(
            loss, xp, yp, wp, pp, param, n, static_cast<T*>(out), flags);
      }
      return;
    }
    const int64_t blocks = loss_partials(n);
    loss_partial_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        loss, xp, yp, wp, pp, param, n, partials, flags);
    loss_finish_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, n, mean, static_cast<T*>(out));
  });
}

void launch_pointwise_loss_backward(int kind, PointwiseLoss loss, const void* g, bool g_scalar,
                                    const void* x, const void* y, const void* w, double param,
                                    int64_t n, double norm, void* grad_input, cudaStream_t stream) {
  if (n == 0) return;
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    loss_backward_kernel<<<dev::blocks_for(n), kThreads, 0, stream>>>(
        loss, static_cast<const T*>(g), g_scalar, static_cast<const T*>(x),
        static_cast<const T*>(y), static_cast<const T*>(w), param, n, norm,
        static_cast<T*>(grad_input));
  });
}

}  // namespace loom::cuda::libs
