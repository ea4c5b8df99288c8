#pragma once
/// @file
/// Adam and AdamW (torch.optim.Adam, torch.optim.AdamW).

#include <utility>

#include "loom/optim/optimizer.h"

namespace loom::optim {

/// Adam's options; defaults are torch.optim.Adam's.
class AdamOptions : public OptimizerOptions {
 public:
  /// The two decay rates (beta1, beta2).
  using Betas = std::pair<double, double>;
  /// Options with learning rate lr.
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  /// A copy.
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamOptions>(*this);
  }
  /// "AdamOptions".
  std::string_view type_name() const override { return "AdamOptions"; }
  /// lr().
  double get_lr() const override { return lr_; }
  /// Sets lr.
  void set_lr(double lr) override { lr_ = lr; }
  /// beta1.
  std::optional<double> get_momentum() const override { return betas_.first; }
  /// Sets beta1.
  void set_momentum(double beta1) override { betas_.first = beta1; }
  /// {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay"}.
  std::string to_json() const override;
  /// Reads to_json()'s text.
  void from_json(std::string_view json) override;

  /// Learning rate (default 1e-3).
  LOOM_OPTIM_ARG(double, lr, 1e-3);
  /// Decay rates of the running averages of the gradient and its square (0.9, 0.999).
  LOOM_OPTIM_ARG(Betas, betas, Betas(0.9, 0.999));
  /// Added to the denominator for numerical stability (default 1e-8).
  LOOM_OPTIM_ARG(double, eps, 1e-8);
  /// Weight decay: an L2 penalty on the gradient, or decoupled (default 0).
  LOOM_OPTIM_ARG(double, weight_decay, 0.0);
  /// AMSGrad: divide by the running maximum of the second moment.
  LOOM_OPTIM_ARG(bool, amsgrad, false);
  /// Ascend the objective instead of descending.
  LOOM_OPTIM_ARG(bool, maximize, false);
  /// Decay the parameter by lr * weight_decay directly (AdamW) instead of through the gradient.
  LOOM_OPTIM_ARG(bool, decoupled_weight_decay, false);
};

/// AdamW's options: Adam's, with weight_decay 1e-2 and decoupled weight decay (AdamW's
/// defaults).
class AdamWOptions : public AdamOptions {
 public:
  /// Options with learning rate lr.
  explicit AdamWOptions(double lr = 1e-3) : AdamOptions(lr) {
    weight_decay(1e-2);
    decoupled_weight_decay(true);
  }
  /// Adam's options as AdamW's (decoupled_weight_decay is set, whatever it was).
  AdamWOptions(const AdamOptions& options) : AdamOptions(options) {  // NOLINT: implicit
    decoupled_weight_decay(true);
  }
  /// A copy.
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamWOptions>(*this);
  }
  /// "AdamWOptions".
  std::string_view type_name() const override { return "AdamWOptions"; }
};

/// Adam: bias-corrected running averages of the gradient and its square ("exp_avg",
/// "exp_avg_sq", and "max_exp_avg_sq" with AMSGrad) per parameter, and a step count; one
/// optim::adam_step_ call per parameter.
class Adam : public Optimizer {
 public:
  /// Optimizes params with options.
  explicit Adam(std::vector<Tensor> params, const AdamOptions& options = AdamOptions());
  /// Optimizes groups, each with its own options or these defaults.
  explicit Adam(const std::vector<ParamGroup>& groups, const AdamOptions& defaults = AdamOptions());
  /// "Adam".
  std::string_view name() const override { return "Adam"; }
  /// A group's options.
  AdamOptions& options(size_t group) {
    return static_cast<AdamOptions&>(*param_groups().at(group).options);
  }

 protected:
  /// For AdamW.
  explicit Adam(std::unique_ptr<OptimizerOptions> defaults);
  /// Invalid learning rate / epsilon value / beta parameter at index 0 or 1 / weight_decay.
  void check_options(const OptimizerOptions& options) const override;
  /// One optim::adam_step_.
  void update(const Tensor& param, const Tensor& grad, ParamState& state,
              const OptimizerOptions& options) override;
};

/// AdamW: Adam with decoupled weight decay (p *= 1 - lr * weight_decay before each update).
class AdamW : public Adam {
 public:
  /// Optimizes params with options.
  explicit AdamW(std::vector<Tensor> params, const AdamWOptions& options = AdamWOptions());
  /// Optimizes groups, each with its own options or these defaults.
  explicit AdamW(const std::vector<ParamGroup>& groups,
                 const AdamWOptions& defaults = AdamWOptions());
  /// "AdamW".
  std::string_view name() const override { return "AdamW"; }
  /// A group's options.
  AdamWOptions& options(size_t group) {
    return static_cast<AdamWOptions&>(*param_groups().at(group).options);
  }

 protected:
  /// Takes AdamWOptions, and Adam's options as AdamW's (decoupled).
  std::unique_ptr<OptimizerOptions> adopt_options(const OptimizerOptions& options) const override;
};

}  // namespace loom::optim
