#pragma once
// For the suites of a CPU provider (cpu_onednn, cpu_mkl) against the reference kernels: run a
// computation under one provider, compare two results within a tolerance, and check that a
// malformed call fails with the reference's message under the provider too.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "loom/dispatcher/dispatcher.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom::testing {

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

/// Expects each named call to fail with the same message under provider as under the
/// reference (a provider hands a malformed call on, so its error is the reference's).
inline void expect_reference_errors(
    const std::string& provider,
    const std::vector<std::pair<std::string, std::function<void()>>>& calls) {
  for (const auto& [what, f] : calls) {
    auto error_under = [&, f = f](const std::string& p) {
      ProviderScope scope(p);
      return message_of(f);
    };
    const std::string want = error_under("reference");
    EXPECT_FALSE(want.empty()) << what << " should be an error";
    EXPECT_EQ(error_under(provider), want) << what;
  }
}

}  // namespace loom::testing
