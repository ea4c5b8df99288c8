// Pointwise fusion and its C++ code (loom/graph/fusion.h).
#include "loom/graph/fusion.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/schema.h"

namespace loom::graph {
namespace {

// Note [Vector math in generated loops]: a call into the C library (std::exp) inside a loop
// the compiler is told to vectorise runs lane by lane and is slower than no vectorising at
// all (5x on the issue's gelu chain), and GCC vectorises libm calls only under -ffast-math,
// which eager does not use. So float32 exp, erf and tanh are written in straight-line code
// (fits and reductions of our own, a few ulp from the correctly rounded result; eager's own
// float32 sigmoid uses a vector exp too) that vectorises; a loop that still calls into libm
// (float64, log, sin, ...) gets no `omp simd`.
constexpr const char* kPrelude = R"PRELUDE(
// a * b + c in one rounding where the ISA has FMA, for exp's polynomial only (a user's
// x * w + b keeps eager's two roundings, -ffp-contract=off; the erf and tanh fits in FMA form
// drifted further from eager's tanh near +-1, where 1 - tanh^2 magnifies it); elsewhere a
// call to fmaf would stop the loop from vectorising.
#if defined(__FMA__)
#define LOOM_FMA(a, b, c) __builtin_fmaf(a, b, c)
#else
#define LOOM_FMA(a, b, c) ((a) * (b) + (c))
#endif
// exp for float32 in straight-line code the compiler vectorises: n = round(y / ln 2),
// r = y - n ln 2 (two parts), e^r by its Taylor series to r^7, times 2^n in two halves so
// that results down to the subnormals keep their value.
static inline float loom_expf(float y) {
  const float yc = y < -104.0f ? -104.0f : (y > 89.0f ? 89.0f : y);
  const float n = __builtin_rintf(yc * 1.44269504088896341f);
  const float r = (yc - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = LOOM_FMA(p, r, 1.0f / 720.0f);
  p = LOOM_FMA(p, r, 1.0f / 120.0f);
  p = LOOM_FMA(p, r, 1.0f / 24.0f);
  p = LOOM_FMA(p, r, 1.0f / 6.0f);
  p = LOOM_FMA(p, r, 0.5f);
  p = LOOM_FMA(p, r, 1.0f);
  p = LOOM_FMA(p, r, 1.0f);
  const int32_t k = static_cast<int32_t>(n);
  const int32_t k1 = k >> 1, k2 = k - k1;
  const int32_t b1 = (k1 + 127) << 23, b2 = (k2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  const float e = p * s1 * s2;
  return y != y ? y : e;  // past 88.72 the scaling overflows to inf, as exp does
}
// x P(x^2) / Q(x^2), coefficients from the highest power down, with x clamped to [-limit,
// limit] and the result to [-1, 1]; NaN passes through. The loops unroll: straight-line code.
template <int NP, int NQ>
static inline float loom_odd_rational(float x, float limit, const float (&p)[NP],
                                      const float (&q)[NQ]) {
  const float xc = x < -limit ? -limit : (x > limit ? limit : x);
  const float t = xc * xc;
  float a = 0, b = 0;
  for (int i = 0; i < NP; ++i) a = a * t + p[i];
  for (int i = 0; i < NQ; ++i) b = b * t + q[i];
  const float v = xc * a / b;
  return x != x ? x : (v > 1.0f ? 1.0f : (v < -1.0f ? -1.0f : v));
}
// erf for float32 on [-4, 4] (a rational fit, relative error 5e-9 in real arithmetic), +-1
// beyond.
static inline float loom_erff(float x) {
  static constexpr float p[] = {
      -0x1.c4a3698b94f60p-27f, 0x1.3a1bfd63ef442p-18f, 0x1.8dda5ed9f745ep-12f,
      0x1.f83833a45b7abp-9f, 0x1.bcdfdd54ebd38p-5f, 0x1.7b2d61a3ed902p-3f,
      0x1.20dd750e40be4p+0f};
  static constexpr float q[] = {
      0x1.088c4f7195c02p-14f, 0x1.5690898d2fd6ap-10f, 0x1.fa7560b1cb3e8p-7f,
      0x1.d2a9e45625993p-4f, 0x1.fd5a1ac9bafe7p-2f, 0x1.0000000000000p+0f};
  return loom_odd_rational(x, 4.0f, p, q);
}
// tanh for float32 on [-9, 9] (a rational fit, relative error 4e-8 in real arithmetic), +-1
// beyond.
static inline float loom_tanhf(float x) {
  static constexpr float p[] = {
      0x1.dc7ebee1a2aafp-31f, 0x1.6b5d85e24f6a8p-20f, 0x1.db919a043b4b4p-13f,
      0x1.04cd9e80f2a53p-7f, 0x1.016038abad5b9p-5f, -0x1.455ee97115b58p-3f,
      0x1.ffffffa85270bp-1f};
  static constexpr float q[] = {
      0x1.b4e633ef31d81p-25f, 0x1.69839bf73a055p-16f, 0x1.ac4c8f00b84b9p-10f,
      0x1.8a8029d7ed1cbp-6f, -0x1.667e7103ad9b8p-5f, 0x1.654bae938e024p-3f,
      0x1.0000000000000p+0f};
  return loom_odd_rational(x, 9.0f, p, q);
}
// 1 where element i of a dropout mask keeps its value, else 0: word i % 4 of Philox4x32-10
// block i / 4 of the call's seed is below threshold, as eager's native_dropout decides it
// (Note [Counter-based draws] in ops/nn/cpu/dropout.cpp): the same mask, bit for bit.
// The ten rounds are written out: a loop inside the element loop stops it from vectorising.
#define LOOM_PHILOX_ROUND(r)                                                    \
  {                                                                             \
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;               \
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;               \
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ (k0 + (r) * 0x9E3779B9u); \
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ (k1 + (r) * 0xBB67AE85u); \
    c1 = static_cast<uint32_t>(p1);                                             \
    c3 = static_cast<uint32_t>(p0);                                             \
    c0 = n0;                                                                    \
    c2 = n2;                                                                    \
  }
static inline float loom_dropout_keep(uint64_t seed, int64_t i, uint32_t threshold) {
  // Block i / 4 as two 32-bit words, in 32-bit arithmetic (it vectorises with the floats).
  uint32_t c0 = static_cast<uint32_t>(i) >> 2 | static_cast<uint32_t>(i >> 32) << 30;
  uint32_t c1 = static_cast<uint32_t>(i >> 34), c2 = 0, c3 = 0;
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  LOOM_PHILOX_ROUND(0u) LOOM_PHILOX_ROUND(1u) LOOM_PHILOX_ROUND(2u) LOOM_PHILOX_ROUND(3u)
  LOOM_PHILOX_ROUND(4u) LOOM_PHILOX_ROUND(5u) LOOM_PHILOX_ROUND(6u) LOOM_PHILOX_ROUND(7u)
  LOOM_PHILOX_ROUND(8u) LOOM_PHILOX_ROUND(9u)
  const uint32_t l = static_cast<uint32_t>(i) & 3u;
  const uint32_t w = l == 0 ? c0 : (l == 1 ? c1 : (l == 2 ? c2 : c3));
  return w < threshold ? 1.0f : 0.0f;
}
)PRELUDE";

/// A double as a C++ literal of type t that converts exactly as eager's kernels convert a
/// Scalar (a double cast to the computation type).
std::string literal(double v, DType t) {
  const char* type = t == DType::Float64 ? "double" : "float";
  if (std::isnan(v)) return str_cat("std::numeric_limits<", type, ">::quiet_NaN()");
  if (std::isinf(v)) {
    return str_cat(v < 0 ? "-" : "", "std::numeric_limits<", type, ">::infinity()");
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);  // exact
  return str_cat(type, "(", buf, ")");
}

std::optional<double> scalar_argument(const Node& n, size_t i) {
  if (i >= n.arguments.size()) return std::nullopt;
  const NodeArgument& a = n.arguments[i];
  if (a.kind != NodeArgument::Kind::Constant || !a.constant.is_scalar()) return std::nullopt;
  return a.constant.to_double();
}

/// How many leading Tensor arguments a fusible op reads; 0 for an op that does not fuse.
int tensor_arity(std::string_view op) {
  static const absl::flat_hash_set<std::string_view> kBinary = {
      "aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor",
      "aten::div.Tensor", "aten::maximum",    "aten::minimum"};
  static const absl::flat_hash_set<std::string_view> kUnary = {"aten::add.Scalar",
                                                               "aten::sub.Scalar",
                                                               "aten::mul.Scalar",
                                                               "aten::div.Scalar",
                                                               "aten::neg",
                                                               "aten::abs",
                                                               "aten::exp",
                                                               "aten::log",
                                                               "aten::sqrt",
                                                               "aten::rsqrt",
                                                               "aten::reciprocal",
                                                               "aten::sin",
                                                               "aten::cos",
                                                               "aten::tanh",
                                                               "aten::sigmoid",
                                                               "aten::relu",
                                                               "aten::silu",
                                                               "aten::gelu",
                                                               "aten::pow.Tensor_Scalar"};
  if (kBinary.contains(op)) return 2;
  if (kUnary.contains(op) || op == "aten::dropout") return 1;
  if (op == "aten::sum.dim_IntList" || op == "aten::mean.dim" || op == "aten::amax") return 1;
  return 0;
}

/// A fusible dropout's keep probability: `aten::dropout(x, p, train=True)` with 0 < p < 1 (p 0
/// and eval return x itself, p 1 multiplies by zero: eager's composite does those without
/// native_dropout, so they stay eager).
std::optional<double> dropout_keep(const Node& n) {
  if (n.op.name() != "aten::dropout" || n.arguments.size() != 3) return std::nullopt;
  const std::optional<double> p = scalar_argument(n, 1);
  const NodeArgument& train = n.arguments[2];
  if (!p || !(*p > 0 && *p < 1) || train.kind != NodeArgument::Kind::Constant ||
      train.constant.tag() != IValue::Tag::Bool || !train.constant.to_bool()) {
    return std::nullopt;
  }
  return 1 - *p;
}

/// The variable holding a dropout node's seed in generated code.
std::string seed_var(const Node& n) { return str_cat("seed", n.outputs[0]); }

/// Whether dropout of node n keeps element `index` (a C++ expression), as eager's mask.
std::string dropout_mask(const Node& n, double keep, const std::string& index, const char* T) {
  // 0 < keep < 1 (dropout_keep): the threshold fits in 32 bits.
  const auto threshold = static_cast<uint32_t>(std::ldexp(keep, 32));
  return str_cat(T, "(loom_dropout_keep(", seed_var(n), ", ", index, ", ", threshold, "u))");
}

/// The C++ expression of node n over its operands a (variable names, tensor arguments in
/// order), in element type t; nullopt where this use of the op does not fuse. index: the
/// element's position in its value's row-major order (a C++ expression), which dropout needs;
/// "" where the loop has none.
std::optional<std::string> formula(const Node& n, const std::vector<std::string>& a, DType t,
                                   const std::string& index = "") {
  const std::string_view op = n.op.name();
  const char* T = t == DType::Float64 ? "double" : "float";
  const bool f32 = t == DType::Float32;
  // exp, erf and tanh: the vectorisable float32 forms (Note [Vector math in generated loops]).
  const char* exp = f32 ? "loom_expf(" : "std::exp(";
  const char* erf = f32 ? "loom_erff(" : "std::erf(";
  const char* tanh = f32 ? "loom_tanhf(" : "std::tanh(";
  auto scalar = [&](size_t i) { return scalar_argument(n, i); };
  // a + alpha * b, as eager's add: exactly a + b when alpha is 1.
  auto axpy = [&](std::string_view sign, const std::string& b, double alpha) {
    if (alpha == 1) return str_cat("(", a[0], " ", sign, " ", b, ")");
    return str_cat("(", a[0], " ", sign, " ", literal(alpha, t), " * ", b, ")");
  };
  if (op == "aten::add.Tensor" || op == "aten::sub.Tensor") {
    const auto alpha = scalar(2);
    if (!alpha) return std::nullopt;
    return axpy(op == "aten::add.Tensor" ? "+" : "-", a[1], *alpha);
  }
  if (op == "aten::add.Scalar" || op == "aten::sub.Scalar") {
    const auto other = scalar(1), alpha = scalar(2);
    if (!other || !alpha) return std::nullopt;
    return axpy(op == "aten::add.Scalar" ? "+" : "-", literal(*other, t), *alpha);
  }
  if (op == "aten::mul.Tensor") return str_cat("(", a[0], " * ", a[1], ")");
  if (op == "aten::div.Tensor") return str_cat("(", a[0], " / ", a[1], ")");
  if (op == "aten::dropout") {
    // Eager's (x * mask) * scale, the scale a double cast to the element type.
    const std::optional<double> keep = dropout_keep(n);
    if (!keep || index.empty()) return std::nullopt;
    return str_cat("((", a[0], " * ", dropout_mask(n, *keep, index, T), ") * ",
                   literal(1.0 / *keep, t), ")");
  }
  if (op == "aten::mul.Scalar" || op == "aten::div.Scalar") {
    const auto s = scalar(1);
    if (!s) return std::nullopt;
    return str_cat("(", a[0], op == "aten::mul.Scalar" ? " * " : " / ", literal(*s, t), ")");
  }
  if (op == "aten::maximum" || op == "aten::minimum") {
    // As eager: a NaN operand wins.
    return str_cat("(", a[0], " != ", a[0], " ? ", a[0], " : (", a[1], " != ", a[1], " ? ", a[1],
                   " : (", a[0], op == "aten::maximum" ? " > " : " < ", a[1], " ? ", a[0], " : ",
                   a[1], ")))");
  }
  if (op == "aten::neg") return str_cat("(-", a[0], ")");
  if (op == "aten::reciprocal") return str_cat("(", T, "(1) / ", a[0], ")");
  if (op == "aten::rsqrt") return str_cat("(", T, "(1) / std::sqrt(", a[0], "))");
  if (op == "aten::sigmoid") return str_cat("(", T, "(1) / (", T, "(1) + ", exp, "-", a[0], ")))");
  if (op == "aten::silu") return str_cat("(", a[0], " / (", T, "(1) + ", exp, "-", a[0], ")))");
  if (op == "aten::exp") return str_cat(exp, a[0], ")");
  if (op == "aten::tanh") return str_cat(tanh, a[0], ")");
  if (op == "aten::relu") {
    // As eager: NaN passes through, and the result is never -0.
    return str_cat("((", a[0], " > ", T, "(0) || ", a[0], " != ", a[0], ") ? ", a[0], " : ", T,
                   "(0))");
  }
  if (op == "aten::gelu") {
    if (n.arguments.size() < 2 || n.arguments[1].kind != NodeArgument::Kind::Constant ||
        n.arguments[1].constant.tag() != IValue::Tag::String) {
      return std::nullopt;
    }
    const std::string approximate = n.arguments[1].constant.to_string();
    const std::string& x = a[0];
    if (approximate == "tanh") {
      return str_cat("(", T, "(0.5) * ", x, " * (", T, "(1) + ", tanh, T,
                     "(0.7978845608028654) * (", x, " + ", T, "(0.044715) * ", x, " * ", x, " * ",
                     x, "))))");
    }
    if (approximate != "none") return std::nullopt;
    return str_cat("(", x, " * ", T, "(0.5) * (", T, "(1) + ", erf, x, " * ", T,
                   "(0.7071067811865476))))");
  }
  if (op == "aten::pow.Tensor_Scalar") {
    const auto e = scalar(1);
    if (!e) return std::nullopt;
    if (*e == 1) return a[0];
    if (*e == 2) return str_cat("(", a[0], " * ", a[0], ")");
    if (*e == 3) return str_cat("(", a[0], " * ", a[0], " * ", a[0], ")");
    if (*e == 0.5) return str_cat("std::sqrt(", a[0], ")");
    if (*e == -1) return str_cat("(", T, "(1) / ", a[0], ")");
    return str_cat("std::pow(", a[0], ", ", literal(*e, t), ")");
  }
  for (std::string_view f : {"abs", "log", "sqrt", "sin", "cos"}) {
    if (op.starts_with("aten::") && op.substr(6) == f) return str_cat("std::", f, "(", a[0], ")");
  }
  return std::nullopt;
}

/// The derivative of node n (a fusible op whose formula() exists) for its output gradient g:
/// one expression per tensor operand, over the operand names a and the output's name out (all
/// in the loop's registers), in element type t; the same formulas as eager's derivatives.
/// Temporaries it needs are appended to body as statements; `tmp` names them uniquely.
std::vector<std::string> derivative(const Node& n, const std::vector<std::string>& a,
                                    const std::string& out, const std::string& g, DType t,
                                    const std::string& tmp, std::string& body,
                                    const std::string& index = "") {
  const std::string_view op = n.op.name();
  const std::string T = t == DType::Float64 ? "double" : "float";
  const bool f32 = t == DType::Float32;
  const char* exp = f32 ? "loom_expf(" : "std::exp(";
  const char* erf = f32 ? "loom_erff(" : "std::erf(";
  const char* tanh = f32 ? "loom_tanhf(" : "std::tanh(";
  auto scalar = [&](size_t i) { return *scalar_argument(n, i); };
  auto scaled = [&](const std::string& sign, double s) {
    return s == 1 ? str_cat("(", sign, g, ")") : str_cat("(", sign, g, " * ", literal(s, t), ")");
  };
  auto local = [&](const std::string& suffix, const std::string& value) {
    body += str_cat("      const ", T, " ", tmp, suffix, " = ", value, ";\n");
    return tmp + suffix;
  };
  if (op == "aten::dropout") {
    // native_dropout_backward's (g * mask) * scale, the mask recomputed from the seed.
    const double keep = *dropout_keep(n);
    return {str_cat("((", g, " * ", dropout_mask(n, keep, index, T.c_str()), ") * ",
                    literal(1.0 / keep, t), ")")};
  }
  if (op == "aten::add.Tensor") return {g, scaled("", scalar(2))};
  if (op == "aten::sub.Tensor") return {g, scaled("-", scalar(2))};
  if (op == "aten::add.Scalar" || op == "aten::sub.Scalar") return {g};
  if (op == "aten::mul.Tensor")
    return {str_cat("(", g, " * ", a[1], ")"), str_cat("(", g, " * ", a[0], ")")};
  if (op == "aten::div.Tensor") {
    return {str_cat("(", g, " / ", a[1], ")"),
            str_cat("(-", g, " * ", a[0], " / (", a[1], " * ", a[1], "))")};
  }
  if (op == "aten::maximum" || op == "aten::minimum") {
    // The loser gets none, a tie half each, a NaN both all of it (eager's pick_grad).
    const bool max = op == "aten::maximum";
    auto pick = [&](const std::string& self, const std::string& other) {
      return str_cat("(", self, max ? " < " : " > ", other, " ? ", T, "(0) : (", self,
                     " == ", other, " ? ", g, " * ", T, "(0.5) : ", g, "))");
    };
    return {pick(a[0], a[1]), pick(a[1], a[0])};
  }
  if (op == "aten::mul.Scalar") return {scaled("", scalar(1))};
  if (op == "aten::div.Scalar") return {str_cat("(", g, " / ", literal(scalar(1), t), ")")};
  if (op == "aten::neg") return {str_cat("(-", g, ")")};
  if (op == "aten::abs") {
    return {str_cat("(", g, " * ", T, "((", a[0], " > ", T, "(0)) - (", a[0], " < ", T, "(0))))")};
  }
  if (op == "aten::exp") return {str_cat("(", g, " * ", out, ")")};
  if (op == "aten::log") return {str_cat("(", g, " / ", a[0], ")")};
  if (op == "aten::sqrt") return {str_cat("(", g, " / (", T, "(2) * ", out, "))")};
  if (op == "aten::rsqrt") {
    return {str_cat("(", T, "(-0.5) * ", g, " * (", out, " * ", out, " * ", out, "))")};
  }
  if (op == "aten::reciprocal") return {str_cat("(-", g, " * (", out, " * ", out, "))")};
  if (op == "aten::sin") return {str_cat("(", g, " * std::cos(", a[0], "))")};
  if (op == "aten::cos") return {str_cat("(", g, " * -std::sin(", a[0], "))")};
  if (op == "aten::tanh") return {str_cat("(", g, " * (", T, "(1) - ", out, " * ", out, "))")};
  if (op == "aten::sigmoid") return {str_cat("(", g, " * (", T, "(1) - ", out, ") * ", out, ")")};
  if (op == "aten::relu") return {str_cat("(", out, " <= ", T, "(0) ? ", T, "(0) : ", g, ")")};
  if (op == "aten::silu") {
    const std::string s = local("s", str_cat(T, "(1) / (", T, "(1) + ", exp, "-", a[0], "))"));
    return {str_cat("(", g, " * ", s, " * (", T, "(1) + ", a[0], " * (", T, "(1) - ", s, ")))")};
  }
  if (op == "aten::gelu") {
    const std::string& x = a[0];
    if (n.arguments[1].constant.to_string() == "tanh") {
      const std::string th = local("t", str_cat(tanh, T, "(0.7978845608028654) * (", x, " + ", T,
                                                "(0.044715) * ", x, " * ", x, " * ", x, "))"));
      const std::string left = str_cat(T, "(0.5) * (", T, "(1) + ", th, ")");
      const std::string right = str_cat(T, "(0.5) * ", x, " * (", T, "(1) - ", th, " * ", th,
                                        ") * ", T, "(0.7978845608028654) * (", T, "(1) + ", T,
                                        "(3) * ", T, "(0.044715) * ", x, " * ", x, ")");
      return {str_cat("(", g, " * (", left, " + ", right, "))")};
    }
    const std::string cdf = local(
        "c", str_cat(T, "(0.5) * (", T, "(1) + ", erf, x, " * ", T, "(0.7071067811865476)))"));
    const std::string pdf =
        local("p", str_cat(exp, T, "(-0.5) * ", x, " * ", x, ") * ", T, "(0.3989422804014327)"));
    return {str_cat("(", g, " * (", cdf, " + ", x, " * ", pdf, "))")};
  }
  if (op == "aten::pow.Tensor_Scalar") {
    const double e = scalar(1);
    if (e == 0) return {str_cat(T, "(0)")};
    if (e == 1) return {g};
    if (e == 2) return {str_cat("(", g, " * (", T, "(2) * ", a[0], "))")};
    return {str_cat("(", g, " * (", literal(e, t), " * std::pow(", a[0], ", ", literal(e - 1, t),
                    ")))")};
  }
  return {};
}

/// The values of node n's tensor operands, in argument order (-1 where one is not a value).
std::vector<int> tensor_operands(const Node& n) {
  std::vector<int> ids;
  const int arity = tensor_arity(n.op.name());
  for (int i = 0; i < arity && i < static_cast<int>(n.arguments.size()); ++i) {
    const NodeArgument& a = n.arguments[i];
    ids.push_back(a.kind == NodeArgument::Kind::Value ? a.value : -1);
  }
  return ids;
}

bool broadcasts_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] != 1 && from[d] != to[lead + d]) return false;
  }
  return true;
}

/// Whether node n can join a group: a fusible op whose tensors share its result's dtype, on
/// the CPU, broadcasting to its result's sizes.
bool fusible(const Graph& g, const Node& n) {
  if (tensor_arity(n.op.name()) == 0 || n.list_output || n.outputs.size() != 1) return false;
  if (n.outputs[0] < 0) return false;
  const Value& out = g.values()[n.outputs[0]];
  const DType t = out.meta.dtype();
  if ((t != DType::Float32 && t != DType::Float64) || !out.device.is_cpu()) return false;
  std::vector<std::string> names;
  for (int id : tensor_operands(n)) {
    if (id < 0) return false;
    const Value& v = g.values()[id];
    if (v.meta.dtype() != t || !v.device.is_cpu() ||
        !broadcasts_to(v.meta.sizes(), out.meta.sizes())) {
      return false;
    }
    names.push_back("x");
  }
  return formula(n, names, t, "i").has_value();
}

/// What a row reduction computes.
enum class Reduce { Sum, Mean, Amax };

/// Node n as a reduction a group can hold: sum, mean or amax over the last dim only (dtype
/// argument None), of a float32 or float64 CPU tensor whose rows have 2 elements at least
/// and which has no empty dim (an empty amax is eager's error; an empty mean its NaN).
std::optional<Reduce> row_reduction(const Graph& g, const Node& n) {
  const std::string_view op = n.op.name();
  std::optional<Reduce> kind;
  if (op == "aten::sum.dim_IntList") kind = Reduce::Sum;
  if (op == "aten::mean.dim") kind = Reduce::Mean;
  if (op == "aten::amax") kind = Reduce::Amax;
  if (!kind || n.list_output || n.outputs.size() != 1 || n.outputs[0] < 0) return std::nullopt;
  const size_t want_args = *kind == Reduce::Amax ? 3 : 4;
  if (n.arguments.size() != want_args || n.arguments[0].kind != NodeArgument::Kind::Value ||
      n.arguments[0].value < 0) {
    return std::nullopt;
  }
  for (size_t i = 1; i < want_args; ++i) {
    if (n.arguments[i].kind != NodeArgument::Kind::Constant) return std::nullopt;
  }
  const IValue& dims = n.arguments[1].constant;
  if (dims.tag() != IValue::Tag::IntList || n.arguments[2].constant.tag() != IValue::Tag::Bool) {
    return std::nullopt;
  }
  if (want_args == 4 && !n.arguments[3].constant.is_none()) return std::nullopt;
  const Value& in = g.values()[n.arguments[0].value];
  const Value& out = g.values()[n.outputs[0]];
  const int64_t rank = in.meta.dim();
  const DType t = in.meta.dtype();
  if (rank < 1 || dims.to_int_list().size() != 1 || (t != DType::Float32 && t != DType::Float64) ||
      out.meta.dtype() != t || !in.device.is_cpu()) {
    return std::nullopt;
  }
  const int64_t d = dims.to_int_list()[0];
  if (d != rank - 1 && d != -1) return std::nullopt;
  if (in.meta.size(rank - 1) < 2) return std::nullopt;
  for (int64_t s : in.meta.sizes()) {
    if (s == 0) return std::nullopt;
  }
  return kind;
}

/// The sizes of a row value of a reduction over the last dim of sizes, with keepdim.
std::vector<int64_t> row_sizes(IntArrayRef sizes) {
  std::vector<int64_t> out(sizes.begin(), sizes.end());
  out.back() = 1;
  return out;
}

bool has_kind(const Type& t, TypeKind k) { return t.kind == k || (t.elem && has_kind(*t.elem, k)); }

/// Whether node n may be dropped when nothing reads its results, or share an equal node's:
/// an aten op on the CPU that did not draw random numbers when captured (Note [Random ops in
/// a trace]), writes no argument, takes no Generator, is not a random op by name, and
/// returns tensors only. Other namespaces' ops are left alone.
bool pure(const Graph& g, const Node& n) {
  const std::string_view name = n.op.name();
  if (n.draws || !name.starts_with("aten::") || !n.op.has_schema()) return false;
  // Only the CPU generator is watched (Node::draws): ops on other devices are left alone.
  for (int id : n.outputs) {
    if (id >= 0 && !g.values()[id].device.is_cpu()) return false;
  }
  static const absl::flat_hash_set<std::string_view> kRandom = {
      "aten::dropout",         "aten::feature_dropout",
      "aten::alpha_dropout",   "aten::feature_alpha_dropout",
      "aten::native_dropout",  "aten::rrelu",
      "aten::rrelu_with_noise"};
  if (kRandom.contains(name)) return false;
  const FunctionSchema& s = n.op.schema();
  if (s.is_mutable() || s.is_vararg() || s.is_varret() || s.returns().empty()) return false;
  for (const Argument& a : s.arguments()) {
    if (has_kind(a.type, TypeKind::Generator)) return false;
  }
  for (const Argument& r : s.returns()) {
    if (r.type.kind != TypeKind::Tensor &&
        !(r.type.kind == TypeKind::List && r.type.elem && r.type.elem->kind == TypeKind::Tensor)) {
      return false;
    }
  }
  return true;
}

/// Whether one of n's results may alias an argument (a view: `Tensor(a)`).
bool returns_view(const Node& n) {
  for (const Argument& r : n.op.schema().returns()) {
    if (r.alias) return true;
  }
  return false;
}

/// A constant as text that tells every two different values apart (repr() rounds doubles).
std::string exact_repr(const IValue& v) {
  auto exact = [](double d) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", d);
    return std::string(buf);
  };
  if (v.tag() == IValue::Tag::Double) return exact(v.to_double());
  if (v.tag() == IValue::Tag::DoubleList) {
    std::string out;
    for (double d : v.to_double_list()) out += exact(d) + ",";
    return out;
  }
  return v.repr();
}

/// Dead-code and common-subexpression elimination over plan's node steps (see plan_fusion).
void eliminate_nodes(const Graph& g, FusionPlan& plan) {
  const auto& nodes = g.nodes();
  bool mutates = false;
  for (const Node& n : nodes)
    mutates = mutates || (n.op.has_schema() && n.op.schema().is_mutable());
  // CSE: a key per pure node from its op and arguments (values after the merges so far).
  absl::flat_hash_map<int, int> merged;        // value -> the equal value it takes
  absl::flat_hash_map<std::string, int> seen;  // key -> node
  auto id_of = [&](int id) {
    auto it = merged.find(id);
    return it == merged.end() ? id : it->second;
  };
  for (FusionStep& step : plan.steps) {
    if (step.node < 0 || mutates) continue;
    const Node& n = nodes[step.node];
    // A returned result stays its own tensor: the caller may write to one of two results.
    const bool returned = std::any_of(n.outputs.begin(), n.outputs.end(), [&](int id) {
      return std::find(g.outputs().begin(), g.outputs().end(), id) != g.outputs().end();
    });
    if (!pure(g, n) || returns_view(n) || returned) continue;
    // Under another grad mode, an equal call records (or not) another gradient.
    std::string key = str_cat(n.op.name(), n.grad_enabled ? "|g" : "|n");
    for (const NodeArgument& a : n.arguments) {
      if (a.kind == NodeArgument::Kind::Constant) {
        key += str_cat("|c", static_cast<int>(a.constant.tag()), ":", exact_repr(a.constant));
      } else if (a.kind == NodeArgument::Kind::Value) {
        key += str_cat("|v", id_of(a.value));
      } else {
        key += "|l";
        for (int id : a.values) key += str_cat(",", id < 0 ? -1 : id_of(id));
      }
    }
    const auto [it, fresh] = seen.emplace(key, step.node);
    if (fresh) continue;
    const Node& first = nodes[it->second];
    if (first.outputs.size() != n.outputs.size()) continue;
    step.same_as = it->second;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] >= 0 && first.outputs[k] >= 0) merged[n.outputs[k]] = first.outputs[k];
    }
    ++plan.removed;
  }
  // DCE, from the end: a pure node none of whose results is read later goes.
  absl::flat_hash_set<int> used(g.outputs().begin(), g.outputs().end());
  std::vector<FusionStep> kept;
  for (auto it = plan.steps.rbegin(); it != plan.steps.rend(); ++it) {
    if (it->group >= 0) {
      const FusedGroup& group = plan.groups[it->group];
      used.insert(group.inputs.begin(), group.inputs.end());
      kept.push_back(*it);
      continue;
    }
    const Node& n = nodes[it->node];
    const bool read = std::any_of(n.outputs.begin(), n.outputs.end(),
                                  [&](int id) { return id >= 0 && used.contains(id); });
    if (!read && pure(g, n)) {
      if (it->same_as < 0) ++plan.removed;  // a merged one was counted already
      continue;
    }
    if (it->same_as >= 0) {
      for (int id : nodes[it->same_as].outputs) used.insert(id);
    } else {
      for (const NodeArgument& a : n.arguments) {
        if (a.kind == NodeArgument::Kind::Value) used.insert(a.value);
        used.insert(a.values.begin(), a.values.end());
      }
    }
    kept.push_back(*it);
  }
  plan.steps.assign(kept.rbegin(), kept.rend());
}

/// Constant folding over plan's node steps (see plan_fusion): marks the steps whose results
/// depend on no input and no captured tensor.
void fold_constants(const Graph& g, FusionPlan& plan) {
  const auto& nodes = g.nodes();
  for (const Node& n : nodes) {
    if (n.op.has_schema() && n.op.schema().is_mutable()) return;
  }
  absl::flat_hash_set<int> constant;  // values made by folded steps
  auto all_constant = [&](const Node& n) {
    for (const NodeArgument& a : n.arguments) {
      if (a.kind == NodeArgument::Kind::Value && a.value >= 0 && !constant.contains(a.value)) {
        return false;
      }
      for (int id : a.values) {
        if (id >= 0 && !constant.contains(id)) return false;
      }
    }
    return true;
  };
  for (FusionStep& step : plan.steps) {
    if (step.node < 0 || step.same_as >= 0) continue;
    const Node& n = nodes[step.node];
    if (!pure(g, n) || returns_view(n) || !all_constant(n)) continue;
    step.folded = true;
    for (int id : n.outputs) {
      if (id >= 0) constant.insert(id);
    }
  }
  // A kept tensor must not reach the caller: not returned, not read by a view (nor by a
  // merged step, which hands the same tensor on).
  absl::flat_hash_set<int> escapes(g.outputs().begin(), g.outputs().end());
  for (const FusionStep& step : plan.steps) {
    if (step.node < 0 || step.folded) continue;
    const Node& n = nodes[step.node];
    if (step.same_as < 0 && !returns_view(n)) continue;
    for (const NodeArgument& a : n.arguments) {
      if (a.kind == NodeArgument::Kind::Value) escapes.insert(a.value);
      escapes.insert(a.values.begin(), a.values.end());
    }
    if (step.same_as >= 0) {
      for (int id : nodes[step.same_as].outputs) escapes.insert(id);
    }
  }
  for (FusionStep& step : plan.steps) {
    if (!step.folded) continue;
    for (int id : nodes[step.node].outputs) step.folded = step.folded && !escapes.contains(id);
    if (step.folded) ++plan.folded;
  }
}

}  // namespace

FusionPlan plan_fusion(const Graph& g) {
  FusionPlan plan;
  const auto& nodes = g.nodes();
  // Where each value is read: the index of its last reading node, or nodes.size() for a graph
  // output.
  std::vector<int> last_use(g.values().size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const NodeArgument& a : nodes[i].arguments) {
      if (a.kind == NodeArgument::Kind::Value && a.value >= 0) last_use[a.value] = i;
      for (int id : a.values) {
        if (id >= 0) last_use[id] = i;
      }
    }
  }
  for (int id : g.outputs()) {
    if (id >= 0) last_use[id] = static_cast<int>(nodes.size());
  }

  // The run gathered so far: nodes over one shape S (sizes of its first full-size value), and,
  // with reductions over S's last dim, the row values they make (S with the last size 1, or
  // without the last dim) and the pointwise nodes over those (Note [Row groups]).
  std::vector<int> run;
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
  bool reduces = false;                    // it holds a reduction
  absl::flat_hash_set<int> rows;           // the run's row values
  auto sizes_of = [&](int id) { return g.values()[id].meta.sizes(); };
  auto flush = [&] {
    if (run.size() < 2) {
      for (int i : run) plan.steps.push_back({i, -1});
      run.clear();
      rows.clear();
      reduces = false;
      return;
    }
    FusedGroup group;
    group.nodes = run;
    for (int i : run) {
      if (dropout_keep(nodes[i])) group.dropouts.push_back(i);
    }
    group.sizes = shape;
    group.dtype = dtype;
    group.reduces = reduces;
    absl::flat_hash_set<int> inside, seen;
    for (int i : run) {
      for (int id : tensor_operands(nodes[i])) {
        if (!inside.contains(id) && seen.insert(id).second) group.inputs.push_back(id);
      }
      inside.insert(nodes[i].outputs[0]);
    }
    // Autograd records the group's ops where one of its inputs requires grad: its backward
    // loop computes those inputs' gradients.
    for (int id : group.inputs) {
      const bool wants = nodes[run.front()].grad_enabled && g.values()[id].requires_grad;
      group.input_grads.push_back(wants);
      group.backward = group.backward || wants;
    }
    for (int i : run) {
      const int id = nodes[i].outputs[0];
      if (last_use[id] > run.back()) group.outputs.push_back(id);
    }
    // Note [Column gradients]: an input broadcast over every dim but the last (a bias, a norm's
    // weight) gets its gradient summed over the rows inside the backward loop, instead of a
    // full-size gradient the engine then sums.
    const bool no_empty = std::find(shape.begin(), shape.end(), 0) == shape.end();
    for (size_t k = 0; k < group.inputs.size(); ++k) {
      const Tensor& m = g.values()[group.inputs[k]].meta;
      bool column = group.input_grads[k] && no_empty && shape.size() >= 2 && m.dim() >= 1 &&
                    m.size(m.dim() - 1) == shape.back() && shape.back() >= 2;
      for (int64_t d = 0; column && d + 1 < m.dim(); ++d) column = m.size(d) == 1;
      group.column_grads.push_back(column);
    }
    // The input gradients' layout: the first full-size output's, else contiguous.
    for (int id : group.outputs) {
      if (!group.grad_layout.defined() && sizes_of(id) == IntArrayRef(shape)) {
        group.grad_layout = g.values()[id].meta;
      }
    }
    if (!group.grad_layout.defined()) {
      group.grad_layout = Tensor::empty(shape, TensorOptions{dtype, Device(DeviceType::meta())});
    }
    if (!group.outputs.empty()) {
      plan.steps.push_back({-1, static_cast<int>(plan.groups.size())});
      plan.groups.push_back(std::move(group));
    } else if (!group.dropouts.empty()) {
      // Nothing reads what it makes, but its dropouts draw: they run, in order, as eager.
      for (int i : run) plan.steps.push_back({i, -1});
    }  // else dead code
    run.clear();
    rows.clear();
    reduces = false;
  };
  // Whether node n (pointwise or a row reduction) can join the run as it stands.
  auto joins = [&](const Node& n, bool is_reduction) {
    // A group runs under one grad mode: the mode its ops were captured under (a function may
    // turn grad off for some of them).
    if (n.grad_enabled != nodes[run.front()].grad_enabled) return false;
    const int out = n.outputs[0];
    if (g.values()[out].meta.dtype() != dtype) return false;
    if (is_reduction) {
      const int in = tensor_operands(n)[0];
      return sizes_of(in) == IntArrayRef(shape) && !rows.contains(in);
    }
    const std::vector<int> ops = tensor_operands(n);
    if (sizes_of(out) == IntArrayRef(shape)) {
      // Full size: a row value broadcasts along the last dim only in its keepdim form.
      return std::all_of(ops.begin(), ops.end(), [&](int id) {
        return !rows.contains(id) || sizes_of(id) == IntArrayRef(row_sizes(shape));
      });
    }
    // A row value made from row values only (constants aside).
    return reduces && sizes_of(out) == IntArrayRef(row_sizes(shape)) &&
           std::all_of(ops.begin(), ops.end(), [&](int id) {
             return rows.contains(id) && sizes_of(id) == IntArrayRef(row_sizes(shape));
           });
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    const bool is_reduction = row_reduction(g, n).has_value();
    if (!is_reduction && !fusible(g, n)) {
      flush();
      plan.steps.push_back({static_cast<int>(i), -1});
      continue;
    }
    if (!run.empty() && !joins(n, is_reduction)) flush();
    if (run.empty()) {
      const int full = is_reduction ? tensor_operands(n)[0] : n.outputs[0];
      shape.assign(sizes_of(full).begin(), sizes_of(full).end());
      dtype = g.values()[n.outputs[0]].meta.dtype();
    }
    run.push_back(static_cast<int>(i));
    const bool row_value =
        is_reduction || (reduces && sizes_of(n.outputs[0]) != IntArrayRef(shape));
    if (row_value) rows.insert(n.outputs[0]);
    reduces = reduces || is_reduction;
  }
  flush();
  eliminate_nodes(g, plan);
  fold_constants(g, plan);
  return plan;
}

namespace {

/// One loop dimension after coalescing: its size and each operand's stride in elements.
struct LoopDim {
  int64_t size;
  std::vector<int64_t> strides;
};

/// The loop nest over sizes for operands (meta tensors that broadcast to sizes): size-1 dims
/// dropped, a broadcast operand's stride 0, and neighbouring dims merged where every operand
/// steps through them as through one.
std::vector<LoopDim> loop_dims(const std::vector<int64_t>& sizes,
                               const std::vector<const Tensor*>& operands) {
  const size_t rank = sizes.size();
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) {
    return {{0, std::vector<int64_t>(operands.size(), 0)}};  // no elements: one empty loop
  }
  std::vector<LoopDim> dims;
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] == 1) continue;
    LoopDim dim{sizes[d], {}};
    for (const Tensor* m : operands) {
      const int64_t lead = static_cast<int64_t>(rank) - m->dim();
      const int64_t md = static_cast<int64_t>(d) - lead;
      dim.strides.push_back(md < 0 || m->size(md) == 1 ? 0 : m->stride(md));
    }
    dims.push_back(std::move(dim));
  }
  // The first operand's layout orders the loops (eager's outputs follow their inputs'
  // layout): its smallest stride innermost, so the inner loop is contiguous for a transposed
  // input too.
  std::stable_sort(dims.begin(), dims.end(),
                   [](const LoopDim& a, const LoopDim& b) { return a.strides[0] > b.strides[0]; });
  std::vector<LoopDim> merged;
  for (LoopDim& dim : dims) {
    if (!merged.empty()) {
      LoopDim& outer = merged.back();
      bool merge = true;
      for (size_t k = 0; k < dim.strides.size(); ++k) {
        merge = merge && outer.strides[k] == dim.strides[k] * dim.size;
      }
      if (merge) {
        outer.size *= dim.size;
        outer.strides = dim.strides;
        continue;
      }
    }
    merged.push_back(std::move(dim));
  }
  if (merged.empty()) merged.push_back({1, std::vector<int64_t>(operands.size(), 0)});
  return merged;
}

/// `base + j * stride` without the zero terms.
std::string index_expr(const std::string& base, int64_t stride) {
  if (stride == 0) return base.empty() ? "0" : base;
  const std::string step = stride == 1 ? "j" : str_cat("j * ", stride);
  return base.empty() ? step : str_cat(base, " + ", step);
}

/// One generated loop: `extern "C" void <name>(char* const* p, int threads)` over sizes, with
/// p holding the operands' data pointers (the first `written` are stored to, the rest read).
/// body(ref) returns the loop body, given each operand's element as an lvalue expression.
/// With seeds (the variables of dropout seeds, in order), p's next pointer holds their values
/// (uint64), and ref has one more entry: the element's row-major position in sizes.
void emit_loop(const std::string& name, const std::string& comment, DType dtype,
               const std::vector<int64_t>& sizes, const std::vector<const Tensor*>& operands,
               size_t written,
               const std::function<std::string(const std::vector<std::string>&)>& body_of,
               std::string& out, const std::vector<std::string>& seeds = {}) {
  const char* T = dtype == DType::Float64 ? "double" : "float";
  // The position is one more operand for the loop nest: a contiguous one, with no pointer.
  std::vector<const Tensor*> all = operands;
  const Tensor position =
      Tensor::empty(sizes, TensorOptions{DType::Int64, Device(DeviceType::meta())});
  if (!seeds.empty()) all.push_back(&position);
  const std::vector<LoopDim> dims = loop_dims(sizes, all);
  std::vector<std::string> ptr;  // operand k's pointer name
  for (size_t k = 0; k < operands.size(); ++k) ptr.push_back(str_cat("p", k));

  out += str_cat("\n// ", name, ":", comment, "\nstatic inline void ", name,
                 "_range(int64_t lo, int64_t hi");
  for (size_t k = 0; k < ptr.size(); ++k) {
    out += str_cat(", ", k < written ? "" : "const ", T, "* __restrict ", ptr[k]);
  }
  if (!seeds.empty()) out += ", const uint64_t* __restrict seeds";
  out += ") {\n";
  for (size_t k = 0; k < seeds.size(); ++k) {
    out += str_cat("  const uint64_t ", seeds[k], " = seeds[", k, "];\n");
  }

  const LoopDim& inner = dims.back();
  std::vector<std::string> ref;
  for (size_t k = 0; k < all.size(); ++k) {
    const std::string at = index_expr("b" + std::to_string(k), inner.strides[k]);
    ref.push_back(k < ptr.size() ? str_cat(ptr[k], "[", at, "]") : str_cat("(", at, ")"));
  }
  const std::string body = body_of(ref);

  // std::abs and std::sqrt vectorise; other library calls do not.
  const bool calls_libm = absl::StrContains(
      absl::StrReplaceAll(body, {{"std::abs(", ""}, {"std::sqrt(", ""}}), "std::");
  const char* simd = calls_libm ? "" : "#pragma omp simd\n";
  if (dims.size() == 1) {
    // One flat loop: [lo, hi) are elements.
    for (size_t k = 0; k < all.size(); ++k) out += str_cat("  const int64_t b", k, " = 0;\n");
    out += str_cat(simd, "  for (int64_t j = lo; j < hi; ++j) {\n");
  } else {
    // [lo, hi) are rows: the outer dims flattened; each row's start from its index.
    out += "  for (int64_t row = lo; row < hi; ++row) {\n    int64_t r = row;\n";
    for (size_t k = 0; k < all.size(); ++k) out += str_cat("    int64_t b", k, " = 0;\n");
    for (size_t d = dims.size() - 1; d-- > 0;) {
      out += str_cat(
          "    {\n      const int64_t q = ", d == 0 ? "r" : str_cat("r % ", dims[d].size), ";\n");
      if (d > 0) out += str_cat("      r /= ", dims[d].size, ";\n");
      for (size_t k = 0; k < all.size(); ++k) {
        if (dims[d].strides[k] != 0)
          out += str_cat("      b", k, " += q * ", dims[d].strides[k], ";\n");
      }
      out += "    }\n";
    }
    out += str_cat(simd, "    for (int64_t j = 0; j < ", inner.size, "; ++j) {\n");
  }
  out += body;
  out += dims.size() == 1 ? "  }\n}\n" : "    }\n  }\n}\n";

  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const int64_t n = dims.size() == 1 ? dims[0].size : numel / inner.size;
  out += str_cat("extern \"C\" void ", name, "(char* const* p, int threads) {\n");
  std::string args;
  for (size_t k = 0; k < ptr.size(); ++k) {
    const char* c = k < written ? "" : "const ";
    out += str_cat("  ", c, T, "* ", ptr[k], " = reinterpret_cast<", c, T, "*>(p[", k, "]);\n");
    args += str_cat(", ", ptr[k]);
  }
  if (!seeds.empty()) {
    out += str_cat("  const uint64_t* seeds = reinterpret_cast<const uint64_t*>(p[", ptr.size(),
                   "]);\n");
    args += ", seeds";
  }
  // Note [Fused loops and threads]: as eager's engines, one contiguous range per thread, and
  // no parallel region below 32768 elements (entering one costs more than the work).
  out += str_cat("  const int64_t n = ", n, ";\n");
  out += str_cat("  if (threads > 1 && ", numel, " >= 32768) {\n");
  out += "#pragma omp parallel num_threads(threads)\n  {\n";
  out += "    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();\n";
  out += str_cat("    ", name, "_range(n * t / nt, n * (t + 1) / nt", args, ");\n  }\n");
  out += str_cat("  } else {\n    ", name, "_range(0, n", args, ");\n  }\n}\n");
}

std::string var(int id) { return str_cat("v", id); }

/// Loads of the group's inputs (their elements in ref, from position first) and its nodes'
/// values, one register each.
std::string forward_body(const Graph& g, const FusedGroup& group,
                         const std::vector<std::string>& ref, size_t first,
                         const std::string& index = "") {
  const char* T = group.dtype == DType::Float64 ? "double" : "float";
  std::string body;
  for (size_t k = 0; k < group.inputs.size(); ++k) {
    body += str_cat("      const ", T, " ", var(group.inputs[k]), " = ", ref[first + k], ";\n");
  }
  for (int i : group.nodes) {
    const Node& n = g.nodes()[i];
    std::vector<std::string> names;
    for (int id : tensor_operands(n)) names.push_back(var(id));
    body += str_cat("      const ", T, " ", var(n.outputs[0]), " = ",
                    *formula(n, names, group.dtype, index), ";\n");
  }
  return body;
}

void emit_row_backward(const Graph& g, const FusedGroup& group, int index, std::string& out);

/// The seed variables of group's dropout nodes, in order (FusedGroup::dropouts).
std::vector<std::string> seed_vars(const Graph& g, const FusedGroup& group) {
  std::vector<std::string> out;
  for (int i : group.dropouts) out.push_back(seed_var(g.nodes()[i]));
  return out;
}

void emit_group(const Graph& g, const FusedGroup& group, int index, std::string& out) {
  std::string comment;
  for (int i : group.nodes) comment += str_cat(" ", g.nodes()[i].op.name());
  const std::string name = str_cat("loom_group_", index);
  const size_t no = group.outputs.size(), ni = group.inputs.size();
  auto meta = [&](int id) { return &g.values()[id].meta; };

  // Forward: p = outputs, inputs.
  std::vector<const Tensor*> operands;
  for (int id : group.outputs) operands.push_back(meta(id));
  for (int id : group.inputs) operands.push_back(meta(id));
  const std::vector<std::string> seeds = seed_vars(g, group);
  emit_loop(
      name, comment, group.dtype, group.sizes, operands, no,
      [&](const std::vector<std::string>& ref) {
        std::string body = forward_body(g, group, ref, no, seeds.empty() ? "" : ref.back());
        for (size_t k = 0; k < no; ++k) {
          body += str_cat("      ", ref[k], " = ", var(group.outputs[k]), ";\n");
        }
        return body;
      },
      out, seeds);
  if (!group.backward) return;
  if (std::find(group.column_grads.begin(), group.column_grads.end(), true) !=
      group.column_grads.end()) {
    emit_row_backward(g, group, index, out);  // sums a broadcast input's gradient in the loop
    return;
  }

  // Backward: p = the input gradients it computes, inputs, output gradients. It recomputes
  // the values, then walks the nodes in reverse, adding each node's derivative times its
  // output's gradient into its operands' gradients (g<id>), for the operands that lead back
  // to an input that requires grad.
  std::vector<size_t> grad_inputs;  // positions in group.inputs
  for (size_t k = 0; k < ni; ++k) {
    if (group.input_grads[k]) grad_inputs.push_back(k);
  }
  operands.clear();
  for (size_t k = 0; k < grad_inputs.size(); ++k) operands.push_back(&group.grad_layout);
  for (int id : group.inputs) operands.push_back(meta(id));
  for (int id : group.outputs) operands.push_back(meta(id));
  const size_t nw = grad_inputs.size();
  emit_loop(
      name + "_backward", comment, group.dtype, group.sizes, operands, nw,
      [&](const std::vector<std::string>& ref) {
        const char* T = group.dtype == DType::Float64 ? "double" : "float";
        const std::string position = seeds.empty() ? "" : ref.back();
        std::string body = forward_body(g, group, ref, nw, position);
        absl::flat_hash_set<int> needs, has_grad;  // leads to a gradient; has one
        for (size_t k = 0; k < ni; ++k) {
          if (group.input_grads[k]) needs.insert(group.inputs[k]);
        }
        for (int i : group.nodes) {
          for (int id : tensor_operands(g.nodes()[i])) {
            if (needs.contains(id)) needs.insert(g.nodes()[i].outputs[0]);
          }
        }
        auto grad = [](int id) { return str_cat("g", id); };
        for (size_t k = 0; k < no; ++k) {
          body += str_cat("      ", T, " ", grad(group.outputs[k]), " = ", ref[nw + ni + k], ";\n");
          has_grad.insert(group.outputs[k]);
        }
        for (auto it = group.nodes.rbegin(); it != group.nodes.rend(); ++it) {
          const Node& n = g.nodes()[*it];
          const int o = n.outputs[0];
          if (!has_grad.contains(o) || !needs.contains(o)) continue;
          const std::vector<int> ids = tensor_operands(n);
          std::vector<std::string> names;
          for (int id : ids) names.push_back(var(id));
          const std::vector<std::string> d =
              derivative(n, names, var(o), grad(o), group.dtype, str_cat("d", o), body, position);
          for (size_t j = 0; j < ids.size(); ++j) {
            if (!needs.contains(ids[j])) continue;
            if (has_grad.insert(ids[j]).second) {
              body += str_cat("      ", T, " ", grad(ids[j]), " = ", d[j], ";\n");
            } else {
              body += str_cat("      ", grad(ids[j]), " = ", grad(ids[j]), " + ", d[j], ";\n");
            }
          }
        }
        for (size_t k = 0; k < nw; ++k) {
          const int id = group.inputs[grad_inputs[k]];
          body += str_cat("      ", ref[k], " = ",
                          has_grad.contains(id) ? grad(id) : str_cat(T, "(0)"), ";\n");
        }
        return body;
      },
      out, seeds);
}

// Note [Row groups]: a group with reductions over the last dim of its shape S (sum, mean,
// amax; softmax, layer_norm and RMS norm written out of them) runs one row at a time: a row's
// elements are read in one or more passes over j, each pass computing the full-size values it
// needs from the inputs (recomputing cheap ones rather than storing them, Note [Row buffers]:
// a row of a few thousand elements stays in the L1/L2 cache) and accumulating the reductions whose
// inputs are ready; between passes, the row values (reductions and pointwise ops on them) are
// registers. A value is computed in the first pass that has what it reads; a full-size output is
// stored there. The forward loop and the backward loop are both such row programs (RowProgram): the
// backward one recomputes the forward values, then adds the derivatives in reverse, where a
// row value read by full-size ops gets the sum over the row of its contributions.

// Note [Row buffers]: recomputing a full-size value in a later pass costs what its
// expression costs; reading it back costs one load from a row that stays in L1. A value
// whose own code calls a function (exp, erf, tanh, libm) or divides, and that a later pass
// needs, is stored into a per-thread row buffer by the first pass that computes it, and the
// later passes read it there. Written-out softmax computes exp once per element instead of
// twice (3.0 -> 1.4 ms forward at 4096x1024); a subtraction or a product is still recomputed.

/// One value of a row program.
struct RowItem {
  bool row = false;  ///< one value per row; else one per element of the row
  int load = -1;     ///< loads operand `load` (-1: computed)
  int source = -1;   ///< a reduction of item `source` (a full-size item), by `reduce`
  Reduce reduce = Reduce::Sum;
  std::string stmts;        ///< statements before it (temporaries of a derivative)
  std::string expr;         ///< a computed value's expression, over items' names
  std::vector<int> deps;    ///< the items it reads
  std::vector<int> stores;  ///< operands it is stored to
};

/// A row program: its operands (meta tensors; the first `written` are stored to; row
/// operands hold one value per row) and its items, each after the items it reads.
struct RowProgram {
  std::vector<const Tensor*> operands;
  std::vector<bool> row_operand;
  /// Per operand: a column sum (Note [Column gradients]): stores add into it over all rows.
  std::vector<bool> column;
  size_t written = 0;
  std::vector<RowItem> items;
  /// The dropout seeds' variables, in order: the program's function reads their values from
  /// the pointer after the operands'.
  std::vector<std::string> seeds;

  std::string name(int k) const { return str_cat("x", k); }
  int add(RowItem item) {
    items.push_back(std::move(item));
    return static_cast<int>(items.size()) - 1;
  }
  int load(size_t operand, bool row) {
    RowItem it;
    it.row = row;
    it.load = static_cast<int>(operand);
    return add(std::move(it));
  }
  int compute(std::string expr, std::vector<int> deps, std::string stmts = "") {
    RowItem it;
    it.row =
        std::all_of(deps.begin(), deps.end(), [&](int d) { return items[d].row; }) && !deps.empty();
    it.expr = std::move(expr);
    it.deps = std::move(deps);
    it.stmts = std::move(stmts);
    return add(std::move(it));
  }
  int reduction(Reduce r, int source) {
    RowItem it;
    it.row = true;
    it.reduce = r;
    it.source = source;
    it.deps = {source};
    return add(std::move(it));
  }
};

/// True if code reads the variable called name (a whole identifier, not a part of one).
bool mentions(std::string_view code, std::string_view name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = code.find(name); at != std::string_view::npos; at = code.find(name, at + 1)) {
    const size_t end = at + name.size();
    if ((at == 0 || !ident(code[at - 1])) && (end == code.size() || !ident(code[end]))) {
      return true;
    }
  }
  return false;
}

/// The code of program p over rows of shape S: `extern "C" void <name>(char* const* p, int
/// threads)` with the operands' data pointers in p.
void emit_row_program(const std::string& name, const std::string& comment, DType dtype,
                      const std::vector<int64_t>& S, const RowProgram& p, std::string& out) {
  const char* T = dtype == DType::Float64 ? "double" : "float";
  const int64_t rank = static_cast<int64_t>(S.size()), N = S.back();
  const size_t nops = p.operands.size(), n_items = p.items.size();

  // Levels: the pass a full item is computed in first; for a row item, the passes before it
  // is ready (0: at the row's start).
  std::vector<int> level(n_items, 0);
  int passes = 1;
  for (size_t k = 0; k < n_items; ++k) {
    const RowItem& it = p.items[k];
    int at = 0;
    for (int d : it.deps) at = std::max(at, level[d]);
    level[k] = it.source >= 0 ? at + 1 : at;
    if (it.source >= 0) passes = std::max(passes, level[k]);
    if (!it.row && !it.stores.empty()) passes = std::max(passes, level[k] + 1);
  }

  // Each operand's strides over the leading dims, and its stride along the last.
  std::vector<std::vector<int64_t>> lead(nops, std::vector<int64_t>(rank - 1, 0));
  std::vector<int64_t> inner(nops, 0);
  for (size_t k = 0; k < nops; ++k) {
    const Tensor& m = *p.operands[k];
    // A row operand's dims are S's leading dims in order (keepdim or not); a full-size one
    // broadcasts to S from the right.
    const int64_t shift = p.row_operand[k] ? 0 : rank - m.dim();
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t md = d - shift;
      if (md < 0 || md >= m.dim() || m.size(md) == 1) continue;
      if (d < rank - 1) {
        lead[k][d] = m.stride(md);
      } else if (!p.row_operand[k]) {
        inner[k] = m.stride(md);
      }
    }
  }
  auto ref = [&](size_t k) {
    return str_cat(
        "p", k, "[",
        p.row_operand[k] ? str_cat("b", k) : index_expr("b" + std::to_string(k), inner[k]), "]");
  };
  // Which full-size items each pass computes, and which are kept in a row buffer (Note [Row
  // buffers]): walking a pass's items from the last, a wanted item that an earlier pass
  // computed and whose computation is costly is read from its buffer, and what it reads is
  // not wanted for it.
  auto costly = [&](size_t k) {
    const RowItem& it = p.items[k];
    const std::string code = it.stmts + it.expr;
    return !it.row && it.load < 0 && it.source < 0 &&
           (absl::StrContains(code, "loom_") || absl::StrContains(code, "std::") ||
            absl::StrContains(code, " / "));
  };
  std::vector<int> first_pass(n_items, -1);  // the pass that computes a full item first
  std::vector<bool> buffered(n_items, false);
  std::vector<std::vector<bool>> wanted_in(passes, std::vector<bool>(n_items, false));
  std::vector<std::vector<size_t>> reductions_in(passes);
  for (int pass = 0; pass < passes; ++pass) {
    // The sources of this pass's reductions and the full-size items it stores, with the
    // full-size items they read.
    std::vector<bool>& wanted = wanted_in[pass];
    for (size_t k = n_items; k-- > 0;) {
      const RowItem& it = p.items[k];
      const bool root = (it.source >= 0 && level[k] == pass + 1) ||
                        (!it.row && !it.stores.empty() && level[k] == pass);
      if (it.source >= 0 && level[k] == pass + 1) reductions_in[pass].push_back(k);
      if (!root && !(wanted[k] && !it.row)) continue;
      if (!it.row) wanted[k] = true;
      if (!it.row && first_pass[k] >= 0 && first_pass[k] < pass && costly(k)) {
        buffered[k] = true;
        continue;
      }
      for (int d : it.deps) {
        // A derivative's deps list its op's operands and result; the ones its code does not
        // read need not be computed for it.
        if (!p.items[d].row && (it.source >= 0 || mentions(it.stmts + it.expr, p.name(d)))) {
          wanted[d] = true;
        }
      }
    }
    std::reverse(reductions_in[pass].begin(), reductions_in[pass].end());
    for (size_t k = 0; k < n_items; ++k) {
      if (wanted[k] && first_pass[k] < 0) first_pass[k] = pass;
    }
  }
  // A computed or loaded item's definition in pass `pass` (-1: a row value).
  auto define = [&](size_t k, const char* indent, int pass = -1) {
    const RowItem& it = p.items[k];
    const std::string x = p.name(static_cast<int>(k));
    if (buffered[k] && pass > first_pass[k]) {
      return str_cat(indent, "const ", T, " ", x, " = r", k, "[j];\n");
    }
    std::string d = str_cat(it.stmts, indent, "const ", T, " ", x, " = ",
                            it.load >= 0 ? ref(static_cast<size_t>(it.load)) : it.expr, ";\n");
    if (buffered[k]) d += str_cat(indent, "r", k, "[j] = ", x, ";\n");
    return d;
  };
  const bool has_columns = std::find(p.column.begin(), p.column.end(), true) != p.column.end();
  auto stores = [&](size_t k, const char* indent) {
    std::string s;
    for (int o : p.items[k].stores) {
      if (has_columns && p.column[o]) {
        s += str_cat(indent, "c", o, "[j] += ", p.name(static_cast<int>(k)), ";\n");
      } else {
        s +=
            str_cat(indent, ref(static_cast<size_t>(o)), " = ", p.name(static_cast<int>(k)), ";\n");
      }
    }
    return s;
  };
  // Column accumulators are double (float32 sums over thousands of rows lose digits).
  std::string column_params;
  for (size_t k = 0; k < nops; ++k) {
    if (has_columns && p.column[k]) column_params += str_cat(", double* __restrict c", k);
  }

  out += str_cat("\n// ", name, " (rows of ", N, "):", comment, "\nstatic inline void ", name,
                 "_range(int64_t lo, int64_t hi");
  for (size_t k = 0; k < nops; ++k) {
    out += str_cat(", ", k < p.written ? "" : "const ", T, "* __restrict p", k);
  }
  out +=
      str_cat(p.seeds.empty() ? "" : ", const uint64_t* __restrict seeds", column_params, ") {\n");
  for (size_t k = 0; k < p.seeds.size(); ++k) {
    out += str_cat("  const uint64_t ", p.seeds[k], " = seeds[", k, "];\n");
  }
  // Row buffers: on the stack up to 16 KiB in all (a caller's thread may have a small stack),
  // else on the heap, once per range.
  const size_t n_buffered = static_cast<size_t>(std::count(buffered.begin(), buffered.end(), true));
  const bool on_stack =
      n_buffered * static_cast<size_t>(N) * (dtype == DType::Float64 ? 8 : 4) <= size_t{16} << 10;
  if (n_buffered > 0 && !on_stack) {
    out += str_cat("  std::vector<", T, "> rows(", n_buffered * static_cast<size_t>(N), ");\n");
  }
  for (size_t k = 0, at = 0; k < n_items; ++k) {
    if (!buffered[k]) continue;
    out += on_stack ? str_cat("  alignas(64) ", T, " r", k, "[", N, "];\n")
                    : str_cat("  ", T, "* __restrict r", k, " = rows.data() + ", at * N, ";\n");
    ++at;
  }
  out += "  for (int64_t row = lo; row < hi; ++row) {\n    int64_t r = row;\n";
  for (size_t k = 0; k < nops; ++k) out += str_cat("    int64_t b", k, " = 0;\n");
  for (int64_t d = rank - 2; d >= 0; --d) {
    if (S[d] == 1) continue;
    out += str_cat("    {\n      const int64_t q = r % ", S[d], ";\n      r /= ", S[d], ";\n");
    for (size_t k = 0; k < nops; ++k) {
      if (lead[k][d] != 0) out += str_cat("      b", k, " += q * ", lead[k][d], ";\n");
    }
    out += "    }\n";
  }
  // Row values ready at the row's start (row loads, and what is made of them alone).
  for (size_t k = 0; k < n_items; ++k) {
    if (p.items[k].row && level[k] == 0) out += define(k, "    ") + stores(k, "    ");
  }
  for (int pass = 0; pass < passes; ++pass) {
    const std::vector<bool>& wanted = wanted_in[pass];
    const std::vector<size_t>& reductions = reductions_in[pass];
    std::string body, init, finish;
    std::vector<std::string> sums, maxes, nans;
    for (size_t k = 0; k < n_items; ++k) {
      if (!wanted[k]) continue;
      body += define(k, "      ", pass);
      if (level[k] == pass) body += stores(k, "      ");
    }
    for (size_t k : reductions) {
      const RowItem& it = p.items[k];
      const std::string a = str_cat("a", k), x = p.name(it.source), v = p.name(static_cast<int>(k));
      if (it.reduce == Reduce::Amax) {
        // A NaN anywhere in the row is the result, as eager's amax (a max reduction alone
        // would drop it).
        init += str_cat("    ", T, " ", a, " = -std::numeric_limits<", T,
                        ">::infinity();\n    int n", k, " = 0;\n");
        body += str_cat("      ", a, " = ", a, " > ", x, " ? ", a, " : ", x, ";\n      n", k,
                        " |= ", x, " != ", x, ";\n");
        finish += str_cat("    const ", T, " ", v, " = n", k, " ? std::numeric_limits<", T,
                          ">::quiet_NaN() : ", a, ";\n");
        maxes.push_back(a);
        nans.push_back(str_cat("n", k));
      } else {
        init += str_cat("    ", T, " ", a, " = 0;\n");
        body += str_cat("      ", a, " += ", x, ";\n");
        finish += str_cat("    const ", T, " ", v, " = ",
                          it.reduce == Reduce::Mean ? str_cat(a, " / ", T, "(", N, ")") : a, ";\n");
        sums.push_back(a);
      }
      finish += stores(k, "    ");
    }
    auto clause = [](const char* op, const std::vector<std::string>& vars) {
      if (vars.empty()) return std::string();
      std::string c = str_cat(" reduction(", op, ":");
      for (size_t k = 0; k < vars.size(); ++k) c += str_cat(k ? ", " : "", vars[k]);
      return c + ")";
    };
    const bool calls_libm = absl::StrContains(
        absl::StrReplaceAll(body, {{"std::abs(", ""}, {"std::sqrt(", ""}}), "std::");
    const std::string simd = calls_libm ? ""
                                        : str_cat("#pragma omp simd", clause("+", sums),
                                                  clause("max", maxes), clause("|", nans), "\n");
    // Row values are declared in the row's scope: later passes read them.
    out += str_cat("    // pass ", pass, "\n", init, simd, "    for (int64_t j = 0; j < ", N,
                   "; ++j) {\n", body, "    }\n", finish);
    // The other row values ready after this pass.
    for (size_t k = 0; k < n_items; ++k) {
      const RowItem& it = p.items[k];
      if (it.row && it.source < 0 && level[k] == pass + 1) {
        out += define(k, "    ") + stores(k, "    ");
      }
    }
  }
  out += "  }\n}\n";

  // Note [Fused loops and threads]: one contiguous range of rows per thread.
  int64_t numel = 1;
  for (int64_t s : S) numel *= s;
  std::string args;
  out += str_cat("extern \"C\" void ", name, "(char* const* p, int threads) {\n");
  for (size_t k = 0; k < nops; ++k) {
    const char* c = k < p.written ? "" : "const ";
    out += str_cat("  ", c, T, "* p", k, " = reinterpret_cast<", c, T, "*>(p[", k, "]);\n");
    args += str_cat(", p", k);
  }
  if (!p.seeds.empty()) {
    out += str_cat("  const uint64_t* seeds = reinterpret_cast<const uint64_t*>(p[", nops, "]);\n");
    args += ", seeds";
  }
  out += str_cat("  const int64_t n = ", numel / N, ";\n");
  out += str_cat("  const int nt = threads > 1 && ", numel, " >= 32768 ? threads : 1;\n");
  // Note [Column gradients]: each thread adds its rows into its own zeroed column of N
  // doubles; the columns are then summed in thread order (the same result for the same
  // thread count) into the operand.
  for (size_t k = 0; k < nops; ++k) {
    if (has_columns && p.column[k]) {
      out += str_cat("  std::vector<double> c", k, "(static_cast<size_t>(nt) * ", N, ");\n");
    }
  }
  std::string column_data;
  for (size_t k = 0; k < nops; ++k) {
    if (has_columns && p.column[k]) column_data += str_cat(", c", k, ".data() + t * ", N);
  }
  out += "  if (nt > 1) {\n#pragma omp parallel num_threads(nt)\n  {\n";
  out += "    const int64_t t = omp_get_thread_num(), m = omp_get_num_threads();\n";
  out += str_cat("    ", name, "_range(n * t / m, n * (t + 1) / m", args, column_data, ");\n  }\n");
  out += str_cat("  } else {\n    const int64_t t = 0;\n    ", name, "_range(0, n", args,
                 column_data, ");\n  }\n");
  for (size_t k = 0; k < nops; ++k) {
    if (!has_columns || !p.column[k]) continue;
    out += str_cat("  for (int64_t j = 0; j < ", N, "; ++j) {\n    double s = 0;\n",
                   "    for (int t = 0; t < nt; ++t) s += c", k, "[static_cast<size_t>(t) * ", N,
                   " + j];\n    p", k, "[", index_expr("", inner[k]), "] = ", T, "(s);\n  }\n");
  }
  out += "}\n";
}

/// Value id's element position in a row program's loops (row-major, as dropout numbers its
/// elements): the row for a row value, else the row's start plus j.
std::string row_position(const Graph& g, const FusedGroup& group, int id) {
  if (g.values()[id].meta.sizes() != IntArrayRef(group.sizes)) return "row";
  return str_cat("(row * ", group.sizes.back(), " + j)");
}

/// The forward values of a row group as items of p, the group's inputs loaded from operands
/// first_input.. on; returns each value's item.
absl::flat_hash_map<int, int> row_forward(const Graph& g, const FusedGroup& group,
                                          size_t first_input, RowProgram& p) {
  absl::flat_hash_map<int, int> item;
  for (size_t k = 0; k < group.inputs.size(); ++k) {
    item[group.inputs[k]] = p.load(first_input + k, false);
  }
  for (int i : group.nodes) {
    const Node& n = g.nodes()[i];
    std::vector<int> deps;
    std::vector<std::string> names;
    for (int id : tensor_operands(n)) {
      deps.push_back(item.at(id));
      names.push_back(p.name(item.at(id)));
    }
    if (const auto r = row_reduction(g, n)) {
      item[n.outputs[0]] = p.reduction(*r, deps[0]);
    } else {
      item[n.outputs[0]] =
          p.compute(*formula(n, names, group.dtype, row_position(g, group, n.outputs[0])), deps);
    }
  }
  return item;
}

/// Which operands of a row group are row values: its outputs that a reduction made, or a
/// pointwise op over row values.
bool is_row_value(const Graph& g, const FusedGroup& group, int id) {
  return g.values()[id].meta.sizes() != IntArrayRef(group.sizes);
}

void emit_row_group(const Graph& g, const FusedGroup& group, int index, std::string& out) {
  std::string comment;
  for (int i : group.nodes) comment += str_cat(" ", g.nodes()[i].op.name());
  const size_t no = group.outputs.size();
  const std::string name = str_cat("loom_group_", index);
  auto meta = [&](int id) { return &g.values()[id].meta; };

  // Forward: p = outputs, inputs.
  RowProgram fwd;
  fwd.seeds = seed_vars(g, group);
  for (int id : group.outputs) {
    fwd.operands.push_back(meta(id));
    fwd.row_operand.push_back(is_row_value(g, group, id));
  }
  for (int id : group.inputs) {
    fwd.operands.push_back(meta(id));
    fwd.row_operand.push_back(false);
  }
  fwd.written = no;
  {
    const absl::flat_hash_map<int, int> item = row_forward(g, group, no, fwd);
    for (size_t k = 0; k < no; ++k) fwd.items[item.at(group.outputs[k])].stores.push_back(k);
  }
  emit_row_program(name, comment, group.dtype, group.sizes, fwd, out);
  if (group.backward) emit_row_backward(g, group, index, out);
}

/// The backward loop of a group as a row program: p = the input gradients it computes (at
/// group.sizes laid out as group.grad_layout, or column sums laid out as their input:
/// group.column_grads), inputs, output gradients. The forward values again, then each node's
/// derivative in reverse.
void emit_row_backward(const Graph& g, const FusedGroup& group, int index, std::string& out) {
  std::string comment;
  for (int i : group.nodes) comment += str_cat(" ", g.nodes()[i].op.name());
  const size_t no = group.outputs.size(), ni = group.inputs.size();
  const std::string name = str_cat("loom_group_", index);
  auto meta = [&](int id) { return &g.values()[id].meta; };
  const char* T = group.dtype == DType::Float64 ? "double" : "float";
  RowProgram bwd;
  bwd.seeds = seed_vars(g, group);
  std::vector<size_t> grad_inputs;
  for (size_t k = 0; k < ni; ++k) {
    if (group.input_grads[k]) grad_inputs.push_back(k);
  }
  const size_t nw = grad_inputs.size();
  for (size_t k = 0; k < nw; ++k) {
    const bool column = group.column_grads[grad_inputs[k]];
    bwd.operands.push_back(column ? meta(group.inputs[grad_inputs[k]]) : &group.grad_layout);
    bwd.row_operand.push_back(false);
    bwd.column.push_back(column);
  }
  for (int id : group.inputs) {
    bwd.operands.push_back(meta(id));
    bwd.row_operand.push_back(false);
    bwd.column.push_back(false);
  }
  for (int id : group.outputs) {
    bwd.operands.push_back(meta(id));
    bwd.row_operand.push_back(is_row_value(g, group, id));
    bwd.column.push_back(false);
  }
  bwd.written = nw;
  const absl::flat_hash_map<int, int> item = row_forward(g, group, nw, bwd);
  absl::flat_hash_set<int> needs;  // values that lead back to an input that requires grad
  for (size_t k = 0; k < ni; ++k) {
    if (group.input_grads[k]) needs.insert(group.inputs[k]);
  }
  for (int i : group.nodes) {
    for (int id : tensor_operands(g.nodes()[i])) {
      if (needs.contains(id)) needs.insert(g.nodes()[i].outputs[0]);
    }
  }
  absl::flat_hash_map<int, std::vector<int>> contributions;  // value -> gradient items
  for (size_t k = 0; k < no; ++k) {
    const int id = group.outputs[k];
    if (needs.contains(id)) {
      contributions[id].push_back(bwd.load(nw + ni + k, is_row_value(g, group, id)));
    }
  }
  // The sum of a value's contributions (its gradient); -1 when it has none.
  auto gradient = [&](int id) {
    const std::vector<int>& c = contributions[id];
    if (c.empty()) return -1;
    if (c.size() == 1) return c[0];
    std::string e = bwd.name(c[0]);
    for (size_t k = 1; k < c.size(); ++k) e = str_cat("(", e, " + ", bwd.name(c[k]), ")");
    return bwd.compute(e, c);
  };
  for (auto it = group.nodes.rbegin(); it != group.nodes.rend(); ++it) {
    const Node& n = g.nodes()[*it];
    const int o = n.outputs[0];
    if (!needs.contains(o)) continue;
    const int go = gradient(o);
    if (go < 0) continue;
    const std::vector<int> ids = tensor_operands(n);
    const int x = item.at(ids[0]);
    if (const auto r = row_reduction(g, n)) {
      if (!needs.contains(ids[0])) continue;
      // Sum and mean: the row's gradient to each element; amax: shared among the elements
      // equal to the result (NaNs too, when it is NaN), as eager's formula.
      const std::string G = bwd.name(go), X = bwd.name(x), R = bwd.name(item.at(o));
      int c;
      if (*r == Reduce::Sum) {
        c = bwd.compute(G, {go, x});  // full-size: broadcast along the row
      } else if (*r == Reduce::Mean) {
        c = bwd.compute(str_cat(G, " / ", T, "(", group.sizes.back(), ")"), {go, x});
      } else {
        const int mask = bwd.compute(str_cat("((", X, " == ", R, " || (", X, " != ", X, " && ", R,
                                             " != ", R, ")) ? ", T, "(1) : ", T, "(0))"),
                                     {x, item.at(o)});
        const int count = bwd.reduction(Reduce::Sum, mask);
        c = bwd.compute(str_cat("(", bwd.name(mask), " * (", G, " / ", bwd.name(count), "))"),
                        {mask, go, count});
      }
      contributions[ids[0]].push_back(c);
      continue;
    }
    std::vector<int> deps;
    std::vector<std::string> names;
    for (int id : ids) {
      deps.push_back(item.at(id));
      names.push_back(bwd.name(item.at(id)));
    }
    std::string stmts;
    const std::vector<std::string> d =
        derivative(n, names, bwd.name(item.at(o)), bwd.name(go), group.dtype,
                   str_cat("d", bwd.items.size()), stmts, row_position(g, group, o));
    const bool out_row = bwd.items[item.at(o)].row;
    std::vector<int> all = deps;
    all.push_back(go);
    all.push_back(item.at(o));
    for (size_t j = 0; j < ids.size(); ++j) {
      if (!needs.contains(ids[j])) continue;
      // A full-size item (it reads the full-size operands), or a row one for a row op. The
      // derivative's temporaries are defined once, with the first contribution, which the
      // others then read.
      int c = bwd.compute(d[j], all, stmts);
      if (!stmts.empty()) {
        stmts.clear();
        all.push_back(c);
      }
      if (!out_row && bwd.items[item.at(ids[j])].row) {
        c = bwd.reduction(Reduce::Sum, c);  // a row value read by a full-size op
      }
      contributions[ids[j]].push_back(c);
    }
  }
  for (size_t k = 0; k < nw; ++k) {
    const int id = group.inputs[grad_inputs[k]];
    int gk = gradient(id);
    if (gk < 0) {
      gk = bwd.compute(str_cat(T, "(0)"), {});
    }
    bwd.items[gk].stores.push_back(static_cast<int>(k));
  }
  emit_row_program(name + "_backward", comment, group.dtype, group.sizes, bwd, out);
}

}  // namespace

std::string generate_cpp(const Graph& g, const FusionPlan& plan) {
  std::string out =
      "// Generated by loom::compile from a captured graph (docs/design/compile.md).\n"
      "#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <limits>\n"
      "#include <vector>\n#include <omp.h>\n";
  out += kPrelude;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    if (plan.groups[i].reduces) {
      emit_row_group(g, plan.groups[i], static_cast<int>(i), out);
    } else {
      emit_group(g, plan.groups[i], static_cast<int>(i), out);
    }
  }
  return out;
}

}  // namespace loom::graph
