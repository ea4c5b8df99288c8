#pragma once
/// @file
/// The allocator interface (one per device type), its statistics, and the
/// per-device-type allocator registry.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "loom/core/device.h"
#include "loom/core/registration.h"

namespace loom {

class Allocator;

/// Owning pointer to device memory, released through its allocator (or a custom deleter).
class DataPtr {
 public:
  /// Signature of a deleter: receives the context and the data pointer.
  using Deleter = void (*)(void* ctx, void* data);
  /// A null pointer.
  DataPtr() = default;
  /// Takes ownership of data; deleter(ctx, data) runs on destruction (unless deleter is null).
  DataPtr(void* data, void* ctx, Deleter deleter, Device device)
      : data_(data), ctx_(ctx), deleter_(deleter), device_(device) {}
  /// Takes ownership from o (which becomes null).
  DataPtr(DataPtr&& o) noexcept { swap(o); }
  /// Frees the current block and takes ownership from o.
  DataPtr& operator=(DataPtr&& o) noexcept {
    DataPtr tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  ~DataPtr() {
    if (deleter_) deleter_(ctx_, data_);
  }
  /// The raw pointer.
  void* get() const { return data_; }
  /// The device the memory lives on.
  Device device() const { return device_; }
  /// The deleter's context: whatever the allocator (or the adopter of foreign memory)
  /// needs to free the block; opaque to everyone else.
  void* context() const { return ctx_; }

 private:
  void swap(DataPtr& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(ctx_, o.ctx_);
    std::swap(deleter_, o.deleter_);
    std::swap(device_, o.device_);
  }
  void* data_ = nullptr;
  void* ctx_ = nullptr;
  Deleter deleter_ = nullptr;
  Device device_{};
};

/// A snapshot of an allocator's statistics. "Allocated" counts bytes handed to
/// tensors; "reserved" also counts blocks kept in a cache for reuse.
struct AllocatorStats {
  int64_t allocated_bytes = 0;       ///< bytes currently handed out
  int64_t reserved_bytes = 0;        ///< bytes obtained from the system (allocated + cached)
  int64_t peak_allocated_bytes = 0;  ///< high-water mark of allocated_bytes
  int64_t peak_reserved_bytes = 0;   ///< high-water mark of reserved_bytes
  int64_t num_allocs = 0;            ///< allocation requests served
  int64_t num_frees = 0;             ///< blocks returned by tensors
  int64_t num_cache_hits = 0;        ///< requests served from the cache
  int64_t live_blocks = 0;           ///< blocks currently handed out
};

/// Thread-safe counters an allocator can embed to produce AllocatorStats.
class AllocatorCounters {
 public:
  /// Records that nbytes were handed out (from_cache: without a system allocation).
  void on_alloc(int64_t nbytes, bool from_cache);
  /// Records that nbytes came back from a tensor.
  void on_free(int64_t nbytes);
  /// Records that nbytes were obtained from (positive) or returned to (negative) the system.
  void on_reserve(int64_t nbytes);
  /// Only the byte half of on_alloc / on_free (positive: handed out; negative: back), for an
  /// allocator that counts requests elsewhere (per thread) and reports them with add_counts.
  void on_allocated_bytes(int64_t nbytes);
  /// Adds request counts kept elsewhere.
  void add_counts(int64_t allocs, int64_t frees, int64_t hits);
  /// The current values.
  AllocatorStats snapshot() const;
  /// Sets the peaks to the current values.
  void reset_peaks();

 private:
  std::atomic<int64_t> allocated_{0}, reserved_{0}, peak_allocated_{0}, peak_reserved_{0};
  std::atomic<int64_t> allocs_{0}, frees_{0}, hits_{0};
};

/// Memory for one device type. Implementations must be thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Allocates nbytes on device `device_index` of this allocator's type (0 is allowed and
  /// returns a null DataPtr that is still valid to free). Throws loom::Error (out of memory)
  /// with the size and the allocator's summary. Subclasses override this one (and add
  /// `using Allocator::allocate;` to keep the short form visible).
  virtual DataPtr allocate(size_t nbytes, int16_t device_index) = 0;
  /// Allocates nbytes on device 0 of this type (the CPU has only one).
  DataPtr allocate(size_t nbytes) { return allocate(nbytes, 0); }
  /// The device type this allocator serves.
  virtual DeviceType device_type() const = 0;
  /// A short name ("cpu-caching").
  virtual std::string_view name() const = 0;
  /// Current statistics.
  virtual AllocatorStats stats() const = 0;
  /// Resets the peak statistics to the current values.
  virtual void reset_peak_stats() {}
  /// Returns cached, unused blocks to the system.
  virtual void empty_cache() {}
  /// Copies n bytes between two blocks of this allocator (used when a storage grows);
  /// memcpy by default, device allocators override it.
  virtual void copy_data(void* dst, const void* src, size_t n) const;
  /// A human-readable table of stats() (PyTorch's memory_summary()).
  std::string summary() const;
};

/// Registers the allocator for a device type (the newest registration wins; destroying
/// the handle restores the previous one). The allocator must outlive the handle.
RegistrationHandle register_allocator(DeviceType type, Allocator* allocator);
/// The allocator for a device type; throws DeviceError if none is registered.
Allocator& get_allocator(DeviceType type);
/// The allocator for a device type, or nullptr.
Allocator* find_allocator(DeviceType type);
/// The built-in CPU allocator (64-byte aligned, caches large blocks).
Allocator& cpu_allocator();

}  // namespace loom
