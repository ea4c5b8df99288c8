// Derivative formula of native_dropout (Note [Derivative kernels] in
// loom/autograd/derivative.h): the gradient is kept where the mask (output 1) is, scaled as
// the forward scaled, as in PyTorch's derivatives.yaml. dropout, feature_dropout and the
// alpha forms are composites (CompositeImplicitAutograd in cpu/dropout.cpp).
#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  // The kernel treats train=None as training, so the scale is 1 / (1 - p) unless train is
  // false; p = 1 scales by 0, as the forward does.
  autograd::derivative(m, "native_dropout", {"result1"}, [](BackwardContext& c) -> variable_list {
    const bool train = c.is_none("train") || c.flag("train");
    const double p = c.real("p");
    const double scale = !train ? 1.0 : (p == 1.0 ? 0.0 : 1.0 / (1.0 - p));
    return {native_dropout_backward(c.grad(), c.result(1), scale)};
  });
  // Double backward: native_dropout_backward is its own adjoint in grad_output.
  autograd::derivative(
      m, "native_dropout_backward", {"mask"}, [](BackwardContext& c) -> variable_list {
        return {native_dropout_backward(c.grad(), c.saved("mask"), c.real("scale"))};
      });
}

}  // namespace loom
