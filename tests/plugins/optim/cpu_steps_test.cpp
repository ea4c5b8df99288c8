// The fused update ops' CPU kernels (plugins/optim/ops/cpu_steps.cpp) against float64 hand
// computations of PyTorch's published formulas (reference_rules.h): every option, several steps,
// float64 (to 1e-12) and float32 (to 1e-4 relative), contiguous and strided parameters; and
// their argument checks.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "loom/optim/ops.h"
#include "ops_test_util.h"
#include "reference_rules.h"

namespace loom::optim {
namespace {

using loom::testing::make_tensor;
using loom::testing::random_values;
using loom::testing::to_doubles;
using testing::Vec;

constexpr int kSteps = 6;
const std::vector<int64_t> kShape = {3, 4};

struct Layout {
  DType dtype;
  bool strided;
};
const Layout kLayouts[] = {{DType::Float64, false},
                           {DType::Float64, true},
                           {DType::Float32, false},
                           {DType::Float32, true}};

double rtol(DType d) { return d == DType::Float64 ? 1e-12 : 1e-4; }
double atol(DType d) { return d == DType::Float64 ? 1e-14 : 1e-5; }

void expect_near_all(const Tensor& got, const Vec& want, DType dtype, const std::string& what) {
  const Vec g = to_doubles(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], atol(dtype) + rtol(dtype) * std::fabs(want[i]))
        << what << ", element " << i;
  }
}

Tensor zeros(const Layout& l) { return make_tensor(Vec(12, 0.0), kShape, l.dtype, l.strided); }

/// Runs kSteps of `op` on a parameter with fresh gradients each step and the same steps of the
/// reference rule `ref` (given the values the tensors really hold, so both start alike), then
/// compares the parameter and the named state tensors.
template <typename Rule>
void run_case(const Layout& l, Rule ref, const std::string& what,
              const std::function<void(const Tensor& param, const Tensor& grad, int64_t step)>& op,
              const std::vector<std::pair<Tensor, const Vec Rule::*>>& states = {}) {
  SCOPED_TRACE(what + (l.dtype == DType::Float64 ? " float64" : " float32") +
               (l.strided ? " strided" : ""));
  const Tensor param = make_tensor(random_values(12, 7, -1, 1), kShape, l.dtype, l.strided);
  Vec theta = to_doubles(param);
  for (int64_t t = 1; t <= kSteps; ++t) {
    const Tensor grad = make_tensor(random_values(12, 100 + t, -1, 1), kShape, l.dtype, !l.strided);
    op(param, grad, t);
    ref.step(theta, to_doubles(grad));
  }
  expect_near_all(param, theta, l.dtype, what + ": param");
  for (const auto& [tensor, member] : states) {
    expect_near_all(tensor, ref.*member, l.dtype, what + ": state");
  }
}

TEST(SgdStep, EveryOptionMatchesTheFormula) {
  for (const Layout& l : kLayouts) {
    for (double momentum : {0.0, 0.9}) {
      for (double dampening : {0.0, 0.3}) {
        for (bool nesterov : {false, true}) {
          for (double wd : {0.0, 0.1}) {
            for (bool maximize : {false, true}) {
              if (nesterov && momentum == 0) continue;
              testing::SgdRule ref{0.05, momentum, dampening, wd, nesterov, maximize};
              const Tensor buf = zeros(l);
              const std::string what =
                  str_cat("sgd momentum=", momentum, " dampening=", dampening,
                          " nesterov=", nesterov, " wd=", wd, " maximize=", maximize);
              run_case(
                  l, ref, what,
                  [&](const Tensor& p, const Tensor& g, int64_t t) {
                    sgd_step_(p, g, momentum != 0 ? std::optional<Tensor>(buf) : std::nullopt, 0.05,
                              momentum, dampening, wd, nesterov, maximize, t == 1);
                  },
                  momentum != 0
                      ? std::vector<std::pair<
                            Tensor, const Vec testing::SgdRule::*>>{{buf, &testing::SgdRule::b}}
                      : std::vector<std::pair<Tensor, const Vec testing::SgdRule::*>>{});
            }
          }
        }
      }
    }
  }
}

TEST(AdamStep, EveryOptionMatchesTheFormula) {
  using Rule = testing::AdamRule;
  for (const Layout& l : kLayouts) {
    for (auto [b1, b2] : {std::pair{0.9, 0.999}, std::pair{0.5, 0.9}}) {
      for (double eps : {1e-8, 1e-3}) {
        for (double wd : {0.0, 0.05}) {
          for (bool decoupled : {false, true}) {
            for (bool amsgrad : {false, true}) {
              for (bool maximize : {false, true}) {
                Rule ref{0.01, b1, b2, eps, wd, amsgrad, maximize, decoupled};
                const Tensor m = zeros(l), v = zeros(l), vmax = zeros(l);
                const std::string what =
                    str_cat("adam betas=", b1, ",", b2, " eps=", eps, " wd=", wd,
                            " decoupled=", decoupled, " amsgrad=", amsgrad, " maximize=", maximize);
                std::vector<std::pair<Tensor, const Vec Rule::*>> states = {{m, &Rule::m},
                                                                            {v, &Rule::v}};
                if (amsgrad) states.push_back({vmax, &Rule::vmax});
                run_case(
                    l, ref, what,
                    [&](const Tensor& p, const Tensor& g, int64_t t) {
                      adam_step_(p, g, m, v, amsgrad ? std::optional<Tensor>(vmax) : std::nullopt,
                                 t, 0.01, b1, b2, eps, wd, amsgrad, maximize, decoupled);
                    },
                    states);
              }
            }
          }
        }
      }
    }
  }
}

TEST(RmspropStep, EveryOptionMatchesTheFormula) {
  using Rule = testing::RmspropRule;
  for (const Layout& l : kLayouts) {
    for (double alpha : {0.99, 0.3}) {
      for (double momentum : {0.0, 0.8}) {
        for (bool centered : {false, true}) {
          for (double wd : {0.0, 0.1}) {
            for (bool maximize : {false, true}) {
              Rule ref{0.01, alpha, 1e-8, wd, momentum, centered, maximize};
              const Tensor sq = zeros(l), gavg = zeros(l), buf = zeros(l);
              const std::string what =
                  str_cat("rmsprop alpha=", alpha, " momentum=", momentum, " centered=", centered,
                          " wd=", wd, " maximize=", maximize);
              std::vector<std::pair<Tensor, const Vec Rule::*>> states = {{sq, &Rule::v}};
              if (centered) states.push_back({gavg, &Rule::g_ave});
              if (momentum > 0) states.push_back({buf, &Rule::b});
              run_case(
                  l, ref, what,
                  [&](const Tensor& p, const Tensor& g, int64_t) {
                    rmsprop_step_(p, g, sq, centered ? std::optional<Tensor>(gavg) : std::nullopt,
                                  momentum > 0 ? std::optional<Tensor>(buf) : std::nullopt, 0.01,
                                  alpha, 1e-8, wd, momentum, centered, maximize);
                  },
                  states);
            }
          }
        }
      }
    }
  }
}

TEST(AdagradStep, EveryOptionMatchesTheFormula) {
  using Rule = testing::AdagradRule;
  for (const Layout& l : kLayouts) {
    for (double lr_decay : {0.0, 0.1}) {
      for (double init : {0.0, 0.5}) {
        for (double eps : {1e-10, 1e-3}) {
          for (double wd : {0.0, 0.1}) {
            for (bool maximize : {false, true}) {
              Rule ref{0.1, lr_decay, wd, init, eps, maximize};
              const Tensor sum = make_tensor(Vec(12, init), kShape, l.dtype, l.strided);
              const std::string what =
                  str_cat("adagrad lr_decay=", lr_decay, " initial_accumulator_value=", init,
                          " eps=", eps, " wd=", wd, " maximize=", maximize);
              run_case(l, ref, what,
                       [&](const Tensor& p, const Tensor& g, int64_t t) {
                         adagrad_step_(p, g, sum, t, 0.1, lr_decay, wd, eps, maximize);
                       },
                       {{sum, &Rule::sum}});
            }
          }
        }
      }
    }
  }
}

TEST(FusedSteps, LargeParametersRunInRangesAndStillMatch) {
  // Past the kernels' range size (2^16 elements), so the update runs in parallel ranges; a
  // strided parameter is staged through a contiguous copy and written back.
  for (bool strided : {false, true}) {
    SCOPED_TRACE(strided);
    const int64_t n = 150001;
    const Tensor p = make_tensor(random_values(n, 3, -1, 1), {n}, DType::Float64, strided);
    const Tensor m = make_tensor(Vec(n, 0.0), {n}, DType::Float64);
    const Tensor v = make_tensor(Vec(n, 0.0), {n}, DType::Float64, strided);
    Vec theta = to_doubles(p);
    testing::AdamRule ref{0.01, 0.9, 0.999, 1e-8, 0.1};
    for (int64_t t = 1; t <= 3; ++t) {
      const Tensor g = make_tensor(random_values(n, 10 + t, -1, 1), {n}, DType::Float64);
      adam_step_(p, g, m, v, std::nullopt, t, 0.01, 0.9, 0.999, 1e-8, 0.1);
      ref.step(theta, to_doubles(g));
    }
    expect_near_all(p, theta, DType::Float64, "param");
    expect_near_all(v, ref.v, DType::Float64, "exp_avg_sq");
  }
}

TEST(FusedSteps, BumpTheVersionOfWhatTheyWrite) {
  const Tensor p = make_tensor({1, 2}, {2}, DType::Float64);
  const Tensor g = make_tensor({0.5, 0.5}, {2}, DType::Float64);
  const Tensor m = make_tensor({0, 0}, {2}, DType::Float64),
               v = make_tensor({0, 0}, {2}, DType::Float64);
  const uint32_t pv = p.version(), mv = m.version(), gv = g.version();
  adam_step_(p, g, m, v, std::nullopt, 1, 0.1);
  EXPECT_GT(p.version(), pv);
  EXPECT_GT(m.version(), mv);
  EXPECT_EQ(g.version(), gv);
}

TEST(FusedSteps, AnEmptyParameterIsANoOp) {
  const Tensor p = make_tensor({}, {0}, DType::Float32), g = make_tensor({}, {0}, DType::Float32);
  EXPECT_NO_THROW(sgd_step_(p, g, std::nullopt, 0.1));
}

/// Expects f to throw E whose message contains every piece.
template <typename E, typename F>
void expect_error(F&& f, const std::vector<std::string>& pieces) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << pieces[0] << "'";
  } catch (const E& e) {
    for (const std::string& piece : pieces) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos)
          << "message: " << e.what() << "\nexpected to contain: " << piece;
    }
  }
}

TEST(FusedSteps, ErrorsNameOpArgumentShapesAndDtypes) {
  const Tensor p = make_tensor({1, 2, 3, 4}, {2, 2}, DType::Float32);
  const Tensor g = make_tensor({1, 2, 3, 4}, {2, 2}, DType::Float32);
  const Tensor g3 = make_tensor({1, 2, 3}, {3}, DType::Float32);
  const Tensor g64 = make_tensor({1, 2, 3, 4}, {2, 2}, DType::Float64);
  const Tensor pi = make_tensor({1, 2, 3, 4}, {2, 2}, DType::Int64);
  const Tensor s = make_tensor({0, 0, 0, 0}, {2, 2}, DType::Float32);
  const Tensor s2 = make_tensor({0, 0, 0, 0}, {2, 2}, DType::Float32);
  expect_error<ValueError>([&] { sgd_step_(p, g3, std::nullopt, 0.1); },
                           {"optim::sgd_step_", "grad", "[2, 2]", "[3]"});
  expect_error<TypeError>([&] { sgd_step_(p, g64, std::nullopt, 0.1); },
                          {"optim::sgd_step_", "grad", "float64", "float32"});
  expect_error<TypeError>([&] { sgd_step_(pi, pi, std::nullopt, 0.1); },
                          {"optim::sgd_step_", "param", "float32 or float64", "int64"});
  expect_error<TypeError>([&] { sgd_step_(p, Tensor(), std::nullopt, 0.1); },
                          {"sgd_step_", "undefined", "grad"});
  expect_error<ValueError>([&] { sgd_step_(p, g, std::nullopt, 0.1, 0.9); },
                           {"optim::sgd_step_", "momentum=0.9", "momentum_buffer"});
  expect_error<ValueError>([&] { adam_step_(p, g, s, s2, std::nullopt, 0, 0.1); },
                           {"optim::adam_step_", "step >= 1", "got 0"});
  expect_error<ValueError>(
      [&] { adam_step_(p, g, s, s2, std::nullopt, 1, 0.1, 0.9, 0.999, 1e-8, 0, true); },
      {"optim::adam_step_", "amsgrad", "max_exp_avg_sq"});
  expect_error<ValueError>([&] { adam_step_(p, g, s, g3, std::nullopt, 1, 0.1); },
                           {"optim::adam_step_", "exp_avg_sq", "[3]", "[2, 2]"});
  expect_error<ValueError>(
      [&] { rmsprop_step_(p, g, s, std::nullopt, std::nullopt, 0.1, 0.99, 1e-8, 0, 0, true); },
      {"optim::rmsprop_step_", "centered", "grad_avg"});
  expect_error<ValueError>([&] { adagrad_step_(p, g, g3, 1, 0.1); },
                           {"optim::adagrad_step_", "state_sum", "[3]"});
  const Tensor wide = make_tensor({1, 2}, {1, 2}, DType::Float32);
  const Tensor expanded = wide.as_strided_view({2, 2}, {0, 1}, 0);
  expect_error<ValueError>([&] { sgd_step_(expanded, g, std::nullopt, 0.1); },
                           {"optim::sgd_step_", "param", "share memory", "stride 0 in dim 0"});
  expect_error<ValueError>([&] { adam_step_(p, g, s, s, std::nullopt, 1, 0.1); },
                           {"optim::adam_step_", "exp_avg and exp_avg_sq share memory"});
  expect_error<ValueError>([&] { sgd_step_(p, g, p, 0.1, 0.9); },
                           {"optim::sgd_step_", "param and momentum_buffer share memory"});
  // Nothing was written by the failed calls.
  EXPECT_EQ(to_doubles(p), (Vec{1, 2, 3, 4}));
}

}  // namespace
}  // namespace loom::optim
