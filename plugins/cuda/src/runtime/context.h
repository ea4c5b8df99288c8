#pragma once
/// @file
/// The CUDA plugin's internal runtime header: device type, availability, errors, streams,
/// the device guard, argument checks, the Philox state of the generators, pinned memory.
/// Every .cpp file of the plugin includes it; .cu files do not (they take POD arguments and a
/// cudaStream_t, see docs/design/cuda.md).
///
/// Note [CUDA availability]: nothing here may fail because the machine has no GPU or no
/// driver. device_count() asks the runtime once (cudaGetDeviceCount, whose output is left
/// unwritten on failure, so it starts at 0) and remembers the answer and the reason; every
/// entry point that needs a device calls check_available(op) first and throws a DeviceError
/// naming the op and that reason.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "loom/core/device.h"
#include "loom/core/generator.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"

namespace loom::cuda {

/// The "cuda" device type registered when the plugin loads.
DeviceType device_type();

/// Number of usable CUDA devices; 0 without a driver or a GPU. Never throws.
int device_count();

/// Why device_count() is 0, in one line ("no CUDA driver is installed
/// (cudaErrorInsufficientDriver: ...)"); "" when devices are available.
std::string unavailable_reason();

/// Throws loom::DeviceError "<op>: no CUDA device is available: <reason>" when
/// device_count() is 0.
void check_available(std::string_view op);

/// Throws loom::Error naming op, device, the failed expression, the error code's name and
/// string, and where it happened: "copy_: CUDA error cudaErrorInvalidValue (invalid argument)
/// on cuda:0 in cudaMemcpyAsync(...) at plugins/cuda/src/runtime/copy.cpp:42". A device of
/// -1 is left out of the message. Clears the runtime's sticky last error where it can.
[[noreturn]] void throw_cuda_error(cudaError_t e, std::string_view op, int device, const char* expr,
                                   const char* file, int line);

/// Evaluates expr (a cudaError_t); on failure throws through throw_cuda_error, naming op and
/// the current device.
#define LOOM_CUDA_CHECK(expr, op)                                                               \
  do {                                                                                          \
    const cudaError_t loom_cuda_err_ = (expr);                                                  \
    if (__builtin_expect(loom_cuda_err_ != cudaSuccess, 0)) {                                   \
      ::loom::cuda::throw_cuda_error(loom_cuda_err_, (op),                                      \
                                     ::loom::cuda::current_device_or_minus1(), #expr, __FILE__, \
                                     __LINE__);                                                 \
    }                                                                                           \
  } while (0)

/// Call after every <<<>>> launch: checks cudaGetLastError; in synchronous mode
/// (launch_blocking()) also synchronizes the current stream and checks again, so an
/// asynchronous fault is reported by the op that caused it.
void check_launch(std::string_view op);

/// True when LOOM_CUDA_LAUNCH_BLOCKING=1 or CUDA_LAUNCH_BLOCKING=1 was set (read once).
bool launch_blocking();

/// This thread's current stream of device (-1: the current device). Default: the legacy
/// default stream (a null cudaStream_t, always valid) until set_current_stream changes it.
cudaStream_t current_stream(int device = -1);

/// Makes s this thread's current stream of device (-1: the current device).
void set_current_stream(int device, cudaStream_t s);

/// The current CUDA device of this thread (cudaGetDevice); 0 when none is available.
int current_device();

/// current_device() when a device is available, else -1 (for error messages; never throws).
int current_device_or_minus1();

/// Makes a device current for its scope (cudaSetDevice) and restores the previous one.
/// A device of -1 leaves the current device alone.
class DeviceGuard {
 public:
  /// Switches to device (if it is not already current).
  explicit DeviceGuard(int device);
  /// Switches back.
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  int device_ = -1;
};

/// The index of a CUDA tensor's device, -1 resolved to the current device.
int device_index(const Tensor& t);

/// Throws TypeError for an undefined argument and DeviceError unless every argument is a
/// CUDA tensor and all are on the same device (check_same_device's message).
void check_cuda_tensors(std::string_view op, std::initializer_list<TensorArg> args);

/// Philox counter-based RNG state for a kernel of the default generator of device: returns
/// {seed, offset} and advances the generator's offset by increment (the number of 32-bit
/// values each thread may draw, rounded up to a multiple of 4 as Philox4x32 gives 4 per
/// call). Kernels draw philox(seed, subsequence = thread id, offset).
std::pair<uint64_t, uint64_t> philox_seed_offset(int device, uint64_t increment);

/// The same for an explicit generator (a random op's optional `generator` argument); throws
/// TypeError unless g is a CUDA generator.
std::pair<uint64_t, uint64_t> philox_seed_offset(Generator& g, uint64_t increment);

/// True if ptr lies in page-locked host memory from the pinned host allocator (or any
/// memory the CUDA runtime knows as host-registered). False without a driver.
bool is_pinned(const void* ptr);

}  // namespace loom::cuda
