// Derivative formulas of the reduction family (Note [Derivative kernels] in
// loom/autograd/derivative.h), as PyTorch's derivatives.yaml writes them: sums and means,
// products (zeros included), max/min and amax/amin (ties share the gradient), var/std and
// their _mean forms, the norms, logsumexp, cumsum/cumprod and the softmax family.
#include <cmath>

#include "autograd/common.h"
#include "loom/autograd/derivative.h"
#include "loom/autograd/grad_mode.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;
using formulas::as_dtype_of;

// Re-inserts the reduced dims of a keepdim=false reduction so grad broadcasts against self.
// An empty dims list means every dim (PyTorch's dim=None / dim=[]).
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

// Number of elements each output of a reduction over dims (empty: all) combines.
int64_t reduced_count(IntArrayRef sizes, IntArrayRef dims) {
  int64_t n = 1;
  if (dims.empty()) {
    for (int64_t s : sizes) n *= s;
  } else {
    for (int64_t d : dims) n *= sizes.empty() ? 1 : sizes[wrap_dim(d, sizes.size())];
  }
  return n;
}

// Every dim of a tensor of rank n (for reductions that keep the result's rank).
std::vector<int64_t> all_dims(int64_t n) {
  std::vector<int64_t> dims(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d) dims[d] = d;
  return dims;
}

// sum over dims keeping them; a 0-d tensor (nothing to reduce) is returned as is.
Tensor sum_keep(const Tensor& t, IntArrayRef dims) {
  if (t.dim() == 0) return t;
  return dims.empty() ? t.sum(all_dims(t.dim()), true) : t.sum(dims, true);
}

// PyTorch's evenly_distribute_backward / scale_grad_by_count: the gradient of a selecting
// reduction shared equally by the elements equal to the selected value (NaN matches NaN).
Tensor distribute_among_ties(const Tensor& g, const Tensor& self, const Tensor& value,
                             IntArrayRef dims) {
  const Tensor mask =
      as_dtype_of(logical_or(eq(self, value), logical_and(ne(self, self), ne(value, value))), g);
  return mask * (g / sum_keep(mask, dims));
}

// grad of sum(self, dims) read back at self's shape (broadcastable, not expanded).
Tensor restored(const BackwardContext& c, const Tensor& t, IntArrayRef dims, bool keepdim) {
  return unsqueeze_reduced(t, c.input_sizes(0), dims, keepdim);
}

// ---- prod

// prod's gradient without dividing by self: grad * (product of every other element),
// from exclusive cumulative products from both ends along dim (PyTorch's
// prod_safe_zeros_backward). Correct for any number of zeros.
Tensor prod_safe_zeros(const Tensor& g, const Tensor& x, int64_t dim) {
  const int64_t n = x.size(dim);
  if (n <= 1) return g.expand(x.sizes());
  const Tensor one = ones_like(x.narrow(dim, 0, 1));
  const Tensor left = cumprod(cat({one, x.narrow(dim, 0, n - 1)}, dim), dim);
  const Tensor xr = x.flip({dim});
  const Tensor right = cumprod(cat({one, xr.narrow(dim, 0, n - 1)}, dim), dim).flip({dim});
  return g * left * right;
}

bool has_zero(const Tensor& x) { return x.numel() > 0 && eq(x, 0).any().item<bool>(); }

// ---- var / std

// correction of var.correction / std.correction (None is 1, Bessel's correction).
double correction_of(const BackwardContext& c) {
  return c.is_none("correction") ? 1.0 : c.scalar("correction").to_double();
}

// var_backward: 2 / (N - correction) * grad * (self - mean(self)).
Tensor var_backward(const Tensor& g, const Tensor& self, IntArrayRef dims, double correction,
                    bool keepdim) {
  const Tensor gu = unsqueeze_reduced(g, self.sizes(), dims, keepdim);
  const double n = static_cast<double>(reduced_count(self.sizes(), dims));
  const Tensor mean = dims.empty() ? self.mean(all_dims(self.dim()), true) : self.mean(dims, true);
  return gu * (self - mean) * (2.0 / (n - correction));
}

// std_backward: var_backward of grad / (2 std), zero where std is zero.
Tensor std_backward(const Tensor& g, const Tensor& result, const Tensor& self, IntArrayRef dims,
                    double correction, bool keepdim) {
  const Tensor gvar = masked_fill(g / (result * 2.0), eq(result, 0), 0);
  return var_backward(gvar, self, dims, correction, keepdim);
}

// The gradient of mean(self, dims) for grad g.
Tensor mean_backward(const Tensor& g, IntArrayRef sizes, IntArrayRef dims, bool keepdim) {
  const double n = static_cast<double>(reduced_count(sizes, dims));
  return (unsqueeze_reduced(g, sizes, dims, keepdim) / n).expand(sizes);
}

// ---- norms

// PyTorch's norm_backward for the vector p-norm over dims (empty: all).
Tensor norm_backward(const Tensor& grad, const Tensor& self, double p, const Tensor& norm,
                     IntArrayRef dims, bool keepdim) {
  const Tensor x = self.to(grad.dtype());
  if (p == 0) return zeros_like(x);
  const Tensor g = unsqueeze_reduced(grad, self.sizes(), dims, keepdim);
  const Tensor nrm = unsqueeze_reduced(norm, self.sizes(), dims, keepdim);
  if (p == 1) return x.sign() * g;
  if (p == 2) return masked_fill(g * (x / nrm), eq(nrm, 0), 0);
  if (std::isinf(p)) {
    // amax / amin of |x|, the gradient shared among ties (and NaNs).
    const Tensor ax = x.abs();
    const Tensor mask = as_dtype_of(logical_or(eq(ax, nrm), ne(ax, ax)), g);
    return x.sign() * ((g / sum_keep(mask, dims)) * mask);
  }
  if (p < 1) {
    const Tensor part = masked_fill(x.abs().pow(p - 1), eq(x, 0), 0);
    return x.sign() * part * g * nrm.pow(1 - p);
  }
  const Tensor scale = masked_fill(g * nrm.pow(1 - p), eq(nrm, 0), 0);
  if (p < 2) return x.sign() * x.abs().pow(p - 1) * scale;
  return x * x.abs().pow(p - 2) * scale;
}

double order_of(const BackwardContext& c, std::string_view name) {
  return c.is_none(name) ? 2.0 : c.scalar(name).to_double();
}

// ---- scans

Tensor reversed_cumsum(const Tensor& t, int64_t dim) {
  return t.flip({dim}).cumsum(dim).flip({dim});
}

// cumprod's gradient along dim. With no zeros: reversed_cumsum(grad * result) / self.
// Otherwise, before a slice's first zero the same expression holds; at the first zero z
// the derivative of result[j] (j >= z) is the product of the others, which is the cumprod
// of self with that zero replaced by one; past z it is zero.
Tensor cumprod_backward(const Tensor& g, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0) return g;
  if (!has_zero(self)) return reversed_cumsum(g * result, dim) / self;
  const Tensor is_zero = eq(self, 0);
  const Tensor zeros_so_far = is_zero.to(DType::Int64).cumsum(dim);
  const Tensor before = eq(zeros_so_far, 0);
  const Tensor first_zero = logical_and(is_zero, eq(zeros_so_far, 1));
  const Tensor zero = zeros_like(g);
  const Tensor before_part =
      where(before, reversed_cumsum(g * result, dim) / where(before, self, ones_like(self)), zero);
  const Tensor others = cumprod(where(first_zero, ones_like(self), self), dim);
  return before_part + where(first_zero, reversed_cumsum(g * others, dim), zero);
}

// ---- softmax

// Outside create_graph the fused backward kernels; recording a graph, their composite
// form so that second derivatives work.
Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim, DType input_dtype) {
  if (!autograd::GradMode::is_enabled() && g.dtype() == y.dtype()) {
    return _softmax_backward_data(g, y, dim, input_dtype);
  }
  if (y.dim() == 0) return zeros_like(g);  // softmax of one element is constant
  return y * (g - (g * y).sum({wrap_dim(dim, y.dim())}, true));
}

Tensor log_softmax_backward(const Tensor& g, const Tensor& y, int64_t dim, DType input_dtype) {
  if (!autograd::GradMode::is_enabled() && g.dtype() == y.dtype()) {
    return _log_softmax_backward_data(g, y, dim, input_dtype);
  }
  if (y.dim() == 0) return zeros_like(g);
  return g - y.exp() * g.sum({wrap_dim(dim, y.dim())}, true);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;

  // ---- sum, mean
  derivative(m, "sum", {}, [](BackwardContext& c) -> variable_list {
    return {c.grad().expand(c.input_sizes(0))};
  });
  derivative(m, "sum.dim_IntList", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    return {unsqueeze_reduced(c.grad(), sizes, c.ints("dim"), c.flag("keepdim")).expand(sizes)};
  });
  derivative(m, "mean", {}, [](BackwardContext& c) -> variable_list {
    return {mean_backward(c.grad(), c.input_sizes(0), {}, false)};
  });
  derivative(m, "mean.dim", {}, [](BackwardContext& c) -> variable_list {
    return {mean_backward(c.grad(), c.input_sizes(0), c.ints("dim"), c.flag("keepdim"))};
  });

  // ---- prod
  derivative(m, "prod", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    const Tensor g = c.grad();
    const Tensor self = c.saved("self").to(g.dtype());
    if (self.dim() == 0) return {g};
    if (!has_zero(self)) return {g * c.result().to(g.dtype()) / self};
    return {prod_safe_zeros(g.expand({1}), self.reshape({-1}), 0).reshape(self.sizes())};
  });
  derivative(m, "prod.dim_int", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self").to(c.grad().dtype());
    if (self.dim() == 0) return {c.grad()};
    const int64_t dim = wrap_dim(c.integer("dim"), self.dim());
    const bool keepdim = c.flag("keepdim");
    const Tensor g = keepdim ? c.grad() : c.grad().unsqueeze(dim);
    if (!has_zero(self)) {
      const Tensor r = c.result().to(g.dtype());
      return {g * (keepdim ? r : r.unsqueeze(dim)) / self};
    }
    return {prod_safe_zeros(g, self, dim)};
  });

  // ---- max / min / amax / amin (indices of max.dim / min.dim are not differentiable)
  for (const char* op : {"max", "min"}) {
    derivative(m, op, {"self", "result"}, [](BackwardContext& c) -> variable_list {
      return {distribute_among_ties(c.grad(), c.saved("self"), c.result(), {})};
    });
  }
  for (const char* op : {"max.dim", "min.dim"}) {
    derivative(m, op, {"result1"}, [](BackwardContext& c) -> variable_list {
      const IntArrayRef sizes = c.input_sizes(0);
      if (sizes.empty()) return {c.grad()};
      const int64_t dim = wrap_dim(c.integer("dim"), static_cast<int64_t>(sizes.size()));
      Tensor g = c.grad(), idx = c.result(1);
      if (!c.flag("keepdim")) {
        g = g.unsqueeze(dim);
        idx = idx.unsqueeze(dim);
      }
      return {scatter(zeros(sizes, g.dtype()), dim, idx, g)};
    });
  }
  for (const char* op : {"amax", "amin"}) {
    derivative(m, op, {"self", "result"}, [](BackwardContext& c) -> variable_list {
      const IntArrayRef dims = c.ints("dim");
      const bool keepdim = c.flag("keepdim");
      return {distribute_among_ties(restored(c, c.grad(), dims, keepdim), c.saved("self"),
                                    restored(c, c.result(), dims, keepdim), dims)};
    });
  }

  // ---- var / std
  derivative(m, "var", {"self"}, [](BackwardContext& c) -> variable_list {
    return {var_backward(c.grad(), c.saved("self"), {}, c.flag("unbiased") ? 1 : 0, false)};
  });
  derivative(m, "var.dim", {"self"}, [](BackwardContext& c) -> variable_list {
    return {var_backward(c.grad(), c.saved("self"), c.ints("dim"), c.flag("unbiased") ? 1 : 0,
                         c.flag("keepdim"))};
  });
  derivative(m, "var.correction", {"self"}, [](BackwardContext& c) -> variable_list {
    return {var_backward(c.grad(), c.saved("self"), c.ints("dim"), correction_of(c),
                         c.flag("keepdim"))};
  });
  derivative(m, "std", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    return {
        std_backward(c.grad(), c.result(), c.saved("self"), {}, c.flag("unbiased") ? 1 : 0, false)};
  });
  derivative(m, "std.dim", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    return {std_backward(c.grad(), c.result(), c.saved("self"), c.ints("dim"),
                         c.flag("unbiased") ? 1 : 0, c.flag("keepdim"))};
  });
  derivative(m, "std.correction", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    return {std_backward(c.grad(), c.result(), c.saved("self"), c.ints("dim"), correction_of(c),
                         c.flag("keepdim"))};
  });
  derivative(m, "var_mean.correction", {"self"}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef dims = c.ints("dim");
    const bool keepdim = c.flag("keepdim");
    return {var_backward(c.grad(0), c.saved("self"), dims, correction_of(c), keepdim) +
            mean_backward(c.grad(1), c.input_sizes(0), dims, keepdim)};
  });
  derivative(m, "std_mean.correction", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef dims = c.ints("dim");
    const bool keepdim = c.flag("keepdim");
    return {std_backward(c.grad(0), c.result(0), c.saved("self"), dims, correction_of(c), keepdim) +
            mean_backward(c.grad(1), c.input_sizes(0), dims, keepdim)};
  });

  // ---- norms
  derivative(m, "norm.Scalar", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    return {norm_backward(c.grad(), c.saved("self"), order_of(c, "p"), c.result(), {}, false)};
  });
  derivative(
      m, "norm.ScalarOpt_dtype", {"self", "result"}, [](BackwardContext& c) -> variable_list {
        return {norm_backward(c.grad(), c.saved("self"), order_of(c, "p"), c.result(), {}, false)};
      });
  for (const char* op : {"norm.ScalarOpt_dim", "norm.ScalarOpt_dim_dtype"}) {
    derivative(m, op, {"self", "result"}, [](BackwardContext& c) -> variable_list {
      return {norm_backward(c.grad(), c.saved("self"), order_of(c, "p"), c.result(), c.ints("dim"),
                            c.flag("keepdim"))};
    });
  }
  derivative(m, "linalg_vector_norm", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    return {norm_backward(c.grad(), c.saved("self"), order_of(c, "ord"), c.result(), c.ints("dim"),
                          c.flag("keepdim"))};
  });
  derivative(m, "frobenius_norm.dim", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    return {norm_backward(c.grad(), c.saved("self"), 2.0, c.result(), c.ints("dim"),
                          c.flag("keepdim"))};
  });
  derivative(m, "logsumexp", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef dims = c.ints("dim");
    const bool keepdim = c.flag("keepdim");
    return {restored(c, c.grad(), dims, keepdim) *
            (c.saved("self") - restored(c, c.result(), dims, keepdim)).exp()};
  });

  // ---- scans
  derivative(m, "cumsum", {}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    if (g.dim() == 0) return {g};
    return {reversed_cumsum(g, wrap_dim(c.integer("dim"), g.dim()))};
  });
  derivative(m, "cumprod", {"self", "result"}, [](BackwardContext& c) -> variable_list {
    const Tensor g = c.grad();
    const Tensor self = c.saved("self").to(g.dtype());
    const int64_t dim = self.dim() == 0 ? 0 : wrap_dim(c.integer("dim"), self.dim());
    return {cumprod_backward(g, self, c.result().to(g.dtype()), dim)};
  });

  // ---- softmax family
  derivative(m, "softmax.int", {"result"}, [](BackwardContext& c) -> variable_list {
    return {softmax_backward(c.grad(), c.result(), c.integer("dim"), c.input_dtype(0))};
  });
  derivative(m, "_softmax", {"result"}, [](BackwardContext& c) -> variable_list {
    return {softmax_backward(c.grad(), c.result(), c.integer("dim"), c.input_dtype(0))};
  });
  derivative(m, "log_softmax.int", {"result"}, [](BackwardContext& c) -> variable_list {
    return {log_softmax_backward(c.grad(), c.result(), c.integer("dim"), c.input_dtype(0))};
  });
  derivative(m, "_log_softmax", {"result"}, [](BackwardContext& c) -> variable_list {
    return {log_softmax_backward(c.grad(), c.result(), c.integer("dim"), c.input_dtype(0))};
  });
}

}  // namespace loom
