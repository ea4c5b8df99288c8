// The ONNX conformance runner (tools/loom/onnx/onnx_runner.cpp): on hand-built test folders
// (pass, fail, skip and broken files), on a few real folders of Debian's libonnx-testdata
// (skipped when it is not installed), and through `loom conformance onnx` itself.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "loom/dispatcher/plugin_loader.h"
#include "onnx_ops.h"
#include "onnx_runner.h"
#include "onnx_test_encoder.h"

namespace {

namespace fs = std::filesystem;
using namespace loom::onnx;
using namespace onnx_test;

class OnnxRunner : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { loom::PluginLoader::instance().load("ops_core"); }

  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("loom_onnx_runner_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }

  /// A test folder: model.onnx and test_data_set_0/{input_N,output_N}.pb.
  fs::path make_test(const std::string& name, const std::string& model_bytes,
                     const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs) {
    const fs::path dir = root_ / name;
    write(dir / "model.onnx", model_bytes);
    for (size_t i = 0; i < inputs.size(); ++i) {
      write(dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb"), inputs[i]);
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      write(dir / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb"), outputs[i]);
    }
    return dir;
  }

  /// Relu on [-1, 2], expecting `expected`.
  fs::path relu_test(const std::string& name, const std::vector<float>& expected) {
    return make_test(name, model(13, {node("Relu", {"x"}, {"y"})}, {"x"}, {"y"}),
                     {float_tensor("x", {2}, {-1, 2})}, {float_tensor("y", {2}, expected)});
  }

  fs::path root_;
};

TEST_F(OnnxRunner, PassesAMatchingOutput) {
  const TestResult r = run_test(relu_test("test_relu_ok", {0, 2}), {});
  EXPECT_EQ(r.outcome, Outcome::Pass) << r.reason;
  EXPECT_EQ(r.op_types, (std::vector<std::string>{"Relu"}));
}

TEST_F(OnnxRunner, FailsAWrongValueAndNamesIt) {
  const TestResult r = run_test(relu_test("test_relu_wrong", {0, 3}), {});
  EXPECT_EQ(r.outcome, Outcome::Fail);
  EXPECT_NE(r.reason.find("output 'y': 1 of 2 values differ; first at [1]: got 2, expected 3"),
            std::string::npos)
      << r.reason;
}

TEST_F(OnnxRunner, ToleranceIsRelativePlusAbsolute) {
  // 2 vs 2.001: within rtol 1e-3 (plus atol), not within rtol 1e-4.
  const fs::path dir = relu_test("test_relu_close", {0, 2.0019f});
  EXPECT_EQ(run_test(dir, {}).outcome, Outcome::Pass);
  RunOptions strict;
  strict.rtol = 1e-4;
  EXPECT_EQ(run_test(dir, strict).outcome, Outcome::Fail);
}

TEST_F(OnnxRunner, FailsAWrongShapeOrDtype) {
  const TestResult shape = run_test(
      make_test("test_shape", model(13, {node("Relu", {"x"}, {"y"})}, {"x"}, {"y"}),
                {float_tensor("x", {2}, {-1, 2})}, {float_tensor("y", {1, 2}, {0, 2})}),
      {});
  EXPECT_EQ(shape.outcome, Outcome::Fail);
  EXPECT_NE(shape.reason.find("shape [2], expected [1, 2]"), std::string::npos) << shape.reason;
  const TestResult dtype = run_test(
      make_test("test_dtype", model(13, {node("Relu", {"x"}, {"y"})}, {"x"}, {"y"}),
                {float_tensor("x", {2}, {-1, 2})}, {int64_tensor("y", {2}, {0, 2})}),
      {});
  EXPECT_EQ(dtype.outcome, Outcome::Fail);
  EXPECT_NE(dtype.reason.find("dtype float32, expected int64"), std::string::npos)
      << dtype.reason;
}

TEST_F(OnnxRunner, SkipsUnmappedOpsUnsupportedDtypesAndUnreadAttributes) {
  const TestResult unmapped = run_test(
      make_test("test_unmapped",
                model(13, {node("Relu", {"x"}, {"t"}), node("FancyOp", {"t"}, {"y"})}, {"x"},
                      {"y"}),
                {}, {}),
      {});
  EXPECT_EQ(unmapped.outcome, Outcome::Skip);
  EXPECT_EQ(unmapped.reason, "unmapped op FancyOp");

  const std::string uint16_input = packed_varints(1, {1}) + varint_field(2, 4) +
                                   packed_varints(5, {1});
  const TestResult dtype = run_test(
      make_test("test_uint16", model(13, {node("Relu", {"x"}, {"y"})}, {"x"}, {"y"}),
                {uint16_input}, {float_tensor("y", {1}, {1})}),
      {});
  EXPECT_EQ(dtype.outcome, Outcome::Skip);
  EXPECT_NE(dtype.reason.find("data type UINT16"), std::string::npos) << dtype.reason;

  // Relu has no attributes: one it does not read makes the node unsupported, not ignored.
  const TestResult attr = run_test(
      make_test("test_attr",
                model(13, {node("Relu", {"x"}, {"y"}, {int_attribute("mystery", 1)})}, {"x"},
                      {"y"}),
                {float_tensor("x", {2}, {-1, 2})}, {float_tensor("y", {2}, {0, 2})}),
      {});
  EXPECT_EQ(attr.outcome, Outcome::Skip);
  EXPECT_EQ(attr.reason, "node 0: Relu (opset 13): attribute 'mystery' is not handled");
}

TEST_F(OnnxRunner, BrokenFilesAndOpErrorsFail) {
  const fs::path garbage = make_test("test_garbage", "\x0a\xff\xff\xff\x0f", {}, {});
  const TestResult g = run_test(garbage, {});
  EXPECT_EQ(g.outcome, Outcome::Fail);
  EXPECT_NE(g.reason.find("model.onnx: malformed ModelProto"), std::string::npos) << g.reason;

  const TestResult missing = run_test(
      make_test("test_missing", model(13, {node("Relu", {"x"}, {"y"})}, {"x"}, {"y"}), {}, {}),
      {});
  EXPECT_EQ(missing.outcome, Outcome::Fail);
  EXPECT_EQ(missing.reason, "missing input_0.pb");

  // Add of [2] and [3] does not broadcast: the op's error is the reason.
  const TestResult op_error = run_test(
      make_test("test_op_error", model(13, {node("Add", {"a", "b"}, {"y"})}, {"a", "b"}, {"y"}),
                {float_tensor("a", {2}, {1, 2}), float_tensor("b", {3}, {1, 2, 3})},
                {float_tensor("y", {2}, {0, 0})}),
      {});
  EXPECT_EQ(op_error.outcome, Outcome::Fail);
  EXPECT_EQ(op_error.reason.rfind("node 0 (Add): ", 0), 0u) << op_error.reason;
}

TEST_F(OnnxRunner, RunsMultiNodeGraphsAndListsSortedFilteredTests) {
  // y = Relu(x) * x, through an intermediate value.
  relu_test("test_b_relu", {0, 2});
  make_test("test_a_square",
            model(13, {node("Relu", {"x"}, {"r"}), node("Mul", {"r", "x"}, {"y"})}, {"x"}, {"y"}),
            {float_tensor("x", {2}, {-1, 2})}, {float_tensor("y", {2}, {0, 4})});
  fs::create_directories(root_ / "not_a_test");
  RunOptions options;
  options.dir = root_;
  std::ostringstream out;
  const Summary s = run_all(options, out);
  EXPECT_EQ(out.str(), "PASS test_a_square\nPASS test_b_relu\n");
  EXPECT_EQ(summary_line(s), "2 passed, 0 failed, 0 skipped");
  options.filter = "relu";
  EXPECT_EQ(list_tests(options), (std::vector<fs::path>{root_ / "test_b_relu"}));
}

TEST_F(OnnxRunner, SoftmaxBeforeOpset13CoercesTo2D) {
  // Opset 11, axis 1 of [2, 2, 2]: softmax over each row of the [2, 4] coercion; opset 13
  // would take it over dim 1 alone.
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7}, y(8);
  for (int row = 0; row < 2; ++row) {
    double total = 0;
    for (int j = 0; j < 4; ++j) total += std::exp(x[row * 4 + j]);
    for (int j = 0; j < 4; ++j) y[row * 4 + j] = static_cast<float>(std::exp(x[row * 4 + j]) / total);
  }
  const std::string softmax = node("Softmax", {"x"}, {"y"}, {int_attribute("axis", 1)});
  const TestResult legacy = run_test(make_test("test_legacy", model(11, {softmax}, {"x"}, {"y"}),
                                               {float_tensor("x", {2, 2, 2}, x)},
                                               {float_tensor("y", {2, 2, 2}, y)}),
                                     {});
  EXPECT_EQ(legacy.outcome, Outcome::Pass) << legacy.reason;
  const TestResult modern = run_test(make_test("test_modern", model(13, {softmax}, {"x"}, {"y"}),
                                               {float_tensor("x", {2, 2, 2}, x)},
                                               {float_tensor("y", {2, 2, 2}, y)}),
                                     {});
  EXPECT_EQ(modern.outcome, Outcome::Fail);
}

TEST_F(OnnxRunner, MapsTheCoreOpTypes) {
  const std::vector<std::string> ops = mapped_op_types();
  for (const char* op : {"Add", "Reshape", "Softmax", "Gemm", "Slice", "ReduceSum", "Conv",
                         "Resize", "LayerNormalization", "SoftmaxCrossEntropyLoss"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
}

// ---- Debian's libonnx-testdata ----

TEST_F(OnnxRunner, RealNodeTestsPass) {
  const fs::path data = kDefaultNodeTestDir;
  // Covering an opset-dependent axis rule, negative slice steps, Reshape's 0, integer Div,
  // Mod's sign rule, a reduction with axes as input and a multi-node (_expanded) graph.
  for (const char* name :
       {"test_add_bcast", "test_softmax_axis_0", "test_logsoftmax_axis_1", "test_slice_neg_steps",
        "test_reshape_reordered_all_dims", "test_div_uint8", "test_mod_mixed_sign_int32",
        "test_reduce_sum_keepdims_random", "test_gemm_all_attributes",
        "test_layer_normalization_4d_axis1_expanded", "test_argmax_keepdims_example_select_last_index",
        "test_resize_downsample_scales_linear_align_corners"}) {
    const fs::path dir = data / name;
    if (!fs::exists(dir / "model.onnx")) GTEST_SKIP() << dir << " is missing (libonnx-testdata)";
    const TestResult r = run_test(dir, {});
    EXPECT_EQ(r.outcome, Outcome::Pass) << name << ": " << r.reason;
  }
}

// ---- the command ----

struct Ran {
  int status = -1;
  std::string out;
};

Ran run_loom(const std::string& args) {
  Ran r;
  FILE* p = ::popen((std::string(LOOM_CLI_PATH) + " " + args + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST_F(OnnxRunner, CommandPrintsOneLinePerTestAndASummary) {
  relu_test("test_relu_ok", {0, 2});
  relu_test("test_relu_wrong", {0, 3});
  const Ran ok = run_loom("conformance onnx --filter ok " + root_.string());
  EXPECT_EQ(ok.status, 0);
  EXPECT_EQ(ok.out, "PASS test_relu_ok\n1 passed, 0 failed, 0 skipped\n");
  const Ran all = run_loom("conformance onnx --json " + (root_ / "r.json").string() + " " +
                           root_.string());
  EXPECT_EQ(all.status, 1);
  EXPECT_NE(all.out.find("FAIL test_relu_wrong: output 'y'"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("1 passed, 1 failed, 0 skipped\n"), std::string::npos) << all.out;
  std::ifstream json(root_ / "r.json");
  const std::string report((std::istreambuf_iterator<char>(json)), {});
  EXPECT_NE(report.find("\"failed\": 1"), std::string::npos) << report;
  EXPECT_EQ(run_loom("conformance onnx /nonexistent").status, 2);
}

}  // namespace
