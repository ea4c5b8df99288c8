// ONNX elementwise ops: arithmetic, comparisons, logic, unary math and activations
// (Note [ONNX op mappings]). Broadcasting is numpy's in both worlds.
#include <cmath>
#include <limits>

#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "onnx_ops.h"

namespace loom::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/// ONNX gives both operands of these ops one type; PyTorch would promote a mix.
void check_same_dtype(const NodeContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    throw ValueError(str_cat(ctx.where(), ": inputs have dtypes ", dtype_name(a.dtype()), " and ",
                             dtype_name(b.dtype())));
  }
}

/// Folds the inputs of a variadic op (Max, Min, Sum, Mean) with a binary op.
template <typename F>
Tensor fold(const NodeContext& ctx, F f) {
  Tensor acc = ctx.input(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) acc = f(acc, ctx.input(i));
  return acc;
}

Outputs div_op(const NodeContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  check_same_dtype(ctx, a, b);
  // ONNX's integer Div truncates (as C); PyTorch's true division would give floats.
  if (is_integral(a.dtype())) return one(div(a, b, std::string_view("trunc")));
  return one(div(a, b));
}

Outputs pow_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  // The exponent may have another type than the base; the result has the base's.
  return one(cast_to(pow(x, ctx.input(1)), x.dtype()));
}

Outputs mod_op(const NodeContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  check_same_dtype(ctx, a, b);
  // fmod=1: C's fmod (the sign of the dividend); fmod=0 (integers only): the sign of the
  // divisor, as Python's %, which is torch.remainder.
  if (ctx.attr_int("fmod", 0) != 0) return one(fmod(a, b));
  if (is_floating_point(a.dtype())) {
    throw ValueError(str_cat(ctx.where(), ": fmod=0 is only defined for integers"));
  }
  return one(remainder(a, b));
}

Outputs clip_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::optional<Scalar> lo, hi;
  if (ctx.opset() < 11) {
    // Before opset 11 min and max are attributes, defaulting to the float range.
    lo = Scalar(static_cast<double>(ctx.attr_float("min", -std::numeric_limits<float>::max())));
    hi = Scalar(static_cast<double>(ctx.attr_float("max", std::numeric_limits<float>::max())));
  } else {
    if (ctx.has_input(1)) lo = scalar_value(ctx.input(1));
    if (ctx.has_input(2)) hi = scalar_value(ctx.input(2));
  }
  if (!lo && !hi) return one(x);
  return one(clamp(x, lo, hi));
}

Outputs hard_sigmoid_op(const NodeContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 0.2f), beta = ctx.attr_float("beta", 0.5f);
  return one(clamp(add(mul(ctx.input(0), alpha), beta), Scalar(0.0), Scalar(1.0)));
}

Outputs is_inf_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool pos = ctx.attr_int("detect_positive", 1) != 0;
  const bool neg = ctx.attr_int("detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  if (pos && neg) return one(eq(abs(x), inf));
  if (pos) return one(eq(x, inf));
  if (neg) return one(eq(x, -inf));
  return one(zeros_like(x, DType::Bool));
}

Outputs shrink_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double bias = ctx.attr_float("bias", 0.0f), lambd = ctx.attr_float("lambd", 0.5f);
  const Tensor zero = zeros_like(x);
  const Tensor inner = where(gt(x, lambd), sub(x, bias), zero);
  return one(cast_to(where(lt(x, -lambd), add(x, bias), inner), x.dtype()));
}

Outputs bit_shift_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  check_same_dtype(ctx, x, y);
  const std::string direction = ctx.attr_string("direction", "");
  // x << y is x * 2^y and x >> y is floor(x / 2^y), in x's (unsigned) type.
  const Tensor factor = cast_to(pow(Scalar(int64_t{2}), cast_to(y, DType::Int64)), x.dtype());
  if (direction == "LEFT") return one(mul(x, factor));
  if (direction == "RIGHT") return one(div(x, factor, std::string_view("floor")));
  throw ValueError(str_cat(ctx.where(), ": direction '", direction, "' is not LEFT or RIGHT"));
}

/// asin, acos, atan through atan2 (the pack has no inverse trigonometric kernels).
Tensor sqrt_one_minus_square(const Tensor& x) { return sqrt(sub(ones_like(x), mul(x, x))); }

}  // namespace

void add_elementwise_ops(OpTable& t) {
  // ---- binary arithmetic ----
  t["Add"] = [](const NodeContext& c) { return one(add(c.input(0), c.input(1))); };
  t["Sub"] = [](const NodeContext& c) { return one(sub(c.input(0), c.input(1))); };
  t["Mul"] = [](const NodeContext& c) { return one(mul(c.input(0), c.input(1))); };
  t["Div"] = div_op;
  t["Pow"] = pow_op;
  t["Mod"] = mod_op;
  t["BitShift"] = bit_shift_op;

  // ---- variadic ----
  t["Max"] = [](const NodeContext& c) {
    return one(fold(c, [](const Tensor& a, const Tensor& b) { return maximum(a, b); }));
  };
  t["Min"] = [](const NodeContext& c) {
    return one(fold(c, [](const Tensor& a, const Tensor& b) { return minimum(a, b); }));
  };
  t["Sum"] = [](const NodeContext& c) {
    return one(fold(c, [](const Tensor& a, const Tensor& b) { return add(a, b); }));
  };
  t["Mean"] = [](const NodeContext& c) {
    const Tensor s = fold(c, [](const Tensor& a, const Tensor& b) { return add(a, b); });
    return one(div(s, static_cast<int64_t>(c.num_inputs())));
  };

  // ---- comparisons and logic ----
  t["Equal"] = [](const NodeContext& c) { return one(eq(c.input(0), c.input(1))); };
  t["Less"] = [](const NodeContext& c) { return one(lt(c.input(0), c.input(1))); };
  t["LessOrEqual"] = [](const NodeContext& c) { return one(le(c.input(0), c.input(1))); };
  t["Greater"] = [](const NodeContext& c) { return one(gt(c.input(0), c.input(1))); };
  t["GreaterOrEqual"] = [](const NodeContext& c) { return one(ge(c.input(0), c.input(1))); };
  t["And"] = [](const NodeContext& c) { return one(logical_and(c.input(0), c.input(1))); };
  t["Or"] = [](const NodeContext& c) { return one(logical_or(c.input(0), c.input(1))); };
  t["Xor"] = [](const NodeContext& c) { return one(logical_xor(c.input(0), c.input(1))); };
  t["Not"] = [](const NodeContext& c) { return one(logical_not(c.input(0))); };
  t["BitwiseAnd"] = [](const NodeContext& c) { return one(bitwise_and(c.input(0), c.input(1))); };
  t["BitwiseOr"] = [](const NodeContext& c) { return one(bitwise_or(c.input(0), c.input(1))); };
  t["BitwiseXor"] = [](const NodeContext& c) { return one(bitwise_xor(c.input(0), c.input(1))); };
  t["BitwiseNot"] = [](const NodeContext& c) { return one(bitwise_not(c.input(0))); };
  t["Where"] = [](const NodeContext& c) {
    return one(where(c.input(0), c.input(1), c.input(2)));
  };
  t["IsNaN"] = [](const NodeContext& c) { return one(ne(c.input(0), c.input(0))); };
  t["IsInf"] = is_inf_op;

  // ---- unary math ----
  t["Neg"] = [](const NodeContext& c) { return one(neg(c.input(0))); };
  t["Abs"] = [](const NodeContext& c) { return one(abs(c.input(0))); };
  t["Sign"] = [](const NodeContext& c) { return one(sign(c.input(0))); };
  t["Exp"] = [](const NodeContext& c) { return one(exp(c.input(0))); };
  t["Log"] = [](const NodeContext& c) { return one(log(c.input(0))); };
  t["Sqrt"] = [](const NodeContext& c) { return one(sqrt(c.input(0))); };
  t["Reciprocal"] = [](const NodeContext& c) { return one(reciprocal(c.input(0))); };
  t["Sin"] = [](const NodeContext& c) { return one(sin(c.input(0))); };
  t["Cos"] = [](const NodeContext& c) { return one(cos(c.input(0))); };
  t["Tan"] = [](const NodeContext& c) { return one(tan(c.input(0))); };
  t["Tanh"] = [](const NodeContext& c) { return one(tanh(c.input(0))); };
  t["Erf"] = [](const NodeContext& c) { return one(erf(c.input(0))); };
  t["Floor"] = [](const NodeContext& c) { return one(floor(c.input(0))); };
  t["Ceil"] = [](const NodeContext& c) { return one(ceil(c.input(0))); };
  // Both round half to even.
  t["Round"] = [](const NodeContext& c) { return one(round(c.input(0))); };
  // Composites for the functions the pack has no kernel for.
  t["Atan"] = [](const NodeContext& c) {
    const Tensor& x = c.input(0);
    return one(atan2(x, ones_like(x)));
  };
  t["Asin"] = [](const NodeContext& c) {
    const Tensor& x = c.input(0);
    return one(atan2(x, sqrt_one_minus_square(x)));
  };
  t["Acos"] = [](const NodeContext& c) {
    const Tensor& x = c.input(0);
    return one(atan2(sqrt_one_minus_square(x), x));
  };
  t["Sinh"] = [](const NodeContext& c) {
    const Tensor& x = c.input(0);
    return one(div(sub(exp(x), exp(neg(x))), 2.0));
  };
  t["Cosh"] = [](const NodeContext& c) {
    const Tensor& x = c.input(0);
    return one(div(add(exp(x), exp(neg(x))), 2.0));
  };
  t["Asinh"] = [](const NodeContext& c) {  // log(x + sqrt(x^2 + 1))
    const Tensor& x = c.input(0);
    return one(log(add(x, sqrt(add(mul(x, x), 1.0)))));
  };
  t["Acosh"] = [](const NodeContext& c) {  // log(x + sqrt(x^2 - 1))
    const Tensor& x = c.input(0);
    return one(log(add(x, sqrt(sub(mul(x, x), 1.0)))));
  };
  t["Atanh"] = [](const NodeContext& c) {  // log((1 + x) / (1 - x)) / 2
    const Tensor& x = c.input(0);
    return one(div(log(div(add(x, 1.0), sub(ones_like(x), x))), 2.0));
  };

  // ---- activations ----
  t["Relu"] = [](const NodeContext& c) { return one(relu(c.input(0))); };
  t["Sigmoid"] = [](const NodeContext& c) { return one(sigmoid(c.input(0))); };
  t["LeakyRelu"] = [](const NodeContext& c) {
    return one(leaky_relu(c.input(0), static_cast<double>(c.attr_float("alpha", 0.01f))));
  };
  t["Elu"] = [](const NodeContext& c) {
    return one(elu(c.input(0), static_cast<double>(c.attr_float("alpha", 1.0f))));
  };
  // gamma * (x > 0 ? x : alpha * (exp(x) - 1)) is elu with scale gamma.
  t["Selu"] = [](const NodeContext& c) {
    const double alpha = c.attr_float("alpha", 1.67326319217681884765625f);
    const double gamma = c.attr_float("gamma", 1.05070102214813232421875f);
    return one(elu(c.input(0), alpha, gamma, 1.0));
  };
  // max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) is elu with input_scale 1 / alpha.
  t["Celu"] = [](const NodeContext& c) {
    const double alpha = c.attr_float("alpha", 1.0f);
    return one(elu(c.input(0), alpha, 1.0, 1.0 / alpha));
  };
  t["Gelu"] = [](const NodeContext& c) {
    return one(gelu(c.input(0), c.attr_string("approximate", "none")));
  };
  t["HardSigmoid"] = hard_sigmoid_op;
  t["HardSwish"] = [](const NodeContext& c) { return one(hardswish(c.input(0))); };
  t["Softplus"] = [](const NodeContext& c) { return one(softplus(c.input(0))); };
  t["Softsign"] = [](const NodeContext& c) {
    const Tensor& x = c.input(0);
    return one(div(x, add(abs(x), 1.0)));
  };
  t["Mish"] = [](const NodeContext& c) { return one(mish(c.input(0))); };
  t["Clip"] = clip_op;
  t["PRelu"] = [](const NodeContext& c) {
    const Tensor& x = c.input(0);
    return one(where(lt(x, 0.0), mul(x, c.input(1)), x));
  };
  t["ThresholdedRelu"] = [](const NodeContext& c) {
    const Tensor& x = c.input(0);
    return one(where(gt(x, static_cast<double>(c.attr_float("alpha", 1.0f))), x, zeros_like(x)));
  };
  t["Shrink"] = shrink_op;
}

}  // namespace loom::onnx
