// CUDA kernels of the optimizers' fused update ops (optim::sgd_step_, adam_step_, rmsprop_step_,
// adagrad_step_): the checks of the CPU kernels (plugins/optim/ops/cpu_steps.cpp), the scalars
// formed as there, then one launch per parameter (optim_steps.cu). Float32 and float64, as on
// the CPU.
//
// Note [CUDA optimizer steps]: the optim:: schemas are defined by libloom_optim, a library a
// program links (like libtorch's optim), not by a plugin, so they exist in a process only if
// that library is loaded. The optimizers call these ops and nothing else, so without CUDA
// kernels for them no optimizer could step a CUDA parameter. Registering kernels for an
// undefined schema is an error that would roll the whole cuda plugin back, so the block below
// registers them only for the schemas that are defined when the plugin loads. Every program
// that trains links libloom_optim and so has them before it loads any plugin (loom train, the
// tests, the benchmarks). The one case left out: libloom_optim opened (dlopen) after the cuda
// plugin; its ops then have no CUDA kernels, and a step on a CUDA parameter fails with the
// dispatcher's "no kernel for CUDA" error, which names the op. (The alternative, optimizers
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
#include "runtime/context.h"

namespace loom::cuda {
namespace {

using kernels::Dt;

/// One tensor argument of an update op: its schema name and the tensor (undefined when an
/// optional argument is absent).
struct StepArg {
  std::string_view name;
  Tensor tensor;
};

/// The CPU kernels' checks (param and grad given, param float32 or float64, every tensor of
/// param's dtype and shape, no written tensor with self-overlapping elements or sharing memory
/// with another argument), with every tensor on param's CUDA device instead of the CPU.
void check_step_args(std::string_view op, const std::vector<StepArg>& args) {
  const Tensor& param = args[0].tensor;
  check_defined(op, {{args[0].name, args[0].tensor}, {args[1].name, args[1].tensor}});
  LOOM_CHECK_T(DeviceError, param.device().type() == device_type(), op,
               ": expected all tensors on a CUDA device (this is the CUDA kernel), got param ",
               param.describe());
  LOOM_CHECK_T(TypeError, param.dtype() == DType::Float32 || param.dtype() == DType::Float64, op,
               ": expected param to be a float32 or float64 tensor, got ", param.describe());
  const int device = device_index(param);
  for (const StepArg& a : args) {
    if (!a.tensor.defined()) continue;
    LOOM_CHECK_T(DeviceError,
                 a.tensor.device().type() == device_type() && device_index(a.tensor) == device, op,
                 ": expected all tensors on param's device cuda:", device, ", got ", a.name, " ",
                 a.tensor.describe());
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

Tensor value_or_undefined(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

void bump(std::initializer_list<Tensor> written) {
  for (const Tensor& t : written) {
    if (t.defined()) t.bump_version();
  }
}

void sgd_step_(Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer,
               double lr, double momentum, double dampening, double weight_decay, bool nesterov,
               bool maximize, bool is_first_step) {
  constexpr std::string_view op = "optim::sgd_step_";
  const Tensor buf = value_or_undefined(momentum_buffer);
  check_step_args(op, {{"param", param}, {"grad", grad}, {"momentum_buffer", buf}});
  LOOM_CHECK(momentum == 0 || buf.defined(), op, ": momentum=", momentum,
             " needs a momentum_buffer, got none");
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
  bump({param, momentum != 0 ? buf : Tensor()});
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1,
                double beta2, double eps, double weight_decay, bool amsgrad, bool maximize,
                bool decoupled_weight_decay) {
  constexpr std::string_view op = "optim::adam_step_";
  const Tensor vmax = value_or_undefined(max_exp_avg_sq);
  check_step_args(op, {{"param", param},
                       {"grad", grad},
                       {"exp_avg", exp_avg},
                       {"exp_avg_sq", exp_avg_sq},
                       {"max_exp_avg_sq", vmax}});
  LOOM_CHECK(exp_avg.defined() && exp_avg_sq.defined(), op,
             ": expected exp_avg and exp_avg_sq, got an undefined tensor");
  LOOM_CHECK(!amsgrad || vmax.defined(), op, ": amsgrad=True needs max_exp_avg_sq, got none");
  LOOM_CHECK(step >= 1, op, ": expected step >= 1 (the number of this update), got ", step);
  // The scalars as the CPU kernel forms them (PyTorch's single-tensor Adam), in double.
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
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
  a.step_size = lr / bias_correction1;
  a.bc2_sqrt = std::sqrt(bias_correction2);
  a.decay = 1 - lr * weight_decay;
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
  bump({param, exp_avg, exp_avg_sq, amsgrad ? vmax : Tensor()});
}

void rmsprop_step_(Tensor& param, const Tensor& grad, Tensor& square_avg,
                   const std::optional<Tensor>& grad_avg,
                   const std::optional<Tensor>& momentum_buffer, double lr, double alpha,
                   double eps, double weight_decay, double momentum, bool centered, bool maximize) {
  constexpr std::string_view op = "optim::rmsprop_step_";
  const Tensor gavg = value_or_undefined(grad_avg), buf = value_or_undefined(momentum_buffer);
  check_step_args(op, {{"param", param},
                       {"grad", grad},
                       {"square_avg", square_avg},
                       {"grad_avg", gavg},
                       {"momentum_buffer", buf}});
  LOOM_CHECK(square_avg.defined(), op, ": expected square_avg, got an undefined tensor");
  LOOM_CHECK(!centered || gavg.defined(), op, ": centered=True needs grad_avg, got none");
  LOOM_CHECK(momentum <= 0 || buf.defined(), op, ": momentum=", momentum,
             " needs a momentum_buffer, got none");
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
  bump({param, square_avg, centered ? gavg : Tensor(), momentum > 0 ? buf : Tensor()});
}

void adagrad_step_(Tensor& param, const Tensor& grad, Tensor& state_sum, int64_t step, double lr,
                   double lr_decay, double weight_decay, double eps, bool maximize) {
  constexpr std::string_view op = "optim::adagrad_step_";
  check_step_args(op, {{"param", param}, {"grad", grad}, {"state_sum", state_sum}});
  LOOM_CHECK(state_sum.defined(), op, ": expected state_sum, got an undefined tensor");
  LOOM_CHECK(step >= 1, op, ": expected step >= 1 (the number of this update), got ", step);
  const DeviceGuard guard(device_index(param));
  const Staged x(param, true), g(grad, false), sum(state_sum, true);
  kernels::AdagradStepLaunch a;
  a.param = x.ptr();
  a.grad = g.ptr();
  a.state_sum = sum.ptr();
  a.numel = param.numel();
  a.clr = lr / (1 + static_cast<double>(step - 1) * lr_decay);
  a.weight_decay = weight_decay;
  a.eps = eps;
  a.maximize = maximize;
  kernels::launch_adagrad_step(dt(param), a, current_stream());
  check_launch(op);
  x.finish();
  sum.finish();
  bump({param, state_sum});
}

}  // namespace

// Only the schemas that are defined: Note [CUDA optimizer steps].
LOOM_LIBRARY_IMPL(optim, CUDA, m) {
  auto defined = [](const char* name) { return Dispatcher::instance().find_op(name).has_value(); };
  if (defined("optim::sgd_step_")) m.impl("sgd_step_", &sgd_step_);
  if (defined("optim::adam_step_")) m.impl("adam_step_", &adam_step_);
  if (defined("optim::rmsprop_step_")) m.impl("rmsprop_step_", &rmsprop_step_);
  if (defined("optim::adagrad_step_")) m.impl("adagrad_step_", &adagrad_step_);
}

}  // namespace loom::cuda
