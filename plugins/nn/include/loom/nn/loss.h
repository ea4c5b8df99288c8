#pragma once
/// @file
/// Loss modules (torch.nn.*Loss): each wraps the nn pack's loss function with its options;
/// forward(input, target) and operator()(input, target). Class weights live in a buffer
/// "weight" (and "pos_weight"), as in PyTorch, so they follow to() and state_dict().

#include <cstdint>
#include <optional>

#include "loom/nn/module.h"
#include "loom/ops/nn/loss.h"

namespace loom::nn {

/// What the loss modules share: a two-input forward and the reduction.
class Loss : public Module {
 public:
  /// The loss of input against target.
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  /// Losses take two inputs; the one-input form throws ValueError.
  Tensor forward(const Tensor& input) override;
  /// forward(input, target).
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  using Module::operator();
  std::string extra_repr() const override;
  const Reduction reduction;  ///< none, mean or sum

 protected:
  /// @cond INTERNAL
  explicit Loss(Reduction reduction) : reduction(reduction) {}
  std::optional<Tensor> buffer_or_none(const Tensor& t) const {
    return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
  }
  /// @endcond
};

/// log_softmax + nll over class dim 1 (torch.nn.CrossEntropyLoss); target class indices
/// or class probabilities.
class CrossEntropyLoss : public Loss {
 public:
  /// weight: per-class weights [C]; label_smoothing in [0, 1].
  explicit CrossEntropyLoss(std::optional<Tensor> weight = std::nullopt,
                            int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                            double label_smoothing = 0.0);
  /// cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  const int64_t ignore_index;    ///< target value that contributes nothing
  const double label_smoothing;  ///< mass spread uniformly over the classes
  Tensor& weight;                ///< buffer [C] or undefined
};

/// Negative log-likelihood of log-probabilities (torch.nn.NLLLoss).
class NLLLoss : public Loss {
 public:
  /// weight: per-class weights [C].
  explicit NLLLoss(std::optional<Tensor> weight = std::nullopt, int64_t ignore_index = -100,
                   Reduction reduction = Reduction::Mean);
  /// nll_loss_nd(input, target, weight, reduction, ignore_index).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  const int64_t ignore_index;  ///< target value that contributes nothing
  Tensor& weight;              ///< buffer [C] or undefined
};

/// Mean squared error (torch.nn.MSELoss).
class MSELoss : public Loss {
 public:
  /// The reduction (mean by default).
  explicit MSELoss(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  /// mse_loss(input, target, reduction).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
};

/// Mean absolute error (torch.nn.L1Loss).
class L1Loss : public Loss {
 public:
  /// The reduction (mean by default).
  explicit L1Loss(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  /// l1_loss(input, target, reduction).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
};

/// Binary cross entropy of probabilities (torch.nn.BCELoss).
class BCELoss : public Loss {
 public:
  /// weight: rescales each element's loss (broadcast to the input).
  explicit BCELoss(std::optional<Tensor> weight = std::nullopt,
                   Reduction reduction = Reduction::Mean);
  /// binary_cross_entropy(input, target, weight, reduction).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  Tensor& weight;  ///< buffer or undefined
};

/// Sigmoid + binary cross entropy, computed stably (torch.nn.BCEWithLogitsLoss).
class BCEWithLogitsLoss : public Loss {
 public:
  /// weight: per-element rescaling; pos_weight: weight of positive examples per class.
  explicit BCEWithLogitsLoss(std::optional<Tensor> weight = std::nullopt,
                             Reduction reduction = Reduction::Mean,
                             std::optional<Tensor> pos_weight = std::nullopt);
  /// binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  Tensor& weight;      ///< buffer or undefined
  Tensor& pos_weight;  ///< buffer or undefined
};

/// Quadratic below beta, linear above (torch.nn.SmoothL1Loss).
class SmoothL1Loss : public Loss {
 public:
  /// beta >= 0 (0 is L1).
  explicit SmoothL1Loss(Reduction reduction = Reduction::Mean, double beta = 1.0)
      : Loss(reduction), beta(beta) {}
  /// smooth_l1_loss(input, target, reduction, beta).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  const double beta;  ///< where quadratic turns linear
};

/// Huber loss: delta * smooth L1 with beta = delta (torch.nn.HuberLoss).
class HuberLoss : public Loss {
 public:
  /// delta > 0.
  explicit HuberLoss(Reduction reduction = Reduction::Mean, double delta = 1.0)
      : Loss(reduction), delta(delta) {}
  /// huber_loss(input, target, reduction, delta).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  const double delta;  ///< where quadratic turns linear
};

/// Kullback-Leibler divergence of log-probabilities input from target (torch.nn.KLDivLoss);
/// KlDivReduction::BatchMean gives the true KL divergence of a batch.
class KLDivLoss : public Loss {
 public:
  /// log_target: target holds log-probabilities too.
  explicit KLDivLoss(KlDivReduction reduction = KlDivReduction::Mean, bool log_target = false)
      : Loss(Reduction::Mean), kl_reduction(reduction), log_target(log_target) {}
  /// kl_div(input, target, kl_reduction, log_target).
  Tensor forward(const Tensor& input, const Tensor& target) override;
  using Loss::forward;
  std::string extra_repr() const override;
  const KlDivReduction kl_reduction;  ///< none, mean, sum or batchmean
  const bool log_target;              ///< target is in log space
};

}  // namespace loom::nn
