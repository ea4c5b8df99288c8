// The CUDA runtime context: availability (Note [CUDA availability] in context.h), errors,
// current streams, the device guard, argument checks.
#include "runtime/context.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "runtime/diagnosis.h"

namespace loom::cuda {
namespace {

/// What the runtime said the one time it was asked how many devices there are.
struct Availability {
  int count = 0;
  std::string reason;
};

Availability probe() {
  Availability a;
  int count = 0;  // cudaGetDeviceCount leaves it unwritten when it fails
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count > 0) {
    a.count = count;
    return a;
  }
  (void)cudaGetLastError();  // the failure is sticky for the next caller otherwise
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  a.reason = e == cudaSuccess
                 ? unavailable_text("", "", driver, runtime, std::getenv("CUDA_VISIBLE_DEVICES"))
                 : unavailable_text(cudaGetErrorName(e), cudaGetErrorString(e), driver, runtime,
                                    std::getenv("CUDA_VISIBLE_DEVICES"));
  return a;
}

const Availability& availability() {
  static const Availability a = probe();
  return a;
}

// Note [Current streams]: one slot per device per thread, trivially destructible so the
// plugin can be unloaded while threads live. A null entry means the legacy default stream
// (docs/design/cuda.md says why that is the default).
constexpr int kMaxDevices = 64;
thread_local cudaStream_t tls_current_stream[kMaxDevices] = {};

int resolve(int device) { return device < 0 ? current_device() : device; }

}  // namespace

DeviceType device_type() {
  // Registered (or found) by name: the same id the plugin's ON_LOAD got.
  static const DeviceType t = DeviceType::register_type("cuda");
  return t;
}

int device_count() { return availability().count; }

std::string unavailable_reason() { return availability().reason; }

void check_available(std::string_view op) {
  if (device_count() == 0) {
    LOOM_THROW(DeviceError, op, ": no CUDA device is available: ", unavailable_reason());
  }
}

void throw_cuda_error(cudaError_t e, std::string_view op, int device, const char* expr,
                      const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  const std::string where = device >= 0 ? str_cat(" on cuda:", device) : std::string();
  std::string hint;
  if (e == cudaErrorNoKernelImageForDevice) {
    hint = "; the GPU's architecture is not among those Loom was compiled for (see `loom info`)";
  } else if (!launch_blocking() && e != cudaErrorMemoryAllocation) {
    hint =
        "; CUDA kernel errors may be reported asynchronously at a later call, set "
        "LOOM_CUDA_LAUNCH_BLOCKING=1 to find the op that caused it";
  }
  LOOM_THROW(Error, op, ": CUDA error ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")",
             where, " in ", expr, " at ", Origin::relative_path(file), ":", line, hint);
}

bool launch_blocking() {
  static const bool on = [] {
    for (const char* name : {"LOOM_CUDA_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING"}) {
      const char* v = std::getenv(name);
      if (v && std::string_view(v) == "1") return true;
    }
    return false;
  }();
  return on;
}

void check_launch(std::string_view op) {
  LOOM_CUDA_CHECK(cudaGetLastError(), op);
  if (launch_blocking()) LOOM_CUDA_CHECK(cudaStreamSynchronize(current_stream()), op);
}

cudaStream_t current_stream(int device) {
  if (device_count() == 0) return nullptr;
  const int d = resolve(device);
  return d >= 0 && d < kMaxDevices ? tls_current_stream[d] : nullptr;
}

void set_current_stream(int device, cudaStream_t s) {
  check_available("set_current_stream");
  const int d = resolve(device);
  LOOM_CHECK_T(DeviceError, d >= 0 && d < device_count() && d < kMaxDevices,
               "set_current_stream: invalid device cuda:", d, " (", device_count(),
               " CUDA devices are available)");
  tls_current_stream[d] = s;
}

int current_device() {
  if (device_count() == 0) return 0;
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return d;
}

int current_device_or_minus1() { return device_count() == 0 ? -1 : current_device(); }

DeviceGuard::DeviceGuard(int device) {
  if (device < 0) return;
  check_available("DeviceGuard");
  LOOM_CHECK_T(DeviceError, device < device_count(), "DeviceGuard: invalid device cuda:", device,
               " (", device_count(), " CUDA devices are available)");
  previous_ = current_device();
  device_ = device;
  if (previous_ != device_) LOOM_CUDA_CHECK(cudaSetDevice(device_), "DeviceGuard");
}

DeviceGuard::~DeviceGuard() {
  if (device_ >= 0 && previous_ >= 0 && previous_ != device_) {
    if (cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
  }
}

int device_index(const Tensor& t) {
  const int i = t.device().index();
  return i < 0 ? current_device() : i;
}

void check_cuda_tensors(std::string_view op, std::initializer_list<TensorArg> args) {
  check_defined(op, args);
  for (const TensorArg& a : args) {
    if (a.tensor.defined() && a.tensor.device().type() != device_type()) {
      LOOM_THROW(DeviceError, "Expected all tensors to be on a CUDA device, but found ",
                 a.tensor.device().str(), " for argument '", a.name, "' in ",
                 describe_call(op, args));
    }
  }
  check_same_device(op, args);
}

}  // namespace loom::cuda
