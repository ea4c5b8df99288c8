// The CUDA device hooks (Note [Device hooks] in loom/core/device_hooks.h): what `loom info`,
// the DataLoader, the C ABI and loom/cuda/cuda.h ask the plugin without linking to it.
#include "runtime/hooks.h"

#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "libs/cublas_lazy.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "runtime/allocator.h"
#include "runtime/context.h"

#ifndef LOOM_CUDA_ARCHITECTURES_STRING
#define LOOM_CUDA_ARCHITECTURES_STRING ""
#endif

namespace loom::cuda {
namespace {

std::string cudnn_version(size_t v) {
  // cuDNN 9 encodes major * 10000 + minor * 100 + patch.
  return str_cat(v / 10000, ".", (v % 10000) / 100, ".", v % 100);
}

std::string cublas_version() {
  // Asking would open cuBLAS (Note [cuBLAS opened at first use]): until the first matmul,
  // report the version the plugin was built against.
  if (!libs::cublas_loaded()) {
    return str_cat(CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR, ".", CUBLAS_VER_PATCH,
                   " (built against; libcublas.so.", CUBLAS_VER_MAJOR, " opens at first use)");
  }
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    return "unknown (cublasGetProperty failed)";
  }
  return str_cat(major, ".", minor, ".", patch);
}

int16_t resolve(int16_t index) {
  return index < 0 ? static_cast<int16_t>(current_device()) : index;
}

void check_index(std::string_view op, int16_t index) {
  check_available(op);
  LOOM_CHECK_T(DeviceError, index >= -1 && index < device_count(), op,
               ": invalid device cuda:", index, " (", device_count(), " CUDA device",
               device_count() == 1 ? " is" : "s are", " available)");
}

}  // namespace

std::vector<CompiledArch> compiled_architectures() {
  return parse_architectures(LOOM_CUDA_ARCHITECTURES_STRING);
}

int CudaHooks::device_count() const { return cuda::device_count(); }

std::string CudaHooks::unavailable_reason() const { return cuda::unavailable_reason(); }

int16_t CudaHooks::current_device() const { return static_cast<int16_t>(cuda::current_device()); }

void CudaHooks::set_current_device(int16_t index) const {
  check_index("set_current_device", index);
  if (index >= 0) LOOM_CUDA_CHECK(cudaSetDevice(index), "set_current_device");
}

void* CudaHooks::current_stream(int16_t index) const {
  return static_cast<void*>(cuda::current_stream(index));
}

void CudaHooks::synchronize(int16_t index) const {
  check_index("synchronize", index);
  DeviceGuard guard(resolve(index));
  LOOM_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize");
}

Allocator* CudaHooks::pinned_host_allocator() const {
  // cudaHostAlloc needs a driver: without a device DataLoader's pin_memory stays a no-op.
  return cuda::device_count() > 0 ? &pinned_allocator() : nullptr;
}

void* CudaHooks::create_stream(int16_t index) const {
  check_index("Stream", index);
  DeviceGuard guard(resolve(index));
  cudaStream_t s = nullptr;
  // A blocking stream: it synchronizes with the legacy default stream, so code that uses the
  // default stream (cudaMemcpy, libraries without a stream argument) stays ordered with it.
  LOOM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamDefault), "Stream");
  return static_cast<void*>(s);
}

void CudaHooks::destroy_stream(int16_t index, void* stream) const {
  if (stream == nullptr || cuda::device_count() == 0) return;
  const int16_t d = resolve(index);
  auto s = static_cast<cudaStream_t>(stream);
  // Waiting first makes the caching allocator's blocks of this stream idle, so a new stream
  // that gets the same handle may safely reuse them (Note [CUDA caching allocator]).
  if (cudaStreamSynchronize(s) != cudaSuccess) (void)cudaGetLastError();
  if (cuda::current_stream(d) == s) cuda::set_current_stream(d, nullptr);
  if (cudaStreamDestroy(s) != cudaSuccess) (void)cudaGetLastError();
}

void CudaHooks::set_current_stream(int16_t index, void* stream) const {
  cuda::set_current_stream(index, static_cast<cudaStream_t>(stream));
}

void CudaHooks::synchronize_stream(void* stream) const {
  check_available("Stream.synchronize");
  LOOM_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "Stream.synchronize");
}

bool CudaHooks::query_stream(void* stream) const {
  if (cuda::device_count() == 0) return true;
  const cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(stream));
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  LOOM_CUDA_CHECK(e, "Stream.query");
  return true;
}

void* CudaHooks::create_event(int16_t index, bool timing) const {
  check_index("Event", index);
  DeviceGuard guard(resolve(index));
  cudaEvent_t e = nullptr;
  LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming),
                  "Event");
  return static_cast<void*>(e);
}

void CudaHooks::destroy_event(void* event) const {
  if (event == nullptr || cuda::device_count() == 0) return;
  if (cudaEventDestroy(static_cast<cudaEvent_t>(event)) != cudaSuccess) (void)cudaGetLastError();
}

void CudaHooks::record_event(void* event, void* stream) const {
  check_available("Event.record");
  LOOM_CUDA_CHECK(
      cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
      "Event.record");
}

void CudaHooks::wait_event(void* stream, void* event) const {
  check_available("Event.wait");
  LOOM_CUDA_CHECK(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
      "Event.wait");
}

void CudaHooks::synchronize_event(void* event) const {
  check_available("Event.synchronize");
  LOOM_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "Event.synchronize");
}

bool CudaHooks::query_event(void* event) const {
  if (cuda::device_count() == 0) return true;
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  LOOM_CUDA_CHECK(e, "Event.query");
  return true;
}

double CudaHooks::event_elapsed_ms(void* start, void* end) const {
  check_available("Event.elapsed_time");
  float ms = 0.f;
  LOOM_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)),
      "Event.elapsed_time");
  return ms;
}

bool CudaHooks::is_pinned(const void* ptr) const { return cuda::is_pinned(ptr); }

AllocatorStats CudaHooks::memory_stats(int16_t index) const {
  if (cuda::device_count() == 0) return {};
  return caching_allocator().device_stats(resolve(index));
}

std::string CudaHooks::memory_summary(int16_t index) const {
  if (cuda::device_count() == 0)
    return str_cat("memory summary: no CUDA device is available: ", cuda::unavailable_reason(),
                   "\n");
  return caching_allocator().device_summary(resolve(index));
}

void CudaHooks::record_stream(const void* ptr, void* stream) const {
  caching_allocator().record_stream(ptr, static_cast<cudaStream_t>(stream));
}

std::vector<std::pair<std::string, std::string>> CudaHooks::info() const {
  std::vector<std::pair<std::string, std::string>> lines;
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);  // 0 without a driver; works without a GPU
  (void)cudaGetLastError();
  lines.emplace_back("CUDA runtime", str_cat(cuda_version_text(runtime), " (built with ",
                                             cuda_version_text(CUDART_VERSION), ")"));
  lines.emplace_back("CUDA driver", driver == 0 ? std::string("none installed")
                                                : str_cat(cuda_version_text(driver),
                                                          " (the newest CUDA it supports)"));
  lines.emplace_back("cuBLAS", cublas_version());
  lines.emplace_back("cuDNN", str_cat(cudnn_version(cudnnGetVersion()), " (built with ",
                                      cudnn_version(CUDNN_VERSION), ")"));
  lines.emplace_back("compiled architectures", architectures_text(compiled_architectures()));
  lines.emplace_back("launch blocking",
                     launch_blocking() ? "on (LOOM_CUDA_LAUNCH_BLOCKING / CUDA_LAUNCH_BLOCKING)"
                                       : "off (set LOOM_CUDA_LAUNCH_BLOCKING=1 to debug)");
  if (driver != 0 && driver < runtime) {
    lines.emplace_back("WARNING",
                       str_cat("the CUDA driver (", cuda_version_text(driver),
                               ") is older than the CUDA runtime (", cuda_version_text(runtime),
                               "): update the NVIDIA driver"));
  }
  // How many devices and why none is what device_count() and unavailable_reason() say;
  // `loom info` prints those first. Here: one line per device.
  const int n = cuda::device_count();
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      (void)cudaGetLastError();
      lines.emplace_back(str_cat("cuda:", d), "cudaGetDeviceProperties failed");
      continue;
    }
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(p.totalGlobalMem) / (1 << 30));
    const int capability = p.major * 10 + p.minor;
    lines.emplace_back(str_cat("cuda:", d),
                       str_cat(p.name, ", compute capability ", p.major, ".", p.minor, ", ", mem,
                               ", ", p.multiProcessorCount, " SMs"));
    if (!runs_on(compiled_architectures(), capability)) {
      lines.emplace_back(
          "WARNING",
          str_cat("cuda:", d, " (sm_", capability,
                  ") is not among the architectures Loom was "
                  "compiled for (",
                  architectures_text(compiled_architectures()),
                  "): its kernels would fail "
                  "with \"no kernel image is available for execution on the device\"; rebuild "
                  "with -DLOOM_CUDA_ARCHITECTURES=",
                  capability));
    }
  }
  return lines;
}

CudaHooks& hooks() {
  static CudaHooks h;
  return h;
}

}  // namespace loom::cuda
