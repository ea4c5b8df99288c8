#pragma once
/// @file
/// The CUDA caching allocator (Note [CUDA caching allocator] in allocator.cpp) and the pinned
/// host allocator (pinned.cpp).

#include <cuda_runtime_api.h>

#include <string>

#include "loom/core/allocator.h"

namespace loom::cuda {

/// Device memory for "cuda" tensors: cached, size-rounded, stream-ordered blocks.
class CachingAllocator final : public Allocator {
 public:
  using Allocator::allocate;
  /// Allocates nbytes on device device_index (-1: current), stream-ordered on that device's
  /// current stream. Throws DeviceError without a device, Error on out of memory.
  DataPtr allocate(size_t nbytes, int16_t device_index) override;
  DeviceType device_type() const override;
  std::string_view name() const override { return "cuda-caching"; }
  /// Summed over devices.
  AllocatorStats stats() const override;
  void reset_peak_stats() override;
  /// Returns the cached (unused) blocks of every device to the driver.
  void empty_cache() override;
  /// cudaMemcpy device to device (synchronous with respect to the host).
  void copy_data(void* dst, const void* src, size_t n) const override;

  /// The statistics of one device.
  AllocatorStats device_stats(int device) const;
  /// PyTorch's memory_summary(device): the device's statistics as a table.
  std::string device_summary(int device) const;
  /// Marks the block holding ptr as used by stream too: when it is freed it is not reused
  /// until the work queued on stream so far has finished (PyTorch's record_stream).
  void record_stream(const void* ptr, cudaStream_t stream);
};

/// The plugin's caching allocator (a static of the plugin).
CachingAllocator& caching_allocator();

/// Page-locked host memory (cudaHostAlloc), cached by power-of-two size class. Its blocks are
/// CPU memory (the DataPtr's device is cpu) that the copy code recognises (is_pinned).
Allocator& pinned_allocator();

/// After an asynchronous copy from or to pinned memory at ptr: the block holding ptr is not
/// handed out again, once freed, before the work queued on stream so far has finished.
/// A pointer outside pinned memory is ignored.
void record_pinned_use(const void* ptr, cudaStream_t stream);

/// Frees the pinned blocks that are cached and idle.
void empty_pinned_cache();

}  // namespace loom::cuda
