// The CPU allocator: 64-byte aligned memory, with a cache for large blocks.
//
// Why a cache: a fresh large block from the system is mmap'ed and every page
// faults on first touch, so an op writing into new memory runs page-fault
// bound (about 4x slower here than writing into reused memory; libtorch 1.13
// has no such cache). Blocks of at least kLargeBlock bytes are rounded up to a
// size class and kept on free lists per class after their tensor dies, up to
// a cap (LOOM_CPU_CACHE_LIMIT_MB, default 2048); empty_cache() returns them.

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "loom/core/allocator.h"
#include "loom/core/error.h"

namespace loom {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kLargeBlock = size_t{1} << 20;  // 1 MiB
// Larger requests cannot succeed (no address space is this large), and refusing them up
// front keeps size_class() and round_up() from overflowing.
constexpr size_t kMaxRequest = size_t{1} << 62;

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// Size classes for large blocks: four steps per power of two, so at most 25% waste.
size_t size_class(size_t n) {
  size_t p = kLargeBlock;
  while (p * 2 <= n) p *= 2;
  const size_t step = p / 4;
  return round_up(n, step);
}

class CPUCachingAllocator final : public Allocator {
 public:
  CPUCachingAllocator() {
    if (const char* env = std::getenv("LOOM_CPU_CACHE_LIMIT_MB")) {
      cache_limit_ = static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20;
    }
  }
  ~CPUCachingAllocator() override { release_cache(); }

  using Allocator::allocate;

  DataPtr allocate(size_t nbytes, int16_t) override {
    if (nbytes == 0) {
      counters_.on_alloc(0, false);
      return DataPtr(nullptr, this, &CPUCachingAllocator::free_small, Device());
    }
    if (nbytes > kMaxRequest) throw_oom(nbytes);
    if (nbytes < kLargeBlock) {
      const size_t size = round_up(nbytes, kAlignment);
      void* p = std::aligned_alloc(kAlignment, size);
      if (!p) throw_oom(nbytes);
      counters_.on_reserve(static_cast<int64_t>(size));
      counters_.on_alloc(static_cast<int64_t>(size), false);
      // The size travels in the context pointer's place: small blocks have no header.
      return DataPtr(p, reinterpret_cast<void*>(size | 1), &CPUCachingAllocator::free_small_sized,
                     Device());
    }
    const size_t size = size_class(nbytes);
    void* p = nullptr;
    bool hit = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= size;
        hit = true;
      }
    }
    if (!p) {
      p = std::aligned_alloc(kAlignment, size);
      if (!p) {
        release_cache();  // retry once with the cache emptied
        p = std::aligned_alloc(kAlignment, size);
      }
      if (!p) throw_oom(nbytes);
      counters_.on_reserve(static_cast<int64_t>(size));
    }
    counters_.on_alloc(static_cast<int64_t>(size), hit);
    auto* block = new LargeBlock{this, size};
    return DataPtr(p, block, &CPUCachingAllocator::free_large, Device());
  }

  DeviceType device_type() const override { return DeviceType::cpu(); }
  std::string_view name() const override { return "cpu-caching"; }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  void reset_peak_stats() override { counters_.reset_peaks(); }
  void empty_cache() override { release_cache(); }

 private:
  struct LargeBlock {
    CPUCachingAllocator* owner;
    size_t size;
  };

  [[noreturn]] void throw_oom(size_t nbytes) {
    LOOM_THROW(Error, "CPU out of memory: tried to allocate ", nbytes, " bytes\n", summary());
  }

  static void free_small(void* ctx, void* data) {
    static_cast<CPUCachingAllocator*>(ctx)->counters_.on_free(0);
  }
  static void free_small_sized(void* ctx, void* data);
  static void free_large(void* ctx, void* data) {
    auto* block = static_cast<LargeBlock*>(ctx);
    CPUCachingAllocator* self = block->owner;
    const size_t size = block->size;
    delete block;
    self->counters_.on_free(static_cast<int64_t>(size));
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      if (self->cached_bytes_ + size <= self->cache_limit_) {
        self->free_[size].push_back(data);
        self->cached_bytes_ += size;
        return;
      }
    }
    std::free(data);
    self->counters_.on_reserve(-static_cast<int64_t>(size));
  }

  void release_cache() {
    std::vector<std::pair<size_t, void*>> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [size, list] : free_) {
        for (void* p : list) blocks.emplace_back(size, p);
      }
      free_.clear();
      cached_bytes_ = 0;
    }
    for (auto& [size, p] : blocks) {
      std::free(p);
      counters_.on_reserve(-static_cast<int64_t>(size));
    }
  }

  AllocatorCounters counters_;
  std::mutex mu_;
  absl::flat_hash_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
  size_t cache_limit_ = size_t{2048} << 20;
};

CPUCachingAllocator& the_cpu_allocator() {
  // Leaked on purpose: tensors in static objects may die after any destructor would run.
  static auto* a = new CPUCachingAllocator();
  return *a;
}

void CPUCachingAllocator::free_small_sized(void* ctx, void* data) {
  const auto size = static_cast<int64_t>(reinterpret_cast<uintptr_t>(ctx) & ~uintptr_t{1});
  std::free(data);
  auto& self = the_cpu_allocator();
  self.counters_.on_free(size);
  self.counters_.on_reserve(-size);
}

}  // namespace

Allocator& cpu_allocator() { return the_cpu_allocator(); }

}  // namespace loom
