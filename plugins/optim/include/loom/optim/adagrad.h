#pragma once
/// @file
/// Adagrad (torch.optim.Adagrad).

#include "loom/optim/optimizer.h"

namespace loom::optim {

/// Adagrad's options; defaults are torch.optim.Adagrad's.
class AdagradOptions : public OptimizerOptions {
 public:
  /// Options with learning rate lr.
  explicit AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  /// A copy.
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdagradOptions>(*this);
  }
  /// "AdagradOptions".
  std::string_view type_name() const override { return "AdagradOptions"; }
  /// lr().
  double get_lr() const override { return lr_; }
  /// Sets lr.
  void set_lr(double lr) override { lr_ = lr; }
  /// {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "maximize"}.
  std::string to_json() const override;
  /// Reads to_json()'s text.
  void from_json(std::string_view json) override;

  /// Learning rate (default 1e-2).
  LOOM_OPTIM_ARG(double, lr, 1e-2);
  /// Learning-rate decay: step t uses lr / (1 + (t - 1) * lr_decay) (default 0).
  LOOM_OPTIM_ARG(double, lr_decay, 0.0);
  /// L2 penalty added to the gradient (default 0).
  LOOM_OPTIM_ARG(double, weight_decay, 0.0);
  /// The value the sum of squared gradients starts from (default 0).
  LOOM_OPTIM_ARG(double, initial_accumulator_value, 0.0);
  /// Added to the denominator for numerical stability (default 1e-10).
  LOOM_OPTIM_ARG(double, eps, 1e-10);
  /// Ascend the objective instead of descending.
  LOOM_OPTIM_ARG(bool, maximize, false);
};

/// Adagrad: divides the gradient by the root of the sum of its squares so far ("sum", which
/// starts at initial_accumulator_value; made at the parameter's first update, where PyTorch
/// makes it with the optimizer); one optim::adagrad_step_ call per parameter.
class Adagrad : public Optimizer {
 public:
  /// Optimizes params with options.
  explicit Adagrad(std::vector<Tensor> params, const AdagradOptions& options = AdagradOptions());
  /// Optimizes groups, each with its own options or these defaults.
  explicit Adagrad(const std::vector<ParamGroup>& groups,
                   const AdagradOptions& defaults = AdagradOptions());
  /// "Adagrad".
  std::string_view name() const override { return "Adagrad"; }
  /// A group's options.
  AdagradOptions& options(size_t group) {
    return static_cast<AdagradOptions&>(*param_groups().at(group).options);
  }

 protected:
  /// Invalid learning rate / lr_decay / weight_decay / initial_accumulator_value / epsilon.
  void check_options(const OptimizerOptions& options) const override;
  /// One optim::adagrad_step_ (the sum starts at initial_accumulator_value).
  void update(const Tensor& param, const Tensor& grad, ParamState& state,
              const OptimizerOptions& options) override;
};

}  // namespace loom::optim
