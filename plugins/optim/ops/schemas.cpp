// Schemas of the optimizers' fused update ops (Note [Fused update formulas] in
// loom/optim/ops.h). One op per update rule, per parameter; every tensor it writes carries
// an alias mark. Argument names and defaults are torch.optim's.
#include "loom/dispatcher/library.h"

LOOM_LIBRARY(optim, m) {
  m.def(
      "sgd_step_(Tensor(a!) param, Tensor grad, Tensor(b!)? momentum_buffer, *, float lr, "
      "float momentum=0., float dampening=0., float weight_decay=0., bool nesterov=False, "
      "bool maximize=False, bool is_first_step=False) -> ()");
  m.def(
      "adam_step_(Tensor(a!) param, Tensor grad, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, "
      "Tensor(d!)? max_exp_avg_sq, *, int step, float lr, float beta1=0.9, float beta2=0.999, "
      "float eps=1e-08, float weight_decay=0., bool amsgrad=False, bool maximize=False, "
      "bool decoupled_weight_decay=False) -> ()");
  m.def(
      "rmsprop_step_(Tensor(a!) param, Tensor grad, Tensor(b!) square_avg, Tensor(c!)? grad_avg, "
      "Tensor(d!)? momentum_buffer, *, float lr, float alpha=0.99, float eps=1e-08, "
      "float weight_decay=0., float momentum=0., bool centered=False, bool maximize=False) -> ()");
  m.def(
      "adagrad_step_(Tensor(a!) param, Tensor grad, Tensor(b!) state_sum, *, int step, float lr, "
      "float lr_decay=0., float weight_decay=0., float eps=1e-10, bool maximize=False) -> ()");
}
