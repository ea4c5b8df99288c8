// CPU kernels of the fused update ops (float32, float64): one pass over the parameter, its
// gradient and its state, computing PyTorch's single-tensor update element by element in the
// parameter's dtype (Note [Fused update formulas] in loom/optim/ops.h). The loops themselves
// are per-ISA (vec/update_kernels.cpp, chosen by loom::cpu::isa()); this file checks the
// arguments, forms each step's scalars and splits the work between threads.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "loom/optim/meta/steps.h"
#include "vec/update_kernels.h"

namespace loom::optim::cpu {
namespace {

using meta::bump_versions;
using meta::StepArg;
using meta::value_or_undefined;

/// The CPU kernels' device rule for the meta::check_*_step checks: every tensor on the CPU.
auto cpu_device_rule(std::string_view op) {
  return [op](const StepArg& a) {
    LOOM_CHECK_T(DeviceError, a.tensor.device().is_cpu(), op,
                 ": expected all tensors on the cpu (this is the CPU kernel), got ", a.name, " ",
                 a.tensor.describe());
  };
}

/// Calls visit(offset, i) for element i (row-major order) of t, at element offset `offset`.
template <typename F>
void walk_strided(const Tensor& t, F&& visit) {
  const int64_t n = t.numel(), dims = t.dim();
  std::vector<int64_t> index(dims, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    visit(offset, i);
    for (int64_t d = dims - 1; d >= 0; --d) {
      offset += t.stride(d);
      if (++index[d] < t.size(d)) break;
      offset -= t.stride(d) * t.size(d);
      index[d] = 0;
    }
  }
}

/// Runs body(begin, end, p) over ranges covering [0, numel) of N same-shaped tensors, p[k]
/// pointing at element 0 of tensor k (nullptr for an absent one) laid out contiguously: a
/// non-contiguous tensor is staged through a contiguous copy, copied back if written[k]. Large
/// tensors are cut into ranges run in parallel; every element is computed alone, so the result
/// does not depend on the number of threads.
template <typename T, size_t N, typename F>
void for_each_range(const std::array<const Tensor*, N>& ts, const std::array<bool, N>& written,
                    F&& body) {
  const int64_t n = ts[0]->numel();
  if (n == 0) return;
  std::array<T*, N> p{};
  std::array<Tensor, N> staged;
  for (size_t k = 0; k < N; ++k) {
    const Tensor& t = *ts[k];
    if (!t.defined()) continue;
    if (t.is_contiguous()) {
      p[k] = t.template data_ptr<T>();
      continue;
    }
    staged[k] = Tensor::empty(t.sizes(), TensorOptions{}.with(t.dtype()));
    T* dst = staged[k].template data_ptr<T>();
    const T* src = static_cast<const T*>(t.data_ptr());
    walk_strided(t, [&](int64_t offset, int64_t i) { dst[i] = src[offset]; });
    p[k] = dst;
  }
  // One contiguous range per thread (a memory-bound loop streams best that way), and no
  // parallel region at all for a small parameter: entering one costs microseconds even when
  // it runs on one thread, paid per parameter per step.
  constexpr int64_t kGrain = int64_t{1} << 16;
  constexpr int64_t kAlign = 64;  // elements: ranges start on whole cache lines
#ifdef _OPENMP
  if (n >= 2 * kGrain && omp_get_max_threads() > 1) {
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t per = ((n + nt - 1) / nt + kAlign - 1) / kAlign * kAlign;
      const int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
      if (begin < end) body(begin, end, p);
    }
  } else {
    body(0, n, p);
  }
#else
  body(0, n, p);
#endif
  for (size_t k = 0; k < N; ++k) {
    if (!staged[k].defined() || !written[k]) continue;
    T* dst = static_cast<T*>(ts[k]->data_ptr());
    const T* src = staged[k].template data_ptr<T>();
    walk_strided(*ts[k], [&](int64_t offset, int64_t i) { dst[offset] = src[i]; });
  }
}

/// Runs body.template operator()<T>() for param's dtype (float or double).
template <typename F>
void dispatch_floating(DType dtype, F&& body) {
  if (dtype == DType::Float64) {
    body.template operator()<double>();
  } else {
    body.template operator()<float>();
  }
}

/// The per-ISA loops of each update for T (vec/update_kernels.h), for loom::cpu::isa().
template <typename T>
auto sgd_loop() {
  if constexpr (std::is_same_v<T, float>) {
    return LOOM_ISA_CALL(sgd_step_f32);
  } else {
    return LOOM_ISA_CALL(sgd_step_f64);
  }
}
template <typename T>
auto adam_loop() {
  if constexpr (std::is_same_v<T, float>) {
    return LOOM_ISA_CALL(adam_step_f32);
  } else {
    return LOOM_ISA_CALL(adam_step_f64);
  }
}

template <typename T>
auto rmsprop_loop() {
  if constexpr (std::is_same_v<T, float>) {
    return LOOM_ISA_CALL(rmsprop_step_f32);
  } else {
    return LOOM_ISA_CALL(rmsprop_step_f64);
  }
}
template <typename T>
auto adagrad_loop() {
  if constexpr (std::is_same_v<T, float>) {
    return LOOM_ISA_CALL(adagrad_step_f32);
  } else {
    return LOOM_ISA_CALL(adagrad_step_f64);
  }
}

void sgd_step_(Tensor& param, const Tensor& grad, const std::optional<Tensor>& momentum_buffer,
               double lr, double momentum, double dampening, double weight_decay, bool nesterov,
               bool maximize, bool is_first_step) {
  constexpr std::string_view op = "optim::sgd_step_";
  const Tensor buf = value_or_undefined(momentum_buffer);
  meta::check_sgd_step(op, param, grad, buf, momentum, cpu_device_rule(op));
  dispatch_floating(param.dtype(), [&]<typename T>() {
    const loom::cpu::SgdStepArgs<T> args{T(lr),          T(momentum),     T(1 - dampening),
                                         T(weight_decay), maximize ? T(-1) : T(1),
                                         weight_decay != 0, momentum != 0, nesterov,
                                         is_first_step};
    const auto loop = sgd_loop<T>();
    for_each_range<T, 3>({&param, &grad, &buf}, {true, false, true},
                         [&](int64_t begin, int64_t end, const std::array<T*, 3>& p) {
                           T* b = p[2] != nullptr ? p[2] + begin : nullptr;
                           loop(args, p[0] + begin, p[1] + begin, b, end - begin);
                         });
  });
  bump_versions({param, momentum != 0 ? buf : Tensor()});
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr, double beta1,
                double beta2, double eps, double weight_decay, bool amsgrad, bool maximize,
                bool decoupled_weight_decay) {
  constexpr std::string_view op = "optim::adam_step_";
  const Tensor vmax = value_or_undefined(max_exp_avg_sq);
  meta::check_adam_step(op, param, grad, exp_avg, exp_avg_sq, vmax, amsgrad, step,
                        cpu_device_rule(op));
  // Scalars as PyTorch's single-tensor Adam forms them, in double, then in the dtype.
  const meta::AdamScalars sc = meta::adam_scalars(step, lr, beta1, beta2, weight_decay);
  dispatch_floating(param.dtype(), [&]<typename T>() {
    const loom::cpu::AdamStepArgs<T> args{T(sc.step_size),
                                          T(sc.bc2_sqrt),
                                          T(sc.decay),
                                          T(weight_decay),
                                          T(1 - beta1),
                                          T(beta2),
                                          T(1 - beta2),
                                          T(eps),
                                          maximize ? T(-1) : T(1),
                                          decoupled_weight_decay,
                                          weight_decay != 0,
                                          amsgrad};
    const auto loop = adam_loop<T>();
    for_each_range<T, 5>({&param, &grad, &exp_avg, &exp_avg_sq, &vmax},
                         {true, false, true, true, true},
                         [&](int64_t begin, int64_t end, const std::array<T*, 5>& p) {
                           T* vm = p[4] != nullptr ? p[4] + begin : nullptr;
                           loop(args, p[0] + begin, p[1] + begin, p[2] + begin, p[3] + begin, vm,
                                end - begin);
                         });
  });
  bump_versions({param, exp_avg, exp_avg_sq, amsgrad ? vmax : Tensor()});
}

void rmsprop_step_(Tensor& param, const Tensor& grad, Tensor& square_avg,
                   const std::optional<Tensor>& grad_avg,
                   const std::optional<Tensor>& momentum_buffer, double lr, double alpha,
                   double eps, double weight_decay, double momentum, bool centered, bool maximize) {
  constexpr std::string_view op = "optim::rmsprop_step_";
  const Tensor gavg = value_or_undefined(grad_avg), buf = value_or_undefined(momentum_buffer);
  meta::check_rmsprop_step(op, param, grad, square_avg, gavg, buf, centered, momentum,
                           cpu_device_rule(op));
  dispatch_floating(param.dtype(), [&]<typename T>() {
    const loom::cpu::RmspropStepArgs<T> args{T(lr),
                                             T(alpha),
                                             T(1 - alpha),
                                             T(eps),
                                             T(weight_decay),
                                             T(momentum),
                                             maximize ? T(-1) : T(1),
                                             weight_decay != 0,
                                             centered,
                                             momentum > 0};
    const auto loop = rmsprop_loop<T>();
    for_each_range<T, 5>({&param, &grad, &square_avg, &gavg, &buf},
                         {true, false, true, true, true},
                         [&](int64_t begin, int64_t end, const std::array<T*, 5>& p) {
                           T* ga = p[3] != nullptr ? p[3] + begin : nullptr;
                           T* b = p[4] != nullptr ? p[4] + begin : nullptr;
                           loop(args, p[0] + begin, p[1] + begin, p[2] + begin, ga, b,
                                end - begin);
                         });
  });
  bump_versions({param, square_avg, centered ? gavg : Tensor(), momentum > 0 ? buf : Tensor()});
}

void adagrad_step_(Tensor& param, const Tensor& grad, Tensor& state_sum, int64_t step, double lr,
                   double lr_decay, double weight_decay, double eps, bool maximize) {
  constexpr std::string_view op = "optim::adagrad_step_";
  meta::check_adagrad_step(op, param, grad, state_sum, step, cpu_device_rule(op));
  const double clr = meta::adagrad_clr(step, lr, lr_decay);
  dispatch_floating(param.dtype(), [&]<typename T>() {
    const loom::cpu::AdagradStepArgs<T> args{T(clr), T(weight_decay), T(eps),
                                             maximize ? T(-1) : T(1), weight_decay != 0};
    const auto loop = adagrad_loop<T>();
    for_each_range<T, 3>({&param, &grad, &state_sum}, {true, false, true},
                         [&](int64_t begin, int64_t end, const std::array<T*, 3>& p) {
                           loop(args, p[0] + begin, p[1] + begin, p[2] + begin, end - begin);
                         });
  });
  bump_versions({param, state_sum});
}

}  // namespace

LOOM_LIBRARY_IMPL(optim, CPU, m) {
  m.set_provider("reference");
  m.impl("sgd_step_", &sgd_step_);
  m.impl("adam_step_", &adam_step_);
  m.impl("rmsprop_step_", &rmsprop_step_);
  m.impl("adagrad_step_", &adagrad_step_);
}

}  // namespace loom::optim::cpu
