#include "loom/nn/utils.h"

#include <cmath>
#include <limits>

#include "loom/autograd/function.h"
#include "loom/autograd/grad_mode.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn::utils {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  if (grads.empty()) return loom::zeros({});
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) norms.push_back(loom::linalg_vector_norm(g, norm_type));
  const Tensor total = loom::linalg_vector_norm(loom::stack(norms, 0), norm_type);
  const double t = total.item<double>();
  if (error_if_nonfinite && !std::isfinite(t)) {
    LOOM_THROW(ValueError, "The total norm of order ", norm_type,
               " for gradients from `parameters` is non-finite, so it cannot be clipped. To "
               "disable this error and scale the gradients by the non-finite norm anyway, set "
               "`error_if_nonfinite=False`");
  }
  const double coef = std::min(1.0, max_norm / (t + 1e-6));
  // PyTorch multiplies even when coef is 1 (a no-op); skipping keeps the gradients' versions.
  if (coef < 1.0 || std::isnan(coef)) {
    for (const Tensor& g : grads) g.mul_(coef);
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  autograd::NoGradGuard no_grad;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

Tensor checkpoint(const std::shared_ptr<Module>& module, const Tensor& input) {
  LOOM_CHECK(module != nullptr, "checkpoint: module is null");
  std::vector<Module::Slot*> slots = module->parameter_slots();
  autograd::variable_list inputs{input};
  for (Module::Slot* s : slots) inputs.push_back(s->tensor);
  // Captures the module by shared_ptr: the recomputation runs during backward, maybe after
  // the caller's handle is gone.
  auto fn = [module, slots](const autograd::variable_list& in) -> autograd::variable_list {
    std::vector<Tensor> saved;
    for (size_t i = 0; i < slots.size(); ++i) {
      saved.push_back(slots[i]->tensor);
      slots[i]->tensor = in[i + 1];
    }
    auto restore = [&] {
      for (size_t i = 0; i < slots.size(); ++i) slots[i]->tensor = saved[i];
    };
    autograd::variable_list out;
    try {
      out = {(*module)(in[0])};
    } catch (...) {
      restore();
      throw;
    }
    restore();
    return out;
  };
  return autograd::checkpoint(fn, inputs)[0];
}

Tensor parameters_to_vector(const std::vector<Tensor>& params) {
  std::vector<Tensor> flat;
  for (const Tensor& p : params) flat.push_back(p.reshape({-1}));
  return loom::cat(flat, 0);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& params) {
  int64_t total = 0;
  for (const Tensor& p : params) total += p.numel();
  LOOM_CHECK(vec.dim() == 1 && vec.numel() == total, "vector_to_parameters: expected a 1-D ",
             "tensor of ", total, " elements, got ", vec.describe());
  autograd::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : params) {
    p.copy_(vec.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
}

}  // namespace loom::nn::utils
