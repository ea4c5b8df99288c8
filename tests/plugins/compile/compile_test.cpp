// loom::compile: fused pointwise loops against eager (values, strides, gradients), the disk
// cache (hits, a corrupt entry, two threads building one key), and a missing or failing
// compiler (a warning, then eager's results).
#include "loom/compile/compile.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "compile_test_util.h"
#include "loom/core/warning.h"
#include "loom/graph/fusion.h"
#include "loom/loom.h"
#include "loom/profiler/profiler.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using loom::graph::testing::ramp;
using loom::testing::contains;
using loom::testing::expect_close;
using loom::testing::make_tensor;
using loom::testing::random_values;
using loom::testing::to_doubles;

class CompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loom::init();
    // A fresh cache per test, so that each test sees its own misses and hits.
    cache_ = fs::temp_directory_path() /
             ("loom-compile-test-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(cache_);
    setenv("LOOM_CACHE_DIR", cache_.c_str(), 1);
  }
  void TearDown() override {
    set_warning_handler({});
    unsetenv("LOOM_CXX");
    fs::remove_all(cache_);
  }
  /// The cache entries (`.so` files) written so far.
  std::vector<fs::path> libraries() const {
    std::vector<fs::path> out;
    for (const auto& f : fs::directory_iterator(cache_ / "compile")) {
      if (f.path().extension() == ".so") out.push_back(f.path());
    }
    return out;
  }
  fs::path cache_;
};

Tensor random(std::vector<int64_t> sizes, uint64_t seed, DType t = DType::Float32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return make_tensor(random_values(static_cast<size_t>(n), seed), sizes, t);
}

/// The chain of the benchmark: gelu(x * w + b) + r, with w and b broadcast over rows.
std::vector<Tensor> chain(const std::vector<Tensor>& in) {
  return {add(gelu(add(mul(in[0], in[1]), in[2])), in[3])};
}

/// Inputs of chain: x and r of rows x cols, w and b of cols (broadcast over rows).
std::vector<Tensor> chain_inputs(int64_t rows, int64_t cols, uint64_t x_seed = 1) {
  return {random({rows, cols}, x_seed), random({cols}, 2), random({cols}, 3),
          random({rows, cols}, 4)};
}

void expect_same(const Tensor& got, const Tensor& want, double rtol = 1e-6, double atol = 1e-6) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(sizes_str(got.strides()), sizes_str(want.strides())) << "eager's layout";
  expect_close(got, want.sizes(), to_doubles(want), rtol, atol);
}

TEST_F(CompileTest, FusesAPointwiseChainIntoOneLoopAndMatchesEager) {
  auto f = compile(&chain, {.name = "chain"});
  for (int call = 0; call < 3; ++call) {
    const std::vector<Tensor> in = chain_inputs(64, 33, 1 + call);
    expect_same(f(in)[0], chain(in)[0]);
  }
  const CompileStats s = f.stats();
  EXPECT_EQ(s.captures, 1);
  EXPECT_EQ(s.replays, 2);
  EXPECT_EQ(s.fused_groups, 1) << "mul, add, gelu, add: one loop";
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.fallbacks, 0);
  EXPECT_EQ(libraries().size(), 1u);
}

TEST_F(CompileTest, KeepsEagersLayoutForTransposedInputsAndFloat64) {
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sigmoid(mul(add(in[0], in[1]), 0.5)), tanh(in[0])};
  };
  auto f = compile(fn);
  for (DType t : {DType::Float32, DType::Float64}) {
    // x transposed: eager's result follows x's layout, so must the fused loop's.
    const std::vector<Tensor> in = {random({40, 30}, 5, t).transpose(0, 1), random({1, 40}, 6, t)};
    const std::vector<Tensor> got = f(in), want = fn(in);
    expect_same(got[0], want[0], t == DType::Float64 ? 1e-12 : 1e-6);
    expect_same(got[1], want[1], t == DType::Float64 ? 1e-12 : 1e-6);
  }
  EXPECT_EQ(f.stats().fused_groups, 2) << "one per dtype";
}

TEST_F(CompileTest, RunsLibraryOpsBetweenFusedGroups) {
  const Tensor w = random({16, 8}, 7), b = random({8}, 8);
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor h = relu(add(matmul(in[0], w), b));           // matmul, then a group of two
    Tensor s = sum(h, {0}, /*keepdim=*/true);  // over dim 0: not a row reduction, a library op
    return std::vector<Tensor>{sub(mul(h, 2.0), s), h};  // a group reading h and s
  };
  auto f = compile(fn);
  const std::vector<Tensor> in = {random({5, 16}, 9)};
  for (int i = 0; i < 2; ++i) {
    const std::vector<Tensor> got = f(in), want = fn(in);
    expect_same(got[0], want[0]);
    expect_same(got[1], want[1]);
  }
  EXPECT_EQ(f.stats().fused_groups, 2);
}

TEST_F(CompileTest, EmptyTensorsFuseToLoopsThatDoNothing) {
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{relu(add(in[0], in[1]))};
  };
  auto f = compile(fn);
  for (const std::vector<int64_t>& sizes :
       std::vector<std::vector<int64_t>>{{5, 0}, {0, 5}, {0}, {3, 0, 2}}) {
    const std::vector<Tensor> in = {Tensor::empty(sizes), Tensor::empty(sizes)};
    for (int i = 0; i < 2; ++i) expect_same(f(in)[0], fn(in)[0]);
  }
  EXPECT_EQ(f.stats().fused_groups, 4);
}

using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
/// Every op that fuses, over x and y (y > 0 for the ops that need it).
const std::vector<std::pair<std::string, Op>>& fusible_ops() {
  static const std::vector<std::pair<std::string, Op>> ops = {
      {"add", [](const Tensor& x, const Tensor& y) { return add(x, y, 0.25); }},
      {"sub", [](const Tensor& x, const Tensor& y) { return sub(x, y); }},
      {"add_scalar", [](const Tensor& x, const Tensor&) { return add(x, 1.5); }},
      {"sub_scalar", [](const Tensor& x, const Tensor&) { return sub(x, 0.75); }},
      {"mul_scalar", [](const Tensor& x, const Tensor&) { return mul(x, -3.0); }},
      {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }},
      {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, sub(y, 1.5)); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, sub(y, 1.5)); }},
      {"max_tie", [](const Tensor& x, const Tensor&) { return maximum(x, x); }},
      {"div_scalar", [](const Tensor& x, const Tensor&) { return div(x, 7.0); }},
      {"neg", [](const Tensor& x, const Tensor&) { return neg(x); }},
      {"abs", [](const Tensor& x, const Tensor&) { return abs(x); }},
      {"exp", [](const Tensor& x, const Tensor&) { return exp(x); }},
      {"log", [](const Tensor&, const Tensor& y) { return log(y); }},
      {"sqrt", [](const Tensor&, const Tensor& y) { return sqrt(y); }},
      {"rsqrt", [](const Tensor&, const Tensor& y) { return rsqrt(y); }},
      {"reciprocal", [](const Tensor&, const Tensor& y) { return reciprocal(y); }},
      {"sin", [](const Tensor& x, const Tensor&) { return sin(x); }},
      {"cos", [](const Tensor& x, const Tensor&) { return cos(x); }},
      {"tanh", [](const Tensor& x, const Tensor&) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x, const Tensor&) { return sigmoid(x); }},
      {"relu", [](const Tensor& x, const Tensor&) { return relu(x); }},
      {"silu", [](const Tensor& x, const Tensor&) { return silu(x); }},
      {"gelu", [](const Tensor& x, const Tensor&) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x, const Tensor&) { return gelu(x, "tanh"); }},
      {"pow2", [](const Tensor& x, const Tensor&) { return pow(x, 2.0); }},
      {"pow_half", [](const Tensor&, const Tensor& y) { return pow(y, 0.5); }},
      {"pow_1_7", [](const Tensor&, const Tensor& y) { return pow(y, 1.7); }},
  };
  return ops;
}

/// One graph of all of them: each op's result times 1.5 (so that it joins a group).
std::vector<Tensor> all_fusible_ops(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const auto& [name, op] : fusible_ops()) out.push_back(mul(op(in[0], in[1]), 1.5));
  return out;
}

/// x in [-2, 2), y in [0.5, 2.5).
std::vector<Tensor> fusible_inputs(int64_t n, DType t) {
  return {random({n}, 10, t), add(abs(random({n}, 11, t)), 0.5)};
}

TEST_F(CompileTest, EveryFusibleOpMatchesEager) {
  const auto& ops = fusible_ops();
  auto f = compile(&all_fusible_ops);
  for (DType t : {DType::Float32, DType::Float64}) {
    const std::vector<Tensor> in = fusible_inputs(257, t);
    const std::vector<Tensor> got = f(in), want = all_fusible_ops(in);
    ASSERT_EQ(got.size(), ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      SCOPED_TRACE(ops[i].first + " " + std::string(dtype_name(t)));
      expect_same(got[i], want[i], t == DType::Float64 ? 1e-12 : 2e-6, 1e-6);
    }
  }
  EXPECT_EQ(f.stats().fused_groups, 2) << "every op joins: one loop per dtype";
}

TEST_F(CompileTest, Float32VectorMathMatchesEagerFromTheSubnormalsToOverflow) {
  // exp, erf (in gelu), tanh and sigmoid have vectorisable float32 forms in generated code
  // (Note [Vector math in generated loops]): checked where they clamp, saturate, overflow,
  // reach the subnormals, and on signed zeros, infinities and NaN.
  const std::vector<double> values = {-INFINITY, -200, -104, -100,  -90,      -87.5, -20, -9.5,
                                      -4.5,      -3.9, -1,   -1e-3, -1e-30,   -0.0,  0.0, 1e-30,
                                      1e-6,      0.3,  0.7,  1,     3.9,      4.5,   9.5, 20,
                                      88,        88.7, 88.8, 200,   INFINITY, NAN};
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    return std::vector<Tensor>{mul(exp(x), 1.0),     mul(gelu(x), 1.0), mul(tanh(x), 1.0),
                               mul(sigmoid(x), 1.0), mul(silu(x), 1.0), mul(gelu(x, "tanh"), 1.0)};
  };
  auto f = compile(fn);
  const Tensor x = make_tensor(values, {static_cast<int64_t>(values.size())});
  const std::vector<Tensor> got = f({x}), want = fn({x});
  const char* names[] = {"exp", "gelu", "tanh", "sigmoid", "silu", "gelu_tanh"};
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(names[i]);
    expect_same(got[i], want[i], 2e-6, 1e-6);
  }
  // exp to the subnormals: relative error beyond float's 1e-38 is not promised, absolute is.
  expect_close(got[0], want[0].sizes(), to_doubles(want[0]), 2e-6, 1e-44);
  EXPECT_EQ(f.stats().fused_groups, 1);
}

TEST_F(CompileTest, ASecondCompileOfTheSameGraphLoadsItFromTheDiskCache) {
  const std::vector<Tensor> in = chain_inputs(8, 5);
  auto first = compile(&chain);
  expect_same(first(in)[0], chain(in)[0]);
  EXPECT_EQ(first.stats().compiles, 1);
  auto second = compile(&chain);  // as another process would
  expect_same(second(in)[0], chain(in)[0]);
  EXPECT_EQ(second.stats().compiles, 0);
  EXPECT_EQ(second.stats().cache_hits, 1);
}

TEST_F(CompileTest, ACorruptCacheEntryIsDetectedAndRebuilt) {
  const std::vector<Tensor> in = chain_inputs(8, 5);
  expect_same(compile(&chain)(in)[0], chain(in)[0]);
  ASSERT_EQ(libraries().size(), 1u);
  const fs::path so = libraries()[0];
  fs::resize_file(so, fs::file_size(so) / 2);  // a truncated write
  ::testing::internal::CaptureStderr();
  auto again = compile(&chain);
  expect_same(again(in)[0], chain(in)[0]);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err,
                       "is stale or corrupt (its library's size or checksum differs); "
                       "rebuilding"))
      << err;
  EXPECT_EQ(again.stats().compiles, 1);
  EXPECT_EQ(again.stats().cache_hits, 0);
}

TEST_F(CompileTest, TwoThreadsBuildingOneKeyBothGetIt) {
  const std::vector<Tensor> in = chain_inputs(64, 64);
  const Tensor want = chain(in)[0];
  std::vector<Tensor> got(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] { got[i] = compile(&chain)(in)[0]; });
  }
  for (auto& t : threads) t.join();
  expect_same(got[0], want);
  expect_same(got[1], want);
  EXPECT_EQ(libraries().size(), 1u) << "equal keys, one entry";
}

TEST_F(CompileTest, WithoutACompilerWarnsOnceAndRunsEagerly) {
  std::vector<std::string> warnings;
  set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  setenv("LOOM_CXX", "/nonexistent/c++", 1);
  const std::vector<Tensor> in = chain_inputs(8, 5);
  auto f = compile(&chain);
  for (int i = 0; i < 2; ++i) expect_same(f(in)[0], chain(in)[0]);
  EXPECT_EQ(f.stats().fallbacks, 1);
  EXPECT_EQ(f.stats().fused_groups, 0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "no C++ compiler found ('/nonexistent/c++'")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "fused groups run eagerly")) << warnings[0];
}

TEST_F(CompileTest, ACompilerSettingMayHoldWords) {
  setenv("LOOM_CXX", "c++ -Wall", 1);  // as CXX often is ("ccache g++")
  const std::vector<Tensor> in = chain_inputs(8, 5);
  auto f = compile(&chain);
  expect_same(f(in)[0], chain(in)[0]);
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().fused_groups, 1);
}

TEST_F(CompileTest, ACompilerErrorIsShownAndTheGraphRunsEagerly) {
  std::vector<std::string> warnings;
  set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  // A "compiler" that reports a version and then fails every build.
  fs::create_directories(cache_);
  const fs::path broken = cache_ / "broken-c++";
  {
    std::ofstream s(broken);
    s << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo broken 1.0; exit 0; fi\n"
         "echo 'generated.cpp:1:1: error: this compiler is broken' >&2\nexit 3\n";
  }
  fs::permissions(broken, fs::perms::owner_all);
  setenv("LOOM_CXX", broken.c_str(), 1);
  const std::vector<Tensor> in = chain_inputs(8, 5);
  auto f = compile(&chain, {.name = "chain"});
  expect_same(f(in)[0], chain(in)[0]);
  EXPECT_EQ(f.stats().fallbacks, 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "chain: the C++ compiler failed (exit status 3)"))
      << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "error: this compiler is broken")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "runs eagerly")) << warnings[0];
}

/// Copies of in that require grad (leaves of their own).
std::vector<Tensor> leaves(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    out.push_back(t.detach().clone());
    out.back().set_requires_grad(true);
  }
  return out;
}

/// Each input's gradient against eager's (both defined or both not).
void expect_same_grads(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                       double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    ASSERT_EQ(got[i].grad().defined(), want[i].grad().defined());
    if (!want[i].grad().defined()) continue;
    ASSERT_EQ(got[i].grad().sizes().vec(), want[i].grad().sizes().vec());
    expect_close(got[i].grad(), want[i].grad().sizes(), to_doubles(want[i].grad()), rtol, atol);
  }
}

/// The sum over outputs of sum(out * w), with a random w per output (seeds from seed): each
/// output's and each element's derivative shows on its own.
Tensor weighted_loss(const std::vector<Tensor>& outs, uint64_t seed) {
  Tensor loss;
  for (size_t k = 0; k < outs.size(); ++k) {
    const Tensor part = sum(mul(outs[k], random(outs[k].sizes().vec(), seed + k, outs[k].dtype())));
    loss = loss.defined() ? add(loss, part) : part;
  }
  return loss;
}

TEST_F(CompileTest, WithInputsThatRequireGradTheGroupHasAFusedBackward) {
  auto f = compile(&chain);
  for (int call = 0; call < 2; ++call) {  // a capture, then a replay
    const std::vector<Tensor> in = leaves(chain_inputs(6, 4, 1 + call)), ref = leaves(in);
    const Tensor out = f(in)[0];
    EXPECT_TRUE(out.requires_grad());
    if (call == 1) {  // a replay
      EXPECT_EQ(out.grad_fn()->name(), "CompiledFunctionBackward");
    }
    sum(out).backward();  // an expanded gradient: copied into the output's layout
    sum(chain(ref)[0]).backward();
    expect_same_grads(in, ref, 1e-5, 1e-6);  // w and b: summed over the broadcast rows
  }
  EXPECT_EQ(f.stats().fused_groups, 1) << "forward and backward: one group";
  // Under no_grad the same inputs take another graph, with no backward.
  autograd::NoGradGuard off;
  const std::vector<Tensor> in = chain_inputs(6, 4);
  const Tensor out = f(in)[0];
  EXPECT_FALSE(out.requires_grad());
  expect_same(out, chain(in)[0]);
  EXPECT_EQ(f.stats().fused_groups, 2);
}

TEST_F(CompileTest, EveryFusibleOpHasEagersGradient) {
  auto f = compile(&all_fusible_ops);
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    const std::vector<Tensor> in = leaves(fusible_inputs(257, t)), ref = leaves(in);
    const std::vector<Tensor> got = f(in), want = all_fusible_ops(ref);
    weighted_loss(got, 100).backward();
    weighted_loss(want, 100).backward();
    expect_same_grads(in, ref, t == DType::Float64 ? 1e-12 : 1e-5, 1e-5);
  }
  EXPECT_EQ(f.stats().fused_groups, 2);
}

TEST_F(CompileTest, FusedBackwardPassesGradcheck) {
  // Finite differences in float64 against the generated backward loops, every op at once.
  auto f = compile(&all_fusible_ops);
  const std::vector<Tensor> in = leaves(fusible_inputs(5, DType::Float64));
  EXPECT_TRUE(autograd::gradcheck([&](const autograd::variable_list& x) { return f(x); }, in));
  EXPECT_GE(f.stats().fused_groups, 1);
}

TEST_F(CompileTest, FusedBackwardWithLibraryOpsSharedValuesAndUnusedOutputs) {
  // h = tanh(x * w) is the output of one group, read by a library op (matmul) and by the
  // next group (h * h + x, then sigmoid), which also outputs z, a value the loss does not
  // use: its gradient is missing.
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor h = tanh(mul(in[0], in[1]));
    const Tensor z = add(mul(h, h), in[0]);
    return std::vector<Tensor>{matmul(h, in[2]), z, sigmoid(sub(z, 1.0))};
  };
  auto f = compile(fn);
  const std::vector<Tensor> base = {random({8, 5}, 1), random({5}, 2), random({5, 3}, 3)};
  for (int call = 0; call < 2; ++call) {
    const std::vector<Tensor> in = leaves(base), ref = leaves(base);
    const std::vector<Tensor> got = f(in), want = fn(ref);
    add(sum(got[0]), sum(mul(got[2], got[2]))).backward();
    add(sum(want[0]), sum(mul(want[2], want[2]))).backward();
    expect_same_grads(in, ref, 1e-5, 1e-6);
  }
  EXPECT_EQ(f.stats().fused_groups, 2) << "mul tanh | matmul | mul add sub sigmoid";
}

TEST_F(CompileTest, FusedBackwardKeepsAutogradsChecks) {
  auto f = compile(&chain);
  std::vector<Tensor> in = leaves(chain_inputs(6, 4));
  {
    // retain_graph: a second backward gives the same gradients again.
    const Tensor loss = sum(f(in)[0]);
    loss.backward({}, /*retain_graph=*/true);
    const std::vector<double> once = to_doubles(in[0].grad());
    loss.backward();
    const std::vector<double> twice = to_doubles(in[0].grad());
    for (size_t i = 0; i < once.size(); ++i) EXPECT_DOUBLE_EQ(twice[i], 2 * once[i]);
    // Without it, a third one is refused as eager refuses it.
    EXPECT_THROW(loss.backward(), AutogradError);
  }
  {
    // An input modified in place after the forward: the saved-tensor version check.
    const Tensor loss = sum(f(in)[0]);
    {
      autograd::NoGradGuard off;
      in[3].add_(1.0);
    }
    try {
      loss.backward();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "modified by an inplace operation")) << e.what();
    }
  }
  {
    // Double backward through generated code is refused, naming loom::compile.
    in = leaves(chain_inputs(6, 4));
    const Tensor loss = sum(f(in)[0]);
    try {
      autograd::grad({loss}, {in[0]}, {}, std::nullopt, /*create_graph=*/true);
      ADD_FAILURE() << "no error";
    } catch (const AutogradError& e) {
      EXPECT_TRUE(contains(e.what(), "does not support double backward")) << e.what();
    }
  }
}

TEST_F(CompileTest, AFunctionThatReadsAValueRunsEagerlyWithOneWarning) {
  // The branch depends on a value: replaying the first call's ops would be wrong for the
  // second input, whose sum has the other sign.
  std::vector<std::string> warnings;
  set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (sum(x).item<double>() > 0) return std::vector<Tensor>{mul(exp(x), 2.0)};
    return std::vector<Tensor>{neg(x)};
  };
  auto f = compile(fn, {.name = "branchy"});
  const Tensor pos = add(abs(random({4, 3}, 1)), 0.5), negative = neg(pos);
  expect_same(f({pos})[0], fn({pos})[0]);
  expect_same(f({negative})[0], fn({negative})[0]);
  expect_same(f({pos})[0], fn({pos})[0]);
  const CompileStats s = f.stats();
  EXPECT_EQ(s.captures, 1);
  EXPECT_EQ(s.replays, 0);
  EXPECT_EQ(s.eager, 2);
  EXPECT_EQ(s.compiles, 0) << "a graph that is never replayed is not built";
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0],
                       "branchy: it read a tensor value with Tensor::item() "
                       "before aten::exp (op 2 of its trace)"))
      << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "run it eagerly")) << warnings[0];
}

TEST_F(CompileTest, ValuesReadInsideOpsDoNotStopReplay) {
  // fill_ with a one-element tensor value reads it inside its kernel: the replay runs the op
  // again and reads the new value, so the graph replays.
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor t = mul(in[0], 1.0);
    fill_(t, in[1]);
    return std::vector<Tensor>{add(t, in[0])};
  };
  auto f = compile(fn);
  const Tensor x = random({3}, 1);
  f({x, make_tensor({2.0}, {})});
  expect_same(f({x, make_tensor({5.0}, {})})[0], fn({x, make_tensor({5.0}, {})})[0]);
  EXPECT_EQ(f.stats().replays, 1);
}

TEST_F(CompileTest, AGroupAfterAValueCountingOpChecksItsSizes) {
  // masked_select's size is a count of values; the fused group after it was built for the
  // captured count. Another count must not run that loop (it would read and write past the
  // tensors): the group's ops run eagerly.
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor picked = masked_select(in[0], gt(in[0], 0.0));
    return std::vector<Tensor>{tanh(add(mul(picked, 2.0), 1.0))};
  };
  auto f = compile(fn);
  const Tensor few = make_tensor({1, -1, -2, -3, 4, -5}, {6});
  const Tensor many = make_tensor({1, 2, 3, -3, 4, 5}, {6});
  expect_same(f({few})[0], fn({few})[0]);
  for (int i = 0; i < 2; ++i) {
    expect_same(f({many})[0], fn({many})[0]);
    expect_same(f({few})[0], fn({few})[0]);
  }
  EXPECT_EQ(f.stats().fused_groups, 1);
  EXPECT_EQ(f.stats().replays, 4);
}

/// Softmax, layer norm and RMS norm over the last dim, written out of reductions and
/// pointwise ops, as users write them (and a plain row sum without keepdim).
std::vector<Tensor> row_programs(const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &w = in[1], &b = in[2];
  const Tensor e = exp(sub(x, amax(x, {-1}, true)));
  const Tensor softmax = div(e, sum(e, {-1}, true));
  const Tensor centered = sub(x, mean(x, {-1}, true));
  const Tensor var = mean(mul(centered, centered), {-1}, true);
  const Tensor layer_norm = add(mul(mul(centered, rsqrt(add(var, 1e-5))), w), b);
  const Tensor rms = mul(mul(x, rsqrt(add(mean(mul(x, x), {-1}, true), 1e-6))), w);
  return {softmax, layer_norm, rms, sum(mul(x, w), {1}, false)};
}

TEST_F(CompileTest, SoftmaxLayerNormAndRmsNormWrittenOutFuseIntoRowLoops) {
  auto f = compile(&row_programs);
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    for (int call = 0; call < 2; ++call) {
      const std::vector<Tensor> in = {mul(random({37, 300}, 1 + call, t), 4.0), random({300}, 5, t),
                                      random({300}, 6, t)};
      const std::vector<Tensor> got = f(in), want = row_programs(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        SCOPED_TRACE("output " + std::to_string(i));
        expect_same(got[i], want[i], t == DType::Float64 ? 1e-12 : 1e-5, 1e-6);
      }
    }
  }
  // Each dtype: softmax, layer norm, RMS norm and the sum share rows of x: one group.
  EXPECT_EQ(f.stats().fused_groups, 2);
}

TEST_F(CompileTest, RowGroupsFollowStridesBroadcastsAndNaN) {
  // A transposed x (rows strided), a [rows, 1] input broadcast along the rows, amax with a
  // NaN in one row, and a row output without keepdim.
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor x = transpose(in[0], 0, 1);  // [5, 40], row elements 5 apart
    const Tensor m = amax(add(x, in[1]), {1}, true);
    return std::vector<Tensor>{sub(x, m), sum(mul(x, 2.0), {-1}, false), m};
  };
  auto f = compile(fn);
  Tensor base = random({40, 5}, 3);
  std::vector<double> v = to_doubles(base);
  v[7] = NAN;  // row 2 of x
  base = make_tensor(v, {40, 5});
  const std::vector<Tensor> in = {base, random({5, 1}, 4)};
  for (int i = 0; i < 2; ++i) {
    const std::vector<Tensor> got = f(in), want = fn(in);
    for (size_t k = 0; k < got.size(); ++k) {
      SCOPED_TRACE("output " + std::to_string(k));
      expect_same(got[k], want[k], 1e-5, 1e-6);
    }
  }
  EXPECT_EQ(f.stats().fused_groups, 1);
}

TEST_F(CompileTest, RowGroupsHaveAFusedBackward) {
  // The three norms with x, w and b requiring grad: the row values' gradients are sums over
  // their rows inside the backward loop.
  auto f = compile(&row_programs);
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    for (int call = 0; call < 2; ++call) {
      const std::vector<Tensor> base = {mul(random({9, 64}, 1 + call, t), 4.0), random({64}, 5, t),
                                        random({64}, 6, t)};
      const std::vector<Tensor> in = leaves(base), ref = leaves(base);
      const std::vector<Tensor> got = f(in), want = row_programs(ref);
      weighted_loss(got, 50).backward();
      weighted_loss(want, 50).backward();
      expect_same_grads(in, ref, t == DType::Float64 ? 1e-10 : 1e-4, 1e-5);
      if (call == 1) {
        EXPECT_EQ(got[0].grad_fn()->name(), "CompiledFunctionBackward");
      }
    }
  }
  EXPECT_EQ(f.stats().fused_groups, 2);
}

TEST_F(CompileTest, RowBuffersKeepValuesOfLongRows) {
  // exp and the divisions are computed once and kept in row buffers for the later passes
  // (Note [Row buffers]): on the stack up to 16 KiB, on the heap beyond (a
  // float64 row of 9000 elements needs three buffers of 72 KB here).
  for (int64_t n : {int64_t{700}, int64_t{9000}}) {
    for (DType t : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE(std::to_string(n) + " " + std::string(dtype_name(t)));
      auto f = compile(&row_programs);
      const std::vector<Tensor> base = {mul(random({3, n}, 11, t), 6.0), random({n}, 12, t),
                                        random({n}, 13, t)};
      const std::vector<Tensor> in = leaves(base), ref = leaves(base);
      const std::vector<Tensor> got = f(in), want = row_programs(ref);
      const double rtol = t == DType::Float64 ? 1e-10 : 1e-4;
      for (size_t i = 0; i < want.size(); ++i) {
        expect_close(got[i], want[i].sizes(), to_doubles(want[i]), rtol, 1e-6);
      }
      weighted_loss(got, 51).backward();
      weighted_loss(want, 51).backward();
      expect_same_grads(in, ref, rtol, 1e-5);
      EXPECT_EQ(f.stats().fused_groups, 1) << "the four results share one row loop";
    }
  }
}

TEST_F(CompileTest, RowGroupBackwardSharesAmaxAmongTiesAndPassesGradcheck) {
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor m = amax(mul(in[0], 2.0), {-1}, true);
    return std::vector<Tensor>{mul(sub(in[0], m), m), sum(exp(in[0]), {-1}, false)};
  };
  auto f = compile(fn);
  // Row 0 has its maximum twice: each copy gets half of the row's gradient, as eager.
  const Tensor x = make_tensor({1, 3, 3, 0, -1, 2, 0.5, 1.5}, {2, 4}, DType::Float64);
  const std::vector<Tensor> in = leaves({x}), ref = leaves({x});
  f(leaves({x}));
  sum(f(in)[0]).backward();
  sum(fn(ref)[0]).backward();
  expect_same_grads(in, ref, 1e-12, 1e-12);
  EXPECT_TRUE(autograd::gradcheck([&](const autograd::variable_list& v) { return f(v); },
                                  leaves({random({3, 5}, 9, DType::Float64)})));
  EXPECT_GE(f.stats().fused_groups, 2) << "one group per input shape, with its backward";
}

TEST_F(CompileTest, DeadAndRepeatedLibraryOpsAreNotRunButRandomOnesAre) {
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor a = matmul(in[0], in[1]);
    const Tensor b = matmul(in[0], in[1]);  // a's op and arguments: a's result
    matmul(in[1], in[0]);                   // nobody reads it
    rand_like(in[0]);                       // nobody reads it, but it draws: kept
    return std::vector<Tensor>{add(a, b), rand_like(in[0])};
  };
  auto f = compile(fn);
  const std::vector<Tensor> in = {random({4, 4}, 1), random({4, 4}, 2)};
  for (int i = 0; i < 2; ++i) {
    manual_seed(7);
    const std::vector<Tensor> got = f(in);
    manual_seed(7);
    const std::vector<Tensor> want = fn(in);
    expect_same(got[0], want[0]);
    expect_same(got[1], want[1], 0, 0);  // the same draws: the dead rand_like ran
  }
  EXPECT_EQ(f.stats().removed_nodes, 2) << "the repeated matmul and the dead one";
}

TEST_F(CompileTest, ConstantsAreFoldedAndNeverHandedToTheCaller) {
  // The causal mask depends on no input: ones and triu run on the first call only. arange is
  // returned and full is read by a view that is returned: the caller may write to them, so
  // they run on every call.
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor mask = triu(ones({4, 4}), 1);
    return std::vector<Tensor>{add(matmul(in[0], in[1]), mask), arange(4.0),
                               expand(full({4}, 2.0), {3, 4})};
  };
  auto f = compile(fn);
  const std::vector<Tensor> in = {random({4, 4}, 1), random({4, 4}, 2)};
  for (int call = 0; call < 3; ++call) {
    if (call == 2) profiler::start({});
    const std::vector<Tensor> got = f(in);
    std::vector<std::string> ran;
    if (call == 2) {
      const profiler::Profile profile = profiler::stop();
      for (const profiler::Event& e : profile.events()) ran.push_back(e.name);
      EXPECT_EQ(std::count(ran.begin(), ran.end(), "aten::ones"), 0);
      EXPECT_EQ(std::count(ran.begin(), ran.end(), "aten::triu"), 0);
      EXPECT_EQ(std::count(ran.begin(), ran.end(), "aten::arange"), 1);
    }
    const std::vector<Tensor> want = fn(in);
    for (size_t i = 0; i < want.size(); ++i) expect_same(got[i], want[i], 0, 0);
    got[1].add_(10.0);  // the caller's to change: the next call's arange is fresh
  }
  EXPECT_EQ(f.stats().folded_nodes, 2) << "ones and triu";
}

TEST_F(CompileTest, ReturnedResultsAreNeverMerged) {
  // The caller may write to one of them: they stay two tensors, as eager's.
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{matmul(in[0], in[1]), matmul(in[0], in[1])};
  };
  auto f = compile(fn);
  const std::vector<Tensor> in = {random({3, 3}, 1), random({3, 3}, 2)};
  f(in);
  const std::vector<Tensor> got = f(in);
  EXPECT_FALSE(got[0].is_alias_of(got[1]));
  EXPECT_EQ(f.stats().removed_nodes, 0);
}

TEST_F(CompileTest, InPlaceOpsTurnCommonSubexpressionEliminationOff) {
  // b equals a until a is modified in place: merging them would add 1 to b as well.
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = matmul(in[0], in[1]);
    const Tensor b = matmul(in[0], in[1]);
    a.add_(1.0);
    return std::vector<Tensor>{a, b};
  };
  auto f = compile(fn);
  const std::vector<Tensor> in = {random({3, 3}, 1), random({3, 3}, 2)};
  for (int i = 0; i < 2; ++i) {
    const std::vector<Tensor> got = f(in), want = fn(in);
    expect_same(got[0], want[0]);
    expect_same(got[1], want[1]);
  }
  EXPECT_EQ(f.stats().removed_nodes, 0);
}

}  // namespace
}  // namespace loom
