#pragma once
/// @file
/// cuBLAS and cuDNN handles of the CUDA plugin, and their status codes as Loom errors.
///
/// Note [Library handles]: a cuBLAS handle and a cuDNN handle exist per (device, host
/// thread), created on first use with that device current and destroyed when the thread
/// exits. Handles are not shared between threads because a handle carries its stream and
/// workspace: two threads sharing one would race on cublasSetStream. Before every library
/// call the handle is bound to the calling thread's current stream of that device
/// (cuda::current_stream), so library work is ordered with the plugin's own kernels.
///
/// cuBLAS gets a fixed 32 MiB workspace per (handle, stream) from Loom's allocator
/// (cublasSetWorkspace after cublasSetStream, which resets it). A fixed workspace per stream
/// is what makes cuBLAS results bit-identical run to run (cuBLAS's reproducibility note:
/// results are deterministic for one stream and workspace configuration), so
/// backends::deterministic() needs nothing more from cuBLAS. cuDNN workspaces are allocated
/// per call, stream-ordered, from the same caching allocator.

#include <cublas_v2.h>
#include <cudnn.h>

#include <string_view>

namespace loom::cuda::libs {

/// Throws loom::Error "<op>: cuBLAS error CUBLAS_STATUS_... (<string>) on cuda:N in <expr>
/// at <file>:<line>".
[[noreturn]] void throw_cublas_error(cublasStatus_t s, std::string_view op, const char* expr,
                                     const char* file, int line);
/// Throws loom::Error "<op>: cuDNN error CUDNN_STATUS_... (<string>) on cuda:N in <expr> ...".
[[noreturn]] void throw_cudnn_error(cudnnStatus_t s, std::string_view op, const char* expr,
                                    const char* file, int line);

/// Evaluates expr (a cublasStatus_t); on failure throws through throw_cublas_error.
#define LOOM_CUBLAS_CHECK(expr, op)                                                         \
  do {                                                                                      \
    const cublasStatus_t loom_cublas_st_ = (expr);                                          \
    if (__builtin_expect(loom_cublas_st_ != CUBLAS_STATUS_SUCCESS, 0)) {                    \
      ::loom::cuda::libs::throw_cublas_error(loom_cublas_st_, (op), #expr, __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)

/// Evaluates expr (a cudnnStatus_t); on failure throws through throw_cudnn_error.
#define LOOM_CUDNN_CHECK(expr, op)                                                          \
  do {                                                                                      \
    const cudnnStatus_t loom_cudnn_st_ = (expr);                                            \
    if (__builtin_expect(loom_cudnn_st_ != CUDNN_STATUS_SUCCESS, 0)) {                      \
      ::loom::cuda::libs::throw_cudnn_error(loom_cudnn_st_, (op), #expr, __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)

/// This thread's cuBLAS handle of device (which must be current), bound to the current
/// stream of that device with its workspace (Note [Library handles]).
cublasHandle_t cublas_handle(std::string_view op, int device);

/// This thread's cuDNN handle of device (which must be current), bound to the current
/// stream of that device.
cudnnHandle_t cudnn_handle(std::string_view op, int device);

}  // namespace loom::cuda::libs
