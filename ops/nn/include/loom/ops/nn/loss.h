#pragma once
/// @file
/// Loss functions of the nn pack, with PyTorch's semantics (ATen's ops of the same names):
/// the negative log-likelihood family (nll_loss, nll_loss2d, nll_loss_nd, cross_entropy_loss),
/// the regression losses (mse, l1, smooth_l1, huber), the binary cross entropies, kl_div,
/// soft_margin_loss and margin_ranking_loss, plus the backward ops autograd will call.
///
/// Each function looks its operator up once and then costs one dispatch; the ops_nn plugin
/// must be loaded (`loom::PluginLoader::instance().load("ops_nn")`). Pointwise losses
/// broadcast their inputs and promote their dtypes as PyTorch's ops do; a mean over zero
/// elements is nan, a sum 0.

#include <cstdint>
#include <optional>
#include <tuple>

#include "loom/ops/op_handle.h"

namespace loom {

/// How a loss reduces its elementwise values; the values are PyTorch's (at::Reduction), which
/// is what the ops' `int reduction` argument takes.
enum class Reduction : int64_t {
  None = 0,  ///< no reduction: the loss has the shape of the elementwise values
  Mean = 1,  ///< the mean (for nll/cross entropy with class weights: divided by their sum)
  Sum = 2,   ///< the sum
};

/// kl_div's reductions as torch.nn.functional.kl_div names them: PyTorch's three plus
/// BatchMean, the sum divided by the batch size (input.size(0)), which is the true KL
/// divergence of a batch; Mean divides by the number of elements instead.
enum class KlDivReduction : int64_t {
  None = 0,       ///< elementwise
  Mean = 1,       ///< the sum divided by the number of elements
  Sum = 2,        ///< the sum
  BatchMean = 3,  ///< the sum divided by input.size(0) (the sum for a 0-dim input)
};

/// @cond INTERNAL
namespace detail {
inline int64_t reduction_int(Reduction r) { return static_cast<int64_t>(r); }
}  // namespace detail
/// @endcond

// ---- negative log-likelihood ------------------------------------------------------------------

/// nll_loss_forward: (output, total_weight) for log-probabilities self [N, C] or [C] and class
/// indices target [N] or [] (int64 or uint8). output is [N] for Reduction::None with a batch,
/// else 0-dim; total_weight is the sum of weight[target] (or the count) over the targets
/// that are not ignore_index, and 0 for Reduction::None.
inline std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                                   const std::optional<Tensor>& weight,
                                                   Reduction reduction, int64_t ignore_index) {
  LOOM_TYPED_OP(op, "aten::nll_loss_forward",
                std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&,
                                           const std::optional<Tensor>&, int64_t, int64_t));
  return op(self, target, weight, detail::reduction_int(reduction), ignore_index);
}

/// The gradient of nll_loss_forward's output with respect to self, given grad_output (of the
/// output's shape) and the total_weight it returned.
inline Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                const std::optional<Tensor>& weight, Reduction reduction,
                                int64_t ignore_index, const Tensor& total_weight) {
  LOOM_TYPED_OP(op, "aten::nll_loss_backward",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const std::optional<Tensor>&,
                       int64_t, int64_t, const Tensor&));
  return op(grad_output, self, target, weight, detail::reduction_int(reduction), ignore_index,
            total_weight);
}

/// nll_loss2d_forward: nll_loss_forward for self [N, C, H, W] and target [N, H, W] (int64);
/// the Reduction::None output is [N, H, W].
inline std::tuple<Tensor, Tensor> nll_loss2d_forward(const Tensor& self, const Tensor& target,
                                                     const std::optional<Tensor>& weight,
                                                     Reduction reduction, int64_t ignore_index) {
  LOOM_TYPED_OP(op, "aten::nll_loss2d_forward",
                std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&,
                                           const std::optional<Tensor>&, int64_t, int64_t));
  return op(self, target, weight, detail::reduction_int(reduction), ignore_index);
}

/// The gradient of nll_loss2d_forward's output with respect to self.
inline Tensor nll_loss2d_backward(const Tensor& grad_output, const Tensor& self,
                                  const Tensor& target, const std::optional<Tensor>& weight,
                                  Reduction reduction, int64_t ignore_index,
                                  const Tensor& total_weight) {
  LOOM_TYPED_OP(op, "aten::nll_loss2d_backward",
                Tensor(const Tensor&, const Tensor&, const Tensor&, const std::optional<Tensor>&,
                       int64_t, int64_t, const Tensor&));
  return op(grad_output, self, target, weight, detail::reduction_int(reduction), ignore_index,
            total_weight);
}

/// Negative log-likelihood of log-probabilities self [N, C] or [C] at class indices target:
/// -weight[t] * self[n, t], reduced; targets equal to ignore_index count for nothing, and
/// Reduction::Mean divides by the sum of the weights of the other targets.
inline Tensor nll_loss(const Tensor& self, const Tensor& target,
                       const std::optional<Tensor>& weight = std::nullopt,
                       Reduction reduction = Reduction::Mean, int64_t ignore_index = -100) {
  LOOM_TYPED_OP(
      op, "aten::nll_loss",
      Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t));
  return op(self, target, weight, detail::reduction_int(reduction), ignore_index);
}

/// nll_loss for self [N, C, H, W] and target [N, H, W].
inline Tensor nll_loss2d(const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight = std::nullopt,
                         Reduction reduction = Reduction::Mean, int64_t ignore_index = -100) {
  LOOM_TYPED_OP(
      op, "aten::nll_loss2d",
      Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t));
  return op(self, target, weight, detail::reduction_int(reduction), ignore_index);
}

/// nll_loss for any rank, as torch.nn.functional.nll_loss: self [C], [N, C] or
/// [N, C, d1, ..., dk] with target [], [N] or [N, d1, ..., dk]; Reduction::None keeps the
/// target's shape.
inline Tensor nll_loss_nd(const Tensor& self, const Tensor& target,
                          const std::optional<Tensor>& weight = std::nullopt,
                          Reduction reduction = Reduction::Mean, int64_t ignore_index = -100) {
  LOOM_TYPED_OP(
      op, "aten::nll_loss_nd",
      Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t));
  return op(self, target, weight, detail::reduction_int(reduction), ignore_index);
}

/// Cross entropy of logits self ([C], [N, C] or [N, C, d1, ..., dk]; classes on dim 1, or 0
/// without a batch) against target, as torch.nn.functional.cross_entropy: class indices
/// (the shape of self without the class dim), or class probabilities (self's shape,
/// floating; ignore_index must then stay negative). label_smoothing in [0, 1] mixes the
/// target with the uniform distribution over the C classes.
inline Tensor cross_entropy_loss(const Tensor& self, const Tensor& target,
                                 const std::optional<Tensor>& weight = std::nullopt,
                                 Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                                 double label_smoothing = 0.0) {
  LOOM_TYPED_OP(
      op, "aten::cross_entropy_loss",
      Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t, double));
  return op(self, target, weight, detail::reduction_int(reduction), ignore_index, label_smoothing);
}

/// torch.nn.functional.cross_entropy's name for cross_entropy_loss.
inline Tensor cross_entropy(const Tensor& input, const Tensor& target,
                            const std::optional<Tensor>& weight = std::nullopt,
                            Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                            double label_smoothing = 0.0) {
  return cross_entropy_loss(input, target, weight, reduction, ignore_index, label_smoothing);
}

// ---- regression losses ------------------------------------------------------------------------

/// Squared error (self - target)^2, reduced.
inline Tensor mse_loss(const Tensor& self, const Tensor& target,
                       Reduction reduction = Reduction::Mean) {
  LOOM_TYPED_OP(op, "aten::mse_loss", Tensor(const Tensor&, const Tensor&, int64_t));
  return op(self, target, detail::reduction_int(reduction));
}

/// The gradient of mse_loss with respect to self (self's shape and dtype).
inline Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                Reduction reduction) {
  LOOM_TYPED_OP(op, "aten::mse_loss_backward",
                Tensor(const Tensor&, const Tensor&, const Tensor&, int64_t));
  return op(grad_output, self, target, detail::reduction_int(reduction));
}

/// Absolute error |self - target|, reduced (a composite of sub, abs and the reduction, as in
/// PyTorch).
inline Tensor l1_loss(const Tensor& self, const Tensor& target,
                      Reduction reduction = Reduction::Mean) {
  LOOM_TYPED_OP(op, "aten::l1_loss", Tensor(const Tensor&, const Tensor&, int64_t));
  return op(self, target, detail::reduction_int(reduction));
}

/// Smooth L1: 0.5 z^2 / beta where z = |self - target| < beta, else z - 0.5 beta; beta >= 0
/// (beta 0 is the L1 loss).
inline Tensor smooth_l1_loss(const Tensor& self, const Tensor& target,
                             Reduction reduction = Reduction::Mean, double beta = 1.0) {
  LOOM_TYPED_OP(op, "aten::smooth_l1_loss", Tensor(const Tensor&, const Tensor&, int64_t, double));
  return op(self, target, detail::reduction_int(reduction), beta);
}

/// The gradient of smooth_l1_loss with respect to self.
inline Tensor smooth_l1_loss_backward(const Tensor& grad_output, const Tensor& self,
                                      const Tensor& target, Reduction reduction, double beta) {
  LOOM_TYPED_OP(op, "aten::smooth_l1_loss_backward",
                Tensor(const Tensor&, const Tensor&, const Tensor&, int64_t, double));
  return op(grad_output, self, target, detail::reduction_int(reduction), beta);
}

/// Huber: 0.5 z^2 where z = |self - target| < delta, else delta (z - 0.5 delta); delta > 0.
inline Tensor huber_loss(const Tensor& self, const Tensor& target,
                         Reduction reduction = Reduction::Mean, double delta = 1.0) {
  LOOM_TYPED_OP(op, "aten::huber_loss", Tensor(const Tensor&, const Tensor&, int64_t, double));
  return op(self, target, detail::reduction_int(reduction), delta);
}

/// The gradient of huber_loss with respect to self.
inline Tensor huber_loss_backward(const Tensor& grad_output, const Tensor& self,
                                  const Tensor& target, Reduction reduction, double delta) {
  LOOM_TYPED_OP(op, "aten::huber_loss_backward",
                Tensor(const Tensor&, const Tensor&, const Tensor&, int64_t, double));
  return op(grad_output, self, target, detail::reduction_int(reduction), delta);
}

// ---- classification losses on probabilities and logits ---------------------------------------

/// Binary cross entropy of probabilities self (every element in [0, 1]) against target
/// (self's shape, in [0, 1]): -weight (t log(x) + (1 - t) log(1 - x)), each log clamped at
/// -100 as PyTorch does; weight broadcasts to self.
inline Tensor binary_cross_entropy(const Tensor& self, const Tensor& target,
                                   const std::optional<Tensor>& weight = std::nullopt,
                                   Reduction reduction = Reduction::Mean) {
  LOOM_TYPED_OP(op, "aten::binary_cross_entropy",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t));
  return op(self, target, weight, detail::reduction_int(reduction));
}

/// The gradient of binary_cross_entropy with respect to self:
/// grad weight (x - t) / max(x (1 - x), 1e-12).
inline Tensor binary_cross_entropy_backward(const Tensor& grad_output, const Tensor& self,
                                            const Tensor& target,
                                            const std::optional<Tensor>& weight = std::nullopt,
                                            Reduction reduction = Reduction::Mean) {
  LOOM_TYPED_OP(
      op, "aten::binary_cross_entropy_backward",
      Tensor(const Tensor&, const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t));
  return op(grad_output, self, target, weight, detail::reduction_int(reduction));
}

/// Binary cross entropy of logits self, in the stable form
/// (1 - t) x - (1 + (pos_weight - 1) t) log_sigmoid(x), times weight; pos_weight (the weight
/// of the positive class, typically [C]) and weight broadcast against self.
inline Tensor binary_cross_entropy_with_logits(
    const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
    const std::optional<Tensor>& pos_weight = std::nullopt, Reduction reduction = Reduction::Mean) {
  LOOM_TYPED_OP(op, "aten::binary_cross_entropy_with_logits",
                Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                       const std::optional<Tensor>&, int64_t));
  return op(self, target, weight, pos_weight, detail::reduction_int(reduction));
}

/// Kullback-Leibler divergence of target from the log-probabilities self:
/// target (log(target) - self) (0 where target is 0), or exp(target) (target - self) when
/// log_target says target holds log-probabilities too. Reduction::Mean divides by the number
/// of elements; use the KlDivReduction overload for the batch mean.
inline Tensor kl_div(const Tensor& self, const Tensor& target,
                     Reduction reduction = Reduction::Mean, bool log_target = false) {
  LOOM_TYPED_OP(op, "aten::kl_div", Tensor(const Tensor&, const Tensor&, int64_t, bool));
  return op(self, target, detail::reduction_int(reduction), log_target);
}

/// kl_div with torch.nn.functional.kl_div's reductions, BatchMean included.
inline Tensor kl_div(const Tensor& self, const Tensor& target, KlDivReduction reduction,
                     bool log_target = false) {
  if (reduction != KlDivReduction::BatchMean) {
    return kl_div(self, target, static_cast<Reduction>(reduction), log_target);
  }
  LOOM_TYPED_OP(div_op, "aten::div.Scalar", Tensor(const Tensor&, const Scalar&));
  const Tensor sum = kl_div(self, target, Reduction::Sum, log_target);
  return self.dim() == 0 ? sum : div_op(sum, Scalar(self.size(0)));
}

/// Two-class logistic loss log(1 + exp(-target self)) for targets of 1 and -1.
inline Tensor soft_margin_loss(const Tensor& self, const Tensor& target,
                               Reduction reduction = Reduction::Mean) {
  LOOM_TYPED_OP(op, "aten::soft_margin_loss", Tensor(const Tensor&, const Tensor&, int64_t));
  return op(self, target, detail::reduction_int(reduction));
}

/// The gradient of soft_margin_loss with respect to self.
inline Tensor soft_margin_loss_backward(const Tensor& grad_output, const Tensor& self,
                                        const Tensor& target, Reduction reduction) {
  LOOM_TYPED_OP(op, "aten::soft_margin_loss_backward",
                Tensor(const Tensor&, const Tensor&, const Tensor&, int64_t));
  return op(grad_output, self, target, detail::reduction_int(reduction));
}

/// Ranking loss max(0, -target (input1 - input2) + margin) for targets of 1 and -1.
inline Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                                  double margin = 0.0, Reduction reduction = Reduction::Mean) {
  LOOM_TYPED_OP(op, "aten::margin_ranking_loss",
                Tensor(const Tensor&, const Tensor&, const Tensor&, double, int64_t));
  return op(input1, input2, target, margin, detail::reduction_int(reduction));
}

}  // namespace loom
