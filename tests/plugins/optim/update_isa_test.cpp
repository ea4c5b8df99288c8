// The fused update ops' per-ISA loops (plugins/optim/ops/vec/update_kernels.cpp) at every
// instruction-set level this CPU runs: Adam (L2 weight decay, AdamW's decoupled decay,
// AMSGrad, maximize, a beta1 below 0.5), SGD (momentum, dampening, Nesterov, weight decay,
// maximize, none), RMSprop (centered, momentum, both lerp ends) and Adagrad, in float32 and
// float64, on sizes around the vector widths and above the
// parallel threshold, against the float64 rules of reference_rules.h over several steps.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "loom/core/cpu_isa.h"
#include "loom/optim/ops.h"
#include "isa_test_util.h"
#include "ops_test_util.h"
#include "reference_rules.h"

namespace loom::optim {
namespace {

using cpu::Isa;
using loom::testing::flat_tensor;
using loom::testing::random_values;
using loom::testing::to_doubles;
using testing::Vec;

const std::vector<int64_t> kSizes = {1, 15, 16, 17, 33, 1000, 2 * 65536 + 33};
constexpr int kSteps = 3;

void expect_near_all(const Tensor& got, const Vec& want, DType dtype, const std::string& what) {
  const double rtol = dtype == DType::Float64 ? 1e-12 : 1e-4;
  const double atol = dtype == DType::Float64 ? 1e-14 : 1e-5;
  const Vec g = to_doubles(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], atol + rtol * std::fabs(want[i])) << what << ", element " << i;
  }
}

class UpdateIsa : public loom::testing::IsaLevelTest {};

/// kSteps of op and of the rule ref from the same start, then param and state compared.
template <typename Rule>
void run_case(DType dtype, int64_t n, Rule ref, const std::string& what,
              const std::function<void(const Tensor& param, const Tensor& grad, int64_t t)>& op,
              const std::vector<std::pair<Tensor, const Vec Rule::*>>& states) {
  const Tensor param = flat_tensor(random_values(n, 11 + n, -1, 1), dtype);
  Vec theta = to_doubles(param);
  for (int64_t t = 1; t <= kSteps; ++t) {
    const Tensor grad = flat_tensor(random_values(n, 100 * t + n, -1, 1), dtype);
    op(param, grad, t);
    ref.step(theta, to_doubles(grad));
  }
  const std::string where = what + (dtype == DType::Float64 ? " float64" : " float32") +
                            " n=" + std::to_string(n);
  expect_near_all(param, theta, dtype, where + " param");
  for (const auto& [tensor, member] : states) expect_near_all(tensor, ref.*member, dtype, where);
}

TEST_P(UpdateIsa, AdamMatchesTheReference) {
  struct Case {
    const char* name;
    double beta1, weight_decay;
    bool amsgrad, maximize, decoupled;
  };
  const Case cases[] = {{"adam", 0.9, 0, false, false, false},
                        {"adam l2", 0.9, 0.1, false, false, false},
                        {"adamw", 0.9, 0.1, false, false, true},
                        {"adam amsgrad maximize", 0.9, 0, true, true, false},
                        {"adamw amsgrad", 0.9, 0.05, true, false, true},
                        {"adam beta1 0.3", 0.3, 0, false, false, false}};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t n : kSizes) {
      for (const Case& c : cases) {
        const Tensor m = flat_tensor(Vec(n, 0.0), dtype), v = flat_tensor(Vec(n, 0.0), dtype);
        const Tensor vmax = flat_tensor(Vec(n, 0.0), dtype);
        testing::AdamRule rule{1e-2, c.beta1, 0.999, 1e-8, c.weight_decay, c.amsgrad,
                               c.maximize, c.decoupled};
        std::vector<std::pair<Tensor, const Vec testing::AdamRule::*>> states = {
            {m, &testing::AdamRule::m}, {v, &testing::AdamRule::v}};
        if (c.amsgrad) states.push_back({vmax, &testing::AdamRule::vmax});
        run_case(
            dtype, n, rule, c.name,
            [&](const Tensor& p, const Tensor& g, int64_t t) {
              adam_step_(p, g, m, v, c.amsgrad ? std::optional<Tensor>(vmax) : std::nullopt, t,
                         1e-2, c.beta1, 0.999, 1e-8, c.weight_decay, c.amsgrad, c.maximize,
                         c.decoupled);
            },
            states);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(UpdateIsa, SgdMatchesTheReference) {
  struct Case {
    const char* name;
    double momentum, dampening, weight_decay;
    bool nesterov, maximize;
  };
  const Case cases[] = {{"sgd", 0, 0, 0, false, false},
                        {"sgd wd maximize", 0, 0, 0.1, false, true},
                        {"sgd momentum", 0.9, 0, 0, false, false},
                        {"sgd momentum dampening wd", 0.9, 0.25, 0.1, false, false},
                        {"sgd nesterov maximize", 0.9, 0, 0, true, true}};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t n : kSizes) {
      for (const Case& c : cases) {
        const Tensor buf = flat_tensor(Vec(n, 0.0), dtype);
        testing::SgdRule rule{1e-2, c.momentum, c.dampening, c.weight_decay, c.nesterov,
                              c.maximize};
        std::vector<std::pair<Tensor, const Vec testing::SgdRule::*>> states;
        if (c.momentum != 0) states.push_back({buf, &testing::SgdRule::b});
        run_case(
            dtype, n, rule, c.name,
            [&](const Tensor& p, const Tensor& g, int64_t t) {
              sgd_step_(p, g, c.momentum != 0 ? std::optional<Tensor>(buf) : std::nullopt, 1e-2,
                        c.momentum, c.dampening, c.weight_decay, c.nesterov, c.maximize, t == 1);
            },
            states);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(UpdateIsa, RmspropMatchesTheReference) {
  struct Case {
    const char* name;
    double alpha, weight_decay, momentum;
    bool centered, maximize;
  };
  const Case cases[] = {{"rmsprop", 0.99, 0, 0, false, false},
                        {"rmsprop centered momentum wd", 0.9, 0.1, 0.5, true, false},
                        {"rmsprop centered alpha 0.3 maximize", 0.3, 0, 0, true, true}};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t n : kSizes) {
      for (const Case& c : cases) {
        const Tensor sq = flat_tensor(Vec(n, 0.0), dtype), ga = flat_tensor(Vec(n, 0.0), dtype);
        const Tensor buf = flat_tensor(Vec(n, 0.0), dtype);
        testing::RmspropRule rule{1e-2, c.alpha, 1e-8, c.weight_decay, c.momentum, c.centered,
                                  c.maximize};
        std::vector<std::pair<Tensor, const Vec testing::RmspropRule::*>> states = {
            {sq, &testing::RmspropRule::v}};
        if (c.centered) states.push_back({ga, &testing::RmspropRule::g_ave});
        if (c.momentum > 0) states.push_back({buf, &testing::RmspropRule::b});
        run_case(
            dtype, n, rule, c.name,
            [&](const Tensor& p, const Tensor& g, int64_t) {
              rmsprop_step_(p, g, sq, c.centered ? std::optional<Tensor>(ga) : std::nullopt,
                            c.momentum > 0 ? std::optional<Tensor>(buf) : std::nullopt, 1e-2,
                            c.alpha, 1e-8, c.weight_decay, c.momentum, c.centered, c.maximize);
            },
            states);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(UpdateIsa, AdagradMatchesTheReference) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t n : kSizes) {
      for (const bool wd_maximize : {false, true}) {
        const Tensor sum = flat_tensor(Vec(n, 0.0), dtype);
        const double wd = wd_maximize ? 0.1 : 0;
        testing::AdagradRule rule{1e-1, 0.01, wd, 0, 1e-10, wd_maximize};
        run_case(
            dtype, n, rule, wd_maximize ? "adagrad wd maximize" : "adagrad",
            [&](const Tensor& p, const Tensor& g, int64_t t) {
              adagrad_step_(p, g, sum, t, 1e-1, 0.01, wd, 1e-10, wd_maximize);
            },
            {{sum, &testing::AdagradRule::sum}});
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, UpdateIsa,
                         ::testing::ValuesIn(loom::testing::all_isa_levels()),
                         loom::testing::isa_level_name);

}  // namespace
}  // namespace loom::optim
