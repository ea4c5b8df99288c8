// Derivative formulas of the sorting family (Note [Derivative kernels] in
// loom/autograd/derivative.h), as PyTorch's derivatives.yaml writes them: the values of
// sort and topk send their gradient back to where they came from, through the indices
// output. The indices themselves (and argsort) are integers and never require grad;
// _unique2, unique_dim and unique_consecutive have no derivative in PyTorch either, so
// they keep the fallback's "not implemented" node.
#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;

// PyTorch's value_selecting_reduction_backward: grad scattered into zeros shaped as self.
Tensor scatter_values_back(const Tensor& g, IntArrayRef self_sizes, int64_t dim,
                           const Tensor& indices) {
  if (self_sizes.empty()) return g;  // a 0-d self sorts to itself
  return scatter(zeros(self_sizes, g.dtype(), g.device()), dim, indices, g);
}

variable_list values_back(BackwardContext& c) {
  return {scatter_values_back(c.grad(0), c.input_sizes(0), c.integer("dim"), c.result(1))};
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "sort", {"result1"}, values_back);
  derivative(m, "sort.stable", {"result1"}, values_back);
  derivative(m, "topk", {"result1"}, values_back);
  // msort returns only the values: its backward sorts self again for the indices (the same
  // kernel on the same values gives the same order).
  derivative(m, "msort", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor indices = std::get<1>(sort(c.saved("self"), 0, false));
    return {scatter_values_back(c.grad(), c.input_sizes(0), 0, indices)};
  });
}

}  // namespace loom
