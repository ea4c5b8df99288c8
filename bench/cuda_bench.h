#pragma once
/// @file
/// What the CUDA benchmarks (bench/cuda_*_bench.cpp) share: whether a CUDA device is usable
/// (and why not), the skip line printed instead of a measurement, a GPU timing loop, and a
/// checked CUDA runtime call for the raw sides.
///
/// Every CUDA benchmark compares Loom on cuda:0 with a "raw" side that calls cuBLAS or cuDNN
/// directly on the same device. Both sides enqueue work on the legacy default stream (Loom's
/// current stream unless a program sets another) and each sample synchronizes the device
/// before and after its timed loop, so a sample measures the GPU's work, not the launch queue.
/// Without a device (no driver, no GPU, the cuda plugin not built) a benchmark's setup prints
/// "skipped: no CUDA device (<reason>)" and returns an empty side: its row is null, the run
/// exits 0.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "harness.h"
#include "loom/core/device_hooks.h"
#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin_loader.h"

namespace loom::bench::cuda {

/// "" when the cuda plugin is loaded and reports a device, else the reason (the plugin's own
/// unavailable_reason(): "no CUDA driver is installed (cudaErrorInsufficientDriver: ...)").
/// Loads ops_core, ops_nn and cuda on first use.
inline const std::string& unavailable_reason() {
  static const std::string reason = []() -> std::string {
    try {
      PluginLoader::instance().load("ops_core");
      PluginLoader::instance().load("ops_nn");
      PluginLoader::instance().load("cuda");
    } catch (const std::exception& e) {
      return std::string("the cuda plugin could not be loaded: ") + e.what();
    }
    const DeviceHooks* hooks = find_device_hooks(DeviceType::from_name("cuda"));
    if (hooks == nullptr) return "the cuda plugin registered no device hooks";
    if (hooks->device_count() > 0) return "";
    const std::string why = hooks->unavailable_reason();
    return why.empty() ? "the driver reports 0 devices" : why;
  }();
  return reason;
}

/// The device the benchmarks run on.
inline Device device() { return Device(DeviceType::from_name("cuda"), 0); }

/// Prints the skip line of benchmark name and returns an empty (unavailable) side.
inline Side skipped(const char* name) {
  std::printf("  %s: skipped: no CUDA device (%s)\n", name, unavailable_reason().c_str());
  std::fflush(stdout);
  return {};
}

/// Throws std::runtime_error naming what failed when a CUDA runtime call does.
inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
  }
}

/// Waits for all work queued on the current device (every stream, Loom's and the raw side's).
inline void sync() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

/// A side returning nanoseconds per call of body, where body enqueues GPU work: the loop is
/// calibrated on the first sample (about sample_ms() per sample) and every sample starts and
/// ends with a device synchronization.
template <typename F>
Side gpu_ns_per_call(F body) {
  auto iterations = std::make_shared<int64_t>(0);
  return [body = std::move(body), iterations]() mutable -> double {
    using clock = std::chrono::steady_clock;
    auto time = [&](int64_t n) {
      sync();
      const auto t0 = clock::now();
      for (int64_t i = 0; i < n; ++i) body();
      sync();
      return std::chrono::duration<double, std::nano>(clock::now() - t0).count();
    };
    if (*iterations == 0) {
      int64_t n = 1;
      double elapsed = time(n);
      while (elapsed < 1e6 && n < (int64_t{1} << 30)) {  // grow to at least 1 ms
        n *= 4;
        elapsed = time(n);
      }
      *iterations = std::max<int64_t>(1, static_cast<int64_t>(n * (sample_ms() * 1e6) / elapsed));
    }
    return time(*iterations) / static_cast<double>(*iterations);
  };
}

/// Device memory for a raw side, freed with it.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t nbytes) {
    check(cudaMalloc(&ptr, nbytes ? nbytes : 1), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// Copies nbytes from host memory.
  void upload(const void* host, size_t nbytes) {
    check(cudaMemcpy(ptr, host, nbytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
};

}  // namespace loom::bench::cuda
