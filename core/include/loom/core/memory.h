#pragma once
/// @file
/// Memory diagnostics per device (PyTorch's torch.cuda.memory_allocated, max_memory_allocated,
/// reset_peak_memory_stats, memory_summary and _record_memory_history / _snapshot), for every
/// device type whose allocator is registered: the CPU's, CUDA's, a plugin's.
///
/// The figures come from the device type's allocator (loom/core/allocator.h); the history
/// records every tensor storage allocated while it is on, with the op that allocated it (the
/// innermost op running on that thread) and optionally a stack, until it is freed.
///
/// @code
///   loom::memory::reset_peak_stats(Device::cpu());
///   train_step();
///   std::cout << loom::memory::max_allocated(Device::cpu()) << " bytes at peak\n";
///   loom::memory::record_history(true);
///   auto y = model.forward(x);
///   for (const auto& b : loom::memory::snapshot()) std::cout << b.op << " " << b.bytes << "\n";
/// @endcode

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/core/allocator.h"
#include "loom/core/device.h"

namespace loom::memory {

/// The allocator statistics of device's type (throws DeviceError if none is registered).
AllocatorStats stats(Device device);
/// Bytes handed out to tensors on device's type now.
int64_t allocated(Device device);
/// The most bytes handed out at once since the start or the last reset_peak_stats.
int64_t max_allocated(Device device);
/// Bytes the allocator holds from the system (handed out plus cached).
int64_t reserved(Device device);
/// The most bytes held at once since the start or the last reset_peak_stats.
int64_t max_reserved(Device device);
/// Starts the peaks afresh from the current figures.
void reset_peak_stats(Device device);
/// A readable summary of the allocator's figures (what an out-of-memory error shows).
std::string summary(Device device);

/// One live block of a snapshot().
struct Block {
  uintptr_t address = 0;            ///< where it starts
  int64_t bytes = 0;                ///< its size
  Device device;                    ///< where it lives
  std::string op;                   ///< the op running on the allocating thread ("" outside ops)
  int64_t time_ns = 0;              ///< when (steady clock)
  std::vector<std::string> stack;   ///< the allocating call stack, if asked for
};

/// Starts (or stops) recording every tensor storage allocated from now on, with the op that
/// allocated it and, when stack_frames > 0, that many frames of its call stack (costly: for
/// hunting a leak, not for timing). Stopping forgets what was recorded.
void record_history(bool enabled, int stack_frames = 0);
/// The blocks allocated while the history was on and not freed since, oldest first.
std::vector<Block> snapshot();

namespace detail {
/// Bits of who wants to hear of allocations: 1 the profiler's memory events, 2 the history.
extern std::atomic<int> tracking_bits;
/// True when a storage must report its allocation and release (one relaxed load).
inline bool tracking() { return tracking_bits.load(std::memory_order_relaxed) != 0; }
/// A storage (key) got bytes on device.
void on_alloc(const void* key, Device device, size_t bytes, const void* address);
/// The storage released them.
void on_free(const void* key, Device device, size_t bytes);
}  // namespace detail

}  // namespace loom::memory
