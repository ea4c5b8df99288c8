#pragma once
// What the compile suites share.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
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

/// A gtest environment that gives the process one LOOM_CACHE_DIR, named after the suite, so
/// that graphs several cases share are built once, and removes it when the tests end; where
/// LOOM_CACHE_DIR is set already (a warm cache across runs), it is left alone.
class ProcessCacheDir : public ::testing::Environment {
 public:
  /// `suite` names the folder: "<temp>/loom-<suite>-<pid>".
  explicit ProcessCacheDir(std::string suite) : suite_(std::move(suite)) {}
  void SetUp() override {
    const char* set = getenv("LOOM_CACHE_DIR");
    if (set != nullptr && *set != '\0') return;
    dir_ = std::filesystem::temp_directory_path() /
           ("loom-" + suite_ + "-" + std::to_string(getpid()));
    setenv("LOOM_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

 private:
  std::string suite_;
  std::filesystem::path dir_;
};

}  // namespace loom::graph::testing
