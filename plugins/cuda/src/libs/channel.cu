// Per-channel kernels of the convolutions (libs/kernels.h): the bias added to an output and
// the bias gradient summed over a grad_output, both over contiguous [N, C, S] tensors. Own
// kernels rather than cudnnAddTensor / cudnnConvolutionBackwardBias: they take every dtype the
// convolutions do, and the sum runs in double in a fixed order (deterministic).
#include "libs/device_utils.cuh"
#include "libs/kernels.h"

namespace loom::cuda::libs {
namespace {

using dev::kThreads;

template <typename T>
__global__ void add_bias_kernel(T* y, const T* bias, int64_t N, int64_t C, int64_t S) {
  using A = dev::acc_t<T>;
  const int64_t total = N * C * S;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    dev::store(y + i, static_cast<A>(y[i]) + static_cast<A>(bias[(i / S) % C]));
  }
}

template <typename T>
__global__ void channel_sum_kernel(const T* g, int64_t N, int64_t C, int64_t S, T* out) {
  __shared__ double shared[kThreads];
  const int64_t count = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      s += static_cast<double>(static_cast<dev::acc_t<T>>(g[((k / S) * C + c) * S + k % S]));
    }
    s = dev::block_sum(s, shared);
    if (threadIdx.x == 0) dev::store(out + c, s);
  }
}

}  // namespace

void launch_add_channel_bias(int kind, void* y, const void* bias, int64_t N, int64_t C, int64_t S,
                             cudaStream_t stream) {
  if (N * C * S == 0) return;
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    add_bias_kernel<T><<<dev::blocks_for(N * C * S), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), N, C, S);
  });
}

void launch_channel_sum(int kind, const void* g, int64_t N, int64_t C, int64_t S, void* out,
                        cudaStream_t stream) {
  if (C == 0) return;
  const unsigned blocks = static_cast<unsigned>(C > 65535 * 8 ? 65535 * 8 : C);
  dev::dispatch_kind(kind, [&](auto tag) {
    using T = decltype(tag);
    channel_sum_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(g), N, C, S,
                                                           static_cast<T*>(out));
  });
}

}  // namespace loom::cuda::libs
