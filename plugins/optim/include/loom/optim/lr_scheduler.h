#pragma once
/// @file
/// Learning-rate schedulers (torch.optim.lr_scheduler): each sets the `lr` of every group of
/// an optimizer per step (or epoch) and keeps a state dict.
///
/// Note [Chainable schedulers]: as in PyTorch, a scheduler's step() computes the next lr
/// from the group's current lr (the recursive form of its rule), so two schedulers on one
/// optimizer compose; step(epoch) (what SequentialLR uses at a milestone) jumps with the
/// closed form where the rule has one. Making a scheduler applies epoch 0 at once (LinearLR
/// multiplies the lr by start_factor when it is made); the first scheduler made on an
/// optimizer records each group's initial_lr, which later schedulers start from.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/optim/optimizer.h"

namespace loom::optim {

/// The base of the epoch/step schedulers (PyTorch's LRScheduler).
class LRScheduler {
 public:
  /// Leaves the optimizer's lrs as they are.
  virtual ~LRScheduler();
  /// Not copyable: a scheduler is bound to its optimizer.
  LRScheduler(const LRScheduler&) = delete;
  /// Not copyable.
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// The class name ("StepLR").
  virtual std::string_view name() const = 0;
  /// Advances one epoch (or step, for per-batch schedules) and sets every group's lr.
  virtual void step();
  /// Jumps to epoch `epoch` (PyTorch's deprecated step(epoch)), with the closed form where the
  /// rule has one; SequentialLR calls step(0) on the scheduler it switches to.
  virtual void step(int64_t epoch);
  /// The lr of every group as this scheduler last set it.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /// The epoch of the last step (0 after construction).
  int64_t last_epoch() const { return last_epoch_; }
  /// The learning rates the schedule starts from (each group's initial_lr).
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /// The optimizer scheduled.
  Optimizer& optimizer() const { return optimizer_; }

  /// The mutable state as JSON text (last_epoch, the step count, base and last lrs, and what a
  /// subclass keeps). Hyperparameters are constructor arguments: load into a scheduler made
  /// with the same ones.
  virtual std::string state_dict() const;
  /// Restores state_dict()'s text; throws ValueError naming a missing field or a scheduler of
  /// another kind.
  virtual void load_state_dict(std::string_view state);

  /// @cond INTERNAL
  /// What SequentialLR does to its schedulers when it is made: undo their first step.
  void rewind_for_sequential() { last_epoch_ -= 1; }
  /// Resets the step count and applies the current epoch + 1 (PyTorch's _initial_step).
  void initial_step();
  /// @endcond

 protected:
  /// Records base_lrs from each group's initial_lr (setting it from lr when last_epoch is -1);
  /// the subclass's constructor ends with initial_step(). Throws ValueError when resuming
  /// (last_epoch != -1) an optimizer whose groups have no initial_lr.
  LRScheduler(Optimizer& optimizer, int64_t last_epoch);
  /// The next lr of every group from the current ones (the recursive form).
  virtual std::vector<double> get_lr() const = 0;
  /// The lr of every group at last_epoch from base_lrs, or nullopt without a closed form.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  /// The groups' current lrs.
  std::vector<double> group_lrs() const;
  /// Sets the groups' lrs and last_lr.
  void apply(const std::vector<double>& lrs);

  Optimizer& optimizer_;          ///< the optimizer scheduled
  int64_t last_epoch_;            ///< the epoch of the last step
  int64_t step_count_ = 0;        ///< steps taken, counting the initial one
  std::vector<double> base_lrs_;  ///< each group's initial_lr
  std::vector<double> last_lr_;   ///< what the last step set
};

/// Multiplies the lr by gamma every step_size epochs: lr = base_lr * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  /// Throws ValueError unless step_size > 0.
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);
  /// "StepLR".
  std::string_view name() const override { return "StepLR"; }

 protected:
  /// Recursive form.
  std::vector<double> get_lr() const override;
  /// base_lr * gamma^(last_epoch / step_size).
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// Multiplies the lr by gamma at each milestone epoch (a milestone given twice multiplies
/// twice): lr = base_lr * gamma^(number of milestones <= epoch).
class MultiStepLR : public LRScheduler {
 public:
  /// milestones in any order.
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1,
              int64_t last_epoch = -1);
  /// "MultiStepLR".
  std::string_view name() const override { return "MultiStepLR"; }

 protected:
  /// Recursive form.
  std::vector<double> get_lr() const override;
  /// base_lr * gamma^bisect_right(milestones, last_epoch).
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

/// Multiplies the lr by gamma every epoch: lr = base_lr * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  /// Decays by gamma per epoch.
  ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch = -1);
  /// "ExponentialLR".
  std::string_view name() const override { return "ExponentialLR"; }

 protected:
  /// Recursive form.
  std::vector<double> get_lr() const override;
  /// base_lr * gamma^last_epoch.
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double gamma_;
};

/// Cosine annealing from base_lr to eta_min over T_max epochs (and back up over the next T_max,
/// as PyTorch's): lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
 public:
  /// Throws ValueError unless T_max > 0.
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0,
                    int64_t last_epoch = -1);
  /// "CosineAnnealingLR".
  std::string_view name() const override { return "CosineAnnealingLR"; }

 protected:
  /// PyTorch's recursive form.
  std::vector<double> get_lr() const override;
  /// The closed form above.
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

/// Linear warm-up (or decay) of the lr's factor from start_factor to end_factor over
/// total_iters epochs, then constant: lr = base_lr * (start + (end - start) * min(epoch,
/// total_iters) / total_iters).
class LinearLR : public LRScheduler {
 public:
  /// Throws ValueError with PyTorch's messages for factors outside (0, 1] / [0, 1].
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5, int64_t last_epoch = -1);
  /// "LinearLR".
  std::string_view name() const override { return "LinearLR"; }

 protected:
  /// PyTorch's recursive form.
  std::vector<double> get_lr() const override;
  /// The closed form above.
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/// Multiplies the lr by factor until total_iters epochs have passed, then restores it:
/// lr = base_lr * (epoch < total_iters ? factor : 1).
class ConstantLR : public LRScheduler {
 public:
  /// Throws ValueError with PyTorch's message for a factor outside [0, 1].
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5,
             int64_t last_epoch = -1);
  /// "ConstantLR".
  std::string_view name() const override { return "ConstantLR"; }

 protected:
  /// PyTorch's recursive form.
  std::vector<double> get_lr() const override;
  /// The closed form above.
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double factor_;
  int64_t total_iters_;
};

/// Polynomial decay to zero over total_iters epochs:
/// lr = base_lr * (1 - min(epoch, total_iters) / total_iters)^power.
class PolynomialLR : public LRScheduler {
 public:
  /// Throws ValueError unless total_iters > 0.
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0,
               int64_t last_epoch = -1);
  /// "PolynomialLR".
  std::string_view name() const override { return "PolynomialLR"; }

 protected:
  /// PyTorch's recursive form.
  std::vector<double> get_lr() const override;
  /// The closed form above.
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t total_iters_;
  double power_;
};

/// A function of the epoch giving a factor, for LambdaLR and MultiplicativeLR.
using LrLambda = std::function<double(int64_t epoch)>;

/// lr = base_lr * lambda(epoch), with one function for every group or one per group.
class LambdaLR : public LRScheduler {
 public:
  /// Throws ValueError unless there is one function or one per group.
  LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas, int64_t last_epoch = -1);
  /// "LambdaLR".
  std::string_view name() const override { return "LambdaLR"; }

 protected:
  /// base_lr * lambda(last_epoch).
  std::vector<double> get_lr() const override;

 private:
  std::vector<LrLambda> lambdas_;
};

/// lr *= lambda(epoch) every epoch after the first, with one function for every group or one
/// per group.
class MultiplicativeLR : public LRScheduler {
 public:
  /// Throws ValueError unless there is one function or one per group.
  MultiplicativeLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas, int64_t last_epoch = -1);
  /// "MultiplicativeLR".
  std::string_view name() const override { return "MultiplicativeLR"; }

 protected:
  /// lr * lambda(last_epoch) (lr unchanged at epoch 0).
  std::vector<double> get_lr() const override;

 private:
  std::vector<LrLambda> lambdas_;
};

/// The one-cycle policy (torch.optim.lr_scheduler.OneCycleLR), stepped once per batch: the lr
/// rises from max_lr / div_factor to max_lr over pct_start of the steps, then anneals to
/// initial_lr / final_div_factor (three_phase: back to initial_lr first, then down); the
/// momentum (beta1 for Adam) cycles the other way between max_momentum and base_momentum.
class OneCycleLR : public LRScheduler {
 public:
  /// The policy's parameters, with PyTorch's defaults.
  struct Options {
    /// One max_lr for every group, or one per group.
    std::vector<double> max_lr;
    /// The number of steps of the cycle; or give epochs and steps_per_epoch.
    std::optional<int64_t> total_steps;
    /// Epochs, with steps_per_epoch, when total_steps is not given.
    std::optional<int64_t> epochs;
    /// Steps per epoch, with epochs.
    std::optional<int64_t> steps_per_epoch;
    /// The fraction of the cycle spent raising the lr (default 0.3).
    double pct_start = 0.3;
    /// "cos" (default) or "linear".
    std::string anneal_strategy = "cos";
    /// Cycle the momentum (or beta1) inversely to the lr (default true).
    bool cycle_momentum = true;
    /// The lowest momentum, one for every group or one per group (default 0.85).
    std::vector<double> base_momentum = {0.85};
    /// The highest momentum, one for every group or one per group (default 0.95).
    std::vector<double> max_momentum = {0.95};
    /// initial_lr = max_lr / div_factor (default 25).
    double div_factor = 25.0;
    /// min_lr = initial_lr / final_div_factor (default 1e4).
    double final_div_factor = 1e4;
    /// Three phases (up, back down to initial_lr, down to min_lr) instead of two.
    bool three_phase = false;
  };
  /// Sets each group's lr (and initial_lr) to max_lr / div_factor; throws ValueError with
  /// PyTorch's messages on inconsistent options.
  OneCycleLR(Optimizer& optimizer, Options options, int64_t last_epoch = -1);
  /// "OneCycleLR".
  std::string_view name() const override { return "OneCycleLR"; }
  /// The number of steps of the cycle.
  int64_t total_steps() const { return total_steps_; }

 protected:
  /// The lr (and momentum, which it sets) at last_epoch; throws ValueError past total_steps
  /// ("Tried to step 101 times. The specified number of total steps is 100").
  std::vector<double> get_lr() const override;

 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr;              // 0 initial, 1 max, 2 min
    int start_momentum, end_momentum;  // 0 max_momentum, 1 base_momentum
  };
  double anneal(double start, double end, double pct) const;
  Options options_;
  int64_t total_steps_;
  std::vector<Phase> phases_;
  std::vector<double> initial_lrs_, max_lrs_, min_lrs_, base_momentums_, max_momentums_;
};

/// Runs schedulers one after another: schedulers[i] from milestone i - 1 on (restarted at its
/// epoch 0 when its milestone is reached).
class SequentialLR : public LRScheduler {
 public:
  /// Takes schedulers made on this optimizer (each already made, so each has taken its first
  /// step; SequentialLR undoes that and restarts the first). Throws ValueError unless there
  /// is one more scheduler than milestones and all belong to the optimizer.
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  /// "SequentialLR".
  std::string_view name() const override { return "SequentialLR"; }
  /// Steps the scheduler whose turn it is (step(0) at its milestone).
  void step() override;
  /// Not supported (PyTorch's SequentialLR takes no epoch); throws ValueError.
  void step(int64_t epoch) override;
  /// Its last_epoch and last lr, and every scheduler's state.
  std::string state_dict() const override;
  /// Restores state_dict()'s text.
  void load_state_dict(std::string_view state) override;

 protected:
  /// Unused (step() delegates).
  std::vector<double> get_lr() const override { return group_lrs(); }

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

/// Lowers the lr by factor when a metric has stopped improving for patience epochs
/// (torch.optim.lr_scheduler.ReduceLROnPlateau); step(metric) once per epoch.
class ReduceLROnPlateau {
 public:
  /// The rule's parameters, with PyTorch's defaults.
  struct Options {
    /// "min" (lower is better, default) or "max".
    std::string mode = "min";
    /// new_lr = lr * factor (default 0.1; must be < 1).
    double factor = 0.1;
    /// Epochs without improvement tolerated before lowering (default 10).
    int64_t patience = 10;
    /// The least change that counts as an improvement (default 1e-4).
    double threshold = 1e-4;
    /// "rel" (relative to the best, default) or "abs".
    std::string threshold_mode = "rel";
    /// Epochs to wait after a reduction before counting again (default 0).
    int64_t cooldown = 0;
    /// The lowest lr, one for every group or one per group (default 0).
    std::vector<double> min_lr = {0.0};
    /// A reduction smaller than eps is not made (default 1e-8).
    double eps = 1e-8;
  };
  /// Throws ValueError with PyTorch's messages ("Factor should be < 1.0.", "mode foo is
  /// unknown!", "expected 2 min_lrs, got 3").
  ReduceLROnPlateau(Optimizer& optimizer, Options options);
  /// "ReduceLROnPlateau".
  std::string_view name() const { return "ReduceLROnPlateau"; }
  /// One epoch with the metric's value.
  void step(double metric);
  /// The lr of every group after the last step.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /// The number of steps taken.
  int64_t last_epoch() const { return last_epoch_; }
  /// The best metric so far.
  double best() const { return best_; }
  /// Epochs since the best metric.
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  /// Its state as JSON text (best, num_bad_epochs, cooldown_counter, last_epoch, last lr).
  std::string state_dict() const;
  /// Restores state_dict()'s text.
  void load_state_dict(std::string_view state);

 private:
  bool is_better(double a, double best) const;
  Optimizer& optimizer_;
  Options options_;
  std::vector<double> min_lrs_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace loom::optim
