#pragma once
// Device helpers of the own kernels in plugins/cuda/src/libs: element types by kind code,
// the accumulation type, grid sizes and a fixed-order block sum (deterministic).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace loom::cuda::libs::dev {

/// The accumulation type: float for the 16-bit floats and float, double for double.
template <typename T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};
template <typename T>
using acc_t = typename AccOf<T>::type;

template <typename T>
__device__ __forceinline__ acc_t<T> load(const T* p) {
  return static_cast<acc_t<T>>(*p);
}
template <typename T, typename A>
__device__ __forceinline__ void store(T* p, A v) {
  *p = static_cast<T>(v);
}
template <>
__device__ __forceinline__ void store<__half, double>(__half* p, double v) {
  *p = __float2half(static_cast<float>(v));
}
template <>
__device__ __forceinline__ void store<__nv_bfloat16, double>(__nv_bfloat16* p, double v) {
  *p = __float2bfloat16(static_cast<float>(v));
}

/// Calls f(T{}) for the element type of kind (0 float, 1 double, 2 half, 3 bfloat16).
template <typename F>
inline void dispatch_kind(int kind, F&& f) {
  switch (kind) {
    case 1:
      f(double{});
      break;
    case 2:
      f(__half{});
      break;
    case 3:
      f(__nv_bfloat16{});
      break;
    default:
      f(float{});
      break;
  }
}

constexpr int kThreads = 256;

/// Blocks of kThreads for n elements (grid-stride loops cover the rest).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

/// The sum of v over the block (blockDim.x a power of two, at most 1024), in a fixed order;
/// every thread gets the result. shared: blockDim.x elements.
template <typename A>
__device__ A block_sum(A v, A* shared) {
  const unsigned t = threadIdx.x;
  shared[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) shared[t] += shared[t + s];
    __syncthreads();
  }
  const A r = shared[0];
  __syncthreads();
  return r;
}

/// The maximum of v over the block (NaN wins), as block_sum.
template <typename A>
__device__ A block_max(A v, A* shared) {
  const unsigned t = threadIdx.x;
  shared[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      const A o = shared[t + s];
      if (o > shared[t] || o != o) shared[t] = o;
    }
    __syncthreads();
  }
  const A r = shared[0];
  __syncthreads();
  return r;
}

}  // namespace loom::cuda::libs::dev
