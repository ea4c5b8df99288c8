// loom::graph::GuardedFunction: replays while the guards hold, captures again when they do not,
// and runs eagerly with one warning past the recompile limit.
#include "loom/graph/guarded.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compile_test_util.h"
#include "loom/core/warning.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom::graph {
namespace {

using loom::graph::testing::ramp;
using loom::testing::contains;
using loom::testing::make_tensor;
using loom::testing::to_doubles;

class GuardedTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
  void TearDown() override { set_warning_handler({}); }
};

TEST_F(GuardedTest, ReplaysWhileTheGuardsHoldAndCapturesAgainWhenNot) {
  int calls = 0;
  const Tensor w = ramp({4, 4});
  auto fn = [&](const std::vector<Tensor>& in) {
    ++calls;
    return std::vector<Tensor>{gelu(add(matmul(in[0], w), 1.0))};
  };
  GuardedFunction f(fn, {.name = "mlp"});
  for (int i = 0; i < 3; ++i) {
    const Tensor x = ramp({2, 4}, 0.1 * (i + 1));
    EXPECT_EQ(to_doubles(f({x})[0]), to_doubles(fn({x})[0])) << i;
  }
  EXPECT_EQ(calls, 1 + 3) << "one capture, two replays (and three eager references)";
  EXPECT_EQ(f.stats().captures, 1);
  EXPECT_EQ(f.stats().replays, 2);
  // Another batch size fails the sizes guard: a second graph, then replayed too.
  const Tensor y = ramp({5, 4});
  EXPECT_EQ(to_doubles(f({y})[0]), to_doubles(fn({y})[0]));
  EXPECT_EQ(to_doubles(f({y})[0]), to_doubles(fn({y})[0]));
  EXPECT_EQ(f.stats().captures, 2);
  EXPECT_EQ(f.stats().replays, 3);
  ASSERT_EQ(f.graphs().size(), 2u);
  EXPECT_TRUE(contains(f.graphs()[1].str(), "graph(%0 : f32[5, 4])")) << f.graphs()[1].str();
}

TEST_F(GuardedTest, GradModeIsAGuard) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{tanh(in[0])}; };
  GuardedFunction f(fn);
  Tensor x = ramp({3});
  x.set_requires_grad(true);
  Tensor y = f({x})[0];
  EXPECT_TRUE(y.requires_grad());
  {
    autograd::NoGradGuard off;
    EXPECT_FALSE(f({x})[0].requires_grad());
  }
  EXPECT_EQ(f.stats().captures, 2);
  // Replayed with grad on: the gradient is eager's.
  Tensor x2 = ramp({3}, 0.3);
  x2.set_requires_grad(true);
  sum(f({x2})[0]).backward();
  EXPECT_EQ(f.stats().replays, 1);
  Tensor x3 = ramp({3}, 0.3);
  x3.set_requires_grad(true);
  sum(tanh(x3)).backward();
  EXPECT_EQ(to_doubles(x2.grad()), to_doubles(x3.grad()));
}

TEST_F(GuardedTest, PastTheRecompileLimitRunsEagerlyWithOneWarningNamingTheGuard) {
  std::vector<std::string> warnings;
  set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  int calls = 0;
  auto fn = [&](const std::vector<Tensor>& in) {
    ++calls;
    return std::vector<Tensor>{mul(in[0], 2.0)};
  };
  GuardedFunction f(fn, {.name = "scale", .recompile_limit = 2});
  for (int64_t n = 1; n <= 5; ++n) {
    const Tensor x = ramp({n});
    EXPECT_EQ(to_doubles(f({x})[0]), to_doubles(mul(x, 2.0))) << n;
  }
  EXPECT_EQ(f.stats().captures, 2);
  EXPECT_EQ(f.stats().eager, 3);
  EXPECT_EQ(calls, 5) << "every call past the limit runs the function";
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "scale reached its recompile limit (2 graphs)")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "input 0: sizes [3], captured [1]")) << warnings[0];
  // Metadata seen before still replays.
  EXPECT_EQ(to_doubles(f({ramp({2})})[0]), to_doubles(mul(ramp({2}), 2.0)));
  EXPECT_EQ(f.stats().replays, 1);
  EXPECT_THROW(GuardedFunction(fn, {.recompile_limit = 0}), ValueError);
}

}  // namespace
}  // namespace loom::graph
