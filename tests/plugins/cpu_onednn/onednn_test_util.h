#pragma once
// Shared by the oneDNN suites: load the packs and the plugin, random tensors, timings; running
// under one provider and comparing results come from provider_test_util.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "provider_test_util.h"
#include "test_util.h"

namespace loom::testing {

/// Loads ops_core, ops_nn and cpu_onednn (once).
inline void load_onednn() {
  load_ops_core();
  load_ops_nn();
  PluginLoader::instance().load("cpu_onednn");
}

/// Expects each named call to fail with the same message under the onednn provider as under
/// the reference (a malformed call is handed on, so its error is the reference's).
inline void expect_reference_errors(
    const std::vector<std::pair<std::string, std::function<void()>>>& calls) {
  expect_reference_errors("onednn", calls);
}

/// Elements of a tensor of sizes.
inline int64_t element_count(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t v : sizes) n *= v;
  return n;
}

/// A tensor of sizes with uniform values in [lo, hi) from seed (strided: a non-contiguous
/// view of the same values).
inline Tensor random_tensor(const std::vector<int64_t>& sizes, uint64_t seed,
                            DType dtype = DType::Float32, bool strided = false, double lo = -2,
                            double hi = 2) {
  return make_tensor(random_values(static_cast<size_t>(element_count(sizes)), seed, lo, hi), sizes,
                     dtype, strided);
}

/// The best of reps timings of f (after one warm-up call), in microseconds.
inline double best_us(const std::function<void()>& f, int reps) {
  f();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best,
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace loom::testing
