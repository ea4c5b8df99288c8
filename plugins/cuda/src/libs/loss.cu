// Own kernels of the nll and mse losses, forward and backward (libs/kernels.h). Reductions
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

template <typename T>
__global__ void mse_unreduced_kernel(const T* x, const T* y, int64_t n, T* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    using A = dev::acc_t<T>;
    const A d = static_cast<A>(x[i]) - static_cast<A>(y[i]);
    dev::store(out + i, d * d);
  }
}

template <typename T>
__global__ void mse_partial_kernel(const T* x, const T* y, int64_t n, double* partials) {
  __shared__ double shared[kThreads];
  double s = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const double d = ld(x + i) - ld(y + i);
    s += d * d;
  }
  s = dev::block_sum(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <typename T>
__global__ void mse_finish_kernel(const double* partials, int64_t count, int64_t n, bool mean,
                                  T* out) {
  __shared__ double shared[kThreads];
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = dev::block_sum(s, shared);
  if (threadIdx.x == 0) dev::store(out, mean ? s / static_cast<double>(n) : s);
}

template <typename T>
__global__ void mse_backward_kernel(const T* g, bool g_scalar, const T* x, const T* y, int64_t n,
                                    double norm, T* gi) {
  using A = dev::acc_t<T>;
  const A k = static_cast<A>(2 * norm);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const A gv = static_cast<A>(g_scalar ? g[0] : g[i]);
    dev::store(gi + i, k * (static_cast<A>(x[i]) - static_cast<A>(y[i])) * gv);
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

int64_t mse_partials(int64_t n) {
  const int64_t per_block = int64_t{kThreads} * 8;
  const int64_t b = (n + per_block - 1) / per_block;
  return b < 1 ? 1 : (b > 1024 ? 1024 : b);
}

void launch_mse_forward(int kind, const void* x, const void* y, int64_t n, bool reduce, bool mean,
                        void* out, double* partials, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x);
    const T* yp = static_cast<const T*>(y);
    if (!reduce) {
      if (n > 0) {
        mse_unreduced_kernel<<<dev::blocks_for(n), kThreads, 0, stream>>>(xp, yp, n,
                                                                          static_cast<T*>(out));
      }
      return;
    }
    const int64_t blocks = mse_partials(n);
    mse_partial_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(xp, yp, n, partials);
    mse_finish_kernel<<<1, kThreads, 0, stream>>>(partials, blocks, n, mean, static_cast<T*>(out));
  });
}

void launch_mse_backward(int kind, const void* g, bool g_scalar, const void* x, const void* y,
                         int64_t n, double norm, void* grad_input, cudaStream_t stream) {
  if (n == 0) return;
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    mse_backward_kernel<<<dev::blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(g), g_scalar, static_cast<const T*>(x), static_cast<const T*>(y), n,
        norm, static_cast<T*>(grad_input));
  });
}

}  // namespace loom::cuda::libs
