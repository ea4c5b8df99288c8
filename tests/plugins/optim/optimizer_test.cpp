// The optimizers (plugins/optim/src): SGD, Adam, AdamW, RMSprop and Adagrad against float64
// hand computations of PyTorch's formulas through step(); parameter groups with their own
// options; skipping parameters without a gradient; zero_grad both ways; state dicts that
// continue bit for bit; PyTorch's error messages.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>

#include "loom/loom.h"
#include "loom/optim/optim.h"
#include "ops_test_util.h"
#include "reference_rules.h"

namespace loom::optim {
namespace {

using loom::testing::random_values;
using loom::testing::to_doubles;
using testing::Vec;

class OptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::testing::load_ops_core(); }
};

Tensor param_of(const Vec& values, DType dtype = DType::Float64) {
  Tensor p = loom::testing::make_tensor(values, {static_cast<int64_t>(values.size())}, dtype);
  p.set_requires_grad(true);
  return p;
}

Tensor grad_for(const Tensor& p, uint64_t seed) {
  return loom::testing::make_tensor(random_values(static_cast<size_t>(p.numel()), seed, -1, 1),
                                    p.sizes(), p.dtype());
}

void expect_all_near(const Tensor& got, const Vec& want, double tol = 1e-12) {
  const Vec g = to_doubles(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
  }
}

/// Bit-exact equality of two tensors' elements.
bool same_bits(const Tensor& a, const Tensor& b) {
  const Vec x = to_doubles(a), y = to_doubles(b);
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

/// Runs steps of opt (grads from seeds) and of the reference rule on the same values.
template <typename Rule>
void expect_follows(Optimizer& opt, const Tensor& p, Rule ref, int steps = 5) {
  Vec theta = to_doubles(p);
  for (int t = 1; t <= steps; ++t) {
    const Tensor g = grad_for(p, 50 + t);
    p.set_grad(g);
    opt.step();
    ref.step(theta, to_doubles(g));
  }
  expect_all_near(p, theta);
}

TEST_F(OptimizerTest, SgdFollowsTheFormula) {
  for (bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov);
    const Tensor p = param_of(random_values(6, 1, -1, 1));
    SGD opt({p}, SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(nesterov));
    expect_follows(opt, p, testing::SgdRule{0.1, 0.9, 0.0, 0.01, nesterov, false});
  }
  const Tensor p = param_of(random_values(6, 2, -1, 1));
  SGD opt({p}, SGDOptions(0.1).momentum(0.5).dampening(0.25).maximize(true));
  expect_follows(opt, p, testing::SgdRule{0.1, 0.5, 0.25, 0.0, false, true});
  EXPECT_TRUE(opt.state(p).tensors.contains("momentum_buffer"));
}

TEST_F(OptimizerTest, AdamAndAdamWFollowTheFormula) {
  for (bool amsgrad : {false, true}) {
    SCOPED_TRACE(amsgrad);
    const Tensor p = param_of(random_values(6, 3, -1, 1));
    Adam adam({p}, AdamOptions(0.01).betas({0.8, 0.99}).weight_decay(0.1).amsgrad(amsgrad));
    expect_follows(adam, p, testing::AdamRule{0.01, 0.8, 0.99, 1e-8, 0.1, amsgrad, false, false});
    EXPECT_EQ(adam.state(p).step, 5);

    const Tensor q = param_of(random_values(6, 4, -1, 1));
    AdamW adamw({q}, AdamWOptions(0.01).amsgrad(amsgrad).maximize(true));
    EXPECT_DOUBLE_EQ(adamw.options(0).weight_decay(), 1e-2);  // AdamW's default
    expect_follows(adamw, q, testing::AdamRule{0.01, 0.9, 0.999, 1e-8, 1e-2, amsgrad, true, true});
  }
}

TEST_F(OptimizerTest, RmspropFollowsTheFormula) {
  for (bool centered : {false, true}) {
    SCOPED_TRACE(centered);
    const Tensor p = param_of(random_values(6, 5, -1, 1));
    RMSprop opt({p}, RMSpropOptions(0.01).momentum(0.7).centered(centered).weight_decay(0.05));
    expect_follows(opt, p, testing::RmspropRule{0.01, 0.99, 1e-8, 0.05, 0.7, centered, false});
  }
}

TEST_F(OptimizerTest, AdagradFollowsTheFormula) {
  const Tensor p = param_of(random_values(6, 6, -1, 1));
  Adagrad opt({p}, AdagradOptions(0.1).lr_decay(0.05).initial_accumulator_value(0.2));
  expect_follows(opt, p, testing::AdagradRule{0.1, 0.05, 0.0, 0.2, 1e-10, false});
}

TEST_F(OptimizerTest, Float32ParametersFollowTheFormulaLoosely) {
  const Tensor p = param_of(random_values(6, 7, -1, 1), DType::Float32);
  Adam opt({p}, AdamOptions(0.01));
  Vec theta = to_doubles(p);
  testing::AdamRule ref{0.01};
  for (int t = 1; t <= 5; ++t) {
    const Tensor g = grad_for(p, 70 + t);
    p.set_grad(g);
    opt.step();
    ref.step(theta, to_doubles(g));
  }
  expect_all_near(p, theta, 1e-5);
  EXPECT_EQ(opt.state(p).tensors.at("exp_avg").dtype(), DType::Float32);
}

TEST_F(OptimizerTest, GroupsKeepTheirOwnOptions) {
  const Tensor a = param_of(random_values(4, 8, -1, 1)), b = param_of(random_values(4, 9, -1, 1));
  SGD opt({ParamGroup({a}), ParamGroup({b}, SGDOptions(0.5))}, SGDOptions(0.1).momentum(0.9));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_DOUBLE_EQ(opt.options(0).lr(), 0.1);
  EXPECT_DOUBLE_EQ(opt.options(0).momentum(), 0.9);  // the defaults
  EXPECT_DOUBLE_EQ(opt.options(1).lr(), 0.5);
  EXPECT_DOUBLE_EQ(opt.options(1).momentum(), 0.0);  // its own options, whole
  Vec ta = to_doubles(a), tb = to_doubles(b);
  testing::SgdRule ra{0.1, 0.9}, rb{0.5};
  for (int t = 1; t <= 3; ++t) {
    const Tensor ga = grad_for(a, 80 + t), gb = grad_for(b, 90 + t);
    a.set_grad(ga);
    b.set_grad(gb);
    opt.step();
    ra.step(ta, to_doubles(ga));
    rb.step(tb, to_doubles(gb));
  }
  expect_all_near(a, ta);
  expect_all_near(b, tb);
  // Options changed between steps take effect, as group["lr"] = ... does in PyTorch.
  opt.options(1).lr(0.25);
  const Tensor gb = grad_for(b, 99);
  a.set_grad(Tensor());
  b.set_grad(gb);
  opt.step();
  rb.lr = 0.25;
  rb.step(tb, to_doubles(gb));
  expect_all_near(b, tb);
}

TEST_F(OptimizerTest, AddParamGroupJoinsTheNextStep) {
  const Tensor a = param_of({1, 2}), b = param_of({3, 4});
  Adam opt({a}, AdamOptions(0.1));
  opt.add_param_group(ParamGroup({b}, AdamOptions(0.2)));
  b.set_grad(grad_for(b, 1));
  opt.step();
  EXPECT_NE(to_doubles(b), (Vec{3, 4}));
  EXPECT_EQ(to_doubles(a), (Vec{1, 2}));
  EXPECT_EQ(opt.state().size(), 1u);  // only b has been updated
}

TEST_F(OptimizerTest, StepSkipsParametersWithoutAGradient) {
  const Tensor a = param_of({1, 2}), b = param_of({3, 4});
  RMSprop opt({a, b}, RMSpropOptions(0.1).momentum(0.5));
  a.set_grad(grad_for(a, 1));
  opt.step();
  EXPECT_EQ(to_doubles(b), (Vec{3, 4}));
  EXPECT_FALSE(opt.state().contains(b.impl()));
  EXPECT_TRUE(opt.state().contains(a.impl()));
}

TEST_F(OptimizerTest, ZeroGradSetsToNoneOrZeroesInPlace) {
  const Tensor a = param_of({1, 2});
  SGD opt({a}, SGDOptions(0.1));
  a.set_grad(grad_for(a, 1));
  opt.zero_grad();  // set_to_none = true, PyTorch's default
  EXPECT_FALSE(a.grad().defined());

  const Tensor g = grad_for(a, 2);
  a.set_grad(g);
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(a.grad().is_same(g));  // the same tensor, zeroed in place
  EXPECT_EQ(to_doubles(g), (Vec{0, 0}));
  opt.step();  // a zero gradient still steps (it is defined)
  EXPECT_EQ(to_doubles(a), (Vec{1, 2}));
}

TEST_F(OptimizerTest, StepWithAClosureReturnsItsLoss) {
  const Tensor w = param_of({1, -2});
  SGD opt({w}, SGDOptions(0.25));
  auto closure = [&] {
    opt.zero_grad();
    Tensor loss = (w * w).sum();
    loss.backward();
    return loss;
  };
  const Tensor loss = opt.step(closure);
  ASSERT_TRUE(loss.defined());
  EXPECT_DOUBLE_EQ(loss.item<double>(), 5.0);
  // w -= 0.25 * 2w
  EXPECT_EQ(to_doubles(w), (Vec{0.5, -1}));
}

/// Steps opt with grads from seeds.
void run(Optimizer& opt, const std::vector<Tensor>& params, uint64_t seed, int steps) {
  for (int t = 0; t < steps; ++t) {
    for (size_t i = 0; i < params.size(); ++i)
      params[i].set_grad(grad_for(params[i], seed + 10 * t + i));
    opt.step();
  }
}

std::vector<Tensor> copies(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(param_of(to_doubles(p)));
  return out;
}

/// Makes an optimizer over params, steps it, saves, loads into a fresh one over copies of the
/// parameters, and checks the two continue bit for bit.
void expect_round_trip(const std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>& make) {
  std::vector<Tensor> pa = {param_of(random_values(5, 11, -1, 1)),
                            param_of(random_values(3, 12, -1, 1))};
  std::unique_ptr<Optimizer> a = make(pa);
  run(*a, pa, 100, 3);
  const OptimizerStateDict sd = a->state_dict();
  std::vector<Tensor> pb = copies(pa);
  std::unique_ptr<Optimizer> b = make(pb);
  b->param_groups()[0].options->set_lr(123.0);  // overwritten by the load
  b->load_state_dict(sd);
  EXPECT_EQ(b->param_groups()[0].options->get_lr(), a->param_groups()[0].options->get_lr());
  run(*a, pa, 200, 4);
  run(*b, pb, 200, 4);
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(same_bits(pa[i], pb[i])) << a->name() << " parameter " << i;
    const ParamState& sa = a->state().at(pa[i].impl());
    const ParamState& sb = b->state().at(pb[i].impl());
    EXPECT_EQ(sa.step, sb.step);
    ASSERT_EQ(sa.tensors.size(), sb.tensors.size());
    for (const auto& [name, t] : sa.tensors) {
      EXPECT_TRUE(same_bits(t, sb.tensors.at(name))) << a->name() << " " << name;
      EXPECT_FALSE(t.is_alias_of(sb.tensors.at(name)));  // the load copied
    }
  }
}

TEST_F(OptimizerTest, StateDictRoundTripContinuesBitForBit) {
  expect_round_trip([](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
    return std::make_unique<SGD>(
        std::vector<ParamGroup>{ParamGroup({p[0]}), ParamGroup({p[1]}, SGDOptions(0.3))},
        SGDOptions(0.1).momentum(0.9).nesterov(true));
  });
  expect_round_trip([](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
    return std::make_unique<Adam>(p, AdamOptions(1.0 / 3).amsgrad(true).weight_decay(0.1));
  });
  expect_round_trip([](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
    return std::make_unique<AdamW>(p, AdamWOptions(0.01));
  });
  expect_round_trip([](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
    return std::make_unique<RMSprop>(p, RMSpropOptions(0.01).centered(true).momentum(0.3));
  });
  expect_round_trip([](std::vector<Tensor> p) -> std::unique_ptr<Optimizer> {
    return std::make_unique<Adagrad>(p, AdagradOptions(0.1).lr_decay(0.01));
  });
}

TEST_F(OptimizerTest, StateDictNamesTensorsByParameterIndex) {
  const Tensor a = param_of({1, 2}), b = param_of({3, 4, 5});
  Adam opt({ParamGroup({a}), ParamGroup({b}, AdamOptions(0.5))});
  b.set_grad(grad_for(b, 1));
  opt.step();
  const OptimizerStateDict sd = opt.state_dict();
  EXPECT_EQ(sd.tensors.size(), 2u);
  EXPECT_TRUE(sd.tensors.contains("state.1.exp_avg"));
  EXPECT_TRUE(sd.tensors.contains("state.1.exp_avg_sq"));
  EXPECT_NE(sd.json.find("\"optimizer\":\"Adam\""), std::string::npos) << sd.json;
  EXPECT_NE(sd.json.find("\"params\":[1]"), std::string::npos) << sd.json;
  EXPECT_NE(sd.json.find("\"1\":{\"step\":1}"), std::string::npos) << sd.json;
  EXPECT_NE(sd.json.find("\"lr\":0.5"), std::string::npos) << sd.json;
}

/// Expects f to throw E with exactly (or, with contains, containing) message.
template <typename E = ValueError, typename F>
void expect_message(F&& f, const std::string& message, bool contains = false) {
  try {
    f();
    ADD_FAILURE() << "expected: " << message;
  } catch (const E& e) {
    if (contains) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    } else {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

TEST_F(OptimizerTest, LoadStateDictChecksTheGroups) {
  const Tensor a = param_of({1, 2}), b = param_of({3, 4, 5});
  SGD one({a, b}, SGDOptions(0.1).momentum(0.9));
  a.set_grad(grad_for(a, 1));
  one.step();
  SGD two({ParamGroup({a}), ParamGroup({b})});
  expect_message([&] { two.load_state_dict(one.state_dict()); },
                 "loaded state dict has a different number of parameter groups");
  SGD short_group({a}, SGDOptions(0.1));
  expect_message([&] { short_group.load_state_dict(one.state_dict()); },
                 "loaded state dict contains a parameter group that doesn't match the size of "
                 "optimizer's group");
  const Tensor c = param_of({1, 2, 3}), d = param_of({4, 5});
  SGD swapped({c, d}, SGDOptions(0.1).momentum(0.9));
  expect_message([&] { swapped.load_state_dict(one.state_dict()); },
                 "size mismatch for state.0.momentum_buffer", true);
  Adam adam({a, b});
  expect_message([&] { adam.load_state_dict(one.state_dict()); }, "saved by SGD, not by Adam",
                 true);
}

TEST_F(OptimizerTest, InvalidOptionsThrowPyTorchsMessages) {
  const Tensor p = param_of({1});
  expect_message([&] { SGD({p}, SGDOptions(-1)); }, "Invalid learning rate: -1");
  expect_message([&] { SGD({p}, SGDOptions(0.1).momentum(-0.5)); }, "Invalid momentum value: -0.5");
  expect_message([&] { SGD({p}, SGDOptions(0.1).weight_decay(-1)); },
                 "Invalid weight_decay value: -1");
  expect_message([&] { SGD({p}, SGDOptions(0.1).nesterov(true)); },
                 "Nesterov momentum requires a momentum and zero dampening");
  expect_message([&] { SGD({p}, SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)); },
                 "Nesterov momentum requires a momentum and zero dampening");
  expect_message([&] { Adam({p}, AdamOptions(-0.01)); }, "Invalid learning rate: -0.01");
  expect_message([&] { Adam({p}, AdamOptions().eps(-1e-8)); }, "Invalid epsilon value: -1e-08");
  expect_message(
      [&] {
        Adam({p}, AdamOptions().betas({1.0, 0.999}));
      },
      "Invalid beta parameter at index 0: 1");
  expect_message(
      [&] {
        AdamW({p}, AdamWOptions().betas({0.9, -0.1}));
      },
      "Invalid beta parameter at index 1: -0.1");
  expect_message([&] { AdamW({p}, AdamWOptions().weight_decay(-0.5)); },
                 "Invalid weight_decay value: -0.5");
  expect_message([&] { RMSprop({p}, RMSpropOptions().alpha(-0.1)); }, "Invalid alpha value: -0.1");
  expect_message([&] { RMSprop({p}, RMSpropOptions().momentum(-1)); },
                 "Invalid momentum value: -1");
  expect_message([&] { Adagrad({p}, AdagradOptions().lr_decay(-0.1)); },
                 "Invalid lr_decay value: -0.1");
  expect_message([&] { Adagrad({p}, AdagradOptions().initial_accumulator_value(-1)); },
                 "Invalid initial_accumulator_value value: -1");
  expect_message([&] { Adagrad({p}, AdagradOptions().eps(-1)); }, "Invalid epsilon value: -1");
  // A group's own options are checked too.
  expect_message([&] { SGD({ParamGroup({p}, SGDOptions(-2))}); }, "Invalid learning rate: -2");
}

TEST_F(OptimizerTest, BadParameterListsThrow) {
  const Tensor p = param_of({1}), q = param_of({2});
  expect_message([&] { SGD(std::vector<Tensor>{}); }, "optimizer got an empty parameter list");
  expect_message([&] { SGD(std::vector<ParamGroup>{}); }, "optimizer got an empty parameter list");
  expect_message(
      [&] {
        SGD({ParamGroup({p, q}), ParamGroup({q})});
      },
      "some parameters appear in more than one parameter group");
  expect_message(
      [&] {
        SGD({p, p});
      },
      "optimizer contains a parameter group with duplicate "
      "parameters",
      true);
  const Tensor non_leaf = p * 2;
  expect_message([&] { SGD({non_leaf}); }, "can't optimize a non-leaf Tensor", true);
  expect_message<TypeError>([&] { SGD({ParamGroup({p}, AdamOptions(0.1))}); },
                            "SGD: a parameter group's options must be SGDOptions, got AdamOptions");
  SGD sgd({p});
  sgd.param_groups()[0].options = std::make_shared<AdamOptions>();
  expect_message<TypeError>([&] { sgd.step(); },
                            "SGD.step: the options of parameter group 0 are AdamOptions, expected "
                            "SGDOptions");
  // AdamW takes Adam's options for a group (AdamWOptions' setters return AdamOptions&), decoupled.
  AdamW adamw({ParamGroup({p}, AdamOptions(0.1).weight_decay(0.5))});
  EXPECT_TRUE(adamw.options(0).decoupled_weight_decay());
  EXPECT_EQ(adamw.options(0).type_name(), "AdamWOptions");
}

}  // namespace
}  // namespace loom::optim
