// The derivative formulas of the pointwise and creation families
// (ops/core/autograd/pointwise.cpp, creation.cpp), checked by gradcheck in float64: every op
// on contiguous and on transposed (non-contiguous) inputs, binary and ternary ops with
// broadcasting, in-place forms against their functional ones, and the ops whose results do
// not require grad. Inputs are kept away from the points where an op has a kink or a jump.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "loom/autograd/autograd.h"
#include "loom/loom.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using autograd::variable_list;
using testing::make_tensor;
using testing::random_values;
using testing::to_doubles;
using Values = std::vector<double>;
using Fn = std::function<Tensor(const variable_list&)>;

// How one input of a case is made.
struct Arg {
  std::vector<int64_t> sizes;
  double lo = -2, hi = 2;
  Values avoid = {};          // kinks and jumps: values stay kMargin away from them
  bool requires_grad = true;  // false: a constant input (e.g. where's condition)
  double margin = 0.05;       // under half the spacing of avoided points
};

// Points spaced by step in [lo, hi] (the jumps of floor, round, remainder ...).
Values grid(double lo, double hi, double step) {
  Values v;
  for (double x = lo; x <= hi + 1e-12; x += step) v.push_back(x);
  return v;
}

// One op (or an in-place form) and how its inputs are made.
struct Case {
  std::string name;
  std::vector<Arg> args;
  Fn fn;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Values for arg, moved margin away from its avoided points.
Values values_for(const Arg& a, uint64_t seed) {
  int64_t n = 1;
  for (int64_t s : a.sizes) n *= s;
  Values v = random_values(static_cast<size_t>(n), seed, a.lo, a.hi);
  for (double& x : v) {
    for (double p : a.avoid) {
      if (std::fabs(x - p) < a.margin) x = x >= p ? p + a.margin : p - a.margin;
    }
  }
  return v;
}

// The input for arg; transposed: a 2-d input is the transpose of a contiguous tensor.
Tensor make_input(const Arg& a, uint64_t seed, bool transposed) {
  Tensor t;
  if (transposed && a.sizes.size() == 2) {
    const std::vector<int64_t> flipped = {a.sizes[1], a.sizes[0]};
    t = make_tensor(values_for(a, seed), flipped, DType::Float64).transpose(0, 1);
  } else {
    t = make_tensor(values_for(a, seed), a.sizes, DType::Float64);
  }
  t.set_requires_grad(a.requires_grad);
  return t;
}

variable_list inputs_for(const Case& c, bool transposed) {
  variable_list in;
  for (size_t i = 0; i < c.args.size(); ++i) {
    in.push_back(make_input(c.args[i], std::hash<std::string>{}(c.name) + 7919 * i, transposed));
  }
  return in;
}

void check(const Case& c, bool transposed, bool second_order = false) {
  SCOPED_TRACE(c.name + (transposed ? " (transposed inputs)" : ""));
  const variable_list in = inputs_for(c, transposed);
  auto fn = [&](const variable_list& x) { return variable_list{c.fn(x)}; };
  try {
    EXPECT_TRUE(second_order ? autograd::gradgradcheck(fn, in) : autograd::gradcheck(fn, in));
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
}

// --- the cases ----------------------------------------------------------------------------------

Arg mat(double lo = -2, double hi = 2, Values avoid = {}) { return Arg{{3, 4}, lo, hi, avoid}; }
Arg row(double lo = -2, double hi = 2, Values avoid = {}) { return Arg{{4}, lo, hi, avoid}; }
Arg col(double lo = -2, double hi = 2, Values avoid = {}) { return Arg{{3, 1}, lo, hi, avoid}; }
Arg cond_mat() { return Arg{{3, 4}, -1, 1, {0}, false}; }

// Functional and in-place forms of a unary op, on [3, 4] inputs in [lo, hi].
void unary(std::vector<Case>& out, const std::string& name, std::function<Tensor(Tensor)> f,
           std::function<Tensor(Tensor)> f_ = nullptr, double lo = -2, double hi = 2,
           Values avoid = {}) {
  out.push_back({name, {mat(lo, hi, avoid)}, [f](const variable_list& x) { return f(x[0]); }});
  if (f_) {
    out.push_back({name + "_", {mat(lo, hi, avoid)}, [f_](const variable_list& x) {
                     return f_(clone(x[0]));
                   }});
  }
}

std::vector<Case> unary_cases() {
  std::vector<Case> v;
  const Values rounding = grid(-3, 3, 0.5);
  unary(
      v, "neg", [](Tensor x) { return neg(x); }, [](Tensor x) { return neg_(x); });
  unary(
      v, "abs", [](Tensor x) { return abs(x); }, [](Tensor x) { return abs_(x); }, -2, 2, {0});
  unary(
      v, "sign", [](Tensor x) { return sign(x); }, [](Tensor x) { return sign_(x); }, -2, 2, {0});
  unary(
      v, "exp", [](Tensor x) { return exp(x); }, [](Tensor x) { return exp_(x); });
  unary(
      v, "exp2", [](Tensor x) { return exp2(x); }, [](Tensor x) { return exp2_(x); });
  unary(
      v, "expm1", [](Tensor x) { return expm1(x); }, [](Tensor x) { return expm1_(x); });
  unary(
      v, "log", [](Tensor x) { return log(x); }, [](Tensor x) { return log_(x); }, 0.2, 3);
  unary(
      v, "log2", [](Tensor x) { return log2(x); }, [](Tensor x) { return log2_(x); }, 0.2, 3);
  unary(
      v, "log1p", [](Tensor x) { return log1p(x); }, [](Tensor x) { return log1p_(x); }, -0.7, 3);
  unary(
      v, "sqrt", [](Tensor x) { return sqrt(x); }, [](Tensor x) { return sqrt_(x); }, 0.2, 3);
  unary(
      v, "rsqrt", [](Tensor x) { return rsqrt(x); }, [](Tensor x) { return rsqrt_(x); }, 0.2, 3);
  unary(
      v, "reciprocal", [](Tensor x) { return reciprocal(x); },
      [](Tensor x) { return reciprocal_(x); }, -2, 2, grid(-0.2, 0.2, 0.1));
  unary(
      v, "sin", [](Tensor x) { return sin(x); }, [](Tensor x) { return sin_(x); });
  unary(
      v, "cos", [](Tensor x) { return cos(x); }, [](Tensor x) { return cos_(x); });
  unary(
      v, "tan", [](Tensor x) { return tan(x); }, [](Tensor x) { return tan_(x); }, -1.2, 1.2);
  unary(
      v, "tanh", [](Tensor x) { return tanh(x); }, [](Tensor x) { return tanh_(x); });
  unary(
      v, "sigmoid", [](Tensor x) { return sigmoid(x); }, [](Tensor x) { return sigmoid_(x); });
  unary(
      v, "erf", [](Tensor x) { return erf(x); }, [](Tensor x) { return erf_(x); });
  unary(
      v, "floor", [](Tensor x) { return floor(x); }, [](Tensor x) { return floor_(x); }, -3, 3,
      rounding);
  unary(
      v, "ceil", [](Tensor x) { return ceil(x); }, [](Tensor x) { return ceil_(x); }, -3, 3,
      rounding);
  unary(
      v, "round", [](Tensor x) { return round(x); }, [](Tensor x) { return round_(x); }, -3, 3,
      rounding);
  v.push_back({"round_decimals",
               {Arg{{3, 4}, -3, 3, grid(-3.05, 3.05, 0.1), true, 0.02}},
               [](const variable_list& x) { return round(x[0], 1); }});
  unary(
      v, "trunc", [](Tensor x) { return trunc(x); }, [](Tensor x) { return trunc_(x); }, -3, 3,
      rounding);
  const Values bounds = {-0.5, 0.5};
  unary(
      v, "clamp", [](Tensor x) { return clamp(x, -0.5, 0.5); },
      [](Tensor x) { return clamp_(x, -0.5, 0.5); }, -2, 2, bounds);
  unary(
      v, "clamp_min", [](Tensor x) { return clamp(x, -0.5); }, nullptr, -2, 2, bounds);
  unary(
      v, "clamp_max", [](Tensor x) { return clamp(x, std::nullopt, 0.5); }, nullptr, -2, 2, bounds);
  unary(
      v, "nan_to_num", [](Tensor x) { return nan_to_num(x, 0.0, 1.0, -1.0); },
      [](Tensor x) { return nan_to_num_(x, 0.0, 1.0, -1.0); });
  // activations
  unary(
      v, "relu", [](Tensor x) { return relu(x); }, [](Tensor x) { return relu_(x); }, -2, 2, {0});
  unary(
      v, "relu6", [](Tensor x) { return relu6(x); }, [](Tensor x) { return relu6_(x); }, -2, 8,
      {0, 6});
  unary(
      v, "selu", [](Tensor x) { return selu(x); }, [](Tensor x) { return selu_(x); }, -2, 2, {0});
  unary(
      v, "silu", [](Tensor x) { return silu(x); }, [](Tensor x) { return silu_(x); });
  unary(
      v, "mish", [](Tensor x) { return mish(x); }, [](Tensor x) { return mish_(x); });
  unary(
      v, "hardsigmoid", [](Tensor x) { return hardsigmoid(x); },
      [](Tensor x) { return hardsigmoid_(x); }, -5, 5, {-3, 3});
  unary(
      v, "hardswish", [](Tensor x) { return hardswish(x); }, [](Tensor x) { return hardswish_(x); },
      -5, 5, {-3, 3});
  unary(
      v, "leaky_relu", [](Tensor x) { return leaky_relu(x, 0.1); },
      [](Tensor x) { return leaky_relu_(x, 0.1); }, -2, 2, {0});
  unary(v, "leaky_relu_negative_slope", [](Tensor x) { return leaky_relu(x, -0.3); }, nullptr, -2,
        2, {0});
  unary(
      v, "elu", [](Tensor x) { return elu(x, 1.3, 1.1, 0.9); },
      [](Tensor x) { return elu_(x, 1.3, 1.1, 0.9); }, -2, 2, {0});
  unary(v, "elu_negative_alpha", [](Tensor x) { return elu(x, -0.5); }, nullptr, -2, 2, {0});
  unary(
      v, "gelu", [](Tensor x) { return gelu(x); }, [](Tensor x) { return gelu_(x); });
  unary(
      v, "gelu_tanh", [](Tensor x) { return gelu(x, "tanh"); },
      [](Tensor x) { return gelu_(x, "tanh"); });
  unary(v, "softplus", [](Tensor x) { return softplus(x, 2, 3); }, nullptr, -2, 2, {1.5});
  unary(
      v, "hardtanh", [](Tensor x) { return hardtanh(x, -0.7, 0.8); },
      [](Tensor x) { return hardtanh_(x, -0.7, 0.8); }, -2, 2, {-0.7, 0.8});
  // copies
  unary(v, "clone", [](Tensor x) { return clone(x); });
  unary(v, "contiguous", [](Tensor x) { return contiguous(x) * 2; });
  unary(v, "to_same_dtype_copy", [](Tensor x) { return to(x, DType::Float64, false, true) * 2; });
  return v;
}

std::vector<Case> binary_cases() {
  std::vector<Case> v;
  // Each op on [3,4] x [4] and [3,1] x [3,4] (broadcasting both ways), functional and in place.
  using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
  auto binary = [&](const std::string& name, BinaryFn f, BinaryFn f_, Arg a, Arg b) {
    Arg a_col = a, b_mat = b;
    a_col.sizes = {3, 1};
    b_mat.sizes = {3, 4};
    v.push_back({name, {a, b}, [f](const variable_list& x) { return f(x[0], x[1]); }});
    v.push_back(
        {name + "_col", {a_col, b_mat}, [f](const variable_list& x) { return f(x[0], x[1]); }});
    if (f_) {
      // In place: self keeps the broadcast shape, so self is [3,4] and other broadcasts.
      v.push_back(
          {name + "_", {a, b}, [f_](const variable_list& x) { return f_(clone(x[0]), x[1]); }});
    }
  };
  binary(
      "add", [](auto& a, auto& b) { return add(a, b, 2); },
      [](auto& a, auto& b) { return add_(a, b, 2); }, mat(), row());
  binary(
      "sub", [](auto& a, auto& b) { return sub(a, b, 0.5); },
      [](auto& a, auto& b) { return sub_(a, b, 0.5); }, mat(), row());
  binary(
      "mul", [](auto& a, auto& b) { return mul(a, b); },
      [](auto& a, auto& b) { return mul_(a, b); }, mat(), row());
  binary(
      "div", [](auto& a, auto& b) { return div(a, b); },
      [](auto& a, auto& b) { return div_(a, b); }, mat(), row(0.5, 2));
  binary(
      "div_trunc", [](auto& a, auto& b) { return div(a, b, "trunc"); },
      [](auto& a, auto& b) { return div_(a, b, "trunc"); }, mat(), row(0.5, 2));
  binary(
      "div_floor", [](auto& a, auto& b) { return div(a, b, "floor"); },
      [](auto& a, auto& b) { return div_(a, b, "floor"); }, mat(), row(0.5, 2));
  binary(
      "div_mode_none", [](auto& a, auto& b) { return div(a, b, std::nullopt); },
      [](auto& a, auto& b) { return div_(a, b, std::nullopt); }, mat(), row(0.5, 2));
  // remainder / fmod jump where self / other is an integer: self in (0.3, 0.7) * other's range.
  binary(
      "remainder", [](auto& a, auto& b) { return remainder(a, b); },
      [](auto& a, auto& b) { return remainder_(a, b); }, mat(1.1, 1.8), row(1.0, 1.05));
  binary(
      "fmod", [](auto& a, auto& b) { return fmod(a, b); },
      [](auto& a, auto& b) { return fmod_(a, b); }, mat(-1.8, -1.1), row(1.0, 1.05));
  binary(
      "pow", [](auto& a, auto& b) { return pow(a, b); },
      [](auto& a, auto& b) { return pow_(a, b); }, mat(0.3, 2), row());
  binary(
      "maximum", [](auto& a, auto& b) { return maximum(a, b); }, nullptr, mat(), row());
  binary(
      "minimum", [](auto& a, auto& b) { return minimum(a, b); }, nullptr, mat(), row());
  binary(
      "atan2", [](auto& a, auto& b) { return atan2(a, b); },
      [](auto& a, auto& b) { return atan2_(a, b); }, mat(), row(0.3, 2));
  binary(
      "lerp_scalar", [](auto& a, auto& b) { return lerp(a, b, 0.3); },
      [](auto& a, auto& b) { return lerp_(a, b, 0.3); }, mat(), row());
  binary(
      "clamp_tensor_min", [](auto& a, auto& b) { return clamp(a, b, std::nullopt); },
      [](auto& a, auto& b) { return clamp_(a, b, std::nullopt); }, mat(-2, 2, {-0.5}),
      row(-0.55, -0.45));
  binary(
      "clamp_tensor_max", [](auto& a, auto& b) { return clamp(a, std::nullopt, b); },
      [](auto& a, auto& b) { return clamp_(a, std::nullopt, b); }, mat(-2, 2, {0.5}),
      row(0.45, 0.55));

  // Scalar-other and Scalar-self forms.
  auto scalar_case = [&](const std::string& name, std::function<Tensor(Tensor)> f,
                         std::function<Tensor(Tensor)> f_, Arg a) {
    v.push_back({name, {a}, [f](const variable_list& x) { return f(x[0]); }});
    if (f_)
      v.push_back({name + "_", {a}, [f_](const variable_list& x) { return f_(clone(x[0])); }});
  };
  scalar_case(
      "add_scalar", [](Tensor x) { return add(x, 1.5, 2); },
      [](Tensor x) { return add_(x, 1.5, 2); }, mat());
  scalar_case(
      "sub_scalar", [](Tensor x) { return sub(x, 1.5, 2); },
      [](Tensor x) { return sub_(x, 1.5, 2); }, mat());
  scalar_case(
      "mul_scalar", [](Tensor x) { return mul(x, 1.5); }, [](Tensor x) { return mul_(x, 1.5); },
      mat());
  scalar_case(
      "div_scalar", [](Tensor x) { return div(x, 1.5); }, [](Tensor x) { return div_(x, 1.5); },
      mat());
  scalar_case(
      "div_scalar_floor", [](Tensor x) { return div(x, 0.5, "floor"); },
      [](Tensor x) { return div_(x, 0.5, "floor"); }, mat(-2, 2, grid(-2, 2, 0.5)));
  scalar_case(
      "div_scalar_mode_none", [](Tensor x) { return div(x, 1.5, std::nullopt); },
      [](Tensor x) { return div_(x, 1.5, std::nullopt); }, mat());
  scalar_case(
      "remainder_scalar", [](Tensor x) { return remainder(x, 0.7); },
      [](Tensor x) { return remainder_(x, 0.7); }, mat(-2, 2, grid(-2.1, 2.1, 0.7)));
  scalar_case(
      "fmod_scalar", [](Tensor x) { return fmod(x, 0.7); }, [](Tensor x) { return fmod_(x, 0.7); },
      mat(-2, 2, grid(-2.1, 2.1, 0.7)));
  scalar_case(
      "remainder_scalar_tensor", [](Tensor x) { return remainder(1.3, x); }, nullptr,
      mat(0.3, 2, {1.3 / 4, 1.3 / 3, 1.3 / 2, 1.3}));
  scalar_case(
      "pow_tensor_scalar", [](Tensor x) { return pow(x, 2.5); },
      [](Tensor x) { return pow_(x, 2.5); }, mat(0.2, 2));
  scalar_case(
      "pow_tensor_scalar_int", [](Tensor x) { return pow(x, 3); },
      [](Tensor x) { return pow_(x, 3); }, mat());
  scalar_case(
      "pow_tensor_scalar_zero", [](Tensor x) { return pow(x, 0); },
      [](Tensor x) { return pow_(x, 0); }, mat());
  scalar_case(
      "pow_scalar", [](Tensor x) { return pow(2.5, x); }, nullptr, mat());
  scalar_case(
      "pow_scalar_zero_base", [](Tensor x) { return pow(0.0, x); }, nullptr, mat(0.5, 2));

  // Ternary ops, with [3,4], [4] and [3,1] inputs.
  auto ternary = [&](const std::string& name, std::function<Tensor(const variable_list&)> f,
                     std::function<Tensor(const variable_list&)> f_, std::vector<Arg> args) {
    v.push_back({name, args, f});
    if (f_) {
      v.push_back({name + "_", args, [f_](const variable_list& x) {
                     variable_list y = x;
                     y[0] = clone(x[0]);
                     return f_(y);
                   }});
    }
  };
  ternary("where", [](auto& x) { return where(gt(x[0], 0), x[1], x[2]); }, nullptr,
          {cond_mat(), row(), col()});
  ternary(
      "lerp_tensor", [](auto& x) { return lerp(x[0], x[1], x[2]); },
      [](auto& x) { return lerp_(x[0], x[1], x[2]); }, {mat(), row(), col(0, 1)});
  ternary(
      "addcmul", [](auto& x) { return addcmul(x[0], x[1], x[2], 0.5); },
      [](auto& x) { return addcmul_(x[0], x[1], x[2], 0.5); }, {mat(), row(), col()});
  ternary(
      "addcdiv", [](auto& x) { return addcdiv(x[0], x[1], x[2], 0.5); },
      [](auto& x) { return addcdiv_(x[0], x[1], x[2], 0.5); }, {mat(), row(), col(0.5, 2)});
  ternary(
      "clamp_tensor", [](auto& x) { return clamp(x[0], x[1], x[2]); },
      [](auto& x) { return clamp_(x[0], x[1], x[2]); },
      {mat(-2, 2, {-0.5, 0.5}), row(-0.55, -0.45), col(0.45, 0.55)});
  // min > max everywhere: the result is max, which gets the whole gradient.
  ternary("clamp_tensor_min_above_max", [](auto& x) { return clamp(x[0], x[1], x[2]); }, nullptr,
          {mat(), row(0.8, 1.2), col(-1.2, -0.8)});
  return v;
}

// Copies and fills: the overwritten value gets no gradient, the source all of it.
std::vector<Case> copy_cases() {
  std::vector<Case> v;
  v.push_back({"copy_", {mat(), row()}, [](const variable_list& x) {
                 Tensor t = x[0] * 2;
                 copy_(t, x[1]);
                 return t * x[0];
               }});
  v.push_back({"copy_into_view", {mat(), row()}, [](const variable_list& x) {
                 Tensor t = x[0] * 2;
                 copy_(t.select(0, 1), x[1]);
                 return t * x[0];
               }});
  v.push_back({"fill_scalar", {mat()}, [](const variable_list& x) {
                 Tensor t = x[0] * 2;
                 fill_(t, 3);
                 return t * x[0];
               }});
  v.push_back({"fill_tensor", {mat(), Arg{{}, -2, 2}}, [](const variable_list& x) {
                 Tensor t = x[0] * 2;
                 fill_(t, x[1]);
                 return t * x[0];
               }});
  v.push_back({"zero_", {mat()}, [](const variable_list& x) {
                 Tensor t = x[0] * 2;
                 zero_(t);
                 return t + x[0];
               }});
  return v;
}

std::vector<Case> all_cases() {
  std::vector<Case> v = unary_cases();
  for (auto* more : {binary_cases, copy_cases}) {
    for (Case& c : more()) v.push_back(std::move(c));
  }
  return v;
}

class PointwiseGradcheck : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { init(); }
};

TEST_P(PointwiseGradcheck, Contiguous) { check(GetParam(), false); }
TEST_P(PointwiseGradcheck, Transposed) { check(GetParam(), true); }
// The formulas are made of differentiable ops, so gradients of gradients work too (in-place
// forms included: the derivative kernel saves self's old value through a recorded clone).
// Not yet for: a copy_ into a view (CopySlices' backward writes in place into a tensor its
// own graph saved); pow with base 0 (0 * log(0) inside the branch where() does not take makes
// NaN, as in PyTorch).
TEST_P(PointwiseGradcheck, SecondOrder) {
  static const std::set<std::string> kNotYet = {"copy_into_view", "pow_scalar_zero_base"};
  if (kNotYet.contains(GetParam().name)) GTEST_SKIP() << "second order not supported yet";
  check(GetParam(), false, true);
}

INSTANTIATE_TEST_SUITE_P(Ops, PointwiseGradcheck, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// --- semantics gradcheck cannot see -------------------------------------------------------------

class PointwiseAutograd : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
  static Tensor leaf(Values v, std::vector<int64_t> sizes) {
    Tensor t = make_tensor(v, sizes, DType::Float64);
    t.set_requires_grad(true);
    return t;
  }
  // d(sum(w * f(x)))/dx for fixed weights w.
  static Values grad_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
    Tensor y = f(x);
    const Tensor w =
        make_tensor(random_values(static_cast<size_t>(y.numel()), 5), y.sizes(), DType::Float64);
    return to_doubles(autograd::grad({y}, {x}, {w})[0]);
  }
};

TEST_F(PointwiseAutograd, InPlaceFormsGetTheFunctionalGradient) {
  const Tensor x = leaf(random_values(12, 1, 0.2, 2), {3, 4});
  const Tensor y = leaf(random_values(4, 2, 0.5, 2), {4});
  auto expect_same = [&](const char* name, auto f, auto f_) {
    SCOPED_TRACE(name);
    const Values a = grad_of(f, x), b = grad_of([&](const Tensor&t) { return f_(clone(t)); }, x);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << "element " << i;
  };
  expect_same(
      "mul_", [&](const Tensor& t) { return mul(t, y); },
      [&](const Tensor& t) { return mul_(t, y); });
  expect_same(
      "div_", [&](const Tensor& t) { return div(t, y); },
      [&](const Tensor& t) { return div_(t, y); });
  expect_same(
      "pow_", [&](const Tensor& t) { return pow(t, y); },
      [&](const Tensor& t) { return pow_(t, y); });
  expect_same(
      "sigmoid_", [](const Tensor& t) { return sigmoid(t); },
      [](const Tensor& t) { return sigmoid_(t); });
  expect_same(
      "sqrt_", [](const Tensor& t) { return sqrt(t); }, [](const Tensor& t) { return sqrt_(t); });
  expect_same(
      "elu_", [](const Tensor& t) { return elu(t - 1, 0.7); },
      [](const Tensor& t) { return elu_(sub_(t, 1), 0.7); });
  // The other input of an in-place op gets its gradient too.
  Tensor z = clone(x);
  mul_(z, y);
  const variable_list g = autograd::grad({sum(z)}, {x, y});
  EXPECT_EQ(to_doubles(g[0]), to_doubles(y.expand({3, 4})));
  Values col_sums(4, 0.0);
  const Values xv = to_doubles(x);
  for (size_t i = 0; i < xv.size(); ++i) col_sums[i % 4] += xv[i];
  const Values gy = to_doubles(g[1]);
  for (size_t j = 0; j < 4; ++j) EXPECT_NEAR(gy[j], col_sums[j], 1e-12);
}

TEST_F(PointwiseAutograd, InPlaceWithNegativeSlopeRefusesBackward) {
  const Tensor x = leaf({-1, 2}, {2});
  Tensor y = leaky_relu_(clone(x), -0.5);
  EXPECT_TRUE(testing::contains(testing::message_of([&] { autograd::grad({sum(y)}, {x}); }),
                                "negative slope"));
}

TEST_F(PointwiseAutograd, TiesSplitTheGradient) {
  const Tensor x = leaf({1, 2, 3}, {3});
  const Tensor y = leaf({1, 5, 0}, {3});
  for (auto f : {&maximum, &minimum}) {
    const variable_list g = autograd::grad({sum(f(x, y))}, {x, y});
    EXPECT_EQ(to_doubles(g[0])[0], 0.5);
    EXPECT_EQ(to_doubles(g[1])[0], 0.5);
  }
  const variable_list g = autograd::grad({sum(maximum(x, y))}, {x, y});
  EXPECT_EQ(to_doubles(g[0]), (Values{0.5, 0, 1}));
  EXPECT_EQ(to_doubles(g[1]), (Values{0.5, 1, 0}));
}

TEST_F(PointwiseAutograd, ClampPassesTheGradientAtItsBounds) {
  const Tensor x = leaf({-2, -1, 0, 1, 2}, {5});
  EXPECT_EQ(to_doubles(autograd::grad({sum(clamp(x, -1, 1))}, {x})[0]), (Values{0, 1, 1, 1, 0}));
}

TEST_F(PointwiseAutograd, NanToNumHasNoGradientAtNonFiniteValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = leaf({1, std::nan(""), inf, -inf, -2}, {5});
  EXPECT_EQ(to_doubles(autograd::grad({sum(nan_to_num(x) * 3)}, {x})[0]), (Values{3, 0, 0, 0, 3}));
}

TEST_F(PointwiseAutograd, RoundingOpsHaveZeroGradient) {
  const Tensor x = leaf({-1.3, 0.2, 2.7}, {3});
  for (auto f :
       {+[](const Tensor& t) { return floor(t); }, +[](const Tensor& t) { return ceil(t); },
        +[](const Tensor& t) { return round(t); }, +[](const Tensor& t) { return trunc(t); },
        +[](const Tensor& t) { return sign(t); }}) {
    const Tensor y = f(x);
    EXPECT_TRUE(y.requires_grad());
    EXPECT_EQ(to_doubles(autograd::grad({sum(y)}, {x})[0]), (Values{0, 0, 0}));
  }
}

TEST_F(PointwiseAutograd, InPlaceComparisonsHaveZeroGradient) {
  const Tensor x = leaf({-1.5, 0.5, 2}, {3});
  const Tensor y = leaf({0, 1, 1}, {3});
  Tensor a = clone(x);
  gt_(a, 0);
  Tensor b = clone(x);
  le_(b, y);
  EXPECT_EQ(to_doubles(a), (Values{0, 1, 1}));
  const variable_list g = autograd::grad({sum(a + b * x)}, {x, y});
  EXPECT_EQ(to_doubles(g[0]), (Values{1, 1, 0}));  // through b * x only
  EXPECT_EQ(to_doubles(g[1]), (Values{0, 0, 0}));
}

TEST_F(PointwiseAutograd, ToAndContiguousKeepTheirInputAndRecordCopies) {
  const Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(to(x, DType::Float64).is_same(x));
  EXPECT_TRUE(contiguous(x).is_same(x));
  EXPECT_TRUE(x.is_leaf());
  // A cast records a copy; the gradient comes back in x's dtype.
  const Tensor f = to(x, DType::Float32);
  EXPECT_EQ(f.dtype(), DType::Float32);
  EXPECT_TRUE(f.requires_grad());
  const Tensor g = autograd::grad({sum(f * 2)}, {x})[0];
  EXPECT_EQ(g.dtype(), DType::Float64);
  EXPECT_EQ(to_doubles(g), (Values{2, 2, 2, 2, 2, 2}));
  // The copy is an ordinary tensor: it may be changed in place.
  Tensor h = to(x, DType::Float32);
  mul_(h, 3);
  EXPECT_EQ(to_doubles(autograd::grad({sum(h)}, {x})[0]), (Values{3, 3, 3, 3, 3, 3}));
  // An integer cast does not require grad.
  EXPECT_FALSE(to(x, DType::Int64).requires_grad());
  // contiguous of a transpose records a copy.
  const Tensor xt = x.t();
  const Tensor c = contiguous(xt);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_TRUE(c.requires_grad());
  Tensor cc = contiguous(xt);
  mul_(cc, 2);
  EXPECT_EQ(to_doubles(autograd::grad({sum(cc)}, {x})[0]), (Values{2, 2, 2, 2, 2, 2}));
}

TEST_F(PointwiseAutograd, CopyFromAnotherDtypeSendsTheGradientBackInItsDtype) {
  Tensor src = make_tensor({1, 2, 3}, {3}, DType::Float32);
  src.set_requires_grad(true);
  Tensor dst = zeros({2, 3}, DType::Float64);
  copy_(dst, src);
  EXPECT_TRUE(dst.requires_grad());
  const Tensor g = autograd::grad({sum(dst * 2)}, {src})[0];
  EXPECT_EQ(g.dtype(), DType::Float32);
  EXPECT_EQ(to_doubles(g), (Values{4, 4, 4}));
}

TEST_F(PointwiseAutograd, LikeFactoriesDoNotRequireGrad) {
  const Tensor x = leaf({0.1, 0.5, 0.9}, {3});
  EXPECT_FALSE(zeros_like(x).requires_grad());
  EXPECT_FALSE(ones_like(x).requires_grad());
  EXPECT_FALSE(empty_like(x).requires_grad());
  EXPECT_FALSE(full_like(x, 2).requires_grad());
  EXPECT_FALSE(rand_like(x).requires_grad());
  EXPECT_FALSE(randn_like(x).requires_grad());
  EXPECT_FALSE(randint_like(x, 0, 5).requires_grad());
  EXPECT_TRUE(x.is_leaf());
}

TEST_F(PointwiseAutograd, BernoulliHasZeroGradient) {
  const Tensor p = leaf({0.1, 0.5, 0.9}, {3});
  for (const Tensor& y : {bernoulli(p), bernoulli(p, 0.5)}) {
    EXPECT_TRUE(y.requires_grad());  // as in PyTorch: BernoulliBackward0 gives zeros
    EXPECT_EQ(to_doubles(autograd::grad({sum(y)}, {p})[0]), (Values{0, 0, 0}));
  }
}

}  // namespace
}  // namespace loom
