// Derivative formula of embedding (Note [Derivative kernels] in loom/autograd/derivative.h):
// the weight's gradient is embedding_backward, which sums the rows of grad by index (and
// skips padding_idx), as in PyTorch's derivatives.yaml. indices are integers.
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
  autograd::derivative(m, "embedding", {"indices"}, [](BackwardContext& c) -> variable_list {
    return {embedding_backward(c.grad(), c.saved("indices"), c.input_sizes(0)[0],
                               c.integer("padding_idx"), c.flag("scale_grad_by_freq"),
                               c.flag("sparse"))};
  });
}

}  // namespace loom
