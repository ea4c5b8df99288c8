#pragma once
// maybe_parallel_for: an OpenMP loop that runs inline when the work is too small to share;
// parallel_ranges: one contiguous range of a flat index space per thread.
//
// Note [No empty parallel regions]: `#pragma omp parallel for if (false)` still enters the
// OpenMP runtime, which on a busy machine wakes the pool's threads: microseconds per call,
// paid many times per step by the tiny ops of an autograd graph. Loops that are usually
// small branch around the region instead.

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace loom::ops::cpu {

/// Runs body(i) for i in [0, n), on the OpenMP team when parallel is true.
template <typename F>
void maybe_parallel_for(bool parallel, int64_t n, F&& body) {
  if (parallel) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) body(i);
  } else {
    for (int64_t i = 0; i < n; ++i) body(i);
  }
}

/// Elements per range boundary in parallel_ranges: 64 float32 or 32 float64 are whole cache
/// lines (256 bytes), so two threads never write the same line and each range starts on a
/// vector boundary when the data does.
inline constexpr int64_t kRangeAlign = 64;

/// Runs body(begin, end) over [0, n): inline (one call) when n < grain, otherwise once per
/// OpenMP thread on a contiguous range, the ranges of equal length up to kRangeAlign.
///
/// Note [One range per thread]: a memory-bound loop is fastest as one long stream per core.
/// Cutting it into many small chunks (8192 elements under `omp for`) restarts the hardware
/// prefetchers at every chunk and pays the loop set-up each time; a static partition into
/// one range per thread does neither and gives every thread the same work. body must not
/// throw (it runs inside an OpenMP region).
template <typename F>
void parallel_ranges(int64_t n, int64_t grain, F&& body) {
#ifdef _OPENMP
  if (n >= grain && omp_get_max_threads() > 1) {
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t share = (n + nt - 1) / nt;
      const int64_t per = (share + kRangeAlign - 1) / kRangeAlign * kRangeAlign;
      const int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
      if (begin < end) body(begin, end);
    }
    return;
  }
#endif
  if (n > 0) body(int64_t{0}, n);
}

}  // namespace loom::ops::cpu
