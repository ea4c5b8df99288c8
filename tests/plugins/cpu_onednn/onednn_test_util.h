#pragma once
// Shared by the oneDNN suites: load the packs and the plugin, run a computation under one
// provider, compare two results within a tolerance.
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
#include "test_util.h"

namespace loom::testing {

/// Loads ops_core, ops_nn and cpu_onednn (once).
inline void load_onednn() {
  load_ops_core();
  load_ops_nn();
  PluginLoader::instance().load("cpu_onednn");
}

/// Prefers provider at the CPU key while alive, then restores the previous preference.
class ProviderScope {
 public:
  explicit ProviderScope(std::string provider)
      : previous_(Dispatcher::instance().preferred_provider(DispatchKey::CPU)) {
    Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, std::move(provider));
  }
  ~ProviderScope() { Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, previous_); }
  ProviderScope(const ProviderScope&) = delete;
  ProviderScope& operator=(const ProviderScope&) = delete;

 private:
  std::string previous_;
};

/// f() run with provider preferred.
template <typename F>
auto with_provider(const std::string& provider, F&& f) {
  ProviderScope scope(provider);
  return f();
}

/// Expects got and want (same sizes) to agree: |got - want| <= atol + rtol * |want|.
inline void expect_allclose(const Tensor& got, const Tensor& want, double rtol = 1e-4,
                            double atol = 1e-5, const std::string& what = "") {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  const std::vector<double> g = to_doubles(got), w = to_doubles(want);
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    if ((std::isnan(w[i]) && std::isnan(g[i])) || g[i] == w[i]) continue;  // NaN, equal infinities
    if (!(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]))) {
      ADD_FAILURE() << what << ": element " << i << ": got " << g[i] << ", want " << w[i];
      ++bad;
    }
  }
}

/// Expects each named call to fail with the same message under the onednn provider as under
/// the reference (a malformed call is handed on, so its error is the reference's).
inline void expect_reference_errors(
    const std::vector<std::pair<std::string, std::function<void()>>>& calls) {
  for (const auto& [what, f] : calls) {
    auto error_under = [&, f = f](const std::string& provider) {
      ProviderScope scope(provider);
      return message_of(f);
    };
    const std::string want = error_under("reference");
    EXPECT_FALSE(want.empty()) << what << " should be an error";
    EXPECT_EQ(error_under("onednn"), want) << what;
  }
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
