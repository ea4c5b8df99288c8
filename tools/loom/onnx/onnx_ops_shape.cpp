// ONNX shape, conversion, constant and indexing ops (Note [ONNX op mappings]). Shapes that
// ONNX computes from data (Reshape's 0, Squeeze's all-ones, Expand's broadcast) are worked
// out here and handed to reshape/expand as plain sizes.
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "onnx_ops.h"

namespace loom::onnx {
namespace {

using Outputs = std::vector<Tensor>;

Tensor int64_vector(const std::vector<int64_t>& values) {
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
}

/// The axes of a Squeeze/Unsqueeze node: an attribute before opset 13, an input from 13.
std::optional<std::vector<int64_t>> axes_of(const NodeContext& ctx) {
  if (ctx.opset() < 13) return ctx.attr_ints("axes");
  if (ctx.has_input(1)) return int_values(ctx.input(1));
  return std::nullopt;
}

Outputs reshape_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> shape;
  if (ctx.opset() < 5) {
    shape = ctx.attr_ints("shape").value_or(std::vector<int64_t>{});
  } else {
    shape = int_values(ctx.input(1));
  }
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  // 0 copies the input's size at that position unless allowzero; -1 is inferred by reshape.
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (static_cast<int64_t>(i) >= x.dim()) {
        throw ValueError(str_cat(ctx.where(), ": shape[", i, "] = 0 but the input has rank ",
                                 x.dim()));
      }
      shape[i] = x.size(static_cast<int64_t>(i));
    }
  }
  return one(reshape(x, shape));
}

Outputs transpose_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> perm(static_cast<size_t>(x.dim()));
  std::iota(perm.rbegin(), perm.rend(), 0);  // default: reverse the dims
  if (auto p = ctx.attr_ints("perm")) perm = *p;
  return one(permute(x, perm));
}

Outputs concat_op(const NodeContext& ctx) {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) parts.push_back(ctx.input(i));
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", 0), parts.front().dim());
  return one(cat(parts, axis));
}

Outputs flatten_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0) axis += x.dim();
  if (axis < 0 || axis > x.dim()) {
    throw ValueError(str_cat(ctx.where(), ": axis ", axis, " is out of range for rank ", x.dim()));
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) (d < axis ? outer : inner) *= x.size(d);
  return one(reshape(x, {outer, inner}));
}

Outputs squeeze_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::optional<std::vector<int64_t>> axes = axes_of(ctx);
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  if (axes) {
    for (int64_t a : wrap_axes(ctx, *axes, x.dim())) {
      if (x.size(a) != 1) {
        throw ValueError(str_cat(ctx.where(), ": cannot squeeze axis ", a, " of size ", x.size(a)));
      }
      drop[a] = true;
    }
  } else {
    for (int64_t d = 0; d < x.dim(); ++d) drop[d] = x.size(d) == 1;
  }
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!drop[d]) shape.push_back(x.size(d));
  }
  return one(reshape(x, shape));
}

Outputs unsqueeze_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::optional<std::vector<int64_t>> axes = axes_of(ctx);
  if (!axes) throw ValueError(str_cat(ctx.where(), ": axes are required"));
  const int64_t rank = x.dim() + static_cast<int64_t>(axes->size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : wrap_axes(ctx, *axes, rank)) inserted[a] = true;
  std::vector<int64_t> shape;
  int64_t next = 0;
  for (int64_t d = 0; d < rank; ++d) shape.push_back(inserted[d] ? 1 : x.size(next++));
  return one(reshape(x, shape));
}

Outputs split_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", 0), x.dim());
  const int64_t n = x.size(axis);
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13) {
    sizes = ctx.attr_ints("split").value_or(std::vector<int64_t>{});
  } else if (ctx.has_input(1)) {
    sizes = int_values(ctx.input(1));
  }
  if (sizes.empty()) {
    const int64_t k = ctx.opset() >= 18 ? ctx.attr_int("num_outputs", 0)
                                        : static_cast<int64_t>(ctx.num_outputs());
    if (k <= 0) throw ValueError(str_cat(ctx.where(), ": no split sizes and no outputs"));
    // Equal parts; from opset 18 the last may be smaller.
    const int64_t part = (n + k - 1) / k;
    if (ctx.opset() < 18 && n % k != 0) {
      throw ValueError(str_cat(ctx.where(), ": axis of size ", n, " does not split into ", k));
    }
    for (int64_t i = 0; i < k; ++i) sizes.push_back(std::max<int64_t>(0, std::min(part, n - i * part)));
  }
  Outputs out;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, axis, offset, s));
    offset += s;
  }
  if (offset != n) {
    throw ValueError(str_cat(ctx.where(), ": split sizes sum to ", offset, ", axis has ", n));
  }
  return out;
}

Outputs slice_op(const NodeContext& ctx) {
  Tensor x = ctx.input(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts").value_or(std::vector<int64_t>{});
    ends = ctx.attr_ints("ends").value_or(std::vector<int64_t>{});
    axes = ctx.attr_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = int_values(ctx.input(1));
    ends = int_values(ctx.input(2));
    if (ctx.has_input(3)) axes = int_values(ctx.input(3));
    if (ctx.has_input(4)) steps = int_values(ctx.input(4));
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    throw ValueError(str_cat(ctx.where(), ": starts, ends, axes and steps differ in length"));
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = wrap_axis(ctx, axes[i], x.dim());
    const int64_t n = x.size(axis);
    const int64_t step = steps[i];
    if (step == 0) throw ValueError(str_cat(ctx.where(), ": step 0"));
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, n);
      end = std::clamp<int64_t>(end, 0, n);
      x = slice(x, axis, start, std::max(start, end), step);
    } else {
      // Negative steps walk from start down to (not including) end; the pack's slice only
      // steps forward, so slice the flipped axis, where index i is n - 1 - i.
      if (n == 0) {
        x = slice(x, axis, 0, 0, 1);
        continue;
      }
      start = std::clamp<int64_t>(start, 0, n - 1);
      end = std::clamp<int64_t>(end, -1, n - 1);
      const int64_t fstart = n - 1 - start, fend = n - 1 - end;
      x = slice(flip(x, {axis}), axis, fstart, std::max(fstart, fend), -step);
    }
  }
  return one(x);
}

/// numpy's bidirectional broadcast of two shapes.
std::vector<int64_t> broadcast_shapes(const NodeContext& ctx, std::vector<int64_t> a,
                                      std::vector<int64_t> b) {
  if (a.size() < b.size()) std::swap(a, b);
  b.insert(b.begin(), a.size() - b.size(), 1);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i] || b[i] == 1) continue;
    if (a[i] == 1) {
      a[i] = b[i];
      continue;
    }
    throw ValueError(str_cat(ctx.where(), ": shapes do not broadcast at dim ", i, " (", a[i],
                             " and ", b[i], ")"));
  }
  return a;
}

Outputs expand_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> shape = broadcast_shapes(ctx, shape_of(x), int_values(ctx.input(1)));
  return one(expand(x, shape));
}

Outputs cast_op(const NodeContext& ctx, DType to_dtype) {
  ctx.ignore_attr("saturate");  // float8 targets only, which Loom lacks
  return one(cast_to(ctx.input(0), to_dtype));
}

Outputs shape_op(const NodeContext& ctx) {
  const std::vector<int64_t> dims = shape_of(ctx.input(0));
  const int64_t rank = static_cast<int64_t>(dims.size());
  // start/end (opset 15) are clamped, not checked.
  auto bound = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = bound(ctx.attr_int("start", 0));
  const int64_t end = bound(ctx.attr_int("end", rank));
  return one(int64_vector(std::vector<int64_t>(dims.begin() + start,
                                               dims.begin() + std::max(start, end))));
}

Outputs range_op(const NodeContext& ctx) {
  const Tensor& start = ctx.input(0);
  const Scalar s = scalar_value(start), l = scalar_value(ctx.input(1));
  const Scalar d = scalar_value(ctx.input(2));
  if (d.to<double>() == 0) throw ValueError(str_cat(ctx.where(), ": delta is 0"));
  // ONNX allows an empty range either way; PyTorch refuses a step against the bounds.
  const double count = std::ceil((l.to<double>() - s.to<double>()) / d.to<double>());
  if (count <= 0) return one(Tensor::empty({0}, TensorOptions{}.with(start.dtype())));
  return one(arange(s, l, d, start.dtype()));
}

Outputs constant_of_shape_op(const NodeContext& ctx) {
  const std::vector<int64_t> shape = int_values(ctx.input(0));
  if (const TensorProto* value = ctx.attr_tensor("value")) {
    const Tensor v = to_tensor(*value);
    return one(full(shape, scalar_value(v), v.dtype()));
  }
  return one(zeros(shape, DType::Float32));
}

Outputs constant_op(const NodeContext& ctx) {
  if (const TensorProto* value = ctx.attr_tensor("value")) return one(to_tensor(*value));
  if (ctx.has_attr("value_float")) {
    return one(full({}, static_cast<double>(ctx.attr_float("value_float", 0)), DType::Float32));
  }
  if (ctx.has_attr("value_int")) return one(full({}, ctx.attr_int("value_int", 0), DType::Int64));
  if (auto v = ctx.attr_floats("value_floats")) {
    return one(Tensor::from_vector(*v, {static_cast<int64_t>(v->size())}));
  }
  if (auto v = ctx.attr_ints("value_ints")) return one(int64_vector(*v));
  if (ctx.has_attr("sparse_value")) throw NotSupported(str_cat(ctx.where(), ": sparse_value"));
  if (ctx.has_attr("value_string") || ctx.has_attr("value_strings")) {
    throw NotSupported(str_cat(ctx.where(), ": string constants"));
  }
  throw ValueError(str_cat(ctx.where(), ": no value attribute"));
}

Outputs eye_like_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dim() != 2) throw ValueError(str_cat(ctx.where(), ": input must be 2-D, got ", x.describe()));
  const int64_t k = ctx.attr_int("k", 0);
  const DType dtype = ctx.has_attr("dtype")
                          ? to_dtype_or_skip(static_cast<int32_t>(ctx.attr_int("dtype", 0)),
                                             ctx.where())
                          : x.dtype();
  // Ones where column - row == k.
  const Tensor rows = reshape(arange(x.size(0)), {x.size(0), 1});
  const Tensor cols = reshape(arange(x.size(1)), {1, x.size(1)});
  return one(cast_to(eq(add(rows, k), cols), dtype));
}

Outputs trilu_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t k = ctx.has_input(1) ? scalar_value(ctx.input(1)).to<int64_t>() : 0;
  return one(ctx.attr_int("upper", 1) != 0 ? triu(x, k) : tril(x, k));
}

/// Indices with ONNX's negative values (counting from the end) made non-negative, as int64.
Tensor wrap_indices(const Tensor& indices, int64_t n) {
  const Tensor idx = cast_to(indices, DType::Int64);
  return where(lt(idx, int64_t{0}), add(idx, n), idx);
}

Outputs one_hot_op(const NodeContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const int64_t depth = scalar_value(ctx.input(1)).to<int64_t>();
  const Tensor& values = ctx.input(2);
  const int64_t rank = indices.dim() + 1;
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", -1), rank);
  // Compare each index with 0 .. depth-1 laid along `axis`; indices out of range match none.
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[axis] = depth;
  const Tensor classes = reshape(arange(depth), shape);
  const Tensor hot = eq(unsqueeze(wrap_indices(indices, depth), axis), classes);
  return one(where(hot, select(values, 0, 1), select(values, 0, 0)));
}

Outputs depth_to_space_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.attr_int("blocksize", 0);
  const std::string mode = ctx.attr_string("mode", "DCR");
  if (x.dim() != 4 || b <= 0 || x.size(1) % (b * b) != 0) {
    throw ValueError(str_cat(ctx.where(), ": bad input ", x.describe(), " for blocksize ", b));
  }
  const int64_t n = x.size(0), c = x.size(1) / (b * b), h = x.size(2), w = x.size(3);
  Tensor y;
  if (mode == "DCR") {
    y = permute(reshape(x, {n, b, b, c, h, w}), {0, 3, 4, 1, 5, 2});
  } else if (mode == "CRD") {
    y = permute(reshape(x, {n, c, b, b, h, w}), {0, 1, 4, 2, 5, 3});
  } else {
    throw ValueError(str_cat(ctx.where(), ": unknown mode '", mode, "'"));
  }
  return one(reshape(y, {n, c, h * b, w * b}));
}

Outputs space_to_depth_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (x.dim() != 4 || b <= 0 || x.size(2) % b != 0 || x.size(3) % b != 0) {
    throw ValueError(str_cat(ctx.where(), ": bad input ", x.describe(), " for blocksize ", b));
  }
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2) / b, w = x.size(3) / b;
  const Tensor y = permute(reshape(x, {n, c, h, b, w, b}), {0, 3, 5, 1, 2, 4});
  return one(reshape(y, {n, c * b * b, h, w}));
}

// ---- ops that need the indexing pack (looked up by name) ----

Outputs gather_op(const NodeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", 0), data.dim());
  const Tensor flat = reshape(wrap_indices(indices, data.size(axis)), {-1});
  const Tensor picked = call_optional_tensor_op("aten::index_select", {data, axis, flat});
  // data.shape[:axis] + indices.shape + data.shape[axis+1:]
  std::vector<int64_t> shape(data.sizes().begin(), data.sizes().begin() + axis);
  for (int64_t s : indices.sizes()) shape.push_back(s);
  for (int64_t d = axis + 1; d < data.dim(); ++d) shape.push_back(data.size(d));
  return one(reshape(picked, shape));
}

Outputs gather_elements_op(const NodeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", 0), data.dim());
  const Tensor idx = wrap_indices(ctx.input(1), data.size(axis));
  return one(call_optional_tensor_op("aten::gather", {data, axis, idx}));
}

Outputs scatter_elements_op(const NodeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", 0), data.dim());
  const Tensor idx = wrap_indices(ctx.input(1), data.size(axis));
  const Tensor& updates = ctx.input(2);
  const std::string reduction = ctx.attr_string("reduction", "none");
  if (reduction == "none") {
    return one(call_optional_tensor_op("aten::scatter.src", {data, axis, idx, updates}));
  }
  if (reduction == "add") {
    return one(call_optional_tensor_op("aten::scatter_add", {data, axis, idx, updates}));
  }
  if (reduction == "mul") {
    return one(call_optional_tensor_op("aten::scatter.reduce",
                                       {data, axis, idx, updates, std::string("multiply")}));
  }
  throw NotSupported(str_cat(ctx.where(), ": reduction '", reduction, "'"));
}

Outputs top_k_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = wrap_axis(ctx, ctx.attr_int("axis", -1), x.dim());
  const int64_t k =
      ctx.opset() < 10 ? ctx.attr_int("k", 0) : scalar_value(ctx.input(1)).to<int64_t>();
  const bool largest = ctx.attr_int("largest", 1) != 0;
  const bool sorted = ctx.attr_int("sorted", 1) != 0;
  const Stack r = call_optional_op("aten::topk", {x, k, axis, largest, sorted});
  return {r.at(0).to_tensor(), r.at(1).to_tensor()};
}

Tensor nonzero_of(const Tensor& x) { return call_optional_tensor_op("aten::nonzero", {x}); }

Outputs non_zero_op(const NodeContext& ctx) {
  // PyTorch gives [count, rank]; ONNX wants [rank, count].
  return one(contiguous(t(nonzero_of(ctx.input(0)))));
}

Outputs compress_op(const NodeContext& ctx) {
  Tensor x = ctx.input(0);
  const Tensor& condition = ctx.input(1);
  int64_t axis = 0;
  if (ctx.has_attr("axis")) {
    axis = wrap_axis(ctx, ctx.attr_int("axis", 0), x.dim());
  } else {
    x = reshape(x, {-1});
  }
  // The condition may be shorter than the axis: the rest is dropped.
  const Tensor picked = reshape(nonzero_of(condition), {-1});
  return one(call_optional_tensor_op("aten::index_select", {x, axis, picked}));
}

/// Unique: aten::_unique2 (flattened) or aten::unique_dim gives the sorted values, inverse
/// and counts; each value's first index is the least position whose inverse names it. With
/// sorted=0 the values are reordered by first occurrence, and the inverse remapped.
Outputs unique_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool sorted = ctx.attr_int("sorted", 1) != 0;
  Stack r;
  int64_t dim = 0, n = 0;
  if (ctx.has_attr("axis")) {
    dim = wrap_axis(ctx, ctx.attr_int("axis", 0), x.dim());
    n = x.size(dim);
    r = call_optional_op("aten::unique_dim", {x, dim, true, true, true});
  } else {
    n = x.numel();
    r = call_optional_op("aten::_unique2", {reshape(x, {-1}), true, true, true});
  }
  Tensor values = r.at(0).to_tensor();
  Tensor inverse = reshape(r.at(1).to_tensor(), {-1});
  Tensor counts = r.at(2).to_tensor();
  const int64_t k = counts.numel();
  Tensor first = call_optional_tensor_op(
      "aten::scatter_reduce.two",
      {full({k}, n, DType::Int64), int64_t{0}, inverse, arange(n), std::string("amin"), true});
  if (!sorted) {
    const Tensor order = call_optional_tensor_op("aten::argsort", {first});
    auto pick = [&](const Tensor& t, int64_t d) {
      return call_optional_tensor_op("aten::index_select", {t, d, order});
    };
    values = pick(values, dim);
    first = pick(first, 0);
    counts = pick(counts, 0);
    const Tensor position = call_optional_tensor_op("aten::argsort", {order});
    inverse = call_optional_tensor_op("aten::index_select", {position, int64_t{0}, inverse});
  }
  return {values, first, inverse, counts};
}

/// HannWindow, HammingWindow, BlackmanWindow: sum_k a_k cos(2 pi k n / N') over n < size,
/// N' = size (periodic) or size - 1 (symmetric).
Outputs window_op(const NodeContext& ctx, std::vector<double> coefficients) {
  const int64_t size = scalar_value(ctx.input(0)).to<int64_t>();
  const DType dtype = to_dtype_or_skip(static_cast<int32_t>(ctx.attr_int("output_datatype", 1)),
                                       ctx.where());
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  const double denominator = static_cast<double>(periodic ? size : size - 1);
  const Tensor n = arange(size, DType::Float64);
  Tensor w = full({size}, coefficients[0], DType::Float64);
  for (size_t k = 1; k < coefficients.size(); ++k) {
    const double step = 2.0 * M_PI * static_cast<double>(k) / denominator;
    w = add(w, mul(cos(mul(n, step)), coefficients[k]));
  }
  return one(cast_to(w, dtype));
}

/// Linear indices into the first k dims of `dims` (row-major) from the last axis of indices,
/// negative entries counting from the end: [..., k] -> [...].
Tensor linear_indices(const NodeContext& ctx, const Tensor& indices, IntArrayRef dims) {
  const int64_t k = indices.size(-1);
  if (k > static_cast<int64_t>(dims.size())) {
    throw ValueError(str_cat(ctx.where(), ": indices address ", k, " dims of ", dims.size()));
  }
  const Tensor idx = cast_to(indices, DType::Int64);
  Tensor linear = zeros(std::vector<int64_t>(idx.sizes().begin(), idx.sizes().end() - 1),
                        DType::Int64);
  for (int64_t j = 0; j < k; ++j) {
    linear = add(mul(linear, dims[j]), wrap_indices(select(idx, -1, j), dims[j]));
  }
  return linear;
}

int64_t product(IntArrayRef dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

Outputs gather_nd_op(const NodeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t b = ctx.attr_int("batch_dims", 0);
  const int64_t k = indices.size(-1);
  const IntArrayRef d = data.sizes();
  // Rows of data flattened to [batch * indexed, rest...], addressed by a linear index plus
  // the batch's offset.
  const IntArrayRef indexed(d.begin() + b, d.begin() + b + k);
  Tensor linear = linear_indices(ctx, indices, indexed);
  const int64_t batch = product(IntArrayRef(d.begin(), d.begin() + b));
  if (b > 0) {
    std::vector<int64_t> shape(static_cast<size_t>(linear.dim()), 1);
    for (int64_t i = 0; i < b; ++i) shape[i] = d[i];
    linear = add(linear, mul(reshape(arange(batch), shape), product(indexed)));
  }
  std::vector<int64_t> rows = {batch * product(indexed)};
  rows.insert(rows.end(), d.begin() + b + k, d.end());
  const Tensor picked = call_optional_tensor_op(
      "aten::index_select", {reshape(data, rows), int64_t{0}, reshape(linear, {-1})});
  std::vector<int64_t> shape(indices.sizes().begin(), indices.sizes().end() - 1);
  shape.insert(shape.end(), d.begin() + b + k, d.end());
  return one(reshape(picked, shape));
}

Outputs scatter_nd_op(const NodeContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const std::string reduction = ctx.attr_string("reduction", "none");
  const int64_t k = indices.size(-1);
  const IntArrayRef d = data.sizes();
  // data as [rows, row] and updates as [count, row]: scatter whole rows along dim 0.
  const int64_t row = product(IntArrayRef(d.begin() + k, d.end()));
  const Tensor linear = reshape(linear_indices(ctx, indices, d), {-1, 1});
  const int64_t count = linear.size(0);
  const Tensor index = contiguous(expand(linear, {count, row}));
  const Tensor flat = reshape(data, {product(IntArrayRef(d.begin(), d.begin() + k)), row});
  const Tensor src = reshape(updates, {count, row});
  Tensor out;
  if (reduction == "none") {
    out = call_optional_tensor_op("aten::scatter.src", {flat, int64_t{0}, index, src});
  } else if (reduction == "add") {
    out = call_optional_tensor_op("aten::scatter_add", {flat, int64_t{0}, index, src});
  } else if (reduction == "mul") {
    out = call_optional_tensor_op("aten::scatter.reduce",
                                  {flat, int64_t{0}, index, src, std::string("multiply")});
  } else {
    throw NotSupported(str_cat(ctx.where(), ": reduction '", reduction, "'"));
  }
  return one(reshape(out, shape_of(data)));
}

/// Reverses the first sequence_lens[b] steps of each batch entry b along the time axis.
Outputs reverse_sequence_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> lens = int_values(ctx.input(1));
  const int64_t time = wrap_axis(ctx, ctx.attr_int("time_axis", 0), x.dim());
  const int64_t batch = wrap_axis(ctx, ctx.attr_int("batch_axis", 1), x.dim());
  const int64_t steps = x.size(time), n = x.size(batch);
  if (static_cast<int64_t>(lens.size()) != n) {
    throw ValueError(str_cat(ctx.where(), ": ", lens.size(), " lengths for batch ", n));
  }
  std::vector<int64_t> index(static_cast<size_t>(steps * n));  // [time][batch] or [batch][time]
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < n; ++b) {
      const int64_t src = t < lens[b] ? lens[b] - 1 - t : t;
      index[static_cast<size_t>(time < batch ? t * n + b : b * steps + t)] = src;
    }
  }
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[time] = steps;
  shape[batch] = n;
  const Tensor idx = contiguous(expand(reshape(int64_vector(index), shape), shape_of(x)));
  return one(call_optional_tensor_op("aten::gather", {x, time, idx}));
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t["Reshape"] = reshape_op;
  t["Transpose"] = transpose_op;
  t["Concat"] = concat_op;
  t["Flatten"] = flatten_op;
  t["Squeeze"] = squeeze_op;
  t["Unsqueeze"] = unsqueeze_op;
  t["Split"] = split_op;
  t["Slice"] = slice_op;
  t["Expand"] = expand_op;
  t["Tile"] = [](const NodeContext& c) { return one(repeat(c.input(0), int_values(c.input(1)))); };
  t["Identity"] = [](const NodeContext& c) { return one(c.input(0)); };
  t["Cast"] = [](const NodeContext& c) {
    return cast_op(c, to_dtype_or_skip(static_cast<int32_t>(c.attr_int("to", 0)), c.where()));
  };
  t["CastLike"] = [](const NodeContext& c) { return cast_op(c, c.input(1).dtype()); };
  t["Shape"] = shape_op;
  t["Size"] = [](const NodeContext& c) { return one(full({}, c.input(0).numel(), DType::Int64)); };
  t["Range"] = range_op;
  t["ConstantOfShape"] = constant_of_shape_op;
  t["Constant"] = constant_op;
  t["EyeLike"] = eye_like_op;
  t["Trilu"] = trilu_op;
  t["OneHot"] = one_hot_op;
  t["DepthToSpace"] = depth_to_space_op;
  t["SpaceToDepth"] = space_to_depth_op;
  t["Gather"] = gather_op;
  t["GatherElements"] = gather_elements_op;
  t["ScatterElements"] = scatter_elements_op;
  t["Scatter"] = scatter_elements_op;
  t["TopK"] = top_k_op;
  t["NonZero"] = non_zero_op;
  t["Compress"] = compress_op;
  t["GatherND"] = gather_nd_op;
  t["Unique"] = unique_op;
  t["ScatterND"] = scatter_nd_op;
  t["ReverseSequence"] = reverse_sequence_op;
  t["HannWindow"] = [](const NodeContext& c) { return window_op(c, {0.5, -0.5}); };
  t["HammingWindow"] = [](const NodeContext& c) {
    return window_op(c, {25.0 / 46.0, -21.0 / 46.0});
  };
  t["BlackmanWindow"] = [](const NodeContext& c) { return window_op(c, {0.42, -0.5, 0.08}); };
}

}  // namespace loom::onnx
