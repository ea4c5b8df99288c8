#pragma once
/// @file
/// Device hooks: what a device plugin tells the rest of Loom about its device type
/// beyond memory (PyTorch's CUDAHooksInterface / PrivateUse1HooksInterface).
///
/// Note [Device hooks]: the core knows no device but the CPU. A plugin that brings a
/// device type ("cuda") registers one DeviceHooks object for it; code that must not link
/// against that plugin asks through these hooks: `loom info` (how many devices, why none,
/// library versions), the stable C ABI and custom ops (the current stream of a device),
/// the DataLoader (pinned host memory), `Tensor::to` (synchronizing). Every hook has a
/// harmless default, so a plugin overrides only what its device has.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/core/allocator.h"
#include "loom/core/device.h"
#include "loom/core/registration.h"

namespace loom {

/// Per-device-type services a device plugin provides. Implementations must be thread-safe.
class DeviceHooks {
 public:
  virtual ~DeviceHooks() = default;
  /// Number of usable devices of this type (0 when the driver or the hardware is missing).
  virtual int device_count() const = 0;
  /// Why device_count() is 0, in one line a user can act on ("no CUDA driver is installed
  /// (cudaErrorInsufficientDriver)"); empty when devices are available.
  virtual std::string unavailable_reason() const { return {}; }
  /// The device index current on this thread (what index -1 means).
  virtual int16_t current_device() const { return 0; }
  /// Makes index current on this thread.
  virtual void set_current_device(int16_t index) const {}
  /// The native handle of the current stream of device index on this thread (a cudaStream_t
  /// for CUDA), or nullptr for the device's default stream / devices without streams.
  virtual void* current_stream(int16_t index) const { return nullptr; }
  /// Blocks until all work queued on device index (-1: the current one) has finished.
  virtual void synchronize(int16_t index) const {}
  /// Page-locked host memory for fast, asynchronous copies to this device type; nullptr if
  /// the device has none (DataLoader's pin_memory then falls back to ordinary memory).
  virtual Allocator* pinned_host_allocator() const { return nullptr; }
  /// Key/value lines for `loom info` (runtime and library versions, compiled architectures,
  /// one line per device, warnings such as a driver older than the runtime).
  virtual std::vector<std::pair<std::string, std::string>> info() const { return {}; }

  // Streams, events, memory (appended for the CUDA plugin's public API, loom/cuda/cuda.h).
  // Handles are the native ones (cudaStream_t, cudaEvent_t); the defaults describe a device
  // without streams: creation returns nullptr, waits return at once, queries say "done".

  /// A new stream on device index (-1: current); destroy it with destroy_stream.
  virtual void* create_stream(int16_t index) const { return nullptr; }
  /// Waits for the work queued on stream, then destroys it (it must not be current anywhere).
  virtual void destroy_stream(int16_t index, void* stream) const {}
  /// Makes stream (nullptr: the default stream) current for device index on this thread.
  virtual void set_current_stream(int16_t index, void* stream) const {}
  /// Blocks until the work queued on stream has finished.
  virtual void synchronize_stream(void* stream) const {}
  /// True if all work queued on stream has finished.
  virtual bool query_stream(void* stream) const { return true; }
  /// A new event on device index (-1: current); timing enables elapsed_ms. Destroy it with
  /// destroy_event.
  virtual void* create_event(int16_t index, bool timing) const { return nullptr; }
  /// Destroys an event from create_event.
  virtual void destroy_event(void* event) const {}
  /// Records event on stream (the work queued so far).
  virtual void record_event(void* event, void* stream) const {}
  /// Makes future work on stream wait for event (without blocking the host).
  virtual void wait_event(void* stream, void* event) const {}
  /// Blocks until event has completed.
  virtual void synchronize_event(void* event) const {}
  /// True if event has completed (or was never recorded).
  virtual bool query_event(void* event) const { return true; }
  /// Milliseconds between two completed timing events.
  virtual double event_elapsed_ms(void* start, void* end) const { return 0.0; }
  /// True if ptr lies in page-locked host memory that this device copies from asynchronously.
  virtual bool is_pinned(const void* ptr) const { return false; }
  /// The allocator statistics of one device (index -1: current); the registered allocator's
  /// stats() sums every device.
  virtual AllocatorStats memory_stats(int16_t index) const { return {}; }
  /// memory_stats as a table (PyTorch's torch.cuda.memory_summary(device)).
  virtual std::string memory_summary(int16_t index) const { return {}; }
  /// Marks the device block holding ptr as used by stream too: once freed it is not handed out
  /// again before the work queued on stream so far has finished (PyTorch's
  /// Tensor.record_stream). Needed only for memory used on a stream other than the one it
  /// was allocated on.
  virtual void record_stream(const void* ptr, void* stream) const {}
};

/// Registers the hooks of a device type (the newest registration wins; destroying the handle
/// restores the previous one). The hooks object must outlive the handle.
RegistrationHandle register_device_hooks(DeviceType type, DeviceHooks* hooks);
/// The hooks of a device type, or nullptr if its plugin registered none (or is not loaded).
DeviceHooks* find_device_hooks(DeviceType type);

}  // namespace loom
