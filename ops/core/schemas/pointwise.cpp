// Schemas of the pointwise ops, copy/conversion and fill, in PyTorch's spelling
// (native_functions.yaml). relu6 is a composite of hardtanh in PyTorch; here it has a kernel.
#include "loom/dispatcher/library.h"

LOOM_LIBRARY_FRAGMENT(aten, m) {
  m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  m.def("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  m.def("add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)");
  m.def(
      "add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  m.def("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  m.def("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)");
  m.def(
      "sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("mul.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("mul.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("div.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor");
  m.def("div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)");
  m.def(
      "div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> "
      "Tensor(a!)");
  m.def("div.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor");
  m.def("div_.Scalar_mode(Tensor(a!) self, Scalar other, *, str? rounding_mode) -> Tensor(a!)");
  m.def("remainder.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("remainder_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("remainder.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("remainder.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("remainder_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("fmod.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("fmod_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("fmod.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("fmod_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor");
  m.def("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor");
  m.def("pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)");
  m.def("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor");
  m.def("pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)");
  m.def("pow.Scalar(Scalar self, Tensor exponent) -> Tensor");
  m.def("pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("maximum(Tensor self, Tensor other) -> Tensor");
  m.def("maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("minimum(Tensor self, Tensor other) -> Tensor");
  m.def("minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("atan2(Tensor self, Tensor other) -> Tensor");
  m.def("atan2_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("eq.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("eq_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("eq.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("eq_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("eq.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ne.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("ne_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("ne.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ne.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("ne_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("ne.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("lt.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("lt_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("lt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("lt.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("lt_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("lt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("le.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("le_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("le.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("le.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("le_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("le.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("gt.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("gt_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("gt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("gt.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("gt_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("gt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ge.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("ge_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("ge.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ge.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("ge_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("ge.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("logical_and(Tensor self, Tensor other) -> Tensor");
  m.def("logical_and_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("logical_and.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("logical_or(Tensor self, Tensor other) -> Tensor");
  m.def("logical_or_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("logical_or.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("logical_xor(Tensor self, Tensor other) -> Tensor");
  m.def("logical_xor_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("logical_xor.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("logical_not(Tensor self) -> Tensor");
  m.def("logical_not_(Tensor(a!) self) -> Tensor(a!)");
  m.def("logical_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_and_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("bitwise_and.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("bitwise_and_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("bitwise_and.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_or_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("bitwise_or.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("bitwise_or_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("bitwise_or.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_xor_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("bitwise_xor.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("bitwise_xor_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("bitwise_xor.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_not(Tensor self) -> Tensor");
  m.def("bitwise_not_(Tensor(a!) self) -> Tensor(a!)");
  m.def("bitwise_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor");
  m.def(
      "where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> "
      "Tensor(a!)");
  m.def("lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor");
  m.def("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor");
  m.def("lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)");
  m.def("lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)");
  m.def("lerp.Scalar_out(Tensor self, Tensor end, Scalar weight, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("lerp.Tensor_out(Tensor self, Tensor end, Tensor weight, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor");
  m.def(
      "addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)");
  m.def(
      "addcmul.out(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1, Tensor(a!) out) "
      "-> Tensor(a!)");
  m.def("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor");
  m.def(
      "addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)");
  m.def(
      "addcdiv.out(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1, Tensor(a!) out) "
      "-> Tensor(a!)");
  m.def("neg(Tensor self) -> Tensor");
  m.def("neg_(Tensor(a!) self) -> Tensor(a!)");
  m.def("neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("abs(Tensor self) -> Tensor");
  m.def("abs_(Tensor(a!) self) -> Tensor(a!)");
  m.def("abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sign(Tensor self) -> Tensor");
  m.def("sign_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sign.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("exp(Tensor self) -> Tensor");
  m.def("exp_(Tensor(a!) self) -> Tensor(a!)");
  m.def("exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("exp2(Tensor self) -> Tensor");
  m.def("exp2_(Tensor(a!) self) -> Tensor(a!)");
  m.def("exp2.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("log(Tensor self) -> Tensor");
  m.def("log_(Tensor(a!) self) -> Tensor(a!)");
  m.def("log.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("log2(Tensor self) -> Tensor");
  m.def("log2_(Tensor(a!) self) -> Tensor(a!)");
  m.def("log2.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("log1p(Tensor self) -> Tensor");
  m.def("log1p_(Tensor(a!) self) -> Tensor(a!)");
  m.def("log1p.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("expm1(Tensor self) -> Tensor");
  m.def("expm1_(Tensor(a!) self) -> Tensor(a!)");
  m.def("expm1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sqrt(Tensor self) -> Tensor");
  m.def("sqrt_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("rsqrt(Tensor self) -> Tensor");
  m.def("rsqrt_(Tensor(a!) self) -> Tensor(a!)");
  m.def("rsqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("reciprocal(Tensor self) -> Tensor");
  m.def("reciprocal_(Tensor(a!) self) -> Tensor(a!)");
  m.def("reciprocal.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sin(Tensor self) -> Tensor");
  m.def("sin_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("cos(Tensor self) -> Tensor");
  m.def("cos_(Tensor(a!) self) -> Tensor(a!)");
  m.def("cos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("tan(Tensor self) -> Tensor");
  m.def("tan_(Tensor(a!) self) -> Tensor(a!)");
  m.def("tan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("tanh(Tensor self) -> Tensor");
  m.def("tanh_(Tensor(a!) self) -> Tensor(a!)");
  m.def("tanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sigmoid(Tensor self) -> Tensor");
  m.def("sigmoid_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("erf(Tensor self) -> Tensor");
  m.def("erf_(Tensor(a!) self) -> Tensor(a!)");
  m.def("erf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("floor(Tensor self) -> Tensor");
  m.def("floor_(Tensor(a!) self) -> Tensor(a!)");
  m.def("floor.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ceil(Tensor self) -> Tensor");
  m.def("ceil_(Tensor(a!) self) -> Tensor(a!)");
  m.def("ceil.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("round(Tensor self) -> Tensor");
  m.def("round_(Tensor(a!) self) -> Tensor(a!)");
  m.def("round.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("trunc(Tensor self) -> Tensor");
  m.def("trunc_(Tensor(a!) self) -> Tensor(a!)");
  m.def("trunc.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("round.decimals(Tensor self, *, int decimals) -> Tensor");
  m.def("round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)");
  m.def("round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out) -> Tensor(a!)");
  m.def("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor");
  m.def("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor");
  m.def("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)");
  m.def("clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)");
  m.def(
      "clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> "
      "Tensor(a!)");
  m.def(
      "clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> "
      "Tensor(a!)");
  m.def(
      "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor");
  m.def(
      "nan_to_num_(Tensor(a!) self, float? nan=None, float? posinf=None, float? neginf=None) -> "
      "Tensor(a!)");
  m.def(
      "nan_to_num.out(Tensor self, float? nan=None, float? posinf=None, float? neginf=None, *, "
      "Tensor(a!) out) -> Tensor(a!)");
  m.def("relu(Tensor self) -> Tensor");
  m.def("relu_(Tensor(a!) self) -> Tensor(a!)");
  m.def("threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor");
  m.def("relu6(Tensor self) -> Tensor");
  m.def("relu6_(Tensor(a!) self) -> Tensor(a!)");
  m.def("selu(Tensor self) -> Tensor");
  m.def("selu_(Tensor(a!) self) -> Tensor(a!)");
  m.def("silu(Tensor self) -> Tensor");
  m.def("silu_(Tensor(a!) self) -> Tensor(a!)");
  m.def("silu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("mish(Tensor self) -> Tensor");
  m.def("mish_(Tensor(a!) self) -> Tensor(a!)");
  m.def("mish.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("hardsigmoid(Tensor self) -> Tensor");
  m.def("hardsigmoid_(Tensor(a!) self) -> Tensor(a!)");
  m.def("hardsigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("hardswish(Tensor self) -> Tensor");
  m.def("hardswish_(Tensor(a!) self) -> Tensor(a!)");
  m.def("hardswish.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor");
  m.def("leaky_relu_(Tensor(a!) self, Scalar negative_slope=0.01) -> Tensor(a!)");
  m.def("leaky_relu.out(Tensor self, Scalar negative_slope=0.01, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor");
  m.def(
      "elu_(Tensor(a!) self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor(a!)");
  m.def(
      "elu.out(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *, Tensor(a!) "
      "out) -> Tensor(a!)");
  m.def("gelu(Tensor self, *, str approximate='none') -> Tensor");
  m.def("gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)");
  m.def("gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)");
  m.def("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor");
  m.def(
      "softplus.out(Tensor self, Scalar beta=1, Scalar threshold=20, *, Tensor(a!) out) -> "
      "Tensor(a!)");
  m.def("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor");
  m.def("hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)");
  m.def(
      "hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out) -> "
      "Tensor(a!)");
  m.def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)");
  m.def("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor");
  m.def("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)");
  m.def(
      "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
      "MemoryFormat? memory_format=None) -> Tensor(a)");
  m.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)");
  m.def("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)");
  m.def("zero_(Tensor(a!) self) -> Tensor(a!)");
}
