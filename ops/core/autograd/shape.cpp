// Derivative formulas of the shape family: views, splits, concatenation and the copying
// shape ops (Note [Derivative kernels] in loom/autograd/derivative.h), as PyTorch's
// derivatives.yaml writes them. The engine marks the results of views (Tensor(a) returns)
// itself; these formulas only say where each gradient element goes.
//
// reshape, flatten.using_ints and reshape_as are not formulas but composites at the Autograd
// key, as in PyTorch (CompositeImplicitAutograd): their result is a view when the strides
// allow and a copy otherwise, and only a real view may be marked as one. They record view,
// or clone then view.
#include <algorithm>
#include <optional>
#include <vector>

#include "loom/autograd/derivative.h"
#include "loom/autograd/grad_mode.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;
using Dims = std::vector<int64_t>;

Dims to_dims(IntArrayRef a) { return Dims(a.begin(), a.end()); }

// The gradient of an expand to g's shape from sizes: g summed over the expanded dims.
Tensor sum_to_size(const Tensor& g, IntArrayRef sizes) {
  const int64_t lead = g.dim() - static_cast<int64_t>(sizes.size());
  Dims dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1 && g.size(lead + static_cast<int64_t>(i)) != 1) {
      dims.push_back(lead + static_cast<int64_t>(i));
    }
  }
  if (dims.empty()) return g;
  Tensor r = sum(g, dims, /*keepdim=*/true);
  return lead > 0 ? r.reshape(sizes) : r;
}

// Zeros shaped as sizes with g added at positions index along dim: the gradient of a view
// that sees part of its input (narrow, slice, select). Functional (index_add rather than a
// copy into a view of zeros), so that it records a graph under create_graph.
Tensor embed_along(const Tensor& g, IntArrayRef sizes, int64_t dim, int64_t start, int64_t end,
                   int64_t step = 1) {
  const Tensor index = arange(start, end, step, DType::Int64, g.device());
  return index_add(zeros(sizes, g.dtype(), g.device()), dim, index, g);
}

std::optional<int64_t> optional_int(BackwardContext& c, std::string_view name) {
  if (c.is_none(name)) return std::nullopt;
  return c.integer(name);
}

// The gradients of the outputs of a split along dim, concatenated back (outputs nobody used
// arrive as zeros).
Tensor cat_grads(BackwardContext& c, size_t n, int64_t dim) {
  std::vector<Tensor> grads;
  grads.reserve(n);
  for (size_t i = 0; i < n; ++i) grads.push_back(c.grad(i));
  return cat(grads, dim);
}

// Number of outputs of split.Tensor for a dim of size n, as its kernel computes them.
size_t split_count(int64_t n, int64_t split_size) {
  if (split_size == 0) return 1;
  return static_cast<size_t>(std::max<int64_t>((n + split_size - 1) / split_size, 1));
}

// The gradient of repeat(self, repeats): each block of the result adds into self.
Tensor repeat_backward(const Tensor& g, IntArrayRef self_sizes, IntArrayRef repeats) {
  const size_t n = repeats.size();
  if (n == 0) return g;
  Dims padded(n - self_sizes.size(), 1);
  padded.insert(padded.end(), self_sizes.begin(), self_sizes.end());
  Dims split_shape, block_dims;
  for (size_t i = 0; i < n; ++i) {
    block_dims.push_back(static_cast<int64_t>(split_shape.size()));
    split_shape.push_back(repeats[i]);
    split_shape.push_back(padded[i]);
  }
  return sum(g.reshape(split_shape), block_dims).reshape(self_sizes);
}

// ---- composites at the Autograd key ----

// PyTorch's reshape: a view when self's strides allow one, else a contiguous copy viewed.
Tensor reshape_autograd(const Tensor& self, IntArrayRef shape) {
  if (self.is_contiguous()) return view(self, shape);
  Tensor probe;
  {
    autograd::NoGradGuard below;
    probe = reshape(self, shape);
  }
  const Tensor source = probe.is_alias_of(self) ? self : clone(self);
  return view(source, probe.sizes());
}

Tensor flatten_autograd(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  const int64_t nd = self.dim();
  if (nd == 0) return reshape(self, {1});
  start_dim = wrap_dim(start_dim, nd);
  end_dim = wrap_dim(end_dim, nd);
  LOOM_CHECK(start_dim <= end_dim,
             "flatten() has invalid args: start_dim cannot come after end_dim");
  if (start_dim == end_dim) return view(self, self.sizes());
  Dims shape(self.sizes().begin(), self.sizes().begin() + start_dim);
  int64_t n = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) n *= self.size(d);
  shape.push_back(n);
  shape.insert(shape.end(), self.sizes().begin() + end_dim + 1, self.sizes().end());
  return reshape(self, shape);
}

Tensor reshape_as_autograd(const Tensor& self, const Tensor& other) {
  return reshape(self, other.sizes());
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;
  using autograd::derivative_inplace_only;
  m.impl("reshape", &reshape_autograd);
  m.impl("flatten.using_ints", &flatten_autograd);
  m.impl("reshape_as", &reshape_as_autograd);

  // Views that keep every element: the gradient is grad in self's shape.
  auto to_input_shape = [](BackwardContext& c) -> variable_list {
    return {c.grad().reshape(c.input_sizes(0))};
  };
  for (const char* op :
       {"view", "unflatten.int", "squeeze", "squeeze.dim", "squeeze.dims", "view_as"}) {
    derivative(m, op, {}, to_input_shape);  // also squeeze_, squeeze_.dim, squeeze_.dims
  }
  derivative(m, "unsqueeze", {}, [](BackwardContext& c) -> variable_list {
    const int64_t nd = static_cast<int64_t>(c.input_sizes(0).size());
    return {c.grad().squeeze(wrap_dim(c.integer("dim"), nd + 1))};
  });
  auto transpose_back = [](std::string_view d0, std::string_view d1) {
    return [d0, d1](BackwardContext& c) -> variable_list {
      return {c.grad().transpose(c.integer(d0), c.integer(d1))};
    };
  };
  derivative(m, "transpose.int", {}, transpose_back("dim0", "dim1"));
  derivative_inplace_only(m, "transpose_", {}, transpose_back("dim0", "dim1"));
  derivative(m, "swapaxes", {}, transpose_back("axis0", "axis1"));
  derivative(m, "swapdims", {}, transpose_back("dim0", "dim1"));
  derivative(m, "t", {}, [](BackwardContext& c) -> variable_list { return {c.grad().t()}; });
  derivative(m, "permute", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef dims = c.ints("dims");
    const int64_t nd = static_cast<int64_t>(dims.size());
    Dims inverse(dims.size());
    for (int64_t i = 0; i < nd; ++i) inverse[wrap_dim(dims[i], nd)] = i;
    return {c.grad().permute(inverse)};
  });
  derivative(m, "movedim.intlist", {}, [](BackwardContext& c) -> variable_list {
    return {movedim(c.grad(), c.ints("destination"), c.ints("source"))};
  });
  derivative(m, "movedim.int", {}, [](BackwardContext& c) -> variable_list {
    return {movedim(c.grad(), c.integer("destination"), c.integer("source"))};
  });
  derivative(m, "expand", {}, [](BackwardContext& c) -> variable_list {
    return {sum_to_size(c.grad(), c.input_sizes(0))};
  });
  derivative(m, "expand_as", {}, [](BackwardContext& c) -> variable_list {
    return {sum_to_size(c.grad(), c.input_sizes(0))};
  });

  // Views that see part of self: zeros elsewhere.
  derivative(m, "narrow", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    const int64_t dim = wrap_dim(c.integer("dim"), static_cast<int64_t>(sizes.size()));
    int64_t start = c.integer("start");
    if (start < 0) start += sizes[dim];
    return {embed_along(c.grad(), sizes, dim, start, start + c.integer("length"))};
  });
  derivative(m, "slice.Tensor", {}, [](BackwardContext& c) -> variable_list {
    // The kernel's Python slice rules: negative bounds count from the end, then clamp.
    const IntArrayRef sizes = c.input_sizes(0);
    const int64_t dim = wrap_dim(c.integer("dim"), static_cast<int64_t>(sizes.size()));
    const int64_t n = sizes[dim];
    int64_t start = optional_int(c, "start").value_or(0);
    int64_t end = optional_int(c, "end").value_or(n);
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, start, n);
    return {embed_along(c.grad(), sizes, dim, start, end, c.integer("step"))};
  });
  derivative(m, "select.int", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    const int64_t dim = wrap_dim(c.integer("dim"), static_cast<int64_t>(sizes.size()));
    int64_t index = c.integer("index");
    if (index < 0) index += sizes[dim];
    return {embed_along(c.grad().unsqueeze(dim), sizes, dim, index, index + 1)};
  });
  // as_strided addresses self's storage: the gradient accumulates into a buffer laid out as
  // self, at the storage positions the view reads (PyTorch's as_strided_backward, for inputs
  // that do not overlap themselves; a view that reads a position twice gets both).
  derivative(m, "as_strided", {"self"}, [](BackwardContext& c) -> variable_list {
    const Tensor self = c.saved("self");
    const Tensor& g = c.grad();
    const IntArrayRef size = c.ints("size");
    const IntArrayRef stride = c.ints("stride");
    const int64_t offset =
        (c.is_none("storage_offset") ? self.storage_offset() : c.integer("storage_offset")) -
        self.storage_offset();
    int64_t span = self.numel() == 0 ? 0 : 1;  // storage elements self reaches
    for (int64_t d = 0; d < self.dim(); ++d) span += (self.size(d) - 1) * self.stride(d);
    // The storage position of each view element, row-major.
    std::vector<int64_t> positions(static_cast<size_t>(g.numel()));
    std::vector<int64_t> idx(size.size(), 0);
    for (int64_t& p : positions) {
      p = offset;
      for (size_t d = 0; d < size.size(); ++d) p += idx[d] * stride[d];
      LOOM_CHECK_T(NotImplementedError, p >= 0 && p < span,
                   "as_strided backward: the view reads storage outside its input ",
                   self.describe(), ", which is not supported");
      for (size_t d = size.size(); d-- > 0;) {
        if (++idx[d] < size[d]) break;
        idx[d] = 0;
      }
    }
    const Tensor index = tensor(positions);
    const Tensor flat = index_put(zeros({span}, g.dtype(), g.device()), {index}, g.reshape({-1}),
                                  /*accumulate=*/true);
    return {as_strided(flat, self.sizes(), self.strides(), 0)};
  });

  // Splits: one gradient per output, concatenated back.
  derivative(m, "split.Tensor", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    const int64_t dim = wrap_dim(c.integer("dim"), static_cast<int64_t>(sizes.size()));
    return {cat_grads(c, split_count(sizes[dim], c.integer("split_size")), dim)};
  });
  for (const char* op : {"split_with_sizes", "split.sizes"}) {
    derivative(m, op, {}, [](BackwardContext& c) -> variable_list {
      const std::string_view name =
          c.op_name() == "aten::split.sizes" ? "split_size" : "split_sizes";
      return {cat_grads(c, c.ints(name).size(), c.integer("dim"))};
    });
  }
  derivative(m, "chunk", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    const int64_t dim = wrap_dim(c.integer("dim"), static_cast<int64_t>(sizes.size()));
    const int64_t chunks = c.integer("chunks");
    const int64_t split_size = (sizes[dim] + chunks - 1) / chunks;
    const size_t n = split_size == 0 && sizes[dim] == 0 ? static_cast<size_t>(chunks)
                                                        : split_count(sizes[dim], split_size);
    return {cat_grads(c, n, dim)};
  });
  derivative(m, "unbind.int", {}, [](BackwardContext& c) -> variable_list {
    const IntArrayRef sizes = c.input_sizes(0);
    const int64_t dim = wrap_dim(c.integer("dim"), static_cast<int64_t>(sizes.size()));
    std::vector<Tensor> grads;
    for (int64_t i = 0; i < sizes[dim]; ++i) grads.push_back(c.grad(static_cast<size_t>(i)));
    if (grads.empty()) return {zeros(sizes, c.input_dtype(0))};
    return {stack(grads, dim)};
  });

  // Concatenation: each input gets its stretch of grad (a legacy [0] input, which cat
  // skips, gets an empty gradient).
  for (const char* op : {"cat", "concat", "concatenate"}) {
    derivative(m, op, {}, [](BackwardContext& c) -> variable_list {
      const Tensor& g = c.grad();
      const int64_t dim = wrap_dim(c.integer("dim"), g.dim());
      variable_list grads(c.num_slots());
      int64_t offset = 0;
      for (size_t i = 0; i < grads.size(); ++i) {
        const IntArrayRef s = c.input_sizes(i);
        if (s.size() == 1 && s[0] == 0 && g.dim() != 1) {
          if (c.needs_grad(i)) grads[i] = zeros(s, g.dtype(), g.device());
          continue;
        }
        if (c.needs_grad(i)) grads[i] = g.narrow(dim, offset, s[dim]);
        offset += s[dim];
      }
      return grads;
    });
  }
  derivative(m, "stack", {}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    const int64_t dim = wrap_dim(c.integer("dim"), g.dim());
    variable_list grads(c.num_slots());
    for (size_t i = 0; i < grads.size(); ++i) {
      if (c.needs_grad(i)) grads[i] = g.select(dim, static_cast<int64_t>(i));
    }
    return grads;
  });

  // Copies.
  derivative(m, "repeat", {}, [](BackwardContext& c) -> variable_list {
    return {repeat_backward(c.grad(), c.input_sizes(0), c.ints("repeats"))};
  });
  derivative(m, "tile", {}, [](BackwardContext& c) -> variable_list {
    // tile pads dims with leading ones to self's rank, then repeats.
    const IntArrayRef sizes = c.input_sizes(0);
    const IntArrayRef dims = c.ints("dims");
    Dims repeats(sizes.size() > dims.size() ? sizes.size() - dims.size() : 0, 1);
    repeats.insert(repeats.end(), dims.begin(), dims.end());
    return {repeat_backward(c.grad(), sizes, repeats)};
  });
  derivative(m, "flip", {},
             [](BackwardContext& c) -> variable_list { return {c.grad().flip(c.ints("dims"))}; });
  derivative(m, "roll", {}, [](BackwardContext& c) -> variable_list {
    Dims shifts = to_dims(c.ints("shifts"));
    for (int64_t& s : shifts) s = -s;
    return {roll(c.grad(), shifts, c.ints("dims"))};
  });
  derivative(m, "tril", {}, [](BackwardContext& c) -> variable_list {  // also tril_
    return {c.grad().tril(c.integer("diagonal"))};
  });
  derivative(m, "triu", {}, [](BackwardContext& c) -> variable_list {  // also triu_
    return {c.grad().triu(c.integer("diagonal"))};
  });
}

}  // namespace loom
