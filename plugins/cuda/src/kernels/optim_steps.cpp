// CUDA kernels of the optimizers' fused update ops (optim::sgd_step_, adam_step_, rmsprop_step_,
// adagrad_step_): the checks and scalars the CPU kernels (plugins/optim/ops/cpu_steps.cpp) share
// with them (loom/optim/meta/steps.h), then one launch per parameter (optim_steps.cu). Float32
// and float64, as on the CPU.
//
// Note [CUDA optimizer steps]: the optim:: schemas are defined by the ops_optim plugin. The
// optimizers call these ops and nothing else, so without CUDA kernels for them no optimizer
// could step a CUDA parameter. The kernels are registered whether or not ops_optim is loaded
// yet: a kernel waits for its op's def (Note [Kernels wait for their def] in the dispatcher),
// so the order in which the two plugins load does not matter. (The alternative, optimizers
// built from aten ops on CUDA, would cost 5 to 10 kernel launches and as many temporaries per
// parameter per step, where this costs one launch.)
#include "kernels/optim_steps.cuh"

#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "loom/dispatcher/library.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "loom/optim/meta/steps.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

using kernels::Dt;

using optim::meta::bump_versions;
using optim::meta::StepArg;
using optim::meta::value_or_undefined;

/// The CUDA kernels' device rule for the optim::meta::check_*_step checks (the CPU kernels'
/// own checks): param, checked here first once param and grad are given, on a CUDA device,
/// and every other tensor on param's device.
auto cuda_device_rule(std::string_view op, const Tensor& param, const Tensor& grad) {
  check_defined(op, {{"param", param}, {"grad", grad}});
  LOOM_CHECK_T(DeviceError, param.device().type() == device_type(), op,
               ": expected all tensors on a CUDA device (this is the CUDA kernel), got param ",
               param.describe());
  const int device = device_index(param);
  return [op, device](const StepArg& a) {
    LOOM_CHECK_T(DeviceError,
                 a.tensor.device().type() == device_type() && device_index(a.tensor) == device, op,
                 ": expected all tensors on param's device cuda:", device, ", got ", a.name, " ",
                 a.tensor.describe());
  };
}

/// The kernels take contiguous tensors. Parameters and their state almost always are; one that
/// is not is staged through a contiguous copy, written back after the launch (as the CPU
/// kernel stages it).
class Staged {
 public:
  Staged(const Tensor& t, bool written) : original_(t), written_(written) {
    if (t.defined() && !t.is_contiguous()) work_ = t.contiguous();
  }
  /// The contiguous tensor the kernel reads and writes (undefined for an absent one).
  const Tensor& tensor() const { return work_.defined() ? work_ : original_; }
  /// Its element 0 (nullptr for an absent or empty tensor).
  void* ptr() const { return tensor().defined() ? tensor().data_ptr() : nullptr; }
  /// Copies a staged, written tensor back into the original.
  void finish() const {
    if (written_ && work_.defined()) loom::copy_(original_, work_);
  }

 private:
  Tensor original_, work_;
  bool written_;
};

Dt dt(const Tensor& param) { return param.dtype() == DType::Float64 ? Dt::Float64 : Dt::Float32; }

void sgd_step_(Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer,
               double lr, double momentum, double dampening, double weight_decay, bool nesterov,
               bool maximize, bool is_first_step) {
  constexpr std::string_view op = "optim::sgd_step_";
  const Tensor buf = value_or_undefined(momentum_buffer);
  optim::meta::check_sgd_step(op, param, grad, buf, momentum, cuda_device_rule(op, param, grad));
  const DeviceGuard guard(device_index(param));
  const Staged x(param, true), g(grad, false), b(momentum != 0 ? buf : Tensor(), true);
  kernels::SgdStepLaunch a;
  a.param = x.ptr();
  a.grad = g.ptr();
  a.momentum_buffer = b.ptr();
  a.numel = param.numel();
  a.lr = lr;
  a.momentum = momentum;
  a.dampening = dampening;
  a.weight_decay = weight_decay;
  a.nesterov = nesterov;
  a.maximize = maximize;
  a.is_first_step = is_first_step;
  kernels::launch_sgd_step(dt(param), a, current_stream());
  check_launch(op);
  x.finish();
  b.finish();
  bump_versions({param, momentum != 0 ? buf : Tensor()});
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1,
                double beta2, double eps, double weight_decay, bool amsgrad, bool maximize,
                bool decoupled_weight_decay) {
  constexpr std::string_view op = "optim::adam_step_";
  const Tensor vmax = value_or_undefined(max_exp_avg_sq);
  optim::meta::check_adam_step(op, param, grad, exp_avg, exp_avg_sq, vmax, amsgrad, step,
                               cuda_device_rule(op, param, grad));
  // The scalars as the CPU kernel forms them (PyTorch's single-tensor Adam), in double.
  const optim::meta::AdamScalars sc =
      optim::meta::adam_scalars(step, lr, beta1, beta2, weight_decay);
  const DeviceGuard guard(device_index(param));
  const Staged x(param, true), g(grad, false), m(exp_avg, true), v(exp_avg_sq, true),
      vm(amsgrad ? vmax : Tensor(), true);
  kernels::AdamStepLaunch a;
  a.param = x.ptr();
  a.grad = g.ptr();
  a.exp_avg = m.ptr();
  a.exp_avg_sq = v.ptr();
  a.max_exp_avg_sq = vm.ptr();
  a.numel = param.numel();
  a.step_size = sc.step_size;
  a.bc2_sqrt = sc.bc2_sqrt;
  a.decay = sc.decay;
  a.weight_decay = weight_decay;
  a.beta1 = beta1;
  a.beta2 = beta2;
  a.eps = eps;
  a.amsgrad = amsgrad;
  a.maximize = maximize;
  a.decoupled = decoupled_weight_decay;
  kernels::launch_adam_step(dt(param), a, current_stream());
  check_launch(op);
  for (const Staged* s : {&x, &m, &v, &vm}) s->finish();
  bump_versions({param, exp_avg, exp_avg_sq, amsgrad ? vmax : Tensor()});
}

void rmsprop_step_(Tensor& param, const Tensor& grad, Tensor& square_avg,
                   const std::optional<Tensor>& grad_avg,
                   const std::optional<Tensor>& momentum_buffer, double lr, double alpha,
                   double eps, double weight_decay, double momentum, bool centered, bool maximize) {
  constexpr std::string_view op = "optim::rmsprop_step_";
  const Tensor gavg = value_or_undefined(grad_avg), buf = value_or_undefined(momentum_buffer);
  optim::meta::check_rmsprop_step(op, param, grad, square_avg, gavg, buf, centered, momentum,
                                  cuda_device_rule(op, param, grad));
  const DeviceGuard guard(device_index(param));
  const Staged x(param, true), g(grad, false), sq(square_avg, true),
      ga(centered ? gavg : Tensor(), true), b(momentum > 0 ? buf : Tensor(), true);
  kernels::RmspropStepLaunch a;
  a.param = x.ptr();
  a.grad = g.ptr();
  a.square_avg = sq.ptr();
  a.grad_avg = ga.ptr();
  a.momentum_buffer = b.ptr();
  a.numel = param.numel();
  a.lr = lr;
  a.alpha = alpha;
  a.eps = eps;
  a.weight_decay = weight_decay;
  a.momentum = momentum;
  a.centered = centered;
  a.maximize = maximize;
  kernels::launch_rmsprop_step(dt(param), a, current_stream());
  check_launch(op);
  for (const Staged* s : {&x, &sq, &ga, &b}) s->finish();
  bump_versions({param, square_avg, centered ? gavg : Tensor(), momentum > 0 ? buf : Tensor()});
}

void adagrad_step_(Tensor& param, const Tensor& grad, Tensor& state_sum, int64_t step, double lr,
                   double lr_decay, double weight_decay, double eps, bool maximize) {
  constexpr std::string_view op = "optim::adagrad_step_";
  optim::meta::check_adagrad_step(op, param, grad, state_sum, step,
                                  cuda_device_rule(op, param, grad));
  const DeviceGuard guard(device_index(param));
  const Staged x(param, true), g(grad, false), sum(state_sum, true);
  kernels::AdagradStepLaunch a;
  a.param = x.ptr();
  a.grad = g.ptr();
  a.state_sum = sum.ptr();
  a.numel = param.numel();
  a.clr = optim::meta::adagrad_clr(step, lr, lr_decay);
  a.weight_decay = weight_decay;
  a.eps = eps;
  a.maximize = maximize;
  kernels::launch_adagrad_step(dt(param), a, current_stream());
  check_launch(op);
  x.finish();
  sum.finish();
  bump_versions({param, state_sum});
}

}  // namespace

// Whether or not ops_optim is loaded yet: Note [CUDA optimizer steps].
LOOM_LIBRARY_IMPL(optim, CUDA, m) {
  m.impl("sgd_step_", &sgd_step_);
  m.impl("adam_step_", &adam_step_);
  m.impl("rmsprop_step_", &rmsprop_step_);
  m.impl("adagrad_step_", &adagrad_step_);
}

}  // namespace loom::cuda
