#pragma once
/// @file
/// The fused update ops (optim::sgd_step_, adam_step_, rmsprop_step_, adagrad_step_):
/// argument checks, parameter parsing (the scalars each update forms from its hyperparameters)
/// and the bookkeeping every backend of these ops shares, so that error messages are word for
/// word the same on every device. The formulas are Note [Fused update formulas] in
/// loom/optim/ops.h. Each backend passes its own device rule (a callable taking a StepArg) to the
/// check_*_step functions.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"

namespace loom::optim::meta {

/// One tensor argument of an update op: its schema name and the tensor (undefined when an
/// optional argument is absent).
struct StepArg {
  std::string_view name;  ///< the argument's name in the schema
  Tensor tensor;          ///< the tensor, undefined when absent
};

/// The checks every update op makes before it touches memory: param and grad (args[0],
/// args[1]) given, param float32 or float64, every defined tensor accepted by check_device
/// (the backend's device rule) and of param's dtype and shape; and, since every argument but
/// grad is written, no written tensor with elements sharing memory (an expanded one) or
/// sharing storage with another argument.
template <typename DeviceCheck>
inline void check_step_args(std::string_view op, const std::vector<StepArg>& args,
                            DeviceCheck&& check_device) {
  const Tensor& param = args[0].tensor;
  check_defined(op, {{args[0].name, args[0].tensor}, {args[1].name, args[1].tensor}});
  LOOM_CHECK_T(TypeError, param.dtype() == DType::Float32 || param.dtype() == DType::Float64, op,
               ": expected param to be a float32 or float64 tensor, got ", param.describe());
  for (const StepArg& a : args) {
    if (!a.tensor.defined()) continue;
    check_device(a);
    LOOM_CHECK_T(TypeError, a.tensor.dtype() == param.dtype(), op, ": expected ", a.name,
                 " to have param's dtype ", dtype_name(param.dtype()), ", got ", a.name, " ",
                 a.tensor.describe(), " and param ", param.describe());
    LOOM_CHECK(a.tensor.sizes() == param.sizes(), op, ": expected ", a.name,
               " to have param's shape ", sizes_str(param.sizes()), ", got ", a.name, " ",
               a.tensor.describe());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i].tensor;
    if (i == 1 || !t.defined()) continue;
    for (int64_t d = 0; d < t.dim(); ++d) {
      LOOM_CHECK(t.size(d) <= 1 || t.stride(d) != 0, op, ": ", args[i].name,
                 " is written in place but some of its elements share memory (stride 0 in dim ", d,
                 " of ", t.describe(), "); pass a tensor with its own memory, e.g. a clone");
    }
    for (size_t j = 0; j < args.size(); ++j) {
      if (j == i || !args[j].tensor.defined() || t.numel() == 0) continue;
      LOOM_CHECK(!t.is_alias_of(args[j].tensor), op, ": ", args[i].name, " and ", args[j].name,
                 " share memory; every tensor the step writes needs its own");
    }
  }
}

/// sgd_step_'s checks: check_step_args, then a buffer when momentum is used.
template <typename DeviceCheck>
inline void check_sgd_step(std::string_view op, const Tensor& param, const Tensor& grad,
                           const Tensor& momentum_buffer, double momentum,
                           DeviceCheck&& check_device) {
  check_step_args(op, {{"param", param}, {"grad", grad}, {"momentum_buffer", momentum_buffer}},
                  check_device);
  LOOM_CHECK(momentum == 0 || momentum_buffer.defined(), op, ": momentum=", momentum,
             " needs a momentum_buffer, got none");
}

/// adam_step_'s checks: check_step_args, then both moments given, max_exp_avg_sq with
/// amsgrad, step counted from 1.
template <typename DeviceCheck>
inline void check_adam_step(std::string_view op, const Tensor& param, const Tensor& grad,
                            const Tensor& exp_avg, const Tensor& exp_avg_sq,
                            const Tensor& max_exp_avg_sq, bool amsgrad, int64_t step,
                            DeviceCheck&& check_device) {
  check_step_args(op,
                  {{"param", param},
                   {"grad", grad},
                   {"exp_avg", exp_avg},
                   {"exp_avg_sq", exp_avg_sq},
                   {"max_exp_avg_sq", max_exp_avg_sq}},
                  check_device);
  LOOM_CHECK(exp_avg.defined() && exp_avg_sq.defined(), op,
             ": expected exp_avg and exp_avg_sq, got an undefined tensor");
  LOOM_CHECK(!amsgrad || max_exp_avg_sq.defined(), op,
             ": amsgrad=True needs max_exp_avg_sq, got none");
  LOOM_CHECK(step >= 1, op, ": expected step >= 1 (the number of this update), got ", step);
}

/// rmsprop_step_'s checks: check_step_args, then square_avg given, grad_avg when centered,
/// a buffer when momentum > 0.
template <typename DeviceCheck>
inline void check_rmsprop_step(std::string_view op, const Tensor& param, const Tensor& grad,
                               const Tensor& square_avg, const Tensor& grad_avg,
                               const Tensor& momentum_buffer, bool centered, double momentum,
                               DeviceCheck&& check_device) {
  check_step_args(op,
                  {{"param", param},
                   {"grad", grad},
                   {"square_avg", square_avg},
                   {"grad_avg", grad_avg},
                   {"momentum_buffer", momentum_buffer}},
                  check_device);
  LOOM_CHECK(square_avg.defined(), op, ": expected square_avg, got an undefined tensor");
  LOOM_CHECK(!centered || grad_avg.defined(), op, ": centered=True needs grad_avg, got none");
  LOOM_CHECK(momentum <= 0 || momentum_buffer.defined(), op, ": momentum=", momentum,
             " needs a momentum_buffer, got none");
}

/// adagrad_step_'s checks: check_step_args, then state_sum given, step counted from 1.
template <typename DeviceCheck>
inline void check_adagrad_step(std::string_view op, const Tensor& param, const Tensor& grad,
                               const Tensor& state_sum, int64_t step, DeviceCheck&& check_device) {
  check_step_args(op, {{"param", param}, {"grad", grad}, {"state_sum", state_sum}}, check_device);
  LOOM_CHECK(state_sum.defined(), op, ": expected state_sum, got an undefined tensor");
  LOOM_CHECK(step >= 1, op, ": expected step >= 1 (the number of this update), got ", step);
}

/// The scalars of one Adam update, formed in double as PyTorch's single-tensor Adam does;
/// a backend converts them to the parameter's dtype.
struct AdamScalars {
  double step_size;  ///< lr / (1 - beta1^step)
  double bc2_sqrt;   ///< sqrt(1 - beta2^step)
  double decay;      ///< 1 - lr * weight_decay (decoupled weight decay)
};

/// Adam's scalars for update number step (>= 1).
inline AdamScalars adam_scalars(int64_t step, double lr, double beta1, double beta2,
                                double weight_decay) {
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  return {lr / bias_correction1, std::sqrt(bias_correction2), 1 - lr * weight_decay};
}

/// Adagrad's decayed learning rate for update number step (>= 1).
inline double adagrad_clr(int64_t step, double lr, double lr_decay) {
  return lr / (1 + static_cast<double>(step - 1) * lr_decay);
}

/// The tensor an optional argument holds, or an undefined one.
inline Tensor value_or_undefined(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

/// Bumps the version counter of each defined tensor an update wrote.
inline void bump_versions(std::initializer_list<Tensor> written) {
  for (const Tensor& t : written) {
    if (t.defined()) t.bump_version();
  }
}

}  // namespace loom::optim::meta
