// Derivative formulas of the normalization family (Note [Derivative kernels] in
// loom/autograd/derivative.h): native_batch_norm, native_layer_norm and native_group_norm
// call their backward ops, as PyTorch's derivatives.yaml does. Only the normalized output
// is differentiated; the saved statistics (outputs 1 and 2) are for the backward op, and
// running_mean / running_var are written, not differentiated. batch_norm, layer_norm and
// group_norm are composites (CompositeImplicitAutograd in cpu/normalization.cpp).
#include <array>
#include <optional>

#include "loom/autograd/derivative.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::BackwardFormula;
using autograd::variable_list;

std::array<bool, 3> mask_of(BackwardContext& c) {
  return {c.needs_grad(0), c.needs_grad(1), c.needs_grad(2)};
}

variable_list tuple_list(std::tuple<Tensor, Tensor, Tensor> t) {
  return {std::get<0>(t), std::get<1>(t), std::get<2>(t)};
}

// native_batch_norm in training: the batch statistics are outputs 1 and 2 (mean, invstd).
// The running stats are not saved: the kernel writes them, which would trip the saved
// tensors' version check.
variable_list batch_norm_train(BackwardContext& c) {
  return tuple_list(native_batch_norm_backward(c.grad(), c.saved("input"), c.saved("weight"),
                                               std::nullopt, std::nullopt, c.result(1),
                                               c.result(2), true, c.real("eps"), mask_of(c)));
}

// native_batch_norm in evaluation: the running stats are the statistics (a missing one is
// what the forward used: mean 0, variance 1).
variable_list batch_norm_eval(BackwardContext& c) {
  const Tensor input = c.saved("input");
  Tensor rm = c.saved("running_mean"), rv = c.saved("running_var");
  const int64_t C = input.size(1);
  if (!rm.defined()) rm = zeros({C}, input.dtype(), input.device());
  if (!rv.defined()) rv = ones({C}, input.dtype(), input.device());
  return tuple_list(native_batch_norm_backward(c.grad(), input, c.saved("weight"), rm, rv,
                                               std::nullopt, std::nullopt, false, c.real("eps"),
                                               mask_of(c)));
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  using autograd::derivative_kernel;
  {
    // One formula per mode, chosen per call: what each saves differs (see above).
    const KernelFunction train =
        derivative_kernel({"input", "weight", "result1", "result2"}, batch_norm_train);
    const KernelFunction eval =
        derivative_kernel({"input", "weight", "running_mean", "running_var"}, batch_norm_eval);
    constexpr size_t kArgs = 8, kTraining = 5;  // native_batch_norm's schema
    m.impl_kernel("native_batch_norm", std::nullopt,
                  KernelFunction::from_boxed([train, eval](const OperatorHandle& op, Stack& s) {
                    const bool training = s[s.size() - kArgs + kTraining].to_bool();
                    (training ? train : eval).call_boxed(op, s);
                  }));
  }
  derivative(m, "native_layer_norm", {"input", "weight", "bias", "result1", "result2"},
             [](BackwardContext& c) -> variable_list {
               return tuple_list(native_layer_norm_backward(
                   c.grad(), c.saved("input"), c.ints("normalized_shape"), c.result(1),
                   c.result(2), c.saved("weight"), c.saved("bias"), mask_of(c)));
             });
  derivative(m, "native_group_norm", {"input", "weight", "result1", "result2"},
             [](BackwardContext& c) -> variable_list {
               return tuple_list(native_group_norm_backward(
                   c.grad(), c.saved("input"), c.result(1), c.result(2), c.saved("weight"),
                   c.integer("N"), c.integer("C"), c.integer("HxW"), c.integer("group"),
                   mask_of(c)));
             });
}

}  // namespace loom
