#pragma once
/// @file
/// The ONNX backend-test runner behind `loom conformance onnx`: runs each test folder's
/// model.onnx node by node on Loom ops and compares the outputs with the expected ones.
///
/// A test folder holds model.onnx and test_data_set_0/{input_N.pb, output_N.pb}
/// (serialized TensorProtos; ONNX's onnx/backend/test/data/node layout, which Debian's
/// libonnx-testdata installs in /usr/share/libonnx-testdata/data/node).
///
/// Note [ONNX result tolerance]: float outputs pass when |actual - expected| <= atol +
/// rtol * |expected| for every element, with rtol = 1e-3 and atol = 1e-5 by default. ONNX's
/// own backend tests use rtol 1e-3 and atol 1e-7; the looser atol absorbs float32 rounding
/// differences in values near zero (sin(pi), a softmax's tiny tail) between Loom's kernels
/// and numpy's float64-then-round reference. NaN matches NaN and infinities match exactly.
/// Integral and bool outputs must match exactly; dtype and shape always must.

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace loom::onnx {

/// Debian's install location of ONNX's node tests.
inline constexpr const char* kDefaultNodeTestDir = "/usr/share/libonnx-testdata/data/node";

/// What `loom conformance onnx` runs and how it compares.
struct RunOptions {
  std::filesystem::path dir = kDefaultNodeTestDir;  ///< the folder of test_* folders
  std::string filter;    ///< only tests whose name contains this
  bool verbose = false;  ///< print each test's ops, and detail for failures
  double rtol = 1e-3;    ///< Note [ONNX result tolerance]
  double atol = 1e-5;    ///< Note [ONNX result tolerance]
};

/// How one test ended.
enum class Outcome { Pass, Fail, Skip };

/// One test's result.
struct TestResult {
  std::string name;                  ///< the folder name ("test_add")
  Outcome outcome = Outcome::Skip;   ///< pass, fail or skip
  std::string reason;                ///< why it failed or was skipped ("" for a pass)
  std::vector<std::string> op_types; ///< the ops of its graph, in node order
};

/// Every result of a run, in test order, and the counts.
struct Summary {
  std::vector<TestResult> results;  ///< one per test run
  int passed = 0;                   ///< tests that passed
  int failed = 0;                   ///< tests that failed
  int skipped = 0;                  ///< tests that were skipped
};

/// Runs one test folder. Never throws for a problem of the test itself: a malformed file,
/// an op error or a mismatch is a Fail; an unmapped op, an unsupported dtype or attribute, an
/// op not registered yet, or a kernel's NotImplementedError is a Skip.
TestResult run_test(const std::filesystem::path& folder, const RunOptions& options);

/// The test folders under options.dir whose name starts with "test_" and contains
/// options.filter, sorted. @throws std::runtime_error if dir is not a folder
std::vector<std::filesystem::path> list_tests(const RunOptions& options);

/// Runs every listed test, printing `PASS name` / `FAIL name: reason` / `SKIP name: reason`
/// lines to out as it goes unless quiet, and returns the results.
Summary run_all(const RunOptions& options, std::ostream& out, bool quiet = false);

/// "N passed, M failed, K skipped".
std::string summary_line(const Summary& summary);

/// The ONNX op types the runner maps, sorted.
std::vector<std::string> mapped_op_types();

}  // namespace loom::onnx
