#pragma once
/// @file
/// RMSprop (torch.optim.RMSprop).

#include "loom/optim/optimizer.h"

namespace loom::optim {

/// RMSprop's options; defaults are torch.optim.RMSprop's.
class RMSpropOptions : public OptimizerOptions {
 public:
  /// Options with learning rate lr.
  explicit RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  /// A copy.
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<RMSpropOptions>(*this);
  }
  /// "RMSpropOptions".
  std::string_view type_name() const override { return "RMSpropOptions"; }
  /// lr().
  double get_lr() const override { return lr_; }
  /// Sets lr.
  void set_lr(double lr) override { lr_ = lr; }
  /// momentum().
  std::optional<double> get_momentum() const override { return momentum_; }
  /// Sets momentum.
  void set_momentum(double momentum) override { momentum_ = momentum; }
  /// {"lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize"}.
  std::string to_json() const override;
  /// Reads to_json()'s text.
  void from_json(std::string_view json) override;

  /// Learning rate (default 1e-2).
  LOOM_OPTIM_ARG(double, lr, 1e-2);
  /// Smoothing constant of the running average of the squared gradient (default 0.99).
  LOOM_OPTIM_ARG(double, alpha, 0.99);
  /// Added to the denominator for numerical stability (default 1e-8).
  LOOM_OPTIM_ARG(double, eps, 1e-8);
  /// L2 penalty added to the gradient (default 0).
  LOOM_OPTIM_ARG(double, weight_decay, 0.0);
  /// Momentum factor (default 0).
  LOOM_OPTIM_ARG(double, momentum, 0.0);
  /// Normalise by an estimate of the gradient's variance (subtract the squared mean).
  LOOM_OPTIM_ARG(bool, centered, false);
  /// Ascend the objective instead of descending.
  LOOM_OPTIM_ARG(bool, maximize, false);
};

/// RMSprop: divides the gradient by the root of a running average of its square
/// ("square_avg"; "grad_avg" when centered, "momentum_buffer" with momentum); one
/// optim::rmsprop_step_ call per parameter.
class RMSprop : public Optimizer {
 public:
  /// Optimizes params with options.
  explicit RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = RMSpropOptions());
  /// Optimizes groups, each with its own options or these defaults.
  explicit RMSprop(const std::vector<ParamGroup>& groups,
                   const RMSpropOptions& defaults = RMSpropOptions());
  /// "RMSprop".
  std::string_view name() const override { return "RMSprop"; }
  /// A group's options.
  RMSpropOptions& options(size_t group) {
    return static_cast<RMSpropOptions&>(*param_groups().at(group).options);
  }

 protected:
  /// Invalid learning rate / epsilon / momentum / weight_decay / alpha value.
  void check_options(const OptimizerOptions& options) const override;
  /// One optim::rmsprop_step_.
  void update(const Tensor& param, const Tensor& grad, ParamState& state,
              const OptimizerOptions& options) override;
};

}  // namespace loom::optim
