// Derivative formulas of the reduction family (Note [Derivative kernels] in
// loom/autograd/derivative.h), as PyTorch's derivatives.yaml writes them.
#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;

// Re-inserts the reduced dims of a keepdim=false reduction so grad broadcasts against self.
Tensor unsqueeze_reduced(Tensor g, IntArrayRef self_sizes, IntArrayRef dims, bool keepdim) {
  const int64_t n = static_cast<int64_t>(self_sizes.size());
  if (keepdim || n == 0) return g;
  std::vector<bool> reduced(n, dims.empty());
  for (int64_t d : dims) reduced[wrap_dim(d, n)] = true;
  for (int64_t d = 0; d < n; ++d) {
    if (reduced[d]) g = g.unsqueeze(d);
  }
  return g;
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "sum", {}, [](BackwardContext& c) -> variable_list {
    return {c.grad().expand(c.input_sizes(0))};
  });
  derivative(m, "sum.dim_IntList", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    return {unsqueeze_reduced(c.grad(), sizes, c.ints("dim"), c.flag("keepdim")).expand(sizes)};
  });
  derivative(m, "mean", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return {(c.grad() / static_cast<double>(n)).expand(sizes)};
  });
  derivative(m, "mean.dim", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    const IntArrayRef dims = c.ints("dim");
    int64_t n = 1;
    if (dims.empty()) {
      for (int64_t s : sizes) n *= s;
    } else {
      for (int64_t d : dims) n *= sizes.empty() ? 1 : sizes[wrap_dim(d, sizes.size())];
    }
    Tensor g = unsqueeze_reduced(c.grad(), sizes, dims, c.flag("keepdim"));
    return {(g / static_cast<double>(n)).expand(sizes)};
  });
}

}  // namespace loom
