#pragma once
/// @file
/// The fused update ops of the optimizers (namespace `optim::` in the dispatcher): one call
/// updates one parameter, its gradient's effect and its state in a single pass, in place.
/// The optimizers (loom/optim/sgd.h, adam.h, rmsprop.h, adagrad.h) call them once per
/// parameter per step; a backend provides the same step by registering a kernel for the same
/// schema (docs/design/training.md). CPU kernels: float32 and float64.
///
/// Note [Fused update formulas]: each op computes PyTorch's single-tensor update
/// (torch.optim's `_single_tensor_<name>`), in the same order of operations, in the
/// parameter's dtype:
///   - the gradient is negated first when `maximize` (PyTorch's implementation; SGD's
///     published pseudo-code negates at the end instead, which differs only in the sign of
///     the weight decay term when both are set);
///   - L2 weight decay adds `weight_decay * param` to the gradient; Adam's decoupled form
///     (AdamW) multiplies the parameter by `1 - lr * weight_decay` before the update;
///   - moving averages `m += (1 - beta) * (g - m)` are lerps, as PyTorch computes them.
/// The op never allocates: state tensors are made by the optimizer (or the caller).

#include <cstdint>
#include <optional>

#include "loom/core/tensor.h"
#include "loom/ops/op_handle.h"

namespace loom::optim {

namespace detail {
/// Loads the ops_optim plugin (the optim:: schemas and CPU kernels) once; defined in
/// libloom_optim. Each function below calls it before its first call. Throws PluginError if the
/// plugin cannot be loaded.
void require_optim_ops();
}  // namespace detail

/// The handle on op `name` for the functions below (see LOOM_TYPED_OP), keeping the library.
#define LOOM_OPTIM_OP(var, name, ...)              \
  static const auto var =                          \
      (::loom::optim::detail::require_optim_ops(), \
       ::loom::Dispatcher::instance().find_op_or_throw(name).typed<__VA_ARGS__>())

/// SGD with momentum, dampening, Nesterov momentum, L2 weight decay and maximize.
/// Schema: `%optim::sgd_step_(Tensor(a!) param, Tensor grad, Tensor(b!)? momentum_buffer, *,
/// float lr, float momentum=0., float dampening=0., float weight_decay=0., bool nesterov=False,
/// bool maximize=False, bool is_first_step=False) -> ()`.
/// momentum_buffer is needed when momentum != 0; on the first step (is_first_step) it is only
/// written (it becomes the gradient), so it may hold anything.
inline void sgd_step_(const Tensor& param, const Tensor& grad,
                      const std::optional<Tensor>& momentum_buffer, double lr,
                      double momentum = 0.0, double dampening = 0.0, double weight_decay = 0.0,
                      bool nesterov = false, bool maximize = false, bool is_first_step = false) {
  LOOM_OPTIM_OP(op, "optim::sgd_step_",
                void(const Tensor&, const Tensor&, const std::optional<Tensor>&, double, double,
                     double, double, bool, bool, bool));
  op(param, grad, momentum_buffer, lr, momentum, dampening, weight_decay, nesterov, maximize,
     is_first_step);
}

/// Adam (and AdamW with decoupled_weight_decay) with bias correction and AMSGrad.
/// Schema: `%optim::adam_step_(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg,
/// Tensor(c!) exp_avg_sq, Tensor(d!)? max_exp_avg_sq, *, int step, float lr, float beta1=0.9,
/// float beta2=0.999, float eps=1e-08, float weight_decay=0., bool amsgrad=False,
/// bool maximize=False, bool decoupled_weight_decay=False) -> ()`.
/// step is the number of this update, counting from 1 (the bias corrections use it);
/// max_exp_avg_sq is needed when amsgrad.
inline void adam_step_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                       const Tensor& exp_avg_sq, const std::optional<Tensor>& max_exp_avg_sq,
                       int64_t step, double lr, double beta1 = 0.9, double beta2 = 0.999,
                       double eps = 1e-8, double weight_decay = 0.0, bool amsgrad = false,
                       bool maximize = false, bool decoupled_weight_decay = false) {
  LOOM_OPTIM_OP(
      op, "optim::adam_step_",
      void(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const std::optional<Tensor>&,
           int64_t, double, double, double, double, double, bool, bool, bool));
  op(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
     amsgrad, maximize, decoupled_weight_decay);
}

/// RMSprop with smoothing alpha, centered variance, momentum and L2 weight decay.
/// Schema: `%optim::rmsprop_step_(Tensor(a!) param, Tensor grad, Tensor(b!) square_avg,
/// Tensor(c!)? grad_avg, Tensor(d!)? momentum_buffer, *, float lr, float alpha=0.99,
/// float eps=1e-08, float weight_decay=0., float momentum=0., bool centered=False,
/// bool maximize=False) -> ()`.
/// grad_avg is needed when centered, momentum_buffer when momentum > 0 (both start at zero, as
/// PyTorch's state does).
inline void rmsprop_step_(const Tensor& param, const Tensor& grad, const Tensor& square_avg,
                          const std::optional<Tensor>& grad_avg,
                          const std::optional<Tensor>& momentum_buffer, double lr,
                          double alpha = 0.99, double eps = 1e-8, double weight_decay = 0.0,
                          double momentum = 0.0, bool centered = false, bool maximize = false) {
  LOOM_OPTIM_OP(
      op, "optim::rmsprop_step_",
      void(const Tensor&, const Tensor&, const Tensor&, const std::optional<Tensor>&,
           const std::optional<Tensor>&, double, double, double, double, double, bool, bool));
  op(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps, weight_decay, momentum,
     centered, maximize);
}

/// Adagrad with learning-rate decay and L2 weight decay.
/// Schema: `%optim::adagrad_step_(Tensor(a!) param, Tensor grad, Tensor(b!) state_sum, *,
/// int step, float lr, float lr_decay=0., float weight_decay=0., float eps=1e-10,
/// bool maximize=False) -> ()`.
/// step is the number of this update, counting from 1 (the rate is lr / (1 + (step - 1) *
/// lr_decay)).
inline void adagrad_step_(const Tensor& param, const Tensor& grad, const Tensor& state_sum,
                          int64_t step, double lr, double lr_decay = 0.0, double weight_decay = 0.0,
                          double eps = 1e-10, bool maximize = false) {
  LOOM_OPTIM_OP(op, "optim::adagrad_step_",
                void(const Tensor&, const Tensor&, const Tensor&, int64_t, double, double, double,
                     double, bool));
  op(param, grad, state_sum, step, lr, lr_decay, weight_decay, eps, maximize);
}

}  // namespace loom::optim
