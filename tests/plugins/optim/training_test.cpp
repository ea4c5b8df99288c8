// Toy trainings: a linear regression (y = X w + b, mean squared error, autograd through the core
// op pack) trained by each optimizer, alone and under a scheduler, must converge to the true
// weights.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "loom/loom.h"
#include "loom/optim/optim.h"
#include "ops_test_util.h"

namespace loom::optim {
namespace {

using loom::testing::make_tensor;
using loom::testing::random_values;
using loom::testing::to_doubles;

const std::vector<double> kTrueW = {2.0, -3.0, 0.5};
constexpr double kTrueB = 0.7;
constexpr int64_t kRows = 64;

struct Regression {
  Tensor x, y, w, b;
  Regression() {
    loom::testing::load_ops_core();
    x = make_tensor(random_values(kRows * 3, 1, -1, 1), {kRows, 3});
    const std::vector<double> xs = to_doubles(x);
    std::vector<double> ys(kRows);
    for (int64_t r = 0; r < kRows; ++r) {
      ys[r] = kTrueB;
      for (int64_t c = 0; c < 3; ++c) ys[r] += xs[r * 3 + c] * kTrueW[c];
    }
    y = make_tensor(ys, {kRows, 1});
    w = make_tensor({0, 0, 0}, {3, 1});
    w.set_requires_grad(true);
    b = make_tensor({0}, {1});
    b.set_requires_grad(true);
  }
  Tensor loss() const {
    const Tensor err = x.matmul(w) + b - y;
    return (err * err).mean();
  }
  /// Trains for steps (calling after_step, e.g. a scheduler, after each) and returns the
  /// first and last losses.
  std::pair<double, double> train(Optimizer& opt, int steps,
                                  const std::function<void()>& after_step = nullptr) {
    double first = 0, last = 0;
    for (int i = 0; i < steps; ++i) {
      const Tensor l = opt.step([&] {
        opt.zero_grad();
        Tensor l = loss();
        l.backward();
        return l;
      });
      last = l.item<double>();
      if (i == 0) first = last;
      if (after_step) after_step();
    }
    return {first, loss().item<double>()};
  }
  void expect_converged(std::pair<double, double> losses, double tol = 1e-3) const {
    EXPECT_GT(losses.first, 1.0);
    EXPECT_LT(losses.second, tol) << "first loss " << losses.first;
    const std::vector<double> got = to_doubles(w);
    for (size_t i = 0; i < kTrueW.size(); ++i) EXPECT_NEAR(got[i], kTrueW[i], 0.05) << i;
    EXPECT_NEAR(to_doubles(b)[0], kTrueB, 0.05);
  }
};

TEST(OptimTraining, SgdWithMomentumConverges) {
  Regression r;
  SGD opt({r.w, r.b}, SGDOptions(0.1).momentum(0.9));
  r.expect_converged(r.train(opt, 200));
}

TEST(OptimTraining, SgdNesterovUnderStepLRConverges) {
  Regression r;
  SGD opt({r.w, r.b}, SGDOptions(0.2).momentum(0.9).nesterov(true));
  StepLR sched(opt, 100, 0.5);
  r.expect_converged(r.train(opt, 250, [&] { sched.step(); }));
}

TEST(OptimTraining, AdamConverges) {
  Regression r;
  Adam opt({r.w, r.b}, AdamOptions(0.05));
  r.expect_converged(r.train(opt, 400));
}

TEST(OptimTraining, AdamAmsgradUnderOneCycleLRConverges) {
  Regression r;
  Adam opt({r.w, r.b}, AdamOptions(0.05).amsgrad(true));
  OneCycleLR::Options o;
  o.max_lr = {0.2};
  o.total_steps = 400;
  OneCycleLR sched(opt, o);
  r.expect_converged(r.train(opt, 399, [&] { sched.step(); }));
}

TEST(OptimTraining, AdamWConverges) {
  Regression r;
  AdamW opt({r.w, r.b}, AdamWOptions(0.05).weight_decay(1e-4));
  r.expect_converged(r.train(opt, 400));
}

TEST(OptimTraining, RmspropConverges) {
  Regression r;
  RMSprop opt({r.w, r.b}, RMSpropOptions(0.01));
  r.expect_converged(r.train(opt, 600));
}

TEST(OptimTraining, RmspropCenteredWithMomentumUnderCosineConverges) {
  Regression r;
  RMSprop opt({r.w, r.b}, RMSpropOptions(0.01).centered(true).momentum(0.5));
  CosineAnnealingLR sched(opt, 600, 1e-4);
  r.expect_converged(r.train(opt, 600, [&] { sched.step(); }));
}

TEST(OptimTraining, AdagradConverges) {
  Regression r;
  Adagrad opt({r.w, r.b}, AdagradOptions(0.5));
  r.expect_converged(r.train(opt, 400));
}

TEST(OptimTraining, SgdWithWarmUpAndPlateauConverges) {
  Regression r;
  // Plain gradient descent on a convex quadratic: the loss falls monotonically, so the
  // plateau rule only steps in once progress has stalled.
  SGD opt({r.w, r.b}, SGDOptions(0.3));
  auto warm = std::make_shared<LinearLR>(opt, 0.1, 1.0, 20);
  auto flat = std::make_shared<ExponentialLR>(opt, 1.0);
  SequentialLR sched(opt, {warm, flat}, {20});
  ReduceLROnPlateau::Options po;
  po.patience = 10;
  ReduceLROnPlateau plateau(opt, po);
  const auto losses = r.train(opt, 300, [&] {
    sched.step();
    plateau.step(r.loss().item<double>());
  });
  r.expect_converged(losses);
}

}  // namespace
}  // namespace loom::optim
