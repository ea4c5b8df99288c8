// The optimizers against libtorch's (torch::optim, the C++ API of the installed libtorch):
// the same parameters and gradients through SGD, Adam, AdamW, RMSprop and Adagrad with a
// spread of options, compared after every step in float64 (to 1e-14 relative) and float32
// (1e-6); measured: at most 1.9e-16 and 7.8e-8, about one rounding (ATen's vectorized loops
// fuse some multiply-adds, so bit equality is not expected). libtorch's C++ optimizers have no
// `maximize`, so that option is covered by the hand computations (cpu_steps_test,
// optimizer_test) only.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/optim/optim.h"
#include "ops_test_util.h"

namespace loom::optim {
namespace {

using loom::testing::make_tensor;
using loom::testing::random_values;
using loom::testing::to_doubles;

const std::vector<std::vector<int64_t>> kShapes = {{3, 4}, {5}};

torch::Tensor to_torch(const std::vector<double>& values, const std::vector<int64_t>& shape,
                       DType dtype) {
  auto t = torch::tensor(values, torch::kFloat64).reshape(shape);
  return dtype == DType::Float64 ? t : t.to(torch::kFloat32);
}

std::vector<double> from_torch(const torch::Tensor& t) {
  const torch::Tensor d = t.detach().to(torch::kFloat64).contiguous();
  return {d.data_ptr<double>(), d.data_ptr<double>() + d.numel()};
}

/// Runs `steps` steps of a Loom optimizer and a libtorch one over the same parameters and
/// gradients and compares the parameters after each step.
void expect_parity(
    const std::string& what, DType dtype,
    const std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>& make_loom,
    const std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>&
        make_torch,
    int steps = 8) {
  SCOPED_TRACE(what + (dtype == DType::Float64 ? " float64" : " float32"));
  std::vector<Tensor> lp;
  std::vector<torch::Tensor> tp;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    int64_t n = 1;
    for (int64_t s : kShapes[i]) n *= s;
    const std::vector<double> v = random_values(static_cast<size_t>(n), 40 + i, -1, 1);
    Tensor p = make_tensor(v, kShapes[i], dtype);
    p.set_requires_grad(true);
    lp.push_back(p);
    tp.push_back(to_torch(to_doubles(p), kShapes[i], dtype).requires_grad_(true));
  }
  std::unique_ptr<Optimizer> lo = make_loom(lp);
  std::unique_ptr<torch::optim::Optimizer> to = make_torch(tp);
  const double rtol = dtype == DType::Float64 ? 1e-14 : 1e-6;
  for (int t = 1; t <= steps; ++t) {
    for (size_t i = 0; i < lp.size(); ++i) {
      const std::vector<double> g =
          random_values(static_cast<size_t>(lp[i].numel()), 1000 * t + i, -1, 1);
      const Tensor lg = make_tensor(g, kShapes[i], dtype);
      lp[i].set_grad(lg);
      tp[i].mutable_grad() = to_torch(to_doubles(lg), kShapes[i], dtype);
    }
    lo->step();
    to->step();
    for (size_t i = 0; i < lp.size(); ++i) {
      const std::vector<double> got = to_doubles(lp[i]), want = from_torch(tp[i]);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_NEAR(got[k], want[k], rtol * (1 + std::fabs(want[k])))
            << "step " << t << ", parameter " << i << ", element " << k;
      }
    }
  }
}

class LibtorchParity : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { loom::testing::load_ops_core(); }
};

TEST_P(LibtorchParity, SGD) {
  struct Case {
    double momentum, dampening, weight_decay;
    bool nesterov;
  };
  for (const Case c : {Case{0, 0, 0, false}, Case{0.9, 0, 0, false}, Case{0.9, 0.2, 0.01, false},
                       Case{0.9, 0, 0.05, true}}) {
    expect_parity(
        str_cat("SGD momentum=", c.momentum, " dampening=", c.dampening, " wd=", c.weight_decay,
                " nesterov=", c.nesterov),
        GetParam(),
        [&](std::vector<Tensor> p) {
          return std::make_unique<SGD>(p, SGDOptions(0.1)
                                              .momentum(c.momentum)
                                              .dampening(c.dampening)
                                              .weight_decay(c.weight_decay)
                                              .nesterov(c.nesterov));
        },
        [&](std::vector<torch::Tensor> p) {
          return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.1)
                                                            .momentum(c.momentum)
                                                            .dampening(c.dampening)
                                                            .weight_decay(c.weight_decay)
                                                            .nesterov(c.nesterov));
        });
  }
}

struct AdamCase {
  double beta1, beta2, eps, weight_decay;
  bool amsgrad;
};
const AdamCase kAdamCases[] = {{0.9, 0.999, 1e-8, 0, false},
                               {0.9, 0.999, 1e-8, 0, true},
                               {0.9, 0.999, 1e-8, 0.1, false},
                               {0.5, 0.9, 1e-3, 0.01, true}};

TEST_P(LibtorchParity, Adam) {
  for (const AdamCase& c : kAdamCases) {
    expect_parity(
        str_cat("Adam betas=", c.beta1, ",", c.beta2, " eps=", c.eps, " wd=", c.weight_decay,
                " amsgrad=", c.amsgrad),
        GetParam(),
        [&](std::vector<Tensor> p) {
          return std::make_unique<Adam>(p, AdamOptions(0.01)
                                               .betas({c.beta1, c.beta2})
                                               .eps(c.eps)
                                               .weight_decay(c.weight_decay)
                                               .amsgrad(c.amsgrad));
        },
        [&](std::vector<torch::Tensor> p) {
          return std::make_unique<torch::optim::Adam>(p,
                                                      torch::optim::AdamOptions(0.01)
                                                          .betas(std::make_tuple(c.beta1, c.beta2))
                                                          .eps(c.eps)
                                                          .weight_decay(c.weight_decay)
                                                          .amsgrad(c.amsgrad));
        });
  }
}

TEST_P(LibtorchParity, AdamW) {
  for (const AdamCase& c : kAdamCases) {
    expect_parity(
        str_cat("AdamW betas=", c.beta1, ",", c.beta2, " eps=", c.eps, " wd=", c.weight_decay,
                " amsgrad=", c.amsgrad),
        GetParam(),
        [&](std::vector<Tensor> p) {
          return std::make_unique<AdamW>(p, AdamWOptions(0.01)
                                                .betas({c.beta1, c.beta2})
                                                .eps(c.eps)
                                                .weight_decay(c.weight_decay)
                                                .amsgrad(c.amsgrad));
        },
        [&](std::vector<torch::Tensor> p) {
          return std::make_unique<torch::optim::AdamW>(p,
                                                       torch::optim::AdamWOptions(0.01)
                                                           .betas(std::make_tuple(c.beta1, c.beta2))
                                                           .eps(c.eps)
                                                           .weight_decay(c.weight_decay)
                                                           .amsgrad(c.amsgrad));
        });
  }
}

TEST_P(LibtorchParity, RMSprop) {
  struct Case {
    double alpha, weight_decay, momentum;
    bool centered;
  };
  for (const Case c : {Case{0.99, 0, 0, false}, Case{0.99, 0, 0, true}, Case{0.9, 0, 0.8, false},
                       Case{0.7, 0.05, 0.5, true}}) {
    expect_parity(
        str_cat("RMSprop alpha=", c.alpha, " wd=", c.weight_decay, " momentum=", c.momentum,
                " centered=", c.centered),
        GetParam(),
        [&](std::vector<Tensor> p) {
          return std::make_unique<RMSprop>(p, RMSpropOptions(0.01)
                                                  .alpha(c.alpha)
                                                  .weight_decay(c.weight_decay)
                                                  .momentum(c.momentum)
                                                  .centered(c.centered));
        },
        [&](std::vector<torch::Tensor> p) {
          return std::make_unique<torch::optim::RMSprop>(p, torch::optim::RMSpropOptions(0.01)
                                                                .alpha(c.alpha)
                                                                .weight_decay(c.weight_decay)
                                                                .momentum(c.momentum)
                                                                .centered(c.centered));
        });
  }
}

TEST_P(LibtorchParity, Adagrad) {
  struct Case {
    double lr_decay, weight_decay, initial_accumulator_value, eps;
  };
  for (const Case c : {Case{0, 0, 0, 1e-10}, Case{0.1, 0.05, 0.3, 1e-3}}) {
    expect_parity(
        str_cat("Adagrad lr_decay=", c.lr_decay, " wd=", c.weight_decay,
                " initial_accumulator_value=", c.initial_accumulator_value, " eps=", c.eps),
        GetParam(),
        [&](std::vector<Tensor> p) {
          return std::make_unique<Adagrad>(
              p, AdagradOptions(0.1)
                     .lr_decay(c.lr_decay)
                     .weight_decay(c.weight_decay)
                     .initial_accumulator_value(c.initial_accumulator_value)
                     .eps(c.eps));
        },
        [&](std::vector<torch::Tensor> p) {
          return std::make_unique<torch::optim::Adagrad>(
              p, torch::optim::AdagradOptions(0.1)
                     .lr_decay(c.lr_decay)
                     .weight_decay(c.weight_decay)
                     .initial_accumulator_value(c.initial_accumulator_value)
                     .eps(c.eps));
        });
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LibtorchParity, ::testing::Values(DType::Float64, DType::Float32),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return info.param == DType::Float64 ? std::string("float64")
                                                               : std::string("float32");
                         });

}  // namespace
}  // namespace loom::optim
