// The autograd engine: graph recording, backward, accumulation, grad(), hooks, views and
// in-place ops, grad modes, custom functions, anomaly mode, checkpointing, and PyTorch's
// errors (with PyTorch's wording), checked against gradients worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/autograd/autograd.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using autograd::variable_list;
using testing::contains;
using testing::make_tensor;
using testing::message_of;
using testing::to_doubles;
using Values = std::vector<double>;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
  static Tensor leaf(Values v, std::vector<int64_t> sizes, DType t = DType::Float32) {
    Tensor x = make_tensor(v, sizes, t);
    x.set_requires_grad(true);
    return x;
  }
};

TEST_F(EngineTest, MulAddBackward) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor w = leaf({4, 5, 6}, {3});
  Tensor y = (x * w + x).sum();
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward0");
  y.backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{5, 6, 7}));
  EXPECT_EQ(to_doubles(w.grad()), (Values{1, 2, 3}));
  EXPECT_FALSE(x.grad().requires_grad());
}

TEST_F(EngineTest, BroadcastGradientsAreSummedToEachInputShape) {
  Tensor a = leaf({1, 2, 3}, {3, 1});
  Tensor b = leaf({1, 10, 100, 1000}, {4});
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().sizes(), (IntArrayRef{3, 1}));
  EXPECT_EQ(to_doubles(a.grad()), (Values{1111, 1111, 1111}));
  EXPECT_EQ(to_doubles(b.grad()), (Values{6, 6, 6, 6}));
}

TEST_F(EngineTest, GradAccumulatesAcrossBackwardCallsUntilReset) {
  Tensor x = leaf({1, 2}, {2});
  (x * x).sum().backward();
  (x * x).sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{4, 8}));
  x.set_grad(Tensor());  // zero_grad(set_to_none=true)
  EXPECT_FALSE(x.grad().defined());
  (x * 3.0).sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{3, 3}));
  x.grad().zero_();  // zero_grad(set_to_none=false)
  (x * 3.0).sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{3, 3}));
}

TEST_F(EngineTest, SharedSubexpressionsSumTheirGradients) {
  Tensor x = leaf({2}, {1});
  Tensor y = x * x;          // used twice
  Tensor z = (y * y + y).sum();  // z = x^4 + x^2, dz/dx = 4x^3 + 2x = 36
  z.backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{36}));
}

TEST_F(EngineTest, SeveralRootsWithGradients) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y1 = x * 2.0, y2 = x * x;
  autograd::backward({y1, y2}, {make_tensor({1, 1}, {2}), make_tensor({10, 100}, {2})});
  EXPECT_EQ(to_doubles(x.grad()), (Values{22, 402}));
}

TEST_F(EngineTest, BackwardTwiceThroughAFreedGraphFailsLikePyTorch) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = (x * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();  // retained: allowed, accumulates
  EXPECT_EQ(to_doubles(x.grad()), (Values{4, 8}));
  const std::string msg = message_of<AutogradError>([&] { y.backward(); });
  EXPECT_TRUE(contains(msg, "Trying to backward through the graph a second time")) << msg;
  EXPECT_TRUE(contains(msg, "retain_graph=True")) << msg;
}

TEST_F(EngineTest, SavedTensorModifiedInPlaceIsReportedWithVersions) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = x * 1.0;
  Tensor b = a * a;  // saves a at version 0
  a.mul_(2.0);
  const std::string msg = message_of<AutogradError>([&] { b.sum().backward(); });
  EXPECT_TRUE(contains(msg, "one of the variables needed for gradient computation has been "
                            "modified by an inplace operation")) << msg;
  EXPECT_TRUE(contains(msg, "which is output 0 of MulBackward0")) << msg;
  EXPECT_TRUE(contains(msg, "is at version 1; expected version 0 instead")) << msg;
}

TEST_F(EngineTest, InPlaceOnLeafThatRequiresGradIsRefused) {
  Tensor x = leaf({1, 2}, {2});
  const std::string msg = message_of<AutogradError>([&] { x.add_(1.0); });
  EXPECT_TRUE(contains(msg, "a leaf Variable that requires grad is being used in an in-place "
                            "operation")) << msg;
  {
    autograd::NoGradGuard no_grad;  // how optimizers update parameters
    x.add_(1.0);
  }
  EXPECT_EQ(to_doubles(x), (Values{2, 3}));
  EXPECT_TRUE(x.is_leaf());
}

TEST_F(EngineTest, InPlaceOnViewOfLeafIsRefused) {
  Tensor x = leaf({1, 2, 3, 4}, {4});
  Tensor v = x.view({2, 2});
  EXPECT_TRUE(v.is_view());
  const std::string msg = message_of<AutogradError>([&] { v.mul_(2.0); });
  EXPECT_TRUE(contains(msg, "a view of a leaf Variable that requires grad is being used in an "
                            "in-place operation")) << msg;
}

TEST_F(EngineTest, InPlaceOnNonLeafRebasesItsHistory) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = x * 1.0;
  a.mul_(3.0);
  exp_(a);
  EXPECT_EQ(a.grad_fn()->name(), "ExpBackward0");
  a.sum().backward();
  EXPECT_NEAR(to_doubles(x.grad())[0], 3 * std::exp(3.0), 1e-3);
  EXPECT_NEAR(to_doubles(x.grad())[1], 3 * std::exp(6.0), 1e-2);
}

TEST_F(EngineTest, InPlaceThroughAViewUpdatesTheBaseGradient) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = x * 1.0;
  y.narrow(0, 0, 1).mul_(2.0);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  y.sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{2, 1, 1}));
}

TEST_F(EngineTest, NonScalarBackwardNeedsAGradient) {
  Tensor x = leaf({1, 2}, {2});
  const std::string msg = message_of<AutogradError>([&] { (x * 2.0).backward(); });
  EXPECT_TRUE(contains(msg, "grad can be implicitly created only for scalar outputs")) << msg;
  const std::string shape = message_of<AutogradError>(
      [&] { (x * 2.0).backward(make_tensor({1, 2, 3}, {3})); });
  EXPECT_TRUE(contains(shape, "Mismatch in shape: grad_output[0] has a shape of [3] and "
                              "output[0] has a shape of [2]")) << shape;
}

TEST_F(EngineTest, BackwardOfTensorWithoutGradFails) {
  Tensor x = make_tensor({1, 2}, {2});
  const std::string msg = message_of<AutogradError>([&] { x.sum().backward(); });
  EXPECT_TRUE(contains(msg, "element 0 of tensors does not require grad and does not have a "
                            "grad_fn")) << msg;
}

TEST_F(EngineTest, OnlyFloatingTensorsCanRequireGrad) {
  Tensor i = make_tensor({1, 2}, {2}, DType::Int64);
  const std::string msg = message_of<TypeError>([&] { i.set_requires_grad(true); });
  EXPECT_TRUE(contains(msg, "only Tensors of floating point dtype can require gradients")) << msg;
}

TEST_F(EngineTest, OutVariantsRefuseInputsThatRequireGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor out = Tensor::empty({2});
  const std::string msg = message_of<AutogradError>([&] { add_out(out, x, x); });
  EXPECT_TRUE(contains(msg, "functions with out=... arguments don't support automatic "
                            "differentiation, but one of the arguments requires grad")) << msg;
}

TEST_F(EngineTest, FunctionalGradLeavesDotGradAlone) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = (x * x).sum();
  variable_list g = autograd::grad({y}, {x});
  EXPECT_EQ(to_doubles(g[0]), (Values{2, 4, 6}));
  EXPECT_FALSE(x.grad().defined());
}

TEST_F(EngineTest, FunctionalGradUnusedInputs) {
  Tensor x = leaf({1}, {1}), unused = leaf({1}, {1});
  Tensor y = (x * 2.0).sum();
  const std::string msg = message_of<AutogradError>(
      [&] { autograd::grad({y}, {x, unused}, {}, /*retain_graph=*/true); });
  EXPECT_TRUE(contains(msg, "appears to not have been used in the graph")) << msg;
  variable_list g = autograd::grad({y}, {x, unused}, {}, std::nullopt, false, /*allow_unused=*/true);
  EXPECT_EQ(to_doubles(g[0]), (Values{2}));
  EXPECT_FALSE(g[1].defined());
  const std::string nrg = message_of<AutogradError>(
      [&] { autograd::grad({(x * 1.0).sum()}, {make_tensor({1}, {1})}); });
  EXPECT_TRUE(contains(nrg, "does not require grad")) << nrg;
}

TEST_F(EngineTest, CreateGraphGivesHigherOrderDerivatives) {
  Tensor x = leaf({1, 2}, {2}, DType::Float64);
  Tensor y = (x * x * x).sum();
  variable_list g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(to_doubles(g[0]), (Values{3, 12}));
  EXPECT_TRUE(g[0].requires_grad());
  variable_list g2 = autograd::grad({g[0].sum()}, {x});
  EXPECT_EQ(to_doubles(g2[0]), (Values{6, 12}));
}

TEST_F(EngineTest, GradientPenalty) {
  // loss = sum(w * x) + ||d/dx sum(w * x * x)||^2, as in WGAN-GP: d/dw of the penalty.
  Tensor x = leaf({1, 2}, {2}, DType::Float64);
  Tensor w = leaf({3, 4}, {2}, DType::Float64);
  Tensor inner = (w * x * x).sum();
  Tensor gx = autograd::grad({inner}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];  // 2wx
  Tensor loss = (w * x).sum() + (gx * gx).sum();  // + sum 4 w^2 x^2
  loss.backward();
  // d/dw = x + 8 w x^2
  EXPECT_EQ(to_doubles(w.grad()), (Values{1 + 8 * 3 * 1, 2 + 8 * 4 * 4}));
}

TEST_F(EngineTest, RetainGradKeepsANonLeafGradient) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3.0;
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  Tensor z = y * y;
  z.sum().backward();
  EXPECT_EQ(to_doubles(y.grad()), (Values{6, 12}));
  Tensor plain = x * 2.0;
  plain.sum().backward();
  EXPECT_FALSE(plain.grad().defined());
}

TEST_F(EngineTest, HooksSeeAndReplaceGradients) {
  Tensor x = leaf({1, 2}, {2});
  Values seen;
  const int id = x.register_hook([&](const Tensor& g) {
    seen = to_doubles(g);
    return g * 10.0;
  });
  Tensor y = x * 2.0;
  y.register_hook([](const Tensor& g) { return g + 1.0; });
  y.sum().backward();
  EXPECT_EQ(seen, (Values{4, 4}));  // (1 + 1) * 2
  EXPECT_EQ(to_doubles(x.grad()), (Values{40, 40}));
  EXPECT_TRUE(x.remove_hook(id));
  x.set_grad(Tensor());
  (x * 2.0).sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{2, 2}));
}

TEST_F(EngineTest, NoGradEnableGradAndInferenceMode) {
  Tensor x = leaf({1, 2}, {2});
  {
    autograd::NoGradGuard no_grad;
    EXPECT_FALSE(autograd::GradMode::is_enabled());
    EXPECT_FALSE((x * 2.0).requires_grad());
    {
      autograd::EnableGradGuard enable;
      EXPECT_TRUE((x * 2.0).requires_grad());
    }
  }
  EXPECT_TRUE(autograd::GradMode::is_enabled());
  Tensor made;
  {
    autograd::InferenceMode guard;
    made = x * 2.0;
    EXPECT_FALSE(made.requires_grad());
    EXPECT_TRUE(made.impl()->is_inference());
  }
  const std::string msg = message_of<AutogradError>([&] { (x * made).sum().backward(); });
  EXPECT_TRUE(contains(msg, "Inference tensors cannot be saved for backward")) << msg;
}

TEST_F(EngineTest, DetachSharesStorageAndVersionClonePropagatesGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_alias_of(y));
  d.add_(1.0);
  EXPECT_EQ(y.version(), d.version());
  Tensor c = x.clone();
  EXPECT_TRUE(c.requires_grad());
  c.sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{1, 1}));
}

TEST_F(EngineTest, SetRequiresGradOnNonLeafFails) {
  Tensor y = leaf({1}, {1}) * 2.0;
  const std::string msg = message_of([&] { y.set_requires_grad(false); });
  EXPECT_TRUE(contains(msg, "you can only change requires_grad flags of leaf variables")) << msg;
}

// Note [Iterative graph teardown]: a graph of 100,000 nodes (a long RNN unroll) is freed
// without recursing once per node; this overflowed the stack (about 40,000 nodes were enough).
TEST_F(EngineTest, LongGraphsAreFreedWithoutRecursion) {
  constexpr int kNodes = 100000;
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x;
  for (int i = 0; i < kNodes; ++i) y = y * 1.0;
  y = Tensor();
  // Nodes that save their inputs (whose grad_fn is the previous node), then backward.
  Tensor w = leaf({1, 1}, {2});
  Tensor z = x;
  for (int i = 0; i < kNodes; ++i) z = z * w;
  z.sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{1, 1}));
  z = Tensor();
  // A chain of views and in-place ops on them.
  Tensor base = x * 1.0;
  Tensor v = base;
  for (int i = 0; i < kNodes; ++i) v = v.view({2});
  v.mul_(2.0);
  base.sum().backward();
  v = Tensor();
  base = Tensor();
}

TEST_F(EngineTest, AGradientOfAnotherDtypeIsCastToTheOutputs) {
  // As PyTorch's engine casts the root gradient (an int64 seed for a float output).
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3.0;
  y.backward(make_tensor({1, 2}, {2}, DType::Int64));
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
  EXPECT_EQ(to_doubles(x.grad()), (Values{3, 6}));
}

// ------------------------------------------------------------------------- custom functions

struct Cube : autograd::Function<Cube> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return x * x * x * scale;
  }
  static variable_list backward(autograd::AutogradContext* ctx, variable_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * 3.0 * x * x * ctx->saved_data["scale"].to_double()};
  }
};

struct BadShape : autograd::Function<BadShape> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 1.0; }
  static variable_list backward(autograd::AutogradContext*, variable_list) {
    return {make_tensor({1, 2}, {2})};
  }
};

TEST_F(EngineTest, CustomFunctionForwardAndBackward) {
  Tensor x = leaf({1, 2}, {2}, DType::Float64);
  Tensor y = Cube::apply(x, 2.0);
  EXPECT_EQ(y.grad_fn()->name(), "CubeBackward");
  y.sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{6, 24}));
  EXPECT_TRUE(autograd::gradcheck(
      [](const variable_list& in) -> variable_list { return {Cube::apply(in[0], 0.5)}; },
      {leaf({0.3, -1.2, 2.0}, {3}, DType::Float64)}));
}

TEST_F(EngineTest, CustomFunctionSavedInputModifiedInPlace) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = x * 1.0;
  Tensor y = Cube::apply(a, 1.0);
  a.add_(1.0);
  const std::string msg = message_of<AutogradError>([&] { y.sum().backward(); });
  EXPECT_TRUE(contains(msg, "modified by an inplace operation")) << msg;
}

TEST_F(EngineTest, WrongGradientShapeNamesTheFunction) {
  Tensor x = leaf({1, 2, 3}, {3});
  const std::string msg = message_of<AutogradError>([&] { BadShape::apply(x).sum().backward(); });
  EXPECT_TRUE(contains(msg, "Function BadShapeBackward returned an invalid gradient at index 0 - "
                            "got [2] but expected shape compatible with [3]")) << msg;
}

struct ExtraGrads : autograd::Function<ExtraGrads> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
  static variable_list backward(autograd::AutogradContext*, variable_list g) {
    return {g[0] * 2.0, Tensor()};
  }
};

TEST_F(EngineTest, CustomFunctionGradientCountIsChecked) {
  Tensor x = leaf({1, 2}, {2});
  ExtraGrads::apply(x).sum().backward();  // an undefined extra gradient is dropped
  EXPECT_EQ(to_doubles(x.grad()), (Values{2, 2}));

  struct TooMany : autograd::Function<TooMany> {
    static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * 2.0; }
    static variable_list backward(autograd::AutogradContext*, variable_list g) {
      return {g[0], g[0]};
    }
  };
  std::string msg = message_of<AutogradError>([&] { TooMany::apply(x).sum().backward(); });
  EXPECT_TRUE(contains(msg,
                       "function TooManyBackward returned an incorrect number of gradients "
                       "(expected 1, got 2)"))
      << msg;

  struct ForUndefined : autograd::Function<ForUndefined> {
    static Tensor forward(autograd::AutogradContext*, const Tensor& x, const Tensor&) {
      return x * 2.0;
    }
    static variable_list backward(autograd::AutogradContext*, variable_list g) {
      return {g[0], g[0]};
    }
  };
  msg = message_of<AutogradError>([&] { ForUndefined::apply(x, Tensor()).sum().backward(); });
  EXPECT_TRUE(contains(msg,
                       "returned a gradient that is defined at position 2, but the "
                       "corresponding forward input is an undefined Tensor"))
      << msg;
}

TEST_F(EngineTest, HookResultsAreValidated) {
  Tensor x = leaf({1, 2, 3}, {3});
  const int id = x.register_hook([](const Tensor& g) { return g.sum(); });
  std::string msg = message_of<AutogradError>([&] { (x * 2.0).sum().backward(); });
  EXPECT_TRUE(contains(msg, loom::str_cat("hook '", id,
                                          "' has changed the size of value (was [3] "
                                          "got [])")))
      << msg;
  EXPECT_FALSE(x.grad().defined()) << "a refused hook result must not reach .grad";
  EXPECT_TRUE(x.remove_hook(id));

  Tensor y = x * 2.0;
  const int yid = y.register_hook([](const Tensor& g) { return g.to(DType::Float64); });
  msg = message_of<AutogradError>([&] { y.sum().backward(); });
  EXPECT_TRUE(contains(msg, loom::str_cat("hook '", yid,
                                          "' has changed the type of value (was "
                                          "cpu float32 got cpu float64)")))
      << msg;
  EXPECT_TRUE(y.remove_hook(yid));
  // A hook that keeps dtype, device and size may replace the gradient.
  y.register_hook([](const Tensor& g) { return g * 3.0; });
  y.sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{6, 6, 6}));
}

// ------------------------------------------------------------------------- anomaly mode

TEST_F(EngineTest, AnomalyModeNamesTheForwardOpOfANan) {
  Tensor x = leaf({1, 2}, {2});
  Tensor zero = make_tensor({0, 0}, {2});
  autograd::DetectAnomalyGuard anomaly;
  Tensor y = (x / zero).sum();  // d/dx = 1/0 = inf
  const std::string msg = message_of<AutogradError>([&] { y.backward(); });
  EXPECT_TRUE(contains(msg, "Function 'DivBackward0' returned nan values in its 0th output")) << msg;
  EXPECT_TRUE(contains(msg, "aten::div.Tensor called from")) << msg;
}

// ------------------------------------------------------------------------- checkpointing

TEST_F(EngineTest, CheckpointGivesTheSameGradientsAndRecomputes) {
  int calls = 0;
  auto block = [&](const variable_list& in) -> variable_list {
    ++calls;
    return {(in[0] * in[1]).exp() * in[0]};
  };
  Tensor x = leaf({0.1, 0.2}, {2}, DType::Float64), w = leaf({0.5, -1}, {2}, DType::Float64);
  block({x, w})[0].sum().backward();
  const Values gx = to_doubles(x.grad()), gw = to_doubles(w.grad());
  x.set_grad(Tensor());
  w.set_grad(Tensor());
  calls = 0;
  Tensor y = autograd::checkpoint(block, {x, w})[0];
  EXPECT_EQ(calls, 1);
  y.sum().backward();
  EXPECT_EQ(calls, 2) << "the segment is recomputed in backward";
  EXPECT_EQ(to_doubles(x.grad()), gx);
  EXPECT_EQ(to_doubles(w.grad()), gw);
}

// ------------------------------------------------------------------------- gradcheck

TEST_F(EngineTest, GradcheckReportsTheMismatchingElement) {
  struct WrongGrad : autograd::Function<WrongGrad> {
    static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * x; }
    static variable_list backward(autograd::AutogradContext*, variable_list g) {
      return {g[0] * 3.0};
    }
  };
  const std::string msg = message_of<AutogradError>([&] {
    autograd::gradcheck([](const variable_list& in) -> variable_list { return {WrongGrad::apply(in[0])}; },
                        {leaf({1.5, 2}, {2}, DType::Float64)});
  });
  EXPECT_TRUE(contains(msg, "Jacobian mismatch for output 0 with respect to input 0")) << msg;
  // Element 0 agrees by chance (2 * 1.5 = 3 * 1); element 1 is the first mismatch.
  EXPECT_TRUE(contains(msg, "at output element 1, input element 1")) << msg;
  EXPECT_TRUE(contains(msg, "numerical: 4\nanalytical: 3")) << msg;
}

TEST_F(EngineTest, GradcheckNeedsFloat64) {
  const std::string msg = message_of<TypeError>([&] {
    autograd::gradcheck([](const variable_list& in) -> variable_list { return {in[0] * 2.0}; },
                        {leaf({1}, {1})});
  });
  EXPECT_TRUE(contains(msg, "gradcheck needs float64")) << msg;
}

TEST_F(EngineTest, GradgradcheckOfAProduct) {
  EXPECT_TRUE(autograd::gradgradcheck(
      [](const variable_list& in) -> variable_list { return {in[0] * in[1] * in[0]}; },
      {leaf({0.5, -1.5}, {2}, DType::Float64), leaf({2, 3}, {2}, DType::Float64)}));
}

}  // namespace
}  // namespace loom
