// Tests for core/src/cpu_allocator.cpp: the cap on cached bytes (LOOM_CPU_CACHE_LIMIT_MB).
// A binary of its own: the variable is read once, when the CPU allocator is first used.

#include <gtest/gtest.h>

#include <cstdlib>

#include "loom/core/allocator.h"

namespace loom {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Runs before main, so before anything touches the CPU allocator.
const bool g_limit_set = [] { return setenv("LOOM_CPU_CACHE_LIMIT_MB", "10", 1) == 0; }();

TEST(CPUAllocatorCacheLimitTest, BlocksPastTheLimitGoBackToTheSystem) {
  ASSERT_TRUE(g_limit_set);
  Allocator& a = cpu_allocator();
  const AllocatorStats s0 = a.stats();
  {
    DataPtr p1 = a.allocate(8 * kMiB);
    DataPtr p2 = a.allocate(4 * kMiB);
    DataPtr p3 = a.allocate(2 * kMiB);
  }
  // p3 (2 MiB) is freed first and cached, then p2 (4 MiB): 6 MiB; p1 (8 MiB) would pass 10.
  EXPECT_EQ(a.stats().reserved_bytes - s0.reserved_bytes, int64_t{6 * kMiB});
  EXPECT_EQ(a.stats().allocated_bytes, s0.allocated_bytes);
  {
    DataPtr p = a.allocate(8 * kMiB);  // not cached: a fresh block
    EXPECT_EQ(a.stats().num_cache_hits, s0.num_cache_hits);
    DataPtr q = a.allocate(4 * kMiB);  // cached
    EXPECT_EQ(a.stats().num_cache_hits, s0.num_cache_hits + 1);
  }
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes, s0.reserved_bytes);
}

}  // namespace
}  // namespace loom
