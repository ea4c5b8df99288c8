// The CUDA launchers of scaled_softplus_kernels.cu, callable from plain C++ (no CUDA headers).
// Each launches on `stream` (a cudaStream_t: Loom's current stream of the device) of CUDA
// device `device`, on float64 (f64) or float32 contiguous data of n elements, and returns
// nullptr or the CUDA error text of the launch.
#pragma once

#include <cstdint>

/// y = softplus(beta x) / beta.
const char* launch_scaled_softplus(int device, void* stream, bool f64, const void* x, void* y,
                                   int64_t n, double beta);

/// dx = g * sigmoid(beta x).
const char* launch_scaled_softplus_backward(int device, void* stream, bool f64, const void* g,
                                            const void* x, void* dx, int64_t n, double beta);
