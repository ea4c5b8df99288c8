// Derivative formulas of the pooling family (Note [Derivative kernels] in
// loom/autograd/derivative.h), calling the pack's backward ops as PyTorch's derivatives.yaml
// does. The 1-d forms run their kernels as 2-d pooling over [.., 1, L], so their formulas
// call the 2-d backward ops on the same views (a 1 x k window).
//
// The backward ops have formulas too (double backward). Each is linear in grad_output and
// does not depend on self's values, so grad_output's gradient is the forward pooling of the
// incoming gradient (for max pooling: its elements at the indices), and self gets none.
#include <optional>
#include <vector>

#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;

/// A 1-d pooling's parameters as the 2-d ones of a 1 x k window.
struct Lifted {
  std::vector<int64_t> kernel, stride, padding, dilation;
};

Lifted lift(BackwardContext& c, bool has_dilation) {
  const int64_t k = c.ints("kernel_size")[0];
  const IntArrayRef s = c.ints("stride");
  Lifted l;
  l.kernel = {1, k};
  l.stride = {1, s.empty() ? k : s[0]};
  l.padding = {0, c.ints("padding")[0]};
  l.dilation = {1, has_dilation ? c.ints("dilation")[0] : 1};
  return l;
}

/// The elements of g ([.., H, W], self's shape) at the flat plane indices of a max pooling.
Tensor gather_planes(const Tensor& g, const Tensor& indices) {
  return g.flatten(-2, -1).gather(-1, indices.flatten(-2, -1)).view(indices.sizes());
}

std::optional<int64_t> opt_int(BackwardContext& c, std::string_view name) {
  if (c.is_none(name)) return std::nullopt;
  return c.integer(name);
}
}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  derivative(m, "max_pool2d_with_indices", {"self", "result1"},
             [](BackwardContext& c) -> variable_list {
               return {max_pool2d_with_indices_backward(
                   c.grad(), c.saved("self"), c.ints("kernel_size"), c.ints("stride"),
                   c.ints("padding"), c.ints("dilation"), c.flag("ceil_mode"), c.result(1))};
             });
  derivative(m, "max_pool2d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {max_pool2d_backward(c.grad(), c.saved("self"), c.ints("kernel_size"), c.ints("stride"),
                                c.ints("padding"), c.ints("dilation"), c.flag("ceil_mode"))};
  });
  derivative(
      m, "max_pool1d_with_indices", {"self", "result1"}, [](BackwardContext& c) -> variable_list {
        const Lifted l = lift(c, true);
        return {max_pool2d_with_indices_backward(
                    c.grad().unsqueeze(-2), c.saved("self").unsqueeze(-2), l.kernel, l.stride,
                    l.padding, l.dilation, c.flag("ceil_mode"), c.result(1).unsqueeze(-2))
                    .squeeze(-2)};
      });
  derivative(m, "max_pool1d", {"self"}, [](BackwardContext& c) -> variable_list {
    const Lifted l = lift(c, true);
    return {max_pool2d_backward(c.grad().unsqueeze(-2), c.saved("self").unsqueeze(-2), l.kernel,
                                l.stride, l.padding, l.dilation, c.flag("ceil_mode"))
                .squeeze(-2)};
  });
  derivative(m, "avg_pool2d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {avg_pool2d_backward(c.grad(), c.saved("self"), c.ints("kernel_size"), c.ints("stride"),
                                c.ints("padding"), c.flag("ceil_mode"), c.flag("count_include_pad"),
                                opt_int(c, "divisor_override"))};
  });
  derivative(m, "avg_pool1d", {"self"}, [](BackwardContext& c) -> variable_list {
    const Lifted l = lift(c, false);
    return {avg_pool2d_backward(c.grad().unsqueeze(-2), c.saved("self").unsqueeze(-2), l.kernel,
                                l.stride, l.padding, c.flag("ceil_mode"),
                                c.flag("count_include_pad"), std::nullopt)
                .squeeze(-2)};
  });
  for (const char* op : {"adaptive_avg_pool2d", "_adaptive_avg_pool2d"}) {
    derivative(m, op, {"self"}, [](BackwardContext& c) -> variable_list {
      return {_adaptive_avg_pool2d_backward(c.grad(), c.saved("self"))};
    });
  }
  derivative(m, "adaptive_avg_pool1d", {"self"}, [](BackwardContext& c) -> variable_list {
    return {_adaptive_avg_pool2d_backward(c.grad().unsqueeze(-2), c.saved("self").unsqueeze(-2))
                .squeeze(-2)};
  });
  derivative(m, "adaptive_max_pool2d", {"self", "result1"},
             [](BackwardContext& c) -> variable_list {
               return {adaptive_max_pool2d_backward(c.grad(), c.saved("self"), c.result(1))};
             });
  derivative(
      m, "adaptive_max_pool1d", {"self", "result1"}, [](BackwardContext& c) -> variable_list {
        return {adaptive_max_pool2d_backward(c.grad().unsqueeze(-2), c.saved("self").unsqueeze(-2),
                                             c.result(1).unsqueeze(-2))
                    .squeeze(-2)};
      });

  // ---- double backward ----
  derivative(m, "max_pool2d_with_indices_backward", {"indices"},
             [](BackwardContext& c) -> variable_list {
               return {gather_planes(c.grad(), c.saved("indices"))};
             });
  derivative(m, "adaptive_max_pool2d_backward", {"indices"},
             [](BackwardContext& c) -> variable_list {
               return {gather_planes(c.grad(), c.saved("indices"))};
             });
  derivative(m, "max_pool2d_backward", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor indices = std::get<1>(
        max_pool2d_with_indices(c.saved("self"), c.ints("kernel_size"), c.ints("stride"),
                                c.ints("padding"), c.ints("dilation"), c.flag("ceil_mode")));
    return {gather_planes(c.grad(), indices)};
  });
  derivative(m, "avg_pool2d_backward", {}, [](BackwardContext& c) -> variable_list {
    return {avg_pool2d(c.grad(), c.ints("kernel_size"), c.ints("stride"), c.ints("padding"),
                       c.flag("ceil_mode"), c.flag("count_include_pad"),
                       opt_int(c, "divisor_override"))};
  });
  derivative(m, "_adaptive_avg_pool2d_backward", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef go = c.input_sizes(0);
    const int64_t out[2] = {go[go.size() - 2], go[go.size() - 1]};
    return {_adaptive_avg_pool2d(c.grad(), IntArrayRef(out, 2))};
  });
}

}  // namespace loom
