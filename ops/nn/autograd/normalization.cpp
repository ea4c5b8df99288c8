// Derivative formulas of the normalization family (Note [Derivative kernels] in
// loom/autograd/derivative.h): native_batch_norm, native_layer_norm and native_group_norm
// call their backward ops, as PyTorch's derivatives.yaml does. Only the normalized output
// is differentiated; the saved statistics (outputs 1 and 2) are for the backward op, and
// running_mean / running_var are written, not differentiated. batch_norm, layer_norm and
// group_norm are composites (CompositeImplicitAutograd in cpu/normalization.cpp).
//
// When the backward itself is recorded (create_graph, for double backward), the formulas
// compute the same gradients from differentiable ops instead, recomputing the statistics
// from the input (PyTorch has a double-backward formula per op instead; the result is the
// same). The backward ops stay the fast path of a plain backward.
#include <array>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "loom/autograd/derivative.h"
#include "loom/autograd/grad_mode.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::GradMode;
using autograd::variable_list;

std::array<bool, 3> mask_of(BackwardContext& c) {
  return {c.needs_grad(0), c.needs_grad(1), c.needs_grad(2)};
}

variable_list tuple_list(std::tuple<Tensor, Tensor, Tensor> t) {
  return {std::get<0>(t), std::get<1>(t), std::get<2>(t)};
}

Tensor mean_over(const Tensor& t, IntArrayRef dims) { return mean(t, dims, /*keepdim=*/true); }

std::vector<int64_t> range(int64_t begin, int64_t end) {
  std::vector<int64_t> v;
  for (int64_t d = begin; d < end; ++d) v.push_back(d);
  return v;
}

/// x's mean and inverse standard deviation over dims (biased variance), differentiable.
std::pair<Tensor, Tensor> stats(const Tensor& x, IntArrayRef dims, double eps) {
  const Tensor mu = mean_over(x, dims);
  const Tensor xc = x - mu;
  return {mu, rsqrt(mean_over(xc * xc, dims) + Scalar(eps))};
}

/// The input gradient of y = xhat * w + b with statistics over dims, given gxhat = g * w:
/// rstd (gxhat - mean(gxhat) - xhat mean(gxhat xhat)).
Tensor normalized_input_grad(const Tensor& gxhat, const Tensor& xhat, const Tensor& rstd,
                             IntArrayRef dims) {
  return rstd * (gxhat - mean_over(gxhat, dims) - xhat * mean_over(gxhat * xhat, dims));
}

/// sum of t over dims (t itself when there are none).
Tensor sum_over(const Tensor& t, IntArrayRef dims) {
  return dims.empty() ? t : sum(t, dims, /*keepdim=*/false);
}

/// The differentiable batch norm gradient (training: batch statistics; eval: running ones).
variable_list batch_norm_differentiable(BackwardContext& c, const Tensor& rm, const Tensor& rv,
                                        bool training) {
  const Tensor x = c.saved("input"), w = c.saved("weight"), g = c.grad();
  const double eps = c.real("eps");
  std::vector<int64_t> reduce{0};
  for (int64_t d = 2; d < x.dim(); ++d) reduce.push_back(d);
  std::vector<int64_t> channel(static_cast<size_t>(x.dim()), 1);
  channel[1] = x.size(1);
  Tensor mu, rstd;
  if (training) {
    std::tie(mu, rstd) = stats(x, reduce, eps);
  } else {
    mu = rm.view(channel);
    rstd = rsqrt(rv + Scalar(eps)).view(channel);
  }
  const Tensor xhat = (x - mu) * rstd;
  const Tensor gxhat = w.defined() ? g * w.view(channel) : g;
  variable_list out(3);
  if (c.needs_grad(0)) {
    out[0] = training ? normalized_input_grad(gxhat, xhat, rstd, reduce) : gxhat * rstd;
  }
  if (c.needs_grad(1)) out[1] = sum_over(g * xhat, reduce);
  if (c.needs_grad(2)) out[2] = sum_over(g, reduce);
  return out;
}

// native_batch_norm in training: the batch statistics are outputs 1 and 2 (mean, invstd).
// The running stats are not saved: the kernel writes them, which would trip the saved
// tensors' version check.
variable_list batch_norm_train(BackwardContext& c) {
  if (GradMode::is_enabled()) return batch_norm_differentiable(c, Tensor(), Tensor(), true);
  return tuple_list(native_batch_norm_backward(c.grad(), c.saved("input"), c.saved("weight"),
                                               std::nullopt, std::nullopt, c.result(1), c.result(2),
                                               true, c.real("eps"), mask_of(c)));
}

// native_batch_norm in evaluation: the running stats are the statistics (a missing one is
// what the forward used: mean 0, variance 1).
variable_list batch_norm_eval(BackwardContext& c) {
  const Tensor input = c.saved("input");
  Tensor rm = c.saved("running_mean"), rv = c.saved("running_var");
  const int64_t C = input.size(1);
  if (!rm.defined()) rm = zeros({C}, input.dtype(), input.device());
  if (!rv.defined()) rv = ones({C}, input.dtype(), input.device());
  if (GradMode::is_enabled()) return batch_norm_differentiable(c, rm, rv, false);
  return tuple_list(native_batch_norm_backward(c.grad(), input, c.saved("weight"), rm, rv,
                                               std::nullopt, std::nullopt, false, c.real("eps"),
                                               mask_of(c)));
}
/// The differentiable layer norm gradient: statistics over the last k dims.
variable_list layer_norm_differentiable(BackwardContext& c) {
  const Tensor x = c.saved("input"), w = c.saved("weight"), g = c.grad();
  const auto k = static_cast<int64_t>(c.ints("normalized_shape").size());
  const std::vector<int64_t> dims = range(x.dim() - k, x.dim()), batch = range(0, x.dim() - k);
  const auto [mu, rstd] = stats(x, dims, c.real("eps"));
  const Tensor xhat = (x - mu) * rstd;
  const Tensor gxhat = w.defined() ? g * w : g;
  variable_list out(3);
  if (c.needs_grad(0)) out[0] = normalized_input_grad(gxhat, xhat, rstd, dims);
  if (c.needs_grad(1)) out[1] = sum_over(g * xhat, batch);
  if (c.needs_grad(2)) out[2] = sum_over(g, batch);
  return out;
}

/// The differentiable group norm gradient: statistics per (sample, group) of [N, G, -1].
variable_list group_norm_differentiable(BackwardContext& c) {
  const Tensor x = c.saved("input"), w = c.saved("weight"), g = c.grad();
  const int64_t N = c.integer("N"), C = c.integer("C"), G = c.integer("group");
  const std::vector<int64_t> grouped{N, G, -1};
  const std::vector<int64_t> last{2};
  const Tensor xg = x.reshape(grouped);
  const auto [mu, rstd] = stats(xg, last, c.real("eps"));
  const Tensor xhat_g = (xg - mu) * rstd;
  const Tensor xhat = xhat_g.reshape(x.sizes());
  std::vector<int64_t> channel(static_cast<size_t>(x.dim()), 1);
  if (x.dim() > 1) channel[1] = C;
  std::vector<int64_t> reduce{0};
  for (int64_t d = 2; d < x.dim(); ++d) reduce.push_back(d);
  variable_list out(3);
  if (c.needs_grad(0)) {
    const Tensor gxhat = (w.defined() ? g * w.view(channel) : g).reshape(grouped);
    Tensor gx = normalized_input_grad(gxhat, xhat_g, rstd, last);
    // mean = sum(x) / M and rstd = (sum((x - mean)^2) / M + eps)^-1/2 per (sample, group).
    const double M = static_cast<double>(xg.size(2));
    if (c.has_grad(1)) gx = gx + (c.grad(1).reshape({N, G, 1}) / M);
    if (c.has_grad(2)) {
      const Tensor r = rstd.reshape({N, G, 1});
      gx = gx - c.grad(2).reshape({N, G, 1}) * r * r * r * (xg - mu) / M;
    }
    out[0] = gx.reshape(x.sizes());
  }
  if (c.needs_grad(1)) out[1] = sum_over(g * xhat, reduce);
  if (c.needs_grad(2)) out[2] = sum_over(g, reduce);
  return out;
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  using autograd::derivative_kernel;
  // The saved statistics have no gradient (PyTorch's output_differentiability).
  const autograd::DerivativeOptions kStats{.non_differentiable_outputs = {1, 2}};
  {
    // One formula per mode, chosen per call: what each saves differs (see above).
    const KernelFunction train =
        derivative_kernel({"input", "weight", "result1", "result2"}, batch_norm_train, kStats);
    const KernelFunction eval =
        derivative_kernel({"input", "weight", "running_mean", "running_var"}, batch_norm_eval,
                          kStats);
    constexpr size_t kArgs = 8, kTraining = 5;  // native_batch_norm's schema
    m.impl_kernel("native_batch_norm", std::nullopt,
                  KernelFunction::from_boxed([train, eval](const OperatorHandle& op, Stack& s) {
                    const bool training = s[s.size() - kArgs + kTraining].to_bool();
                    (training ? train : eval).call_boxed(op, s);
                  }));
  }
  derivative(m, "native_layer_norm", {"input", "weight", "bias", "result1", "result2"},
             [](BackwardContext& c) -> variable_list {
               if (GradMode::is_enabled()) return layer_norm_differentiable(c);
               return tuple_list(native_layer_norm_backward(
                   c.grad(), c.saved("input"), c.ints("normalized_shape"), c.result(1), c.result(2),
                   c.saved("weight"), c.saved("bias"), mask_of(c)));
             },
             kStats);
  derivative(
      m, "native_group_norm", {"input", "weight", "result1", "result2"},
      [](BackwardContext& c) -> variable_list {
        // Gradients arriving at mean / rstd (PyTorch keeps them differentiable) or a
        // recorded backward: the formula from differentiable ops.
        if (GradMode::is_enabled() || c.has_grad(1) || c.has_grad(2)) {
          return group_norm_differentiable(c);
        }
        return tuple_list(native_group_norm_backward(
            c.grad(), c.saved("input"), c.result(1), c.result(2), c.saved("weight"), c.integer("N"),
            c.integer("C"), c.integer("HxW"), c.integer("group"), mask_of(c)));
      });
}

}  // namespace loom
