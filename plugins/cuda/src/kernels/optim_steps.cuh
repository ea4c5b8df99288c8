#pragma once
/// @file
/// The plain-data boundary of the CUDA kernels of the optimizers' fused update ops
/// (optim::sgd_step_, adam_step_, rmsprop_step_, adagrad_step_; Note [Fused update formulas]
/// in plugins/optim/include/loom/optim/ops.h). Every tensor is contiguous, of param's dtype
/// (float32 or float64) and shape; absent optional tensors are nullptr. The scalars are the
/// CPU kernels' (plugins/optim/ops/cpu_steps.cpp), formed on the host in double; each kernel
/// converts them to the dtype as the CPU kernel does, so both compute the same formula in the
/// same order.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_api.h"

namespace loom::cuda::kernels {

/// optim::sgd_step_.
struct SgdStepLaunch {
  void* param = nullptr;
  const void* grad = nullptr;
  void* momentum_buffer = nullptr;  ///< needed when momentum != 0
  int64_t numel = 0;
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false, is_first_step = false;
};

/// optim::adam_step_ (AdamW with decoupled).
struct AdamStepLaunch {
  void* param = nullptr;
  const void* grad = nullptr;
  void* exp_avg = nullptr;
  void* exp_avg_sq = nullptr;
  void* max_exp_avg_sq = nullptr;  ///< needed when amsgrad
  int64_t numel = 0;
  double step_size = 0;  ///< lr / (1 - beta1^step)
  double bc2_sqrt = 1;   ///< sqrt(1 - beta2^step)
  double decay = 1;      ///< 1 - lr * weight_decay (decoupled)
  double weight_decay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool amsgrad = false, maximize = false, decoupled = false;
};

/// optim::rmsprop_step_.
struct RmspropStepLaunch {
  void* param = nullptr;
  const void* grad = nullptr;
  void* square_avg = nullptr;
  void* grad_avg = nullptr;         ///< needed when centered
  void* momentum_buffer = nullptr;  ///< needed when momentum > 0
  int64_t numel = 0;
  double lr = 0, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool centered = false, maximize = false;
};

/// optim::adagrad_step_.
struct AdagradStepLaunch {
  void* param = nullptr;
  const void* grad = nullptr;
  void* state_sum = nullptr;
  int64_t numel = 0;
  double clr = 0;  ///< lr / (1 + (step - 1) * lr_decay)
  double weight_decay = 0, eps = 1e-10;
  bool maximize = false;
};

/// Launches the update on stream; dtype is Float32 or Float64 (the host checks).
void launch_sgd_step(Dt dtype, const SgdStepLaunch& a, cudaStream_t stream);
/// Launches the update on stream; dtype is Float32 or Float64 (the host checks).
void launch_adam_step(Dt dtype, const AdamStepLaunch& a, cudaStream_t stream);
/// Launches the update on stream; dtype is Float32 or Float64 (the host checks).
void launch_rmsprop_step(Dt dtype, const RmspropStepLaunch& a, cudaStream_t stream);
/// Launches the update on stream; dtype is Float32 or Float64 (the host checks).
void launch_adagrad_step(Dt dtype, const AdagradStepLaunch& a, cudaStream_t stream);

}  // namespace loom::cuda::kernels
