// ONNX convolution, pooling, padding, resizing and dropout (Note [ONNX op mappings]).
// Convolutions and pools call ops_nn's PyTorch-schema ops by name (aten::convolution,
// aten::max_pool2d_with_indices, ...); ONNX's asymmetric pads and auto_pad become an explicit
// pad of the input first. Pad and Resize compose core ops when no nn op fits.
#include <cmath>
#include <limits>
#include <numeric>

#include "loom/core/str_cat.h"
#include "loom/ops/core.h"
#include "onnx_ops.h"

namespace loom::onnx {
namespace {

using Outputs = std::vector<Tensor>;

/// x padded along dim with `before` and `after` copies of value (negative counts crop).
Tensor pad_dim(const Tensor& x, int64_t dim, int64_t before, int64_t after, const Scalar& value) {
  Tensor y = x;
  if (before < 0) y = narrow(y, dim, -before, y.size(dim) + before);
  if (after < 0) y = narrow(y, dim, 0, y.size(dim) + after);
  if (before <= 0 && after <= 0) return y;
  std::vector<Tensor> parts;
  std::vector<int64_t> shape = shape_of(y);
  if (before > 0) {
    shape[dim] = before;
    parts.push_back(full(shape, value, y.dtype()));
  }
  parts.push_back(y);
  if (after > 0) {
    shape[dim] = after;
    parts.push_back(full(shape, value, y.dtype()));
  }
  return cat(parts, dim);
}

/// Constant padding of the trailing dims: begins[i], ends[i] pad dim (rank - n + i).
Tensor pad_constant(const Tensor& x, const std::vector<int64_t>& begins,
                    const std::vector<int64_t>& ends, const Scalar& value) {
  Tensor y = x;
  const int64_t first = x.dim() - static_cast<int64_t>(begins.size());
  for (size_t i = 0; i < begins.size(); ++i) {
    y = pad_dim(y, first + static_cast<int64_t>(i), begins[i], ends[i], value);
  }
  return y;
}

/// The lowest value of x's dtype (the neutral element of max pooling).
Scalar lowest_of(DType dtype) {
  if (is_floating_point(dtype)) return Scalar(-std::numeric_limits<double>::infinity());
  switch (dtype) {
    case DType::UInt8:
    case DType::Bool: return Scalar(int64_t{0});
    case DType::Int8: return Scalar(int64_t{std::numeric_limits<int8_t>::min()});
    case DType::Int16: return Scalar(int64_t{std::numeric_limits<int16_t>::min()});
    case DType::Int32: return Scalar(int64_t{std::numeric_limits<int32_t>::min()});
    default: return Scalar(std::numeric_limits<int64_t>::min());
  }
}

/// The sliding-window geometry of Conv and the pools, per spatial dim, with auto_pad
/// resolved into explicit begin/end pads.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
  /// True if PyTorch's symmetric `padding` argument can express the pads.
  bool symmetric() const { return begin == end; }
};

Window window_of(const NodeContext& ctx, const Tensor& x, std::vector<int64_t> kernel) {
  const size_t sp = static_cast<size_t>(x.dim() - 2);
  Window w;
  w.kernel = ctx.attr_ints("kernel_shape").value_or(kernel);
  w.strides = ctx.attr_ints("strides").value_or(std::vector<int64_t>(sp, 1));
  w.dilations = ctx.attr_ints("dilations").value_or(std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> pads = ctx.attr_ints("pads").value_or(std::vector<int64_t>(2 * sp, 0));
  if (w.kernel.size() != sp || w.strides.size() != sp || w.dilations.size() != sp ||
      pads.size() != 2 * sp) {
    throw ValueError(str_cat(ctx.where(), ": kernel_shape, strides, dilations or pads do not "
                             "match the ", sp, " spatial dims of ", x.describe()));
  }
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < sp; ++i) {
    if (auto_pad == "NOTSET") {
      w.begin.push_back(pads[i]);
      w.end.push_back(pads[sp + i]);
    } else if (auto_pad == "VALID") {
      w.begin.push_back(0);
      w.end.push_back(0);
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Output ceil(in / stride); the odd pad goes at the end (UPPER) or the start (LOWER).
      const int64_t in = x.size(static_cast<int64_t>(2 + i));
      const int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in);
      const int64_t small = total / 2;
      w.begin.push_back(auto_pad == "SAME_UPPER" ? small : total - small);
      w.end.push_back(total - w.begin.back());
    } else {
      throw ValueError(str_cat(ctx.where(), ": unknown auto_pad '", auto_pad, "'"));
    }
  }
  return w;
}

std::vector<int64_t> spatial_kernel(const Tensor& weight) {
  return std::vector<int64_t>(weight.sizes().begin() + 2, weight.sizes().end());
}

/// ONNX's Conv of x by weight (plus bias), its pads resolved.
Tensor convolve(const NodeContext& ctx, Tensor x, const Tensor& weight, const Tensor& bias) {
  if (x.dim() < 3) throw ValueError(str_cat(ctx.where(), ": input ", x.describe()));
  const Window w = window_of(ctx, x, spatial_kernel(weight));
  const int64_t group = ctx.attr_int("group", 1);
  std::vector<int64_t> padding = w.begin;
  if (!w.symmetric()) {
    x = pad_constant(x, w.begin, w.end, Scalar(0.0));
    padding.assign(padding.size(), 0);
  }
  const std::vector<int64_t> zeros_list(padding.size(), 0);
  return call_optional_tensor_op(
      "aten::convolution", {x, weight, bias.defined() ? IValue(bias) : IValue(), w.strides,
                            padding, w.dilations, false, zeros_list, group});
}

Outputs conv_op(const NodeContext& ctx) {
  return one(convolve(ctx, ctx.input(0), ctx.input(1), ctx.optional_input(2)));
}

/// x - zero_point in float64, a per-channel zero point viewed along dim 0 (of the weight).
Tensor minus_zero_point(const Tensor& x, const Tensor& zero_point) {
  const Tensor v = cast_to(x, DType::Float64);
  if (!zero_point.defined()) return v;
  Tensor zp = cast_to(zero_point, DType::Float64);
  if (zp.numel() > 1) {
    std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
    shape[0] = zp.numel();
    zp = reshape(zp, shape);
  }
  return sub(v, zp);
}

/// ConvInteger: (x - x_zero_point) conv (w - w_zero_point) in int32, computed in float64
/// (exact for 8-bit operands).
Outputs conv_integer_op(const NodeContext& ctx) {
  const Tensor x = minus_zero_point(ctx.input(0), ctx.optional_input(2));
  const Tensor w = minus_zero_point(ctx.input(1), ctx.optional_input(3));
  return one(cast_to(convolve(ctx, x, w, Tensor()), DType::Int32));
}

/// QLinearConv: dequantize x and w, convolve (an int32 bias is in x_scale * w_scale units),
/// quantize with y's scale and zero point.
Outputs qlinear_conv_op(const NodeContext& ctx) {
  auto scale_along0 = [&](size_t i, int64_t rank) {
    Tensor s = cast_to(ctx.input(i), DType::Float64);
    if (s.numel() > 1) {
      std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
      shape[0] = s.numel();
      s = reshape(s, shape);
    }
    return s;
  };
  const Tensor& xq = ctx.input(0);
  const Tensor& wq = ctx.input(3);
  const Tensor x = mul(minus_zero_point(xq, ctx.input(2)), cast_to(ctx.input(1), DType::Float64));
  const Tensor w = mul(minus_zero_point(wq, ctx.input(5)), scale_along0(4, wq.dim()));
  Tensor bias;
  if (ctx.has_input(8)) {
    const Tensor bias_scale = mul(cast_to(ctx.input(1), DType::Float64),
                                  reshape(cast_to(ctx.input(4), DType::Float64), {-1}));
    bias = mul(cast_to(ctx.input(8), DType::Float64), bias_scale);
  }
  const Tensor y = convolve(ctx, x, w, bias);
  const Tensor& y_zp = ctx.input(7);
  const double lo = y_zp.dtype() == DType::Int8 ? -128.0 : 0.0;
  const double hi = y_zp.dtype() == DType::Int8 ? 127.0 : 255.0;
  if (y_zp.dtype() != DType::Int8 && y_zp.dtype() != DType::UInt8) {
    throw NotSupported(str_cat(ctx.where(), ": quantized type ", dtype_name(y_zp.dtype())));
  }
  const Tensor q = add(round(div(y, cast_to(ctx.input(6), DType::Float64))),
                       cast_to(y_zp, DType::Float64));
  return one(cast_to(clamp(q, Scalar(lo), Scalar(hi)), y_zp.dtype()));
}

/// y[start : start + length] along dim, where the range may reach past either end of y:
/// there it is zero (positions a transposed convolution gives no contribution to).
Tensor zero_extended_window(const Tensor& y, int64_t dim, int64_t start, int64_t length) {
  const int64_t before = std::max<int64_t>(0, -start);
  const int64_t after = std::max<int64_t>(0, start + length - y.size(dim));
  const Tensor padded = pad_dim(y, dim, before, after, Scalar(0.0));
  return narrow(padded, dim, start + before, length);
}

Outputs conv_transpose_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& weight = ctx.input(1);
  const Tensor bias = ctx.optional_input(2);
  if (x.dim() < 3) throw ValueError(str_cat(ctx.where(), ": input ", x.describe()));
  const size_t sp = static_cast<size_t>(x.dim() - 2);
  const std::vector<int64_t> kernel =
      ctx.attr_ints("kernel_shape").value_or(spatial_kernel(weight));
  const std::vector<int64_t> strides = ctx.attr_ints("strides").value_or(std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> dilations =
      ctx.attr_ints("dilations").value_or(std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> output_padding =
      ctx.attr_ints("output_padding").value_or(std::vector<int64_t>(sp, 0));
  std::vector<int64_t> pads = ctx.attr_ints("pads").value_or(std::vector<int64_t>(2 * sp, 0));
  std::optional<std::vector<int64_t>> output_shape = ctx.attr_ints("output_shape");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  const int64_t group = ctx.attr_int("group", 1);
  if (kernel.size() != sp || strides.size() != sp || dilations.size() != sp ||
      output_padding.size() != sp || pads.size() != 2 * sp) {
    throw ValueError(str_cat(ctx.where(), ": attributes do not match the ", sp,
                             " spatial dims of ", x.describe()));
  }
  // The full transposed convolution is s * (in - 1) + (k - 1) * d + 1 long; ONNX's output is
  // a window of it from pads[start], of length full + output_padding - pads[start] - pads[end].
  std::vector<int64_t> full_size(sp);
  for (size_t i = 0; i < sp; ++i) {
    full_size[i] = strides[i] * (x.size(static_cast<int64_t>(2 + i)) - 1) +
                   (kernel[i] - 1) * dilations[i] + 1;
  }
  if (!output_shape && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
    output_shape.emplace();
    for (size_t i = 0; i < sp; ++i) output_shape->push_back(x.size(2 + i) * strides[i]);
  } else if (auto_pad == "VALID") {
    pads.assign(2 * sp, 0);
  }
  if (output_shape) {
    // Pads follow from the output shape (floor division, as ONNX's reference computes it).
    if (output_shape->size() > sp) output_shape->erase(output_shape->begin(), output_shape->end() - sp);
    if (output_shape->size() != sp) {
      throw ValueError(str_cat(ctx.where(), ": output_shape has ", output_shape->size(), " dims"));
    }
    for (size_t i = 0; i < sp; ++i) {
      const int64_t total = full_size[i] + output_padding[i] - (*output_shape)[i];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pads[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[sp + i] = total - pads[i];
    }
  }
  const std::vector<int64_t> zeros_list(sp, 0);
  Tensor y = call_optional_tensor_op("aten::convolution",
                                     {x, weight, IValue(), strides, zeros_list, dilations, true,
                                      zeros_list, group});
  for (size_t i = 0; i < sp; ++i) {
    const int64_t length = full_size[i] + output_padding[i] - pads[i] - pads[sp + i];
    y = zero_extended_window(y, static_cast<int64_t>(2 + i), pads[i], length);
  }
  if (bias.defined()) {
    std::vector<int64_t> shape(static_cast<size_t>(y.dim()), 1);
    shape[1] = bias.numel();
    y = add(y, reshape(bias, shape));
  }
  return one(y);
}

/// Runs a pooling op for 1-, 2- or 3-D windows: 1-D becomes 2-D with a unit height.
struct PoolGeometry {
  Tensor x;
  Window w;
  bool lifted = false;  ///< 1-D lifted to 2-D
};

PoolGeometry pool_geometry(const NodeContext& ctx) {
  PoolGeometry g;
  g.x = ctx.input(0);
  if (g.x.dim() < 3 || g.x.dim() > 5) {
    throw NotSupported(str_cat(ctx.where(), ": ", g.x.dim() - 2, "-D pooling"));
  }
  g.w = window_of(ctx, g.x, {});
  if (g.x.dim() == 3) {
    g.lifted = true;
    g.x = unsqueeze(g.x, 2);
    for (auto* v : {&g.w.kernel, &g.w.strides, &g.w.dilations}) v->insert(v->begin(), 1);
    g.w.begin.insert(g.w.begin.begin(), 0);
    g.w.end.insert(g.w.end.begin(), 0);
  }
  return g;
}

/// PyTorch's pools take symmetric pads of at most half the kernel.
bool torch_can_pad(const Window& w) {
  if (!w.symmetric()) return false;
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    if (w.begin[i] > w.kernel[i] / 2) return false;
  }
  return true;
}

Outputs max_pool_op(const NodeContext& ctx) {
  PoolGeometry g = pool_geometry(ctx);
  const bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  const int64_t storage_order = ctx.attr_int("storage_order", 0);
  std::vector<int64_t> padding = g.w.begin;
  const bool prepadded = !torch_can_pad(g.w);
  if (prepadded) {
    if (ctx.wants_output(1)) {
      throw NotSupported(str_cat(ctx.where(), ": Indices with asymmetric or wide pads"));
    }
    g.x = pad_constant(g.x, g.w.begin, g.w.end, lowest_of(g.x.dtype()));
    padding.assign(padding.size(), 0);
  }
  const char* op = g.x.dim() == 5 ? "aten::max_pool3d_with_indices"
                                  : "aten::max_pool2d_with_indices";
  const Stack r = call_optional_op(op, {g.x, g.w.kernel, g.w.strides, padding, g.w.dilations,
                                        ceil_mode});
  Tensor y = r.at(0).to_tensor();
  Tensor indices;
  if (ctx.wants_output(1)) {
    // PyTorch numbers elements within one (n, c) plane; ONNX over the whole tensor, row-major
    // (storage_order 0) or with the last two spatial dims swapped (1).
    indices = r.at(1).to_tensor();
    const Tensor& x = g.x;
    int64_t plane = 1;
    for (int64_t d = 2; d < x.dim(); ++d) plane *= x.size(d);
    if (storage_order == 1) {
      if (x.dim() != 4) throw NotSupported(str_cat(ctx.where(), ": storage_order=1 beyond 2-D"));
      const int64_t h = x.size(2), wd = x.size(3);
      const Tensor row = div(indices, wd, std::string_view("floor"));
      const Tensor col = remainder(indices, wd);
      indices = add(mul(col, h), row);
    }
    std::vector<int64_t> shape(static_cast<size_t>(indices.dim()), 1);
    shape[0] = x.size(0);
    shape[1] = x.size(1);
    const Tensor base = mul(reshape(arange(x.size(0) * x.size(1)), shape), plane);
    indices = add(indices, base);
    if (g.lifted) indices = squeeze(indices, 2);
  }
  if (g.lifted) y = squeeze(y, 2);
  return {y, indices};
}

Outputs average_pool_op(const NodeContext& ctx) {
  if (auto d = ctx.attr_ints("dilations")) {
    for (int64_t v : *d) {
      if (v != 1) throw NotSupported(str_cat(ctx.where(), ": dilations"));
    }
  }
  PoolGeometry g = pool_geometry(ctx);
  const bool ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  const bool count_include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  const char* op = g.x.dim() == 5 ? "aten::avg_pool3d" : "aten::avg_pool2d";
  auto pool = [&](const Tensor& in, const std::vector<int64_t>& padding, bool include_pad) {
    return call_optional_tensor_op(op, {in, g.w.kernel, g.w.strides, padding, ceil_mode,
                                        include_pad, IValue()});
  };
  Tensor y;
  if (torch_can_pad(g.w)) {
    y = pool(g.x, g.w.begin, count_include_pad);
  } else {
    // Pad explicitly; without count_include_pad, divide by the pooled count of real elements.
    const std::vector<int64_t> none(g.w.begin.size(), 0);
    const Tensor padded = pad_constant(g.x, g.w.begin, g.w.end, Scalar(0.0));
    y = pool(padded, none, true);
    if (!count_include_pad) {
      const Tensor mask = pad_constant(ones_like(g.x), g.w.begin, g.w.end, Scalar(0.0));
      y = div(y, pool(mask, none, true));
    }
  }
  if (g.lifted) y = squeeze(y, 2);
  return one(y);
}

std::vector<int64_t> spatial_dims(const Tensor& x) {
  std::vector<int64_t> dims(static_cast<size_t>(std::max<int64_t>(0, x.dim() - 2)));
  std::iota(dims.begin(), dims.end(), 2);
  return dims;
}

/// MaxUnpool: x's values scattered to the flat positions MaxPool's indices name, in a zero
/// tensor of the unpooled shape. A larger output_shape keeps each value's coordinates and
/// pads with zeros at the end of each spatial dim (as ONNX's expected values do).
Outputs max_unpool_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Window w = window_of(ctx, x, {});
  std::vector<int64_t> shape = {x.size(0), x.size(1)};
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    shape.push_back((x.size(static_cast<int64_t>(2 + i)) - 1) * w.strides[i] + w.kernel[i] -
                    w.begin[i] - w.end[i]);
  }
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  Tensor y = reshape(call_optional_tensor_op(
                         "aten::scatter.src",
                         {zeros({numel}, x.dtype()), int64_t{0},
                          reshape(cast_to(indices, DType::Int64), {-1}), reshape(x, {-1})}),
                     shape);
  if (ctx.has_input(2)) {
    const std::vector<int64_t> out = int_values(ctx.input(2));
    if (out.size() != shape.size()) {
      throw ValueError(str_cat(ctx.where(), ": output_shape of rank ", out.size()));
    }
    for (size_t d = 2; d < out.size(); ++d) {
      y = pad_dim(y, static_cast<int64_t>(d), 0, out[d] - shape[d], Scalar(0.0));
    }
  }
  return one(y);
}

// ---- Pad ----

/// Edge (replicate) or reflect padding of one dim, composed from narrow, flip and cat.
Tensor pad_dim_copying(const NodeContext& ctx, const Tensor& x, int64_t dim, int64_t before,
                       int64_t after, bool reflect) {
  Tensor y = pad_dim(x, dim, std::min<int64_t>(before, 0), std::min<int64_t>(after, 0), 0);
  before = std::max<int64_t>(before, 0);
  after = std::max<int64_t>(after, 0);
  if (before == 0 && after == 0) return y;
  const int64_t n = y.size(dim);
  if (n == 0 || (reflect && (before >= n || after >= n))) {
    throw ValueError(str_cat(ctx.where(), ": cannot pad dim ", dim, " of size ", n, " by ",
                             before, " and ", after));
  }
  std::vector<Tensor> parts;
  auto edge = [&](int64_t at, int64_t count) {
    std::vector<int64_t> shape = shape_of(y);
    shape[dim] = count;
    return contiguous(expand(narrow(y, dim, at, 1), shape));
  };
  if (before > 0) parts.push_back(reflect ? flip(narrow(y, dim, 1, before), {dim}) : edge(0, before));
  parts.push_back(y);
  if (after > 0) {
    parts.push_back(reflect ? flip(narrow(y, dim, n - 1 - after, after), {dim})
                            : edge(n - 1, after));
  }
  return cat(parts, dim);
}

/// PyTorch's pad list: last dim first, (begin, end) pairs, from the first padded dim on.
std::vector<int64_t> torch_pad_list(const std::vector<int64_t>& begins,
                                    const std::vector<int64_t>& ends, int64_t from_dim) {
  std::vector<int64_t> pad;
  for (int64_t d = static_cast<int64_t>(begins.size()) - 1; d >= from_dim; --d) {
    pad.push_back(begins[d]);
    pad.push_back(ends[d]);
  }
  return pad;
}

Outputs pad_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.dim();
  const std::string mode = ctx.attr_string("mode", "constant");
  std::vector<int64_t> pads;
  Scalar value(0.0);
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads").value_or(std::vector<int64_t>{});
    value = Scalar(static_cast<double>(ctx.attr_float("value", 0.0f)));
  } else {
    pads = int_values(ctx.input(1));
    if (ctx.has_input(2)) value = scalar_value(ctx.input(2));
    if (ctx.has_input(3)) axes = wrap_axes(ctx, int_values(ctx.input(3)), rank);
  }
  const size_t n = axes.size();
  if (pads.size() != 2 * n) {
    throw ValueError(str_cat(ctx.where(), ": ", pads.size(), " pads for ", n, " axes"));
  }
  std::vector<int64_t> begins(static_cast<size_t>(rank), 0), ends(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < n; ++i) {
    begins[axes[i]] = pads[i];
    ends[axes[i]] = pads[n + i];
  }
  int64_t first_padded = rank;
  bool negative = false;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (begins[d] != 0 || ends[d] != 0) first_padded = d;
    negative = negative || begins[d] < 0 || ends[d] < 0;
  }
  if (first_padded == rank) return one(x);
  if (mode == "constant") {
    if (has_op("aten::constant_pad_nd")) {
      return one(call_optional_tensor_op(
          "aten::constant_pad_nd", {x, torch_pad_list(begins, ends, first_padded), value}));
    }
    Tensor y = x;
    for (int64_t d = 0; d < rank; ++d) y = pad_dim(y, d, begins[d], ends[d], value);
    return one(y);
  }
  if (mode != "reflect" && mode != "edge") {
    throw NotSupported(str_cat(ctx.where(), ": mode '", mode, "'"));
  }
  const bool reflect = mode == "reflect";
  // ops_nn's reflection/replication pads cover the last 1-3 dims of a [N,] C, ... input.
  const int64_t k = rank - first_padded;
  const std::string op = str_cat("aten::", reflect ? "reflection" : "replication", "_pad", k, "d");
  if (!negative && k <= 3 && has_op(op)) {
    std::vector<int64_t> batched = {-1};
    batched.insert(batched.end(), x.sizes().end() - k, x.sizes().end());
    const Tensor y = call_optional_tensor_op(op, {reshape(x, batched),
                                                  torch_pad_list(begins, ends, first_padded)});
    std::vector<int64_t> shape = shape_of(x);
    for (int64_t d = first_padded; d < rank; ++d) shape[d] += begins[d] + ends[d];
    return one(reshape(y, shape));
  }
  Tensor y = x;
  for (int64_t d = first_padded; d < rank; ++d) {
    y = pad_dim_copying(ctx, y, d, begins[d], ends[d], reflect);
  }
  return one(y);
}

// ---- Resize ----

/// How Resize maps an output coordinate to an input one, and which inputs it weighs.
struct ResizeMode {
  std::string mode = "nearest";  ///< nearest, linear, cubic
  std::string coordinates = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

/// The input coordinate of output position `out_index`, as ONNX's reference computes it: the
/// output length it uses is in * scale, unrounded, when scales are given (so that
/// align_corners with scale 0.6 over 4 inputs divides by 1.4, not by 1).
double source_coordinate(const ResizeMode& m, int64_t out_index, double scale, int64_t in,
                         double roi_start, double roi_end) {
  const double x = static_cast<double>(out_index);
  const double out = scale * static_cast<double>(in);
  const double span = static_cast<double>(in - 1);
  const std::string& c = m.coordinates;
  if (c == "half_pixel") return (x + 0.5) / scale - 0.5;
  // The reference's -0.5 for a single output (the spec text says 0; both pick input 0 for
  // linear and nearest).
  if (c == "pytorch_half_pixel") return out == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (c == "align_corners") return out == 1 ? 0.0 : x * span / (out - 1);
  if (c == "asymmetric") return x / scale;
  if (c == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (c == "tf_crop_and_resize") {
    return out == 1 ? 0.5 * (roi_start + roi_end) * span
                    : roi_start * span + x * (roi_end - roi_start) * span / (out - 1);
  }
  throw NotSupported(str_cat("Resize: coordinate_transformation_mode '", c, "'"));
}

std::vector<double> cubic_coefficients(double r, double a) {
  auto near = [&](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };           // |t| <= 1
  auto far = [&](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };       // 1 < |t| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

/// The [out, in] interpolation matrix of one axis (rows weigh the input positions) and, for
/// tf_crop_and_resize, which output positions fall outside the input.
void resize_matrix(const ResizeMode& m, double scale, int64_t in, int64_t out, double roi_start,
                   double roi_end, std::vector<double>& matrix, std::vector<uint8_t>& outside) {
  matrix.assign(static_cast<size_t>(out * in), 0.0);
  outside.assign(static_cast<size_t>(out), 0);
  for (int64_t o = 0; o < out; ++o) {
    const double src = source_coordinate(m, o, scale, in, roi_start, roi_end);
    if (m.coordinates == "tf_crop_and_resize" && (src < 0 || src > static_cast<double>(in - 1))) {
      outside[o] = 1;
      continue;
    }
    const double base = std::floor(src);
    const double r = src - base;
    std::vector<std::pair<int64_t, double>> taps;
    if (m.mode == "nearest") {
      bool up = false;  // take base + 1 rather than base
      if (r != 0) {
        if (m.nearest == "round_prefer_floor") up = r > 0.5;
        else if (m.nearest == "round_prefer_ceil") up = r >= 0.5;
        else if (m.nearest == "floor") up = false;
        else if (m.nearest == "ceil") up = true;
        else throw NotSupported(str_cat("Resize: nearest_mode '", m.nearest, "'"));
      }
      taps.push_back({static_cast<int64_t>(base) + (up ? 1 : 0), 1.0});
    } else if (m.mode == "linear") {
      taps = {{static_cast<int64_t>(base), 1 - r}, {static_cast<int64_t>(base) + 1, r}};
    } else if (m.mode == "cubic") {
      const std::vector<double> c = cubic_coefficients(r, m.cubic_a);
      for (int j = 0; j < 4; ++j) taps.push_back({static_cast<int64_t>(base) - 1 + j, c[j]});
    } else {
      throw ValueError(str_cat("Resize: unknown mode '", m.mode, "'"));
    }
    if (m.exclude_outside) {
      double total = 0;
      for (auto& [i, w] : taps) {
        if (i < 0 || i >= in) w = 0;
        total += w;
      }
      for (auto& tap : taps) tap.second /= total;
    }
    // Positions past the edges take the edge value.
    for (const auto& [i, w] : taps) {
      matrix[static_cast<size_t>(o * in + std::clamp<int64_t>(i, 0, in - 1))] += w;
    }
  }
}

/// Resizes x to out_sizes, one axis at a time: each axis is a product with its
/// interpolation matrix, which reproduces every ONNX coordinate mode exactly.
Tensor resample(const NodeContext& ctx, const Tensor& input, const std::vector<int64_t>& out_sizes,
                const std::vector<double>& scales, const std::vector<double>& roi,
                const ResizeMode& m) {
  const int64_t rank = input.dim();
  const DType dtype = input.dtype();
  if (is_integral(dtype) && m.mode != "nearest") {
    throw NotSupported(str_cat(ctx.where(), ": ", m.mode, " resize of ", dtype_name(dtype)));
  }
  // Integers go through float64, where nearest's one-hot products are exact.
  const DType compute = is_integral(dtype) ? DType::Float64 : dtype;
  Tensor y = cast_to(input, compute);
  Tensor outside_mask;
  const bool crop = m.coordinates == "tf_crop_and_resize";
  for (int64_t axis = 0; axis < rank; ++axis) {
    const int64_t in = input.size(axis), out = out_sizes[axis];
    if (!crop && in == out && scales[axis] == 1.0) continue;
    if (in == 0) throw NotSupported(str_cat(ctx.where(), ": resizing an empty axis"));
    std::vector<double> matrix;
    std::vector<uint8_t> outside;
    const double roi_start = crop ? roi[axis] : 0.0, roi_end = crop ? roi[rank + axis] : 1.0;
    resize_matrix(m, scales[axis], in, out, roi_start, roi_end, matrix, outside);
    // [..., in] @ [in, out] with the axis moved last.
    const Tensor weights = cast_to(t(Tensor::from_vector(matrix, {out, in})), compute);
    y = movedim(matmul(movedim(y, axis, -1), weights), -1, axis);
    if (crop) {
      std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
      shape[axis] = out;
      const Tensor mask = reshape(cast_to(Tensor::from_vector(outside, {out}), DType::Bool), shape);
      outside_mask = outside_mask.defined() ? logical_or(outside_mask, mask) : mask;
    }
  }
  if (outside_mask.defined()) y = where(outside_mask, full({}, m.extrapolation, compute), y);
  if (is_integral(dtype)) y = round(y);
  return cast_to(y, dtype);
}

Outputs resize_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.dim();
  ResizeMode m;
  const bool legacy = ctx.opset() < 11;  // Resize-10: asymmetric coordinates, floor rounding
  m.mode = ctx.attr_string("mode", "nearest");
  m.coordinates = ctx.attr_string("coordinate_transformation_mode", legacy ? "asymmetric" : "half_pixel");
  m.nearest = ctx.attr_string("nearest_mode", legacy ? "floor" : "round_prefer_floor");
  m.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  m.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  m.extrapolation = ctx.attr_float("extrapolation_value", 0.0f);
  if (ctx.attr_int("antialias", 0) != 0) throw NotSupported(str_cat(ctx.where(), ": antialias"));
  if (ctx.has_attr("axes")) throw NotSupported(str_cat(ctx.where(), ": axes"));
  if (ctx.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch") {
    throw NotSupported(str_cat(ctx.where(), ": keep_aspect_ratio_policy"));
  }
  Tensor roi_t, scales_t, sizes_t;
  if (legacy) {
    scales_t = ctx.input(1);
  } else {
    roi_t = ctx.optional_input(1);
    scales_t = ctx.optional_input(2);
    sizes_t = ctx.optional_input(3);
  }
  std::vector<double> scales(static_cast<size_t>(rank), 1.0);
  std::vector<int64_t> out_sizes = shape_of(x);
  if (scales_t.defined() && scales_t.numel() > 0) {
    scales = to_doubles(scales_t);
    if (static_cast<int64_t>(scales.size()) != rank) {
      throw ValueError(str_cat(ctx.where(), ": ", scales.size(), " scales for rank ", rank));
    }
    for (int64_t d = 0; d < rank; ++d) {
      out_sizes[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.size(d)) * scales[d]));
    }
  } else if (sizes_t.defined() && sizes_t.numel() > 0) {
    out_sizes = int_values(sizes_t);
    if (static_cast<int64_t>(out_sizes.size()) != rank) {
      throw ValueError(str_cat(ctx.where(), ": ", out_sizes.size(), " sizes for rank ", rank));
    }
    for (int64_t d = 0; d < rank; ++d) {
      scales[d] = static_cast<double>(out_sizes[d]) / static_cast<double>(x.size(d));
    }
  } else {
    throw ValueError(str_cat(ctx.where(), ": neither scales nor sizes"));
  }
  std::vector<double> roi;
  if (m.coordinates == "tf_crop_and_resize") {
    if (!roi_t.defined() || roi_t.numel() != 2 * rank) {
      throw ValueError(str_cat(ctx.where(), ": tf_crop_and_resize needs a roi of ", 2 * rank));
    }
    roi = to_doubles(roi_t);
  }
  return one(resample(ctx, x, out_sizes, scales, roi, m));
}

/// Upsample (deprecated by Resize): asymmetric coordinates, nearest rounds down.
Outputs upsample_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  ResizeMode m;
  m.mode = ctx.attr_string("mode", "nearest");
  if (m.mode == "bilinear") m.mode = "linear";
  m.coordinates = "asymmetric";
  m.nearest = "floor";
  std::vector<double> scales;
  if (ctx.opset() < 9) {
    for (float s : ctx.attr_floats("scales").value_or(std::vector<float>{})) scales.push_back(s);
  } else {
    scales = to_doubles(ctx.input(1));
  }
  if (static_cast<int64_t>(scales.size()) != x.dim()) {
    throw ValueError(str_cat(ctx.where(), ": ", scales.size(), " scales for ", x.describe()));
  }
  std::vector<int64_t> out_sizes;
  for (int64_t d = 0; d < x.dim(); ++d) {
    out_sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.size(d)) * scales[d])));
  }
  return one(resample(ctx, x, out_sizes, scales, {}, m));
}

// ---- Dropout ----

Outputs dropout_op(const NodeContext& ctx) {
  const Tensor& x = ctx.input(0);
  ctx.ignore_attr("seed");
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 12) {
    ratio = ctx.attr_float("ratio", 0.5f);
    ctx.ignore_attr("consumed_inputs");
    if (ctx.opset() < 7) training = ctx.attr_int("is_test", 0) == 0;
  } else {
    if (ctx.has_input(1)) ratio = scalar_value(ctx.input(1)).to<double>();
    if (ctx.has_input(2)) training = scalar_value(ctx.input(2)).to<bool>();
  }
  // Inference, or training that drops nothing: the identity, and a mask of all true.
  if (training && ratio != 0.0) {
    throw NotSupported(str_cat(ctx.where(), ": training mode draws random numbers"));
  }
  return {x, ones_like(x, DType::Bool)};
}

}  // namespace

void add_nn_ops(OpTable& t) {
  t["Conv"] = conv_op;
  t["ConvTranspose"] = conv_transpose_op;
  t["ConvInteger"] = conv_integer_op;
  t["QLinearConv"] = qlinear_conv_op;
  t["MaxPool"] = max_pool_op;
  t["MaxUnpool"] = max_unpool_op;
  t["AveragePool"] = average_pool_op;
  t["GlobalAveragePool"] = [](const NodeContext& c) {
    return one(mean(c.input(0), spatial_dims(c.input(0)), /*keepdim=*/true));
  };
  t["GlobalMaxPool"] = [](const NodeContext& c) {
    return one(amax(c.input(0), spatial_dims(c.input(0)), /*keepdim=*/true));
  };
  t["Pad"] = pad_op;
  t["Resize"] = resize_op;
  t["Upsample"] = upsample_op;
  t["Dropout"] = dropout_op;
}

}  // namespace loom::onnx
