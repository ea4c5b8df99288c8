// The optimizer ops of ONNX's ai.onnx.preview.training domain (Adagrad, Adam, Momentum),
// composed from core ops (Note [ONNX op mappings]). Each takes R (learning rate), T (update
// count), then n tensors of each group it updates, and returns the updated groups in order.
#include <cmath>

#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "onnx_ops.h"

namespace loom::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/// n, the number of tensors updated, from the input count (2 + groups * n).
size_t group_size(const NodeContext& ctx, size_t groups) {
  if (ctx.num_inputs() < 2 || (ctx.num_inputs() - 2) % groups != 0) {
    throw ValueError(str_cat(ctx.where(), ": ", ctx.num_inputs(), " inputs do not make ", groups,
                             " groups after R and T"));
  }
  return (ctx.num_inputs() - 2) / groups;
}

Outputs adagrad_op(const NodeContext& ctx) {
  const double decay = ctx.attr_float("decay_factor", 0.0f);
  const double eps = ctx.attr_float("epsilon", 1e-6f);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f);
  const size_t n = group_size(ctx, 3);
  const double t = scalar_value(ctx.input(1)).to<double>();
  const double r = scalar_value(ctx.input(0)).to<double>() / (1 + t * decay);
  Outputs xs, hs;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    const Tensor g = add(mul(x, norm), ctx.input(2 + n + i));
    const Tensor h = add(ctx.input(2 + 2 * n + i), mul(g, g));
    xs.push_back(sub(x, mul(div(g, add(sqrt(h), eps)), r)));
    hs.push_back(h);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

Outputs momentum_op(const NodeContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 0.0f), beta = ctx.attr_float("beta", 0.0f);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f);
  const std::string mode = ctx.attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov") {
    throw ValueError(str_cat(ctx.where(), ": unknown mode '", mode, "'"));
  }
  const size_t n = group_size(ctx, 3);
  const double r = scalar_value(ctx.input(0)).to<double>();
  // The first update (T == 0) takes the gradient whole.
  const double beta_t = scalar_value(ctx.input(1)).to<int64_t>() > 0 ? beta : 1.0;
  Outputs xs, vs;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    const Tensor g = add(mul(x, norm), ctx.input(2 + n + i));
    const Tensor v = add(mul(ctx.input(2 + 2 * n + i), alpha), mul(g, beta_t));
    const Tensor step = mode == "standard" ? v : add(g, mul(v, alpha));
    xs.push_back(sub(x, mul(step, r)));
    vs.push_back(v);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

Outputs adam_op(const NodeContext& ctx) {
  const double alpha = ctx.attr_float("alpha", 0.9f), beta = ctx.attr_float("beta", 0.999f);
  const double eps = ctx.attr_float("epsilon", 1e-6f);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f);
  const double norm_post = ctx.attr_float("norm_coefficient_post", 0.0f);
  const size_t n = group_size(ctx, 4);
  const double t = scalar_value(ctx.input(1)).to<double>();
  double r = scalar_value(ctx.input(0)).to<double>();
  if (t > 0) r *= std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t));
  Outputs xs, vs, hs;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    const Tensor g = add(mul(x, norm), ctx.input(2 + n + i));
    const Tensor v = add(mul(ctx.input(2 + 2 * n + i), alpha), mul(g, 1 - alpha));
    const Tensor h = add(mul(ctx.input(2 + 3 * n + i), beta), mul(mul(g, g), 1 - beta));
    const Tensor x_new = sub(x, mul(div(v, add(sqrt(h), eps)), r));
    xs.push_back(mul(x_new, 1 - norm_post));
    vs.push_back(v);
    hs.push_back(h);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace

void add_training_ops(OpTable& t) {
  t[std::string(kTrainingDomain) + ".Adagrad"] = adagrad_op;
  t[std::string(kTrainingDomain) + ".Adam"] = adam_op;
  t[std::string(kTrainingDomain) + ".Momentum"] = momentum_op;
}

}  // namespace loom::onnx
