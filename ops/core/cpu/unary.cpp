// Reference CPU kernels: unary math (neg abs sign exp ... erf), rounding, clamp, nan_to_num.
// Each op is a functor (its dtypes, its result rule, its formula) and three registrations.
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "cpu/meta.h"
#include "cpu/tensor_iterator.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/integer_math.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::ops::cpu {
namespace {

using meta::check_clamp_bounds;
using meta::check_neg;

// Floating math: integer and bool inputs compute in float32, as torch.exp(int tensor).
#define LOOM_FLOAT_UNARY(Name, name, expr)                      \
  struct Name {                                                 \
    static constexpr std::string_view kName = name;             \
    static constexpr unsigned kCats = kFloats;                  \
    static constexpr ResultRule kRule = ResultRule::IntToFloat; \
    template <typename C>                                       \
    C operator()(C x) const {                                   \
      return expr;                                              \
    }                                                           \
  }
LOOM_FLOAT_UNARY(Exp, "exp", std::exp(x));
LOOM_FLOAT_UNARY(Exp2, "exp2", std::exp2(x));
LOOM_FLOAT_UNARY(Log, "log", std::log(x));
LOOM_FLOAT_UNARY(Log2, "log2", std::log2(x));
LOOM_FLOAT_UNARY(Log1p, "log1p", std::log1p(x));
LOOM_FLOAT_UNARY(Expm1, "expm1", std::expm1(x));
LOOM_FLOAT_UNARY(Sqrt, "sqrt", std::sqrt(x));
LOOM_FLOAT_UNARY(Rsqrt, "rsqrt", C(1) / std::sqrt(x));
LOOM_FLOAT_UNARY(Reciprocal, "reciprocal", C(1) / x);
LOOM_FLOAT_UNARY(Sin, "sin", std::sin(x));
LOOM_FLOAT_UNARY(Cos, "cos", std::cos(x));
LOOM_FLOAT_UNARY(Tan, "tan", std::tan(x));
LOOM_FLOAT_UNARY(Tanh, "tanh", std::tanh(x));
LOOM_FLOAT_UNARY(Erf, "erf", std::erf(x));
#undef LOOM_FLOAT_UNARY

struct Sigmoid {
  static constexpr std::string_view kName = "sigmoid";
  static constexpr unsigned kCats = kFloats;
  static constexpr ResultRule kRule = ResultRule::IntToFloat;
  static constexpr UnaryKernel kFlat = UnaryKernel::sigmoid;  // Note [Per-ISA fast path]
  template <typename C>
  C operator()(C x) const {
    return C(1) / (C(1) + std::exp(-x));
  }
};

// Rounding keeps the dtype; on integers it is the identity, as in PyTorch.
#define LOOM_ROUNDING(Name, name, fn)                       \
  struct Name {                                             \
    static constexpr std::string_view kName = name;         \
    static constexpr unsigned kCats = kInts | kFloats;      \
    static constexpr ResultRule kRule = ResultRule::Common; \
    template <typename C>                                   \
    C operator()(C x) const {                               \
      if constexpr (std::is_floating_point_v<C>) {          \
        return fn(x);                                       \
      } else {                                              \
        return x;                                           \
      }                                                     \
    }                                                       \
  }
LOOM_ROUNDING(Floor, "floor", std::floor);
LOOM_ROUNDING(Ceil, "ceil", std::ceil);
LOOM_ROUNDING(Round, "round", std::nearbyint);  // half to even, as torch.round
LOOM_ROUNDING(Trunc, "trunc", std::trunc);
#undef LOOM_ROUNDING

struct Neg {
  static constexpr std::string_view kName = "neg";
  static constexpr unsigned kCats = kInts | kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  template <typename C>
  C operator()(C x) const {
    if constexpr (meta::WrappingInt<C>) {
      return meta::wrapping_neg(x);  // -INT_MIN is INT_MIN (Note [Wrapping integer arithmetic])
    } else {
      return -x;
    }
  }
};

struct Abs {
  static constexpr std::string_view kName = "abs";
  static constexpr unsigned kCats = kAllTypes;
  static constexpr ResultRule kRule = ResultRule::Common;
  template <typename C>
  C operator()(C x) const {
    if constexpr (meta::WrappingInt<C>) {
      return meta::wrapping_abs(x);  // abs(INT_MIN) is INT_MIN, as in PyTorch
    } else if constexpr (std::is_same_v<C, bool>) {
      return x;
    } else {
      return x < 0 ? -x : x;
    }
  }
};

struct Sign {
  static constexpr std::string_view kName = "sign";
  static constexpr unsigned kCats = kAllTypes;
  static constexpr ResultRule kRule = ResultRule::Common;
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x;
    } else {
      return static_cast<C>((C(0) < x) - (x < C(0)));
    }
  }
};

Tensor neg(const Tensor& self) {
  check_neg("neg", self);
  return unary_fn<Neg>(self);
}
Tensor& neg_(Tensor& self) {
  check_neg("neg_", self);
  return unary_inplace<Neg>(self);
}
Tensor& neg_out(const Tensor& self, Tensor& out) {
  check_neg("neg.out", self);
  return unary_out<Neg>(self, out);
}

// ---- round(decimals) -------------------------------------------------------------------------

struct RoundDecimals {
  static constexpr std::string_view kName = "round.decimals";
  static constexpr unsigned kCats = kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  double ten_pow;
  bool negative;
  template <typename C>
  C operator()(C x) const {
    const C p = static_cast<C>(ten_pow);
    return negative ? std::nearbyint(x / p) * p : std::nearbyint(x * p) / p;
  }
};
RoundDecimals round_decimals_op(int64_t decimals) {
  return {std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals)), decimals < 0};
}
Tensor round_decimals(const Tensor& self, int64_t decimals) {
  return unary_run("round.decimals", self, nullptr, false, round_decimals_op(decimals));
}
Tensor& round_decimals_(Tensor& self, int64_t decimals) {
  unary_run("round_.decimals", self, &self, true, round_decimals_op(decimals));
  return self;
}
Tensor& round_decimals_out(const Tensor& self, int64_t decimals, Tensor& out) {
  unary_run("round.decimals_out", self, &out, false, round_decimals_op(decimals));
  return out;
}

// ---- clamp -------------------------------------------------------------------------------------

template <typename C>
C clamp_value(C x, std::optional<C> lo, std::optional<C> hi) {
  if constexpr (std::is_floating_point_v<C>) {
    if (x != x) return x;  // NaN propagates, from the input or from a bound
    if (lo && *lo != *lo) return *lo;
    if (hi && *hi != *hi) return *hi;
  }
  if (lo && x < *lo) x = *lo;
  if (hi && x > *hi) x = *hi;  // min > max gives max, as PyTorch
  return x;
}

Tensor clamp_impl(std::string_view op, const Tensor& self, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max, const Tensor* out, bool inplace) {
  check_clamp_bounds(op, min.has_value(), max.has_value());
  TensorIterator it(op);
  it.add_input("self", self);
  if (min) it.add_scalar(*min);
  if (max) it.add_scalar(*max);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  dispatch_dtypes<kInts | kFloats>(op, it.common_dtype(), [&]<typename T>(T*) {
    meta::check_clamp_scalar_bounds(op, it.common_dtype(), min, max);
    using C = compute_t<T>;
    const C lo = min ? min->to<C>() : C(0), hi = max ? max->to<C>() : C(0);
    // Three loops so the common two-bound case has no optional in it.
    if (min && max) {
      it.for_each<T, T>([lo, hi](C x) { return clamp_value<C>(x, lo, hi); });
    } else if (min) {
      it.for_each<T, T>([lo](C x) { return clamp_value<C>(x, lo, std::nullopt); });
    } else {
      it.for_each<T, T>([hi](C x) { return clamp_value<C>(x, std::nullopt, hi); });
    }
  });
  return it.finish();
}

Tensor clamp_tensor_impl(std::string_view op, const Tensor& self, const std::optional<Tensor>& min,
                         const std::optional<Tensor>& max, const Tensor* out, bool inplace) {
  const bool has_min = min && min->defined(), has_max = max && max->defined();
  check_clamp_bounds(op, has_min, has_max);
  TensorIterator it(op);
  it.add_input("self", self);
  if (has_min) it.add_input("min", *min);
  if (has_max) it.add_input("max", *max);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  dispatch_dtypes<kInts | kFloats>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    if (has_min && has_max) {
      it.for_each<T, T, T, T>([](C x, C lo, C hi) { return clamp_value<C>(x, lo, hi); });
    } else if (has_min) {
      it.for_each<T, T, T>([](C x, C lo) { return clamp_value<C>(x, lo, std::nullopt); });
    } else {
      it.for_each<T, T, T>([](C x, C hi) { return clamp_value<C>(x, std::nullopt, hi); });
    }
  });
  return it.finish();
}

Tensor clamp(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  return clamp_impl("clamp", self, min, max, nullptr, false);
}
Tensor& clamp_(Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  clamp_impl("clamp_", self, min, max, &self, true);
  return self;
}
Tensor& clamp_out(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max,
                  Tensor& out) {
  clamp_impl("clamp.out", self, min, max, &out, false);
  return out;
}
Tensor clamp_t(const Tensor& self, const std::optional<Tensor>& min,
               const std::optional<Tensor>& max) {
  return clamp_tensor_impl("clamp.Tensor", self, min, max, nullptr, false);
}
Tensor& clamp_t_(Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  clamp_tensor_impl("clamp_.Tensor", self, min, max, &self, true);
  return self;
}
Tensor& clamp_t_out(const Tensor& self, const std::optional<Tensor>& min,
                    const std::optional<Tensor>& max, Tensor& out) {
  clamp_tensor_impl("clamp.Tensor_out", self, min, max, &out, false);
  return out;
}

// ---- nan_to_num --------------------------------------------------------------------------------

Tensor nan_to_num_impl(std::string_view op, const Tensor& self, std::optional<double> nan,
                       std::optional<double> posinf, std::optional<double> neginf,
                       const Tensor* out, bool inplace) {
  TensorIterator it(op);
  it.add_input("self", self);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  dispatch_dtypes<kAllTypes>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    if constexpr (std::is_floating_point_v<C>) {
      const C n = static_cast<C>(nan.value_or(0.0));
      const C p = static_cast<C>(posinf.value_or(meta::max_finite(it.common_dtype())));
      const C q = static_cast<C>(neginf.value_or(-meta::max_finite(it.common_dtype())));
      it.for_each<T, T>([n, p, q](C x) {
        return x != x                                     ? n
               : x == std::numeric_limits<C>::infinity()  ? p
               : x == -std::numeric_limits<C>::infinity() ? q
                                                          : x;
      });
    } else {
      it.for_each<T, T>([](C x) { return x; });
    }
  });
  return it.finish();
}
Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  return nan_to_num_impl("nan_to_num", self, nan, posinf, neginf, nullptr, false);
}
Tensor& nan_to_num_(Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                    std::optional<double> neginf) {
  nan_to_num_impl("nan_to_num_", self, nan, posinf, neginf, &self, true);
  return self;
}
Tensor& nan_to_num_out(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                       std::optional<double> neginf, Tensor& out) {
  nan_to_num_impl("nan_to_num.out", self, nan, posinf, neginf, &out, false);
  return out;
}

// The three registrations of a functor op: name, name_, name.out.
template <typename Op>
void register_unary(Library& m) {
  m.impl(Op::kName, &unary_fn<Op>);
  m.impl(str_cat(Op::kName, "_"), &unary_inplace<Op>);
  m.impl(str_cat(Op::kName, ".out"), &unary_out<Op>);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("neg", &neg);
  m.impl("neg_", &neg_);
  m.impl("neg.out", &neg_out);
  register_unary<Abs>(m);
  register_unary<Sign>(m);
  register_unary<Exp>(m);
  register_unary<Exp2>(m);
  register_unary<Log>(m);
  register_unary<Log2>(m);
  register_unary<Log1p>(m);
  register_unary<Expm1>(m);
  register_unary<Sqrt>(m);
  register_unary<Rsqrt>(m);
  register_unary<Reciprocal>(m);
  register_unary<Sin>(m);
  register_unary<Cos>(m);
  register_unary<Tan>(m);
  register_unary<Tanh>(m);
  register_unary<Sigmoid>(m);
  register_unary<Erf>(m);
  register_unary<Floor>(m);
  register_unary<Ceil>(m);
  register_unary<Round>(m);
  register_unary<Trunc>(m);
  m.impl("round.decimals", &round_decimals);
  m.impl("round_.decimals", &round_decimals_);
  m.impl("round.decimals_out", &round_decimals_out);
  m.impl("clamp", &clamp);
  m.impl("clamp_", &clamp_);
  m.impl("clamp.out", &clamp_out);
  m.impl("clamp.Tensor", &clamp_t);
  m.impl("clamp_.Tensor", &clamp_t_);
  m.impl("clamp.Tensor_out", &clamp_t_out);
  m.impl("nan_to_num", &nan_to_num);
  m.impl("nan_to_num_", &nan_to_num_);
  m.impl("nan_to_num.out", &nan_to_num_out);
}

}  // namespace loom::ops::cpu
