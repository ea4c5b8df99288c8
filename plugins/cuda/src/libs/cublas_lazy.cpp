// The cuBLAS functions the plugin calls, forwarding to libcublas opened at first use
// (Note [cuBLAS opened at first use] in libs/cublas_lazy.h).
#include "libs/cublas_lazy.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"

#define LOOM_STRINGIFY_(x) #x
#define LOOM_STRINGIFY(x) LOOM_STRINGIFY_(x)

namespace loom::cuda::libs {
namespace {

/// The soname this plugin was built against: its major version is its ABI.
constexpr const char* kLibrary = "libcublas.so." LOOM_STRINGIFY(CUBLAS_VER_MAJOR);

std::atomic<void*> g_library{nullptr};

/// libcublas's handle, opened once; throws when it cannot be opened.
void* library() {
  void* handle = g_library.load(std::memory_order_acquire);
  if (handle != nullptr) return handle;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  handle = g_library.load(std::memory_order_relaxed);
  if (handle == nullptr) {
    handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      LOOM_THROW(Error, "cuda: cuBLAS (", kLibrary,
                 ") could not be opened: ", why != nullptr ? why : "unknown reason",
                 "; matrix products on CUDA devices need it (install the CUDA toolkit's cuBLAS "
                 "or add its folder to LD_LIBRARY_PATH)");
    }
    g_library.store(handle, std::memory_order_release);
  }
  return handle;
}

/// The address of symbol in libcublas; throws when it is missing.
void* symbol(const char* name) {
  void* address = ::dlsym(library(), name);
  if (address == nullptr) {
    LOOM_THROW(Error, "cuda: ", kLibrary, " has no function ", name,
               " (a cuBLAS older than the ", CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR,
               " this plugin was built with?)");
  }
  return address;
}

}  // namespace

bool cublas_loaded() { return g_library.load(std::memory_order_acquire) != nullptr; }

}  // namespace loom::cuda::libs

// Each definition looks its target up once (a function-local static: thread-safe) and calls it.
#define LOOM_CUBLAS_FORWARD(Ret, name, params, args)                                    \
  extern "C" Ret name params {                                                          \
    using Fn = Ret(*) params;                                                           \
    static const Fn fn = reinterpret_cast<Fn>(::loom::cuda::libs::symbol(#name));       \
    return fn args;                                                                     \
  }

LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))
LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))
LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasGetProperty, (libraryPropertyType type, int* value),
                    (type, value))
LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasSetWorkspace_v2,
                    (cublasHandle_t handle, void* workspace, size_t bytes),
                    (handle, workspace, bytes))
LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasSetStream_v2,
                    (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode),
                    (handle, mode))
LOOM_CUBLAS_FORWARD(const char*, cublasGetStatusName, (cublasStatus_t status), (status))
LOOM_CUBLAS_FORWARD(const char*, cublasGetStatusString, (cublasStatus_t status), (status))
LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasScalEx,
                    (cublasHandle_t handle, int n, const void* alpha, cudaDataType alpha_type,
                     void* x, cudaDataType x_type, int incx, cudaDataType execution_type),
                    (handle, n, alpha, alpha_type, x, x_type, incx, execution_type))
LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasGemmEx,
                    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                     int m, int n, int k, const void* alpha, const void* A, cudaDataType a_type,
                     int lda, const void* B, cudaDataType b_type, int ldb, const void* beta,
                     void* C, cudaDataType c_type, int ldc, cublasComputeType_t compute_type,
                     cublasGemmAlgo_t algo),
                    (handle, transa, transb, m, n, k, alpha, A, a_type, lda, B, b_type, ldb, beta,
                     C, c_type, ldc, compute_type, algo))
LOOM_CUBLAS_FORWARD(cublasStatus_t, cublasGemmStridedBatchedEx,
                    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                     int m, int n, int k, const void* alpha, const void* A, cudaDataType a_type,
                     int lda, long long int stride_a, const void* B, cudaDataType b_type, int ldb,
                     long long int stride_b, const void* beta, void* C, cudaDataType c_type,
                     int ldc, long long int stride_c, int batch_count,
                     cublasComputeType_t compute_type, cublasGemmAlgo_t algo),
                    (handle, transa, transb, m, n, k, alpha, A, a_type, lda, stride_a, B, b_type,
                     ldb, stride_b, beta, C, c_type, ldc, stride_c, batch_count, compute_type,
                     algo))
