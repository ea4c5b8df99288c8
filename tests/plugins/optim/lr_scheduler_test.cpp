// The LR schedulers (plugins/optim/src/lr_scheduler.cpp): every scheduler's lr sequence
// (computed by PyTorch's recursive forms) against its closed form, written here from the
// formulas; OneCycleLR's momentum; SequentialLR's switch at a milestone; ReduceLROnPlateau
// against a hand-traced run; resuming from state dicts; PyTorch's error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <numbers>

#include "loom/optim/optim.h"
#include "ops_test_util.h"

namespace loom::optim {
namespace {

constexpr double kPi = std::numbers::pi;

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::testing::load_ops_core(); }
  Tensor p1 = Tensor::from_vector<double>({1, 2}, {2});
  Tensor p2 = Tensor::from_vector<double>({3}, {1});
  /// Two groups, lr 0.5 and 0.2.
  SGD make_sgd() {
    return SGD({ParamGroup({p1}), ParamGroup({p2}, SGDOptions(0.2).momentum(0.9))},
               SGDOptions(0.5).momentum(0.9));
  }
};

/// Steps the scheduler `epochs` times and checks every group's lr (and get_last_lr) at every
/// epoch from 0 against closed(epoch, group).
void expect_sequence(Optimizer& opt, LRScheduler& s, int epochs,
                     const std::function<double(int, size_t)>& closed, double tol = 1e-12) {
  for (int e = 0; e <= epochs; ++e) {
    if (e > 0) s.step();
    ASSERT_EQ(s.last_epoch(), e);
    for (size_t g = 0; g < opt.param_groups().size(); ++g) {
      const double want = closed(e, g);
      const double got = opt.param_groups()[g].options->get_lr();
      ASSERT_NEAR(got, want, tol * std::fabs(want) + 1e-300)
          << s.name() << " epoch " << e << " group " << g;
      ASSERT_EQ(s.get_last_lr()[g], got);
    }
  }
}

TEST_F(SchedulerTest, StepLR) {
  SGD opt = make_sgd();
  StepLR s(opt, 3, 0.1);
  const double base[] = {0.5, 0.2};
  expect_sequence(opt, s, 20, [&](int e, size_t g) { return base[g] * std::pow(0.1, e / 3); });
}

TEST_F(SchedulerTest, MultiStepLRCountsRepeatedMilestones) {
  SGD opt = make_sgd();
  MultiStepLR s(opt, {9, 2, 5, 5}, 0.5);
  const double base[] = {0.5, 0.2};
  expect_sequence(opt, s, 12, [&](int e, size_t g) {
    const int passed = (e >= 2) + 2 * (e >= 5) + (e >= 9);
    return base[g] * std::pow(0.5, passed);
  });
}

TEST_F(SchedulerTest, ExponentialLR) {
  SGD opt = make_sgd();
  ExponentialLR s(opt, 0.9);
  const double base[] = {0.5, 0.2};
  expect_sequence(opt, s, 30, [&](int e, size_t g) { return base[g] * std::pow(0.9, e); });
}

TEST_F(SchedulerTest, CosineAnnealingLRAcrossSeveralPeriods) {
  SGD opt = make_sgd();
  CosineAnnealingLR s(opt, 10, 0.01);
  const double base[] = {0.5, 0.2};
  expect_sequence(
      opt, s, 45,
      [&](int e, size_t g) { return 0.01 + (base[g] - 0.01) * (1 + std::cos(kPi * e / 10.0)) / 2; },
      1e-10);
}

TEST_F(SchedulerTest, LinearLRWarmUpAndDecay) {
  {
    SGD opt = make_sgd();
    LinearLR s(opt, 0.25, 1.0, 4);
    const double base[] = {0.5, 0.2};
    expect_sequence(opt, s, 10, [&](int e, size_t g) {
      return base[g] * (0.25 + 0.75 * std::min(e, 4) / 4.0);
    });
  }
  {
    SGD opt = make_sgd();
    LinearLR s(opt, 1.0, 0.1, 6);
    const double base[] = {0.5, 0.2};
    expect_sequence(opt, s, 10,
                    [&](int e, size_t g) { return base[g] * (1.0 - 0.9 * std::min(e, 6) / 6.0); });
  }
}

TEST_F(SchedulerTest, ConstantLR) {
  SGD opt = make_sgd();
  ConstantLR s(opt, 0.25, 4);
  const double base[] = {0.5, 0.2};
  expect_sequence(opt, s, 9, [&](int e, size_t g) { return base[g] * (e < 4 ? 0.25 : 1.0); });
}

TEST_F(SchedulerTest, PolynomialLR) {
  SGD opt = make_sgd();
  PolynomialLR s(opt, 6, 2.0);
  const double base[] = {0.5, 0.2};
  expect_sequence(
      opt, s, 9,
      [&](int e, size_t g) { return base[g] * std::pow(1.0 - std::min(e, 6) / 6.0, 2.0); }, 1e-10);
}

TEST_F(SchedulerTest, LambdaLRAndMultiplicativeLR) {
  {
    SGD opt = make_sgd();
    LambdaLR s(opt, {[](int64_t e) { return 1.0 / (1 + e); }, [](int64_t e) { return 0.5 * e; }});
    const double base[] = {0.5, 0.2};
    expect_sequence(
        opt, s, 6, [&](int e, size_t g) { return g == 0 ? base[0] / (1 + e) : base[1] * 0.5 * e; });
  }
  {
    SGD opt = make_sgd();
    MultiplicativeLR s(opt, {[](int64_t) { return 0.9; }});
    const double base[] = {0.5, 0.2};
    expect_sequence(opt, s, 8, [&](int e, size_t g) { return base[g] * std::pow(0.9, e); });
  }
}

TEST_F(SchedulerTest, SequentialLRAfterConstantLR) {
  // torch.optim.lr_scheduler.SequentialLR's example: ConstantLR(factor=0.1, total_iters=2), then
  // ExponentialLR(gamma=0.9) from milestone 2, which restarts at its own epoch 0 (the closed
  // form, gamma^0; PyTorch's docstring lists 0.9 there, but step(0) takes the closed form).
  SGD opt({p1}, SGDOptions(1.0));
  auto constant = std::make_shared<ConstantLR>(opt, 0.1, 2);
  auto decay = std::make_shared<ExponentialLR>(opt, 0.9);
  SequentialLR s(opt, {constant, decay}, {2});
  expect_sequence(opt, s, 6, [](int e, size_t) { return e < 2 ? 0.1 : std::pow(0.9, e - 2); });
}

/// OneCycleLR's lr and momentum at step t, from the policy's description.
struct OneCycleClosedForm {
  double max_lr, div = 25, final_div = 1e4, pct = 0.3;
  int64_t total;
  bool cos = true, three_phase = false;
  double base_m = 0.85, max_m = 0.95;
  double anneal(double a, double b, double x) const {
    return cos ? b + (a - b) * (1 + std::cos(kPi * x)) / 2 : a + (b - a) * x;
  }
  std::pair<double, double> at(int64_t t) const {
    const double init = max_lr / div, min = init / final_div, T = static_cast<double>(total);
    const double up = pct * T - 1;
    if (!three_phase) {
      if (t <= up) return {anneal(init, max_lr, t / up), anneal(max_m, base_m, t / up)};
      const double x = (t - up) / (T - 1 - up);
      return {anneal(max_lr, min, x), anneal(base_m, max_m, x)};
    }
    const double down = 2 * pct * T - 2;
    if (t <= up) return {anneal(init, max_lr, t / up), anneal(max_m, base_m, t / up)};
    if (t <= down) {
      const double x = (t - up) / (down - up);
      return {anneal(max_lr, init, x), anneal(base_m, max_m, x)};
    }
    return {anneal(init, min, (t - down) / (T - 1 - down)), max_m};
  }
};

TEST_F(SchedulerTest, OneCycleLRTwoAndThreePhasesCosAndLinear) {
  for (bool three_phase : {false, true}) {
    for (bool cos : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "three_phase=" << three_phase << " cos=" << cos);
      SGD opt = make_sgd();
      OneCycleLR::Options o;
      o.max_lr = {1.0, 0.4};
      o.total_steps = 100;
      o.anneal_strategy = cos ? "cos" : "linear";
      o.three_phase = three_phase;
      OneCycleLR s(opt, o);
      const OneCycleClosedForm f0{1.0, 25, 1e4, 0.3, 100, cos, three_phase};
      const OneCycleClosedForm f1{0.4, 25, 1e4, 0.3, 100, cos, three_phase};
      for (int64_t t = 0; t < 100; ++t) {
        if (t > 0) s.step();
        const auto [lr0, m0] = f0.at(t);
        const auto [lr1, m1] = f1.at(t);
        ASSERT_NEAR(opt.options(0).lr(), lr0, 1e-12 * lr0) << t;
        ASSERT_NEAR(opt.options(1).lr(), lr1, 1e-12 * lr1) << t;
        ASSERT_NEAR(opt.options(0).momentum(), m0, 1e-12) << t;
        ASSERT_NEAR(opt.options(1).momentum(), m1, 1e-12) << t;
      }
      // The last step lands on max_lr / div_factor / final_div_factor.
      EXPECT_NEAR(opt.options(0).lr(), 1.0 / 25 / 1e4, 1e-11 * (1.0 / 25 / 1e4));
      s.step();  // step total_steps is still allowed, as in PyTorch
      try {
        s.step();
        ADD_FAILURE() << "expected an error past total_steps";
      } catch (const ValueError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "Tried to step 101 times. The specified number of total steps is 100");
      }
    }
  }
}

TEST_F(SchedulerTest, OneCycleLRCyclesAdamsBeta1AndTakesEpochs) {
  Adam opt({p1}, AdamOptions(0.1).betas({0.9, 0.99}));
  OneCycleLR::Options o;
  o.max_lr = {0.01};
  o.epochs = 4;
  o.steps_per_epoch = 5;
  o.pct_start = 0.25;
  o.div_factor = 10;
  o.final_div_factor = 100;
  o.base_momentum = {0.8};
  o.max_momentum = {0.9};
  OneCycleLR s(opt, o);
  EXPECT_EQ(s.total_steps(), 20);
  const OneCycleClosedForm f{0.01, 10, 100, 0.25, 20, true, false, 0.8, 0.9};
  for (int64_t t = 0; t < 20; ++t) {
    if (t > 0) s.step();
    const auto [lr, m] = f.at(t);
    ASSERT_NEAR(opt.options(0).lr(), lr, 1e-12 * lr) << t;
    ASSERT_NEAR(opt.options(0).betas().first, m, 1e-12) << t;
    ASSERT_EQ(opt.options(0).betas().second, 0.99);
  }
}

TEST_F(SchedulerTest, SequentialLRWarmsUpThenHandsOver) {
  SGD opt = make_sgd();
  auto warmup = std::make_shared<LinearLR>(opt, 0.1, 1.0, 3);
  auto decay = std::make_shared<ExponentialLR>(opt, 0.9);
  SequentialLR s(opt, {warmup, decay}, {3});
  const double base[] = {0.5, 0.2};
  // Epochs 0-2: the warm-up; from the milestone on, the decay from its own epoch 0.
  expect_sequence(opt, s, 12, [&](int e, size_t g) {
    return e < 3 ? base[g] * (0.1 + 0.9 * e / 3.0) : base[g] * std::pow(0.9, e - 3);
  });
}

TEST_F(SchedulerTest, SequentialLRWarmUpThenCosine) {
  SGD opt = make_sgd();
  auto warmup = std::make_shared<LinearLR>(opt, 0.5, 1.0, 2);
  auto cosine = std::make_shared<CosineAnnealingLR>(opt, 8, 0.0);
  SequentialLR s(opt, {warmup, cosine}, {2});
  const double base[] = {0.5, 0.2};
  expect_sequence(
      opt, s, 10,
      [&](int e, size_t g) {
        return e < 2 ? base[g] * (0.5 + 0.5 * e / 2.0)
                     : base[g] * (1 + std::cos(kPi * (e - 2) / 8.0)) / 2;
      },
      1e-10);
}

TEST_F(SchedulerTest, ReduceLROnPlateauFollowsAHandTrace) {
  SGD opt({p1}, SGDOptions(1.0));
  ReduceLROnPlateau::Options o;
  o.factor = 0.5;
  o.patience = 2;
  o.threshold = 0.1;
  o.cooldown = 1;
  o.min_lr = {0.1};
  ReduceLROnPlateau s(opt, o);
  const std::vector<double> metrics = {10,  9,   8.5, 8.4, 8.3, 8.2, 8.1, 8.0, 7.9, 7.8, 7.7, 7.6,
                                       7.6, 7.6, 7.6, 7.6, 7.6, 7.6, 7.6, 7.6, 7.6, 7.6, 7.6};
  // Traced by hand from the rule (rel threshold: better means < best * 0.9).
  const std::vector<double> lrs = {1,     1,     1,    1,    1,    0.5,  0.5,   0.5,
                                   0.5,   0.25,  0.25, 0.25, 0.25, 0.25, 0.125, 0.125,
                                   0.125, 0.125, 0.1,  0.1,  0.1,  0.1,  0.1};
  for (size_t e = 0; e < metrics.size(); ++e) {
    s.step(metrics[e]);
    ASSERT_DOUBLE_EQ(opt.options(0).lr(), lrs[e]) << "epoch " << e + 1;
    ASSERT_EQ(s.get_last_lr()[0], opt.options(0).lr());
  }
  EXPECT_EQ(s.last_epoch(), 23);
  EXPECT_EQ(s.best(), 7.6);
}

TEST_F(SchedulerTest, ReduceLROnPlateauMaxModeAbsThreshold) {
  SGD opt({p1}, SGDOptions(1.0));
  ReduceLROnPlateau::Options o;
  o.mode = "max";
  o.threshold_mode = "abs";
  o.threshold = 0.5;
  o.patience = 0;
  ReduceLROnPlateau s(opt, o);
  s.step(1.0);  // best 1
  EXPECT_EQ(opt.options(0).lr(), 1.0);
  s.step(1.4);  // not above 1 + 0.5: bad > patience 0 → reduce
  EXPECT_DOUBLE_EQ(opt.options(0).lr(), 0.1);
  s.step(2.0);  // better
  EXPECT_DOUBLE_EQ(opt.options(0).lr(), 0.1);
  EXPECT_EQ(s.best(), 2.0);
}

TEST_F(SchedulerTest, ResumingFromStateDictsContinuesExactly) {
  auto make = [](Optimizer& opt) { return std::make_unique<CosineAnnealingLR>(opt, 7, 0.001); };
  SGD a = make_sgd();
  auto sa = make(a);
  for (int i = 0; i < 5; ++i) sa->step();
  const OptimizerStateDict opt_state = a.state_dict();
  const std::string sched_state = sa->state_dict();

  Tensor q1 = Tensor::from_vector<double>({1, 2}, {2}), q2 = Tensor::from_vector<double>({3}, {1});
  SGD b({ParamGroup({q1}), ParamGroup({q2}, SGDOptions(0.2).momentum(0.9))},
        SGDOptions(0.5).momentum(0.9));
  auto sb = make(b);
  b.load_state_dict(opt_state);
  sb->load_state_dict(sched_state);
  EXPECT_EQ(sb->last_epoch(), 5);
  for (int i = 0; i < 12; ++i) {
    sa->step();
    sb->step();
    ASSERT_EQ(sa->get_last_lr(), sb->get_last_lr()) << i;
  }
  // initial_lr travelled with the optimizer's state dict.
  EXPECT_EQ(b.param_groups()[0].initial_lr, 0.5);

  ReduceLROnPlateau::Options o;
  o.patience = 1;
  ReduceLROnPlateau ra(a, o), rb(b, o);
  ra.step(3);
  ra.step(4);
  rb.load_state_dict(ra.state_dict());
  for (double m : {5.0, 2.0, 2.5, 3.0, 3.5}) {
    ra.step(m);
    rb.step(m);
    ASSERT_EQ(ra.num_bad_epochs(), rb.num_bad_epochs());
    ASSERT_EQ(ra.best(), rb.best());
  }
  ReduceLROnPlateau fresh(b, o);
  EXPECT_NO_THROW(fresh.load_state_dict(ReduceLROnPlateau(a, o).state_dict()));  // best = inf
  EXPECT_TRUE(std::isinf(fresh.best()));
  try {
    sb->load_state_dict(StepLR(a, 2).state_dict());
    ADD_FAILURE() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("saved by StepLR, not by CosineAnnealingLR"),
              std::string::npos)
        << e.what();
  }
  // A state dict of an optimizer with another number of groups would make get_lr() read past
  // its lists.
  SGD one_group({ParamGroup({p1})}, SGDOptions(0.5));
  auto s1 = make(one_group);
  try {
    s1->load_state_dict(sb->state_dict());  // b has two groups
    ADD_FAILURE() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("the state dict has 2 base_lrs and 2 last_lr entries, "
                                         "but the optimizer has 1 parameter groups"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(SchedulerTest, SequentialLRResumesFromItsStateDict) {
  auto make = [](Optimizer& opt) {
    auto warm = std::make_shared<LinearLR>(opt, 0.2, 1.0, 3);
    auto cos = std::make_shared<CosineAnnealingLR>(opt, 6, 0.0);
    return std::make_unique<SequentialLR>(opt, std::vector<std::shared_ptr<LRScheduler>>{warm, cos},
                                          std::vector<int64_t>{3});
  };
  SGD a = make_sgd();
  auto sa = make(a);
  for (int i = 0; i < 2; ++i) sa->step();  // still warming up
  Tensor q1 = Tensor::from_vector<double>({1, 2}, {2}), q2 = Tensor::from_vector<double>({3}, {1});
  SGD b({ParamGroup({q1}), ParamGroup({q2}, SGDOptions(0.2).momentum(0.9))},
        SGDOptions(0.5).momentum(0.9));
  auto sb = make(b);
  b.load_state_dict(a.state_dict());
  sb->load_state_dict(sa->state_dict());
  for (int i = 0; i < 8; ++i) {  // across the milestone
    sa->step();
    sb->step();
    ASSERT_EQ(sa->get_last_lr(), sb->get_last_lr()) << i;
    ASSERT_EQ(a.options(1).lr(), b.options(1).lr()) << i;
  }
}

TEST_F(SchedulerTest, ASecondSchedulerStartsFromTheFirstsInitialLr) {
  SGD opt = make_sgd();
  LinearLR warm(opt, 0.5, 1.0, 4);  // lr is now 0.25
  StepLR step(opt, 2, 0.1);         // chained: base_lrs are the initial lrs, not 0.25
  EXPECT_EQ(step.base_lrs()[0], 0.5);
  EXPECT_EQ(opt.param_groups()[0].initial_lr, 0.5);
}

/// Expects f to throw ValueError with exactly message.
template <typename F>
void expect_message(F&& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "expected: " << message;
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST_F(SchedulerTest, ErrorsArePyTorchs) {
  SGD opt = make_sgd();
  expect_message([&] { LinearLR(opt, 0.0); },
                 "Starting multiplicative factor expected to be greater than 0 and less or equal "
                 "to 1.");
  expect_message([&] { LinearLR(opt, 0.5, 1.5); },
                 "Ending multiplicative factor expected to be between 0 and 1.");
  OneCycleLR::Options o;
  o.max_lr = {0.1};
  expect_message([&] { OneCycleLR(opt, o); },
                 "You must define either total_steps OR (epochs AND steps_per_epoch)");
  o.total_steps = 0;
  expect_message([&] { OneCycleLR(opt, o); }, "Expected positive integer total_steps, but got 0");
  o.total_steps = 10;
  o.pct_start = 1.5;
  expect_message([&] { OneCycleLR(opt, o); },
                 "Expected float between 0 and 1 pct_start, but got 1.5");
  o.pct_start = 0.3;
  o.anneal_strategy = "step";
  expect_message([&] { OneCycleLR(opt, o); },
                 "anneal_strategy must be one of 'cos' or 'linear', instead got step");
  o.anneal_strategy = "cos";
  o.max_lr = {0.1, 0.2, 0.3};
  expect_message([&] { OneCycleLR(opt, o); }, "expected 2 values for max_lr, got 3");
  o.max_lr = {0.1};
  Adagrad adagrad({p1});
  expect_message([&] { OneCycleLR(adagrad, o); },
                 "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  ReduceLROnPlateau::Options r;
  r.factor = 1.0;
  expect_message([&] { ReduceLROnPlateau(opt, r); }, "Factor should be < 1.0.");
  r.factor = 0.1;
  r.mode = "up";
  expect_message([&] { ReduceLROnPlateau(opt, r); }, "mode up is unknown!");
  r.mode = "min";
  r.threshold_mode = "pct";
  expect_message([&] { ReduceLROnPlateau(opt, r); }, "threshold mode pct is unknown!");
  expect_message([&] { ConstantLR(opt, 1.5); },
                 "Constant multiplicative factor expected to be between 0 and 1.");
  expect_message(
      [&] {
        LambdaLR(opt, {[](int64_t) { return 1.0; }, nullptr, nullptr});
      },
      "Expected 2 lr_lambdas, but got 3 (LambdaLR)");
  r.threshold_mode = "rel";
  r.min_lr = {0.1, 0.2, 0.3};
  expect_message([&] { ReduceLROnPlateau(opt, r); }, "expected 2 min_lrs, got 3");
  auto a = std::make_shared<StepLR>(opt, 2);
  expect_message([&] { SequentialLR(opt, {a}, {3}); },
                 "Sequential Schedulers expects number of schedulers provided to be one more than "
                 "the number of milestone points, but got number of schedulers 1 and the number "
                 "of milestones to be equal to 1");
  SGD other({p2});
  auto b = std::make_shared<StepLR>(other, 2);
  expect_message(
      [&] {
        SequentialLR(opt, {a, b}, {3});
      },
      "Sequential Schedulers expects all schedulers to belong to the same optimizer, "
      "but got schedulers at index 1 to be different than the optimizer passed in.");
  SGD fresh({p2});
  expect_message([&] { StepLR(fresh, 2, 0.1, 5); },
                 "param 'initial_lr' is not specified in param_groups[0] when resuming an "
                 "optimizer");
}

}  // namespace
}  // namespace loom::optim
