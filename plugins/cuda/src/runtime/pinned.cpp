// Pinned (page-locked) host memory: cudaHostAlloc blocks, cached by power-of-two size class.
//
// Note [Pinned blocks and asynchronous copies]: a copy from pinned memory returns before the
// DMA engine has read the block, so a block freed right after such a copy must not be handed
// out again until the copy is done. The copy code calls record_pinned_use(ptr, stream) after
// every asynchronous copy; the block then carries an event per use, and a freed block is
// reused (or returned to the driver) only once all its events have completed. Allocation
// never blocks on them: a block still in flight is skipped and a new one is allocated.
#include <map>
#include <mutex>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "runtime/allocator.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

struct PinnedBlock {
  void* ptr = nullptr;
  size_t size = 0;
  bool in_use = false;
  std::vector<cudaEvent_t> events;  // uses by asynchronous copies not yet known complete
};

size_t size_class(size_t n) {
  size_t s = 512;
  while (s < n) s <<= 1;
  return s;
}

// True once every recorded use has completed (drops the completed events).
bool idle(PinnedBlock& b) {
  for (size_t i = 0; i < b.events.size();) {
    const cudaError_t q = cudaEventQuery(b.events[i]);
    if (q == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    (void)cudaEventDestroy(b.events[i]);
    b.events[i] = b.events.back();
    b.events.pop_back();
  }
  return true;
}

class PinnedAllocator final : public Allocator {
 public:
  using Allocator::allocate;

  DataPtr allocate(size_t nbytes, int16_t /*device_index*/) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, kCPU);
    check_available("pinned host allocator");
    const size_t size = size_class(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    auto& bucket = free_[size];
    for (size_t i = 0; i < bucket.size(); ++i) {
      PinnedBlock* b = bucket[i];
      if (!idle(*b)) continue;
      bucket[i] = bucket.back();
      bucket.pop_back();
      b->in_use = true;
      counters_.on_alloc(static_cast<int64_t>(size), /*from_cache=*/true);
      return DataPtr(b->ptr, b, &PinnedAllocator::release, kCPU);
    }
    void* p = nullptr;
    // Portable: pinned for every device's context, not only the current one.
    cudaError_t e = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      release_idle();
      e = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    }
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      const AllocatorStats s = counters_.snapshot();
      LOOM_THROW(Error, "pinned host allocator: out of page-locked host memory allocating ", nbytes,
                 " bytes (", s.allocated_bytes, " bytes allocated, ", s.reserved_bytes,
                 " bytes reserved by Loom)");
    }
    if (e != cudaSuccess) {
      throw_cuda_error(e, "pinned host allocator", -1, "cudaHostAlloc", __FILE__, __LINE__);
    }
    auto* b = new PinnedBlock{p, size, true, {}};
    blocks_.emplace(reinterpret_cast<uintptr_t>(p), b);
    counters_.on_reserve(static_cast<int64_t>(size));
    counters_.on_alloc(static_cast<int64_t>(size), /*from_cache=*/false);
    return DataPtr(p, b, &PinnedAllocator::release, kCPU);
  }

  DeviceType device_type() const override { return DeviceType::cpu(); }
  std::string_view name() const override { return "cuda-pinned"; }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  void reset_peak_stats() override { counters_.reset_peaks(); }
  void empty_cache() override {
    std::lock_guard<std::mutex> lock(mu_);
    release_idle();
  }

  bool contains(const void* ptr) {
    const auto addr = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mu_);
    const PinnedBlock* b = find(addr);
    return b != nullptr && b->in_use;
  }

  void record_use(const void* ptr, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mu_);
    PinnedBlock* b = find(reinterpret_cast<uintptr_t>(ptr));
    if (b == nullptr) return;
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess &&
        cudaEventRecord(e, stream) == cudaSuccess) {
      b->events.push_back(e);
      return;
    }
    (void)cudaGetLastError();
    if (e) (void)cudaEventDestroy(e);
    // Cannot track this use: wait for it now rather than risk reusing the block early.
    (void)cudaStreamSynchronize(stream);
    (void)cudaGetLastError();
  }

 private:
  // The block containing addr, or nullptr (with mu_ held).
  PinnedBlock* find(uintptr_t addr) {
    auto it = blocks_.upper_bound(addr);
    if (it == blocks_.begin()) return nullptr;
    PinnedBlock* b = std::prev(it)->second;
    return addr < reinterpret_cast<uintptr_t>(b->ptr) + b->size ? b : nullptr;
  }

  // Returns idle cached blocks to the driver (with mu_ held).
  void release_idle() {
    for (auto& [size, bucket] : free_) {
      for (size_t i = 0; i < bucket.size();) {
        PinnedBlock* b = bucket[i];
        if (!idle(*b)) {
          ++i;
          continue;
        }
        (void)cudaFreeHost(b->ptr);
        counters_.on_reserve(-static_cast<int64_t>(b->size));
        blocks_.erase(reinterpret_cast<uintptr_t>(b->ptr));
        delete b;
        bucket[i] = bucket.back();
        bucket.pop_back();
      }
    }
  }

  static void release(void* ctx, void* /*data*/);

  std::mutex mu_;
  std::map<size_t, std::vector<PinnedBlock*>> free_;  // idle or in-flight, by size class
  std::map<uintptr_t, PinnedBlock*> blocks_;          // every block, by address
  AllocatorCounters counters_;
};

// Leaked: a pinned batch freed during process exit must still find its allocator.
PinnedAllocator& instance() {
  static PinnedAllocator* a = new PinnedAllocator();
  return *a;
}

void PinnedAllocator::release(void* ctx, void* /*data*/) {
  auto* b = static_cast<PinnedBlock*>(ctx);
  PinnedAllocator& a = instance();
  std::lock_guard<std::mutex> lock(a.mu_);
  b->in_use = false;
  a.counters_.on_free(static_cast<int64_t>(b->size));
  a.free_[b->size].push_back(b);
}

}  // namespace

Allocator& pinned_allocator() { return instance(); }

void record_pinned_use(const void* ptr, cudaStream_t stream) {
  if (ptr != nullptr && device_count() > 0) instance().record_use(ptr, stream);
}

void empty_pinned_cache() {
  if (device_count() > 0) instance().empty_cache();
}

bool is_pinned(const void* ptr) {
  if (ptr == nullptr || device_count() == 0) return false;
  if (instance().contains(ptr)) return true;
  // Memory pinned by someone else (cudaHostRegister, another library's cudaHostAlloc).
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

}  // namespace loom::cuda
