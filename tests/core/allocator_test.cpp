// Tests for core/src/allocator.cpp and core/src/cpu_allocator.cpp: the CPU caching
// allocator, its statistics, and the per-device-type allocator registry.

#include "loom/core/allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "loom/core/error.h"

// The out-of-memory test asks for more than the address space; ASan would abort on it
// instead of returning null.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace loom {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = size_t{1} << 20;

// Stats difference between two snapshots.
AllocatorStats diff(const AllocatorStats& after, const AllocatorStats& before) {
  AllocatorStats d;
  d.allocated_bytes = after.allocated_bytes - before.allocated_bytes;
  d.reserved_bytes = after.reserved_bytes - before.reserved_bytes;
  d.num_allocs = after.num_allocs - before.num_allocs;
  d.num_frees = after.num_frees - before.num_frees;
  d.num_cache_hits = after.num_cache_hits - before.num_cache_hits;
  d.live_blocks = after.live_blocks - before.live_blocks;
  return d;
}

class CPUAllocatorTest : public ::testing::Test {
 protected:
  // Start every test with no cached blocks, so reserved == allocated.
  void SetUp() override { cpu_allocator().empty_cache(); }
  void TearDown() override { cpu_allocator().empty_cache(); }
  Allocator& a = cpu_allocator();
};

TEST_F(CPUAllocatorTest, Identity) {
  EXPECT_EQ(a.device_type(), DeviceType::cpu());
  EXPECT_EQ(a.name(), "cpu-caching");
  EXPECT_EQ(&get_allocator(DeviceType::cpu()), &a);
  EXPECT_EQ(find_allocator(DeviceType::cpu()), &a);
}

TEST_F(CPUAllocatorTest, BlocksAre64ByteAlignedAndWritable) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{1000},
                   size_t{4096}, kMiB - 1, kMiB, kMiB + 1, 3 * kMiB + 17}) {
    DataPtr p = a.allocate(n);
    ASSERT_NE(p.get(), nullptr) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % 64, 0u) << n;
    EXPECT_EQ(p.device(), kCPU);
    std::memset(p.get(), 0xab, n);  // ASan checks that all n bytes are ours
  }
}

TEST_F(CPUAllocatorTest, SmallBlockStats) {
  a.empty_cache();  // this thread's small-block cache starts empty
  const AllocatorStats s0 = a.stats();
  {
    DataPtr p = a.allocate(100);  // rounded to 128
    const AllocatorStats d = diff(a.stats(), s0);
    EXPECT_EQ(d.allocated_bytes, 128);
    EXPECT_EQ(d.reserved_bytes, 128);
    EXPECT_EQ(d.num_allocs, 1);
    EXPECT_EQ(d.num_frees, 0);
    EXPECT_EQ(d.num_cache_hits, 0);
    EXPECT_EQ(d.live_blocks, 1);
    EXPECT_GE(a.stats().peak_allocated_bytes, a.stats().allocated_bytes);
  }
  // Freed, the block stays in this thread's cache (Note [Small-block cache]).
  AllocatorStats d = diff(a.stats(), s0);
  EXPECT_EQ(d.allocated_bytes, 0);
  EXPECT_EQ(d.reserved_bytes, 128);
  EXPECT_EQ(d.num_frees, 1);
  EXPECT_EQ(d.live_blocks, 0);
  {
    DataPtr p = a.allocate(120);  // the same size class: served from the cache
    d = diff(a.stats(), s0);
    EXPECT_EQ(d.num_cache_hits, 1);
    EXPECT_EQ(d.reserved_bytes, 128);
  }
  a.empty_cache();
  d = diff(a.stats(), s0);
  EXPECT_EQ(d.reserved_bytes, 0);
  EXPECT_EQ(d.num_allocs, 2);
  EXPECT_EQ(d.num_frees, 2);
}

TEST_F(CPUAllocatorTest, SmallBlocksFreedOnAnotherThreadAndAtThreadExit) {
  a.empty_cache();
  const AllocatorStats s0 = a.stats();
  DataPtr p = a.allocate(64);
  std::thread t([&] {
    DataPtr q = a.allocate(64);
    p = DataPtr();  // freed here: joins this thread's cache
  });                // the thread exits with q and p cached: both go back to the system
  t.join();
  const AllocatorStats d = diff(a.stats(), s0);
  EXPECT_EQ(d.allocated_bytes, 0);
  EXPECT_EQ(d.reserved_bytes, 0);
  EXPECT_EQ(d.live_blocks, 0);
}

TEST_F(CPUAllocatorTest, PeakTracksTheHighWaterMark) {
  a.reset_peak_stats();
  const AllocatorStats s0 = a.stats();
  EXPECT_EQ(s0.peak_allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s0.peak_reserved_bytes, s0.reserved_bytes);
  {
    DataPtr p1 = a.allocate(4 * kMiB);
    DataPtr p2 = a.allocate(4 * kMiB);
  }
  const AllocatorStats s1 = a.stats();
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s1.peak_allocated_bytes, s0.allocated_bytes + int64_t{8 * kMiB});
  EXPECT_EQ(s1.peak_reserved_bytes, s0.reserved_bytes + int64_t{8 * kMiB});
  a.empty_cache();
  a.reset_peak_stats();
  EXPECT_EQ(a.stats().peak_allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(a.stats().peak_reserved_bytes, a.stats().reserved_bytes);
}

TEST_F(CPUAllocatorTest, LargeBlocksAreCachedAndReused) {
  const AllocatorStats s0 = a.stats();
  void* first = nullptr;
  {
    DataPtr p = a.allocate(8 * kMiB);
    first = p.get();
    const AllocatorStats d = diff(a.stats(), s0);
    EXPECT_EQ(d.allocated_bytes, int64_t{8 * kMiB});
    EXPECT_EQ(d.reserved_bytes, int64_t{8 * kMiB});
    EXPECT_EQ(d.num_cache_hits, 0);
    EXPECT_EQ(d.live_blocks, 1);
  }
  {
    const AllocatorStats d = diff(a.stats(), s0);
    EXPECT_EQ(d.allocated_bytes, 0);
    EXPECT_EQ(d.reserved_bytes, int64_t{8 * kMiB});  // kept in the cache
    EXPECT_EQ(d.num_frees, 1);
    EXPECT_EQ(d.live_blocks, 0);
  }
  {
    DataPtr p = a.allocate(8 * kMiB);
    EXPECT_EQ(p.get(), first);
    const AllocatorStats d = diff(a.stats(), s0);
    EXPECT_EQ(d.num_allocs, 2);
    EXPECT_EQ(d.num_cache_hits, 1);
    EXPECT_EQ(d.allocated_bytes, int64_t{8 * kMiB});
    EXPECT_EQ(d.reserved_bytes, int64_t{8 * kMiB});
  }
  // A request in the same size class is served by the same block, too.
  {
    DataPtr p = a.allocate(8 * kMiB - 1000);
    EXPECT_EQ(p.get(), first);
    EXPECT_EQ(diff(a.stats(), s0).num_cache_hits, 2);
  }
}

TEST_F(CPUAllocatorTest, SizeClassesWasteAtMostAQuarter) {
  struct Case {
    size_t request, block;
  };
  for (const Case& c :
       {Case{kMiB, kMiB}, Case{kMiB + 1, kMiB + kMiB / 4}, Case{2 * kMiB - 1, 2 * kMiB},
        Case{2 * kMiB, 2 * kMiB}, Case{2 * kMiB + 1, 2 * kMiB + kMiB / 2}, Case{5 * kMiB, 5 * kMiB},
        Case{5 * kMiB + 1, 6 * kMiB}, Case{100 * kMiB, 112 * kMiB}}) {
    const AllocatorStats s0 = a.stats();
    DataPtr p = a.allocate(c.request);
    EXPECT_EQ(diff(a.stats(), s0).allocated_bytes, static_cast<int64_t>(c.block)) << c.request;
    EXPECT_LE(static_cast<double>(c.block), 1.25 * static_cast<double>(c.request));
  }
}

TEST_F(CPUAllocatorTest, DifferentSizeClassesDoNotShareBlocks) {
  const AllocatorStats s0 = a.stats();
  { DataPtr p = a.allocate(2 * kMiB); }
  { DataPtr p = a.allocate(4 * kMiB); }
  EXPECT_EQ(diff(a.stats(), s0).num_cache_hits, 0);
  EXPECT_EQ(diff(a.stats(), s0).reserved_bytes, int64_t{6 * kMiB});
}

TEST_F(CPUAllocatorTest, EmptyCacheReturnsReservedBytes) {
  const AllocatorStats s0 = a.stats();
  EXPECT_EQ(s0.reserved_bytes, s0.allocated_bytes);
  DataPtr live = a.allocate(2 * kMiB);
  { DataPtr p = a.allocate(8 * kMiB); }
  { DataPtr p = a.allocate(16 * kMiB); }
  EXPECT_EQ(diff(a.stats(), s0).reserved_bytes, int64_t{26 * kMiB});
  a.empty_cache();
  // Only the live block stays reserved.
  EXPECT_EQ(diff(a.stats(), s0).reserved_bytes, int64_t{2 * kMiB});
  EXPECT_EQ(diff(a.stats(), s0).allocated_bytes, int64_t{2 * kMiB});
  live = DataPtr();
  EXPECT_EQ(diff(a.stats(), s0).allocated_bytes, 0);
  a.empty_cache();
  EXPECT_EQ(diff(a.stats(), s0).reserved_bytes, 0);
}

TEST_F(CPUAllocatorTest, ZeroByteAllocations) {
  const AllocatorStats s0 = a.stats();
  {
    DataPtr p = a.allocate(0);
    EXPECT_EQ(p.get(), nullptr);
    EXPECT_EQ(p.device(), kCPU);
    const AllocatorStats d = diff(a.stats(), s0);
    EXPECT_EQ(d.allocated_bytes, 0);
    EXPECT_EQ(d.reserved_bytes, 0);
    EXPECT_EQ(d.num_allocs, 1);
    EXPECT_EQ(d.live_blocks, 1);
  }
  const AllocatorStats d = diff(a.stats(), s0);
  EXPECT_EQ(d.num_frees, 1);
  EXPECT_EQ(d.live_blocks, 0);
  EXPECT_EQ(d.allocated_bytes, 0);
}

TEST_F(CPUAllocatorTest, OutOfMemoryThrowsWithSizeAndSummary) {
  const AllocatorStats s0 = a.stats();
  const size_t huge = size_t{1} << 50;  // 1 PiB: more than the address space
  try {
    DataPtr p = a.allocate(huge);
    FAIL() << "allocating 1 PiB succeeded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("CPU out of memory: tried to allocate 1125899906842624 bytes"));
    EXPECT_THAT(e.what(), HasSubstr("memory summary: cpu allocator 'cpu-caching'"));
  }
  const AllocatorStats d = diff(a.stats(), s0);
  EXPECT_EQ(d.allocated_bytes, 0);
  EXPECT_EQ(d.reserved_bytes, 0);
  EXPECT_EQ(d.live_blocks, 0);
}

TEST_F(CPUAllocatorTest, ImpossibleSizesThrowInsteadOfWrapping) {
  // Rounding a size near SIZE_MAX up to a size class must not wrap around to a small block.
  for (size_t n : {SIZE_MAX, SIZE_MAX - 63, (SIZE_MAX >> 1) + 2, size_t{1} << 63}) {
    EXPECT_THROW(a.allocate(n), Error) << n;
  }
}

TEST_F(CPUAllocatorTest, SummaryIsATable) {
  DataPtr p = a.allocate(3 * kMiB);
  const std::string s = a.summary();
  EXPECT_THAT(s, HasSubstr("memory summary: cpu allocator 'cpu-caching'\n"));
  EXPECT_THAT(s, HasSubstr("  allocated "));
  EXPECT_THAT(s, HasSubstr("MiB (peak "));
  EXPECT_THAT(s, HasSubstr("  reserved "));
  EXPECT_THAT(s, HasSubstr("  live blocks "));
  EXPECT_THAT(s, HasSubstr("  allocations "));
  EXPECT_THAT(s, HasSubstr(" from cache)\n"));
  EXPECT_THAT(s, HasSubstr("  frees "));
}

TEST_F(CPUAllocatorTest, ConcurrentAllocationFromFourThreads) {
  const AllocatorStats s0 = a.stats();
  constexpr int kThreads = 4, kIters = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < kIters; ++i) {
        // Mostly small blocks, every 50th a large one that goes through the cache.
        const size_t n = i % 50 == 0 ? kMiB + static_cast<size_t>(t) * 4096 : 16 + (i % 300);
        DataPtr p = a.allocate(n);
        auto* bytes = static_cast<unsigned char*>(p.get());
        bytes[0] = static_cast<unsigned char>(t);
        bytes[n - 1] = static_cast<unsigned char>(i);
        ASSERT_EQ(bytes[0], static_cast<unsigned char>(t));
      }
    });
  }
  for (auto& th : threads) th.join();
  const AllocatorStats d = diff(a.stats(), s0);
  EXPECT_EQ(d.num_allocs, kThreads * kIters);
  EXPECT_EQ(d.num_frees, kThreads * kIters);
  EXPECT_EQ(d.live_blocks, 0);
  EXPECT_EQ(d.allocated_bytes, 0);
  a.empty_cache();
  EXPECT_EQ(diff(a.stats(), s0).reserved_bytes, 0);
}

// ---------------------------------------------------------------- AllocatorCounters

TEST(AllocatorCountersTest, CountsAndPeaks) {
  AllocatorCounters c;
  c.on_reserve(100);
  c.on_alloc(100, false);
  c.on_alloc(50, true);
  AllocatorStats s = c.snapshot();
  EXPECT_EQ(s.allocated_bytes, 150);
  EXPECT_EQ(s.reserved_bytes, 100);
  EXPECT_EQ(s.peak_allocated_bytes, 150);
  EXPECT_EQ(s.num_allocs, 2);
  EXPECT_EQ(s.num_cache_hits, 1);
  EXPECT_EQ(s.live_blocks, 2);
  c.on_free(150);
  c.on_reserve(-100);
  s = c.snapshot();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.peak_allocated_bytes, 150);
  EXPECT_EQ(s.peak_reserved_bytes, 100);
  EXPECT_EQ(s.num_frees, 1);
  EXPECT_EQ(s.live_blocks, 1);
  c.reset_peaks();
  EXPECT_EQ(c.snapshot().peak_allocated_bytes, 0);
  EXPECT_EQ(c.snapshot().peak_reserved_bytes, 0);
}

// ---------------------------------------------------------------- registry

// A trivial allocator for registry tests: malloc with stats.
class CountingAllocator final : public Allocator {
 public:
  explicit CountingAllocator(DeviceType type, const char* name) : type_(type), name_(name) {}
  using Allocator::allocate;
  DataPtr allocate(size_t nbytes, int16_t) override {
    counters_.on_alloc(static_cast<int64_t>(nbytes), false);
    return DataPtr(nbytes ? std::malloc(nbytes) : nullptr, this, &CountingAllocator::release,
                   Device(type_, 0));
  }
  DeviceType device_type() const override { return type_; }
  std::string_view name() const override { return name_; }
  AllocatorStats stats() const override { return counters_.snapshot(); }

 private:
  static void release(void* ctx, void* data) {
    std::free(data);
    static_cast<CountingAllocator*>(ctx)->counters_.on_free(0);
  }
  DeviceType type_;
  const char* name_;
  AllocatorCounters counters_;
};

TEST(AllocatorRegistryTest, TypeWithoutAllocatorThrowsDeviceError) {
  const DeviceType t = DeviceType::register_type("alloctest_none");
  EXPECT_EQ(find_allocator(t), nullptr);
  try {
    get_allocator(t);
    FAIL() << "no DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no allocator is registered for device type 'alloctest_none'"));
  }
  // meta has one: storage without memory (meta tensors).
  EXPECT_NE(find_allocator(DeviceType::from_name("meta")), nullptr);
}

TEST(AllocatorRegistryTest, RegistrationsStackAndHandlesRestoreThePrevious) {
  const DeviceType t = DeviceType::register_type("alloctest_dev");
  CountingAllocator first(t, "first"), second(t, "second");
  {
    RegistrationHandle h1 = register_allocator(t, &first);
    EXPECT_EQ(&get_allocator(t), &first);
    {
      RegistrationHandle h2 = register_allocator(t, &second);
      EXPECT_EQ(&get_allocator(t), &second);
      DataPtr p = get_allocator(t).allocate(16);
      EXPECT_EQ(p.device(), Device(t, 0));
      EXPECT_EQ(second.stats().live_blocks, 1);
    }
    EXPECT_EQ(second.stats().live_blocks, 0);
    EXPECT_EQ(&get_allocator(t), &first);
  }
  EXPECT_EQ(find_allocator(t), nullptr);
}

TEST(AllocatorRegistryTest, HandlesMayBeReleasedOutOfOrder) {
  const DeviceType t = DeviceType::register_type("alloctest_order");
  CountingAllocator first(t, "first"), second(t, "second");
  RegistrationHandle h1 = register_allocator(t, &first);
  RegistrationHandle h2 = register_allocator(t, &second);
  h1.reset();  // the older one goes first: the newer stays active
  EXPECT_EQ(&get_allocator(t), &second);
  h1.reset();  // idempotent
  h2.reset();
  EXPECT_EQ(find_allocator(t), nullptr);
}

TEST(AllocatorRegistryTest, CpuCanBeOverriddenAndRestored) {
  CountingAllocator mine(DeviceType::cpu(), "mine");
  {
    RegistrationHandle h = register_allocator(DeviceType::cpu(), &mine);
    EXPECT_EQ(&get_allocator(DeviceType::cpu()), &mine);
  }
  EXPECT_EQ(&get_allocator(DeviceType::cpu()), &cpu_allocator());
}

TEST(AllocatorRegistryTest, NullAllocatorIsARegistrationError) {
  EXPECT_THROW(register_allocator(DeviceType::cpu(), nullptr), RegistrationError);
}

}  // namespace
}  // namespace loom
