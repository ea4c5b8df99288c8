// oneDNN kernels of the pooling family: max pooling (forward, with indices, backward), average
// pooling (forward, backward), adaptive average pooling where it is a plain pooling, and the
// 1-d forms, which run as 2-d pooling over [.., 1, L] as the reference's do.
//
// A call is taken only when it is well-formed float32 and oneDNN computes exactly what the
// reference does (ops/nn/cpu/pooling.cpp); every other call goes to the reference, so its
// checks and messages are the reference's:
//   - divisor_override: handed on (oneDNN has no such divisor);
//   - count_include_pad with a ceil_mode window reaching past the right padding: handed on
//     (oneDNN divides by the whole kernel, the reference by the part inside input + padding);
//   - adaptive average pooling: taken when each input size is a multiple of its output size
//     (then it is a pooling with kernel = stride = input / output), else handed on;
//   - max_pool2d_with_indices_backward: handed on (a scatter of given int64 indices, which
//     oneDNN's workspace cannot express; the reference's loop is already memory-bound);
//   - max pooling of an input holding NaN or -inf: handed on (max_input);
//   - dilation other than 1: handed on (window_of; oneDNN 2.6 has only a slow loop for it);
//   - inputs below kMinElements (kMinIndicesElements with indices): handed on.
//
// Note [Max pooling indices]: oneDNN's training forward writes a workspace holding, per
// output, the offset of its maximum inside the window (kh * kW + kw), and its backward
// routes each gradient there; both take the first maximum of a window in row-major order,
// as the reference does (tested with ties). So max_pool2d_backward (the gradient of
// max_pool2d, which saves no indices) runs oneDNN's training forward again for the
// workspace and then its backward, and max_pool2d_with_indices turns the workspace into the
// reference's int64 flat indices h * W + w.
//
// Layouts: a channels-last input (4-D) gets a channels-last result, any other a contiguous
// one; an input of neither layout is reordered contiguous first (oneDNN's fast kernels want
// a dense plain layout).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "loom/dispatcher/library.h"
#include "loom/ops/nn/memory_format.h"
#include "loom/ops/nn/meta/convolution.h"
#include "loom/ops/nn/meta/pooling.h"
#include "loom/ops/tensor_methods.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

/// Below this many input elements the reference's loop beats a oneDNN call (primitive
/// lookup, execution, the NaN scan): measured here (2 cores, AVX-512) [1, 16, 8, 8] takes
/// 1.1-1.9 us in the reference and 1.5-2.6 us in oneDNN; [4, 16, 16, 16] 13-18 us against
/// 2.4-9.6 us. So calls below 4096 elements are handed on.
constexpr int64_t kMinElements = 4096;
/// max_pool2d_with_indices also turns the workspace into int64 indices: at [4, 16, 16, 16]
/// oneDNN takes 12-15 us against the reference's 18 us, so it takes from 16384 elements.
constexpr int64_t kMinIndicesElements = 16384;

// ---- views ----

using ops::meta::squeeze_view;
using ops::meta::unsqueeze_view;

/// [C, H, W] as [1, C, H, W]; a 4-D tensor as itself.
Tensor as_batched(const Tensor& t) { return t.dim() == 4 ? t : unsqueeze_view(t, 0); }
/// The inverse of as_batched for a result of an input of `dim` dims.
Tensor as_input_dims(const Tensor& t, int64_t dim) { return dim == 4 ? t : squeeze_view(t, 0); }

// ---- layouts ----

/// The plain layout a pooling of x (4-D) runs in, and its result's: channels-last when x
/// suggests it (Note [Memory format] in loom/ops/nn/memory_format.h), else NCHW.
memory::format_tag layout_of(const Tensor& x) {
  return suggests_channels_last(x) ? memory::format_tag::nhwc : memory::format_tag::nchw;
}

Tensor new_tensor(IntArrayRef sizes, memory::format_tag tag, DType dtype = DType::Float32) {
  if (tag == memory::format_tag::nhwc) return empty_channels_last(sizes, dtype);
  return Tensor::empty(sizes, TensorOptions{}.with(dtype));
}

memory::desc plain_desc(IntArrayRef sizes, memory::format_tag tag) {
  return memory::desc(memory::dims(sizes.begin(), sizes.end()), memory::data_type::f32, tag);
}

// ---- geometry ----

/// A 2-d window in oneDNN's terms (dilation counts the gaps: PyTorch's minus one).
struct Window {
  memory::dims kernel, stride, dilation, pad_l, pad_r;
  int64_t oH = 0, oW = 0;
};

/// One dim of a window, with the reference's output size rule (Pool.h's
/// pooling_output_shape); false when the reference would reject it.
bool window_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode, Window& w) {
  if (k <= 0 || s <= 0 || d <= 0 || p < 0 || p > k / 2) return false;
  if (p > (__int128{d} * (k - 1) + 1) / 2) return false;
  const std::optional<int64_t> length =
      ops::meta::pooling_output_length(in, k, p, s, d, ceil_mode);  // as the reference
  if (!length || *length < 1) return false;
  const int64_t out = *length;
  const int64_t span = (k - 1) * d + 1;  // d is 1: dilated calls are handed on
  w.kernel.push_back(k);
  w.stride.push_back(s);
  w.dilation.push_back(d - 1);
  w.pad_l.push_back(p);
  // oneDNN wants the right padding that makes its output size ours; a negative one (the
  // last window ends before the input does) is zero for it. (out - 1) * s < in + p: the last
  // window starts inside the input or its left padding, so the product does not overflow.
  w.pad_r.push_back(std::max<int64_t>((out - 1) * s + span - in - p, 0));
  (w.oH == 0 ? w.oH : w.oW) = out;
  return true;
}

/// The window of a 2-d pooling of x ([N, C, H, W] or [C, H, W]) from its arguments (each one
/// int or two; stride empty: the kernel), or nullopt when the call is not well-formed or is
/// dilated: oneDNN 2.6 runs dilated pooling in its reference loop only (milliseconds where
/// the reference kernel takes tens of microseconds), so dilated calls are handed on.
std::optional<Window> window_of(const Tensor& x, IntArrayRef kernel, IntArrayRef stride,
                                IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  auto one_or_two = [](IntArrayRef v) { return v.size() == 1 || v.size() == 2; };
  if ((x.dim() != 3 && x.dim() != 4) || !one_or_two(kernel) || !one_or_two(padding) ||
      !one_or_two(dilation) || !(stride.empty() || one_or_two(stride))) {
    return std::nullopt;
  }
  auto at = [](IntArrayRef v, size_t i) { return v[std::min(i, v.size() - 1)]; };
  Window w;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t k = at(kernel, i);
    const int64_t s = stride.empty() ? k : at(stride, i);
    if (at(dilation, i) != 1 || !window_dim(x.size(x.dim() - 2 + static_cast<int64_t>(i)), k, s,
                                            at(padding, i), 1, ceil_mode, w)) {
      return std::nullopt;
    }
  }
  return w;
}

Key& add_window(Key& key, const Window& w) {
  return key.add(w.kernel).add(w.stride).add(w.dilation).add(w.pad_l).add(w.pad_r);
}

std::vector<int64_t> pooled_sizes(IntArrayRef in, int64_t oH, int64_t oW) {
  std::vector<int64_t> s(in.begin(), in.end() - 2);
  s.push_back(oH);
  s.push_back(oW);
  return s;
}

// ---- primitives ----

/// A pooling's forward and backward primitives for one shape, layout and window.
struct Pooling {
  dnnl::pooling_v2_forward::primitive_desc fwd_pd;
  dnnl::pooling_v2_forward fwd;
  dnnl::pooling_v2_backward::primitive_desc bwd_pd;  // empty unless asked for
  dnnl::pooling_v2_backward bwd;
};

/// The cached pooling of src sizes in layout tag with window w (training: the forward
/// writes a workspace; backward: the backward primitive too).
std::shared_ptr<const Pooling> pooling(algorithm alg, IntArrayRef src_sizes, memory::format_tag tag,
                                       const Window& w, bool training, bool backward) {
  Key key("pool");
  key.add(static_cast<int64_t>(alg)).add(src_sizes).add(static_cast<int64_t>(tag));
  key.add(int64_t{training}).add(int64_t{backward});
  add_window(key, w);
  auto entry = cached(key, [&] {
    const memory::desc src = plain_desc(src_sizes, tag);
    const memory::desc dst = plain_desc(pooled_sizes(src_sizes, w.oH, w.oW), tag);
    auto pool = std::make_shared<Pooling>();
    const auto prop = training ? prop_kind::forward_training : prop_kind::forward_inference;
    pool->fwd_pd = dnnl::pooling_v2_forward::primitive_desc(
        {prop, alg, src, dst, w.stride, w.kernel, w.dilation, w.pad_l, w.pad_r}, engine());
    pool->fwd = dnnl::pooling_v2_forward(pool->fwd_pd);
    if (backward) {
      pool->bwd_pd = dnnl::pooling_v2_backward::primitive_desc(
          {alg, src, dst, w.stride, w.kernel, w.dilation, w.pad_l, w.pad_r}, engine(),
          pool->fwd_pd);
      pool->bwd = dnnl::pooling_v2_backward(pool->bwd_pd);
    }
    return CachedPrimitive{pool->fwd, pool->fwd_pd, pool};
  });
  return std::static_pointer_cast<const Pooling>(entry->extra);
}

/// The pooled result of x (4-D, float32) in x's layout; the workspace into *ws if asked.
Tensor pool_forward(algorithm alg, const Tensor& x, const Window& w, memory* ws = nullptr) {
  const memory::format_tag tag = layout_of(x);
  const auto pool = pooling(alg, x.sizes(), tag, w, ws != nullptr, false);
  Tensor out = new_tensor(pooled_sizes(x.sizes(), w.oH, w.oW), tag);
  Args args{{DNNL_ARG_SRC, as_layout(x, pool->fwd_pd.src_desc())},
            {DNNL_ARG_DST, memory_of(out, pool->fwd_pd.dst_desc())}};
  if (ws) {
    *ws = memory(pool->fwd_pd.workspace_desc(), engine());
    args[DNNL_ARG_WORKSPACE] = *ws;
  }
  execute(pool->fwd, args);
  return out;
}

/// The gradient of a pooling of x (4-D) given grad_output (its result's sizes, any layout),
/// in x's layout. Max pooling runs the training forward first for its workspace.
Tensor pool_backward(algorithm alg, const Tensor& grad_output, const Tensor& x, const Window& w) {
  const memory::format_tag tag = layout_of(x);
  const bool is_max = alg == algorithm::pooling_max;
  const auto pool = pooling(alg, x.sizes(), tag, w, /*training=*/true, /*backward=*/true);
  Args bwd_args{{DNNL_ARG_DIFF_DST, as_layout(grad_output, pool->bwd_pd.diff_dst_desc())}};
  if (is_max) {
    memory ws(pool->fwd_pd.workspace_desc(), engine());
    memory dst(pool->fwd_pd.dst_desc(), engine());
    execute(pool->fwd, {{DNNL_ARG_SRC, as_layout(x, pool->fwd_pd.src_desc())},
                        {DNNL_ARG_DST, dst},
                        {DNNL_ARG_WORKSPACE, ws}});
    bwd_args[DNNL_ARG_WORKSPACE] = ws;
  }
  Tensor gi = new_tensor(x.sizes(), tag);
  bwd_args[DNNL_ARG_DIFF_SRC] = memory_of(gi, pool->bwd_pd.diff_src_desc());
  execute(pool->bwd, bwd_args);
  return gi;
}

/// The reference's int64 flat indices (h * W + w within a plane) of a max pooling's maxima
/// from oneDNN's workspace (Note [Max pooling indices]), into idx (4-D, any strides).
template <typename WsT>
void indices_from_workspace(const WsT* ws, const memory::desc& ws_md, const Window& w, int64_t W,
                            const Tensor& idx) {
  const auto& blk = ws_md.data.format_desc.blocking;
  const int64_t N = idx.size(0), C = idx.size(1), oH = idx.size(2), oW = idx.size(3);
  const int64_t ws_s[4] = {blk.strides[0], blk.strides[1], blk.strides[2], blk.strides[3]};
  int64_t* out = static_cast<int64_t*>(idx.data_ptr());
  const int64_t os[4] = {idx.stride(0), idx.stride(1), idx.stride(2), idx.stride(3)};
  const int64_t sH = w.stride[0], sW = w.stride[1], pH = w.pad_l[0], pW = w.pad_l[1];
  // Offset in the window k -> (row, column) offsets from the window's corner.
  std::vector<int64_t> dh(static_cast<size_t>(w.kernel[0] * w.kernel[1])), dw(dh.size());
  for (size_t k = 0; k < dh.size(); ++k) {
    dh[k] = static_cast<int64_t>(k) / w.kernel[1] * (w.dilation[0] + 1);
    dw[k] = static_cast<int64_t>(k) % w.kernel[1] * (w.dilation[1] + 1);
  }
#pragma omp parallel for schedule(static) if (N * oH > 1 && idx.numel() >= 32768)
  for (int64_t nh = 0; nh < N * oH; ++nh) {
    const int64_t n = nh / oH, oh = nh % oH;
    for (int64_t ow = 0; ow < oW; ++ow) {
      const int64_t corner = (oh * sH - pH) * W + (ow * sW - pW);
      const WsT* src = ws + n * ws_s[0] + oh * ws_s[2] + ow * ws_s[3];
      int64_t* dst = out + n * os[0] + oh * os[2] + ow * os[3];
      for (int64_t c = 0; c < C; ++c) {
        const auto k = static_cast<size_t>(src[c * ws_s[1]]);
        dst[c * os[1]] = corner + dh[k] * W + dw[k];
      }
    }
  }
}

/// max pooling with the reference's indices (4-D x).
std::tuple<Tensor, Tensor> max_pool_with_indices(const Tensor& x, const Window& w) {
  memory ws;
  Tensor out = pool_forward(algorithm::pooling_max, x, w, &ws);
  Tensor idx = new_tensor(out.sizes(), layout_of(x), DType::Int64);
  const memory::desc ws_md = ws.get_desc();
  if (ws_md.data_type() == memory::data_type::u8) {
    indices_from_workspace(static_cast<const uint8_t*>(ws.get_data_handle()), ws_md, w, x.size(3),
                           idx);
  } else {
    indices_from_workspace(static_cast<const int32_t*>(ws.get_data_handle()), ws_md, w, x.size(3),
                           idx);
  }
  return {out, idx};
}

/// True when p[0, n) holds a NaN or -inf.
bool has_nan_or_neg_inf(const float* p, int64_t n) {
  int bad = 0;
#pragma omp parallel for simd reduction(| : bad) schedule(static) if (n >= 65536)
  for (int64_t i = 0; i < n; ++i) bad |= !(p[i] > -std::numeric_limits<float>::infinity());
  return bad != 0;
}

/// x (4-D) ready for oneDNN's max pooling: x itself when dense (contiguous or channels-last),
/// else a contiguous copy; undefined when x holds a NaN or -inf. oneDNN's max pooling skips
/// NaN (the reference propagates it) and starts each window from the lowest finite float
/// (an all -inf window gives -FLT_MAX and an index in the padding), so such inputs go to the
/// reference; the scan costs one read of the input (see the measurements in the report).
Tensor max_input(const Tensor& x) {
  const Tensor d = x.is_contiguous() || is_channels_last(x) ? x : x.contiguous();
  if (has_nan_or_neg_inf(static_cast<const float*>(d.data_ptr()), d.numel())) return Tensor();
  return d;
}

/// True when oneDNN takes a pooling of self: float32, non-empty, big enough.
bool takes_pool(const Tensor& self) {
  return takes({self}) && (self.dim() == 3 || self.dim() == 4) && self.numel() >= kMinElements;
}

/// True when grad_output (of a pooling of self with output oH x oW) is well-formed.
bool grad_matches(const Tensor& grad_output, const Tensor& self, int64_t oH, int64_t oW) {
  return takes({grad_output, self}) &&
         grad_output.sizes() == IntArrayRef(pooled_sizes(self.sizes(), oH, oW));
}

/// True when oneDNN's average (include padding: divides by the whole kernel) is the
/// reference's: no window reaches past the right padding.
bool avg_matches(const Window& w, bool count_include_pad) {
  if (!count_include_pad) return true;
  return w.pad_r[0] <= w.pad_l[0] && w.pad_r[1] <= w.pad_l[1];
}

algorithm avg_algorithm(bool count_include_pad) {
  return count_include_pad ? algorithm::pooling_avg_include_padding
                           : algorithm::pooling_avg_exclude_padding;
}

// ---- max pooling ----

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool)>(
          "aten::max_pool2d");
  std::optional<Window> w;
  if (takes_pool(self)) w = window_of(self, kernel_size, stride, padding, dilation, ceil_mode);
  const Tensor x = w ? max_input(as_batched(self)) : Tensor();
  if (!x.defined()) {
    return op.call_next_provider(kCPU, self, kernel_size, stride, padding, dilation, ceil_mode);
  }
  return as_input_dims(pool_forward(algorithm::pooling_max, x, *w), self.dim());
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  static const auto op =
      onednn::op<std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                            IntArrayRef, bool)>("aten::max_pool2d_with_indices");
  std::optional<Window> w;
  if (takes_pool(self) && self.numel() >= kMinIndicesElements)
    w = window_of(self, kernel_size, stride, padding, dilation, ceil_mode);
  const Tensor x = w ? max_input(as_batched(self)) : Tensor();
  if (!x.defined()) {
    return op.call_next_provider(kCPU, self, kernel_size, stride, padding, dilation, ceil_mode);
  }
  auto [out, idx] = max_pool_with_indices(x, *w);
  return {as_input_dims(out, self.dim()), as_input_dims(idx, self.dim())};
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           bool ceil_mode) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                        IntArrayRef, bool)>("aten::max_pool2d_backward");
  std::optional<Window> w;
  if (takes_pool(self)) w = window_of(self, kernel_size, stride, padding, dilation, ceil_mode);
  const Tensor x =
      w && grad_matches(grad_output, self, w->oH, w->oW) ? max_input(as_batched(self)) : Tensor();
  if (!x.defined()) {
    return op.call_next_provider(kCPU, grad_output, self, kernel_size, stride, padding, dilation,
                                 ceil_mode);
  }
  return as_input_dims(pool_backward(algorithm::pooling_max, as_batched(grad_output), x, *w),
                       self.dim());
}

/// The 1-d arguments as the 2-d ones of a 1 x k window, or false when not exactly one int
/// each (the reference then says what is wrong).
bool lift_1d(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
             std::vector<int64_t> (&out)[4]) {
  if (kernel.size() != 1 || !(stride.empty() || stride.size() == 1) || padding.size() != 1 ||
      dilation.size() != 1) {
    return false;
  }
  out[0] = {1, kernel[0]};
  out[1] = {1, stride.empty() ? kernel[0] : stride[0]};
  out[2] = {0, padding[0]};
  out[3] = {1, dilation[0]};
  return true;
}

bool takes_pool_1d(const Tensor& self) {
  return takes({self}) && (self.dim() == 2 || self.dim() == 3) && self.numel() >= kMinElements;
}

Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool)>(
          "aten::max_pool1d");
  std::vector<int64_t> p[4];
  std::optional<Window> w;
  const Tensor x = takes_pool_1d(self) ? unsqueeze_view(self, self.dim() - 1) : Tensor();
  if (x.defined() && lift_1d(kernel_size, stride, padding, dilation, p)) {
    w = window_of(x, p[0], p[1], p[2], p[3], ceil_mode);
  }
  const Tensor x4 = w ? max_input(as_batched(x)) : Tensor();
  if (!x4.defined()) {
    return op.call_next_provider(kCPU, self, kernel_size, stride, padding, dilation, ceil_mode);
  }
  const Tensor out = as_input_dims(pool_forward(algorithm::pooling_max, x4, *w), x.dim());
  return squeeze_view(out, out.dim() - 2);
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  static const auto op =
      onednn::op<std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                            IntArrayRef, bool)>("aten::max_pool1d_with_indices");
  std::vector<int64_t> p[4];
  std::optional<Window> w;
  const Tensor x = takes_pool_1d(self) && self.numel() >= kMinIndicesElements
                       ? unsqueeze_view(self, self.dim() - 1)
                       : Tensor();
  if (x.defined() && lift_1d(kernel_size, stride, padding, dilation, p)) {
    w = window_of(x, p[0], p[1], p[2], p[3], ceil_mode);
  }
  const Tensor x4 = w ? max_input(as_batched(x)) : Tensor();
  if (!x4.defined()) {
    return op.call_next_provider(kCPU, self, kernel_size, stride, padding, dilation, ceil_mode);
  }
  auto [out, idx] = max_pool_with_indices(x4, *w);
  out = as_input_dims(out, x.dim());
  idx = as_input_dims(idx, x.dim());
  return {squeeze_view(out, out.dim() - 2), squeeze_view(idx, idx.dim() - 2)};
}

// ---- average pooling ----

Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  static const auto op = onednn::op<Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                           bool, bool, std::optional<int64_t>)>("aten::avg_pool2d");
  static const int64_t one[1] = {1};
  std::optional<Window> w;
  if (takes_pool(self) && !divisor_override) {
    w = window_of(self, kernel_size, stride, padding, IntArrayRef(one, 1), ceil_mode);
  }
  if (!w || !avg_matches(*w, count_include_pad)) {
    return op.call_next_provider(kCPU, self, kernel_size, stride, padding, ceil_mode,
                                 count_include_pad, divisor_override);
  }
  return as_input_dims(pool_forward(avg_algorithm(count_include_pad), as_batched(self), *w),
                       self.dim());
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool,
                        bool, std::optional<int64_t>)>("aten::avg_pool2d_backward");
  static const int64_t one[1] = {1};
  std::optional<Window> w;
  if (takes_pool(self) && !divisor_override) {
    w = window_of(self, kernel_size, stride, padding, IntArrayRef(one, 1), ceil_mode);
  }
  if (!w || !avg_matches(*w, count_include_pad) || !grad_matches(grad_output, self, w->oH, w->oW)) {
    return op.call_next_provider(kCPU, grad_output, self, kernel_size, stride, padding, ceil_mode,
                                 count_include_pad, divisor_override);
  }
  return as_input_dims(pool_backward(avg_algorithm(count_include_pad), as_batched(grad_output),
                                     as_batched(self), *w),
                       self.dim());
}

Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool)>(
          "aten::avg_pool1d");
  static const int64_t one[1] = {1};
  std::vector<int64_t> p[4];
  std::optional<Window> w;
  const Tensor x = takes_pool_1d(self) ? unsqueeze_view(self, self.dim() - 1) : Tensor();
  if (x.defined() && lift_1d(kernel_size, stride, padding, IntArrayRef(one, 1), p)) {
    w = window_of(x, p[0], p[1], p[2], p[3], ceil_mode);
  }
  if (!w || !avg_matches(*w, count_include_pad)) {
    return op.call_next_provider(kCPU, self, kernel_size, stride, padding, ceil_mode,
                                 count_include_pad);
  }
  const Tensor out =
      as_input_dims(pool_forward(avg_algorithm(count_include_pad), as_batched(x), *w), x.dim());
  return squeeze_view(out, out.dim() - 2);
}

// ---- adaptive average pooling ----

/// The plain window of an adaptive average pooling of x to output_size, when each input size
/// is a multiple of its output size (then every bin is kernel = stride = in / out).
std::optional<Window> adaptive_window(const Tensor& x, IntArrayRef output_size) {
  if ((x.dim() != 3 && x.dim() != 4) || output_size.size() != 2) return std::nullopt;
  Window w;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = x.size(x.dim() - 2 + static_cast<int64_t>(i)), out = output_size[i];
    if (out <= 0 || in % out != 0) return std::nullopt;
    if (!window_dim(in, in / out, in / out, 0, 1, false, w)) return std::nullopt;
  }
  return w;
}

template <const char* kName>
Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  static const auto op = onednn::op<Tensor(const Tensor&, IntArrayRef)>(kName);
  std::optional<Window> w;
  if (takes_pool(self)) w = adaptive_window(self, output_size);
  if (!w) return op.call_next_provider(kCPU, self, output_size);
  return as_input_dims(pool_forward(algorithm::pooling_avg_exclude_padding, as_batched(self), *w),
                       self.dim());
}
constexpr char kAdaptiveAvgPool2d[] = "aten::adaptive_avg_pool2d";
constexpr char kAdaptiveAvgPool2dInternal[] = "aten::_adaptive_avg_pool2d";

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Tensor&)>("aten::_adaptive_avg_pool2d_backward");
  std::optional<Window> w;
  if (takes_pool(self) && grad_output.dim() == self.dim()) {
    const int64_t out[2] = {grad_output.size(-2), grad_output.size(-1)};
    w = adaptive_window(self, IntArrayRef(out, 2));
  }
  if (!w || !grad_matches(grad_output, self, w->oH, w->oW)) {
    return op.call_next_provider(kCPU, grad_output, self);
  }
  return as_input_dims(pool_backward(algorithm::pooling_avg_exclude_padding,
                                     as_batched(grad_output), as_batched(self), *w),
                       self.dim());
}

Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, IntArrayRef)>("aten::adaptive_avg_pool1d");
  std::optional<Window> w;
  const Tensor x = takes_pool_1d(self) ? unsqueeze_view(self, self.dim() - 1) : Tensor();
  if (x.defined() && output_size.size() == 1) {
    const int64_t out[2] = {1, output_size[0]};
    w = adaptive_window(x, IntArrayRef(out, 2));
  }
  if (!w) return op.call_next_provider(kCPU, self, output_size);
  const Tensor out = as_input_dims(
      pool_forward(algorithm::pooling_avg_exclude_padding, as_batched(x), *w), x.dim());
  return squeeze_view(out, out.dim() - 2);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
  m.impl("max_pool2d", &max_pool2d);
  m.impl("max_pool2d_with_indices", &max_pool2d_with_indices);
  m.impl("max_pool2d_backward", &max_pool2d_backward);
  m.impl("max_pool1d", &max_pool1d);
  m.impl("max_pool1d_with_indices", &max_pool1d_with_indices);
  m.impl("avg_pool2d", &avg_pool2d);
  m.impl("avg_pool2d_backward", &avg_pool2d_backward);
  m.impl("avg_pool1d", &avg_pool1d);
  m.impl("adaptive_avg_pool2d", &adaptive_avg_pool2d<kAdaptiveAvgPool2d>);
  m.impl("_adaptive_avg_pool2d", &adaptive_avg_pool2d<kAdaptiveAvgPool2dInternal>);
  m.impl("_adaptive_avg_pool2d_backward", &adaptive_avg_pool2d_backward);
  m.impl("adaptive_avg_pool1d", &adaptive_avg_pool1d);
}

}  // namespace loom::onednn
