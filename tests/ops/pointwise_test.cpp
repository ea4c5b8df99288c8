// Pointwise ops (ops/core/cpu/{unary,activation,binary,compare,pointwise_ternary,copy,fill}.cpp
// on the engine in cpu/tensor_iterator.h) against float64 oracles: every op on contiguous,
// strided, broadcast, zero-size and 0-d inputs per dtype; type promotion; out= and in-place
// variants; error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::expect_close;
using testing::make_tensor;
using testing::random_values;
using testing::to_doubles;

class Pointwise : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
};

// Tolerances per dtype: the 16-bit floats round their result once more than the oracle.
struct Tol {
  double rtol, atol;
};
Tol tol_for(DType d) {
  switch (d) {
    case DType::Float16:
      return {4e-3, 2e-3};
    case DType::BFloat16:
      return {2e-2, 1e-2};
    case DType::Float32:
      return {2e-5, 1e-5};
    default:
      return {1e-10, 1e-12};
  }
}

using testing::contains;
using testing::message_of;

// Integers in [lo, hi] as doubles.
std::vector<double> random_ints(size_t n, uint64_t seed, int lo, int hi) {
  std::vector<double> v = random_values(n, seed, lo, hi + 1);
  for (double& x : v) x = std::floor(x);
  return v;
}

// ---- unary ---------------------------------------------------------------------------------

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  std::function<double(double)> oracle;
  double lo, hi;
  bool int_to_float;  // integer inputs give float32 (exp); otherwise ints keep their dtype
  bool ints_ok;       // integer inputs are accepted at all
};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double softplus_ref(double x, double beta = 1, double threshold = 20) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}
double relu6_ref(double x) { return std::min(std::max(x, 0.0), 6.0); }

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& t) { return neg(t); }, [](double x) { return -x; }, -3, 3, false,
       true},
      {"abs", [](const Tensor& t) { return abs(t); }, [](double x) { return std::fabs(x); }, -3, 3,
       false, true},
      {"sign", [](const Tensor& t) { return sign(t); },
       [](double x) { return double((0 < x) - (x < 0)); }, -3, 3, false, true},
      {"exp", [](const Tensor& t) { return exp(t); }, [](double x) { return std::exp(x); }, -3, 3,
       true, true},
      {"exp2", [](const Tensor& t) { return exp2(t); }, [](double x) { return std::exp2(x); }, -3,
       3, true, true},
      {"log", [](const Tensor& t) { return log(t); }, [](double x) { return std::log(x); }, 0.1, 5,
       true, true},
      {"log2", [](const Tensor& t) { return log2(t); }, [](double x) { return std::log2(x); }, 0.1,
       5, true, true},
      {"log1p", [](const Tensor& t) { return log1p(t); }, [](double x) { return std::log1p(x); }, 0,
       5, true, true},
      {"expm1", [](const Tensor& t) { return expm1(t); }, [](double x) { return std::expm1(x); },
       -2, 2, true, true},
      {"sqrt", [](const Tensor& t) { return sqrt(t); }, [](double x) { return std::sqrt(x); }, 0, 5,
       true, true},
      {"rsqrt", [](const Tensor& t) { return rsqrt(t); }, [](double x) { return 1 / std::sqrt(x); },
       0.5, 5, true, true},
      {"reciprocal", [](const Tensor& t) { return reciprocal(t); }, [](double x) { return 1 / x; },
       0.5, 4, true, true},
      {"sin", [](const Tensor& t) { return sin(t); }, [](double x) { return std::sin(x); }, -3, 3,
       true, true},
      {"cos", [](const Tensor& t) { return cos(t); }, [](double x) { return std::cos(x); }, -3, 3,
       true, true},
      {"tan", [](const Tensor& t) { return tan(t); }, [](double x) { return std::tan(x); }, -1, 1,
       true, true},
      {"tanh", [](const Tensor& t) { return tanh(t); }, [](double x) { return std::tanh(x); }, -3,
       3, true, true},
      {"sigmoid", [](const Tensor& t) { return sigmoid(t); }, sigmoid_ref, -4, 4, true, true},
      {"erf", [](const Tensor& t) { return erf(t); }, [](double x) { return std::erf(x); }, -2, 2,
       true, true},
      {"floor", [](const Tensor& t) { return floor(t); }, [](double x) { return std::floor(x); },
       -5, 5, false, true},
      {"ceil", [](const Tensor& t) { return ceil(t); }, [](double x) { return std::ceil(x); }, -5,
       5, false, true},
      {"round", [](const Tensor& t) { return round(t); },
       [](double x) { return std::nearbyint(x); }, -5, 5, false, true},
      {"trunc", [](const Tensor& t) { return trunc(t); }, [](double x) { return std::trunc(x); },
       -5, 5, false, true},
      {"round(decimals=2)", [](const Tensor& t) { return round(t, 2); },
       [](double x) { return std::nearbyint(x * 100) / 100; }, -5, 5, false, false},
      {"clamp", [](const Tensor& t) { return clamp(t, Scalar(-1), Scalar(2)); },
       [](double x) { return std::min(std::max(x, -1.0), 2.0); }, -3, 3, false, true},
      {"clamp(min)", [](const Tensor& t) { return clamp(t, Scalar(0.5)); },
       [](double x) { return std::max(x, 0.5); }, -3, 3, true, true},
      {"relu", [](const Tensor& t) { return relu(t); }, [](double x) { return std::max(x, 0.0); },
       -3, 3, false, true},
      {"relu6", [](const Tensor& t) { return relu6(t); }, relu6_ref, -3, 9, false, true},
      {"leaky_relu", [](const Tensor& t) { return leaky_relu(t, 0.2); },
       [](double x) { return x > 0 ? x : 0.2 * x; }, -3, 3, false, false},
      {"elu", [](const Tensor& t) { return elu(t, 1.5); },
       [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }, -3, 3, false, false},
      {"selu", [](const Tensor& t) { return selu(t); },
       [](double x) {
         const double a = 1.6732632423543772848170429916717, s = 1.0507009873554804934193349852946;
         return x > 0 ? s * x : s * a * std::expm1(x);
       },
       -3, 3, false, false},
      {"gelu", [](const Tensor& t) { return gelu(t); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -3, 3, false, false},
      {"gelu(tanh)", [](const Tensor& t) { return gelu(t, "tanh"); },
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       },
       -3, 3, false, false},
      {"silu", [](const Tensor& t) { return silu(t); }, [](double x) { return x * sigmoid_ref(x); },
       -4, 4, false, false},
      {"mish", [](const Tensor& t) { return mish(t); },
       [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, -4, 4, false, false},
      {"softplus", [](const Tensor& t) { return softplus(t, 2, 3); },
       [](double x) { return softplus_ref(x, 2, 3); }, -3, 3, false, false},
      {"hardtanh", [](const Tensor& t) { return hardtanh(t, -0.5, 1.5); },
       [](double x) { return std::min(std::max(x, -0.5), 1.5); }, -3, 3, false, true},
      {"hardsigmoid", [](const Tensor& t) { return hardsigmoid(t); },
       [](double x) { return relu6_ref(x + 3) / 6; }, -5, 5, false, false},
      {"hardswish", [](const Tensor& t) { return hardswish(t); },
       [](double x) { return x * relu6_ref(x + 3) / 6; }, -5, 5, false, false},
      {"nan_to_num", [](const Tensor& t) { return nan_to_num(t); }, [](double x) { return x; }, -3,
       3, false, true},
  };
}

// Applies the oracle to the input as it is stored (so input rounding is not an error).
std::vector<double> apply_oracle(const std::function<double(double)>& f, const Tensor& in) {
  std::vector<double> v = to_doubles(in);
  for (double& x : v) x = f(x);
  return v;
}

TEST_F(Pointwise, UnaryOpsMatchFloat64OracleOnEveryLayoutAndFloatDtype) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 4}, {}, {0, 3}, {2, 1, 5}};
  for (const UnaryCase& c : unary_cases()) {
    for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (const auto& shape : shapes) {
        for (bool strided : {false, true}) {
          int64_t n = 1;
          for (int64_t s : shape) n *= s;
          SCOPED_TRACE(str_cat(c.name, " ", dtype_name(d), " ", sizes_str(shape),
                               strided ? " strided" : ""));
          Tensor x = make_tensor(random_values(size_t(n), 7, c.lo, c.hi), shape, d, strided);
          Tensor y = c.fn(x);
          EXPECT_EQ(y.dtype(), d);
          const Tol t = tol_for(d);
          expect_close(y, shape, apply_oracle(c.oracle, x), t.rtol, t.atol);
        }
      }
    }
  }
}

TEST_F(Pointwise, UnaryOpsOnIntegersPromoteOrKeepDtypeLikePyTorch) {
  for (const UnaryCase& c : unary_cases()) {
    for (DType d : {DType::Int64, DType::Int32}) {
      SCOPED_TRACE(str_cat(c.name, " ", dtype_name(d)));
      const double lo = std::max(std::ceil(c.lo), c.name == std::string("rsqrt") ? 1.0 : c.lo);
      Tensor x = make_tensor(random_ints(12, 3, int(std::ceil(lo)), int(std::floor(c.hi))), {3, 4},
                             d, true);
      if (!c.ints_ok) {
        EXPECT_THROW(c.fn(x), TypeError);
        continue;
      }
      Tensor y = c.fn(x);
      EXPECT_EQ(y.dtype(), c.int_to_float ? DType::Float32 : d);
      std::vector<double> want = apply_oracle(c.oracle, x);
      if (!c.int_to_float) {
        for (double& w : want) w = std::trunc(w);  // hardtanh(-0.5, 1.5) on ints
      }
      if (c.name == std::string("hardtanh")) continue;  // bounds convert to int: separate check
      expect_close(y, {3, 4}, want, 2e-5, 1e-5);
    }
  }
  // exp of a bool tensor is float32 as well.
  Tensor b = make_tensor({0, 1}, {2}, DType::Bool);
  expect_close(exp(b), {2}, {1, std::exp(1.0)});
  EXPECT_EQ(exp(b).dtype(), DType::Float32);
}

TEST_F(Pointwise, UnaryVariantsInPlaceAndOut) {
  Tensor x = make_tensor({-1, 0.5, 2, -3}, {2, 2}, DType::Float32, true);
  const uint32_t v0 = x.version();
  EXPECT_TRUE(exp_(x).is_same(x));
  EXPECT_EQ(x.version(), v0 + 1);
  expect_close(x, {2, 2}, {std::exp(-1.0), std::exp(0.5), std::exp(2.0), std::exp(-3.0)});

  Tensor out = Tensor::empty({2, 2}, TensorOptions{}.with(DType::Float64));
  Tensor a = make_tensor({-1, 0.5, 2, -3}, {2, 2});
  Tensor got = abs_out(out, a);
  EXPECT_TRUE(got.is_same(out));
  EXPECT_EQ(out.version(), 1u);
  expect_close(out, {2, 2}, {1, 0.5, 2, 3});

  // Every in-place unary op mutates and bumps.
  for (auto f : std::vector<std::function<Tensor(const Tensor&)>>{
           [](const Tensor& t) { return neg_(t); }, [](const Tensor& t) { return sqrt_(t); },
           [](const Tensor& t) { return relu_(t); }, [](const Tensor& t) { return sigmoid_(t); },
           [](const Tensor& t) { return tanh_(t); }, [](const Tensor& t) { return log_(t); },
           [](const Tensor& t) { return clamp_(t, Scalar(0.1), Scalar(0.2)); }}) {
    Tensor t = make_tensor({0.25, 4}, {2});
    const uint32_t v = t.version();
    Tensor res = f(t);
    EXPECT_TRUE(res.is_same(t));
    EXPECT_EQ(t.version(), v + 1);
  }
}

// ---- binary --------------------------------------------------------------------------------

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<double(double, double)> oracle;
  double lo, hi;    // operand range
  double blo, bhi;  // second operand range
  bool ints_ok;
  bool bool_result;
};

double py_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); },
       [](double a, double b) { return a + b; }, -3, 3, -3, 3, true, false},
      {"add(alpha)", [](const Tensor& a, const Tensor& b) { return add(a, b, 2); },
       [](double a, double b) { return a + 2 * b; }, -3, 3, -3, 3, true, false},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); },
       [](double a, double b) { return a - b; }, -3, 3, -3, 3, true, false},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; },
       [](double a, double b) { return a * b; }, -3, 3, -3, 3, true, false},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; },
       [](double a, double b) { return a / b; }, -3, 3, 0.5, 3, false, false},
      {"div(trunc)", [](const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); },
       [](double a, double b) { return std::trunc(a / b); }, -9, 9, 1, 4, true, false},
      {"div(floor)", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); },
       [](double a, double b) { return std::floor(a / b); }, -9, 9, -4, -1, true, false},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, 0.5, 3, -2, 3, false, false},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, py_mod, -9, 9,
       -4, -1, true, false},
      {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); },
       [](double a, double b) { return std::fmod(a, b); }, -9, 9, 1, 4, true, false},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }, -3, 3, -3, 3, true, false},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }, -3, 3, -3, 3, true, false},
      {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); },
       [](double a, double b) { return std::atan2(a, b); }, -3, 3, -3, 3, false, false},
      {"eq", [](const Tensor& a, const Tensor& b) { return a == b; },
       [](double a, double b) { return double(a == b); }, -2, 2, -2, 2, true, true},
      {"ne", [](const Tensor& a, const Tensor& b) { return a != b; },
       [](double a, double b) { return double(a != b); }, -2, 2, -2, 2, true, true},
      {"lt", [](const Tensor& a, const Tensor& b) { return a < b; },
       [](double a, double b) { return double(a < b); }, -2, 2, -2, 2, true, true},
      {"le", [](const Tensor& a, const Tensor& b) { return a <= b; },
       [](double a, double b) { return double(a <= b); }, -2, 2, -2, 2, true, true},
      {"gt", [](const Tensor& a, const Tensor& b) { return a > b; },
       [](double a, double b) { return double(a > b); }, -2, 2, -2, 2, true, true},
      {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; },
       [](double a, double b) { return double(a >= b); }, -2, 2, -2, 2, true, true},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); },
       [](double a, double b) { return double(a != 0 && b != 0); }, -1, 2, -1, 2, true, true},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); },
       [](double a, double b) { return double(a != 0 || b != 0); }, -1, 2, -1, 2, true, true},
      {"logical_xor", [](const Tensor& a, const Tensor& b) { return logical_xor(a, b); },
       [](double a, double b) { return double((a != 0) != (b != 0)); }, -1, 2, -1, 2, true, true},
      {"lerp", [](const Tensor& a, const Tensor& b) { return lerp(a, b, 0.3); },
       [](double a, double b) { return a + 0.3 * (b - a); }, -3, 3, -3, 3, false, false},
      {"addcmul", [](const Tensor& a, const Tensor& b) { return addcmul(a, b, b, 2); },
       [](double a, double b) { return a + 2 * b * b; }, -3, 3, -3, 3, true, false},
      {"addcdiv", [](const Tensor& a, const Tensor& b) { return addcdiv(a, a, b, 2); },
       [](double a, double b) { return a + 2 * a / b; }, -3, 3, 0.5, 3, false, false},
  };
}

// Layouts of (a, b): same shape, strided, the two broadcasts of the issue, 0-d, zero-size.
struct ShapePair {
  std::vector<int64_t> a, b, out;
  bool strided;
};
const std::vector<ShapePair>& shape_pairs() {
  static const std::vector<ShapePair> pairs = {
      {{3, 4}, {3, 4}, {3, 4}, false}, {{3, 4}, {3, 4}, {3, 4}, true},
      {{3, 1}, {1, 4}, {3, 4}, false}, {{4}, {2, 3, 4}, {2, 3, 4}, true},
      {{}, {2, 3}, {2, 3}, false},     {{}, {}, {}, false},
      {{0, 3}, {3}, {0, 3}, false},    {{2, 3, 4}, {3, 1}, {2, 3, 4}, true},
  };
  return pairs;
}

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

// The oracle on the broadcast of a and b (row-major over out).
std::vector<double> broadcast_apply(const std::function<double(double, double)>& f, const Tensor& a,
                                    const Tensor& b, IntArrayRef out) {
  const std::vector<double> va = to_doubles(a), vb = to_doubles(b);
  const int64_t n = numel_of({out.begin(), out.end()});
  std::vector<double> r(static_cast<size_t>(n));
  const int64_t nd = static_cast<int64_t>(out.size());
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  auto offset = [&](const Tensor& t) {
    int64_t off = 0, stride = 1;
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      const int64_t i = t.size(d) == 1 ? 0 : idx[size_t(nd - t.dim() + d)];
      off += i * stride;
      stride *= t.size(d);
    }
    return off;
  };
  for (int64_t k = 0; k < n; ++k) {
    r[size_t(k)] = f(va[size_t(offset(a))], vb[size_t(offset(b))]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < out[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  return r;
}

TEST_F(Pointwise, BinaryOpsMatchFloat64OracleWithBroadcastingPerDtype) {
  for (const BinaryCase& c : binary_cases()) {
    for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                    DType::Int32}) {
      const bool is_int = !is_floating_point(d);
      for (const ShapePair& p : shape_pairs()) {
        SCOPED_TRACE(str_cat(c.name, " ", dtype_name(d), " ", sizes_str(p.a), " with ",
                             sizes_str(p.b), p.strided ? " strided" : ""));
        const size_t na = size_t(numel_of(p.a)), nb = size_t(numel_of(p.b));
        std::vector<double> va =
            is_int ? random_ints(na, 11, int(c.lo), int(c.hi)) : random_values(na, 11, c.lo, c.hi);
        std::vector<double> vb = is_int ? random_ints(nb, 12, int(std::ceil(c.blo)), int(c.bhi))
                                        : random_values(nb, 12, c.blo, c.bhi);
        if (c.name == std::string("eq") || c.name == std::string("ne")) {
          for (size_t i = 0; i < std::min(na, nb); i += 2) vb[i] = va[i];  // some equal pairs
        }
        Tensor a = make_tensor(va, p.a, d, p.strided), b = make_tensor(vb, p.b, d, p.strided);
        if (is_int && !c.ints_ok) {
          // True division, pow with negative exponents, atan2, lerp: integers promote to float32
          // or are refused, as PyTorch.
          if (c.name == std::string("div") || c.name == std::string("atan2")) {
            EXPECT_EQ(c.fn(a, b).dtype(), DType::Float32);
          }
          continue;
        }
        Tensor y = c.fn(a, b);
        EXPECT_EQ(y.dtype(), c.bool_result ? DType::Bool : d);
        const Tol t = tol_for(d);
        expect_close(y, p.out, broadcast_apply(c.oracle, a, b, p.out), t.rtol,
                     c.bool_result ? 0 : t.atol * 4);
      }
    }
  }
}

TEST_F(Pointwise, BoolTensorsAddMulCompareAndLogical) {
  Tensor a = make_tensor({0, 1, 1, 0}, {4}, DType::Bool);
  Tensor b = make_tensor({0, 0, 1, 1}, {4}, DType::Bool);
  EXPECT_EQ((a + b).dtype(), DType::Bool);
  expect_close(a + b, {4}, {0, 1, 1, 1});
  expect_close(a * b, {4}, {0, 0, 1, 0});
  expect_close(a == b, {4}, {1, 0, 1, 0});
  expect_close(logical_xor(a, b), {4}, {0, 1, 0, 1});
  expect_close(a & b, {4}, {0, 0, 1, 0});
  expect_close(a | b, {4}, {0, 1, 1, 1});
  expect_close(a ^ b, {4}, {0, 1, 0, 1});
  expect_close(~a, {4}, {1, 0, 0, 1});
  expect_close(logical_not(a), {4}, {1, 0, 0, 1});
  EXPECT_TRUE(contains(message_of([&] { sub(a, b); }), "with two bool tensors is not supported"));
  EXPECT_TRUE(contains(message_of([&] { neg(a); }), "on a bool tensor is not supported"));
}

TEST_F(Pointwise, BitwiseOnIntegersAndRefusedOnFloats) {
  Tensor a = make_tensor({12, 10, -1}, {3}, DType::Int32);
  Tensor b = make_tensor({10, 6, 5}, {3}, DType::Int32);
  expect_close(a & b, {3}, {8, 2, 5});
  expect_close(a | b, {3}, {14, 14, -1});
  expect_close(a ^ b, {3}, {6, 12, -6});
  expect_close(~a, {3}, {-13, -11, 0});
  expect_close(bitwise_and(a, 6), {3}, {4, 2, 6});
  Tensor f = make_tensor({1, 2}, {2});
  EXPECT_TRUE(
      contains(message_of<TypeError>([&] { bitwise_and(f, f); }), "not implemented for 'Float'"));
  EXPECT_TRUE(
      contains(message_of<TypeError>([&] { bitwise_not(f); }), "not implemented for 'Float'"));
}

TEST_F(Pointwise, ScalarOverloadsAndOperatorsOnEitherSide) {
  Tensor x = make_tensor({1, -2, 3.5}, {3}, DType::Float32, true);
  expect_close(x * 2, {3}, {2, -4, 7});
  expect_close(2 * x, {3}, {2, -4, 7});
  expect_close(x + 1.5, {3}, {2.5, -0.5, 5});
  expect_close(1.5 + x, {3}, {2.5, -0.5, 5});
  expect_close(x - 1, {3}, {0, -3, 2.5});
  expect_close(1 - x, {3}, {0, 3, -2.5});
  expect_close(x / 2, {3}, {0.5, -1, 1.75});
  expect_close(1 / x, {3}, {1, -0.5, 1 / 3.5});
  expect_close(-x, {3}, {-1, 2, -3.5});
  expect_close(add(x, 1, 3), {3}, {4, 1, 6.5});
  expect_close(sub(x, x, 2), {3}, {-1, 2, -3.5});
  expect_close(x == 1, {3}, {1, 0, 0});
  expect_close(1 < x, {3}, {0, 0, 1});
  expect_close(x >= -2, {3}, {1, 1, 1});
  expect_close(x % 2, {3}, {1, 0, 1.5});
  expect_close(pow(x, 2), {3}, {1, 4, 12.25});
  expect_close(pow(2, x), {3}, {2, 0.25, std::pow(2, 3.5)});
  expect_close(remainder(5, make_tensor({3, -3}, {2})), {2}, {2, -1});
  expect_close(fmod(make_tensor({-5, 5}, {2}), 3), {2}, {-2, 2});
  expect_close(div(make_tensor({-7, 7}, {2}), 2, "floor"), {2}, {-4, 3});
  Tensor y = x.is_contiguous() ? x : clone(x);
  y += 1;
  expect_close(y, {3}, {2, -1, 4.5});
  y *= y;
  expect_close(y, {3}, {4, 1, 20.25});
  y -= 4;
  y /= 2;
  expect_close(y, {3}, {0, -1.5, 8.125});
}

// ---- promotion -------------------------------------------------------------------------------

TEST_F(Pointwise, TypePromotionFollowsPyTorchIncludingWrappedNumbers) {
  auto t = [](DType d, std::vector<int64_t> shape = {2}) {
    return make_tensor(std::vector<double>(size_t(numel_of(shape)), 1), shape, d);
  };
  // Tensor-tensor: promote_types.
  EXPECT_EQ((t(DType::Int32) + t(DType::Int64)).dtype(), DType::Int64);
  EXPECT_EQ((t(DType::UInt8) + t(DType::Int8)).dtype(), DType::Int16);
  EXPECT_EQ((t(DType::Int64) + t(DType::Float16)).dtype(), DType::Float16);
  EXPECT_EQ((t(DType::Float16) + t(DType::BFloat16)).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::Float32) * t(DType::Float64)).dtype(), DType::Float64);
  EXPECT_EQ((t(DType::Bool) + t(DType::Int8)).dtype(), DType::Int8);
  // Wrapped numbers only lift the category.
  EXPECT_EQ((t(DType::Int32) + 2).dtype(), DType::Int32);
  EXPECT_EQ((t(DType::Int32) + 2.5).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::UInt8) * 1000).dtype(), DType::UInt8);
  EXPECT_EQ((t(DType::Bool) + 2).dtype(), DType::Int64);
  EXPECT_EQ((t(DType::Bool) * 2.5).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::Float16) * 2.5).dtype(), DType::Float16);
  EXPECT_EQ((t(DType::Float64) + 1).dtype(), DType::Float64);
  // 0-d tensors rank below dimensioned ones, above wrapped numbers.
  EXPECT_EQ((t(DType::Float32) + t(DType::Float64, {})).dtype(), DType::Float32);
  EXPECT_EQ((t(DType::Int32) + t(DType::Float64, {})).dtype(), DType::Float64);
  EXPECT_EQ((t(DType::Int8, {}) + t(DType::Int64, {})).dtype(), DType::Int64);
  EXPECT_EQ((t(DType::UInt8) + t(DType::Int64, {})).dtype(), DType::UInt8);
  // Division and floating unary ops: integers give float32.
  EXPECT_EQ((t(DType::Int64) / t(DType::Int64)).dtype(), DType::Float32);
  EXPECT_EQ(div(t(DType::Int64), t(DType::Int64), "trunc").dtype(), DType::Int64);
  EXPECT_EQ(sqrt(t(DType::Int16)).dtype(), DType::Float32);
  EXPECT_EQ(sigmoid(t(DType::Float16)).dtype(), DType::Float16);
  // Comparisons give bool and compare in the common dtype.
  Tensor i = make_tensor({2, 3}, {2}, DType::Int64);
  expect_close(i == 2.5, {2}, {0, 0});
  expect_close(i < 2.5, {2}, {1, 0});
  expect_close(make_tensor({3, 4}, {2}, DType::Int32) / 2, {2}, {1.5, 2});
  expect_close(make_tensor({3, 4}, {2}, DType::Int32) + 2.5, {2}, {5.5, 6.5});
}

TEST_F(Pointwise, IntegerSemanticsOfDivisionRemainderAndPow) {
  Tensor a = make_tensor({-7, 7, -7, 7}, {4}, DType::Int64);
  Tensor b = make_tensor({2, -2, -2, 2}, {4}, DType::Int64);
  expect_close(div(a, b, "trunc"), {4}, {-3, -3, 3, 3});
  expect_close(div(a, b, "floor"), {4}, {-4, -4, 3, 3});
  expect_close(remainder(a, b), {4}, {1, -1, -1, 1});
  expect_close(fmod(a, b), {4}, {-1, 1, -1, 1});
  expect_close(a / b, {4}, {-3.5, -3.5, 3.5, 3.5});
  expect_close(pow(make_tensor({2, -3, 1, -1}, {4}, DType::Int32),
                   make_tensor({10, 3, -2, -3}, {4}, DType::Int32)),
               {4}, {1024, -27, 1, -1});
  expect_close(pow(make_tensor({3}, {1}, DType::Int64), 4), {1}, {81});
  Tensor zero = make_tensor({1, 0}, {2}, DType::Int64);
  for (auto f : std::vector<std::function<void()>>{
           [&] {
             div(a.is_contiguous() ? make_tensor({1, 2}, {2}, DType::Int64) : a, zero, "trunc");
           },
           [&] {
             remainder(make_tensor({1, 2}, {2}, DType::Int64), zero);
           },
           [&] {
             fmod(make_tensor({1, 2}, {2}, DType::Int64), 0);
           },
           [&] {
             div(make_tensor({1, 2}, {2}, DType::Int32), 0, "floor");
           }}) {
    EXPECT_TRUE(contains(message_of<ValueError>(f), "ZeroDivisionError"));
  }
  EXPECT_TRUE(contains(message_of([&] { pow(a, -1); }),
                       "Integers to negative integer powers are not allowed."));
  // Floats divide by zero like IEEE.
  expect_close(make_tensor({1, -1}, {2}) / 0, {2}, {INFINITY, -INFINITY});
}

// ---- out= and in-place --------------------------------------------------------------------------

TEST_F(Pointwise, OutVariantsWriteIntoOutAndCastToItsDtype) {
  Tensor a = make_tensor({1, 2, 3}, {3, 1}), b = make_tensor({10, 20, 30, 40}, {1, 4});
  Tensor out = Tensor::empty({3, 4}, TensorOptions{}.with(DType::Float64));
  Tensor r = add_out(out, a, b, 2);
  EXPECT_TRUE(r.is_same(out));
  EXPECT_EQ(out.version(), 1u);
  expect_close(out, {3, 4},
               broadcast_apply([](double x, double y) { return x + 2 * y; }, a, b, {3, 4}));
  // A strided out.
  Tensor so = make_tensor(std::vector<double>(12, 0), {3, 4}, DType::Float32, true);
  mul_out(so, a, b);
  expect_close(so, {3, 4}, broadcast_apply([](double x, double y) { return x * y; }, a, b, {3, 4}));
  // Bool results into a float out, comparisons into out.
  Tensor fo = Tensor::empty({3, 4});
  lt_out(fo, a, b);
  expect_close(fo, {3, 4}, std::vector<double>(12, 1));
  // The result dtype must be castable to out: float into long is refused.
  Tensor lo = Tensor::empty({3, 4}, TensorOptions{}.with(DType::Int64));
  EXPECT_TRUE(contains(message_of<TypeError>([&] { add_out(lo, a, b); }),
                       "result type Float can't be cast to the desired output type Long"));
  EXPECT_TRUE(
      contains(message_of<TypeError>([&] { exp_out(lo, make_tensor({1}, {1}, DType::Int64)); }),
               "result type Float can't be cast to the desired output type Long"));
  // A wrong-shaped out is resized (its storage grows), as PyTorch's resize_output does.
  Tensor wrong = Tensor::empty({2});
  add_out(wrong, a, b);
  expect_close(wrong, {3, 4}, to_doubles(add(a, b)));
  // where, clamp, div into out.
  Tensor wo = Tensor::empty({3, 4});
  where_out(wo, a > 1.5, a, b);
  expect_close(wo, {3, 4}, {10, 20, 30, 40, 2, 2, 2, 2, 3, 3, 3, 3});
}

TEST_F(Pointwise, InPlaceVariantsBumpTheVersionAndRefuseBadDtypesAndShapes) {
  Tensor x = make_tensor({1, 2, 3, 4}, {2, 2});
  const uint32_t v = x.version();
  add_(x, make_tensor({10, 20}, {2}));
  EXPECT_EQ(x.version(), v + 1);
  expect_close(x, {2, 2}, {11, 22, 13, 24});
  mul_(x, 0.5);
  expect_close(x, {2, 2}, {5.5, 11, 6.5, 12});
  EXPECT_EQ(x.version(), v + 2);
  // A strided self is written through its strides.
  Tensor s = make_tensor({1, 2, 3, 4}, {2, 2}, DType::Float64, true);
  sub_(s, make_tensor({1}, {1}, DType::Float32));
  expect_close(s, {2, 2}, {0, 1, 2, 3});
  // In-place on an int tensor with a float result is refused, as PyTorch.
  Tensor i = make_tensor({1, 2}, {2}, DType::Int64);
  EXPECT_TRUE(contains(message_of<TypeError>([&] { add_(i, 1.5); }),
                       "result type Float can't be cast to the desired output type Long"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         div_(i, make_tensor({2, 2}, {2}, DType::Int64));
                       }),
                       "result type Float can't be cast to the desired output type Long"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] { sqrt_(i); }),
                       "result type Float can't be cast to the desired output type Long"));
  EXPECT_EQ(i.version(), 0u);
  // A float result into float16 self is fine; an int tensor keeps int with int scalars.
  add_(i, 3);
  expect_close(i, {2}, {4, 5});
  // In-place on a self the other operand does not broadcast to.
  Tensor col = make_tensor({1, 2, 3}, {3, 1});
  EXPECT_TRUE(contains(message_of([&] {
                         add_(col, make_tensor({1, 2, 3, 4}, {1, 4}));
                       }),
                       "output with shape [3, 1] doesn't match the broadcast shape [3, 4]"));
  // A self with a broadcast (stride 0) dimension cannot be written.
  Tensor base = make_tensor({1, 2}, {2});
  Tensor expanded = base.as_strided_view({3, 2}, {0, 1}, 0);
  EXPECT_TRUE(contains(message_of([&] { add_(expanded, 1); }),
                       "more than one element of the written-to tensor refers to a single memory "
                       "location"));
  fill_(expanded, 5);  // idempotent, allowed as in PyTorch
  expect_close(base, {2}, {5, 5});
  // Comparison in place writes 0/1 in self's dtype.
  Tensor c = make_tensor({1, 5}, {2});
  gt_(c, 2);
  expect_close(c, {2}, {0, 1});
  EXPECT_EQ(c.dtype(), DType::Float32);
}

// ---- broadcasting and large / parallel loops
// -----------------------------------------------------

TEST_F(Pointwise, BroadcastErrorsUsePyTorchsWording) {
  Tensor a = make_tensor(std::vector<double>(6, 1), {2, 3}),
         b = make_tensor(std::vector<double>(8, 1), {2, 4});
  const std::string msg = message_of([&] { add(a, b); });
  EXPECT_TRUE(contains(msg,
                       "The size of tensor a (3) must match the size of tensor b (4) at "
                       "non-singleton dimension 1"))
      << msg;
  EXPECT_TRUE(contains(msg, "add.Tensor")) << msg;
}

TEST_F(Pointwise, LargeTensorsTakeTheParallelPathAndAgree) {
  const int64_t n = 3 * 40000;  // above the parallel grain
  std::vector<double> va = random_values(size_t(n), 5), vb = random_values(40000, 6);
  Tensor a = make_tensor(va, {3, 40000}), b = make_tensor(vb, {40000});
  Tensor y = a * b + 1;
  std::vector<double> want(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    want[size_t(k)] = double(float(float(va[size_t(k)]) * float(vb[size_t(k % 40000)])) + 1.0f);
  }
  expect_close(y, {3, 40000}, want, 1e-6, 1e-6);
  // Strided and transposed-like views too.
  Tensor s = make_tensor(va, {3, 40000}, DType::Float32, true);
  expect_close(exp(s), {3, 40000}, apply_oracle([](double x) { return std::exp(x); }, s), 2e-5,
               1e-6);
}

// ---- ternary ops, clamp with tensors, nan_to_num
// ----------------------------------------------------

TEST_F(Pointwise, WhereLerpClampTensorAndNanToNum) {
  Tensor cond = make_tensor({1, 0, 1}, {3, 1}, DType::Bool);
  Tensor a = make_tensor({1, 2}, {1, 2}, DType::Int64);
  Tensor b = make_tensor({0.5}, {}, DType::Float64);
  Tensor w = where(cond, a, b);
  EXPECT_EQ(w.dtype(), DType::Float64);  // int64 [1, 2] with a 0-d float64 tensor
  expect_close(w, {3, 2}, {1, 2, 0.5, 0.5, 1, 2});
  EXPECT_TRUE(contains(
      message_of<TypeError>([&] { where(a, a, a); }),
      "where expected condition to be a boolean tensor, but got a tensor with dtype Long"));

  Tensor s = make_tensor({0, 10}, {2}), e = make_tensor({10, 0}, {2});
  expect_close(lerp(s, e, make_tensor({0.25, 1}, {2})), {2}, {2.5, 0});
  expect_close(lerp(s, e, 0.5), {2}, {5, 5});

  Tensor x = make_tensor({-3, 0, 3, 5}, {4});
  expect_close(clamp(x, make_tensor({-1}, {1}), make_tensor({1, 1, 2, 10}, {4})), {4},
               {-1, 0, 2, 5});
  expect_close(clamp(x, std::nullopt, make_tensor({1}, {1})), {4}, {-3, 0, 1, 1});
  expect_close(clamp(x, std::nullopt, Scalar(0)), {4}, {-3, 0, 0, 0});
  expect_close(clamp(x, Scalar(2), Scalar(1)), {4}, {1, 1, 1, 1});  // min > max gives max
  EXPECT_TRUE(
      contains(message_of([&] { clamp(x); }), "At least one of 'min' or 'max' must not be None"));
  Tensor xi = make_tensor({-3, 0, 3}, {3}, DType::Int32);
  EXPECT_EQ(clamp(xi, Scalar(0), Scalar(1)).dtype(), DType::Int32);
  EXPECT_EQ(clamp(xi, Scalar(0.5), Scalar(1)).dtype(), DType::Float32);
  Tensor nanx = make_tensor({NAN, INFINITY, -INFINITY, 1}, {4});
  expect_close(nan_to_num(nanx), {4}, {0, 3.4028234663852886e38, -3.4028234663852886e38, 1});
  expect_close(nan_to_num(nanx, 1.0, 2.0, -2.0), {4}, {1, 2, -2, 1});
  expect_close(nan_to_num(make_tensor({NAN, INFINITY}, {2}, DType::Float16)), {2}, {0, 65504});
  expect_close(relu(make_tensor({NAN, -1}, {2})), {2}, {NAN, 0});
  expect_close(clamp(make_tensor({NAN, -1}, {2}), Scalar(0), Scalar(1)), {2}, {NAN, 0});
  expect_close(maximum(make_tensor({NAN, -1}, {2}), make_tensor({0, 0}, {2})), {2}, {NAN, 0});
  EXPECT_TRUE(contains(message_of([&] { gelu(x, "fast"); }), "approximate"));
  EXPECT_TRUE(contains(
      message_of([&] { div(x, x, "round"); }),
      "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] { silu(xi); }), "not implemented for 'Int'"));
  // round: half to even, and with decimals.
  expect_close(round(make_tensor({0.5, 1.5, 2.5, -0.5}, {4})), {4}, {0, 2, 2, -0});
  expect_close(round(make_tensor({1.2345, 123.45}, {2}, DType::Float64), -1), {2}, {0, 120});
}

// ---- copy, conversion, fill
// --------------------------------------------------------------------------

TEST_F(Pointwise, CopyCloneContiguousToAndFill) {
  const std::vector<double> v = {1.5, -2.25, 3, 4.75, -5, 6};
  for (DType src_d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                      DType::Int32, DType::Int8, DType::UInt8, DType::Int16, DType::Bool}) {
    for (DType dst_d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                        DType::Int64, DType::Int32, DType::Bool}) {
      SCOPED_TRACE(str_cat(dtype_name(src_d), " -> ", dtype_name(dst_d)));
      Tensor src = make_tensor(v, {2, 3}, src_d, true);
      Tensor dst = make_tensor(std::vector<double>(6, 0), {2, 3}, dst_d, true);
      const uint32_t ver = dst.version();
      copy_(dst, src);
      EXPECT_EQ(dst.version(), ver + 1);
      std::vector<double> want = to_doubles(src);
      for (double& w : want) {
        w = dst_d == DType::Bool ? double(w != 0) : is_floating_point(dst_d) ? w : std::trunc(w);
      }
      expect_close(dst, {2, 3}, want, 1e-2, 0);
      Tensor t = to(src, dst_d);
      EXPECT_EQ(t.dtype(), dst_d);
      expect_close(t, {2, 3}, want, 1e-2, 0);
    }
  }
  // copy_ broadcasts src into self.
  Tensor dst = Tensor::empty({2, 3});
  copy_(dst, make_tensor({1, 2, 3}, {3}, DType::Int64));
  expect_close(dst, {2, 3}, {1, 2, 3, 1, 2, 3});
  EXPECT_TRUE(contains(message_of([&] {
                         copy_(dst, make_tensor({1, 2}, {2}));
                       }),
                       "The size of tensor a (3) must match the size of tensor b (2)"));
  // clone and contiguous.
  Tensor s = make_tensor(v, {2, 3}, DType::Float32, true);
  Tensor c = clone(s);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.is_alias_of(s));
  expect_close(c, {2, 3}, v);
  EXPECT_TRUE(contiguous(c).is_same(c));
  EXPECT_TRUE(contiguous(s).is_contiguous());
  expect_close(contiguous(s), {2, 3}, v);
  // to returns self when nothing changes, a copy when asked.
  EXPECT_TRUE(to(c, DType::Float32).is_same(c));
  EXPECT_FALSE(to(c, DType::Float32, false, true).is_same(c));
  // fill_ and zero_ on every dtype and layout.
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                  DType::Int32, DType::Int16, DType::Int8, DType::UInt8, DType::Bool}) {
    Tensor f = make_tensor(std::vector<double>(6, 0), {3, 2}, d, true);
    fill_(f, 3);
    expect_close(f, {3, 2}, std::vector<double>(6, d == DType::Bool ? 1 : 3));
    fill_(f, make_tensor({1}, {}, DType::Float64));
    expect_close(f, {3, 2}, std::vector<double>(6, 1));
    const uint32_t ver = f.version();
    zero_(f);
    EXPECT_EQ(f.version(), ver + 1);
    expect_close(f, {3, 2}, std::vector<double>(6, 0));
  }
  EXPECT_TRUE(
      contains(message_of([&] {
                 fill_(dst, make_tensor({1, 2}, {2}));
               }),
               "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions"));
  Tensor empty = Tensor::empty({0, 4});
  fill_(empty, 1);
  zero_(Tensor::empty({}));
}

// ---- every variant agrees with its functional form
// -----------------------------------------------

// Calls an op by schema name with a canonical signature, as the C++ API does.
template <typename Sig, typename... Args>
Tensor call(std::string_view name, Args&&... args) {
  return Dispatcher::instance().find_op_or_throw(name).typed<Sig>()(std::forward<Args>(args)...);
}

TEST_F(Pointwise, EveryUnaryInPlaceAndOutVariantMatchesTheFunctionalOne) {
  using Sig1 = Tensor(const Tensor&);
  using Sig2 = Tensor(const Tensor&, const Tensor&);
  for (std::string_view name :
       {"neg",   "abs",         "sign",       "exp",         "exp2",       "log",  "log2",
        "log1p", "expm1",       "sqrt",       "rsqrt",       "reciprocal", "sin",  "cos",
        "tan",   "tanh",        "sigmoid",    "erf",         "floor",      "ceil", "round",
        "trunc", "silu",        "mish",       "hardsigmoid", "hardswish",  "relu", "relu6",
        "selu",  "bitwise_not", "logical_not"}) {
    SCOPED_TRACE(name);
    const bool ints = name == "bitwise_not";
    const DType d = ints ? DType::Int32 : DType::Float32;
    Tensor x =
        make_tensor(ints ? random_ints(6, 9, -5, 5) : random_values(6, 9, 0.2, 2), {2, 3}, d, true);
    const std::string base = str_cat("aten::", name);
    Tensor want = call<Sig1>(base, x);
    const std::vector<double> w = to_doubles(want);
    if (name != "relu" && name != "relu6" && name != "selu") {
      Tensor out = Tensor::empty({2, 3}, TensorOptions{}.with(want.dtype()));
      Tensor got = call<Sig2>(str_cat(base, ".out"), x, out);
      EXPECT_TRUE(got.is_same(out));
      EXPECT_EQ(out.version(), 1u);
      expect_close(out, {2, 3}, w, 0, 0);
    }
    Tensor self = clone(x);
    if (name == "logical_not") self = to(self, DType::Bool);
    const uint32_t v = self.version();
    Tensor got = call<Sig1>(str_cat(base, "_"), self);
    EXPECT_TRUE(got.is_same(self));
    EXPECT_EQ(self.version(), v + 1);
    if (name != "logical_not") expect_close(self, {2, 3}, w, 0, 0);
  }
}

TEST_F(Pointwise, EveryBinaryInPlaceAndOutVariantMatchesTheFunctionalOne) {
  using Sig2 = Tensor(const Tensor&, const Tensor&);
  using Sig3 = Tensor(const Tensor&, const Tensor&, const Tensor&);
  using SigS = Tensor(const Tensor&, const Scalar&);
  using SigSO = Tensor(const Tensor&, const Scalar&, const Tensor&);
  struct Names {
    std::string fn, inplace, out, sfn, sinplace, sout;  // empty where PyTorch has none
  };
  const std::vector<Names> ops = {
      {"mul.Tensor", "mul_.Tensor", "mul.out", "mul.Scalar", "mul_.Scalar", "mul.Scalar_out"},
      {"div.Tensor", "div_.Tensor", "div.out", "div.Scalar", "div_.Scalar", ""},
      {"remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out", "remainder.Scalar",
       "remainder_.Scalar", "remainder.Scalar_out"},
      {"fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out", "fmod.Scalar", "fmod_.Scalar",
       "fmod.Scalar_out"},
      {"pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out", "pow.Tensor_Scalar",
       "pow_.Scalar", "pow.Tensor_Scalar_out"},
      {"maximum", "", "maximum.out", "", "", ""},
      {"minimum", "", "minimum.out", "", "", ""},
      {"atan2", "atan2_", "atan2.out", "", "", ""},
      {"logical_and", "logical_and_", "logical_and.out", "", "", ""},
      {"logical_or", "logical_or_", "logical_or.out", "", "", ""},
      {"logical_xor", "logical_xor_", "logical_xor.out", "", "", ""},
  };
  std::vector<Names> all = ops;
  for (const char* c : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    all.push_back({str_cat(c, ".Tensor"), str_cat(c, "_.Tensor"), str_cat(c, ".Tensor_out"),
                   str_cat(c, ".Scalar"), str_cat(c, "_.Scalar"), str_cat(c, ".Scalar_out")});
  }
  for (const char* c : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    all.push_back({str_cat(c, ".Tensor"), str_cat(c, "_.Tensor"), str_cat(c, ".Tensor_out"),
                   str_cat(c, ".Scalar"), str_cat(c, "_.Scalar"), str_cat(c, ".Scalar_out")});
  }
  for (const Names& n : all) {
    SCOPED_TRACE(n.fn);
    const bool ints = n.fn.rfind("bitwise", 0) == 0;
    const DType d = ints ? DType::Int64 : DType::Float64;
    Tensor a =
        make_tensor(ints ? random_ints(6, 1, -9, 9) : random_values(6, 1, 0.5, 3), {2, 3}, d, true);
    Tensor b = make_tensor(ints ? random_ints(3, 2, 1, 9) : random_values(3, 2, 0.5, 3), {3}, d);
    const Scalar s = ints ? Scalar(3) : Scalar(1.5);
    auto check = [&](const Tensor& want, const std::string& out_name,
                     const std::string& inplace_name, bool scalar) {
      const std::vector<double> w = to_doubles(want);
      if (!out_name.empty()) {
        Tensor out = Tensor::empty({2, 3}, TensorOptions{}.with(want.dtype()));
        Tensor got = scalar ? call<SigSO>("aten::" + out_name, a, s, out)
                            : call<Sig3>("aten::" + out_name, a, b, out);
        EXPECT_TRUE(got.is_same(out)) << out_name;
        expect_close(out, {2, 3}, w, 0, 0);
      }
      if (!inplace_name.empty()) {
        Tensor self = clone(a);
        const uint32_t v = self.version();
        Tensor got = scalar ? call<SigS>("aten::" + inplace_name, self, s)
                            : call<Sig2>("aten::" + inplace_name, self, b);
        EXPECT_TRUE(got.is_same(self)) << inplace_name;
        EXPECT_EQ(self.version(), v + 1) << inplace_name;
        expect_close(self, {2, 3}, w, 0, 0);  // bool results land as 0/1 in self's dtype
      }
    };
    check(call<Sig2>("aten::" + n.fn, a, b), n.out, n.inplace, false);
    if (!n.sfn.empty()) check(call<SigS>("aten::" + n.sfn, a, s), n.sout, n.sinplace, true);
  }
}

TEST_F(Pointwise, SmallIntegerDtypesWrapAndPromoteLikePyTorch) {
  Tensor u = make_tensor({250, 3}, {2}, DType::UInt8);
  Tensor r = u + make_tensor({10, 4}, {2}, DType::UInt8);
  EXPECT_EQ(r.dtype(), DType::UInt8);
  expect_close(r, {2}, {4, 7});  // 260 wraps to 4
  Tensor c = make_tensor({100, -100}, {2}, DType::Int8);
  expect_close(c * 2, {2}, {-56, 56});  // int8 wraps
  expect_close(-c, {2}, {-100, 100});
  expect_close(abs(c), {2}, {100, 100});
  Tensor h = make_tensor({7, -7}, {2}, DType::Int16);
  EXPECT_EQ((h / 2).dtype(), DType::Float32);
  expect_close(h / 2, {2}, {3.5, -3.5});
  expect_close(remainder(h, 3), {2}, {1, 2});
  expect_close(u > c, {2}, {1, 1});  // uint8 with int8 compares in int16
  EXPECT_EQ((u + c).dtype(), DType::Int16);
  expect_close(u + c, {2}, {350, -97});
}

// Note [Output layout follows the input]: a dense non-row-major input (channels-last, a
// transposed matrix) gives an output of the same layout, as in PyTorch; others row-major.
TEST(PointwiseLayout, OutputFollowsADenseInputsLayout) {
  testing::load_ops_core();
  const std::vector<double> v = random_values(2 * 3 * 4 * 5, 11);
  Tensor nchw = make_tensor(v, {2, 3, 4, 5}, DType::Float32);
  Tensor nhwc = nchw.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  ASSERT_FALSE(nhwc.is_contiguous());
  for (const Tensor& out : {relu(nhwc), nhwc * 2.0, nhwc + nhwc, exp(nhwc)}) {
    EXPECT_EQ(out.strides().vec(), nhwc.strides().vec()) << "channels-last in, channels-last out";
  }
  expect_close(relu(nhwc), {2, 3, 4, 5}, to_doubles(relu(nchw)));
  expect_close(nhwc + nchw, {2, 3, 4, 5}, to_doubles(nchw * 2.0));

  Tensor m = make_tensor(random_values(12, 3), {3, 4}, DType::Float32).t();
  EXPECT_EQ((m * 3.0).strides().vec(), (std::vector<int64_t>{1, 4})) << "a transposed matrix";
  Tensor strided = make_tensor(random_values(24, 5), {4, 6}, DType::Float32).narrow(1, 0, 3);
  EXPECT_TRUE((strided * 2.0).is_contiguous()) << "not dense: row-major";
  Tensor row = make_tensor(random_values(4, 5), {4}, DType::Float32);
  EXPECT_TRUE((m.t() + row).is_contiguous()) << "row-major in, row-major out";
}

}  // namespace
}  // namespace loom
