#pragma once
// Shared by the oneDNN suites: load the packs and the plugin, run a computation under one
// provider, compare two results within a tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/loom.h"
#include "ops_test_util.h"

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

}  // namespace loom::testing
