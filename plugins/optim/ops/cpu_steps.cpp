// CPU kernels of the fused update ops (float32, float64): one pass over the parameter, its
// gradient and its state, computing PyTorch's single-tensor update element by element in the
// parameter's dtype (Note [Fused update formulas] in loom/optim/ops.h).
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"

namespace loom::optim::cpu {
namespace {

/// One tensor argument of an update op: its schema name and the tensor (undefined when an
/// optional argument is absent).
struct StepArg {
  std::string_view name;
  Tensor tensor;
};

/// The checks every update op makes before it touches memory: param and grad given, param
/// float32 or float64, every tensor on the CPU with param's dtype and shape.
void check_step_args(std::string_view op, const std::vector<StepArg>& args) {
  const Tensor& param = args[0].tensor;
  check_defined(op, {{args[0].name, args[0].tensor}, {args[1].name, args[1].tensor}});
  LOOM_CHECK_T(TypeError, param.dtype() == DType::Float32 || param.dtype() == DType::Float64, op,
               ": expected param to be a float32 or float64 tensor, got ", param.describe());
  for (const StepArg& a : args) {
    if (!a.tensor.defined()) continue;
    LOOM_CHECK_T(DeviceError, a.tensor.device().is_cpu(), op,
                 ": expected all tensors on the cpu (this is the CPU kernel), got ", a.name, " ",
                 a.tensor.describe());
    LOOM_CHECK_T(TypeError, a.tensor.dtype() == param.dtype(), op, ": expected ", a.name,
                 " to have param's dtype ", dtype_name(param.dtype()), ", got ", a.name, " ",
                 a.tensor.describe(), " and param ", param.describe());
    LOOM_CHECK(a.tensor.sizes() == param.sizes(), op, ": expected ", a.name,
               " to have param's shape ", sizes_str(param.sizes()), ", got ", a.name, " ",
               a.tensor.describe());
  }
}

/// Calls f(i, ptrs) for every element i of N same-shaped tensors, ptrs[k] pointing at element
/// i of tensor k (nullptr for an absent one). Contiguous tensors take a flat loop; any other
/// layout walks the index with each tensor's strides.
template <typename T, size_t N, typename F>
void for_each_element(const std::array<const Tensor*, N>& ts, F&& f) {
  const Tensor& ref = *ts[0];
  const int64_t n = ref.numel();
  if (n == 0) return;
  std::array<T*, N> base{};
  bool contiguous = true;
  for (size_t k = 0; k < N; ++k) {
    if (ts[k] == nullptr || !ts[k]->defined()) continue;
    base[k] = ts[k]->template data_ptr<T>();
    contiguous = contiguous && ts[k]->is_contiguous();
  }
  std::array<T*, N> p{};
  if (contiguous) {
    for (int64_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < N; ++k) p[k] = base[k] ? base[k] + i : nullptr;
      f(p);
    }
    return;
  }
  const int64_t dims = ref.dim();
  std::vector<int64_t> index(dims, 0);
  std::array<int64_t, N> offset{};
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < N; ++k) p[k] = base[k] ? base[k] + offset[k] : nullptr;
    f(p);
    for (int64_t d = dims - 1; d >= 0; --d) {
      const int64_t size = ref.size(d);
      for (size_t k = 0; k < N; ++k) {
        if (base[k]) offset[k] += ts[k]->stride(d);
      }
      if (++index[d] < size) break;
      for (size_t k = 0; k < N; ++k) {
        if (base[k]) offset[k] -= ts[k]->stride(d) * size;
      }
      index[d] = 0;
    }
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

/// PyTorch's lerp: self + weight * (end - self), computed from the nearer end.
template <typename T>
T lerp(T self, T end, T weight) {
  return std::abs(weight) < T(0.5) ? self + weight * (end - self)
                                   : end - (end - self) * (T(1) - weight);
}

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
  dispatch_floating(param.dtype(), [&]<typename T>() {
    const T t_lr = T(lr), t_mom = T(momentum), t_damp = T(1 - dampening), t_wd = T(weight_decay);
    for_each_element<T, 3>({&param, &grad, &buf}, [&](const std::array<T*, 3>& p) {
      T g = maximize ? -*p[1] : *p[1];
      if (weight_decay != 0) g = g + t_wd * *p[0];
      if (momentum != 0) {
        T& b = *p[2];
        b = is_first_step ? g : t_mom * b + t_damp * g;
        g = nesterov ? g + t_mom * b : b;
      }
      *p[0] = *p[0] - t_lr * g;
    });
  });
  bump({param, momentum != 0 ? buf : Tensor()});
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const std::optional<Tensor>& max_exp_avg_sq, int64_t step, double lr,
                double beta1, double beta2, double eps, double weight_decay, bool amsgrad,
                bool maximize, bool decoupled_weight_decay) {
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
  // Scalars as PyTorch's single-tensor Adam forms them, in double, then in the dtype.
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  dispatch_floating(param.dtype(), [&]<typename T>() {
    const T step_size = T(lr / bias_correction1);
    const T bc2_sqrt = T(std::sqrt(bias_correction2));
    const T decay = T(1 - lr * weight_decay), t_wd = T(weight_decay);
    const T w1 = T(1 - beta1), b2 = T(beta2), w2 = T(1 - beta2), t_eps = T(eps);
    for_each_element<T, 5>({&param, &grad, &exp_avg, &exp_avg_sq, &vmax},
                           [&](const std::array<T*, 5>& p) {
                             T g = maximize ? -*p[1] : *p[1];
                             if (decoupled_weight_decay) {
                               *p[0] = *p[0] * decay;
                             } else if (weight_decay != 0) {
                               g = g + t_wd * *p[0];
                             }
                             T& m = *p[2];
                             T& v = *p[3];
                             m = lerp(m, g, w1);
                             v = b2 * v + w2 * (g * g);
                             T denom;
                             if (amsgrad) {
                               T& vm = *p[4];
                               vm = std::max(vm, v);
                               denom = std::sqrt(vm) / bc2_sqrt + t_eps;
                             } else {
                               denom = std::sqrt(v) / bc2_sqrt + t_eps;
                             }
                             *p[0] = *p[0] - step_size * (m / denom);
                           });
  });
  bump({param, exp_avg, exp_avg_sq, amsgrad ? vmax : Tensor()});
}

void rmsprop_step_(Tensor& param, const Tensor& grad, Tensor& square_avg,
                   const std::optional<Tensor>& grad_avg,
                   const std::optional<Tensor>& momentum_buffer, double lr, double alpha,
                   double eps, double weight_decay, double momentum, bool centered,
                   bool maximize) {
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
  dispatch_floating(param.dtype(), [&]<typename T>() {
    const T t_lr = T(lr), t_alpha = T(alpha), w = T(1 - alpha), t_eps = T(eps);
    const T t_wd = T(weight_decay), t_mom = T(momentum);
    for_each_element<T, 5>({&param, &grad, &square_avg, &gavg, &buf},
                           [&](const std::array<T*, 5>& p) {
                             T g = maximize ? -*p[1] : *p[1];
                             if (weight_decay != 0) g = g + t_wd * *p[0];
                             T& sq = *p[2];
                             sq = t_alpha * sq + w * (g * g);
                             T avg;
                             if (centered) {
                               T& ga = *p[3];
                               ga = lerp(ga, g, w);
                               avg = std::sqrt(sq - ga * ga) + t_eps;
                             } else {
                               avg = std::sqrt(sq) + t_eps;
                             }
                             if (momentum > 0) {
                               T& b = *p[4];
                               b = t_mom * b + g / avg;
                               *p[0] = *p[0] - t_lr * b;
                             } else {
                               *p[0] = *p[0] - t_lr * (g / avg);
                             }
                           });
  });
  bump({param, square_avg, centered ? gavg : Tensor(), momentum > 0 ? buf : Tensor()});
}

void adagrad_step_(Tensor& param, const Tensor& grad, Tensor& state_sum, int64_t step, double lr,
                   double lr_decay, double weight_decay, double eps, bool maximize) {
  constexpr std::string_view op = "optim::adagrad_step_";
  check_step_args(op, {{"param", param}, {"grad", grad}, {"state_sum", state_sum}});
  LOOM_CHECK(state_sum.defined(), op, ": expected state_sum, got an undefined tensor");
  LOOM_CHECK(step >= 1, op, ": expected step >= 1 (the number of this update), got ", step);
  const double clr = lr / (1 + static_cast<double>(step - 1) * lr_decay);
  dispatch_floating(param.dtype(), [&]<typename T>() {
    const T t_clr = T(clr), t_wd = T(weight_decay), t_eps = T(eps);
    for_each_element<T, 3>({&param, &grad, &state_sum}, [&](const std::array<T*, 3>& p) {
      T g = maximize ? -*p[1] : *p[1];
      if (weight_decay != 0) g = g + t_wd * *p[0];
      T& sum = *p[2];
      sum = sum + g * g;
      const T std_dev = std::sqrt(sum) + t_eps;
      *p[0] = *p[0] - t_clr * (g / std_dev);
    });
  });
  bump({param, state_sum});
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
