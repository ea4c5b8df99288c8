// Own kernels of embedding (a row gather) and embedding_dense_backward (a row scatter-add)
// (libs/kernels.h). The backward is deterministic without atomics on floats: one thread per
// embedding column walks the indices in order and adds each gradient row's element to its
// row's accumulator (only the counts of scale_grad_by_freq use integer atomics, which are
// exact).
#include "libs/device_utils.cuh"
#include "libs/kernels.h"

namespace loom::cuda::libs {
namespace {

using dev::kThreads;

template <typename I>
__device__ __forceinline__ int64_t index_at(const void* idx, int64_t i) {
  return static_cast<int64_t>(static_cast<const I*>(idx)[i]);
}

__device__ __forceinline__ int64_t read_index(const void* idx, bool idx32, int64_t i) {
  return idx32 ? index_at<int32_t>(idx, i) : index_at<int64_t>(idx, i);
}

__device__ __forceinline__ void flag(int64_t* bad, int64_t value) {
  if (atomicCAS(reinterpret_cast<unsigned long long*>(bad), 0ull, 1ull) == 0ull) bad[1] = value;
}

template <typename E>
__global__ void embedding_kernel(const E* weight, int64_t V, int64_t D, int64_t ws0,
                                 const void* idx, bool idx32, int64_t n, E* out, int64_t* bad) {
  const int64_t total = n * D;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < total;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = k / D, j = k % D;
    const int64_t row = read_index(idx, idx32, i);
    if (row < 0 || row >= V) {
      if (j == 0) flag(bad, row);
      out[k] = E{};
      continue;
    }
    out[k] = weight[row * ws0 + j];
  }
}

__global__ void count_kernel(const void* idx, bool idx32, int64_t n, int64_t V,
                             int64_t padding_idx, int* counts, int64_t* bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = read_index(idx, idx32, i);
    if (row == padding_idx) continue;
    if (row < 0 || row >= V) {
      flag(bad, row);
      continue;
    }
    atomicAdd(counts + row, 1);
  }
}

template <typename T, typename A>
__global__ void embedding_backward_kernel(const T* grad, const void* idx, bool idx32, int64_t n,
                                          int64_t D, int64_t V, int64_t padding_idx,
                                          const int* counts, A* acc, int64_t* bad) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < D;
       j += int64_t(gridDim.x) * blockDim.x) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = read_index(idx, idx32, i);
      if (row == padding_idx) continue;
      if (row < 0 || row >= V) {
        if (j == 0) flag(bad, row);
        continue;
      }
      A v = static_cast<A>(grad[i * D + j]);
      if (counts != nullptr) v /= static_cast<A>(counts[row]);
      acc[row * D + j] += v;
    }
  }
}

template <typename T, typename A>
__global__ void convert_kernel(const A* acc, int64_t total, T* out) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < total;
       k += int64_t(gridDim.x) * blockDim.x) {
    dev::store(out + k, acc[k]);
  }
}

template <typename E>
void gather(const void* weight, int64_t V, int64_t D, int64_t ws0, const void* idx, bool idx32,
            int64_t n, void* out, int64_t* bad, cudaStream_t stream) {
  embedding_kernel<E><<<dev::blocks_for(n * D), kThreads, 0, stream>>>(
      static_cast<const E*>(weight), V, D, ws0, idx, idx32, n, static_cast<E*>(out), bad);
}

}  // namespace

void launch_embedding(int elem_size, const void* weight, int64_t V, int64_t D, int64_t ws0,
                      const void* idx, bool idx32, int64_t n, void* out, int64_t* bad,
                      cudaStream_t stream) {
  switch (elem_size) {
    case 1:
      gather<uint8_t>(weight, V, D, ws0, idx, idx32, n, out, bad, stream);
      break;
    case 2:
      gather<uint16_t>(weight, V, D, ws0, idx, idx32, n, out, bad, stream);
      break;
    case 4:
      gather<uint32_t>(weight, V, D, ws0, idx, idx32, n, out, bad, stream);
      break;
    default:
      gather<uint64_t>(weight, V, D, ws0, idx, idx32, n, out, bad, stream);
      break;
  }
}

void launch_embedding_backward(int kind, const void* grad, const void* idx, bool idx32, int64_t n,
                               int64_t D, int64_t V, int64_t padding_idx, bool scale_grad_by_freq,
                               void* acc, int* counts, void* out, int64_t* bad,
                               cudaStream_t stream) {
  if (scale_grad_by_freq && n > 0) {
    count_kernel<<<dev::blocks_for(n), kThreads, 0, stream>>>(idx, idx32, n, V, padding_idx,
                                                              counts, bad);
  }
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    using A = dev::acc_t<T>;
    if (D > 0 && n > 0) {
      embedding_backward_kernel<T, A><<<dev::blocks_for(D), kThreads, 0, stream>>>(
          static_cast<const T*>(grad), idx, idx32, n, D, V, padding_idx,
          scale_grad_by_freq ? counts : nullptr, static_cast<A*>(acc), bad);
    }
    if (V * D > 0) {
      convert_kernel<T, A><<<dev::blocks_for(V * D), kThreads, 0, stream>>>(
          static_cast<const A*>(acc), V * D, static_cast<T*>(out));
    }
  });
}

}  // namespace loom::cuda::libs
