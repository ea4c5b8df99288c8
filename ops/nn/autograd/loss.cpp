// Derivative formulas of the loss family (Note [Derivative kernels] in
// loom/autograd/derivative.h). self's gradient is the pack's backward op wherever there is
// one, as in PyTorch's derivatives.yaml; the other floating arguments (target, weight,
// pos_weight) get their gradient from pointwise ops, written for the broadcast shape (the
// engine sums it to each argument's shape). nll_loss, nll_loss2d, nll_loss_nd,
// cross_entropy_loss, l1_loss, kl_div and margin_ranking_loss are composites (Note [Loss
// composites] in cpu/loss_util.h) and need no formula.
#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "loom/autograd/derivative.h"
#include "loom/autograd/grad_mode.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;

Reduction reduction_of(BackwardContext& c) {
  return static_cast<Reduction>(c.integer("reduction"));
}

/// The broadcast shape of the forward's tensor slots (undefined ones skipped).
std::vector<int64_t> broadcast_sizes(BackwardContext& c) {
  std::vector<int64_t> out;
  for (size_t s = 0; s < c.num_slots(); ++s) {
    const IntArrayRef in = c.input_sizes(s);
    if (in.size() > out.size()) out.insert(out.begin(), in.size() - out.size(), 1);
    for (size_t i = 0; i < in.size(); ++i) {
      int64_t& o = out[out.size() - in.size() + i];
      if (o == 1) o = in[i];
    }
  }
  return out;
}

int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// grad times d (a tensor of the broadcast shape), divided by the element count for the mean.
Tensor reduced_grad(BackwardContext& c, const Tensor& d) {
  Tensor g = c.grad() * d;
  if (reduction_of(c) == Reduction::Mean) {
    g = g / Scalar(static_cast<double>(numel_of(broadcast_sizes(c))));
  }
  return g;
}

/// t expanded to the broadcast shape unless it has it already (the backward ops of the
/// pointwise losses want self's shape to be the broadcast one).
Tensor broadcast(const Tensor& t, const std::vector<int64_t>& sizes) {
  return t.sizes() == IntArrayRef(sizes) ? t : t.expand(sizes);
}

/// log(sigmoid(x)) without overflow: min(x, 0) - log1p(exp(-|x|)).
Tensor log_sigmoid_of(const Tensor& x) {
  return minimum(x, zeros({}, x.dtype(), x.device())) - log1p(exp(-abs(x)));
}

/// The pointwise losses whose target gradient is minus self's (mse, smooth_l1, huber):
/// one backward op call serves both. When the backward is recorded (create_graph), the
/// derivative d(x - y) of the loss in x - y comes from differentiable ops instead, so that
/// the double backward needs no formula for the backward op (mse_loss_backward has one).
template <typename Backward, typename Derivative>
variable_list difference_loss(BackwardContext& c, Backward&& backward, Derivative&& derivative) {
  if constexpr (!std::is_same_v<std::decay_t<Derivative>, std::nullptr_t>) {
    if (autograd::GradMode::is_enabled()) {
      const Tensor gs = reduced_grad(c, derivative(c.saved("self") - c.saved("target")));
      return {c.needs_grad(0) ? gs : Tensor(), c.needs_grad(1) ? -gs : Tensor()};
    }
  }
  const std::vector<int64_t> sizes = broadcast_sizes(c);
  const Tensor gs =
      backward(broadcast(c.saved("self"), sizes), broadcast(c.saved("target"), sizes));
  return {c.needs_grad(0) ? gs : Tensor(), c.needs_grad(1) ? -gs : Tensor()};
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(
      m, "nll_loss_forward", {"self", "target", "weight", "result1"},
      [](BackwardContext& c) -> variable_list {
        return {nll_loss_backward(c.grad(), c.saved("self"), c.saved("target"), c.saved("weight"),
                                  reduction_of(c), c.integer("ignore_index"), c.result(1))};
      },
      {.non_differentiable_outputs = {1}});  // total_weight, as in PyTorch
  derivative(
      m, "nll_loss2d_forward", {"self", "target", "weight", "result1"},
      [](BackwardContext& c) -> variable_list {
        return {nll_loss2d_backward(c.grad(), c.saved("self"), c.saved("target"), c.saved("weight"),
                                    reduction_of(c), c.integer("ignore_index"), c.result(1))};
      },
      {.non_differentiable_outputs = {1}});  // total_weight, as in PyTorch
  // Double backward: nll_loss_backward is linear in grad_output and does not read self's
  // values, and its adjoint in grad_output is the forward loss of the incoming gradient.
  derivative(m, "nll_loss_backward", {"target", "weight"}, [](BackwardContext& c) -> variable_list {
    return {std::get<0>(nll_loss_forward(c.grad(), c.saved("target"), c.saved("weight"),
                                         reduction_of(c), c.integer("ignore_index")))};
  });
  derivative(
      m, "nll_loss2d_backward", {"target", "weight"}, [](BackwardContext& c) -> variable_list {
        return {std::get<0>(nll_loss2d_forward(c.grad(), c.saved("target"), c.saved("weight"),
                                               reduction_of(c), c.integer("ignore_index")))};
      });
  // On the tiny-MLP benchmark path: one node, one backward op call.
  derivative(m, "mse_loss", {"self", "target"}, [](BackwardContext& c) -> variable_list {
    return difference_loss(
        c,
        [&](const Tensor& x, const Tensor& y) {
          return mse_loss_backward(c.grad(), x, y, reduction_of(c));
        },
        nullptr);
  });
  // mse_loss's double backward: mse_loss_backward is 2 norm (x - y) grad_output, self's shape.
  derivative(m, "mse_loss_backward", {"grad_output", "self", "target"},
             [](BackwardContext& c) -> variable_list {
               const Tensor x = c.saved("self");
               const double k =
                   2.0 /
                   (reduction_of(c) == Reduction::Mean ? static_cast<double>(x.numel()) : 1.0);
               variable_list g(3);
               if (c.needs_grad(0)) g[0] = c.grad() * (x - c.saved("target")) * k;
               if (c.needs_grad(1) || c.needs_grad(2)) {
                 const Tensor gx = c.grad() * c.saved("grad_output") * k;
                 if (c.needs_grad(1)) g[1] = gx;
                 if (c.needs_grad(2)) g[2] = -gx;
               }
               return g;
             });
  derivative(m, "smooth_l1_loss", {"self", "target"}, [](BackwardContext& c) -> variable_list {
    const double beta = c.real("beta");
    return difference_loss(
        c,
        [&](const Tensor& x, const Tensor& y) {
          return smooth_l1_loss_backward(c.grad(), x, y, reduction_of(c), beta);
        },
        [beta](const Tensor& d) {
          // d / beta inside (-beta, beta), else its sign (beta = 0: the L1 gradient).
          if (beta == 0) return sign(d);
          return where(lt(abs(d), Scalar(beta)), d / Scalar(beta), sign(d));
        });
  });
  derivative(m, "huber_loss", {"self", "target"}, [](BackwardContext& c) -> variable_list {
    const double delta = c.real("delta");
    return difference_loss(
        c,
        [&](const Tensor& x, const Tensor& y) {
          return huber_loss_backward(c.grad(), x, y, reduction_of(c), delta);
        },
        [delta](const Tensor& d) { return where(lt(abs(d), Scalar(delta)), d, sign(d) * delta); });
  });
  // log(1 + exp(-y x)): d/dy = -x sigmoid(-y x).
  derivative(m, "soft_margin_loss", {"self", "target"}, [](BackwardContext& c) -> variable_list {
    const std::vector<int64_t> sizes = broadcast_sizes(c);
    const Tensor x = c.saved("self"), y = c.saved("target");
    variable_list g(2);
    if (c.needs_grad(0)) {
      // -y sigmoid(-y x); from differentiable ops when the backward is recorded.
      g[0] = autograd::GradMode::is_enabled()
                 ? reduced_grad(c, -y * sigmoid(-x * y))
                 : soft_margin_loss_backward(c.grad(), broadcast(x, sizes), broadcast(y, sizes),
                                             reduction_of(c));
    }
    if (c.needs_grad(1)) g[1] = reduced_grad(c, -x * sigmoid(-x * y));
    return g;
  });
  // -w (y log x + (1 - y) log(1 - x)), each log clamped at -100 as the kernel does.
  derivative(m, "binary_cross_entropy", {"self", "target", "weight"},
             [](BackwardContext& c) -> variable_list {
               const Tensor x = c.saved("self"), y = c.saved("target"), w = c.saved("weight");
               variable_list g(3);
               if (c.needs_grad(0)) {
                 if (autograd::GradMode::is_enabled()) {
                   // (x - y) / max(x (1 - x), 1e-12) w, the backward op's expression.
                   const Tensor d = (x - y) / clamp((Scalar(1.0) - x) * x, Scalar(1e-12));
                   g[0] = reduced_grad(c, w.defined() ? d * w : d);
                 } else {
                   g[0] = binary_cross_entropy_backward(c.grad(), x, y, w, reduction_of(c));
                 }
               }
               if (c.needs_grad(1)) {
                 const Tensor d = log1p(-x) - log(x);
                 g[1] = reduced_grad(c, w.defined() ? d * w : d);
               }
               if (c.needs_grad(2)) {
                 const Tensor lx = clamp(log(x), Scalar(-100.0));
                 const Tensor l1x = clamp(log1p(-x), Scalar(-100.0));
                 g[2] = reduced_grad(c, (y - Scalar(1.0)) * l1x - y * lx);
               }
               return g;
             });
  // w ((1 - y) x - (1 + (pw - 1) y) log_sigmoid(x)), PyTorch's formula (it has no backward op).
  derivative(m, "binary_cross_entropy_with_logits", {"self", "target", "weight", "pos_weight"},
             [](BackwardContext& c) -> variable_list {
               const Tensor x = c.saved("self"), y = c.saved("target");
               const Tensor w = c.saved("weight"), pw = c.saved("pos_weight");
               auto weighted = [&w](const Tensor& d) { return w.defined() ? d * w : d; };
               variable_list g(4);
               if (c.needs_grad(0)) {
                 // (t + 1 - y) sigmoid(x) - t with t = pw y; sigmoid(x) - y without pos_weight.
                 Tensor d;
                 if (pw.defined()) {
                   const Tensor t = pw * y;
                   d = (t + Scalar(1.0) - y) * sigmoid(x) - t;
                 } else {
                   d = sigmoid(x) - y;
                 }
                 g[0] = reduced_grad(c, weighted(d));
               }
               if (c.needs_grad(1) || c.needs_grad(2) || c.needs_grad(3)) {
                 const Tensor ls = log_sigmoid_of(x);
                 if (c.needs_grad(1)) {
                   // log_sigmoid(-x) - pw log_sigmoid(x), log_sigmoid(-x) = log_sigmoid(x) - x.
                   const Tensor d = pw.defined() ? ls - x - pw * ls : -x;
                   g[1] = reduced_grad(c, weighted(d));
                 }
                 if (c.needs_grad(2)) {
                   const Tensor coef =
                       pw.defined() ? Scalar(1.0) + (pw - Scalar(1.0)) * y : ones_like(y);
                   g[2] = reduced_grad(c, (Scalar(1.0) - y) * x - coef * ls);
                 }
                 if (c.needs_grad(3)) g[3] = reduced_grad(c, weighted(-y * ls));
               }
               return g;
             });
}

}  // namespace loom
