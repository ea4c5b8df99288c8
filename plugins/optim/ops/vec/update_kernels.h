#pragma once
// The fused update ops' per-ISA loops (vec/update_kernels.cpp, compiled once per instruction
// set; Note [CPU kernels per instruction set] in loom/core/cpu_isa.h). cpu_steps.cpp checks
// the arguments, forms the step's scalars in the parameter's dtype and hands each thread a
// contiguous range.
//
// Read by the per-ISA file too: its ISA-independent part holds plain structs only (no inline
// function); the declarations follow only outside the per-ISA files.

#include <cstdint>

namespace loom::cpu {

/// Adam's (and AdamW's) per-step scalars in the parameter's dtype T, as cpu_steps.cpp forms
/// them from PyTorch's single-tensor formulas (Note [Fused update formulas] in loom/optim/ops.h).
template <typename T>
struct AdamStepArgs {
  T step_size;     ///< lr / (1 - beta1^step)
  T bc2_sqrt;      ///< sqrt(1 - beta2^step)
  T decay;         ///< 1 - lr * weight_decay (decoupled weight decay)
  T weight_decay;  ///< L2 weight decay (coupled)
  T w1;            ///< 1 - beta1
  T beta2;
  T w2;  ///< 1 - beta2
  T eps;
  T sign;  ///< -1 to maximize, else 1
  bool decoupled;
  bool has_l2;
  bool amsgrad;
};

/// SGD's per-step scalars in the parameter's dtype T.
template <typename T>
struct SgdStepArgs {
  T lr;
  T momentum;
  T one_minus_dampening;
  T weight_decay;
  T sign;  ///< -1 to maximize, else 1
  bool has_wd;
  bool has_momentum;
  bool nesterov;
  bool first;  ///< the momentum buffer is only written (it becomes the gradient)
};

/// RMSprop's per-step scalars in the parameter's dtype T.
template <typename T>
struct RmspropStepArgs {
  T lr;
  T alpha;
  T one_minus_alpha;
  T eps;
  T weight_decay;
  T momentum;
  T sign;  ///< -1 to maximize, else 1
  bool has_wd;
  bool centered;
  bool has_momentum;
};

/// Adagrad's per-step scalars in the parameter's dtype T.
template <typename T>
struct AdagradStepArgs {
  T clr;  ///< lr / (1 + (step - 1) * lr_decay)
  T weight_decay;
  T eps;
  T sign;  ///< -1 to maximize, else 1
  bool has_wd;
};

}  // namespace loom::cpu

#if !defined(LOOM_ISA_NAMESPACE)
#include "loom/core/cpu_isa.h"

namespace loom::cpu {
// n elements from pointers already offset to the range's start; vmax (AMSGrad) and buf
// (momentum), gavg (centered RMSprop) may be null when unused.
LOOM_ISA_DECLARE(
    void adam_step_f32(const AdamStepArgs<float>& a, float* x, const float* g, float* m,
                       float* v, float* vmax, int64_t n);
    void adam_step_f64(const AdamStepArgs<double>& a, double* x, const double* g, double* m,
                       double* v, double* vmax, int64_t n);
    void sgd_step_f32(const SgdStepArgs<float>& a, float* x, const float* g, float* buf,
                      int64_t n);
    void sgd_step_f64(const SgdStepArgs<double>& a, double* x, const double* g, double* buf,
                      int64_t n);
    void rmsprop_step_f32(const RmspropStepArgs<float>& a, float* x, const float* g, float* sq,
                          float* gavg, float* buf, int64_t n);
    void rmsprop_step_f64(const RmspropStepArgs<double>& a, double* x, const double* g,
                          double* sq, double* gavg, double* buf, int64_t n);
    void adagrad_step_f32(const AdagradStepArgs<float>& a, float* x, const float* g, float* sum,
                          int64_t n);
    void adagrad_step_f64(const AdagradStepArgs<double>& a, double* x, const double* g,
                          double* sum, int64_t n);)
}  // namespace loom::cpu
#endif
