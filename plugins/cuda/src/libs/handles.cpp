// cuBLAS and cuDNN handles per (device, thread) and their error messages
// (Note [Library handles] in libs/handles.h).
#include "libs/handles.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor.h"
#include "runtime/context.h"

namespace loom::cuda::libs {
namespace {

/// "on cuda:N " for messages, or "" when no device is current.
std::string on_device() {
  const int d = current_device_or_minus1();
  return d < 0 ? std::string() : str_cat(" on cuda:", d);
}

/// cuBLAS's workspace per (handle, stream): 32 MiB, what cuBLAS recommends for Hopper.
constexpr int64_t kCublasWorkspaceBytes = int64_t{32} << 20;

/// One device's handles of this thread.
struct DeviceHandles {
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  /// The cuBLAS workspace of each stream the handle has been used on (kept alive here).
  std::unordered_map<cudaStream_t, Tensor> workspaces;

  DeviceHandles() = default;
  DeviceHandles(const DeviceHandles&) = delete;
  DeviceHandles& operator=(const DeviceHandles&) = delete;
  ~DeviceHandles() {
    // Errors at thread exit cannot be reported; a handle that fails to go is leaked.
    if (cublas != nullptr) cublasDestroy(cublas);
    if (cudnn != nullptr) cudnnDestroy(cudnn);
  }
};

/// This thread's handles, per device index.
std::unordered_map<int, std::unique_ptr<DeviceHandles>>& thread_handles() {
  thread_local std::unordered_map<int, std::unique_ptr<DeviceHandles>> handles;
  return handles;
}

DeviceHandles& handles_of(int device) {
  auto& map = thread_handles();
  auto& slot = map[device];
  if (!slot) slot = std::make_unique<DeviceHandles>();
  return *slot;
}

}  // namespace

void throw_cublas_error(cublasStatus_t s, std::string_view op, const char* expr,
                        const char* file, int line) {
  LOOM_THROW(Error, op, ": cuBLAS error ", cublasGetStatusName(s), " (", cublasGetStatusString(s),
             ")", on_device(), " in ", expr, " at ", file, ":", line);
}

void throw_cudnn_error(cudnnStatus_t s, std::string_view op, const char* expr, const char* file,
                       int line) {
  // cuDNN 9 keeps a message on why the last call failed (which parameter, which limit).
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  LOOM_THROW(Error, op, ": cuDNN error ", cudnnGetErrorString(s), " (status ",
             static_cast<int>(s), ")", on_device(), " in ", expr, " at ", file, ":", line,
             detail[0] != 0 ? str_cat(": ", detail) : std::string());
}

cublasHandle_t cublas_handle(std::string_view op, int device) {
  DeviceHandles& h = handles_of(device);
  if (h.cublas == nullptr) {
    LOOM_CUBLAS_CHECK(cublasCreate(&h.cublas), op);
    // float accumulation for the 16-bit types, also inside split-K reductions.
    LOOM_CUBLAS_CHECK(
        cublasSetMathMode(h.cublas, static_cast<cublasMath_t>(
                                        CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
        op);
  }
  const cudaStream_t stream = current_stream(device);
  // cublasSetStream resets the workspace to cuBLAS's own pool, so the workspace follows it.
  LOOM_CUBLAS_CHECK(cublasSetStream(h.cublas, stream), op);
  auto it = h.workspaces.find(stream);
  if (it == h.workspaces.end()) {
    Tensor ws = Tensor::empty({kCublasWorkspaceBytes}, TensorOptions{}
                                                           .with(DType::UInt8)
                                                           .with(Device(device_type(),
                                                                        static_cast<int16_t>(device))));
    it = h.workspaces.emplace(stream, std::move(ws)).first;
  }
  LOOM_CUBLAS_CHECK(cublasSetWorkspace(h.cublas, it->second.data_ptr(),
                                       static_cast<size_t>(kCublasWorkspaceBytes)),
                    op);
  return h.cublas;
}

cudnnHandle_t cudnn_handle(std::string_view op, int device) {
  DeviceHandles& h = handles_of(device);
  if (h.cudnn == nullptr) LOOM_CUDNN_CHECK(cudnnCreate(&h.cudnn), op);
  LOOM_CUDNN_CHECK(cudnnSetStream(h.cudnn, current_stream(device)), op);
  return h.cudnn;
}

}  // namespace loom::cuda::libs
