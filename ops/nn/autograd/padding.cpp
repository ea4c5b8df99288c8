// Derivative formulas of the padding family (Note [Derivative kernels] in
// loom/autograd/derivative.h), as PyTorch's derivatives.yaml writes them: constant_pad_nd's
// gradient crops by the negated padding, the reflection and replication ops call their
// backward ops. _pad_circular has a kernel of its own here (PyTorch's is a composite), so
// its formula folds each wrapped element back with index_add. pad (F.pad) is a composite.
// The backward ops are linear in grad_output (and do not read self's values): their own
// gradient is the forward padding of the incoming gradient (double backward).
#include <algorithm>
#include <vector>

#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;

/// The gradient of _pad_circular. Per padded dim, the kernel crops the negative pads first
/// and wraps the positive ones around what is left: output element o reads kept element
/// (o - max(pl, 0)) mod kept, kept elements starting at max(-pl, 0). So each dim sums its
/// gradient back with index_add.
Tensor circular_pad_backward(Tensor g, IntArrayRef self_sizes, IntArrayRef pad) {
  const auto nd = static_cast<int64_t>(self_sizes.size());
  const auto k = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = nd - 1 - i;  // pad[2i], pad[2i + 1] pad dim nd - 1 - i
    const int64_t pl = pad[2 * i], pr = pad[2 * i + 1], size = self_sizes[d];
    if (pl == 0 && pr == 0) continue;
    const int64_t first = std::max<int64_t>(-pl, 0), left = std::max<int64_t>(pl, 0);
    const int64_t kept = size - first - std::max<int64_t>(-pr, 0);
    const int64_t len = g.size(d);
    const Tensor index =
        remainder(arange(Scalar(-left), Scalar(len - left), Scalar(1), DType::Int64, g.device()),
                  Scalar(kept)) +
        Scalar(first);
    std::vector<int64_t> sizes(g.sizes().begin(), g.sizes().end());
    sizes[d] = size;
    g = index_add(zeros(sizes, g.dtype(), g.device()), d, index, g);
  }
  return g;
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "constant_pad_nd", {}, [](BackwardContext& c) -> variable_list {
    std::vector<int64_t> crop(c.ints("pad").begin(), c.ints("pad").end());
    for (int64_t& v : crop) v = -v;
    return {constant_pad_nd(c.grad(), crop, 0)};
  });
  derivative(m, "reflection_pad1d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {reflection_pad1d_backward(c.grad(), c.saved("self"), c.ints("padding"))};
  });
  derivative(m, "reflection_pad2d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {reflection_pad2d_backward(c.grad(), c.saved("self"), c.ints("padding"))};
  });
  derivative(m, "reflection_pad3d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {reflection_pad3d_backward(c.grad(), c.saved("self"), c.ints("padding"))};
  });
  derivative(m, "replication_pad1d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {replication_pad1d_backward(c.grad(), c.saved("self"), c.ints("padding"))};
  });
  derivative(m, "replication_pad2d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {replication_pad2d_backward(c.grad(), c.saved("self"), c.ints("padding"))};
  });
  derivative(m, "replication_pad3d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {replication_pad3d_backward(c.grad(), c.saved("self"), c.ints("padding"))};
  });
  derivative(m, "_pad_circular", {}, [](BackwardContext& c) -> variable_list {
    return {circular_pad_backward(c.grad(), c.input_sizes(0), c.ints("pad"))};
  });

  // ---- double backward ----
  derivative(m, "reflection_pad1d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {reflection_pad1d(c.grad(), c.ints("padding"))};
  });
  derivative(m, "reflection_pad2d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {reflection_pad2d(c.grad(), c.ints("padding"))};
  });
  derivative(m, "reflection_pad3d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {reflection_pad3d(c.grad(), c.ints("padding"))};
  });
  derivative(m, "replication_pad1d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {replication_pad1d(c.grad(), c.ints("padding"))};
  });
  derivative(m, "replication_pad2d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {replication_pad2d(c.grad(), c.ints("padding"))};
  });
  derivative(m, "replication_pad3d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {replication_pad3d(c.grad(), c.ints("padding"))};
  });
}

}  // namespace loom
