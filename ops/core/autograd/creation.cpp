// Autograd for the creation family (Note [Derivative kernels] in loom/autograd/derivative.h).
// As in PyTorch, the *_like factories and the random *_like ops only read their input's shape,
// dtype and device: their results never require grad. bernoulli is recorded with a zero
// gradient for self (derivatives.yaml), so its result requires grad when self does. The
// factories without a tensor argument never reach this key with a tensor requiring grad.
#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  for (const char* op : {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like",
                         "randn_like", "randint_like", "randint_like.low_dtype"}) {
    m.impl_kernel(op, std::nullopt, autograd::not_differentiable_kernel());
  }
  for (const char* op : {"bernoulli", "bernoulli.p"}) {
    autograd::derivative(m, op, {}, [](autograd::BackwardContext& c) -> autograd::variable_list {
      return {zeros_like(c.grad())};
    });
  }
}

}  // namespace loom
