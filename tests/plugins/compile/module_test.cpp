// loom::compile(module): the module's training mode and its parameters' identities are guards,
// in-place updates need no recompile, gradients reach the parameters, hooks run; softmax and
// layer_norm are captured as their parts and join their neighbours' loops.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "loom/compile/compile.h"
#include "loom/loom.h"
#include "loom/nn/nn.h"
#include "loom/profiler/profiler.h"
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

TEST_F(CompiledModuleTest, SoftmaxAndLayerNormJoinTheirNeighboursLoops) {
  // Captured as their parts (Note [Decompositions]): the scale joins the softmax, the
  // residual add joins the layer norm; values and gradients as eager's, up to rounding.
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &r = in[1], &w = in[2], &b = in[3];
    return std::vector<Tensor>{softmax(mul(x, 0.5), -1), log_softmax(sub(x, r), 1),
                               layer_norm(add(x, r), {x.size(-1)}, w, b, 1e-5)};
  };
  auto f = compile(fn);
  for (DType t : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(t));
    for (int call = 0; call < 2; ++call) {
      std::vector<Tensor> in = {mul(randn({6, 33}, t), 3.0), randn({6, 33}, t), rand({33}, t),
                                rand({33}, t)};
      std::vector<Tensor> ref;
      for (Tensor& v : in) {
        v.set_requires_grad(true);
        ref.push_back(v.detach().clone());
        ref.back().set_requires_grad(true);
      }
      const std::vector<Tensor> got = f(in), want = fn(ref);
      for (size_t i = 0; i < want.size(); ++i) expect_same(got[i], want[i]);
      const Tensor g = randn({6, 33}, t);
      add(add(sum(mul(got[0], g)), sum(mul(got[1], g))), sum(mul(got[2], g))).backward();
      add(add(sum(mul(want[0], g)), sum(mul(want[1], g))), sum(mul(want[2], g))).backward();
      for (size_t i = 0; i < in.size(); ++i) expect_same(in[i].grad(), ref[i].grad());
    }
  }
  // Per dtype: one row loop for the three (they read the same rows).
  EXPECT_EQ(f.stats().fused_groups, 2);

  // A transposed input keeps eager's single op (its result's layout is eager's).
  auto g = compile([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{softmax(transpose(in[0], 0, 1), -1)};
  });
  const Tensor x = randn({7, 5});
  expect_same(g({x})[0], softmax(transpose(x, 0, 1), -1));
  EXPECT_EQ(g.stats().fused_groups, 0);
}

TEST_F(CompiledModuleTest, DropoutInAFusedLoopDrawsEagersMask) {
  // Dropout joins the loops around it: one seed per call from the generator, as eager's
  // native_dropout draws it, and the mask from that seed (Note [Counter-based draws]), so
  // values and gradients are eager's bit for bit, and a random op after the loop draws what it
  // would eagerly. The second function's dropout sits in a layer norm's row loop.
  auto pointwise = [](const std::vector<Tensor>& in) {
    const Tensor h = dropout(relu(mul(in[0], in[1])), 0.3, true);
    return std::vector<Tensor>{add(h, in[2]), rand_like(in[0])};
  };
  auto rows = [](const std::vector<Tensor>& in) {
    const Tensor h = add(dropout(mul(in[0], 2.0), 0.1, true), in[2]);
    return std::vector<Tensor>{layer_norm(h, {h.size(-1)}, in[1], std::nullopt, 1e-5)};
  };
  for (auto fn : {std::function<std::vector<Tensor>(const std::vector<Tensor>&)>(pointwise),
                  std::function<std::vector<Tensor>(const std::vector<Tensor>&)>(rows)}) {
    auto f = compile(fn);
    for (int call = 0; call < 3; ++call) {
      std::vector<Tensor> in = {randn({5, 67}), rand({67}), randn({5, 67})}, ref;
      for (Tensor& v : in) {
        v.set_requires_grad(true);
        ref.push_back(v.detach().clone());
        ref.back().set_requires_grad(true);
      }
      manual_seed(100 + call);
      if (call == 2) profiler::start({});
      const std::vector<Tensor> got = f(in);
      if (call == 2) {
        const profiler::Profile profile = profiler::stop();
        for (const profiler::Event& e : profile.events()) {
          EXPECT_EQ(e.name.find("dropout"), std::string::npos) << e.name << " ran eagerly";
        }
      }
      manual_seed(100 + call);
      const std::vector<Tensor> want = fn(ref);
      for (size_t i = 0; i < want.size(); ++i) {
        expect_close(got[i], want[i].sizes(), to_doubles(want[i]), 1e-6, 1e-6);
      }
      const Tensor g = randn({5, 67});
      sum(mul(got[0], g)).backward();
      sum(mul(want[0], g)).backward();
      for (size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(in[i].grad().defined(), ref[i].grad().defined()) << i;
        if (in[i].grad().defined()) expect_same(in[i].grad(), ref[i].grad());
      }
    }
    EXPECT_EQ(f.stats().fused_groups, 1);
  }
}

}  // namespace
}  // namespace loom
