#pragma once
/// @file
/// Stochastic gradient descent, optionally with momentum (torch.optim.SGD).

#include "loom/optim/optimizer.h"

namespace loom::optim {

/// SGD's options; defaults are torch.optim.SGD's.
class SGDOptions : public OptimizerOptions {
 public:
  /// Options with learning rate lr.
  explicit SGDOptions(double lr = 1e-3) : lr_(lr) {}
  /// A copy.
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<SGDOptions>(*this);
  }
  /// "SGDOptions".
  std::string_view type_name() const override { return "SGDOptions"; }
  /// lr().
  double get_lr() const override { return lr_; }
  /// Sets lr.
  void set_lr(double lr) override { lr_ = lr; }
  /// momentum().
  std::optional<double> get_momentum() const override { return momentum_; }
  /// Sets momentum.
  void set_momentum(double momentum) override { momentum_ = momentum; }
  /// {"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"}.
  std::string to_json() const override;
  /// Reads to_json()'s text.
  void from_json(std::string_view json) override;

  /// Learning rate (default 1e-3).
  LOOM_OPTIM_ARG(double, lr, 1e-3);
  /// Momentum factor (default 0).
  LOOM_OPTIM_ARG(double, momentum, 0.0);
  /// Dampening for momentum (default 0).
  LOOM_OPTIM_ARG(double, dampening, 0.0);
  /// L2 penalty added to the gradient (default 0).
  LOOM_OPTIM_ARG(double, weight_decay, 0.0);
  /// Nesterov momentum (needs momentum > 0 and dampening 0).
  LOOM_OPTIM_ARG(bool, nesterov, false);
  /// Ascend the objective instead of descending.
  LOOM_OPTIM_ARG(bool, maximize, false);
};

/// SGD: p -= lr * g, with g built from the gradient by weight decay, momentum (a buffer per
/// parameter, "momentum_buffer", that starts as the first gradient) and Nesterov's look-ahead;
/// one optim::sgd_step_ call per parameter.
class SGD : public Optimizer {
 public:
  /// Optimizes params with options.
  explicit SGD(std::vector<Tensor> params, const SGDOptions& options = SGDOptions());
  /// Optimizes groups, each with its own options or these defaults.
  explicit SGD(const std::vector<ParamGroup>& groups, const SGDOptions& defaults = SGDOptions());
  /// "SGD".
  std::string_view name() const override { return "SGD"; }
  /// A group's options.
  SGDOptions& options(size_t group) {
    return static_cast<SGDOptions&>(*param_groups().at(group).options);
  }

 protected:
  /// Invalid learning rate / momentum value / weight_decay value; Nesterov's conditions.
  void check_options(const OptimizerOptions& options) const override;
  /// One optim::sgd_step_.
  void update(const Tensor& param, const Tensor& grad, ParamState& state,
              const OptimizerOptions& options) override;
};

}  // namespace loom::optim
