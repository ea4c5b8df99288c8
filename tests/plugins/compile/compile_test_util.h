#pragma once
// What the compile suites share.

#include <cstdint>
#include <string>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/core/warning.h"
#include "ops_test_util.h"

namespace loom::graph::testing {

/// A float32 tensor of sizes holding scale * i - 0.5 at row-major position i: distinct,
/// signed values, so a replay that mixes up inputs or elements shows.
inline Tensor ramp(std::vector<int64_t> sizes, double scale = 0.1) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<double>(i) - 0.5;
  return loom::testing::make_tensor(v, sizes);
}

/// The warnings issued while it lives (restoring the previous handler at the end).
class CaughtWarnings {
 public:
  CaughtWarnings()
      : previous_(set_warning_handler([this](const std::string& m) { messages.push_back(m); })) {}
  ~CaughtWarnings() { set_warning_handler(previous_); }
  CaughtWarnings(const CaughtWarnings&) = delete;
  CaughtWarnings& operator=(const CaughtWarnings&) = delete;

  std::vector<std::string> messages;  ///< in order

 private:
  WarningHandler previous_;
};

}  // namespace loom::graph::testing
