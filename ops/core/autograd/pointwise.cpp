// Derivative formulas of the pointwise family (Note [Derivative kernels] in
// loom/autograd/derivative.h). Gradients are written for the broadcast shape; the engine
// sums them to each input's shape. Each formula matches PyTorch's derivatives.yaml.
#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;

// grad * s unless s is 1.
Tensor scaled(const Tensor& g, const Scalar& s) {
  return s.to<double>() == 1.0 ? g : g * s;
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "add.Tensor", {}, [](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs_grad(1) ? scaled(c.grad(), c.scalar("alpha")) : Tensor()};
  });
  derivative(m, "add.Scalar", {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
  derivative(m, "sub.Tensor", {}, [](BackwardContext& c) -> variable_list {
    return {c.grad(), c.needs_grad(1) ? -scaled(c.grad(), c.scalar("alpha")) : Tensor()};
  });
  derivative(m, "sub.Scalar", {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
  derivative(m, "mul.Tensor", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    return {c.needs_grad(0) ? c.grad() * c.saved("other") : Tensor(),
            c.needs_grad(1) ? c.grad() * c.saved("self") : Tensor()};
  });
  derivative(m, "mul.Scalar", {}, [](BackwardContext& c) -> variable_list {
    return {c.grad() * c.scalar("other")};
  });
  derivative(m, "div.Tensor", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    const Tensor other = c.saved("other");
    return {c.needs_grad(0) ? c.grad() / other : Tensor(),
            c.needs_grad(1) ? -c.grad() * c.saved("self") / (other * other) : Tensor()};
  });
  derivative(m, "div.Scalar", {}, [](BackwardContext& c) -> variable_list {
    return {c.grad() / c.scalar("other")};
  });
  derivative(m, "neg", {}, [](BackwardContext& c) -> variable_list { return {-c.grad()}; });
  derivative(m, "exp", {"result"}, [](BackwardContext& c) -> variable_list {
    return {c.grad() * c.result()};
  });
  derivative(m, "relu", {"result"}, [](BackwardContext& c) -> variable_list {
    return {where(gt(c.result(), 0), c.grad(), zeros_like(c.grad()))};
  });
}

}  // namespace loom
