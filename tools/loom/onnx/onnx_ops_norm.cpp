// ONNX normalizations and losses (Note [ONNX op mappings]). BatchNormalization and
// LayerNormalization call ops_nn's native_batch_norm / native_layer_norm when they are
// registered and otherwise compose ONNX's formula from core ops; the others are compositions.
#include <cmath>
#include <numeric>

#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "onnx_ops.h"

namespace loom::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/// A per-channel vector [C] viewed as [1, C, 1, ...] to broadcast against x [N, C, ...].
Tensor per_channel(const Tensor& v, int64_t rank) {
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[1] = v.numel();
  return reshape(v, shape);
}

/// Every dim of x but dim 1 (the channels).
std::vector<int64_t> all_but_channels(const Tensor& x) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != 1) dims.push_back(d);
  }
  return dims;
}

/// mean over dims, without keeping them.
Tensor mean_of(const Tensor& x, const std::vector<int64_t>& dims) { return mean(x, dims, false); }

/// (x - mean) / sqrt(var + eps) * scale + bias, all broadcast.
Tensor normalize(const Tensor& x, const Tensor& mean, const Tensor& var, double eps,
                 const Tensor& scale, const Tensor& bias) {
  Tensor y = mul(sub(x, mean), rsqrt(add(var, eps)));
  if (scale.defined()) y = mul(y, scale);
  if (bias.defined()) y = add(y, bias);
  return y;
}

Outputs batch_norm_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  const Tensor& mean = ctx.input(3);
  const Tensor& var = ctx.input(4);
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  const double momentum = ctx.attr_float("momentum", 0.9f);
  if (ctx.opset() < 9 && ctx.attr_int("spatial", 1) == 0) {
    throw NotSupported(str_cat(ctx.where(), ": spatial=0 (per-activation statistics)"));
  }
  ctx.ignore_attr("consumed_inputs");  // opset < 6 bookkeeping
  // Training mode: the attribute from opset 14; before, asking for the statistics outputs.
  const bool training = ctx.opset() >= 14 ? ctx.attr_int("training_mode", 0) != 0
                                          : ctx.num_outputs() > 1 && ctx.wants_output(1);
  if (ctx.opset() < 7 && ctx.attr_int("is_test", 0) == 0 && training) {
    throw NotSupported(str_cat(ctx.where(), ": is_test=0"));
  }
  const int64_t r = x.dim();
  if (!training) {
    if (has_op("aten::native_batch_norm")) {
      const Stack out = call_optional_op("aten::native_batch_norm",
                                         {x, scale, bias, mean, var, false, momentum, eps});
      return one(out.at(0).to_tensor());
    }
    return one(normalize(x, per_channel(mean, r), per_channel(var, r), eps, per_channel(scale, r),
                         per_channel(bias, r)));
  }
  if (ctx.opset() < 14) {
    throw NotSupported(str_cat(ctx.where(), ": training-mode outputs before opset 14"));
  }
  // ONNX's training mode: batch statistics (biased variance) normalize x, and the running
  // statistics blend in with weight 1 - momentum.
  const std::vector<int64_t> dims = all_but_channels(x);
  const Tensor batch_mean = mean_of(x, dims);
  const Tensor centered = sub(x, per_channel(batch_mean, r));
  const Tensor batch_var = mean_of(mul(centered, centered), dims);
  const Tensor y = normalize(x, per_channel(batch_mean, r), per_channel(batch_var, r), eps,
                             per_channel(scale, r), per_channel(bias, r));
  const Tensor running_mean = add(mul(mean, momentum), mul(batch_mean, 1.0 - momentum));
  const Tensor running_var = add(mul(var, momentum), mul(batch_var, 1.0 - momentum));
  return {y, running_mean, running_var};
}

Outputs layer_norm_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor bias = ctx.optional_input(2);
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", -1), x.dim());
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  // Mean and InvStdDev have the stash type, in which the statistics are computed.
  const DType stash = to_dtype_or_skip(static_cast<int32_t>(ctx.attr_int("stash_type", 1)),
                                       ctx.where());
  std::vector<int64_t> dims(static_cast<size_t>(x.dim() - axis));
  std::iota(dims.begin(), dims.end(), axis);
  if (x.dtype() == stash && has_op("aten::native_layer_norm")) {
    const std::vector<int64_t> normalized(x.sizes().begin() + axis, x.sizes().end());
    const Stack out = call_optional_op("aten::native_layer_norm",
                                       {x, normalized, scale, bias.defined() ? IValue(bias) : IValue(), eps});
    return {out.at(0).to_tensor(), out.at(1).to_tensor(), out.at(2).to_tensor()};
  }
  const Tensor xs = cast_to(x, stash);
  const Tensor m = mean(xs, dims, /*keepdim=*/true);
  const Tensor centered = sub(xs, m);
  const Tensor inv_std = rsqrt(add(mean(mul(centered, centered), dims, true), eps));
  Tensor y = cast_to(mul(centered, inv_std), x.dtype());
  y = mul(y, scale);
  if (bias.defined()) y = add(y, bias);
  return {y, m, inv_std};
}

Outputs instance_norm_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  std::vector<int64_t> dims(static_cast<size_t>(x.dim() - 2));
  std::iota(dims.begin(), dims.end(), 2);
  const Tensor m = mean(x, dims, true);
  const Tensor centered = sub(x, m);
  const Tensor var = mean(mul(centered, centered), dims, true);
  return one(normalize(x, m, var, eps, per_channel(ctx.input(1), x.dim()),
                       per_channel(ctx.input(2), x.dim())));
}

/// MeanVarianceNormalization, as its ONNX function body computes it:
/// (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
Outputs mvn_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> axes =
      wrap_axes(ctx, ctx.attr_ints("axes").value_or(std::vector<int64_t>{0, 2, 3}), x.dim());
  const Tensor m = mean(x, axes, true);
  const Tensor variance = sub(mean(mul(x, x), axes, true), mul(m, m));
  return one(div(sub(x, m), add(sqrt(variance), 1e-9)));
}

/// LRN: x / (bias + alpha / size * (sum of x^2 over `size` neighbouring channels))^beta.
Outputs lrn_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t size = ctx.attr_int("size", 0);
  const double alpha = ctx.attr_float("alpha", 1e-4f), beta = ctx.attr_float("beta", 0.75f);
  const double bias = ctx.attr_float("bias", 1.0f);
  if (size <= 0 || x.dim() < 3) {
    throw ValueError(str_cat(ctx.where(), ": size ", size, " for input ", x.describe()));
  }
  const int64_t c = x.size(1);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<int64_t> pad_shape = shape_of(x);
  const Tensor sq = mul(x, x);
  pad_shape[1] = before;
  const Tensor front = zeros(pad_shape, x.dtype());
  pad_shape[1] = after;
  const Tensor back = zeros(pad_shape, x.dtype());
  const Tensor padded = cat(std::vector<Tensor>{front, sq, back}, 1);
  Tensor window_sum = narrow(padded, 1, 0, c);
  for (int64_t j = 1; j < size; ++j) window_sum = add(window_sum, narrow(padded, 1, j, c));
  return one(div(x, pow(add(mul(window_sum, alpha / static_cast<double>(size)), bias), beta)));
}

/// NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] and targets [N, d...]:
/// loss = -input[n, target, d...] * weight[target], 0 where target == ignore_index; "mean"
/// divides the sum by the sum of the weights used. The class is picked by comparing the
/// target with 0 .. C-1, so only core ops are needed.
Tensor nll_loss(const NodeContext& ctx, const Tensor& input, const Tensor& target,
                const Tensor& weight) {
  const std::string reduction = ctx.attr_string("reduction", "mean");
  const bool has_ignore_index = ctx.has_attr("ignore_index");
  const int64_t ignore_index = ctx.attr_int("ignore_index", 0);
  const int64_t rank = input.dim();
  if (rank < 2) throw ValueError(str_cat(ctx.where(), ": input ", input.describe(), " is not [N, C, ...]"));
  const int64_t classes = input.size(1);
  const Tensor t = cast_to(target, DType::Int64);
  const Tensor hot = eq(unsqueeze(t, 1), per_channel(arange(classes), rank));
  const Tensor zero = zeros({}, input.dtype());
  const Tensor picked = sum(where(hot, input, zero), {1});
  Tensor w = weight.defined() ? sum(where(hot, per_channel(weight, rank), zero), {1})
                              : ones_like(picked);
  if (has_ignore_index) w = where(ne(t, ignore_index), w, zero);
  const Tensor loss = mul(neg(picked), w);
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  if (reduction == "mean") return div(sum(loss), sum(w));
  throw ValueError(str_cat(ctx.where(), ": unknown reduction '", reduction, "'"));
}

}  // namespace

void add_norm_ops(OpTable& t) {
  t["BatchNormalization"] = batch_norm_op;
  t["LayerNormalization"] = layer_norm_op;
  t["InstanceNormalization"] = instance_norm_op;
  t["MeanVarianceNormalization"] = mvn_op;
  t["LRN"] = lrn_op;
  t["NegativeLogLikelihoodLoss"] = [](const NodeContext& c) {
    return one(nll_loss(c, c.input(0), c.input(1), c.optional_input(2)));
  };
  t["SoftmaxCrossEntropyLoss"] = [](const NodeContext& c) {
    const Tensor log_prob = log_softmax(c.input(0), 1);
    return Outputs{nll_loss(c, log_prob, c.input(1), c.optional_input(2)), log_prob};
  };
}

}  // namespace loom::onnx
