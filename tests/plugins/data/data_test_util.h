#pragma once
// Helpers for the data library's suites: a scratch folder per test, tensors from values,
// and running python3 for the interop tests.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/loom.h"

namespace loom::data::testing {

/// A fresh folder under the test temp dir, removed at the end of the scope.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "loom_data_XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  /// The folder.
  const std::filesystem::path& path() const { return path_; }
  /// A file name inside it.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// Writes bytes to path.
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Reads path.
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// The values of a tensor as doubles (any dtype, any strides).
inline std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

/// True if python3 can import every module in `modules` (space-separated).
inline bool python_has(const std::string& modules) {
  std::string imports;
  for (size_t s = 0, e; s < modules.size(); s = e + 1) {
    e = modules.find(' ', s);
    if (e == std::string::npos) e = modules.size();
    imports += "import " + modules.substr(s, e - s) + ";";
  }
  return std::system(("python3 -c '" + imports + "' >/dev/null 2>&1").c_str()) == 0;
}

/// Runs a python3 script (written to a file in dir); returns its exit status.
inline int run_python(const ScratchDir& dir, const std::string& script) {
  const std::string path = dir.file("script.py");
  write_bytes(path, script);
  return std::system(("python3 " + path).c_str());
}

}  // namespace loom::data::testing
