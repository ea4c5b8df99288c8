// oneDNN kernels of the convolution family: convolution (plain and transposed, any groups, 1-d
// and 2-d), convolution_backward, and conv1d / conv2d (explicit padding or 'valid'/'same') /
// conv_transpose1d / conv_transpose2d, which have reference kernels of their own and so need
// ours to reach oneDNN at all. 1-d runs as 2-d with a unit height; 3-d stays
// with the reference.
//
// Note [Convolution layouts]: measured on this machine (3x3, 64 -> 64 channels, 56x56, batch
// 32, float32, 2 threads, NCHW data reordered in and out): the forward is fastest channels-last
// (brgconv, 19.7 ms with both reorders, against 21.0 ms in oneDNN's blocked layout), the
// backward in the blocked layout (37.5 ms against 44.5 ms, the weight gradient being slower in
// nhwc). So the forward runs nhwc and the backward of an input that is not channels-last runs
// in the layout oneDNN prefers (format any); a channels-last input runs nhwc throughout, with
// no reorder, and its results stay channels-last, as in PyTorch; so do the results of a
// channels-last weight (Note [Memory format] in loom/ops/nn/memory_format.h: a model converted
// with Module::to(MemoryFormat::ChannelsLast) runs nhwc from a one-channel image on). The reorders of a 25 MB
// activation cost 1-2 ms each (a transposition; near a memcpy). Weights are kept in the layout
// each primitive asks for (format any), reordered once per weight version (Note [Weight
// cache]).
//
// ReLU is not fused as a post-op: an eager kernel cannot see that the next call is a relu of
// its result, and fusing would need a graph or a fused op the caller asks for by name.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/dispatcher/library.h"
#include "loom/ops/nn/memory_format.h"
#include "loom/ops/nn/meta/convolution.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// ---- views ----

using ops::meta::squeeze_view;
using ops::meta::unsqueeze_view;

// ---- the geometry of a call ----

/// A well-formed convolution in oneDNN's terms, brought to 2-d.
struct Conv {
  bool transposed = false;
  bool one_d = false;
  bool bias = false;
  bool blocked = false;  ///< activations in oneDNN's preferred layout rather than nhwc
  int64_t groups = 1;
  memory::dims src, dst;  ///< {N, C, H, W} of the input and of the output
  memory::dims weights;   ///< oneDNN's weight dims: {OC, IC, kH, kW}, {G, OC/G, IC/G, kH, kW}
  memory::dims strides, dilates, pad_l, pad_r;  ///< dilates: PyTorch's dilation minus 1
  std::vector<int64_t> out_sizes;               ///< the output's sizes at the op's rank

  /// Appends everything a primitive depends on.
  void add_to(Key& key) const {
    key.add(int64_t{transposed}).add(int64_t{bias}).add(int64_t{blocked}).add(groups);
    for (const memory::dims* d : {&src, &dst, &weights, &strides, &dilates, &pad_l, &pad_r})
      key.add(IntArrayRef(*d));
  }
};

/// p expanded to n values (a single value applies to every spatial dim), or nullopt.
std::optional<std::vector<int64_t>> expand(IntArrayRef p, int64_t n) {
  if (p.size() == 1) return std::vector<int64_t>(static_cast<size_t>(n), p[0]);
  if (static_cast<int64_t>(p.size()) != n) return std::nullopt;
  return std::vector<int64_t>(p.begin(), p.end());
}

/// The oneDNN geometry of convolution(input, weight, bias, ...) with a batched input, or
/// nullopt for every call this kernel does not take: outside oneDNN's domain (not float32,
/// empty, 3-d) or malformed in any way, so that the reference kernel reports it. `extra` is
/// padding added on the right/bottom only (padding='same' with an odd total), plain only.
std::optional<Conv> plan(const Tensor& input, const Tensor& weight, const Tensor& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                         bool transposed, IntArrayRef output_padding, int64_t groups,
                         IntArrayRef extra = {}) {
  if (!input.defined() || !weight.defined() || !takes({input, weight, bias})) return std::nullopt;
  const int64_t k = weight.dim();
  if ((k != 3 && k != 4) || input.dim() != k || groups <= 0) return std::nullopt;
  const int64_t n = k - 2;
  const auto s = expand(stride, n), p = expand(padding, n), d = expand(dilation, n),
             op = expand(output_padding, n);
  if (!s || !p || !d || !op) return std::nullopt;
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    if ((*s)[u] <= 0 || (*p)[u] < 0 || (*d)[u] < 1 || (*op)[u] < 0) return std::nullopt;
    if (!transposed && (*op)[u] != 0) return std::nullopt;
    if (transposed && !((*op)[u] < (*s)[u] || (*op)[u] < (*d)[u])) return std::nullopt;
  }
  const IntArrayRef ws = weight.sizes();
  if (ws[0] % groups != 0) return std::nullopt;
  const int64_t in_channels = input.size(1);
  const int64_t out_channels = transposed ? ws[1] * groups : ws[0];
  if (in_channels != (transposed ? ws[0] : ws[1] * groups)) return std::nullopt;
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != out_channels)) return std::nullopt;

  Conv c;
  c.transposed = transposed;
  c.one_d = n == 1;
  c.bias = bias.defined();
  c.groups = groups;
  const int64_t N = input.size(0);
  c.src = {N, in_channels, c.one_d ? 1 : input.size(2), input.size(k - 1)};
  c.dst = {N, out_channels};
  c.out_sizes = {N, out_channels};
  for (int64_t i = 0; i < 2; ++i) {
    // spatial dim i of the 2-d problem; the height of a 1-d one is a unit.
    const bool unit = c.one_d && i == 0;
    const auto u = static_cast<size_t>(c.one_d ? 0 : i);
    const int64_t in = c.src[static_cast<size_t>(2 + i)];
    const int64_t ker = unit ? 1 : ws[static_cast<size_t>(2 + u)];
    const int64_t st = unit ? 1 : (*s)[u], pad = unit ? 0 : (*p)[u], dil = unit ? 1 : (*d)[u];
    const int64_t opad = unit ? 0 : (*op)[u];
    const int64_t more = unit || extra.empty() ? 0 : extra[u];
    // Sizes past int64 and kernels larger than the padded input are the reference's to report.
    const std::optional<int64_t> size = ops::meta::try_conv_output_size(
        in, ker, st, pad, dil, transposed ? opad : more, transposed);
    if (!size || *size < 1) return std::nullopt;
    const int64_t out = *size;
    c.pad_r.push_back(transposed ? pad - opad : pad + more);  // output_padding: less on the right
    c.dst.push_back(out);
    if (!unit) c.out_sizes.push_back(out);
    c.strides.push_back(st);
    c.dilates.push_back(dil - 1);
    c.pad_l.push_back(pad);
  }
  if (!ops::meta::result_numel_fits(c.out_sizes, input.dtype())) return std::nullopt;
  const int64_t kH = c.one_d ? 1 : ws[2], kW = ws[k - 1];
  const int64_t oc = out_channels / groups, ic = in_channels / groups;
  c.weights = groups == 1 ? memory::dims{out_channels, in_channels, kH, kW}
                          : memory::dims{groups, oc, ic, kH, kW};
  return c;
}

/// The 4-d view of an activation of c (1-d gets its unit height).
Tensor four_d(const Conv& c, const Tensor& t) { return c.one_d ? unsqueeze_view(t, 2) : t; }

/// Weight w of c (Loom's layout: [OC, IC/G, k...], transposed [IC, OC/G, k...]) viewed with
/// oneDNN's dims and order (c.weights), any strides.
Tensor onednn_weight_view(const Conv& c, const Tensor& w) {
  const Tensor w4 = four_d(c, w);
  const int64_t a = w4.size(0), b = w4.size(1), kh = w4.size(2), kw = w4.size(3);
  const int64_t s0 = w4.stride(0), s1 = w4.stride(1), s2 = w4.stride(2), s3 = w4.stride(3);
  const int64_t g = c.groups, off = w4.storage_offset();
  if (!c.transposed) {
    if (g == 1) return w4;
    return w4.as_strided_view({g, a / g, b, kh, kw}, {a / g * s0, s0, s1, s2, s3}, off);
  }
  if (g == 1) return w4.as_strided_view({b, a, kh, kw}, {s1, s0, s2, s3}, off);
  return w4.as_strided_view({g, b, a / g, kh, kw}, {a / g * s0, s1, s0, s2, s3}, off);
}

/// Note [Weight views]: cached_weight() knows a weight by its TensorImpl, and a 1-d or
/// grouped or transposed weight reaches oneDNN as a view in oneDNN's dims, a new TensorImpl
/// on every call. So the view is made once per weight and kept here, beside a reference to
/// the weight (which keeps the weight's address from being reused while the entry lives);
/// the view shares the weight's version counter, so an in-place update still invalidates the
/// reordered copy. At most kMaxViews entries; beyond that the map starts again.
Tensor cached_weight_view(const Conv& c, const Tensor& w) {
  if (!c.transposed && !c.one_d && c.groups == 1) return w;
  struct Entry {
    Tensor weight, view;
  };
  constexpr size_t kMaxViews = 64;
  static std::mutex mu;
  static auto* views = new std::unordered_map<std::string, Entry>();
  Key key("conv.weight_view");
  key.add(static_cast<int64_t>(reinterpret_cast<intptr_t>(w.impl())));
  key.add(static_cast<int64_t>(reinterpret_cast<intptr_t>(w.data_ptr())));
  key.add(w).add(int64_t{c.transposed}).add(c.groups);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = views->find(key.bytes()); it != views->end()) return it->second.view;
  if (views->size() >= kMaxViews) views->clear();
  Tensor view = onednn_weight_view(c, w);
  views->emplace(key.bytes(), Entry{w, view});
  return view;
}

// ---- memory ----

/// A channels-last descriptor of dims.
memory::desc nhwc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, Tag::nhwc);
}

/// Copies from into to (any layouts) with a reorder primitive from the primitive cache
/// (creating one costs tens of microseconds, a few per convolution call).
void cached_reorder(const memory& from, const memory& to) {
  const memory::desc fd = from.get_desc(), td = to.get_desc();
  Key key("conv.reorder");
  key.add_bytes(&fd.data, sizeof fd.data).add_bytes(&td.data, sizeof td.data);
  const auto p = cached(key, [&] {
    const dnnl::reorder::primitive_desc pd(engine(), fd, engine(), td);
    return CachedPrimitive{dnnl::reorder(pd), pd, nullptr};
  });
  execute(p->primitive, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

/// Float32 memory of desc over a new buffer from Loom's allocator, and the tensor owning it.
/// Temporaries come from there because it keeps large blocks: fresh memory from the system
/// would page-fault on every call, which costs here about as much as the reorder itself.
struct Buffer {
  explicit Buffer(const memory::desc& desc)
      : owner(Tensor::empty({static_cast<int64_t>((desc.get_size() + 3) / 4)},
                            TensorOptions{}.with(DType::Float32))),
        mem(desc, engine(), owner.data_ptr()) {}
  Buffer(Tensor t, memory m) : owner(std::move(t)), mem(std::move(m)) {}
  Tensor owner;
  memory mem;
};

/// True when t4's data is laid out as want says (t4's own memory can be used as it).
bool laid_out_as(const Tensor& t4, const memory::desc& want) {
  // Size-1 dims may carry any stride, so is_channels_last rather than comparing descriptors.
  if (want.dims().size() == 4 && want == nhwc(want.dims())) return is_channels_last(t4);
  return desc_of(t4) == want;
}

/// Activation t4 (4-d) as memory of layout want: its own when laid out so, else a reordered
/// copy.
Buffer in_layout(const Tensor& t4, const memory::desc& want) {
  if (laid_out_as(t4, want)) return Buffer(t4, memory_of(t4, want));
  Buffer copy(want);
  cached_reorder(memory_of(t4), copy.mem);
  return copy;
}

/// Whether c's results (output, grad_input) are channels-last: when the input or the weight
/// suggests channels-last (Note [Memory format] in loom/ops/nn/memory_format.h), as in
/// PyTorch, so a model converted with Module::to(MemoryFormat::ChannelsLast) runs channels-last
/// from a 1-channel image on.
bool keeps_channels_last(const Conv& c, const Tensor& input, const Tensor& weight) {
  return !c.one_d && (suggests_channels_last(input) || suggests_channels_last(weight));
}

/// A new result tensor of sizes (at the op's rank), channels-last or contiguous.
Tensor new_result(IntArrayRef sizes, bool channels_last) {
  return channels_last ? empty_channels_last(sizes, DType::Float32)
                       : Tensor::empty(sizes, TensorOptions{}.with(DType::Float32));
}

/// The memory a primitive writes result tensor (4-d view t4) through, in layout want: the
/// tensor's own when laid out so, else a buffer that finish() reorders into the tensor.
struct Output {
  Output(const Tensor& t4, const memory::desc& want)
      : view(t4), buffer(laid_out_as(t4, want) ? Buffer(t4, memory_of(t4, want)) : Buffer(want)) {}
  /// Copies the buffer into the tensor (when there is one).
  void finish() {
    if (!buffer.owner.is_same(view)) cached_reorder(buffer.mem, memory_of(view));
  }
  Tensor view;
  Buffer buffer;
};

/// Primitive attributes: the scratchpad is the caller's (a buffer per thread), so one cached
/// primitive can run on several threads at once.
dnnl::primitive_attr attributes() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// This thread's scratchpad, at least as large as pd wants (page-aligned, kept between calls).
memory scratchpad(const dnnl::primitive_desc_base& pd) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> buffer;
  thread_local size_t capacity = 0;
  const memory::desc want = pd.scratchpad_desc();
  if (want.get_size() > capacity) {
    constexpr size_t kAlign = 4096;
    capacity = (want.get_size() + kAlign - 1) / kAlign * kAlign;
    buffer.reset(std::aligned_alloc(kAlign, capacity));
    if (!buffer) throw std::bad_alloc();
  }
  return memory(want, engine(), buffer.get());
}

memory::desc any(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, Tag::any);
}
/// The activations' layout in c's primitives: nhwc, or the one oneDNN prefers (blocked).
memory::desc act(const Conv& c, const memory::dims& dims) {
  return c.blocked ? any(dims) : nhwc(dims);
}
memory::desc bias_desc(const Conv& c, bool with_bias) {
  return with_bias ? memory::desc({c.dst[1]}, memory::data_type::f32, Tag::x) : memory::desc();
}

// ---- primitives ----

/// The oneDNN primitives of a plain convolution and of a transposed one (deconvolution),
/// whose descriptors are built alike.
struct Plain {
  using Fwd = dnnl::convolution_forward;
  using BwdData = dnnl::convolution_backward_data;
  using BwdWeights = dnnl::convolution_backward_weights;
  static constexpr dnnl::algorithm kAlgorithm = dnnl::algorithm::convolution_direct;
};
struct Transposed {
  using Fwd = dnnl::deconvolution_forward;
  using BwdData = dnnl::deconvolution_backward_data;
  using BwdWeights = dnnl::deconvolution_backward_weights;
  static constexpr dnnl::algorithm kAlgorithm = dnnl::algorithm::deconvolution_direct;
};

/// The forward primitive descriptor of c (also the hint of the backward ones).
template <typename K>
typename K::Fwd::primitive_desc fwd_pd(const Conv& c, bool with_bias) {
  typename K::Fwd::desc d(dnnl::prop_kind::forward_training, K::kAlgorithm, act(c, c.src),
                          any(c.weights), bias_desc(c, with_bias), act(c, c.dst), c.strides,
                          c.dilates, c.pad_l, c.pad_r);
  return typename K::Fwd::primitive_desc(d, attributes(), engine());
}

template <typename K>
CachedPrimitive make_forward(const Conv& c) {
  const auto pd = fwd_pd<K>(c, c.bias);
  return CachedPrimitive{typename K::Fwd(pd), pd, nullptr};
}

template <typename K>
CachedPrimitive make_backward_data(const Conv& c) {
  typename K::BwdData::desc d(K::kAlgorithm, act(c, c.src), any(c.weights), act(c, c.dst),
                              c.strides, c.dilates, c.pad_l, c.pad_r);
  const typename K::BwdData::primitive_desc pd(d, attributes(), engine(), fwd_pd<K>(c, false));
  return CachedPrimitive{typename K::BwdData(pd), pd, nullptr};
}

template <typename K>
CachedPrimitive make_backward_weights(const Conv& c, bool with_bias) {
  typename K::BwdWeights::desc d(K::kAlgorithm, act(c, c.src), any(c.weights),
                                 bias_desc(c, with_bias), act(c, c.dst), c.strides, c.dilates,
                                 c.pad_l, c.pad_r);
  const typename K::BwdWeights::primitive_desc pd(d, attributes(), engine(),
                                                  fwd_pd<K>(c, with_bias));
  return CachedPrimitive{typename K::BwdWeights(pd), pd, nullptr};
}

std::shared_ptr<const CachedPrimitive> forward_primitive(const Conv& c) {
  Key key("conv.fwd");
  c.add_to(key);
  return cached(
      key, [&] { return c.transposed ? make_forward<Transposed>(c) : make_forward<Plain>(c); });
}

std::shared_ptr<const CachedPrimitive> backward_data_primitive(const Conv& c) {
  Key key("conv.bwd_data");
  c.add_to(key);
  return cached(key, [&] {
    return c.transposed ? make_backward_data<Transposed>(c) : make_backward_data<Plain>(c);
  });
}

std::shared_ptr<const CachedPrimitive> backward_weights_primitive(const Conv& c, bool with_bias) {
  Key key("conv.bwd_weights");
  c.add_to(key);
  key.add(int64_t{with_bias});
  return cached(key, [&] {
    return c.transposed ? make_backward_weights<Transposed>(c, with_bias)
                        : make_backward_weights<Plain>(c, with_bias);
  });
}

// ---- the computations ----

/// Runs c's forward primitive on whole memory (src and dst in the primitive's layouts).
void run_forward(const Conv& c, const CachedPrimitive& p, const memory& src, const memory& dst,
                 const Tensor& weight, const Tensor& bias) {
  const dnnl::primitive_desc_base& pd = p.pd;
  Args args{{DNNL_ARG_SRC, src},
            {DNNL_ARG_WEIGHTS, cached_weight(cached_weight_view(c, weight), pd.weights_desc())},
            {DNNL_ARG_DST, dst},
            {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  if (c.bias) args.emplace(DNNL_ARG_BIAS, as_layout(bias, pd.weights_desc(1)));
  execute(p.primitive, args);
}

Tensor forward(const Conv& c, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  const auto p = forward_primitive(c);
  const Tensor out = new_result(c.out_sizes, keeps_channels_last(c, input, weight));
  const Buffer src = in_layout(four_d(c, input), p->pd.src_desc());
  Output dst(four_d(c, out), p->pd.dst_desc());
  run_forward(c, *p, src.mem, dst.buffer.mem, weight, bias);
  dst.finish();
  return out;
}

/// The backward of c. An input that is not channels-last runs in oneDNN's preferred
/// (blocked) layout, whose weight gradient is faster here than nhwc's (same reorders).
std::tuple<Tensor, Tensor, Tensor> backward(const Conv& conv, const Tensor& grad_output,
                                            const Tensor& input, const Tensor& weight,
                                            const std::vector<bool>& mask) {
  Conv c = conv;
  const Tensor in4 = four_d(c, input), go4 = four_d(c, grad_output);
  c.blocked = !is_channels_last(in4);
  std::optional<Buffer> go;  // grad_output in the layout of the last primitive that took it
  const auto grad_output_as = [&](const memory::desc& want) -> const memory& {
    if (!go || go->mem.get_desc() != want) go.emplace(in_layout(go4, want));
    return go->mem;
  };
  Tensor grad_input, grad_weight, grad_bias;
  if (mask[0]) {
    const auto p = backward_data_primitive(c);
    const dnnl::primitive_desc_base& pd = p->pd;
    grad_input = new_result(input.sizes(), keeps_channels_last(c, input, weight));
    Output gi(four_d(c, grad_input), pd.diff_src_desc());
    execute(p->primitive,
            {{DNNL_ARG_DIFF_DST, grad_output_as(pd.diff_dst_desc())},
             {DNNL_ARG_WEIGHTS, cached_weight(cached_weight_view(c, weight), pd.weights_desc())},
             {DNNL_ARG_DIFF_SRC, gi.buffer.mem},
             {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}});
    gi.finish();
  }
  if (mask[1] || mask[2]) {
    // The bias's gradient comes with the weight's (a weight gradient nobody asked for is
    // computed and dropped: the bias alone is rarely wanted).
    const auto p = backward_weights_primitive(c, mask[2]);
    const dnnl::primitive_desc_base& pd = p->pd;
    // The weight's gradient in the weight's layout (PyTorch's), so that an optimizer step
    // sees the parameter and its gradient laid out alike.
    const Tensor gw = new_result(weight.sizes(), !c.one_d && suggests_channels_last(weight));
    const Tensor gw_view = onednn_weight_view(c, gw);
    Output gw_out(gw_view, pd.diff_weights_desc());
    const Buffer src = in_layout(in4, pd.src_desc());
    Args args{{DNNL_ARG_SRC, src.mem},
              {DNNL_ARG_DIFF_DST, grad_output_as(pd.diff_dst_desc())},
              {DNNL_ARG_DIFF_WEIGHTS, gw_out.buffer.mem},
              {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
    const Tensor gb =
        mask[2] ? Tensor::empty({c.dst[1]}, TensorOptions{}.with(DType::Float32)) : Tensor();
    std::optional<Output> gb_out;
    if (mask[2]) {
      gb_out.emplace(gb, pd.diff_weights_desc(1));
      args.emplace(DNNL_ARG_DIFF_BIAS, gb_out->buffer.mem);
    }
    execute(p->primitive, args);
    if (mask[1]) {
      gw_out.finish();
      grad_weight = gw;
    }
    if (mask[2]) {
      gb_out->finish();
      grad_bias = gb;
    }
  }
  return {grad_input, grad_weight, grad_bias};
}

// ---- the registered kernels ----

Tensor bias_of(const std::optional<Tensor>& bias) {
  return bias && bias->defined() ? *bias : Tensor();
}

using ConvolutionSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                              IntArrayRef, IntArrayRef, IntArrayRef, bool, IntArrayRef, int64_t);

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  static const auto op = onednn::op<ConvolutionSig>("aten::convolution");
  const Tensor b = bias_of(bias);
  if (const auto c =
          plan(input, weight, b, stride, padding, dilation, transposed, output_padding, groups)) {
    try {
      return forward(*c, input, weight, b);
    } catch (const dnnl::error&) {
      // No oneDNN implementation for this case: the reference computes it.
    }
  }
  return op.call_next_provider(kCPU, input, weight, bias, stride, padding, dilation, transposed,
                               output_padding, groups);
}

/// conv1d / conv2d / conv_transpose*: a batched or unbatched input of `spatial` dims; nullopt
/// when the call is not taken.
std::optional<Tensor> conv_nd(int64_t spatial, const Tensor& input, const Tensor& weight,
                              const std::optional<Tensor>& bias, IntArrayRef stride,
                              IntArrayRef padding, IntArrayRef dilation, bool transposed,
                              IntArrayRef output_padding, int64_t groups) {
  if (!input.defined() || !weight.defined() || weight.dim() != spatial + 2) return std::nullopt;
  if (input.dim() != spatial + 1 && input.dim() != spatial + 2) return std::nullopt;
  const bool batched = input.dim() == spatial + 2;
  const Tensor in = batched ? input : unsqueeze_view(input, 0);
  const Tensor b = bias_of(bias);
  const auto c = plan(in, weight, b, stride, padding, dilation, transposed, output_padding, groups);
  if (!c) return std::nullopt;
  try {
    const Tensor out = forward(*c, in, weight, b);
    return batched ? out : squeeze_view(out, 0);
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

using ConvNdSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                         IntArrayRef, IntArrayRef, int64_t);

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  static const auto op = onednn::op<ConvNdSig>("aten::conv1d");
  if (auto out = conv_nd(1, input, weight, bias, stride, padding, dilation, false, {0}, groups))
    return *out;
  return op.call_next_provider(kCPU, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  static const auto op = onednn::op<ConvNdSig>("aten::conv2d");
  if (auto out = conv_nd(2, input, weight, bias, stride, padding, dilation, false, {0}, groups))
    return *out;
  return op.call_next_provider(kCPU, input, weight, bias, stride, padding, dilation, groups);
}

using ConvPaddingSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                              IntArrayRef, std::string_view, IntArrayRef, int64_t);

/// conv1d.padding / conv2d.padding: 'valid' is no padding; 'same' (stride 1) pads each side by
/// half the dilated kernel extent, the odd element on the right/bottom (oneDNN pads unevenly,
/// so this is one convolution). nullopt when the call is not taken.
std::optional<Tensor> conv_padding_nd(int64_t spatial, const Tensor& input, const Tensor& weight,
                                      const std::optional<Tensor>& bias, IntArrayRef stride,
                                      std::string_view mode, IntArrayRef dilation, int64_t groups) {
  if (!input.defined() || !weight.defined() || weight.dim() != spatial + 2) return std::nullopt;
  if (input.dim() != spatial + 1 && input.dim() != spatial + 2) return std::nullopt;
  std::vector<int64_t> left(static_cast<size_t>(spatial), 0), extra(left);
  if (mode == "same") {
    const auto s = expand(stride, spatial), d = expand(dilation, spatial);
    if (!s || !d) return std::nullopt;
    for (int64_t i = 0; i < spatial; ++i) {
      const auto u = static_cast<size_t>(i);
      if ((*s)[u] != 1 || (*d)[u] < 1) return std::nullopt;
      const int64_t total = (*d)[u] * (weight.size(i + 2) - 1);
      left[u] = total / 2;
      extra[u] = total - 2 * left[u];
    }
  } else if (mode != "valid") {
    return std::nullopt;
  }
  const bool batched = input.dim() == spatial + 2;
  const Tensor in = batched ? input : unsqueeze_view(input, 0);
  const Tensor b = bias_of(bias);
  const auto c = plan(in, weight, b, stride, left, dilation, false, {0}, groups, extra);
  if (!c) return std::nullopt;
  try {
    const Tensor out = forward(*c, in, weight, b);
    return batched ? out : squeeze_view(out, 0);
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

Tensor conv1d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  static const auto op = onednn::op<ConvPaddingSig>("aten::conv1d.padding");
  if (auto out = conv_padding_nd(1, input, weight, bias, stride, padding, dilation, groups))
    return *out;
  return op.call_next_provider(kCPU, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  static const auto op = onednn::op<ConvPaddingSig>("aten::conv2d.padding");
  if (auto out = conv_padding_nd(2, input, weight, bias, stride, padding, dilation, groups))
    return *out;
  return op.call_next_provider(kCPU, input, weight, bias, stride, padding, dilation, groups);
}

using ConvTransposeSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                IntArrayRef, IntArrayRef, IntArrayRef, int64_t, IntArrayRef);

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  static const auto op = onednn::op<ConvTransposeSig>("aten::conv_transpose1d");
  if (auto out =
          conv_nd(1, input, weight, bias, stride, padding, dilation, true, output_padding, groups))
    return *out;
  return op.call_next_provider(kCPU, input, weight, bias, stride, padding, output_padding, groups,
                               dilation);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  static const auto op = onednn::op<ConvTransposeSig>("aten::conv_transpose2d.input");
  if (auto out =
          conv_nd(2, input, weight, bias, stride, padding, dilation, true, output_padding, groups))
    return *out;
  return op.call_next_provider(kCPU, input, weight, bias, stride, padding, output_padding, groups,
                               dilation);
}

using BackwardSig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                       std::optional<IntArrayRef>, IntArrayRef,
                                                       IntArrayRef, IntArrayRef, bool, IntArrayRef,
                                                       int64_t, const std::vector<bool>&);

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output,
                                                        const Tensor& input, const Tensor& weight,
                                                        std::optional<IntArrayRef> bias_sizes,
                                                        IntArrayRef stride, IntArrayRef padding,
                                                        IntArrayRef dilation, bool transposed,
                                                        IntArrayRef output_padding, int64_t groups,
                                                        const std::vector<bool>& output_mask) {
  static const auto op = onednn::op<BackwardSig>("aten::convolution_backward");
  const bool wanted =
      output_mask.size() == 3 && (output_mask[0] || output_mask[1] || output_mask[2]);
  if (wanted && grad_output.defined() && takes({grad_output, input, weight})) {
    const auto c = plan(input, weight, Tensor(), stride, padding, dilation, transposed,
                        output_padding, groups);
    if (c && grad_output.sizes() == IntArrayRef(c->out_sizes)) {
      try {
        return backward(*c, grad_output, input, weight, output_mask);
      } catch (const dnnl::error&) {
        // No oneDNN implementation for this case: the reference computes it.
      }
    }
  }
  return op.call_next_provider(kCPU, grad_output, input, weight, bias_sizes, stride, padding,
                               dilation, transposed, output_padding, groups, output_mask);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
  m.impl("convolution", &convolution);
  m.impl("convolution_backward", &convolution_backward);
  m.impl("conv1d", &conv1d);
  m.impl("conv2d", &conv2d);
  m.impl("conv1d.padding", &conv1d_padding);
  m.impl("conv2d.padding", &conv2d_padding);
  m.impl("conv_transpose1d", &conv_transpose1d);
  m.impl("conv_transpose2d.input", &conv_transpose2d);
}

}  // namespace loom::onednn
