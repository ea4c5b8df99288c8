// Derivative formulas of the pointwise family (Note [Derivative kernels] in
// loom/autograd/derivative.h). Gradients are written for the broadcast shape; the engine
// sums them to each input's shape. Each formula matches PyTorch's derivatives.yaml (and the
// helpers of its FunctionsManual.cpp): ties of maximum/minimum split the gradient in half,
// rounding ops and rounded division have zero gradient, clamp passes it where
// min <= self <= max. Formulas read the output ("result") where PyTorch does, so the in-place
// forms need no copy of self's old value.
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>

#include "autograd/common.h"
#include "loom/autograd/derivative.h"
#include "loom/core/error.h"
#include "loom/dispatcher/dispatch_key.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;
using formulas::scaled;

// g where cond holds, else 0 (PyTorch's where(cond, grad, 0)).
Tensor masked(const Tensor& g, const Tensor& cond) { return where(cond, g, zeros_like(g)); }

// The gradient of ops that are piecewise constant (sign, floor, rounded division...).
variable_list zero_grad(BackwardContext& c) { return {zeros_like(c.grad())}; }

// Zeros for every tensor input that needs a gradient.
variable_list zero_grads(BackwardContext& c) {
  variable_list out(c.num_slots());
  for (size_t i = 0; i < out.size(); ++i) {
    if (c.needs_grad(i)) out[i] = zeros_like(c.grad());
  }
  return out;
}

// Registers formula for op only, not for its in-place form (which gets its own formula).
void functional_only(Library& m, std::string_view op, std::vector<std::string> saves,
                     autograd::BackwardFormula formula) {
  m.impl_kernel(op, std::nullopt,
                autograd::derivative_kernel(std::move(saves), std::move(formula)));
}

// maximum/minimum: an input gets no gradient where it loses, half of it on a tie, all of it
// otherwise (where either is NaN, both get it, as in PyTorch).
Tensor pick_grad(const Tensor& g, const Tensor& loses, const Tensor& ties) {
  return where(loses, zeros_like(g), where(ties, g * 0.5, g));
}

// pow_backward_exponent: d(self^exponent)/d(exponent) = result * log(self), 0 where
// self == 0 and exponent >= 0 (the limit, where log(0) would give nan).
Tensor pow_exponent_grad(const Tensor& g, const Tensor& self, const Tensor& exponent,
                         const Tensor& result) {
  const Tensor at_zero = logical_and(eq(self, 0), ge(exponent, 0));
  return g * where(at_zero, zeros_like(result), result * log(self));
}

// clamp_backward for tensor bounds, either of which may be undefined (None).
Tensor clamp_self_grad(const Tensor& g, const Tensor& self, const Tensor& lo, const Tensor& hi) {
  if (lo.defined() && hi.defined()) return masked(g, logical_and(ge(self, lo), le(self, hi)));
  if (lo.defined()) return masked(g, ge(self, lo));
  if (hi.defined()) return masked(g, le(self, hi));
  return g;
}

// elu_backward. With is_result, x is the output, which tells the branch only for alpha >= 0.
Tensor elu_grad(BackwardContext& c, const Tensor& x, bool is_result, double alpha) {
  const double scale = c.scalar("scale").to<double>();
  const double input_scale = c.scalar("input_scale").to<double>();
  const double negcoef = alpha * scale;
  const Tensor& g = c.grad();
  if (is_result) {
    LOOM_CHECK_T(AutogradError, alpha >= 0,
                 "In-place elu backward calculation is triggered with a negative slope which is "
                 "not supported. This is caused by calling in-place forward function with a "
                 "negative slope, please call out-of-place version instead.");
    return where(le(x, 0), g * input_scale * (x + negcoef), g * scale);
  }
  return where(le(x, 0), g * (input_scale * negcoef) * exp(x * input_scale), g * scale);
}

// selu's constants (PyTorch's SELU_ALPHA and SELU_SCALE).
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

// gelu_backward for approximate 'none' and 'tanh'.
Tensor gelu_grad(const Tensor& g, const Tensor& x, std::string_view approximate) {
  if (approximate == "tanh") {
    constexpr double kBeta = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // sqrt(2 / pi)
    constexpr double kKappa = 0.044715;
    const Tensor x_sq = x * x;
    const Tensor inner = (x + x_sq * x * kKappa) * kBeta;
    const Tensor t = tanh(inner);
    const Tensor left_derivative = (t + 1) * 0.5;
    const Tensor right_derivative = x * 0.5 * (1 - t * t) * ((x_sq * (3 * kKappa) + 1) * kBeta);
    return g * (left_derivative + right_derivative);
  }
  constexpr double kAlpha = std::numbers::sqrt2 / 2;                              // 1 / sqrt(2)
  constexpr double kBeta = std::numbers::sqrt2 * std::numbers::inv_sqrtpi * 0.5;  // 1/sqrt(2 pi)
  const Tensor cdf = (erf(x * kAlpha) + 1) * 0.5;
  const Tensor pdf = exp(x * x * -0.5) * kBeta;
  return g * (cdf + x * pdf);
}

// --- contiguous and to.dtype (composites, as in PyTorch) ----------------------------------------
// Their schemas return Tensor(a): when nothing changes they return self itself. A derivative
// kernel would give that same tensor a new history (and mark a real copy as a view), so at the
// Autograd key they do what PyTorch's composites do: self when nothing changes, clone or copy_
// (which have formulas) when self needs a gradient, and the backend's kernel otherwise.

Tensor contiguous_autograd(const Tensor& self, int64_t memory_format) {
  LOOM_TYPED_OP(op, "aten::contiguous", Tensor(const Tensor&, int64_t));
  if (self.is_contiguous()) return self;
  if (self.requires_grad()) return clone(self);
  ExcludeDispatchKeyGuard below(DispatchKeySet(DispatchKey::Autograd));
  return op(self, memory_format);
}

Tensor to_dtype_autograd(const Tensor& self, DType dtype, bool non_blocking, bool copy,
                         std::optional<int64_t> memory_format) {
  LOOM_TYPED_OP(op, "aten::to.dtype",
                Tensor(const Tensor&, DType, bool, bool, std::optional<int64_t>));
  if (dtype == self.dtype() && !copy) return self;
  if (self.requires_grad()) return copy_(empty_like(self, dtype), self, non_blocking);
  ExcludeDispatchKeyGuard below(DispatchKeySet(DispatchKey::Autograd));
  return op(self, dtype, non_blocking, copy, memory_format);
}

}  // namespace

// --- arithmetic ---------------------------------------------------------------------------------
LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "add.Tensor", {}, [](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs_grad(1) ? scaled(c.grad(), c.scalar("alpha")) : Tensor()};
  });
  derivative(m, "add.Scalar", {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
  derivative(m, "sub.Tensor", {}, [](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs_grad(1) ? -scaled(c.grad(), c.scalar("alpha")) : Tensor()};
  });
  derivative(m, "sub.Scalar", {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
  derivative(m, "mul.Tensor", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    return {c.needs_grad(0) ? c.grad() * c.saved("other") : Tensor(),
            c.needs_grad(1) ? c.grad() * c.saved("self") : Tensor()};
  });
  derivative(m, "mul.Scalar", {},
             [](BackwardContext& c) -> variable_list { return {c.grad() * c.scalar("other")}; });
  auto div_tensor = [](BackwardContext& c) -> variable_list {
    const Tensor other = c.saved("other");
    return {c.needs_grad(0) ? c.grad() / other : Tensor(),
            c.needs_grad(1) ? -c.grad() * c.saved("self") / (other * other) : Tensor()};
  };
  derivative(m, "div.Tensor", {"self", "other"}, div_tensor);
  derivative(m, "div.Tensor_mode", {"self", "other"}, [div_tensor](BackwardContext& c) {
    if (!c.is_none("rounding_mode")) {
      return variable_list{c.needs_grad(0) ? zeros_like(c.grad()) : Tensor(),
                           c.needs_grad(1) ? zeros_like(c.grad()) : Tensor()};
    }
    return div_tensor(c);
  });
  derivative(m, "div.Scalar", {},
             [](BackwardContext& c) -> variable_list { return {c.grad() / c.scalar("other")}; });
  derivative(m, "div.Scalar_mode", {}, [](BackwardContext& c) -> variable_list {
    if (!c.is_none("rounding_mode")) return zero_grad(c);
    return {c.grad() / c.scalar("other")};
  });
  // self - other * rounded(self / other): other's gradient is -grad times the rounded quotient.
  derivative(m, "remainder.Tensor", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs_grad(1) ? -c.grad() * div(c.saved("self"), c.saved("other"), "floor")
                                      : Tensor()};
  });
  derivative(m, "remainder.Scalar", {},
             [](BackwardContext& c) -> variable_list { return {c.grad()}; });
  derivative(m, "remainder.Scalar_Tensor", {"other"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = full_like(c.saved("other"), c.scalar("self"));
    return {-c.grad() * div(self, c.saved("other"), "floor")};
  });
  derivative(m, "fmod.Tensor", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs_grad(1) ? -c.grad() * div(c.saved("self"), c.saved("other"), "trunc")
                                      : Tensor()};
  });
  derivative(m, "fmod.Scalar", {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });

  // pow: the in-place forms are spelled pow_.Tensor / pow_.Scalar, not pow_.Tensor_Tensor.
  auto pow_tensor_tensor = [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self");
    const Tensor exponent = c.saved("exponent");
    const Tensor& g = c.grad();
    Tensor gs, ge_;
    if (c.needs_grad(0)) {
      gs = where(eq(exponent, 0), zeros_like(g), g * exponent * pow(self, exponent - 1));
    }
    if (c.needs_grad(1)) ge_ = pow_exponent_grad(g, self, exponent, c.result());
    return {gs, ge_};
  };
  functional_only(m, "pow.Tensor_Tensor", {"self", "exponent", "result"}, pow_tensor_tensor);
  autograd::derivative_inplace_only(m, "pow_.Tensor", {"self", "exponent", "result"},
                                    pow_tensor_tensor);
  auto pow_tensor_scalar = [](BackwardContext& c) -> variable_list {
    const double e = c.scalar("exponent").to<double>();
    if (e == 0.0) return zero_grad(c);
    return {c.grad() * e * pow(c.saved("self"), e - 1)};
  };
  functional_only(m, "pow.Tensor_Scalar", {"self"}, pow_tensor_scalar);
  autograd::derivative_inplace_only(m, "pow_.Scalar", {"self"}, pow_tensor_scalar);
  // Not derivative(): "pow_.Scalar" is the in-place form of pow.Tensor_Scalar.
  functional_only(m, "pow.Scalar", {"exponent", "result"}, [](BackwardContext& c) -> variable_list {
    const double base = c.scalar("self").to<double>();
    const Tensor result = c.result();
    if (base == 0.0) {
      const Tensor exponent = c.saved("exponent");
      return {c.grad() * where(ge(exponent, 0), zeros_like(result), result * std::log(base))};
    }
    return {c.grad() * (result * std::log(base))};
  });

  derivative(m, "maximum", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self"), other = c.saved("other");
    const Tensor ties = eq(self, other);
    return {c.needs_grad(0) ? pick_grad(c.grad(), lt(self, other), ties) : Tensor(),
            c.needs_grad(1) ? pick_grad(c.grad(), gt(self, other), ties) : Tensor()};
  });
  derivative(m, "minimum", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self"), other = c.saved("other");
    const Tensor ties = eq(self, other);
    return {c.needs_grad(0) ? pick_grad(c.grad(), gt(self, other), ties) : Tensor(),
            c.needs_grad(1) ? pick_grad(c.grad(), lt(self, other), ties) : Tensor()};
  });
  derivative(m, "atan2", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self"), other = c.saved("other");
    const Tensor g = c.grad() / (self * self + other * other);
    return {c.needs_grad(0) ? g * other : Tensor(), c.needs_grad(1) ? -g * self : Tensor()};
  });

  // --- selection and interpolation --------------------------------------------------------------
  derivative(m, "where.self", {"condition"}, [](BackwardContext& c) -> variable_list {
    const Tensor cond = c.saved("condition");
    const Tensor& g = c.grad();
    return {Tensor(), c.needs_grad(1) ? where(cond, g, zeros_like(g)) : Tensor(),
            c.needs_grad(2) ? where(cond, zeros_like(g), g) : Tensor()};
  });
  derivative(m, "lerp.Scalar", {}, [](BackwardContext& c) -> variable_list {
    const double w = c.scalar("weight").to<double>();
    return {c.needs_grad(0) ? c.grad() * (1 - w) : Tensor(),
            c.needs_grad(1) ? scaled(c.grad(), w) : Tensor()};
  });
  derivative(m, "lerp.Tensor", {"self", "end", "weight"}, [](BackwardContext& c) -> variable_list {
    const Tensor weight = c.saved("weight");
    const Tensor& g = c.grad();
    return {c.needs_grad(0) ? g * (1 - weight) : Tensor(), c.needs_grad(1) ? g * weight : Tensor(),
            c.needs_grad(2) ? g * (c.saved("end") - c.saved("self")) : Tensor()};
  });
  derivative(m, "addcmul", {"tensor1", "tensor2"}, [](BackwardContext& c) -> variable_list {
    const Scalar value = c.scalar("value");
    return {c.grad(), c.needs_grad(1) ? scaled(c.grad() * c.saved("tensor2"), value) : Tensor(),
            c.needs_grad(2) ? scaled(c.grad() * c.saved("tensor1"), value) : Tensor()};
  });
  derivative(m, "addcdiv", {"tensor1", "tensor2"}, [](BackwardContext& c) -> variable_list {
    const Scalar value = c.scalar("value");
    const Tensor t2 = c.saved("tensor2");
    return {c.grad(), c.needs_grad(1) ? scaled(c.grad() / t2, value) : Tensor(),
            c.needs_grad(2) ? -scaled(c.grad() * c.saved("tensor1") / (t2 * t2), value) : Tensor()};
  });
}

// --- unary math ---------------------------------------------------------------------------------
LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "neg", {}, [](BackwardContext& c) -> variable_list { return {-c.grad()}; });
  derivative(m, "abs", {"self"}, [](BackwardContext& c) -> variable_list {
    return {c.grad() * sign(c.saved("self"))};
  });
  for (const char* op : {"sign", "floor", "ceil", "round", "round.decimals", "trunc"}) {
    derivative(m, op, {}, zero_grad);
  }
  derivative(m, "exp", {"result"},
             [](BackwardContext& c) -> variable_list { return {c.grad() * c.result()}; });
  derivative(m, "exp2", {"result"}, [](BackwardContext& c) -> variable_list {
    return {c.grad() * c.result() * std::numbers::ln2};
  });
  derivative(m, "expm1", {"result"},
             [](BackwardContext& c) -> variable_list { return {c.grad() * (c.result() + 1)}; });
  derivative(m, "log", {"self"},
             [](BackwardContext& c) -> variable_list { return {c.grad() / c.saved("self")}; });
  derivative(m, "log2", {"self"}, [](BackwardContext& c) -> variable_list {
    return {c.grad() / (c.saved("self") * std::numbers::ln2)};
  });
  derivative(m, "log1p", {"self"}, [](BackwardContext& c) -> variable_list {
    return {c.grad() / (c.saved("self") + 1)};
  });
  derivative(m, "sqrt", {"result"},
             [](BackwardContext& c) -> variable_list { return {c.grad() / (c.result() * 2)}; });
  derivative(m, "rsqrt", {"result"}, [](BackwardContext& c) -> variable_list {
    const Tensor r = c.result();
    return {c.grad() * (r * r * r) * -0.5};
  });
  derivative(m, "reciprocal", {"result"}, [](BackwardContext& c) -> variable_list {
    const Tensor r = c.result();
    return {-c.grad() * (r * r)};
  });
  derivative(m, "sin", {"self"},
             [](BackwardContext& c) -> variable_list { return {c.grad() * cos(c.saved("self"))}; });
  derivative(m, "cos", {"self"}, [](BackwardContext& c) -> variable_list {
    return {-c.grad() * sin(c.saved("self"))};
  });
  derivative(m, "tan", {"result"}, [](BackwardContext& c) -> variable_list {
    const Tensor r = c.result();
    return {c.grad() * (r * r + 1)};
  });
  derivative(m, "tanh", {"result"}, [](BackwardContext& c) -> variable_list {
    const Tensor r = c.result();
    return {c.grad() * (1 - r * r)};
  });
  derivative(m, "sigmoid", {"result"}, [](BackwardContext& c) -> variable_list {
    const Tensor r = c.result();
    return {c.grad() * (r * (1 - r))};
  });
  derivative(m, "erf", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor x = c.saved("self");
    return {c.grad() * exp(-(x * x)) * (2 * std::numbers::inv_sqrtpi)};
  });
  derivative(m, "clamp", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self");
    const bool lo = !c.is_none("min"), hi = !c.is_none("max");
    if (lo && hi) {
      return {masked(c.grad(), logical_and(ge(self, c.scalar("min")), le(self, c.scalar("max"))))};
    }
    if (lo) return {masked(c.grad(), ge(self, c.scalar("min")))};
    if (hi) return {masked(c.grad(), le(self, c.scalar("max")))};
    return {c.grad()};
  });
  derivative(m, "clamp.Tensor", {"self", "min", "max"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self");
    const Tensor lo = c.saved("min"), hi = c.saved("max");
    const Tensor& g = c.grad();
    variable_list out(3);
    if (c.needs_grad(0)) out[0] = clamp_self_grad(g, self, lo, hi);
    // clamp_backward_min_max: a bound gets the gradient where it is the result; when
    // min > max the result is max everywhere.
    if (lo.defined() && hi.defined()) {
      if (c.needs_grad(1)) out[1] = masked(g, logical_and(lt(self, lo), lt(lo, hi)));
      if (c.needs_grad(2)) out[2] = masked(g, logical_or(gt(self, hi), lt(hi, lo)));
    } else if (lo.defined()) {
      if (c.needs_grad(1)) out[1] = masked(g, lt(self, lo));
    } else if (hi.defined()) {
      if (c.needs_grad(2)) out[2] = masked(g, gt(self, hi));
    }
    return out;
  });
  // In-place comparisons write 0/1 into a floating self: zero gradient for both inputs.
  for (const char* op :
       {"eq_.Scalar", "ne_.Scalar", "lt_.Scalar", "le_.Scalar", "gt_.Scalar", "ge_.Scalar",
        "eq_.Tensor", "ne_.Tensor", "lt_.Tensor", "le_.Tensor", "gt_.Tensor", "ge_.Tensor"}) {
    autograd::derivative_inplace_only(m, op, {}, zero_grads);
  }
  derivative(m, "nan_to_num", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self");
    const Tensor finite =
        logical_and(eq(self, self), ne(abs(self), std::numeric_limits<double>::infinity()));
    return {masked(c.grad(), finite)};
  });
}

// --- activations --------------------------------------------------------------------------------
LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  // threshold_backward: zero where the result is <= 0, so a NaN input passes its gradient.
  derivative(m, "relu", {"result"}, [](BackwardContext& c) -> variable_list {
    return {threshold_backward(c.grad(), c.result(), 0)};
  });
  // Piecewise constant in self: its gradient flows to grad_output only.
  derivative(m, "threshold_backward", {"self"}, [](BackwardContext& c) -> variable_list {
    return {threshold_backward(c.grad(), c.saved("self"), c.scalar("threshold")),
            zeros_like(c.saved("self"))};
  });
  // hardtanh_backward on the result: inside (min_val, max_val) exactly where self is.
  derivative(m, "relu6", {"result"}, [](BackwardContext& c) -> variable_list {
    const Tensor r = c.result();
    return {masked(c.grad(), logical_and(gt(r, 0), lt(r, 6)))};
  });
  derivative(m, "hardtanh", {"result"}, [](BackwardContext& c) -> variable_list {
    const Tensor r = c.result();
    return {masked(c.grad(), logical_and(gt(r, c.scalar("min_val")), lt(r, c.scalar("max_val"))))};
  });
  derivative(m, "selu", {"result"}, [](BackwardContext& c) -> variable_list {
    const Tensor r = c.result();
    const Tensor& g = c.grad();
    return {where(le(r, 0), g * (r + kSeluAlpha * kSeluScale), g * kSeluScale)};
  });
  derivative(m, "silu", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor x = c.saved("self");
    const Tensor s = sigmoid(x);
    return {c.grad() * s * (x * (1 - s) + 1)};
  });
  derivative(m, "mish", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor x = c.saved("self");
    const Tensor t = tanh(softplus(x));
    return {c.grad() * (t + x * sigmoid(x) * (1 - t * t))};
  });
  derivative(m, "hardsigmoid", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor x = c.saved("self");
    return {masked(c.grad() / 6, logical_and(gt(x, -3), lt(x, 3)))};
  });
  derivative(m, "hardswish", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor x = c.saved("self");
    const Tensor& g = c.grad();
    return {where(lt(x, -3), zeros_like(g), where(le(x, 3), g * (x / 3 + 0.5), g))};
  });
  // leaky_relu and elu: the functional forms read self; the in-place forms read the result,
  // which (as in PyTorch) tells the branch only for a non-negative slope.
  functional_only(m, "leaky_relu", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {where(gt(c.saved("self"), 0), g, g * c.scalar("negative_slope"))};
  });
  autograd::derivative_inplace_only(m, "leaky_relu_", {"result"}, [](BackwardContext& c) {
    const Scalar slope = c.scalar("negative_slope");
    LOOM_CHECK_T(AutogradError, slope.to<double>() >= 0,
                 "In-place leakyReLu backward calculation is triggered with a negative slope "
                 "which is not supported. This is caused by calling in-place forward function "
                 "with a negative slope, please call out-of-place version instead.");
    const Tensor& g = c.grad();
    return variable_list{where(gt(c.result(), 0), g, g * slope)};
  });
  functional_only(m, "elu", {"self"}, [](BackwardContext& c) -> variable_list {
    return {elu_grad(c, c.saved("self"), false, c.scalar("alpha").to<double>())};
  });
  autograd::derivative_inplace_only(m, "elu_", {"result"}, [](BackwardContext& c) {
    return variable_list{elu_grad(c, c.result(), true, c.scalar("alpha").to<double>())};
  });
  derivative(m, "gelu", {"self"}, [](BackwardContext& c) -> variable_list {
    return {gelu_grad(c.grad(), c.saved("self"), c.arg("approximate").to_string())};
  });
  derivative(m, "softplus", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor x = c.saved("self");
    const Scalar beta = c.scalar("beta");
    const Tensor xb = x * beta;
    const Tensor z = exp(xb);
    const Tensor& g = c.grad();
    return {where(gt(xb, c.scalar("threshold")), g, g * z / (z + 1))};
  });
}

// --- copies and fills ---------------------------------------------------------------------------
LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "clone", {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
  m.impl("contiguous", &contiguous_autograd);
  m.impl("to.dtype", &to_dtype_autograd);
  // self's old value is overwritten: it gets zeros; src gets the gradient (the engine sums it
  // to src's shape and casts it to src's dtype).
  autograd::derivative_inplace_only(m, "copy_", {}, [](BackwardContext& c) {
    return variable_list{c.needs_grad(0) ? zeros_like(c.grad()) : Tensor(),
                         c.needs_grad(1) ? c.grad() : Tensor()};
  });
  autograd::derivative_inplace_only(m, "fill_.Scalar", {}, zero_grad);
  autograd::derivative_inplace_only(m, "fill_.Tensor", {}, [](BackwardContext& c) {
    return variable_list{c.needs_grad(0) ? zeros_like(c.grad()) : Tensor(),
                         c.needs_grad(1) ? sum(c.grad()) : Tensor()};
  });
  autograd::derivative_inplace_only(m, "zero_", {}, zero_grad);
}

}  // namespace loom
