// Derivative formulas of the reduction family (ops/core/autograd/reduction.cpp): gradcheck
// in float64 over several dims (lists, negative, keepdim), non-contiguous inputs and 0-d
// tensors; ties, zeros and NaN-free edge cases checked against PyTorch's values by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gradcheck_util.h"
#include "loom/autograd/autograd.h"
#include "loom/autograd/gradcheck.h"
#include "loom/loom.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using autograd::gradcheck;
using autograd::variable_list;
using testing::leaf;
using testing::leaf_of;
using testing::make_tensor;
using testing::numel_of;
using testing::random_values;
using testing::to_doubles;
using testing::transposed_leaf;
using Values = std::vector<double>;
using Sizes = std::vector<int64_t>;

// Values away from zero (|x| in [0.5, 1.5], random signs), for prod / cumprod / norms.
Tensor away_from_zero(const Sizes& sizes, uint64_t seed, bool strided = false) {
  Values v = random_values(static_cast<size_t>(numel_of(sizes)), seed, 0.5, 1.5);
  const Values s = random_values(v.size(), seed + 1);
  for (size_t i = 0; i < v.size(); ++i) v[i] = s[i] < 0 ? -v[i] : v[i];
  Tensor t = make_tensor(v, sizes, DType::Float64, strided);
  t.set_requires_grad(true);
  return t;
}

void check(const std::function<Tensor(const Tensor&)>& f, const Tensor& x,
           const std::string& what) {
  SCOPED_TRACE(what);
  try {
    gradcheck([&](const variable_list& in) -> variable_list { return {f(in[0])}; }, {x});
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

Values grad_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  x.set_grad(Tensor());
  f(x).sum().backward();
  return to_doubles(x.grad());
}

class ReductionGradcheckTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
};

struct DimCase {
  Sizes dims;
  bool keepdim;
};

const std::vector<DimCase> kDimCases = {{{0}, false},    {{1}, true},     {{-1}, false},
                                        {{0, 2}, false}, {{-1, 0}, true}, {{}, false}};

std::string name_of(const DimCase& d) {
  return loom::str_cat("dims ", sizes_str(d.dims), d.keepdim ? " keepdim" : "");
}

TEST_F(ReductionGradcheckTest, SumMean) {
  const Tensor x = leaf({2, 3, 4}, 1, true);
  check([](const Tensor& t) { return t.sum(); }, x, "sum");
  check([](const Tensor& t) { return t.mean(); }, x, "mean");
  for (const DimCase& d : kDimCases) {
    check([&](const Tensor& t) { return t.sum(d.dims, d.keepdim); }, x, "sum " + name_of(d));
    check([&](const Tensor& t) { return t.mean(d.dims, d.keepdim); }, x, "mean " + name_of(d));
  }
  check([](const Tensor& t) { return t.sum(); }, leaf({}, 2), "sum 0-d");
}

TEST_F(ReductionGradcheckTest, Prod) {
  const Tensor x = away_from_zero({2, 3, 4}, 3, true);
  check([](const Tensor& t) { return t.prod(); }, x, "prod");
  check([](const Tensor& t) { return t.prod(); }, away_from_zero({}, 4), "prod 0-d");
  for (int64_t dim : {0, 1, -1}) {
    for (bool keepdim : {false, true}) {
      check([&](const Tensor& t) { return prod(t, dim, keepdim); }, x,
            loom::str_cat("prod dim ", dim, keepdim ? " keepdim" : ""));
    }
  }
  check([](const Tensor& t) { return prod(t, 0); }, transposed_leaf({3, 4}, 5), "prod transposed");
  check([](const Tensor& t) { return prod(t, 0, true); }, away_from_zero({}, 6), "prod.dim 0-d");
}

TEST_F(ReductionGradcheckTest, ProdWithZeros) {
  // One zero: only it gets a gradient (the product of the others); two zeros: none.
  const Tensor one = leaf_of({2, 0, 3, 4}, {4});
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.prod(); }, one), (Values{0, 24, 0, 0}));
  const Tensor two = leaf_of({2, 0, 3, 0}, {4});
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.prod(); }, two), (Values{0, 0, 0, 0}));
  check([](const Tensor& t) { return t.prod(); }, one, "prod one zero");
  check([](const Tensor& t) { return t.prod(); }, two, "prod two zeros");
  // Rows: no zero, one zero, two zeros.
  const Tensor m = leaf_of({1, 2, 3, 0, 2, 3, 0, 2, 0}, {3, 3});
  EXPECT_EQ(grad_of([](const Tensor& t) { return prod(t, 1); }, m),
            (Values{6, 3, 2, 6, 0, 0, 0, 0, 0}));
  for (int64_t dim : {0, 1}) {
    for (bool keepdim : {false, true}) {
      check([&](const Tensor& t) { return prod(t, dim, keepdim); }, m,
            loom::str_cat("prod zeros dim ", dim, keepdim ? " keepdim" : ""));
    }
  }
}

TEST_F(ReductionGradcheckTest, MaxMin) {
  const Tensor x = leaf({2, 3, 4}, 7, true);
  check([](const Tensor& t) { return t.max(); }, x, "max");
  check([](const Tensor& t) { return t.min(); }, x, "min");
  check([](const Tensor& t) { return t.max(); }, leaf({}, 8), "max 0-d");
  for (int64_t dim : {0, 1, -1}) {
    for (bool keepdim : {false, true}) {
      const std::string k = loom::str_cat(" dim ", dim, keepdim ? " keepdim" : "");
      check([&](const Tensor& t) { return std::get<0>(t.max(dim, keepdim)); }, x, "max" + k);
      check([&](const Tensor& t) { return std::get<0>(t.min(dim, keepdim)); }, x, "min" + k);
    }
  }
  check([](const Tensor& t) { return std::get<0>(t.max(0)); }, transposed_leaf({3, 4}, 9),
        "max.dim transposed");
  check([](const Tensor& t) { return std::get<0>(t.min(0, true)); }, leaf({}, 10), "min.dim 0-d");
  for (const DimCase& d : kDimCases) {
    check([&](const Tensor& t) { return t.amax(d.dims, d.keepdim); }, x, "amax " + name_of(d));
    check([&](const Tensor& t) { return t.amin(d.dims, d.keepdim); }, x, "amin " + name_of(d));
  }
}

TEST_F(ReductionGradcheckTest, MaxMinTiesShareTheGradient) {
  const Tensor x = leaf_of({1, 3, 3, 2, -1, -1}, {2, 3});
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.max(); }, x), (Values{0, .5, .5, 0, 0, 0}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.min(); }, x), (Values{0, 0, 0, 0, .5, .5}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.amax({1}); }, x), (Values{0, .5, .5, 1, 0, 0}));
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.amin({1}, true); }, x),
            (Values{1, 0, 0, 0, .5, .5}));
  // max.dim picks one index: the gradient goes there only.
  const Values g = grad_of([](const Tensor& t) { return std::get<0>(t.max(1)); }, x);
  EXPECT_EQ(g[0] + g[1] + g[2], 1);
  EXPECT_EQ(g[1] + g[2], 1);
}

TEST_F(ReductionGradcheckTest, VarStd) {
  using VarDim = Tensor(const Tensor&, std::optional<IntArrayRef>, bool, bool);
  static const auto var_dim =
      Dispatcher::instance().find_op_or_throw("aten::var.dim").typed<VarDim>();
  static const auto std_dim =
      Dispatcher::instance().find_op_or_throw("aten::std.dim").typed<VarDim>();
  const Tensor x = leaf({2, 3, 4}, 11, true);
  for (bool unbiased : {true, false}) {
    check([&](const Tensor& t) { return t.var(unbiased); }, x, loom::str_cat("var ", unbiased));
    check([&](const Tensor& t) { return t.std(unbiased); }, x, loom::str_cat("std ", unbiased));
  }
  for (const DimCase& d : kDimCases) {
    check([&](const Tensor& t) { return var_dim(t, IntArrayRef(d.dims), true, d.keepdim); }, x,
          "var.dim " + name_of(d));
    check([&](const Tensor& t) { return std_dim(t, IntArrayRef(d.dims), false, d.keepdim); }, x,
          "std.dim " + name_of(d));
    for (double corr : {0.0, 1.0, 0.5}) {
      const std::string k = loom::str_cat(name_of(d), " correction ", corr);
      check([&](const Tensor& t) { return var(t, IntArrayRef(d.dims), Scalar(corr), d.keepdim); },
            x, "var.correction " + k);
      check(
          [&](const Tensor& t) {
            return loom::std(t, IntArrayRef(d.dims), Scalar(corr), d.keepdim);
          },
          x, "std.correction " + k);
    }
  }
  check([](const Tensor& t) { return var(t, std::nullopt); }, x, "var.correction dim None");
  check([](const Tensor& t) { return var(t, IntArrayRef({1}), Scalar(int64_t{0})); },
        transposed_leaf({3, 4}, 12), "var transposed");
  check([](const Tensor& t) { return loom::std(t, IntArrayRef({0}), Scalar(int64_t{1})); },
        transposed_leaf({3, 4}, 13), "std transposed");
}

TEST_F(ReductionGradcheckTest, VarMeanStdMean) {
  const Tensor x = leaf({2, 3, 4}, 14, true);
  for (const DimCase& d : kDimCases) {
    for (double corr : {0.0, 1.0}) {
      const std::string k = loom::str_cat(name_of(d), " correction ", corr);
      auto both = [&](bool use_std) {
        return [&, use_std](const variable_list& in) -> variable_list {
          auto [a, b] = use_std ? std_mean(in[0], IntArrayRef(d.dims), Scalar(corr), d.keepdim)
                                : var_mean(in[0], IntArrayRef(d.dims), Scalar(corr), d.keepdim);
          return {a, b};
        };
      };
      for (bool use_std : {false, true}) {
        SCOPED_TRACE((use_std ? "std_mean " : "var_mean ") + k);
        try {
          gradcheck(both(use_std), {x});
        } catch (const std::exception& e) {
          ADD_FAILURE() << k << ": " << e.what();
        }
      }
    }
  }
  // Only one of the two outputs used.
  check([](const Tensor& t) { return std::get<1>(var_mean(t, IntArrayRef({1}))); }, x,
        "var_mean mean only");
  check([](const Tensor& t) { return std::get<0>(std_mean(t, IntArrayRef({1}))); }, x,
        "std_mean std only");
}

TEST_F(ReductionGradcheckTest, Norms) {
  using NormDtype = Tensor(const Tensor&, std::optional<Scalar>, DType);
  using NormDimDtype = Tensor(const Tensor&, std::optional<Scalar>, IntArrayRef, bool, DType);
  static const auto norm_dtype =
      Dispatcher::instance().find_op_or_throw("aten::norm.ScalarOpt_dtype").typed<NormDtype>();
  static const auto norm_dim_dtype = Dispatcher::instance()
                                         .find_op_or_throw("aten::norm.ScalarOpt_dim_dtype")
                                         .typed<NormDimDtype>();
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = away_from_zero({2, 3, 4}, 15, true);
  for (double p : {2.0, 1.0, inf, -inf, 3.0, 1.5, 0.5, 0.0}) {
    const std::string k = loom::str_cat(" p ", p);
    check([&](const Tensor& t) { return t.norm(p); }, x, "norm.Scalar" + k);
    check([&](const Tensor& t) { return norm_dtype(t, Scalar(p), DType::Float64); }, x,
          "norm.ScalarOpt_dtype" + k);
    for (const DimCase& d : kDimCases) {
      const std::string kd = k + " " + name_of(d);
      check([&](const Tensor& t) { return norm(t, Scalar(p), d.dims, d.keepdim); }, x,
            "norm.ScalarOpt_dim" + kd);
      check(
          [&](const Tensor& t) {
            return norm_dim_dtype(t, Scalar(p), d.dims, d.keepdim, DType::Float64);
          },
          x, "norm.ScalarOpt_dim_dtype" + kd);
      check(
          [&](const Tensor& t) { return linalg_vector_norm(t, p, IntArrayRef(d.dims), d.keepdim); },
          x, "linalg_vector_norm" + kd);
    }
  }
  check([](const Tensor& t) { return norm(t, std::nullopt, {1}); }, x, "norm p None");
  check([](const Tensor& t) { return linalg_vector_norm(t); }, transposed_leaf({3, 4}, 16),
        "linalg_vector_norm transposed");
  check([](const Tensor& t) { return linalg_vector_norm(t, 3); }, away_from_zero({}, 17),
        "linalg_vector_norm 0-d");
  for (const DimCase& d : kDimCases) {
    if (d.dims.empty()) continue;
    check([&](const Tensor& t) { return frobenius_norm(t, d.dims, d.keepdim); }, x,
          "frobenius_norm " + name_of(d));
  }
  // The 2-norm of zeros has gradient zero (not NaN); the inf-norm splits among ties.
  const Tensor z = leaf_of({0, 0, 0}, {3});
  EXPECT_EQ(grad_of([](const Tensor& t) { return t.norm(); }, z), (Values{0, 0, 0}));
  const Tensor ties = leaf_of({-3, 1, 3}, {3});
  EXPECT_EQ(grad_of([](const Tensor& t) { return linalg_vector_norm(t, INFINITY); }, ties),
            (Values{-.5, 0, .5}));
}

TEST_F(ReductionGradcheckTest, Logsumexp) {
  const Tensor x = leaf({2, 3, 4}, 18, true);
  for (const DimCase& d : kDimCases) {
    if (d.dims.empty()) continue;
    check([&](const Tensor& t) { return t.logsumexp(d.dims, d.keepdim); }, x,
          "logsumexp " + name_of(d));
  }
  check([](const Tensor& t) { return t.logsumexp({0}); }, transposed_leaf({3, 4}, 19),
        "logsumexp transposed");
  check([](const Tensor& t) { return t.logsumexp({0}); }, leaf({}, 20), "logsumexp 0-d");
}

TEST_F(ReductionGradcheckTest, CumsumCumprod) {
  const Tensor x = away_from_zero({2, 3, 4}, 21, true);
  for (int64_t dim : {0, 1, 2, -1}) {
    check([&](const Tensor& t) { return t.cumsum(dim); }, x, loom::str_cat("cumsum ", dim));
    check([&](const Tensor& t) { return cumprod(t, dim); }, x, loom::str_cat("cumprod ", dim));
  }
  check([](const Tensor& t) { return t.cumsum(0); }, transposed_leaf({3, 4}, 22),
        "cumsum transposed");
  check([](const Tensor& t) { return cumprod(t, 1); }, transposed_leaf({3, 4}, 23),
        "cumprod transposed");
  check([](const Tensor& t) { return t.cumsum(0); }, leaf({}, 24), "cumsum 0-d");
  check([](const Tensor& t) { return cumprod(t, -1); }, leaf({}, 25), "cumprod 0-d");
  // Zeros: rows with none, one (first, middle, last) and two.
  const Tensor z =
      leaf_of({1.5, 2, -1, 0.5, 0, 2, -1, 3, 1.5, 2, 3, 0, 2, 0, 3, 0, 0.5, 2, 0, 3}, {5, 4});
  check([](const Tensor& t) { return cumprod(t, 1); }, z, "cumprod zeros dim 1");
  check([](const Tensor& t) { return cumprod(t, 0); }, z, "cumprod zeros dim 0");
}

TEST_F(ReductionGradcheckTest, Softmax) {
  const Tensor x = leaf({2, 3, 4}, 26, true);
  for (int64_t dim : {0, 1, 2, -1}) {
    const std::string k = loom::str_cat(" dim ", dim);
    check([&](const Tensor& t) { return t.softmax(dim); }, x, "softmax" + k);
    check([&](const Tensor& t) { return t.log_softmax(dim); }, x, "log_softmax" + k);
    check([&](const Tensor& t) { return _softmax(t, dim, false); }, x, "_softmax" + k);
    check([&](const Tensor& t) { return _log_softmax(t, dim, false); }, x, "_log_softmax" + k);
  }
  check([](const Tensor& t) { return t.softmax(0); }, transposed_leaf({3, 4}, 27),
        "softmax transposed");
  check([](const Tensor& t) { return t.log_softmax(1); }, transposed_leaf({3, 4}, 28),
        "log_softmax transposed");
  check([](const Tensor& t) { return t.softmax(0); }, leaf({}, 29), "softmax 0-d");
  check([](const Tensor& t) { return t.log_softmax(-1); }, leaf({}, 30), "log_softmax 0-d");
}

TEST_F(ReductionGradcheckTest, EmptyInputs) {
  // Reductions over a zero-size dim and scans / softmax of empty tensors: empty gradients of
  // the input's shape.
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> fns = {
      {"sum", [](const Tensor& t) { return t.sum({0}); }},
      {"mean", [](const Tensor& t) { return t.mean({1}); }},
      {"prod", [](const Tensor& t) { return prod(t, 0); }},
      {"prod all", [](const Tensor& t) { return t.prod(); }},
      {"var", [](const Tensor& t) { return var(t, IntArrayRef({1})); }},
      {"norm", [](const Tensor& t) { return norm(t, Scalar(2), {0}); }},
      {"cumsum", [](const Tensor& t) { return t.cumsum(0); }},
      {"cumprod", [](const Tensor& t) { return cumprod(t, 1); }},
      {"softmax", [](const Tensor& t) { return t.softmax(0); }},
      {"log_softmax", [](const Tensor& t) { return t.log_softmax(1); }},
      {"amax", [](const Tensor& t) { return t.amax({1}); }},
  };
  for (const auto& [name, f] : fns) {
    SCOPED_TRACE(name);
    const Tensor x = leaf({0, 3}, 40);
    try {
      f(x).sum().backward();
      ASSERT_TRUE(x.grad().defined());
      EXPECT_EQ(sizes_str(x.grad().sizes()), "[0, 3]");
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
}

TEST_F(ReductionGradcheckTest, SecondDerivatives) {
  // Recording the backward (create_graph) uses the composite forms of the formulas.
  auto gg = [](const std::function<Tensor(const Tensor&)>& f, const Tensor& x,
               const std::string& what) {
    SCOPED_TRACE(what);
    try {
      autograd::gradgradcheck([&](const variable_list& in) -> variable_list { return {f(in[0])}; },
                              {x});
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
  };
  const Tensor x = leaf({3, 4}, 31);
  gg([](const Tensor& t) { return t.softmax(1); }, x, "softmax");
  gg([](const Tensor& t) { return t.log_softmax(0); }, x, "log_softmax");
  gg([](const Tensor& t) { return t.sum({1}); }, x, "sum");
  gg([](const Tensor& t) { return t.mean({0}, true); }, x, "mean");
  gg([](const Tensor& t) { return var(t, IntArrayRef({1})); }, x, "var");
  gg([](const Tensor& t) { return loom::std(t, IntArrayRef({0}), Scalar(int64_t{0}), true); }, x,
     "std");
  gg([](const Tensor& t) { return std::get<0>(var_mean(t, IntArrayRef({1}))) * 2; }, x, "var_mean");
  const Tensor y = away_from_zero({3, 4}, 32);
  gg([](const Tensor& t) { return t.prod(); }, y, "prod");
  gg([](const Tensor& t) { return prod(t, 1); }, y, "prod.dim");
  gg([](const Tensor& t) { return t.max(); }, x, "max");
  gg([](const Tensor& t) { return std::get<0>(t.min(1)); }, x, "min.dim");
  gg([](const Tensor& t) { return t.amax({0}); }, x, "amax");
  for (double p : {2.0, 1.0, 3.0, 1.5, std::numeric_limits<double>::infinity()}) {
    gg([&](const Tensor& t) { return norm(t, Scalar(p), {1}); }, y, loom::str_cat("norm p ", p));
  }
  gg([](const Tensor& t) { return t.logsumexp({1}); }, x, "logsumexp");
  gg([](const Tensor& t) { return t.cumsum(1); }, x, "cumsum");
  gg([](const Tensor& t) { return cumprod(t, 0); }, y, "cumprod");
  gg([](const Tensor& t) { return _softmax(t, 0, false); }, x, "_softmax");
}

}  // namespace
}  // namespace loom
