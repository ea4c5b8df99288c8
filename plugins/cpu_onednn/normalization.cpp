// oneDNN kernels of the normalization family: native_batch_norm (training and evaluation),
// native_batch_norm_backward, native_layer_norm and native_layer_norm_backward. The outputs
// are the reference's (ops/nn/cpu/normalization.cpp): save_mean / save_invstd are [C] in
// training and empty [0] in evaluation, layer norm's mean / rstd have the input's leading
// sizes and a 1 per normalized dim, the running statistics are updated with momentum and
// the unbiased variance, gradients are undefined where output_mask says so.
//
// oneDNN computes statistics as mean and (biased) variance, the reference saves the inverse
// standard deviation 1 / sqrt(var + eps). The forward turns one into the other per channel
// (or row); the backward ops get no eps (layer norm) or are given the inverse standard
// deviation, so they hand oneDNN var = 1 / invstd^2 with an epsilon of 0, which gives back
// the saved invstd exactly up to rounding.
//
// Taken: float32 inputs of 4 or 5 dims (batch norm: channels-last ones as they are, with
// channels-last results; others through oneDNN's blocked nChw16c and back, except in the
// evaluation forward, see takes_batch_norm_input) or of any dims (layer norm, which runs on
// a contiguous [rows, normalized] view), weight, bias and statistics 1-D contiguous float32
// of the right size (layer norm: of normalized_shape), big enough to win (kMinElements).
// Every other call, malformed ones included, goes to the reference. A taken batch norm is
// still checked with the shared meta functions (loom/ops/nn/meta/normalization.h), which
// raise the reference's message for the one malformed call the takes-tests let through: a
// training input with one value per channel.
#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include "loom/dispatcher/library.h"
#include "loom/ops/nn/memory_format.h"
#include "loom/ops/nn/meta/normalization.h"
#include "loom/ops/tensor_methods.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::memory;
using dnnl::normalization_flags;
using dnnl::prop_kind;
using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;

/// Measured here (2 cores, AVX-512, one thread; onednn / reference, DISABLED_Timing in
/// tests/plugins/cpu_onednn/normalization_test.cpp):
///   batch norm, channels-last: [32, 64, 56, 56] training 2.4 / 12.6 ms, evaluation
///   0.94 / 8.8 ms, backward 7.7 / 16.4 ms; [2, 16, 8, 8] training 3.6 / 6.6 us, backward
///   6.7 / 7.6 us.
///   batch norm, NCHW: oneDNN's own NCHW kernel is slower than the reference at every size
///   ([32, 64, 56, 56] training 10.4 / 8.3 ms), its blocked nChw16c kernel is fast, and
///   reordering in and out pays off in a middle band: [8, 64, 28, 28] training 207 / 284 us,
///   backward 249 / 566 us; [16, 64, 4, 4] 13.8 / 16.0 and 19.5 / 25.3 us. Below, the fixed
///   costs lose ([4, 16, 8, 8] training 8.9 / 4.8 us); above, the reorders through fresh
///   buffers ([32, 64, 56, 56] training 6.6 / 6.3 ms, backward 13.9 / 10.9 ms) do; the
///   evaluation forward never wins (2.5 / 2.4 ms, 150 / 151 us).
///   layer norm: [64, 128, 768] 2.1 / 5.9 ms forward, 3.8 / 33 ms backward; [16, 256]
///   3.1 / 5.2 us; [8, 64] 1.6 / 1.6 us.
constexpr int64_t kMinElements = 4096;           // layer norm
constexpr int64_t kMinBatchNormElements = 1024;  // batch norm, channels-last
constexpr int64_t kMinBlockedElements = 16384;   // batch norm, NCHW, through nChw16c
constexpr int64_t kMaxBlockedElements = int64_t{1} << 21;

const Tensor& or_none(const std::optional<Tensor>& t) {
  static const Tensor none;
  return t ? *t : none;
}

bool present(const std::optional<Tensor>& t) { return t && t->defined(); }

/// True when t is absent or a contiguous 1-D tensor of n elements.
bool vector_or_absent(const std::optional<Tensor>& t, int64_t n) {
  return !present(t) || (t->dim() == 1 && t->size(0) == n && t->is_contiguous());
}

memory::desc vector_desc(int64_t n) {
  return memory::desc({n}, memory::data_type::f32, memory::format_tag::x);
}

/// A memory over t (a contiguous float32 vector of n), or over fill (n copies of value)
/// when t is absent.
memory vector_memory(const std::optional<Tensor>& t, int64_t n, float value,
                     std::vector<float>& fill) {
  if (present(t)) return memory(vector_desc(n), engine(), t->data_ptr());
  fill.assign(static_cast<size_t>(n), value);
  return memory(vector_desc(n), engine(), fill.data());
}

/// A new float32 tensor of x's sizes: channels-last when x suggests it (Note [Memory format]
/// in loom/ops/nn/memory_format.h), else contiguous.
Tensor new_like(const Tensor& x) {
  if (suggests_channels_last(x)) {
    return empty_channels_last(x.sizes(), DType::Float32);
  }
  return Tensor::empty(x.sizes(), TensorOptions{}.with(DType::Float32));
}

Tensor new_vector(IntArrayRef sizes) {
  return Tensor::empty(sizes, TensorOptions{}.with(DType::Float32));
}

const normalization_flags kScaleShift =
    normalization_flags::use_scale | normalization_flags::use_shift;

// ---- batch norm ----

struct BatchNorm {
  dnnl::batch_normalization_forward::primitive_desc fwd_pd;
  dnnl::batch_normalization_forward fwd;
  dnnl::batch_normalization_backward::primitive_desc bwd_pd;
  dnnl::batch_normalization_backward bwd;
};

/// The cached batch norm primitives for data md: the forward (training: computes the
/// statistics; global: uses the given ones), and the backward when asked. The backward is
/// always of kind `backward` (with the weight's and bias's gradients): oneDNN 2.6 takes
/// backward_data only without a scale, which would leave the weight out of grad_input.
std::shared_ptr<const BatchNorm> batch_norm_prims(const memory::desc& md, float eps, bool global,
                                                  bool backward) {
  Key key("bnorm");
  key.add_bytes(&md.data, sizeof md.data).add(static_cast<double>(eps));
  key.add(int64_t{global}).add(int64_t{backward});
  auto entry = cached(key, [&] {
    const normalization_flags flags =
        global ? kScaleShift | normalization_flags::use_global_stats : kScaleShift;
    auto bn = std::make_shared<BatchNorm>();
    const prop_kind fwd_kind =
        global && !backward ? prop_kind::forward_inference : prop_kind::forward_training;
    bn->fwd_pd =
        dnnl::batch_normalization_forward::primitive_desc({fwd_kind, md, eps, flags}, engine());
    bn->fwd = dnnl::batch_normalization_forward(bn->fwd_pd);
    if (backward) {
      bn->bwd_pd = dnnl::batch_normalization_backward::primitive_desc(
          {prop_kind::backward, md, md, eps, flags}, engine(), bn->fwd_pd);
      bn->bwd = dnnl::batch_normalization_backward(bn->bwd_pd);
    }
    return CachedPrimitive{bn->fwd, bn->fwd_pd, bn};
  });
  return std::static_pointer_cast<const BatchNorm>(entry->extra);
}

/// True when x is dense channels-last and suggests it (a [N, 1, H, W] tensor is both NCHW and
/// NHWC; it follows its strides).
bool is_nhwc(const Tensor& x) { return is_channels_last(x) && suggests_channels_last(x); }

/// True when oneDNN's batch norm of input (4-D or 5-D) beats the reference. oneDNN has no
/// fast kernel for 2-D and 3-D inputs (its reference loop runs, or ncsp_bnorm, slower than
/// ours) nor for NCHW, but a fast one for channels-last and for the blocked nChw16c.
/// Channels-last inputs run as they are; others are reordered into nChw16c and the result
/// back, which wins in training (forward and backward) for mid-sized inputs only and never
/// in the evaluation forward (see kMinElements).
bool takes_batch_norm_input(const Tensor& input, bool forward_eval) {
  if (input.dim() < 4 || input.dim() > 5) return false;
  if (is_nhwc(input)) return input.numel() >= kMinBatchNormElements;
  return !forward_eval && input.numel() >= kMinBlockedElements &&
         input.numel() <= kMaxBlockedElements;
}

/// The layout batch norm of x runs in: x's own when channels-last, else nChw16c (nCdhw16c).
memory::desc compute_desc(const Tensor& x) {
  if (is_nhwc(x)) return desc_of(x);
  return desc_of(x, x.dim() == 4 ? memory::format_tag::nChw16c : memory::format_tag::nCdhw16c);
}

/// A memory for a result in layout md, to be written into t (t's own when laid out so).
memory result_memory(const Tensor& t, const memory::desc& md) {
  return desc_of(t) == md ? memory_of(t, md) : memory(md, engine());
}

/// Copies m into t when m is not t's own memory.
void store_result(const memory& m, const Tensor& t) {
  if (m.get_data_handle() != t.data_ptr()) reorder(m, memory_of(t));
}

Tensor3 native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias,
                          const std::optional<Tensor>& running_mean,
                          const std::optional<Tensor>& running_var, bool training, double momentum,
                          double eps) {
  static const auto op =
      onednn::op<Tensor3(const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&,
                         const std::optional<Tensor>&, const std::optional<Tensor>&, bool, double,
                         double)>("aten::native_batch_norm");
  const int64_t C = input.defined() && input.dim() >= 2 ? input.size(1) : 0;
  const bool ok =
      input.defined() &&
      takes({input, or_none(weight), or_none(bias), or_none(running_mean), or_none(running_var)}) &&
      takes_batch_norm_input(input, !training) && vector_or_absent(weight, C) &&
      vector_or_absent(bias, C) && vector_or_absent(running_mean, C) &&
      vector_or_absent(running_var, C) &&
      (training || (present(running_mean) && present(running_var)));
  if (!ok) {
    return op.call_next_provider(kCPU, input, weight, bias, running_mean, running_var, training,
                                 momentum, eps);
  }
  // What `ok` does not cover: one value per channel in training, which oneDNN would turn into
  // a zero output and a 0 / 0 running variance.
  loom::ops::meta::check_native_batch_norm(input, weight, bias, running_mean, running_var,
                                           training);
  const memory::desc md = compute_desc(input);
  const auto bn = batch_norm_prims(md, static_cast<float>(eps), !training, false);
  Tensor out = new_like(input);
  const memory dst = result_memory(out, md);
  std::vector<float> ones, zeros, variance;
  Tensor mean;
  Args args{{DNNL_ARG_SRC, as_layout(input, md)},
            {DNNL_ARG_DST, dst},
            {DNNL_ARG_SCALE, vector_memory(weight, C, 1.f, ones)},
            {DNNL_ARG_SHIFT, vector_memory(bias, C, 0.f, zeros)}};
  if (training) {
    mean = new_vector({C});
    variance.resize(static_cast<size_t>(C));
    args[DNNL_ARG_MEAN] = memory(vector_desc(C), engine(), mean.data_ptr());
    args[DNNL_ARG_VARIANCE] = memory(vector_desc(C), engine(), variance.data());
  } else {
    args[DNNL_ARG_MEAN] = memory(vector_desc(C), engine(), running_mean->data_ptr());
    args[DNNL_ARG_VARIANCE] = memory(vector_desc(C), engine(), running_var->data_ptr());
  }
  execute(bn->fwd, args);
  store_result(dst, out);
  if (!training) return {out, new_vector({0}), new_vector({0})};

  Tensor invstd = new_vector({C});
  const float* m = static_cast<const float*>(mean.data_ptr());
  float* is = static_cast<float*>(invstd.data_ptr());
  for (int64_t c = 0; c < C; ++c) is[c] = static_cast<float>(1.0 / std::sqrt(variance[c] + eps));
  // The running statistics as the reference updates them: the unbiased variance.
  const auto count = static_cast<double>(input.numel() / C);
  if (present(running_mean)) {
    float* rm = static_cast<float*>(running_mean->data_ptr());
    for (int64_t c = 0; c < C; ++c)
      rm[c] = static_cast<float>(momentum * m[c] + (1 - momentum) * rm[c]);
    running_mean->bump_version();
  }
  if (present(running_var)) {
    float* rv = static_cast<float*>(running_var->data_ptr());
    for (int64_t c = 0; c < C; ++c) {
      rv[c] = static_cast<float>(momentum * (variance[c] * count / (count - 1)) +
                                 (1 - momentum) * rv[c]);
    }
    running_var->bump_version();
  }
  return {out, mean, invstd};
}

Tensor3 native_batch_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& running_mean,
                                   const std::optional<Tensor>& running_var,
                                   const std::optional<Tensor>& save_mean,
                                   const std::optional<Tensor>& save_invstd, bool train, double eps,
                                   const std::vector<bool>& output_mask) {
  static const auto op = onednn::op<Tensor3(
      const Tensor&, const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&,
      const std::optional<Tensor>&, const std::optional<Tensor>&, const std::optional<Tensor>&,
      bool, double, const std::vector<bool>&)>("aten::native_batch_norm_backward");
  const int64_t C = input.defined() && input.dim() >= 2 ? input.size(1) : 0;
  const std::optional<Tensor>& mean_t = train ? save_mean : running_mean;
  const std::optional<Tensor>& stat_t = train ? save_invstd : running_var;
  const bool ok = grad_out.defined() && input.defined() && output_mask.size() == 3 &&
                  (output_mask[0] || output_mask[1] || output_mask[2]) &&
                  takes({grad_out, input, or_none(weight), or_none(mean_t), or_none(stat_t)}) &&
                  takes_batch_norm_input(input, false) && grad_out.sizes() == input.sizes() &&
                  vector_or_absent(weight, C) && present(mean_t) && present(stat_t) &&
                  vector_or_absent(mean_t, C) && vector_or_absent(stat_t, C);
  if (!ok) {
    return op.call_next_provider(kCPU, grad_out, input, weight, running_mean, running_var,
                                 save_mean, save_invstd, train, eps, output_mask);
  }
  // Training: the saved invstd as a variance with epsilon 0 (see the top of the file).
  std::vector<float> variance;
  memory var_mem;
  if (train) {
    variance.resize(static_cast<size_t>(C));
    const float* is = static_cast<const float*>(save_invstd->data_ptr());
    for (int64_t c = 0; c < C; ++c) {
      variance[c] = static_cast<float>(1.0 / (static_cast<double>(is[c]) * is[c]));
    }
    var_mem = memory(vector_desc(C), engine(), variance.data());
  } else {
    var_mem = memory(vector_desc(C), engine(), running_var->data_ptr());
  }
  const memory::desc md = compute_desc(input);
  const auto bn = batch_norm_prims(md, train ? 0.f : static_cast<float>(eps), !train, true);
  Tensor grad_input = new_like(input);
  const memory diff_src = result_memory(grad_input, md);
  std::vector<float> ones, zeros;
  Args args{{DNNL_ARG_SRC, as_layout(input, md)},
            {DNNL_ARG_DIFF_DST, as_layout(grad_out, md)},
            {DNNL_ARG_MEAN, memory(vector_desc(C), engine(), mean_t->data_ptr())},
            {DNNL_ARG_VARIANCE, var_mem},
            {DNNL_ARG_SCALE, vector_memory(weight, C, 1.f, ones)},
            {DNNL_ARG_SHIFT, vector_memory(std::nullopt, C, 0.f, zeros)},
            {DNNL_ARG_DIFF_SRC, diff_src}};
  Tensor grad_weight = new_vector({C}), grad_bias = new_vector({C});
  args[DNNL_ARG_DIFF_SCALE] = memory(vector_desc(C), engine(), grad_weight.data_ptr());
  args[DNNL_ARG_DIFF_SHIFT] = memory(vector_desc(C), engine(), grad_bias.data_ptr());
  execute(bn->bwd, args);
  if (output_mask[0]) store_result(diff_src, grad_input);
  return {output_mask[0] ? grad_input : Tensor(), output_mask[1] ? grad_weight : Tensor(),
          output_mask[2] ? grad_bias : Tensor()};
}

// ---- layer norm ----

struct LayerNorm {
  dnnl::layer_normalization_forward::primitive_desc fwd_pd;
  dnnl::layer_normalization_forward fwd;
  dnnl::layer_normalization_backward::primitive_desc bwd_pd;
  dnnl::layer_normalization_backward bwd;
};

/// The cached layer norm primitives of M rows of N (the backward: of kind `backward`, as
/// batch norm's).
std::shared_ptr<const LayerNorm> layer_norm_prims(int64_t M, int64_t N, float eps, bool backward) {
  Key key("lnorm");
  key.add(M).add(N).add(static_cast<double>(eps)).add(int64_t{backward});
  auto entry = cached(key, [&] {
    const memory::desc md({M, N}, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc stat = vector_desc(M);
    auto ln = std::make_shared<LayerNorm>();
    ln->fwd_pd = dnnl::layer_normalization_forward::primitive_desc(
        {prop_kind::forward_training, md, stat, eps, kScaleShift}, engine());
    ln->fwd = dnnl::layer_normalization_forward(ln->fwd_pd);
    if (backward) {
      ln->bwd_pd = dnnl::layer_normalization_backward::primitive_desc(
          {prop_kind::backward, md, md, stat, eps, kScaleShift}, engine(), ln->fwd_pd);
      ln->bwd = dnnl::layer_normalization_backward(ln->bwd_pd);
    }
    return CachedPrimitive{ln->fwd, ln->fwd_pd, ln};
  });
  return std::static_pointer_cast<const LayerNorm>(entry->extra);
}

/// Rows and row length of a layer norm of input over normalized_shape, or {0, 0} when the
/// call is not one oneDNN takes (malformed ones included).
std::pair<int64_t, int64_t> layer_norm_rows(const Tensor& input, IntArrayRef normalized_shape,
                                            const std::optional<Tensor>& weight,
                                            const std::optional<Tensor>& bias) {
  const auto k = static_cast<int64_t>(normalized_shape.size());
  if (!input.defined() || k < 1 || input.dim() < k || input.numel() < kMinElements) return {0, 0};
  int64_t N = 1;
  for (int64_t i = 0; i < k; ++i) {
    if (input.size(input.dim() - k + i) != normalized_shape[i]) return {0, 0};
    N *= normalized_shape[i];
  }
  for (const auto* p : {&weight, &bias}) {
    if (present(*p) && ((*p)->sizes() != normalized_shape || !(*p)->is_contiguous())) return {0, 0};
  }
  return {input.numel() / N, N};
}

Tensor3 native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          double eps) {
  static const auto op =
      onednn::op<Tensor3(const Tensor&, IntArrayRef, const std::optional<Tensor>&,
                         const std::optional<Tensor>&, double)>("aten::native_layer_norm");
  const auto [M, N] = layer_norm_rows(input, normalized_shape, weight, bias);
  if (M == 0 || !takes({input, or_none(weight), or_none(bias)})) {
    return op.call_next_provider(kCPU, input, normalized_shape, weight, bias, eps);
  }
  const Tensor x = input.is_contiguous() ? input : input.contiguous();
  const auto ln = layer_norm_prims(M, N, static_cast<float>(eps), false);
  const memory::desc md = ln->fwd_pd.src_desc();
  Tensor out = new_vector(input.sizes());
  const std::vector<int64_t> stat =
      loom::ops::meta::layer_norm_stat_sizes(input, normalized_shape.size());
  Tensor mean = new_vector(stat), rstd = new_vector(stat);
  std::vector<float> ones, zeros;
  execute(ln->fwd, {{DNNL_ARG_SRC, memory_of(x, md)},
                    {DNNL_ARG_DST, memory_of(out, md)},
                    {DNNL_ARG_SCALE, vector_memory(weight, N, 1.f, ones)},
                    {DNNL_ARG_SHIFT, vector_memory(bias, N, 0.f, zeros)},
                    {DNNL_ARG_MEAN, memory(vector_desc(M), engine(), mean.data_ptr())},
                    {DNNL_ARG_VARIANCE, memory(vector_desc(M), engine(), rstd.data_ptr())}});
  // The variance, written into rstd, becomes the reference's 1 / sqrt(var + eps).
  float* r = static_cast<float*>(rstd.data_ptr());
  for (int64_t i = 0; i < M; ++i) r[i] = static_cast<float>(1.0 / std::sqrt(r[i] + eps));
  return {out, mean, rstd};
}

Tensor3 native_layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   IntArrayRef normalized_shape, const Tensor& mean,
                                   const Tensor& rstd, const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& bias,
                                   const std::vector<bool>& output_mask) {
  static const auto op =
      onednn::op<Tensor3(const Tensor&, const Tensor&, IntArrayRef, const Tensor&, const Tensor&,
                         const std::optional<Tensor>&, const std::optional<Tensor>&,
                         const std::vector<bool>&)>("aten::native_layer_norm_backward");
  const auto [M, N] = layer_norm_rows(input, normalized_shape, weight, bias);
  const bool ok = M != 0 && grad_out.defined() && mean.defined() && rstd.defined() &&
                  output_mask.size() == 3 && (output_mask[0] || output_mask[1] || output_mask[2]) &&
                  takes({grad_out, input, mean, rstd, or_none(weight), or_none(bias)}) &&
                  grad_out.sizes() == input.sizes() && mean.numel() == M && rstd.numel() == M &&
                  mean.is_contiguous() && rstd.is_contiguous();
  if (!ok) {
    return op.call_next_provider(kCPU, grad_out, input, normalized_shape, mean, rstd, weight, bias,
                                 output_mask);
  }
  const auto ln = layer_norm_prims(M, N, 0.f, true);
  const memory::desc md = ln->bwd_pd.src_desc();
  const Tensor x = input.is_contiguous() ? input : input.contiguous();
  const Tensor g = grad_out.is_contiguous() ? grad_out : grad_out.contiguous();
  // rstd as a variance with epsilon 0 (see the top of the file).
  std::vector<float> variance(static_cast<size_t>(M));
  const float* r = static_cast<const float*>(rstd.data_ptr());
  for (int64_t i = 0; i < M; ++i) variance[i] = static_cast<float>(1.0 / (double{r[i]} * r[i]));
  Tensor grad_input = new_vector(input.sizes());
  std::vector<float> ones, zeros;
  Args args{{DNNL_ARG_SRC, memory_of(x, md)},
            {DNNL_ARG_DIFF_DST, memory_of(g, md)},
            {DNNL_ARG_MEAN, memory(vector_desc(M), engine(), mean.data_ptr())},
            {DNNL_ARG_VARIANCE, memory(vector_desc(M), engine(), variance.data())},
            {DNNL_ARG_SCALE, vector_memory(weight, N, 1.f, ones)},
            {DNNL_ARG_SHIFT, vector_memory(std::nullopt, N, 0.f, zeros)},
            {DNNL_ARG_DIFF_SRC, memory_of(grad_input, md)}};
  Tensor grad_weight = new_vector(normalized_shape), grad_bias = new_vector(normalized_shape);
  args[DNNL_ARG_DIFF_SCALE] = memory(vector_desc(N), engine(), grad_weight.data_ptr());
  args[DNNL_ARG_DIFF_SHIFT] = memory(vector_desc(N), engine(), grad_bias.data_ptr());
  execute(ln->bwd, args);
  return {output_mask[0] ? grad_input : Tensor(), output_mask[1] ? grad_weight : Tensor(),
          output_mask[2] ? grad_bias : Tensor()};
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
  m.impl("native_batch_norm", &native_batch_norm);
  m.impl("native_batch_norm_backward", &native_batch_norm_backward);
  m.impl("native_layer_norm", &native_layer_norm);
  m.impl("native_layer_norm_backward", &native_layer_norm_backward);
}

}  // namespace loom::onednn
