#pragma once
/// @file
/// The optimizer base: parameter groups with their own options, per-parameter state,
/// step(), zero_grad(), and state dicts (PyTorch's torch.optim.Optimizer).
///
/// Note [Optimizer state dicts]: state_dict() gives the tensors of every parameter's state
/// under "state.<param index>.<name>" ("state.0.exp_avg"), the index counting parameters
/// across the groups in order, as PyTorch's state_dict does, plus one JSON text holding the
/// rest: {"optimizer": "Adam", "param_groups": [{"lr": 0.001, ..., "params": [0, 1]}, ...],
/// "state": {"0": {"step": 3}, ...}}. Doubles are written in their shortest round-trip
/// form and load_state_dict copies the tensors, so an optimizer loaded from a state dict
/// continues bit for bit as the one that made it would. (A training checkpoint stores the
/// tensors under "optim." and the JSON in its metadata: docs/design/training.md.)

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "loom/core/tensor.h"

namespace loom::optim {

/// Declares an option of an optimizer's options class: `name(value)` sets it and returns the
/// options (so calls chain: `AdamOptions(1e-3).amsgrad(true)`), `name()` reads it.
#define LOOM_OPTIM_ARG(T, name, ...)        \
 public:                                    \
  auto& name(const T& value) {              \
    name##_ = value;                        \
    return *this;                           \
  }                                         \
  const T& name() const { return name##_; } \
                                            \
 private:                                   \
  T name##_ = __VA_ARGS__

/// The options of one parameter group (learning rate and the rule's hyperparameters); each
/// optimizer has its own subclass (SGDOptions, AdamOptions, ...).
class OptimizerOptions {
 public:
  /// Destroys the options.
  virtual ~OptimizerOptions() = default;
  /// A copy of the same type.
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  /// The class name, for messages ("AdamOptions").
  virtual std::string_view type_name() const = 0;
  /// The learning rate (what schedulers read).
  virtual double get_lr() const = 0;
  /// Sets the learning rate (what schedulers write).
  virtual void set_lr(double lr) = 0;
  /// The momentum a scheduler may cycle (OneCycleLR): `momentum` of SGD and RMSprop, beta1 of
  /// Adam and AdamW; nullopt for an optimizer without one (Adagrad).
  virtual std::optional<double> get_momentum() const { return std::nullopt; }
  /// Sets what get_momentum() reads; throws ValueError for an optimizer without momentum.
  virtual void set_momentum(double momentum);
  /// The options as a JSON object ({"lr": 0.001, "betas": [0.9, 0.999], ...}).
  virtual std::string to_json() const = 0;
  /// Reads every option back from to_json()'s text; throws ValueError naming a missing or
  /// mistyped option.
  virtual void from_json(std::string_view json) = 0;
};

/// One group of parameters and, optionally, its own options (PyTorch's `{"params": [...],
/// "lr": 0.01}`); a group without options takes the optimizer's defaults when added.
struct ParamGroup {
  /// A group with the optimizer's default options.
  ParamGroup(std::vector<Tensor> params) : params(std::move(params)) {}  // NOLINT: implicit
  /// A group with its own options (of the optimizer's options type).
  template <typename Options,
            typename = std::enable_if_t<std::is_base_of_v<OptimizerOptions, Options>>>
  ParamGroup(std::vector<Tensor> params, const Options& options)
      : params(std::move(params)), options(std::make_shared<Options>(options)) {}

  /// The parameters (leaf tensors), updated in place by step().
  std::vector<Tensor> params;
  /// The group's options; null only in a group not yet added to an optimizer.
  std::shared_ptr<OptimizerOptions> options;
  /// The learning rate a scheduler started from (PyTorch's group["initial_lr"]); set by the
  /// first scheduler made on the optimizer.
  std::optional<double> initial_lr;
};

/// The state an optimizer keeps for one parameter.
struct ParamState {
  /// Updates made so far (Adam, AdamW, RMSprop, Adagrad count them; SGD does not).
  int64_t step = 0;
  /// The rule's tensors by name ("exp_avg", "momentum_buffer", "sum", ...).
  std::map<std::string, Tensor> tensors;
};

/// An optimizer's state dict (Note [Optimizer state dicts]).
struct OptimizerStateDict {
  /// "state.<param index>.<name>" -> the state tensor (shares memory with the optimizer's).
  std::map<std::string, Tensor> tensors;
  /// The groups' options and parameter indices and the scalar state, as JSON text.
  std::string json;
};

/// A closure that recomputes the loss (zero_grad, forward, backward) and returns it, for
/// step(closure).
using LossClosure = std::function<Tensor()>;

/// The base of every optimizer (PyTorch's torch.optim.Optimizer).
class Optimizer {
 public:
  /// Leaves the parameters as they are.
  virtual ~Optimizer();
  /// Not copyable: the state belongs to these parameters (use state_dict to copy it).
  Optimizer(const Optimizer&) = delete;
  /// Not copyable.
  Optimizer& operator=(const Optimizer&) = delete;

  /// The class name ("Adam"), for messages and state dicts.
  virtual std::string_view name() const = 0;

  /// One update of every parameter whose grad is defined (parameters without a gradient
  /// are skipped, as in PyTorch). Runs without recording gradients. With a closure, calls
  /// it first (with gradients recorded) and returns its loss; otherwise returns an
  /// undefined tensor.
  Tensor step(const LossClosure& closure = nullptr);

  /// Clears the gradients of every parameter: sets them undefined (set_to_none, PyTorch's
  /// default) or fills them with zeros in place.
  void zero_grad(bool set_to_none = true);

  /// Adds a group (PyTorch's add_param_group). Throws ValueError if it is empty, holds a
  /// tensor twice, or holds a tensor of another group ("some parameters appear in more than
  /// one parameter group"), TypeError if its options are of another optimizer's type, and
  /// ValueError naming the option if an option is out of range ("Invalid learning rate: -1").
  void add_param_group(const ParamGroup& group);

  /// The groups (their options may be changed between steps, as in PyTorch).
  std::vector<ParamGroup>& param_groups() { return groups_; }
  /// The groups.
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// The defaults a group without options takes.
  const OptimizerOptions& defaults() const { return *defaults_; }

  /// The state of every parameter that has been updated, by parameter.
  const std::unordered_map<const TensorImpl*, ParamState>& state() const { return state_; }
  /// The state of one parameter (empty until its first update).
  ParamState& state(const Tensor& param) { return state_[param.impl()]; }

  /// The state dict (Note [Optimizer state dicts]).
  OptimizerStateDict state_dict() const;
  /// Loads a state dict made by an optimizer of the same type over parameters of the same
  /// shapes in the same groups; the tensors are copied (converted to each parameter's dtype).
  /// Throws ValueError on a different number of groups ("loaded state dict has a different
  /// number of parameter groups"), a group of another size, a state tensor of another shape,
  /// or a state dict of another optimizer.
  void load_state_dict(const OptimizerStateDict& state_dict);

 protected:
  /// Takes the defaults; the subclass's constructor then adds its groups with add_groups().
  explicit Optimizer(std::unique_ptr<OptimizerOptions> defaults);
  /// Adds the constructor's groups; throws ValueError if there are none ("optimizer got an
  /// empty parameter list").
  void add_groups(const std::vector<ParamGroup>& groups);
  /// The options a group given `options` keeps: a copy if they are of the defaults' type;
  /// throws TypeError otherwise (AdamW also takes Adam's options).
  virtual std::unique_ptr<OptimizerOptions> adopt_options(const OptimizerOptions& options) const;
  /// Throws ValueError (PyTorch's message) if an option is out of range.
  virtual void check_options(const OptimizerOptions& options) const = 0;
  /// Updates one parameter (its grad is defined) with the group's options; gradients are
  /// not recorded while it runs.
  virtual void update(const Tensor& param, const Tensor& grad, ParamState& state,
                      const OptimizerOptions& options) = 0;

 private:
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace loom::optim
