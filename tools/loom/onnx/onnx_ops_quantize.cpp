// ONNX's linear quantization ops and integer matrix products, composed from core ops
// (Note [ONNX op mappings]): q = saturate(round_half_even(x / scale) + zero_point).
#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "onnx_ops.h"

namespace loom::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/// The range of a quantized type. @throws NotSupported for one other than uint8 / int8
std::pair<double, double> quantized_range(const NodeContext& ctx, DType dtype) {
  if (dtype == DType::UInt8) return {0.0, 255.0};
  if (dtype == DType::Int8) return {-128.0, 127.0};
  throw NotSupported(str_cat(ctx.where(), ": quantized type ", dtype_name(dtype)));
}

/// A per-axis (1-D) scale or zero point viewed to broadcast along `axis` of x; a scalar as is.
Tensor along_axis(const NodeContext& ctx, const Tensor& v, const Tensor& x) {
  if (v.dim() == 0 || v.numel() == 1) return reshape(v, {});
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", 1), x.dim());
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[axis] = v.numel();
  return reshape(v, shape);
}

/// saturate(round(x / scale) + zero_point) in dtype.
Tensor quantize(const NodeContext& ctx, const Tensor& x, const Tensor& scale,
                const Tensor& zero_point, DType dtype) {
  const auto [lo, hi] = quantized_range(ctx, dtype);
  Tensor q = round(div(x, scale));
  if (zero_point.defined()) q = add(q, cast_to(zero_point, q.dtype()));
  return cast_to(clamp(q, Scalar(lo), Scalar(hi)), dtype);
}

Outputs quantize_linear_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  ctx.ignore_attr("saturate");  // float8 outputs only
  const Tensor zp = ctx.optional_input(2);
  const DType dtype = zp.defined() ? zp.dtype() : DType::UInt8;
  return one(quantize(ctx, x, along_axis(ctx, ctx.input(1), x),
                      zp.defined() ? along_axis(ctx, zp, x) : Tensor(), dtype));
}

Outputs dequantize_linear_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor scale = along_axis(ctx, ctx.input(1), x);
  Tensor v = cast_to(x, scale.dtype());
  if (ctx.has_input(2)) v = sub(v, cast_to(along_axis(ctx, ctx.input(2), x), scale.dtype()));
  return one(mul(v, scale));
}

/// y_scale = (max(0, max x) - min(0, min x)) / 255, a uint8 zero point, and y.
Outputs dynamic_quantize_linear_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor hi = clamp(max(x), Scalar(0.0), std::nullopt);
  const Tensor lo = clamp(min(x), std::nullopt, Scalar(0.0));
  const Tensor scale = div(sub(hi, lo), 255.0);
  const Tensor zp = cast_to(clamp(round(div(neg(lo), scale)), Scalar(0.0), Scalar(255.0)),
                            DType::UInt8);
  return {quantize(ctx, x, scale, zp, DType::UInt8), scale, zp};
}

/// (a - a_zero_point) @ (b - b_zero_point) in int32. The product runs in float64, exact for
/// 8-bit operands and the sizes where int32 does not overflow.
Outputs matmul_integer_op(const NodeContext& ctx) {
  Tensor a = cast_to(ctx.input(0), DType::Float64), b = cast_to(ctx.input(1), DType::Float64);
  if (ctx.has_input(2)) {
    Tensor zp = cast_to(ctx.input(2), DType::Float64);
    if (zp.dim() == 1 && zp.numel() > 1) zp = unsqueeze(zp, 1);  // one per row of a
    a = sub(a, zp);
  }
  if (ctx.has_input(3)) b = sub(b, cast_to(ctx.input(3), DType::Float64));
  return one(cast_to(matmul(a, b), DType::Int32));
}

/// Dequantize both operands, multiply, quantize with the output's scale and zero point.
Outputs qlinear_matmul_op(const NodeContext& ctx) {
  auto dequantize = [&](size_t q, size_t scale, size_t zp) {
    const Tensor s = cast_to(ctx.input(scale), DType::Float64);
    return mul(sub(cast_to(ctx.input(q), DType::Float64), cast_to(ctx.input(zp), DType::Float64)),
               s);
  };
  const Tensor product = matmul(dequantize(0, 1, 2), dequantize(3, 4, 5));
  const Tensor& y_zp = ctx.input(7);
  return one(quantize(ctx, product, cast_to(ctx.input(6), DType::Float64), y_zp, y_zp.dtype()));
}

}  // namespace

void add_quantize_ops(OpTable& t) {
  t["QuantizeLinear"] = quantize_linear_op;
  t["DequantizeLinear"] = dequantize_linear_op;
  t["DynamicQuantizeLinear"] = dynamic_quantize_linear_op;
  t["MatMulInteger"] = matmul_integer_op;
  t["QLinearMatMul"] = qlinear_matmul_op;
}

}  // namespace loom::onnx
