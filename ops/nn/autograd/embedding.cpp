// Derivative formula of embedding (Note [Derivative kernels] in loom/autograd/derivative.h):
// the weight's gradient is embedding_backward, which sums the rows of grad by index (and
// skips padding_idx), as in PyTorch's derivatives.yaml. indices are integers.
// embedding_dense_backward has a formula too (embedding's double backward): it is linear in
// grad_output, whose gradient gathers the rows back, scaled and masked as the sum was.
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
  autograd::derivative(
      m, "embedding_dense_backward", {"indices"}, [](BackwardContext& c) -> variable_list {
        const Tensor g = c.grad();  // [num_weights, D]
        const Tensor idx = c.saved("indices").reshape({-1});
        Tensor out = g.index_select(0, idx);  // [n, D]
        if (c.flag("scale_grad_by_freq")) {
          const Tensor counts = index_add(zeros({c.integer("num_weights")}, g.dtype(), g.device()),
                                          0, idx, ones({idx.numel()}, g.dtype(), g.device()));
          out = out / counts.index_select(0, idx).unsqueeze(1);
        }
        out = out.masked_fill(eq(idx, Scalar(c.integer("padding_idx"))).unsqueeze(1), 0);
        return {out.reshape(c.input_sizes(0))};
      });
}

}  // namespace loom
