// CUDA kernels of the pointwise ops: arithmetic (add sub mul div remainder fmod pow maximum
// minimum atan2), comparisons, logical and bitwise ops, unary math, rounding, clamp,
// nan_to_num (activations and the ternary ops are in activation_ops.cpp). Each is the
// reference CPU kernel's recipe (same promotion rule, dtype categories, checks and messages)
// on CudaIterator with an op code of the generic kernel (Note [Pointwise op codes]).
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/cuda_iterator.h"
#include "kernels/pointwise_layer.h"
#include "loom/core/half.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/integer_math.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::cuda {
namespace {

using kernels::PointwiseLaunch;
using kernels::PwOp;
using namespace pointwise;  // NOLINT: the variant layer is this file's vocabulary

using ops::meta::bool_if;
using ops::meta::check_alpha;
using ops::meta::check_clamp_bounds;
using ops::meta::check_neg;
using ops::meta::check_sub_bool;
using ops::meta::max_finite;
using ops::meta::parse_rounding;
using ops::meta::Rounding;

// Unary math (integers compute in float32), rounding (identity on integers), the rest.
LOOM_CUDA_OP(Exp, "exp", Exp, kFloats, IntToFloat);
LOOM_CUDA_OP(Exp2, "exp2", Exp2, kFloats, IntToFloat);
LOOM_CUDA_OP(Log, "log", Log, kFloats, IntToFloat);
LOOM_CUDA_OP(Log2, "log2", Log2, kFloats, IntToFloat);
LOOM_CUDA_OP(Log1p, "log1p", Log1p, kFloats, IntToFloat);
LOOM_CUDA_OP(Expm1, "expm1", Expm1, kFloats, IntToFloat);
LOOM_CUDA_OP(Sqrt, "sqrt", Sqrt, kFloats, IntToFloat);
LOOM_CUDA_OP(Rsqrt, "rsqrt", Rsqrt, kFloats, IntToFloat);
LOOM_CUDA_OP(Reciprocal, "reciprocal", Reciprocal, kFloats, IntToFloat);
LOOM_CUDA_OP(Sin, "sin", Sin, kFloats, IntToFloat);
LOOM_CUDA_OP(Cos, "cos", Cos, kFloats, IntToFloat);
LOOM_CUDA_OP(Tan, "tan", Tan, kFloats, IntToFloat);
LOOM_CUDA_OP(Tanh, "tanh", Tanh, kFloats, IntToFloat);
LOOM_CUDA_OP(Sigmoid, "sigmoid", Sigmoid, kFloats, IntToFloat);
LOOM_CUDA_OP(Erf, "erf", Erf, kFloats, IntToFloat);
LOOM_CUDA_OP(Floor, "floor", Floor, kInts | kFloats, Common);
LOOM_CUDA_OP(Ceil, "ceil", Ceil, kInts | kFloats, Common);
LOOM_CUDA_OP(Round, "round", Round, kInts | kFloats, Common);
LOOM_CUDA_OP(Trunc, "trunc", Trunc, kInts | kFloats, Common);
LOOM_CUDA_OP(Abs, "abs", Abs, kAllTypes, Common);
LOOM_CUDA_OP(Sign, "sign", Sign, kAllTypes, Common);
LOOM_CUDA_OP(Neg, "neg", Neg, kInts | kFloats, Common);
LOOM_CUDA_OP(BitwiseNot, "bitwise_not", BitwiseNot, kBool | kInts, Common);
LOOM_CUDA_OP(LogicalNot, "logical_not", LogicalNot, kAllTypes, Bool);
// Binary.
LOOM_CUDA_OP(Mul, "mul", Mul, kAllTypes, Common);
LOOM_CUDA_OP(Maximum, "maximum", Maximum, kAllTypes, Common);
LOOM_CUDA_OP(Minimum, "minimum", Minimum, kAllTypes, Common);
LOOM_CUDA_OP(Atan2, "atan2", Atan2, kFloats, IntToFloat);
LOOM_CUDA_OP(Eq, "eq", Eq, kAllTypes, Bool);
LOOM_CUDA_OP(Ne, "ne", Ne, kAllTypes, Bool);
LOOM_CUDA_OP(Lt, "lt", Lt, kAllTypes, Bool);
LOOM_CUDA_OP(Le, "le", Le, kAllTypes, Bool);
LOOM_CUDA_OP(Gt, "gt", Gt, kAllTypes, Bool);
LOOM_CUDA_OP(Ge, "ge", Ge, kAllTypes, Bool);
LOOM_CUDA_OP(LogicalAnd, "logical_and", LogicalAnd, kAllTypes, Bool);
LOOM_CUDA_OP(LogicalOr, "logical_or", LogicalOr, kAllTypes, Bool);
LOOM_CUDA_OP(LogicalXor, "logical_xor", LogicalXor, kAllTypes, Bool);
LOOM_CUDA_OP(BitwiseAnd, "bitwise_and", BitwiseAnd, kBool | kInts, Common);
LOOM_CUDA_OP(BitwiseOr, "bitwise_or", BitwiseOr, kBool | kInts, Common);
LOOM_CUDA_OP(BitwiseXor, "bitwise_xor", BitwiseXor, kBool | kInts, Common);
#undef LOOM_CUDA_OP

// ---- neg ---------------------------------------------------------------------------------------

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

// ---- add / sub -------------------------------------------------------------------------------

// self + sign * alpha * other; other is a tensor or a Scalar.
Tensor add_impl(std::string_view op, const Tensor& self, const Tensor* other,
                const Scalar* scalar_other, const Scalar& alpha, const Tensor* out, bool inplace,
                int sign) {
  CudaIterator it(op);
  it.add_input("self", self);
  if (other != nullptr) {
    it.add_input("other", *other);
  } else {
    it.add_scalar(*scalar_other);
  }
  it.set_variant_output(inplace ? &self : out, inplace);
  it.build();
  check_alpha(op, it.common_dtype(), alpha);
  PointwiseLaunch p = launch_of(PwOp::Add);
  // sign * alpha in each computation type, as the CPU's static_cast<C>(sign * alpha.to<C>()).
  p.s.d[0] = sign * alpha.to<double>();
  p.s.f[0] = static_cast<float>(sign * alpha.to<float>());
  p.s.i[0] = sign > 0 ? alpha.to<int64_t>() : ops::meta::wrapping_neg(alpha.to<int64_t>());
  it.run(p);
  return it.finish();
}

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return add_impl("add.Tensor", self, &other, nullptr, alpha, nullptr, false, 1);
}
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  add_impl("add_.Tensor", self, &other, nullptr, alpha, &self, true, 1);
  return self;
}
Tensor& add_out(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  add_impl("add.out", self, &other, nullptr, alpha, &out, false, 1);
  return out;
}
Tensor add_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return add_impl("add.Scalar", self, nullptr, &other, alpha, nullptr, false, 1);
}
Tensor& add_scalar_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  add_impl("add_.Scalar", self, nullptr, &other, alpha, &self, true, 1);
  return self;
}
Tensor& add_scalar_out(const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  add_impl("add.Scalar_out", self, nullptr, &other, alpha, &out, false, 1);
  return out;
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_sub_bool("sub.Tensor", self.dtype(), other.dtype());
  return add_impl("sub.Tensor", self, &other, nullptr, alpha, nullptr, false, -1);
}
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_sub_bool("sub_.Tensor", self.dtype(), other.dtype());
  add_impl("sub_.Tensor", self, &other, nullptr, alpha, &self, true, -1);
  return self;
}
Tensor& sub_out(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  check_sub_bool("sub.out", self.dtype(), other.dtype());
  add_impl("sub.out", self, &other, nullptr, alpha, &out, false, -1);
  return out;
}
Tensor sub_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  check_sub_bool("sub.Scalar", self.dtype(), bool_if(other));
  return add_impl("sub.Scalar", self, nullptr, &other, alpha, nullptr, false, -1);
}
Tensor& sub_scalar_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  check_sub_bool("sub_.Scalar", self.dtype(), bool_if(other));
  add_impl("sub_.Scalar", self, nullptr, &other, alpha, &self, true, -1);
  return self;
}
Tensor& sub_scalar_out(const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  check_sub_bool("sub.Scalar_out", self.dtype(), bool_if(other));
  add_impl("sub.Scalar_out", self, nullptr, &other, alpha, &out, false, -1);
  return out;
}

// ---- div / remainder / fmod --------------------------------------------------------------------

// A binary op of integers and floats whose integer form may divide by zero; self and other
// are each a tensor or a Scalar.
Tensor dividing_impl(std::string_view op, PwOp code, ResultRule rule, const Tensor* self,
                     const Scalar* scalar_self, const Tensor* other, const Scalar* scalar_other,
                     const Tensor* out, bool inplace) {
  CudaIterator it(op);
  if (self != nullptr) {
    it.add_input("self", *self);
  } else {
    it.add_scalar(*scalar_self);
  }
  if (other != nullptr) {
    it.add_input("other", *other);
  } else {
    it.add_scalar(*scalar_other);
  }
  it.set_rule(rule).set_variant_output(inplace ? self : out, inplace);
  it.build();
  check_dtype_category(op, it.common_dtype(), kInts | kFloats);
  run_checking_zero_division(it, launch_of(code));
  return it.finish();
}

PwOp div_code(Rounding r) {
  return r == Rounding::None ? PwOp::Div : r == Rounding::Trunc ? PwOp::DivTrunc : PwOp::DivFloor;
}
Tensor div_impl(std::string_view op, const Tensor& self, const Tensor* other,
                const Scalar* scalar_other, Rounding r, const Tensor* out, bool inplace) {
  return dividing_impl(op, div_code(r), ops::meta::div_result_rule(r), &self, nullptr, other,
                       scalar_other, out, inplace);
}

Tensor div(const Tensor& self, const Tensor& other) {
  return div_impl("div.Tensor", self, &other, nullptr, Rounding::None, nullptr, false);
}
Tensor& div_(Tensor& self, const Tensor& other) {
  div_impl("div_.Tensor", self, &other, nullptr, Rounding::None, &self, true);
  return self;
}
Tensor& div_out(const Tensor& self, const Tensor& other, Tensor& out) {
  div_impl("div.out", self, &other, nullptr, Rounding::None, &out, false);
  return out;
}
Tensor div_mode(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  const Rounding r = parse_rounding("div.Tensor_mode", mode);
  return div_impl("div.Tensor_mode", self, &other, nullptr, r, nullptr, false);
}
Tensor& div_mode_(Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  const Rounding r = parse_rounding("div_.Tensor_mode", mode);
  div_impl("div_.Tensor_mode", self, &other, nullptr, r, &self, true);
  return self;
}
Tensor& div_mode_out(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode,
                     Tensor& out) {
  const Rounding r = parse_rounding("div.out_mode", mode);
  div_impl("div.out_mode", self, &other, nullptr, r, &out, false);
  return out;
}
Tensor div_scalar(const Tensor& self, const Scalar& other) {
  return div_impl("div.Scalar", self, nullptr, &other, Rounding::None, nullptr, false);
}
Tensor& div_scalar_(Tensor& self, const Scalar& other) {
  div_impl("div_.Scalar", self, nullptr, &other, Rounding::None, &self, true);
  return self;
}
Tensor div_scalar_mode(const Tensor& self, const Scalar& other,
                       std::optional<std::string_view> mode) {
  const Rounding r = parse_rounding("div.Scalar_mode", mode);
  return div_impl("div.Scalar_mode", self, nullptr, &other, r, nullptr, false);
}
Tensor& div_scalar_mode_(Tensor& self, const Scalar& other, std::optional<std::string_view> mode) {
  const Rounding r = parse_rounding("div_.Scalar_mode", mode);
  div_impl("div_.Scalar_mode", self, nullptr, &other, r, &self, true);
  return self;
}

template <bool kPython>
struct ModKernels {
  static constexpr PwOp kCode = kPython ? PwOp::Remainder : PwOp::Fmod;
  static Tensor run(std::string_view op, const Tensor* self, const Scalar* scalar_self,
                    const Tensor* other, const Scalar* scalar_other, const Tensor* out,
                    bool inplace) {
    return dividing_impl(op, kCode, ResultRule::Common, self, scalar_self, other, scalar_other, out,
                         inplace);
  }
  static Tensor tensor(const Tensor& self, const Tensor& other) {
    return run(kPython ? "remainder.Tensor" : "fmod.Tensor", &self, nullptr, &other, nullptr,
               nullptr, false);
  }
  static Tensor& tensor_(Tensor& self, const Tensor& other) {
    run(kPython ? "remainder_.Tensor" : "fmod_.Tensor", &self, nullptr, &other, nullptr, &self,
        true);
    return self;
  }
  static Tensor& tensor_out(const Tensor& self, const Tensor& other, Tensor& out) {
    run(kPython ? "remainder.Tensor_out" : "fmod.Tensor_out", &self, nullptr, &other, nullptr, &out,
        false);
    return out;
  }
  static Tensor scalar(const Tensor& self, const Scalar& other) {
    return run(kPython ? "remainder.Scalar" : "fmod.Scalar", &self, nullptr, nullptr, &other,
               nullptr, false);
  }
  static Tensor& scalar_(Tensor& self, const Scalar& other) {
    run(kPython ? "remainder_.Scalar" : "fmod_.Scalar", &self, nullptr, nullptr, &other, &self,
        true);
    return self;
  }
  static Tensor& scalar_out(const Tensor& self, const Scalar& other, Tensor& out) {
    run(kPython ? "remainder.Scalar_out" : "fmod.Scalar_out", &self, nullptr, nullptr, &other, &out,
        false);
    return out;
  }
};

Tensor remainder_scalar_tensor(const Scalar& self, const Tensor& other) {
  return ModKernels<true>::run("remainder.Scalar_Tensor", nullptr, &self, &other, nullptr, nullptr,
                               false);
}

// ---- pow ---------------------------------------------------------------------------------------

Tensor pow_impl(std::string_view op, const Tensor* self, const Scalar* scalar_self,
                const Tensor* exponent, const Scalar* scalar_exp, const Tensor* out, bool inplace) {
  CudaIterator it(op);
  if (self != nullptr) {
    it.add_input("self", *self);
  } else {
    it.add_scalar(*scalar_self);
  }
  if (exponent != nullptr) {
    it.add_input("exponent", *exponent);
  } else {
    it.add_scalar(*scalar_exp);
  }
  it.set_variant_output(inplace ? self : out, inplace);
  it.build();
  ops::meta::check_pow_exponent(op, it.common_dtype(), scalar_exp);
  check_dtype_category(op, it.common_dtype(), kAllTypes);
  it.run(launch_of(scalar_exp != nullptr ? PwOp::PowScalarExp : PwOp::Pow));
  return it.finish();
}

Tensor pow_tt(const Tensor& self, const Tensor& exponent) {
  return pow_impl("pow.Tensor_Tensor", &self, nullptr, &exponent, nullptr, nullptr, false);
}
Tensor& pow_tt_out(const Tensor& self, const Tensor& exponent, Tensor& out) {
  pow_impl("pow.Tensor_Tensor_out", &self, nullptr, &exponent, nullptr, &out, false);
  return out;
}
Tensor& pow_tensor_(Tensor& self, const Tensor& exponent) {
  pow_impl("pow_.Tensor", &self, nullptr, &exponent, nullptr, &self, true);
  return self;
}
Tensor pow_ts(const Tensor& self, const Scalar& exponent) {
  return pow_impl("pow.Tensor_Scalar", &self, nullptr, nullptr, &exponent, nullptr, false);
}
Tensor& pow_ts_out(const Tensor& self, const Scalar& exponent, Tensor& out) {
  pow_impl("pow.Tensor_Scalar_out", &self, nullptr, nullptr, &exponent, &out, false);
  return out;
}
Tensor& pow_scalar_(Tensor& self, const Scalar& exponent) {
  pow_impl("pow_.Scalar", &self, nullptr, nullptr, &exponent, &self, true);
  return self;
}
Tensor pow_st(const Scalar& self, const Tensor& exponent) {
  return pow_impl("pow.Scalar", nullptr, &self, &exponent, nullptr, nullptr, false);
}
Tensor& pow_st_out(const Scalar& self, const Tensor& exponent, Tensor& out) {
  pow_impl("pow.Scalar_out", nullptr, &self, &exponent, nullptr, &out, false);
  return out;
}

// ---- round(decimals), clamp, nan_to_num -----------------------------------------------------

PointwiseLaunch round_decimals_launch(int64_t decimals) {
  PointwiseLaunch p;
  set_slot_double(p.s, 0, std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals)));
  p.s.i[0] = decimals < 0 ? 1 : 0;  // only float computation reads slot 0 as a value
  return p;
}
Tensor round_decimals(const Tensor& self, int64_t decimals) {
  return unary_run("round.decimals", PwOp::RoundDecimals, kFloats, ResultRule::Common, self,
                   nullptr, false, round_decimals_launch(decimals));
}
Tensor& round_decimals_(Tensor& self, int64_t decimals) {
  unary_run("round_.decimals", PwOp::RoundDecimals, kFloats, ResultRule::Common, self, &self, true,
            round_decimals_launch(decimals));
  return self;
}
Tensor& round_decimals_out(const Tensor& self, int64_t decimals, Tensor& out) {
  unary_run("round.decimals_out", PwOp::RoundDecimals, kFloats, ResultRule::Common, self, &out,
            false, round_decimals_launch(decimals));
  return out;
}

Tensor clamp_impl(std::string_view op, const Tensor& self, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max, const Tensor* out, bool inplace) {
  check_clamp_bounds(op, min.has_value(), max.has_value());
  CudaIterator it(op);
  it.add_input("self", self);
  if (min) it.add_promotion_scalar(*min);
  if (max) it.add_promotion_scalar(*max);
  it.set_variant_output(inplace ? &self : out, inplace);
  it.build();
  check_dtype_category(op, it.common_dtype(), kInts | kFloats);
  ops::meta::check_clamp_scalar_bounds(op, it.common_dtype(), min, max);
  PointwiseLaunch p = launch_of(PwOp::ClampScalar);
  if (min) set_slot(p.s, 0, *min);
  if (max) set_slot(p.s, 1, *max);
  p.s.i[2] = (min ? 1 : 0) | (max ? 2 : 0);
  it.run(p);
  return it.finish();
}

Tensor clamp_tensor_impl(std::string_view op, const Tensor& self, const std::optional<Tensor>& min,
                         const std::optional<Tensor>& max, const Tensor* out, bool inplace) {
  const bool has_min = min && min->defined(), has_max = max && max->defined();
  check_clamp_bounds(op, has_min, has_max);
  CudaIterator it(op);
  it.add_input("self", self);
  if (has_min) it.add_input("min", *min);
  if (has_max) it.add_input("max", *max);
  it.set_variant_output(inplace ? &self : out, inplace);
  it.build();
  check_dtype_category(op, it.common_dtype(), kInts | kFloats);
  it.run(launch_of(has_min && has_max ? PwOp::Clamp : has_min ? PwOp::ClampMin : PwOp::ClampMax));
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

Tensor nan_to_num_impl(std::string_view op, const Tensor& self, std::optional<double> nan,
                       std::optional<double> posinf, std::optional<double> neginf,
                       const Tensor* out, bool inplace) {
  CudaIterator it(op);
  it.add_input("self", self).set_variant_output(inplace ? &self : out, inplace);
  it.build();
  PointwiseLaunch p = launch_of(PwOp::NanToNum);
  const double big = is_floating_point(it.common_dtype()) ? max_finite(it.common_dtype()) : 0;
  set_slot_double(p.s, 0, nan.value_or(0.0));
  set_slot_double(p.s, 1, posinf.value_or(big));
  set_slot_double(p.s, 2, neginf.value_or(-big));
  it.run(p);
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

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  // binary.cpp
  m.impl("add.Tensor", &add);
  m.impl("add_.Tensor", &add_);
  m.impl("add.out", &add_out);
  m.impl("add.Scalar", &add_scalar);
  m.impl("add_.Scalar", &add_scalar_);
  m.impl("add.Scalar_out", &add_scalar_out);
  m.impl("sub.Tensor", &sub);
  m.impl("sub_.Tensor", &sub_);
  m.impl("sub.out", &sub_out);
  m.impl("sub.Scalar", &sub_scalar);
  m.impl("sub_.Scalar", &sub_scalar_);
  m.impl("sub.Scalar_out", &sub_scalar_out);
  m.impl("mul.Tensor", &binary_fn<Mul>);
  m.impl("mul_.Tensor", &binary_inplace<Mul>);
  m.impl("mul.out", &binary_out<Mul>);
  m.impl("mul.Scalar", &binary_scalar_fn<Mul>);
  m.impl("mul_.Scalar", &binary_scalar_inplace<Mul>);
  m.impl("mul.Scalar_out", &binary_scalar_out<Mul>);
  m.impl("div.Tensor", &div);
  m.impl("div_.Tensor", &div_);
  m.impl("div.out", &div_out);
  m.impl("div.Tensor_mode", &div_mode);
  m.impl("div_.Tensor_mode", &div_mode_);
  m.impl("div.out_mode", &div_mode_out);
  m.impl("div.Scalar", &div_scalar);
  m.impl("div_.Scalar", &div_scalar_);
  m.impl("div.Scalar_mode", &div_scalar_mode);
  m.impl("div_.Scalar_mode", &div_scalar_mode_);
  m.impl("remainder.Tensor", &ModKernels<true>::tensor);
  m.impl("remainder_.Tensor", &ModKernels<true>::tensor_);
  m.impl("remainder.Tensor_out", &ModKernels<true>::tensor_out);
  m.impl("remainder.Scalar", &ModKernels<true>::scalar);
  m.impl("remainder_.Scalar", &ModKernels<true>::scalar_);
  m.impl("remainder.Scalar_out", &ModKernels<true>::scalar_out);
  m.impl("remainder.Scalar_Tensor", &remainder_scalar_tensor);
  m.impl("fmod.Tensor", &ModKernels<false>::tensor);
  m.impl("fmod_.Tensor", &ModKernels<false>::tensor_);
  m.impl("fmod.Tensor_out", &ModKernels<false>::tensor_out);
  m.impl("fmod.Scalar", &ModKernels<false>::scalar);
  m.impl("fmod_.Scalar", &ModKernels<false>::scalar_);
  m.impl("fmod.Scalar_out", &ModKernels<false>::scalar_out);
  m.impl("pow.Tensor_Tensor", &pow_tt);
  m.impl("pow.Tensor_Tensor_out", &pow_tt_out);
  m.impl("pow_.Tensor", &pow_tensor_);
  m.impl("pow.Tensor_Scalar", &pow_ts);
  m.impl("pow.Tensor_Scalar_out", &pow_ts_out);
  m.impl("pow_.Scalar", &pow_scalar_);
  m.impl("pow.Scalar", &pow_st);
  m.impl("pow.Scalar_out", &pow_st_out);
  m.impl("maximum", &binary_fn<Maximum>);
  m.impl("maximum.out", &binary_out<Maximum>);
  m.impl("minimum", &binary_fn<Minimum>);
  m.impl("minimum.out", &binary_out<Minimum>);
  register_binary<Atan2>(m);
  // compare.cpp
  register_tensor_scalar<Eq>(m, "eq");
  register_tensor_scalar<Ne>(m, "ne");
  register_tensor_scalar<Lt>(m, "lt");
  register_tensor_scalar<Le>(m, "le");
  register_tensor_scalar<Gt>(m, "gt");
  register_tensor_scalar<Ge>(m, "ge");
  register_tensor_scalar<BitwiseAnd>(m, "bitwise_and");
  register_tensor_scalar<BitwiseOr>(m, "bitwise_or");
  register_tensor_scalar<BitwiseXor>(m, "bitwise_xor");
  register_unary<BitwiseNot>(m);
  register_binary<LogicalAnd>(m);
  register_binary<LogicalOr>(m);
  register_binary<LogicalXor>(m);
  register_unary<LogicalNot>(m);
  // unary.cpp
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

}  // namespace loom::cuda
