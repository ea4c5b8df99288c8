// The CPU allocator: 64-byte aligned memory, with a cache for large blocks.
//
// Why a cache: a fresh large block from the system is mmap'ed and every page
// faults on first touch, so an op writing into new memory runs page-fault
// bound (about 4x slower here than writing into reused memory; libtorch 1.13
// has no such cache). Blocks of at least kLargeBlock bytes are rounded up to a
// size class and kept on free lists per class after their tensor dies, up to
// a cap (LOOM_CPU_CACHE_LIMIT_MB, default 2048); empty_cache() returns them.
//
// Note [Small-block cache]
// Blocks of up to kSmallMax bytes (scalars, shapes, optimizer state of small parameters)
// are kept per thread, kPerClass per 64-byte size class, so the common tiny tensor costs
// no malloc/free and no lock. A block freed on another thread goes to that thread's
// cache. Each thread's blocks return to the system when it exits; empty_cache() empties
// the calling thread's cache. Cached small blocks count as reserved, not allocated. The
// request counts of small blocks are kept per thread too (owner-written relaxed atomics, no
// locked instruction) and summed by stats(); only the byte counts, which have peaks, are
// shared atomics.

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
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

constexpr size_t kSmallMax = 4096;
constexpr size_t kSmallClasses = kSmallMax / kAlignment;
constexpr int kPerClass = 16;

/// Counters of the CPU allocator (set once; see the_cpu_allocator()).
AllocatorCounters* g_counters = nullptr;

/// This thread's small blocks per size class (Note [Small-block cache]).
struct ThreadCache {
  void* blocks[kSmallClasses][kPerClass];
  int count[kSmallClasses] = {};
  /// Request counts of small blocks on this thread (written only by it).
  std::atomic<int64_t> allocs{0}, frees{0}, hits{0};
  ThreadCache();
  ~ThreadCache();
  static void bump(std::atomic<int64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

/// Every live thread's cache, for stats(); leaked (threads may outlive static destruction).
std::mutex& registry_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::vector<ThreadCache*>& registry() {
  static auto* r = new std::vector<ThreadCache*>();
  return *r;
}
// The cache is reached through a plain pointer (Note [Initial-exec TLS] in
// dispatcher/src/dispatch_key.cpp: no __tls_get_addr, no init guard per allocation); the
// owner, which frees it at thread exit, is touched only on the thread's first allocation.
__attribute__((tls_model("initial-exec"))) thread_local ThreadCache* t_cache = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local bool t_cache_dead = false;
thread_local std::unique_ptr<ThreadCache> t_cache_owner;

// This thread's cache, made on first use; nullptr once the thread is exiting.
ThreadCache* thread_cache() {
  if (ThreadCache* c = t_cache) return c;
  if (t_cache_dead) return nullptr;
  t_cache_owner = std::make_unique<ThreadCache>();
  t_cache = t_cache_owner.get();
  return t_cache;
}

ThreadCache::ThreadCache() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back(this);
}

ThreadCache::~ThreadCache() {
  t_cache = nullptr;
  t_cache_dead = true;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto& r = registry();
    r.erase(std::find(r.begin(), r.end(), this));
    if (g_counters) g_counters->add_counts(allocs.load(), frees.load(), hits.load());
  }
  for (size_t k = 0; k < kSmallClasses; ++k) {
    for (int i = 0; i < count[k]; ++i) std::free(blocks[k][i]);
    if (g_counters && count[k] > 0) {
      g_counters->on_reserve(-static_cast<int64_t>((k + 1) * kAlignment) * count[k]);
    }
    count[k] = 0;
  }
}

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
    ThreadCache* cache = nbytes <= kSmallMax ? thread_cache() : nullptr;
    if (cache != nullptr) {
      const size_t size = round_up(nbytes, kAlignment);
      ThreadCache& c = *cache;
      const size_t k = size / kAlignment - 1;
      void* p = nullptr;
      const bool hit = c.count[k] > 0;
      if (hit) {
        p = c.blocks[k][--c.count[k]];
      } else {
        p = std::aligned_alloc(kAlignment, size);
        if (!p) throw_oom(nbytes);
        counters_.on_reserve(static_cast<int64_t>(size));
      }
      counters_.on_allocated_bytes(static_cast<int64_t>(size));
      ThreadCache::bump(c.allocs);
      if (hit) ThreadCache::bump(c.hits);
      return DataPtr(p, reinterpret_cast<void*>(size | 1), &CPUCachingAllocator::free_small_sized,
                     Device());
    }
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
  AllocatorStats stats() const override {
    AllocatorStats s = counters_.snapshot();
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (const ThreadCache* c : registry()) {
      s.num_allocs += c->allocs.load(std::memory_order_relaxed);
      s.num_frees += c->frees.load(std::memory_order_relaxed);
      s.num_cache_hits += c->hits.load(std::memory_order_relaxed);
    }
    s.live_blocks = s.num_allocs - s.num_frees;
    return s;
  }
  void reset_peak_stats() override { counters_.reset_peaks(); }
  void empty_cache() override { release_cache(); }
  /// The counters (the thread caches report to them).
  AllocatorCounters& counters() { return counters_; }

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
    if (t_cache != nullptr) {
      ThreadCache& c = *t_cache;
      for (size_t k = 0; k < kSmallClasses; ++k) {
        for (int i = 0; i < c.count[k]; ++i) std::free(c.blocks[k][i]);
        counters_.on_reserve(-static_cast<int64_t>((k + 1) * kAlignment) * c.count[k]);
        c.count[k] = 0;
      }
    }
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
  static auto* a = [] {
    auto* x = new CPUCachingAllocator();
    g_counters = &x->counters();
    return x;
  }();
  return *a;
}

void CPUCachingAllocator::free_small_sized(void* ctx, void* data) {
  const auto size = static_cast<int64_t>(reinterpret_cast<uintptr_t>(ctx) & ~uintptr_t{1});
  auto& self = the_cpu_allocator();
  if (t_cache == nullptr) {  // this thread's cache is gone (or never was): count it globally
    self.counters_.on_free(size);
    std::free(data);
    self.counters_.on_reserve(-size);
    return;
  }
  ThreadCache& c = *t_cache;
  self.counters_.on_allocated_bytes(-size);
  ThreadCache::bump(c.frees);
  if (size <= static_cast<int64_t>(kSmallMax)) {
    const size_t k = static_cast<size_t>(size) / kAlignment - 1;
    if (c.count[k] < kPerClass) {
      c.blocks[k][c.count[k]++] = data;
      return;
    }
  }
  std::free(data);
  self.counters_.on_reserve(-size);
}

}  // namespace

Allocator& cpu_allocator() { return the_cpu_allocator(); }

}  // namespace loom
