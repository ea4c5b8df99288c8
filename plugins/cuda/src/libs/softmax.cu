// Own kernels of softmax and log-softmax, forward and backward (libs/kernels.h), over the
// middle dim of a contiguous [outer, len, inner] tensor. inner == 1 (the last dim): one block
// per line, its threads striding over the line and combining with fixed-order block
// reductions. inner > 1: one thread per line (neighbouring threads read neighbouring
// elements). Each line subtracts its max before exp; a NaN in a line makes the line NaN.
// float16, bfloat16 and float compute in float, double in double.
#include "libs/device_utils.cuh"
#include "libs/kernels.h"

namespace loom::cuda::libs {
namespace {

using dev::acc_t;
using dev::kThreads;

template <typename A>
__device__ __forceinline__ A exp_of(A v) {
  return exp(v);
}
template <>
__device__ __forceinline__ float exp_of<float>(float v) {
  return expf(v);
}
template <typename A>
__device__ __forceinline__ A log_of(A v) {
  return log(v);
}
template <>
__device__ __forceinline__ float log_of<float>(float v) {
  return logf(v);
}

template <typename A>
__device__ __forceinline__ A max_of(A m, A v) {
  return (v > m || v != v) ? v : m;
}

/// One block per line of a [rows, len] tensor.
template <typename Ti, typename To, bool kLog>
__global__ void softmax_rows(const Ti* in, To* out, int64_t rows, int64_t len) {
  using A = acc_t<To>;
  __shared__ A shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Ti* x = in + r * len;
    To* y = out + r * len;
    A m = -INFINITY;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) m = max_of(m, static_cast<A>(x[i]));
    m = dev::block_max(m, shared);
    A s = 0;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) s += exp_of(static_cast<A>(x[i]) - m);
    s = dev::block_sum(s, shared);
    if (kLog) {
      const A ls = log_of(s);
      for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
        dev::store(y + i, static_cast<A>(x[i]) - m - ls);
      }
    } else {
      const A inv = A(1) / s;
      for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
        dev::store(y + i, exp_of(static_cast<A>(x[i]) - m) * inv);
      }
    }
  }
}

/// One thread per line (o, j) of [outer, len, inner], elements inner apart.
template <typename Ti, typename To, bool kLog>
__global__ void softmax_columns(const Ti* in, To* out, int64_t outer, int64_t len, int64_t inner) {
  using A = acc_t<To>;
  const int64_t lines = outer * inner;
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = l / inner, j = l % inner;
    const Ti* x = in + o * len * inner + j;
    To* y = out + o * len * inner + j;
    A m = -INFINITY;
    for (int64_t i = 0; i < len; ++i) m = max_of(m, static_cast<A>(x[i * inner]));
    A s = 0;
    for (int64_t i = 0; i < len; ++i) s += exp_of(static_cast<A>(x[i * inner]) - m);
    if (kLog) {
      const A ls = log_of(s);
      for (int64_t i = 0; i < len; ++i) dev::store(y + i * inner, static_cast<A>(x[i * inner]) - m - ls);
    } else {
      const A inv = A(1) / s;
      for (int64_t i = 0; i < len; ++i) {
        dev::store(y + i * inner, exp_of(static_cast<A>(x[i * inner]) - m) * inv);
      }
    }
  }
}

template <typename T, bool kLog>
__global__ void softmax_backward_rows(const T* grad, const T* output, T* gi, int64_t rows,
                                      int64_t len) {
  using A = acc_t<T>;
  __shared__ A shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* g = grad + r * len;
    const T* y = output + r * len;
    T* o = gi + r * len;
    A s = 0;
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
      s += kLog ? static_cast<A>(g[i]) : static_cast<A>(g[i]) * static_cast<A>(y[i]);
    }
    s = dev::block_sum(s, shared);
    for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
      const A gv = static_cast<A>(g[i]), yv = static_cast<A>(y[i]);
      dev::store(o + i, kLog ? gv - exp_of(yv) * s : yv * (gv - s));
    }
  }
}

template <typename T, bool kLog>
__global__ void softmax_backward_columns(const T* grad, const T* output, T* gi, int64_t outer,
                                         int64_t len, int64_t inner) {
  using A = acc_t<T>;
  const int64_t lines = outer * inner;
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (l / inner) * len * inner + l % inner;
    const T* g = grad + base;
    const T* y = output + base;
    T* o = gi + base;
    A s = 0;
    for (int64_t i = 0; i < len; ++i) {
      s += kLog ? static_cast<A>(g[i * inner])
                : static_cast<A>(g[i * inner]) * static_cast<A>(y[i * inner]);
    }
    for (int64_t i = 0; i < len; ++i) {
      const A gv = static_cast<A>(g[i * inner]), yv = static_cast<A>(y[i * inner]);
      dev::store(o + i * inner, kLog ? gv - exp_of(yv) * s : yv * (gv - s));
    }
  }
}

unsigned row_blocks(int64_t rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > 65535 * 8 ? 65535 * 8 : rows));
}

template <typename Ti, typename To>
void forward(bool log, const void* in, void* out, int64_t outer, int64_t len, int64_t inner,
             cudaStream_t stream) {
  const Ti* x = static_cast<const Ti*>(in);
  To* y = static_cast<To*>(out);
  if (inner == 1) {
    if (log) {
      softmax_rows<Ti, To, true><<<row_blocks(outer), kThreads, 0, stream>>>(x, y, outer, len);
    } else {
      softmax_rows<Ti, To, false><<<row_blocks(outer), kThreads, 0, stream>>>(x, y, outer, len);
    }
  } else {
    const unsigned b = dev::blocks_for(outer * inner);
    if (log) {
      softmax_columns<Ti, To, true><<<b, kThreads, 0, stream>>>(x, y, outer, len, inner);
    } else {
      softmax_columns<Ti, To, false><<<b, kThreads, 0, stream>>>(x, y, outer, len, inner);
    }
  }
}

}  // namespace

void launch_softmax(int in_kind, int out_kind, bool log, const void* in, void* out, int64_t outer,
                    int64_t len, int64_t inner, cudaStream_t stream) {
  if (in_kind == 2 && out_kind == 0) {
    forward<__half, float>(log, in, out, outer, len, inner, stream);
    return;
  }
  dev::dispatch_kind(in_kind, [&](auto tag) {
    using T = decltype(tag);
    forward<T, T>(log, in, out, outer, len, inner, stream);
  });
}

void launch_softmax_backward(int kind, bool log, const void* grad, const void* output,
                             void* grad_input, int64_t outer, int64_t len, int64_t inner,
                             cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    const T* g = static_cast<const T*>(grad);
    const T* y = static_cast<const T*>(output);
    T* o = static_cast<T*>(grad_input);
    if (inner == 1) {
      if (log) {
        softmax_backward_rows<T, true><<<row_blocks(outer), kThreads, 0, stream>>>(g, y, o, outer, len);
      } else {
        softmax_backward_rows<T, false><<<row_blocks(outer), kThreads, 0, stream>>>(g, y, o, outer, len);
      }
    } else {
      const unsigned b = dev::blocks_for(outer * inner);
      if (log) {
        softmax_backward_columns<T, true><<<b, kThreads, 0, stream>>>(g, y, o, outer, len, inner);
      } else {
        softmax_backward_columns<T, false><<<b, kThreads, 0, stream>>>(g, y, o, outer, len, inner);
      }
    }
  });
}

}  // namespace loom::cuda::libs
