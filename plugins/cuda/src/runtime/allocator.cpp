// The CUDA caching allocator.
//
// Note [CUDA caching allocator]: cudaMalloc and cudaFree are slow (cudaFree synchronizes the
// device), so freed blocks are kept per device and handed out again, as PyTorch's
// CUDACachingAllocator does, in a simpler form:
// - sizes are rounded: below 1 MiB to a multiple of 512 B, from 1 MiB on to a multiple of
//   2 MiB, so that blocks of slightly different requests are interchangeable;
// - a block is never split; a cached block serves a request when it is the best fit (the
//   smallest one at least as large) and at most 25% larger, so a small tensor does not pin a
//   large block;
// - stream order: a block remembers the stream it was allocated on (the current stream of its
//   device at that moment) and, once freed, serves only requests on that same stream. Work on
//   one stream runs in order, so the next user's kernels start after the previous user's
//   finished, without any host synchronization. A block also used on other streams
//   (record_stream) is held back after its free until an event recorded on each of those
//   streams has completed;
// - out of memory: every idle cached block of the device is returned (cudaFree) and the
//   allocation retried once; if it still fails the error says what was asked, what the
//   device has and what Loom holds (PyTorch's wording), followed by the summary table.
// Rejected: splitting blocks and a 2 MiB small-block pool (less fragmentation, much more code,
// and what the Fashion-MNIST-sized workloads here never need); cudaMallocAsync pools (they
// would hide the statistics the issue asks for).
#include "runtime/allocator.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

constexpr size_t kMinBlockSize = 512;            // granularity of small blocks
constexpr size_t kSmallSize = size_t{1} << 20;   // requests below 1 MiB are "small"
constexpr size_t kLargeRound = size_t{2} << 20;  // large blocks are multiples of 2 MiB

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

size_t round_size(size_t n) {
  return n < kSmallSize ? round_up(n == 0 ? 1 : n, kMinBlockSize) : round_up(n, kLargeRound);
}

struct Block {
  int device = 0;
  size_t size = 0;
  void* ptr = nullptr;
  cudaStream_t stream = nullptr;            // the stream it was allocated on
  std::vector<cudaStream_t> other_streams;  // record_stream, cleared when freed
  std::vector<cudaEvent_t> pending;         // recorded at free on other_streams
};

// Free blocks ordered by (stream, size, address): lower_bound gives the best fit on a stream.
struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    const auto sa = reinterpret_cast<uintptr_t>(a->stream);
    const auto sb = reinterpret_cast<uintptr_t>(b->stream);
    if (sa != sb) return sa < sb;
    if (a->size != b->size) return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};

struct DeviceCache {
  std::mutex mu;
  std::set<Block*, BlockLess> free_blocks;  // idle, reusable on their stream
  std::vector<Block*> held_back;            // freed, waiting for other streams' events
  std::map<uintptr_t, Block*> active;       // handed out, by address (range lookups)
  AllocatorCounters counters;
};

std::string mib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}
std::string gib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

class Caches {
 public:
  /// The cache of device d (0 <= d < device_count()).
  DeviceCache& at(int d) {
    std::call_once(once_, [this] {
      caches_.resize(static_cast<size_t>(device_count()));
      for (auto& c : caches_) c = std::make_unique<DeviceCache>();
    });
    return *caches_.at(static_cast<size_t>(d));
  }
  int size() const { return device_count(); }

 private:
  std::once_flag once_;
  std::vector<std::unique_ptr<DeviceCache>> caches_;
};

// Leaked: a tensor freed during process exit must still find its cache.
Caches& caches() {
  static Caches* c = new Caches();
  return *c;
}

// Moves held-back blocks whose events have completed to the free set (with c.mu held).
void process_held_back(DeviceCache& c) {
  for (size_t i = 0; i < c.held_back.size();) {
    Block* b = c.held_back[i];
    bool done = true;
    for (cudaEvent_t e : b->pending) {
      const cudaError_t q = cudaEventQuery(e);
      if (q == cudaErrorNotReady) {
        (void)cudaGetLastError();
        done = false;
        break;
      }
    }
    if (!done) {
      ++i;
      continue;
    }
    for (cudaEvent_t e : b->pending) (void)cudaEventDestroy(e);
    b->pending.clear();
    c.free_blocks.insert(b);
    c.held_back[i] = c.held_back.back();
    c.held_back.pop_back();
  }
}

// Returns every idle block of device d to the driver (with c.mu held); waits for held-back
// blocks first. Returns the bytes released.
int64_t release_cached(DeviceCache& c, int d) {
  DeviceGuard guard(d);
  for (Block* b : c.held_back) {
    for (cudaEvent_t e : b->pending) {
      (void)cudaEventSynchronize(e);
      (void)cudaEventDestroy(e);
    }
    b->pending.clear();
    c.free_blocks.insert(b);
  }
  c.held_back.clear();
  int64_t released = 0;
  for (Block* b : c.free_blocks) {
    LOOM_CUDA_CHECK(cudaFree(b->ptr), "empty_cache");
    released += static_cast<int64_t>(b->size);
    c.counters.on_reserve(-static_cast<int64_t>(b->size));
    delete b;
  }
  c.free_blocks.clear();
  return released;
}

[[noreturn]] void throw_out_of_memory(DeviceCache& c, int d, size_t requested) {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
  const AllocatorStats s = c.counters.snapshot();
  LOOM_THROW(Error, "CUDA out of memory. Tried to allocate ", mib(static_cast<int64_t>(requested)),
             " (GPU ", d, "; ", gib(static_cast<int64_t>(total_bytes)), " total capacity; ",
             gib(s.allocated_bytes), " already allocated; ", mib(static_cast<int64_t>(free_bytes)),
             " free; ", gib(s.reserved_bytes),
             " reserved in total by Loom). Free tensors you no longer need, use smaller batches, "
             "or call empty_cache() if reserved memory is much larger than allocated memory.\n",
             caching_allocator().device_summary(d));
}

void release_block(void* ctx, void* /*data*/) {
  // A deleter must not throw: errors here (the runtime shutting down at exit) are dropped.
  auto* b = static_cast<Block*>(ctx);
  DeviceCache& c = caches().at(b->device);
  std::lock_guard<std::mutex> lock(c.mu);
  c.active.erase(reinterpret_cast<uintptr_t>(b->ptr));
  c.counters.on_free(static_cast<int64_t>(b->size));
  if (b->other_streams.empty()) {
    c.free_blocks.insert(b);
    return;
  }
  int previous = 0;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(b->device);
  for (cudaStream_t s : b->other_streams) {
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess &&
        cudaEventRecord(e, s) == cudaSuccess) {
      b->pending.push_back(e);
    } else {
      (void)cudaGetLastError();
      if (e) (void)cudaEventDestroy(e);
      (void)cudaDeviceSynchronize();  // cannot track the stream: wait for everything instead
    }
  }
  (void)cudaSetDevice(previous);
  b->other_streams.clear();
  c.held_back.push_back(b);
}

int checked_device(std::string_view op, int16_t index) {
  check_available(op);
  const int d = index < 0 ? current_device() : index;
  LOOM_CHECK_T(DeviceError, d < device_count(), op, ": invalid device cuda:", d, " (",
               device_count(), " CUDA device", device_count() == 1 ? " is" : "s are",
               " available)");
  return d;
}

}  // namespace

DataPtr CachingAllocator::allocate(size_t nbytes, int16_t device_index) {
  const int d = checked_device("CUDA caching allocator", device_index);
  const Device device(cuda::device_type(), static_cast<int16_t>(d));
  if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, device);
  const size_t size = round_size(nbytes);
  const cudaStream_t stream = current_stream(d);
  DeviceCache& c = caches().at(d);
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.held_back.empty()) process_held_back(c);

  Block key;
  key.stream = stream;
  key.size = size;
  auto it = c.free_blocks.lower_bound(&key);
  Block* block = nullptr;
  if (it != c.free_blocks.end() && (*it)->stream == stream && (*it)->size <= size + size / 4) {
    block = *it;
    c.free_blocks.erase(it);
    c.counters.on_alloc(static_cast<int64_t>(block->size), /*from_cache=*/true);
  } else {
    DeviceGuard guard(d);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      release_cached(c, d);
      e = cudaMalloc(&p, size);
      if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        throw_out_of_memory(c, d, nbytes);
      }
    }
    if (e != cudaSuccess) {
      throw_cuda_error(e, "CUDA caching allocator", d, "cudaMalloc", __FILE__, __LINE__);
    }
    block = new Block;
    block->device = d;
    block->size = size;
    block->ptr = p;
    block->stream = stream;
    c.counters.on_reserve(static_cast<int64_t>(size));
    c.counters.on_alloc(static_cast<int64_t>(size), /*from_cache=*/false);
  }
  c.active.emplace(reinterpret_cast<uintptr_t>(block->ptr), block);
  return DataPtr(block->ptr, block, &release_block, device);
}

DeviceType CachingAllocator::device_type() const { return cuda::device_type(); }

AllocatorStats CachingAllocator::stats() const {
  // Peaks are summed over devices: exact with one device, an upper bound with several.
  AllocatorStats total;
  for (int d = 0; d < caches().size(); ++d) {
    const AllocatorStats s = device_stats(d);
    total.allocated_bytes += s.allocated_bytes;
    total.reserved_bytes += s.reserved_bytes;
    total.peak_allocated_bytes += s.peak_allocated_bytes;
    total.peak_reserved_bytes += s.peak_reserved_bytes;
    total.num_allocs += s.num_allocs;
    total.num_frees += s.num_frees;
    total.num_cache_hits += s.num_cache_hits;
    total.live_blocks += s.live_blocks;
  }
  return total;
}

AllocatorStats CachingAllocator::device_stats(int device) const {
  if (device < 0) device = current_device();
  if (device >= caches().size()) return {};
  return caches().at(device).counters.snapshot();
}

void CachingAllocator::reset_peak_stats() {
  for (int d = 0; d < caches().size(); ++d) caches().at(d).counters.reset_peaks();
}

void CachingAllocator::empty_cache() {
  for (int d = 0; d < caches().size(); ++d) {
    DeviceCache& c = caches().at(d);
    std::lock_guard<std::mutex> lock(c.mu);
    release_cached(c, d);
  }
}

void CachingAllocator::copy_data(void* dst, const void* src, size_t n) const {
  if (n == 0) return;
  // Unified addressing tells the runtime which devices the two blocks are on.
  LOOM_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDefault), "CUDA caching allocator copy");
}

std::string CachingAllocator::device_summary(int device) const {
  if (device < 0) device = current_device();
  const AllocatorStats s = device_stats(device);
  size_t cached_blocks = 0;
  int64_t cached_bytes = 0;
  if (device < caches().size()) {
    DeviceCache& c = caches().at(device);
    std::lock_guard<std::mutex> lock(c.mu);
    cached_blocks = c.free_blocks.size() + c.held_back.size();
    for (const Block* b : c.free_blocks) cached_bytes += static_cast<int64_t>(b->size);
    for (const Block* b : c.held_back) cached_bytes += static_cast<int64_t>(b->size);
  }
  char line[160];
  std::string out = str_cat("memory summary: cuda:", device, " allocator 'cuda-caching'\n");
  std::snprintf(line, sizeof line, "  allocated      %14s (peak %s)\n",
                mib(s.allocated_bytes).c_str(), mib(s.peak_allocated_bytes).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  reserved       %14s (peak %s)\n",
                mib(s.reserved_bytes).c_str(), mib(s.peak_reserved_bytes).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  cached         %14s in %zu idle blocks\n",
                mib(cached_bytes).c_str(), cached_blocks);
  out += line;
  std::snprintf(line, sizeof line, "  live blocks    %14lld\n",
                static_cast<long long>(s.live_blocks));
  out += line;
  std::snprintf(line, sizeof line, "  allocations    %14lld (%lld from cache)\n",
                static_cast<long long>(s.num_allocs), static_cast<long long>(s.num_cache_hits));
  out += line;
  std::snprintf(line, sizeof line, "  frees          %14lld\n",
                static_cast<long long>(s.num_frees));
  out += line;
  return out;
}

void CachingAllocator::record_stream(const void* ptr, cudaStream_t stream) {
  if (ptr == nullptr || device_count() == 0) return;
  const auto addr = reinterpret_cast<uintptr_t>(ptr);
  for (int d = 0; d < caches().size(); ++d) {
    DeviceCache& c = caches().at(d);
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.active.upper_bound(addr);
    if (it == c.active.begin()) continue;
    Block* b = std::prev(it)->second;
    if (addr >= reinterpret_cast<uintptr_t>(b->ptr) + b->size) continue;
    if (stream == b->stream) return;
    for (cudaStream_t s : b->other_streams) {
      if (s == stream) return;
    }
    b->other_streams.push_back(stream);
    return;
  }
}

CachingAllocator& caching_allocator() {
  static CachingAllocator a;
  return a;
}

}  // namespace loom::cuda
