// Own kernels of batch norm, layer norm and group norm, forward and backward (libs/kernels.h). Every
// statistic is summed in double by one block (per channel or per row) in a fixed order, the
// parameter gradients of layer norm by one thread per column: no atomics, deterministic.
// The variance is two-pass (mean first, then squared deviations), as the reference's.
#include "libs/device_utils.cuh"
#include "libs/kernels.h"

namespace loom::cuda::libs {
namespace {

using dev::kThreads;

template <typename T>
__device__ __forceinline__ double ld(const T* p) {
  return static_cast<double>(static_cast<dev::acc_t<T>>(*p));
}

/// invstd of channel c: save_invstd[c], or 1 / sqrt(var[c] + eps).
template <typename T>
__device__ __forceinline__ double invstd_of(const T* scale, int64_t c, bool is_var, double eps) {
  const double v = ld(scale + c);
  return is_var ? 1.0 / sqrt(v + eps) : v;
}

template <typename T>
__global__ void bn_stats_kernel(const T* x, int64_t N, int64_t C, int64_t S, double eps,
                                double momentum, T* save_mean, T* save_invstd, T* running_mean,
                                T* running_var) {
  __shared__ double shared[kThreads];
  const int64_t count = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      s += ld(x + ((k / S) * C + c) * S + k % S);
    }
    const double mean = dev::block_sum(s, shared) / static_cast<double>(count);
    double ss = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const double d = ld(x + ((k / S) * C + c) * S + k % S) - mean;
      ss += d * d;
    }
    ss = dev::block_sum(ss, shared);
    if (threadIdx.x == 0) {
      dev::store(save_mean + c, mean);
      dev::store(save_invstd + c, 1.0 / sqrt(ss / static_cast<double>(count) + eps));
      if (running_mean != nullptr) {
        dev::store(running_mean + c, momentum * mean + (1 - momentum) * ld(running_mean + c));
      }
      if (running_var != nullptr) {
        // The running variance is the unbiased one (count - 1), as PyTorch's.
        const double unbiased = ss / static_cast<double>(count - 1);
        dev::store(running_var + c, momentum * unbiased + (1 - momentum) * ld(running_var + c));
      }
    }
  }
}

template <typename T>
__global__ void bn_apply_kernel(const T* x, int64_t N, int64_t C, int64_t S, const T* mean,
                                const T* scale, bool is_var, double eps, const T* weight,
                                const T* bias, T* y) {
  using A = dev::acc_t<T>;
  const int64_t total = N * C * S;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / S) % C;
    const double inv = invstd_of(scale, c, is_var, eps);
    const double w = weight != nullptr ? ld(weight + c) : 1.0;
    const double b = bias != nullptr ? ld(bias + c) : 0.0;
    const A alpha = static_cast<A>(inv * w);
    const A beta = static_cast<A>(b - ld(mean + c) * inv * w);
    dev::store(y + i, static_cast<A>(x[i]) * alpha + beta);
  }
}

template <typename T>
__global__ void bn_backward_reduce_kernel(const T* g, const T* x, int64_t N, int64_t C, int64_t S,
                                          const T* mean, const T* scale, bool is_var, double eps,
                                          double* sum_g, double* dotp, T* grad_weight,
                                          T* grad_bias) {
  __shared__ double shared[kThreads];
  const int64_t count = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const double m = ld(mean + c);
    double sg = 0, dp = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const int64_t i = ((k / S) * C + c) * S + k % S;
      const double gv = ld(g + i);
      sg += gv;
      dp += (ld(x + i) - m) * gv;
    }
    sg = dev::block_sum(sg, shared);
    dp = dev::block_sum(dp, shared);
    if (threadIdx.x == 0) {
      sum_g[c] = sg;
      dotp[c] = dp;
      if (grad_weight != nullptr) dev::store(grad_weight + c, dp * invstd_of(scale, c, is_var, eps));
      if (grad_bias != nullptr) dev::store(grad_bias + c, sg);
    }
  }
}

template <typename T>
__global__ void bn_backward_input_kernel(const T* g, const T* x, int64_t N, int64_t C, int64_t S,
                                         const T* mean, const T* scale, bool is_var, double eps,
                                         const T* weight, const double* sum_g, const double* dotp,
                                         bool train, T* gi) {
  const int64_t total = N * C * S;
  const double count = static_cast<double>(N * S);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / S) % C;
    const double inv = invstd_of(scale, c, is_var, eps);
    const double w = weight != nullptr ? ld(weight + c) : 1.0;
    if (train) {
      const double k = dotp[c] * inv * inv / count;
      const double gm = sum_g[c] / count;
      const double xm = ld(x + i) - ld(mean + c);
      dev::store(gi + i, (ld(g + i) - xm * k - gm) * inv * w);
    } else {
      dev::store(gi + i, ld(g + i) * inv * w);
    }
  }
}

template <typename T>
__global__ void ln_kernel(const T* x, int64_t M, int64_t K, double eps, const T* weight,
                          const T* bias, T* y, T* mean_out, T* rstd_out) {
  __shared__ double shared[kThreads];
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const T* row = x + r * K;
    double s = 0;
    for (int64_t j = threadIdx.x; j < K; j += blockDim.x) s += ld(row + j);
    const double mean = K > 0 ? dev::block_sum(s, shared) / static_cast<double>(K) : 0.0;
    double ss = 0;
    for (int64_t j = threadIdx.x; j < K; j += blockDim.x) {
      const double d = ld(row + j) - mean;
      ss += d * d;
    }
    ss = dev::block_sum(ss, shared);
    const double rstd = 1.0 / sqrt((K > 0 ? ss / static_cast<double>(K) : 0.0) + eps);
    for (int64_t j = threadIdx.x; j < K; j += blockDim.x) {
      const double w = weight != nullptr ? ld(weight + j) : 1.0;
      const double b = bias != nullptr ? ld(bias + j) : 0.0;
      dev::store(y + r * K + j, (ld(row + j) - mean) * rstd * w + b);
    }
    if (threadIdx.x == 0) {
      dev::store(mean_out + r, mean);
      dev::store(rstd_out + r, rstd);
    }
  }
}

template <typename T>
__global__ void ln_backward_input_kernel(const T* g, const T* x, int64_t M, int64_t K,
                                         const T* mean, const T* rstd, const T* weight, T* gi) {
  __shared__ double shared[kThreads];
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const T* xr = x + r * K;
    const T* gr = g + r * K;
    const double m = ld(mean + r), rs = ld(rstd + r);
    double a = 0, c = 0;
    for (int64_t j = threadIdx.x; j < K; j += blockDim.x) {
      const double gw = ld(gr + j) * (weight != nullptr ? ld(weight + j) : 1.0);
      a += gw;
      c += gw * (ld(xr + j) - m) * rs;
    }
    a = dev::block_sum(a, shared) / static_cast<double>(K);
    c = dev::block_sum(c, shared) / static_cast<double>(K);
    for (int64_t j = threadIdx.x; j < K; j += blockDim.x) {
      const double xhat = (ld(xr + j) - m) * rs;
      const double gw = ld(gr + j) * (weight != nullptr ? ld(weight + j) : 1.0);
      dev::store(gi + r * K + j, rs * (gw - a - xhat * c));
    }
  }
}

template <typename T>
__global__ void ln_backward_params_kernel(const T* g, const T* x, int64_t M, int64_t K,
                                          const T* mean, const T* rstd, T* grad_weight,
                                          T* grad_bias) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < K;
       j += int64_t(gridDim.x) * blockDim.x) {
    double aw = 0, ab = 0;
    for (int64_t r = 0; r < M; ++r) {
      const double gv = ld(g + r * K + j);
      aw += gv * (ld(x + r * K + j) - ld(mean + r)) * ld(rstd + r);
      ab += gv;
    }
    if (grad_weight != nullptr) dev::store(grad_weight + j, aw);
    if (grad_bias != nullptr) dev::store(grad_bias + j, ab);
  }
}

template <typename T>
__global__ void gn_kernel(const T* x, int64_t N, int64_t C, int64_t HxW, int64_t G, double eps,
                          const T* weight, const T* bias, T* y, T* mean_out, T* rstd_out) {
  __shared__ double shared[kThreads];
  const int64_t D = C / G, block = D * HxW;
  for (int64_t ng = blockIdx.x; ng < N * G; ng += gridDim.x) {
    const T* blk = x + ng * block;
    double s = 0;
    for (int64_t k = threadIdx.x; k < block; k += blockDim.x) s += ld(blk + k);
    const double mean = block > 0 ? dev::block_sum(s, shared) / static_cast<double>(block) : 0.0;
    double ss = 0;
    for (int64_t k = threadIdx.x; k < block; k += blockDim.x) {
      const double d = ld(blk + k) - mean;
      ss += d * d;
    }
    ss = dev::block_sum(ss, shared);
    const double rstd = 1.0 / sqrt((block > 0 ? ss / static_cast<double>(block) : 0.0) + eps);
    const int64_t c0 = (ng % G) * D;
    for (int64_t k = threadIdx.x; k < block; k += blockDim.x) {
      const int64_t c = c0 + k / HxW;
      const double w = weight != nullptr ? ld(weight + c) : 1.0;
      const double b = bias != nullptr ? ld(bias + c) : 0.0;
      dev::store(y + ng * block + k, (ld(blk + k) - mean) * rstd * w + b);
    }
    if (threadIdx.x == 0) {
      dev::store(mean_out + ng, mean);
      dev::store(rstd_out + ng, rstd);
    }
  }
}

template <typename T>
__global__ void gn_backward_input_kernel(const T* g, const T* x, int64_t N, int64_t C,
                                         int64_t HxW, int64_t G, const T* mean, const T* rstd,
                                         const T* weight, T* gi) {
  __shared__ double shared[kThreads];
  const int64_t D = C / G, block = D * HxW;
  for (int64_t ng = blockIdx.x; ng < N * G; ng += gridDim.x) {
    const int64_t c0 = (ng % G) * D, base = ng * block;
    const double m = ld(mean + ng), r = ld(rstd + ng);
    double a = 0, c = 0;
    for (int64_t k = threadIdx.x; k < block; k += blockDim.x) {
      const double w = weight != nullptr ? ld(weight + c0 + k / HxW) : 1.0;
      const double gw = ld(g + base + k) * w;
      a += gw;
      c += gw * (ld(x + base + k) - m) * r;
    }
    a = dev::block_sum(a, shared) / static_cast<double>(block);
    c = dev::block_sum(c, shared) / static_cast<double>(block);
    for (int64_t k = threadIdx.x; k < block; k += blockDim.x) {
      const double w = weight != nullptr ? ld(weight + c0 + k / HxW) : 1.0;
      const double xhat = (ld(x + base + k) - m) * r;
      dev::store(gi + base + k, r * (ld(g + base + k) * w - a - xhat * c));
    }
  }
}

template <typename T>
__global__ void gn_backward_params_kernel(const T* g, const T* x, int64_t N, int64_t C,
                                          int64_t HxW, int64_t G, const T* mean, const T* rstd,
                                          T* grad_weight, T* grad_bias) {
  __shared__ double shared[kThreads];
  const int64_t D = C / G, count = N * HxW;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double aw = 0, ab = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const int64_t n = k / HxW, i = (n * C + c) * HxW + k % HxW, ng = n * G + c / D;
      const double gv = ld(g + i);
      aw += gv * (ld(x + i) - ld(mean + ng)) * ld(rstd + ng);
      ab += gv;
    }
    aw = dev::block_sum(aw, shared);
    ab = dev::block_sum(ab, shared);
    if (threadIdx.x == 0) {
      if (grad_weight != nullptr) dev::store(grad_weight + c, aw);
      if (grad_bias != nullptr) dev::store(grad_bias + c, ab);
    }
  }
}

unsigned per_block(int64_t n) {
  return static_cast<unsigned>(n < 1 ? 1 : (n > 65535 * 8 ? 65535 * 8 : n));
}

}  // namespace

void launch_batch_norm_stats(int kind, const void* x, int64_t N, int64_t C, int64_t S, double eps,
                             double momentum, void* save_mean, void* save_invstd,
                             void* running_mean, void* running_var, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    bn_stats_kernel<T><<<per_block(C), kThreads, 0, stream>>>(
        static_cast<const T*>(x), N, C, S, eps, momentum, static_cast<T*>(save_mean),
        static_cast<T*>(save_invstd), static_cast<T*>(running_mean), static_cast<T*>(running_var));
  });
}

void launch_batch_norm_apply(int kind, const void* x, int64_t N, int64_t C, int64_t S,
                             const void* mean, const void* scale, bool is_var, double eps,
                             const void* weight, const void* bias, void* y, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    bn_apply_kernel<T><<<dev::blocks_for(N * C * S), kThreads, 0, stream>>>(
        static_cast<const T*>(x), N, C, S, static_cast<const T*>(mean),
        static_cast<const T*>(scale), is_var, eps, static_cast<const T*>(weight),
        static_cast<const T*>(bias), static_cast<T*>(y));
  });
}

void launch_batch_norm_backward_reduce(int kind, const void* g, const void* x, int64_t N, int64_t C,
                                       int64_t S, const void* mean, const void* scale, bool is_var,
                                       double eps, double* sum_g, double* dotp, void* grad_weight,
                                       void* grad_bias, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    bn_backward_reduce_kernel<T><<<per_block(C), kThreads, 0, stream>>>(
        static_cast<const T*>(g), static_cast<const T*>(x), N, C, S, static_cast<const T*>(mean),
        static_cast<const T*>(scale), is_var, eps, sum_g, dotp, static_cast<T*>(grad_weight),
        static_cast<T*>(grad_bias));
  });
}

void launch_batch_norm_backward_input(int kind, const void* g, const void* x, int64_t N,
                                      int64_t C, int64_t S, const void* mean, const void* scale,
                                      bool is_var, double eps, const void* weight,
                                      const double* sum_g, const double* dotp, bool train,
                                      void* grad_input, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    bn_backward_input_kernel<T><<<dev::blocks_for(N * C * S), kThreads, 0, stream>>>(
        static_cast<const T*>(g), static_cast<const T*>(x), N, C, S, static_cast<const T*>(mean),
        static_cast<const T*>(scale), is_var, eps, static_cast<const T*>(weight), sum_g, dotp,
        train, static_cast<T*>(grad_input));
  });
}

void launch_layer_norm(int kind, const void* x, int64_t M, int64_t K, double eps,
                       const void* weight, const void* bias, void* y, void* mean, void* rstd,
                       cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    ln_kernel<T><<<per_block(M), kThreads, 0, stream>>>(
        static_cast<const T*>(x), M, K, eps, static_cast<const T*>(weight),
        static_cast<const T*>(bias), static_cast<T*>(y), static_cast<T*>(mean),
        static_cast<T*>(rstd));
  });
}

void launch_layer_norm_backward(int kind, const void* g, const void* x, int64_t M, int64_t K,
                                const void* mean, const void* rstd, const void* weight,
                                void* grad_input, void* grad_weight, void* grad_bias,
                                cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = static_cast<const T*>(g);
    const T* xp = static_cast<const T*>(x);
    const T* mp = static_cast<const T*>(mean);
    const T* rp = static_cast<const T*>(rstd);
    if (grad_input != nullptr && M > 0 && K > 0) {
      ln_backward_input_kernel<T><<<per_block(M), kThreads, 0, stream>>>(
          gp, xp, M, K, mp, rp, static_cast<const T*>(weight), static_cast<T*>(grad_input));
    }
    if ((grad_weight != nullptr || grad_bias != nullptr) && K > 0) {
      ln_backward_params_kernel<T><<<dev::blocks_for(K), kThreads, 0, stream>>>(
          gp, xp, M, K, mp, rp, static_cast<T*>(grad_weight), static_cast<T*>(grad_bias));
    }
  });
}

void launch_group_norm(int kind, const void* x, int64_t N, int64_t C, int64_t HxW, int64_t G,
                       double eps, const void* weight, const void* bias, void* y, void* mean,
                       void* rstd, cudaStream_t stream) {
  if (N * G == 0) return;
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    gn_kernel<T><<<per_block(N * G), kThreads, 0, stream>>>(
        static_cast<const T*>(x), N, C, HxW, G, eps, static_cast<const T*>(weight),
        static_cast<const T*>(bias), static_cast<T*>(y), static_cast<T*>(mean),
        static_cast<T*>(rstd));
  });
}

void launch_group_norm_backward(int kind, const void* g, const void* x, int64_t N, int64_t C,
                                int64_t HxW, int64_t G, const void* mean, const void* rstd,
                                const void* weight, void* grad_input, void* grad_weight,
                                void* grad_bias, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = static_cast<const T*>(g);
    const T* xp = static_cast<const T*>(x);
    const T* mp = static_cast<const T*>(mean);
    const T* rp = static_cast<const T*>(rstd);
    if (grad_input != nullptr && N * C * HxW > 0) {
      gn_backward_input_kernel<T><<<per_block(N * G), kThreads, 0, stream>>>(
          gp, xp, N, C, HxW, G, mp, rp, static_cast<const T*>(weight), static_cast<T*>(grad_input));
    }
    if ((grad_weight != nullptr || grad_bias != nullptr) && C > 0) {
      gn_backward_params_kernel<T><<<per_block(C), kThreads, 0, stream>>>(
          gp, xp, N, C, HxW, G, mp, rp, static_cast<T*>(grad_weight), static_cast<T*>(grad_bias));
    }
  });
}

}  // namespace loom::cuda::libs
