// custom_cuda_op: the CUDA kernels of custom_cuda::scaled_softplus and its backward, and their
// launchers. Plain CUDA with POD arguments: the registration side (scaled_softplus.cpp) hands
// over device pointers, the element count, beta and Loom's current stream of the device.
#include <cuda_runtime.h>

#include <cstdint>

#include "scaled_softplus_kernels.h"

namespace {

// softplus(beta x) / beta without overflow: max(z, 0) + log1p(exp(-|z|)), z = beta x.
template <typename T>
__global__ void softplus_forward(const T* __restrict__ x, T* __restrict__ y, int64_t n, T beta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const T z = beta * x[i];
    y[i] = (fmax(z, T(0)) + log1p(exp(-fabs(z)))) / beta;
  }
}

// d/dx softplus(beta x) / beta = sigmoid(beta x).
template <typename T>
__global__ void softplus_backward(const T* __restrict__ g, const T* __restrict__ x,
                                  T* __restrict__ dx, int64_t n, T beta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    dx[i] = g[i] / (T(1) + exp(-beta * x[i]));
  }
}

constexpr int kThreads = 256;

// Enough blocks to cover n (grid-stride loops cover the rest).
unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

// Runs the launch on `device` (restoring the caller's current device) and reports its error.
template <typename Launch>
const char* on_device(int device, Launch launch) {
  int previous = 0;
  cudaError_t err = cudaGetDevice(&previous);
  if (err == cudaSuccess && previous != device) err = cudaSetDevice(device);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  launch();
  err = cudaGetLastError();
  if (previous != device) cudaSetDevice(previous);
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

const char* launch_scaled_softplus(int device, void* stream, bool f64, const void* x, void* y,
                                   int64_t n, double beta) {
  if (n == 0) return nullptr;
  auto s = static_cast<cudaStream_t>(stream);
  return on_device(device, [&] {
    if (f64) {
      softplus_forward<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const double*>(x),
                                                          static_cast<double*>(y), n, beta);
    } else {
      softplus_forward<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(x),
                                                          static_cast<float*>(y), n, float(beta));
    }
  });
}

const char* launch_scaled_softplus_backward(int device, void* stream, bool f64, const void* g,
                                            const void* x, void* dx, int64_t n, double beta) {
  if (n == 0) return nullptr;
  auto s = static_cast<cudaStream_t>(stream);
  return on_device(device, [&] {
    if (f64) {
      softplus_backward<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const double*>(g),
                                                           static_cast<const double*>(x),
                                                           static_cast<double*>(dx), n, beta);
    } else {
      softplus_backward<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(g),
                                                           static_cast<const float*>(x),
                                                           static_cast<float*>(dx), n, float(beta));
    }
  });
}
