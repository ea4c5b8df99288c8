// Derivative formulas of the indexing family (Note [Derivative kernels] in
// loom/autograd/derivative.h), as PyTorch's derivatives.yaml and FunctionsManual write them.
// Index and mask arguments are integer or bool and get no gradient; nonzero, argwhere,
// where(condition) and one_hot return integers and need no formula. Each formula also
// serves the op's in-place form (scatter_, index_add_, masked_fill_, index_put_, ...).
#include <optional>
#include <string>
#include <vector>

#include "autograd/common.h"
#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;
using formulas::as_dtype_of;
using Dims = std::vector<int64_t>;

// g (shaped as index) in the leading corner of zeros shaped as sizes: the gradient of a
// scatter's src, which may be larger than its index (only that corner is read). Padded with
// cat rather than copied into zeros, so that it records a graph under create_graph.
Tensor pad_to(Tensor g, IntArrayRef sizes) {
  for (int64_t d = 0; d < g.dim(); ++d) {
    if (g.size(d) == sizes[d]) continue;
    Dims pad(g.sizes().begin(), g.sizes().end());
    pad[d] = sizes[d] - g.size(d);
    g = cat({g, zeros(pad, g.dtype(), g.device())}, d);
  }
  return g;
}

// The leading corner of t shaped as sizes: the part of a scatter's src that its index reads.
Tensor corner(const Tensor& t, IntArrayRef sizes) {
  Tensor r = t;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (r.size(d) != sizes[d]) r = r.narrow(d, 0, sizes[d]);
  }
  return r;
}

std::vector<std::optional<Tensor>> optional_list(const std::vector<Tensor>& ts) {
  std::vector<std::optional<Tensor>> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
  return out;
}

Dims broadcast_sizes(IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  Dims out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// PyTorch's scatter_reduce_backward: grad of (self, src) for scatter_reduce.two.
variable_list scatter_reduce_backward(BackwardContext& c) {
  const Tensor& g = c.grad();
  const int64_t dim = c.integer("dim");
  const Tensor index = c.saved("index");
  const std::string& reduce = c.arg("reduce").to_string();
  const bool include_self = c.flag("include_self");
  const IntArrayRef src_sizes = c.input_sizes("src");
  Tensor grad_self, grad_src;
  if (reduce == "sum") {
    grad_self = g;
    grad_src = g.gather(dim, index);
  } else if (reduce == "mean") {
    // Each output position averaged N values (self's own one included or not).
    Tensor n = include_self ? ones_like(g) : zeros_like(g);
    n = scatter_add(n, dim, index, ones(index.sizes(), g.dtype(), g.device()));
    n = masked_fill(n, eq(n, 0), 1);
    grad_self = g / n;
    grad_src = grad_self.gather(dim, index);
  } else if (reduce == "amax" || reduce == "amin") {
    // The gradient is shared evenly among the values equal to the result.
    const Tensor self = c.saved("self");
    const Tensor src = corner(c.saved("src"), index.sizes());
    const Tensor result = c.result();
    const Tensor value = result.gather(dim, index);
    const Tensor self_is_result = as_dtype_of(eq(self, result), g);
    const Tensor src_is_result = as_dtype_of(eq(src, value), g);
    const Tensor count = scatter_add(self_is_result, dim, index, src_is_result);
    const Tensor shared = g / count;
    grad_self = self_is_result * shared;
    grad_src = src_is_result * shared.gather(dim, index);
  } else if (reduce == "prod") {
    // grad * result / x, with zeros handled: a single zero in a group gets the product of
    // the others, and two or more zeros make every gradient of the group zero.
    const Tensor self = c.saved("self");
    const Tensor src = corner(c.saved("src"), index.sizes());
    const Tensor result = c.result();
    const Tensor masked_self = masked_fill(self, eq(self, 0), 1);
    const Tensor masked_self_result =
        scatter_reduce(masked_self, dim, index, src, reduce, include_self);
    grad_self = g * masked_self_result / masked_self;
    const Tensor src_zero = eq(src, 0);
    const Tensor src_num_zeros =
        scatter_add(zeros_like(g), dim, index, as_dtype_of(src_zero, g)).gather(dim, index);
    const Tensor src_single_zero = logical_and(src_zero, eq(src_num_zeros, 1));
    const Tensor masked_src = masked_fill(src, src_single_zero, 1);
    const Tensor masked_src_result =
        scatter_reduce(self, dim, index, masked_src, reduce, include_self);
    grad_src = where(src_single_zero, (g * masked_src_result).gather(dim, index),
                     (g * result).gather(dim, index) / masked_fill(src, src_zero, 1));
  } else {
    LOOM_THROW(NotImplementedError, "scatter_reduce backward: reduce='", reduce,
               "' is not supported (expected sum, prod, mean, amax or amin)");
  }
  if (!include_self) grad_self = scatter(grad_self, dim, index, Scalar(0.0));
  return {c.needs_grad(0) ? grad_self : Tensor(), Tensor(),
          c.needs_grad(2) ? pad_to(grad_src, src_sizes) : Tensor()};
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;

  // ---- along one dim
  derivative(m, "index_select", {"index"}, [](BackwardContext& c) -> variable_list {
    // PyTorch's index_select_backward, spelled with index_add so that it records a graph
    // itself under create_graph (the index_select_backward op has no derivative).
    const Tensor& g = c.grad();
    const IntArrayRef sizes = c.input_sizes(0);
    if (sizes.empty()) return {index_select_backward(g, sizes, c.integer("dim"), c.saved("index"))};
    return {index_add(zeros(sizes, g.dtype(), g.device()), c.integer("dim"), c.saved("index"), g)};
  });
  derivative(m, "gather", {"index"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {scatter_add(zeros(c.input_sizes(0), g.dtype(), g.device()), c.integer("dim"),
                        c.saved("index"), g)};
  });
  derivative(m, "take", {"index"}, [](BackwardContext& c) -> variable_list {
    // take reads self flattened: the gradient accumulates into the flat positions.
    const Tensor& g = c.grad();
    const IntArrayRef sizes = c.input_sizes(0);
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    Tensor flat = zeros({n}, g.dtype(), g.device());
    return {
        index_put(flat, {c.saved("index").reshape({-1})}, g.reshape({-1}), true).reshape(sizes)};
  });
  // scatter overwrites: self's gradient stops where src lands; src reads grad back.
  derivative(m, "scatter.src", {"index"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    const int64_t dim = c.integer("dim");
    const Tensor index = c.saved("index");
    return {c.needs_grad(0) ? scatter(g, dim, index, Scalar(0.0)) : Tensor(), Tensor(),
            c.needs_grad(2) ? pad_to(g.gather(dim, index), c.input_sizes("src")) : Tensor()};
  });
  derivative(m, "scatter.value", {"index"}, [](BackwardContext& c) -> variable_list {
    return {scatter(c.grad(), c.integer("dim"), c.saved("index"), Scalar(0.0))};
  });
  derivative(m, "scatter_add", {"index"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {g, Tensor(),
            c.needs_grad(2)
                ? pad_to(g.gather(c.integer("dim"), c.saved("index")), c.input_sizes("src"))
                : Tensor()};
  });
  derivative(m, "scatter_reduce.two", {"self", "index", "src", "result"}, scatter_reduce_backward);
  derivative(m, "index_add", {"index"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    Tensor grad_source;
    if (c.needs_grad(2)) {
      grad_source =
          index_select(g, c.integer("dim"), c.saved("index")).reshape(c.input_sizes("source"));
      const Scalar alpha = c.scalar("alpha");
      if (alpha.to<double>() != 1.0) grad_source = grad_source * alpha;
    }
    return {g, Tensor(), grad_source};
  });
  derivative(m, "index_fill.int_Scalar", {"index"}, [](BackwardContext& c) -> variable_list {
    return {index_fill(c.grad(), c.integer("dim"), c.saved("index"), Scalar(0.0))};
  });
  derivative(m, "index_fill.int_Tensor", {"index"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    const Tensor kept = index_fill(g, c.integer("dim"), c.saved("index"), Scalar(0.0));
    // value fills every selected position once (repeated indices included).
    return {c.needs_grad(0) ? kept : Tensor(), Tensor(),
            c.needs_grad(2) ? (g - kept).sum() : Tensor()};
  });

  // ---- masks
  derivative(m, "masked_fill.Scalar", {"mask"}, [](BackwardContext& c) -> variable_list {
    return {masked_fill(c.grad(), c.saved("mask"), Scalar(0.0))};
  });
  derivative(m, "masked_fill.Tensor", {"mask"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    const Tensor kept = masked_fill(g, c.saved("mask"), Scalar(0.0));
    return {c.needs_grad(0) ? kept : Tensor(), Tensor(),
            c.needs_grad(2) ? (g - kept).sum() : Tensor()};
  });
  derivative(m, "masked_select", {"mask"}, [](BackwardContext& c) -> variable_list {
    // Into zeros of the broadcast shape; the engine sums that to self's shape.
    const Tensor& g = c.grad();
    const Dims sizes = broadcast_sizes(c.input_sizes(0), c.input_sizes(1));
    return {masked_scatter(zeros(sizes, g.dtype(), g.device()), c.saved("mask"), g)};
  });
  derivative(m, "masked_scatter", {"mask"}, [](BackwardContext& c) -> variable_list {
    // source's leading elements land in the mask's positions, in order; the rest are unused.
    const Tensor& g = c.grad();
    const Tensor mask = c.saved("mask");
    Tensor grad_source;
    if (c.needs_grad(2)) {
      const IntArrayRef sizes = c.input_sizes("source");
      int64_t n = 1;
      for (int64_t s : sizes) n *= s;
      Tensor used = masked_select(g, mask);
      grad_source = cat({used, zeros({n - used.numel()}, g.dtype(), g.device())}).reshape(sizes);
    }
    return {c.needs_grad(0) ? masked_fill(g, mask, Scalar(0.0)) : Tensor(), Tensor(), grad_source};
  });

  // ---- advanced indexing
  derivative(m, "index.Tensor", {"indices"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {index_put(zeros(c.input_sizes(0), g.dtype(), g.device()),
                      optional_list(c.saved_list("indices")), g, true)};
  });
  derivative(m, "index_put", {"indices"}, [](BackwardContext& c) -> variable_list {
    // Without accumulate the written positions lose self's gradient; values read grad there
    // (the engine sums it to values' shape when values broadcast).
    const Tensor& g = c.grad();
    const auto indices = optional_list(c.saved_list("indices"));
    variable_list grads(c.num_slots());
    if (c.needs_grad(0)) {
      grads[0] =
          c.flag("accumulate") ? g : index_put(g, indices, zeros({}, g.dtype(), g.device()), false);
    }
    const size_t values = c.slot("values");
    if (c.needs_grad(values)) grads[values] = index(g, indices);
    return grads;
  });
}

}  // namespace loom
