// loom::compile(module): the module's training mode and its parameters' identities are guards,
// in-place updates need no recompile, gradients reach the parameters, hooks run.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "loom/compile/compile.h"
#include "loom/loom.h"
#include "loom/nn/nn.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using loom::testing::expect_close;
using loom::testing::to_doubles;

class CompiledModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loom::init();
    manual_seed(0);
    cache_ =
        std::filesystem::temp_directory_path() / ("loom-module-test-" + std::to_string(getpid()));
    setenv("LOOM_CACHE_DIR", cache_.c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(cache_); }
  std::filesystem::path cache_;
};

void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  expect_close(got, want.sizes(), to_doubles(want), 1e-5, 1e-6);
}

TEST_F(CompiledModuleTest, TrainAndEvalEachHaveTheirGraph) {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 5),
                                            std::make_shared<nn::Dropout>(0.5));
  CompiledModule c = compile(m);
  const Tensor x = randn({8, 6});
  for (int round = 0; round < 2; ++round) {
    m->train();
    for (int i = 0; i < 2; ++i) {
      manual_seed(5);
      const Tensor got = c(x);
      manual_seed(5);
      expect_same(got, (*m)(x));  // the same dropout mask from the same seed
    }
    m->eval();
    for (int i = 0; i < 2; ++i) expect_same(c(x), (*m)(x));  // no dropout
  }
  const CompileStats s = c.stats();
  EXPECT_EQ(s.captures, 2) << "one graph per mode; switching back recompiles nothing";
  EXPECT_EQ(s.replays, 6);
}

TEST_F(CompiledModuleTest, AReplacedParameterDropsTheGraphs) {
  auto m = std::make_shared<nn::Linear>(4, 3);
  CompiledModule c = compile(m);
  const Tensor x = randn({2, 4});
  c(x);
  c(x);
  m->register_parameter("weight", randn({3, 4}));  // another tensor: the graph read the old one
  expect_same(c(x), (*m)(x));
  EXPECT_EQ(c.stats().captures, 2);
  expect_same(c(x), (*m)(x));
  EXPECT_EQ(c.stats().captures, 2);
  EXPECT_EQ(c.stats().replays, 2) << "counts survive the dropped graphs";
}

TEST_F(CompiledModuleTest, InPlaceUpdatesNeedNoRecompile) {
  auto m = std::make_shared<nn::Linear>(4, 3);
  CompiledModule c = compile(m);
  const Tensor x = randn({2, 4});
  c(x);
  {
    autograd::NoGradGuard off;  // as an optimizer step
    m->parameters()[0].add_(1.0);
  }
  expect_same(c(x), (*m)(x));
  EXPECT_EQ(c.stats().captures, 1);
  EXPECT_EQ(c.stats().replays, 1);
}

TEST_F(CompiledModuleTest, GradientsReachTheParametersThroughFusedGroups) {
  // GELU (tanh form) then Tanh between two Linear layers: one group with a backward loop.
  auto m = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(6, 8), std::make_shared<nn::GELU>("tanh"),
      std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(8, 3));
  CompiledModule c = compile(m);
  const Tensor x = randn({5, 6});
  for (int call = 0; call < 3; ++call) {
    const Tensor xc = x.clone().requires_grad_(), xe = x.clone().requires_grad_();
    m->zero_grad();
    sum(c(xc).pow(2.0)).backward();
    std::vector<Tensor> compiled_grads;
    for (const Tensor& p : m->parameters()) compiled_grads.push_back(p.grad().clone());
    m->zero_grad();
    sum((*m)(xe).pow(2.0)).backward();
    const std::vector<Tensor> params = m->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      SCOPED_TRACE("parameter " + std::to_string(i) + ", call " + std::to_string(call));
      expect_same(compiled_grads[i], params[i].grad());
    }
    expect_same(xc.grad(), xe.grad());
  }
  EXPECT_EQ(c.stats().captures, 1);
  EXPECT_EQ(c.stats().replays, 2);
  EXPECT_EQ(c.stats().fused_groups, 1);
}

TEST_F(CompiledModuleTest, ForwardHooksRunInTheGraph) {
  auto m = std::make_shared<nn::Linear>(4, 3);
  m->register_forward_hook(
      [](nn::Module&, const Tensor&, const Tensor& out) -> std::optional<Tensor> {
        return mul(out, 2.0);
      });
  CompiledModule c = compile(m);
  const Tensor x = randn({2, 4});
  c(x);
  expect_same(c(x), (*m)(x));
  EXPECT_EQ(c.stats().replays, 1);
}

TEST_F(CompiledModuleTest, ANullModuleIsRefusedWithAMessage) {
  try {
    compile(std::shared_ptr<nn::Linear>());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loom::compile: the module is null"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom
