// Own kernels of the 2-d pooling ops (libs/kernels.h): max pooling with indices, average
// pooling, adaptive average and adaptive max pooling, forward and backward. Geometry and index encoding
// follow the reference CPU kernels (ops/nn/cpu/pooling.cpp): an index is h * W + w within
// its plane, windows start at o * stride - padding, NaN wins a maximum. The backward kernels
// run one thread per input element and sum, in a fixed order, the gradients of the windows
// that cover it (no atomics: deterministic).
#include "libs/device_utils.cuh"
#include "libs/kernels.h"

namespace loom::cuda::libs {
namespace {

using dev::acc_t;
using dev::blocks_for;
using dev::kThreads;

__device__ __forceinline__ int64_t plane_offset(const PoolGeometry& g, int64_t p) {
  return (p / g.C) * g.sn + (p % g.C) * g.sc;
}

template <typename A>
__device__ __forceinline__ bool is_nan(A v) {
  return v != v;
}

template <typename T>
__global__ void max_pool_kernel(const T* in, PoolGeometry g, T* out, int64_t* idx) {
  using A = acc_t<T>;
  const int64_t total = g.planes * g.oH * g.oW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.oW, oh = (i / g.oW) % g.oH, p = i / (g.oW * g.oH);
    const T* plane = in + plane_offset(g, p);
    int64_t h0 = oh * g.sH - g.pH;
    const int64_t h1 = min(h0 + (g.kH - 1) * g.dH + 1, g.H);
    while (h0 < 0) h0 += g.dH;
    int64_t w0 = ow * g.sW - g.pW;
    const int64_t w1 = min(w0 + (g.kW - 1) * g.dW + 1, g.W);
    while (w0 < 0) w0 += g.dW;
    int64_t best = h0 * g.W + w0;
    A m = -INFINITY;
    for (int64_t h = h0; h < h1; h += g.dH) {
      for (int64_t w = w0; w < w1; w += g.dW) {
        const A v = static_cast<A>(plane[h * g.sh + w * g.sw]);
        if (v > m || is_nan(v)) {
          m = v;
          best = h * g.W + w;
        }
      }
    }
    dev::store(out + i, m);
    if (idx != nullptr) idx[i] = best;
  }
}

template <typename T>
__global__ void max_pool_backward_kernel(const T* go, const int64_t* idx, PoolGeometry g, T* gi) {
  using A = acc_t<T>;
  const int64_t total = g.planes * g.H * g.W;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H);
    const int64_t target = h * g.W + w;
    // The windows that may hold (h, w): o * s - p <= h <= o * s - p + (k - 1) * d.
    const int64_t span_h = (g.kH - 1) * g.dH, span_w = (g.kW - 1) * g.dW;
    int64_t oh0 = h + g.pH - span_h;
    oh0 = oh0 <= 0 ? 0 : (oh0 + g.sH - 1) / g.sH;
    const int64_t oh1 = min((h + g.pH) / g.sH + 1, g.oH);
    int64_t ow0 = w + g.pW - span_w;
    ow0 = ow0 <= 0 ? 0 : (ow0 + g.sW - 1) / g.sW;
    const int64_t ow1 = min((w + g.pW) / g.sW + 1, g.oW);
    const int64_t base = p * g.oH * g.oW;
    A sum = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t o = base + oh * g.oW + ow;
        if (idx[o] == target) sum += static_cast<A>(go[o]);
      }
    }
    dev::store(gi + i, sum);
  }
}

/// The window of average-pooling output (oh, ow), clipped, and its divisor (the reference's
/// avg_window).
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

__device__ __forceinline__ AvgWindow avg_window(const PoolGeometry& g, int64_t oh, int64_t ow,
                                                bool count_include_pad, int64_t divisor_override) {
  int64_t h0 = oh * g.sH - g.pH, w0 = ow * g.sW - g.pW;
  int64_t h1 = min(h0 + g.kH, g.H + g.pH), w1 = min(w0 + g.kW, g.W + g.pW);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = max(h0, int64_t(0));
  w0 = max(w0, int64_t(0));
  h1 = min(h1, g.H);
  w1 = min(w1, g.W);
  const int64_t divisor = divisor_override != 0 ? divisor_override
                          : count_include_pad   ? pool_size
                                                : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

template <typename T>
__global__ void avg_pool_kernel(const T* in, PoolGeometry g, bool cip, int64_t div, T* out) {
  using A = acc_t<T>;
  const int64_t total = g.planes * g.oH * g.oW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.oW, oh = (i / g.oW) % g.oH, p = i / (g.oW * g.oH);
    const AvgWindow win = avg_window(g, oh, ow, cip, div);
    if (win.h0 >= win.h1 || win.w0 >= win.w1) {
      dev::store(out + i, A(0));
      continue;
    }
    const T* plane = in + plane_offset(g, p);
    A sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) sum += static_cast<A>(plane[h * g.sh + w * g.sw]);
    dev::store(out + i, sum / static_cast<A>(win.divisor));
  }
}

template <typename T>
__global__ void avg_pool_backward_kernel(const T* go, PoolGeometry g, bool cip, int64_t div,
                                         T* gi) {
  using A = acc_t<T>;
  const int64_t total = g.planes * g.H * g.W;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H);
    // Windows o with o * s - p <= h < o * s - p + k.
    int64_t oh0 = h + g.pH - g.kH + 1;
    oh0 = oh0 <= 0 ? 0 : (oh0 + g.sH - 1) / g.sH;
    const int64_t oh1 = min((h + g.pH) / g.sH + 1, g.oH);
    int64_t ow0 = w + g.pW - g.kW + 1;
    ow0 = ow0 <= 0 ? 0 : (ow0 + g.sW - 1) / g.sW;
    const int64_t ow1 = min((w + g.pW) / g.sW + 1, g.oW);
    const int64_t base = p * g.oH * g.oW;
    A sum = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const AvgWindow win = avg_window(g, oh, ow, cip, div);
        if (h < win.h0 || h >= win.h1 || w < win.w0 || w >= win.w1) continue;
        sum += static_cast<A>(go[base + oh * g.oW + ow]) / static_cast<A>(win.divisor);
      }
    }
    dev::store(gi + i, sum);
  }
}

__device__ __forceinline__ int64_t start_index(int64_t a, int64_t b, int64_t c) {
  return (a / b) * c + ((a % b) * c) / b;
}
__device__ __forceinline__ int64_t end_index(int64_t a, int64_t b, int64_t c) {
  return 1 + ((a + 1) * c - 1) / b;
}

template <typename T>
__global__ void adaptive_avg_kernel(const T* in, PoolGeometry g, T* out) {
  using A = acc_t<T>;
  const int64_t total = g.planes * g.oH * g.oW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.oW, oh = (i / g.oW) % g.oH, p = i / (g.oW * g.oH);
    const int64_t h0 = start_index(oh, g.oH, g.H), h1 = end_index(oh, g.oH, g.H);
    const int64_t w0 = start_index(ow, g.oW, g.W), w1 = end_index(ow, g.oW, g.W);
    const T* plane = in + plane_offset(g, p);
    A sum = 0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = w0; w < w1; ++w) sum += static_cast<A>(plane[h * g.sh + w * g.sw]);
    dev::store(out + i, sum / static_cast<A>(h1 - h0) / static_cast<A>(w1 - w0));
  }
}

template <typename T>
__global__ void adaptive_avg_backward_kernel(const T* go, PoolGeometry g, T* gi) {
  using A = acc_t<T>;
  const int64_t total = g.planes * g.H * g.W;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H);
    // Bins are monotonic: those holding h lie between the bins of start_index(h) and end.
    const int64_t oh0 = start_index(h, g.H, g.oH), oh1 = end_index(h, g.H, g.oH);
    const int64_t ow0 = start_index(w, g.W, g.oW), ow1 = end_index(w, g.W, g.oW);
    const int64_t base = p * g.oH * g.oW;
    A sum = 0;
    for (int64_t oh = max(oh0 - 1, int64_t(0)); oh < min(oh1 + 1, g.oH); ++oh) {
      const int64_t h0 = start_index(oh, g.oH, g.H), h1 = end_index(oh, g.oH, g.H);
      if (h < h0 || h >= h1) continue;
      for (int64_t ow = max(ow0 - 1, int64_t(0)); ow < min(ow1 + 1, g.oW); ++ow) {
        const int64_t w0 = start_index(ow, g.oW, g.W), w1 = end_index(ow, g.oW, g.W);
        if (w < w0 || w >= w1) continue;
        sum += static_cast<A>(go[base + oh * g.oW + ow]) / static_cast<A>(h1 - h0) /
               static_cast<A>(w1 - w0);
      }
    }
    dev::store(gi + i, sum);
  }
}

template <typename T>
__global__ void adaptive_max_kernel(const T* in, PoolGeometry g, T* out, int64_t* idx) {
  using A = acc_t<T>;
  const int64_t total = g.planes * g.oH * g.oW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = i % g.oW, oh = (i / g.oW) % g.oH, p = i / (g.oW * g.oH);
    const int64_t h0 = start_index(oh, g.oH, g.H), h1 = end_index(oh, g.oH, g.H);
    const int64_t w0 = start_index(ow, g.oW, g.W), w1 = end_index(ow, g.oW, g.W);
    const T* plane = in + plane_offset(g, p);
    int64_t best = h0 * g.W + w0;
    A m = -INFINITY;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) {
        const A v = static_cast<A>(plane[h * g.sh + w * g.sw]);
        if (v > m || is_nan(v)) {
          m = v;
          best = h * g.W + w;
        }
      }
    }
    dev::store(out + i, m);
    idx[i] = best;
  }
}

template <typename T>
__global__ void adaptive_max_backward_kernel(const T* go, const int64_t* idx, PoolGeometry g,
                                             T* gi) {
  using A = acc_t<T>;
  const int64_t total = g.planes * g.H * g.W;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, p = i / (g.W * g.H);
    const int64_t target = h * g.W + w;
    // The bins that may hold (h, w), with a margin of one (membership is by index).
    const int64_t oh0 = max(start_index(h, g.H, g.oH) - 1, int64_t(0));
    const int64_t oh1 = min(end_index(h, g.H, g.oH) + 1, g.oH);
    const int64_t ow0 = max(start_index(w, g.W, g.oW) - 1, int64_t(0));
    const int64_t ow1 = min(end_index(w, g.W, g.oW) + 1, g.oW);
    const int64_t base = p * g.oH * g.oW;
    A sum = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t o = base + oh * g.oW + ow;
        if (idx[o] == target) sum += static_cast<A>(go[o]);
      }
    }
    dev::store(gi + i, sum);
  }
}

}  // namespace

void launch_adaptive_max_pool2d(int kind, const void* in, const PoolGeometry& g, void* out,
                                int64_t* idx, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    adaptive_max_kernel<T><<<blocks_for(g.planes * g.oH * g.oW), kThreads, 0, stream>>>(
        static_cast<const T*>(in), g, static_cast<T*>(out), idx);
  });
}

void launch_adaptive_max_pool2d_backward(int kind, const void* grad_output, const int64_t* idx,
                                         const PoolGeometry& g, void* grad_input,
                                         cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    adaptive_max_backward_kernel<T><<<blocks_for(g.planes * g.H * g.W), kThreads, 0, stream>>>(
        static_cast<const T*>(grad_output), idx, g, static_cast<T*>(grad_input));
  });
}

void launch_max_pool2d(int kind, const void* in, const PoolGeometry& g, void* out, int64_t* idx,
                       cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    max_pool_kernel<T><<<blocks_for(g.planes * g.oH * g.oW), kThreads, 0, stream>>>(
        static_cast<const T*>(in), g, static_cast<T*>(out), idx);
  });
}

void launch_max_pool2d_backward(int kind, const void* grad_output, const int64_t* idx,
                                const PoolGeometry& g, void* grad_input, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    max_pool_backward_kernel<T><<<blocks_for(g.planes * g.H * g.W), kThreads, 0, stream>>>(
        static_cast<const T*>(grad_output), idx, g, static_cast<T*>(grad_input));
  });
}

void launch_avg_pool2d(int kind, const void* in, const PoolGeometry& g, bool count_include_pad,
                       int64_t divisor_override, void* out, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    avg_pool_kernel<T><<<blocks_for(g.planes * g.oH * g.oW), kThreads, 0, stream>>>(
        static_cast<const T*>(in), g, count_include_pad, divisor_override, static_cast<T*>(out));
  });
}

void launch_avg_pool2d_backward(int kind, const void* grad_output, const PoolGeometry& g,
                                bool count_include_pad, int64_t divisor_override,
                                void* grad_input, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    avg_pool_backward_kernel<T><<<blocks_for(g.planes * g.H * g.W), kThreads, 0, stream>>>(
        static_cast<const T*>(grad_output), g, count_include_pad, divisor_override,
        static_cast<T*>(grad_input));
  });
}

void launch_adaptive_avg_pool2d(int kind, const void* in, const PoolGeometry& g, void* out,
                                cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    adaptive_avg_kernel<T><<<blocks_for(g.planes * g.oH * g.oW), kThreads, 0, stream>>>(
        static_cast<const T*>(in), g, static_cast<T*>(out));
  });
}

void launch_adaptive_avg_pool2d_backward(int kind, const void* grad_output, const PoolGeometry& g,
                                         void* grad_input, cudaStream_t stream) {
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    adaptive_avg_backward_kernel<T><<<blocks_for(g.planes * g.H * g.W), kThreads, 0, stream>>>(
        static_cast<const T*>(grad_output), g, static_cast<T*>(grad_input));
  });
}

}  // namespace loom::cuda::libs
