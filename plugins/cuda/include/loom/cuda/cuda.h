#pragma once
/// @file
/// The public C++ API of the CUDA backend (PyTorch's torch.cuda): availability, devices,
/// streams, events, synchronization, memory statistics.
///
/// Header-only over loom::DeviceHooks (Note [Device hooks] in loom/core/device_hooks.h), so a
/// program or plugin using it links against libloom_core only, never against the CUDA plugin
/// or the CUDA toolkit: every call goes through the hooks the plugin registered when it was
/// loaded (`PluginLoader::instance().load("cuda")`). Without the plugin, or without a GPU,
/// is_available() is false and unavailable_reason() says why; the calls that need a device
/// throw loom::DeviceError with that reason. Stream and event handles are the native ones
/// (cast handle() to cudaStream_t / cudaEvent_t to pass them to CUDA code).
///
/// Streams and events created here must be destroyed before the plugin is unloaded.
///
/// Do not include this header in the plugin's own sources (plugins/cuda/src): they use the
/// internal runtime/context.h, whose functions share these names.

#include <cstdint>
#include <memory>
#include <string>

#include "loom/core/allocator.h"
#include "loom/core/device.h"
#include "loom/core/device_hooks.h"
#include "loom/core/error.h"
#include "loom/core/tensor.h"

namespace loom::cuda {

/// The hooks of the "cuda" device type, or nullptr when the CUDA plugin is not loaded.
inline DeviceHooks* hooks() {
  if (!DeviceType::is_registered("cuda")) return nullptr;
  return find_device_hooks(DeviceType::from_name("cuda"));
}

/// The hooks, or a DeviceError naming op when the plugin is not loaded.
inline DeviceHooks& checked_hooks(const char* op) {
  DeviceHooks* h = hooks();
  LOOM_CHECK_T(DeviceError, h != nullptr, op,
               ": the CUDA plugin is not loaded (PluginLoader::instance().load(\"cuda\"))");
  return *h;
}

/// Number of usable CUDA devices (0 without the plugin, a driver or a GPU).
inline int device_count() {
  DeviceHooks* h = hooks();
  return h ? h->device_count() : 0;
}

/// True if at least one CUDA device can be used.
inline bool is_available() { return device_count() > 0; }

/// Why is_available() is false ("" when it is true).
inline std::string unavailable_reason() {
  DeviceHooks* h = hooks();
  if (h == nullptr) return "the CUDA plugin is not loaded";
  return h->unavailable_reason();
}

/// The current CUDA device of this thread.
inline int current_device() { return checked_hooks("current_device").current_device(); }

/// Makes device current on this thread.
inline void set_device(int device) {
  checked_hooks("set_device").set_current_device(static_cast<int16_t>(device));
}

/// Blocks until all work queued on device (-1: the current one) has finished.
inline void synchronize(int device = -1) {
  checked_hooks("synchronize").synchronize(static_cast<int16_t>(device));
}

/// Makes a device current for a scope and restores the previous one.
class DeviceGuard {
 public:
  /// Switches to device (-1: stays on the current one).
  explicit DeviceGuard(int device) {
    if (device < 0) return;
    previous_ = current_device();
    if (previous_ != device) set_device(device);
  }
  /// Switches back.
  ~DeviceGuard() {
    if (previous_ >= 0) {
      if (DeviceHooks* h = hooks()) h->set_current_device(static_cast<int16_t>(previous_));
    }
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// A CUDA stream: a queue of work that runs in order. Copies share the stream; one made by
/// create() is destroyed (after its work has finished) with its last copy.
class Stream {
 public:
  /// The default stream (a null handle) of the current device.
  Stream() = default;
  /// A new stream on device (-1: current).
  static Stream create(int device = -1) {
    DeviceHooks& h = checked_hooks("Stream.create");
    const int16_t d = static_cast<int16_t>(device < 0 ? h.current_device() : device);
    Stream s;
    s.device_ = d;
    s.handle_ = h.create_stream(d);
    DeviceHooks* hp = &h;
    s.owner_ = std::shared_ptr<void>(s.handle_, [hp, d](void* p) { hp->destroy_stream(d, p); });
    return s;
  }
  /// A non-owning view of an existing native stream of device.
  static Stream wrap(void* handle, int device) {
    Stream s;
    s.handle_ = handle;
    s.device_ = device;
    return s;
  }
  /// The native handle (a cudaStream_t; null for the default stream).
  void* handle() const { return handle_; }
  /// The device index (-1: the current device, for the default stream).
  int device() const { return device_; }
  /// Blocks until the work queued so far has finished.
  void synchronize() const { checked_hooks("Stream.synchronize").synchronize_stream(handle_); }
  /// True if the work queued so far has finished.
  bool query() const { return checked_hooks("Stream.query").query_stream(handle_); }
  /// Same native stream.
  friend bool operator==(const Stream& a, const Stream& b) { return a.handle_ == b.handle_; }

 private:
  std::shared_ptr<void> owner_;
  void* handle_ = nullptr;
  int device_ = -1;
};

/// This thread's current stream of device (-1: current); kernels and copies queue on it.
inline Stream current_stream(int device = -1) {
  DeviceHooks& h = checked_hooks("current_stream");
  const int16_t d = static_cast<int16_t>(device < 0 ? h.current_device() : device);
  return Stream::wrap(h.current_stream(d), d);
}

/// Makes s the current stream of its device on this thread.
inline void set_current_stream(const Stream& s) {
  DeviceHooks& h = checked_hooks("set_current_stream");
  h.set_current_stream(static_cast<int16_t>(s.device() < 0 ? h.current_device() : s.device()),
                       s.handle());
}

/// Makes a stream current for a scope (and its device), restoring both afterwards.
class StreamGuard {
 public:
  /// Switches to s.
  explicit StreamGuard(const Stream& s)
      : device_guard_(s.device()), previous_(current_stream(s.device())) {
    set_current_stream(s);
  }
  /// Switches back.
  ~StreamGuard() {
    if (DeviceHooks* h = hooks()) {
      h->set_current_stream(static_cast<int16_t>(previous_.device()), previous_.handle());
    }
  }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  DeviceGuard device_guard_;
  Stream previous_;
};

/// A CUDA event: a marker in a stream, to wait for or to time. Copies share the event.
class Event {
 public:
  /// A new event on device (-1: current); timing enables elapsed_time.
  explicit Event(bool timing = false, int device = -1) {
    DeviceHooks& h = checked_hooks("Event");
    handle_ = h.create_event(static_cast<int16_t>(device), timing);
    DeviceHooks* hp = &h;
    owner_ = std::shared_ptr<void>(handle_, [hp](void* p) { hp->destroy_event(p); });
  }
  /// Marks the work queued on s so far (default: the current stream).
  void record(const Stream& s = current_stream()) {
    checked_hooks("Event.record").record_event(handle_, s.handle());
  }
  /// Makes future work on s wait for this event, without blocking the host.
  void wait(const Stream& s = current_stream()) const {
    checked_hooks("Event.wait").wait_event(s.handle(), handle_);
  }
  /// Blocks until the event has completed.
  void synchronize() const { checked_hooks("Event.synchronize").synchronize_event(handle_); }
  /// True if the event has completed (or was never recorded).
  bool query() const { return checked_hooks("Event.query").query_event(handle_); }
  /// Milliseconds from this event to end (both recorded, completed and made with timing).
  double elapsed_time(const Event& end) const {
    return checked_hooks("Event.elapsed_time").event_elapsed_ms(handle_, end.handle_);
  }
  /// The native handle (a cudaEvent_t).
  void* handle() const { return handle_; }

 private:
  std::shared_ptr<void> owner_;
  void* handle_ = nullptr;
};

/// The caching allocator's statistics for device (-1: current).
inline AllocatorStats memory_stats(int device = -1) {
  return checked_hooks("memory_stats").memory_stats(static_cast<int16_t>(device));
}
/// Bytes currently held by tensors on device.
inline int64_t memory_allocated(int device = -1) { return memory_stats(device).allocated_bytes; }
/// Bytes reserved from the driver (held by tensors or cached) on device.
inline int64_t memory_reserved(int device = -1) { return memory_stats(device).reserved_bytes; }
/// Peak of memory_allocated since the start or reset_peak_memory_stats().
inline int64_t max_memory_allocated(int device = -1) {
  return memory_stats(device).peak_allocated_bytes;
}
/// The statistics as a table (torch.cuda.memory_summary).
inline std::string memory_summary(int device = -1) {
  return checked_hooks("memory_summary").memory_summary(static_cast<int16_t>(device));
}
/// Returns the cached, unused blocks to the driver (torch.cuda.empty_cache).
inline void empty_cache() {
  checked_hooks("empty_cache");
  get_allocator(DeviceType::from_name("cuda")).empty_cache();
}
/// Resets the peak statistics of every device.
inline void reset_peak_memory_stats() {
  checked_hooks("reset_peak_memory_stats");
  get_allocator(DeviceType::from_name("cuda")).reset_peak_stats();
}

/// Marks t's memory as used by s (PyTorch's Tensor.record_stream): when t's storage is freed,
/// its block is not reused before the work queued on s so far has finished. Needed when a
/// tensor allocated on one stream is used by kernels queued on another.
inline void record_stream(const Tensor& t, const Stream& s) {
  if (t.defined() && t.numel() > 0) {
    checked_hooks("record_stream").record_stream(t.data_ptr(), s.handle());
  }
}

/// The device "cuda:index" (the CUDA plugin must be loaded).
inline Device device(int index = 0) {
  return Device(DeviceType::from_name("cuda"), static_cast<int16_t>(index));
}

}  // namespace loom::cuda
