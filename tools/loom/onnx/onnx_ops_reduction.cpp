// ONNX reductions, ArgMax/ArgMin, CumSum, the softmax family and the matrix products
// (Note [ONNX op mappings]).
#include <numeric>

#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "onnx_ops.h"

namespace loom::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/// The axes a Reduce* node reduces over: from its `axes` input (ReduceSum from opset 13, the
/// others from opset 18) or attribute; none means all, unless noop_with_empty_axes.
struct ReduceAxes {
  std::vector<int64_t> dims;  ///< wrapped, ascending
  bool keepdims = true;       ///< keep reduced dims as size 1
  bool noop = false;          ///< no axes and noop_with_empty_axes: the input unchanged
};

ReduceAxes reduce_axes(const NodeContext& ctx, const Tensor& x, int64_t axes_input_since) {
  ReduceAxes r;
  r.keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool noop_with_empty_axes = ctx.attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  if (ctx.opset() >= axes_input_since) {
    if (ctx.has_input(1)) axes = int_values(ctx.input(1));
  } else if (auto a = ctx.attr_ints("axes")) {
    axes = *a;
  }
  if (axes.empty()) {
    r.noop = noop_with_empty_axes;
    r.dims.resize(static_cast<size_t>(x.dim()));
    std::iota(r.dims.begin(), r.dims.end(), 0);
  } else {
    r.dims = wrap_axes(ctx, axes, x.dim());
    std::sort(r.dims.begin(), r.dims.end());
    r.dims.erase(std::unique(r.dims.begin(), r.dims.end()), r.dims.end());
  }
  return r;
}

/// Runs a Reduce* node: f(x, dims, keepdim) over the node's axes, the result cast back to
/// the input's dtype (PyTorch widens integer sums to int64; ONNX keeps the type).
template <typename F>
Outputs reduce(const NodeContext& ctx, int64_t axes_input_since, F f) {
  const Tensor& x = ctx.input(0);
  const ReduceAxes r = reduce_axes(ctx, x, axes_input_since);
  if (r.noop) return one(x);
  if (x.dim() == 0) return one(x);
  return one(cast_to(f(x, IntArrayRef(r.dims), r.keepdims), x.dtype()));
}

Tensor sum_of_squares(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return sum(mul(x, x), dims, keepdim);
}

/// prod over several dims (the pack's prod takes one dim at a time).
Tensor prod_dims(const Tensor& x, IntArrayRef dims, bool keepdim) {
  Tensor y = x;
  for (int64_t d : dims) y = prod(y, d, /*keepdim=*/true);
  if (keepdim) return y;
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) shape.push_back(x.size(d));
  }
  return reshape(y, shape);
}

Outputs arg_op(const NodeContext& ctx, bool is_max) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", 0), x.dim());
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.attr_int("select_last_index", 0) != 0;
  auto arg = [&](const Tensor& t) {
    return is_max ? argmax(t, axis, keepdims) : argmin(t, axis, keepdims);
  };
  if (!last) return one(arg(x));
  // The last index of the extreme value is the first one in the flipped tensor.
  const Tensor idx = arg(flip(x, {axis}));
  return one(add(neg(idx), x.size(axis) - 1));
}

Outputs cumsum_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = wrap_axis(ctx, scalar_value(ctx.input(1)).to<int64_t>(), x.dim());
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.attr_int("reverse", 0) != 0;
  const Tensor in = reverse ? flip(x, {axis}) : x;
  Tensor y = cumsum(in, axis);
  if (exclusive) y = sub(y, in);
  if (reverse) y = flip(y, {axis});
  return one(cast_to(y, x.dtype()));
}

/// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D
/// [prod(shape[:axis]), prod(shape[axis:])] and the op runs over the second dim; from 13 it
/// runs over `axis` alone.
template <typename F>
Outputs softmax_family(const NodeContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  const bool legacy = ctx.opset() < 13;
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", legacy ? 1 : -1), x.dim());
  if (!legacy || x.dim() <= 1) return one(f(x, x.dim() == 0 ? 0 : axis));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  const int64_t inner = outer == 0 ? 0 : x.numel() / outer;
  const Tensor y = f(reshape(x, {outer, inner}), 1);
  return one(reshape(y, shape_of(x)));
}

/// 1 at the first maximum along dim, 0 elsewhere.
Tensor hardmax(const Tensor& x, int64_t dim) {
  const Tensor idx = argmax(x, dim, /*keepdim=*/true);
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[dim] = x.size(dim);
  const Tensor positions = reshape(arange(x.size(dim)), shape);
  return cast_to(eq(idx, positions), x.dtype());
}

Outputs gemm_op(const NodeContext& ctx) {
  ctx.ignore_attr("broadcast");  // opset < 7: C broadcasts since 7 anyway
  Tensor a = ctx.input(0), b = ctx.input(1);
  if (ctx.attr_int("transA", 0) != 0) a = t(a);
  if (ctx.attr_int("transB", 0) != 0) b = t(b);
  const double alpha = ctx.attr_float("alpha", 1.0f), beta = ctx.attr_float("beta", 1.0f);
  Tensor y = mm(a, b);
  if (alpha != 1.0) y = mul(y, alpha);
  if (ctx.has_input(2) && beta != 0.0) {
    const Tensor& c = ctx.input(2);
    y = add(y, beta == 1.0 ? c : mul(c, beta));
  }
  return one(y);
}

Outputs einsum_op(const NodeContext& ctx) {
  std::string equation = ctx.attr_string("equation", "");
  std::erase(equation, ' ');
  std::vector<Tensor> operands;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) operands.push_back(ctx.input(i));
  return one(einsum(equation, operands));
}

}  // namespace

void add_reduction_ops(OpTable& t) {
  t["ReduceSum"] = [](const NodeContext& c) {
    return reduce(c, 13, [](const Tensor& x, IntArrayRef d, bool k) { return sum(x, d, k); });
  };
  t["ReduceMean"] = [](const NodeContext& c) {
    return reduce(c, 18, [](const Tensor& x, IntArrayRef d, bool k) { return mean(x, d, k); });
  };
  t["ReduceMax"] = [](const NodeContext& c) {
    return reduce(c, 18, [](const Tensor& x, IntArrayRef d, bool k) { return amax(x, d, k); });
  };
  t["ReduceMin"] = [](const NodeContext& c) {
    return reduce(c, 18, [](const Tensor& x, IntArrayRef d, bool k) { return amin(x, d, k); });
  };
  t["ReduceProd"] = [](const NodeContext& c) { return reduce(c, 18, prod_dims); };
  t["ReduceSumSquare"] = [](const NodeContext& c) { return reduce(c, 18, sum_of_squares); };
  t["ReduceL1"] = [](const NodeContext& c) {
    return reduce(c, 18, [](const Tensor& x, IntArrayRef d, bool k) { return sum(abs(x), d, k); });
  };
  t["ReduceL2"] = [](const NodeContext& c) {
    return reduce(c, 18, [](const Tensor& x, IntArrayRef d, bool k) {
      return sqrt(sum_of_squares(x, d, k));
    });
  };
  t["ReduceLogSum"] = [](const NodeContext& c) {
    return reduce(c, 18, [](const Tensor& x, IntArrayRef d, bool k) { return log(sum(x, d, k)); });
  };
  t["ReduceLogSumExp"] = [](const NodeContext& c) {
    return reduce(c, 18,
                  [](const Tensor& x, IntArrayRef d, bool k) { return logsumexp(x, d, k); });
  };
  t["ArgMax"] = [](const NodeContext& c) { return arg_op(c, true); };
  t["ArgMin"] = [](const NodeContext& c) { return arg_op(c, false); };
  t["CumSum"] = cumsum_op;

  t["Softmax"] = [](const NodeContext& c) {
    return softmax_family(c, [](const Tensor& x, int64_t d) { return softmax(x, d); });
  };
  t["LogSoftmax"] = [](const NodeContext& c) {
    return softmax_family(c, [](const Tensor& x, int64_t d) { return log_softmax(x, d); });
  };
  t["Hardmax"] = [](const NodeContext& c) { return softmax_family(c, hardmax); };

  t["MatMul"] = [](const NodeContext& c) { return one(matmul(c.input(0), c.input(1))); };
  t["Gemm"] = gemm_op;
  t["Einsum"] = einsum_op;
}

}  // namespace loom::onnx
