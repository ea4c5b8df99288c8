#pragma once
// maybe_parallel_for: an OpenMP loop that runs inline when the work is too small to share.
//
// Note [No empty parallel regions]: `#pragma omp parallel for if (false)` still enters the
// OpenMP runtime, which on a busy machine wakes the pool's threads: microseconds per call,
// paid many times per step by the tiny ops of an autograd graph. Loops that are usually
// small branch around the region instead.

#include <cstdint>

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

}  // namespace loom::ops::cpu
