// oneDNN kernels: activations and unary math with the eltwise primitive (forward; Loom's
// backward formulas are compositions of pointwise ops, not ops of their own).
//
// Note [Eltwise domain]: a kernel here takes a call only when it is large enough for oneDNN
// to win (the per-op thresholds below, measured against the reference kernels; below them
// the primitive's fixed cost of one to two microseconds loses to the reference loop) and when
// oneDNN computes what the reference computes:
//   relu, relu6, hardtanh, clamp, exp  oneDNN turns a NaN input into 0 or a bound (relu,
//       clip) or +inf (exp) where the reference keeps it, so these scan the input for a NaN
//       first (a vectorised pass, far cheaper than the reference's loop) and hand on if one
//       is there
//   hardtanh, clamp  only bounds that are not NaN with min <= max (the reference's order
//       decides the result otherwise); oneDNN's clip turns -0 into +0 at a bound of 0, where
//       the reference keeps -0 (equal values)
//   exp  below -87.3 oneDNN gives 0 where libm gives a subnormal (under 1.2e-38)
//   elu  scale and input_scale 1 (oneDNN's elu has neither); oneDNN computes exp(x) - 1, not
//       expm1, so just below 0 its absolute error is up to half an ulp of 1 (6e-8), which
//       the suite's tolerance allows
// Left to the reference:
//   softplus  oneDNN's soft_relu computes log(1 + exp(x)), not log1p: at x = -8 it is off by
//       3e-3 relative, below -17 it gives 0
//   log  oneDNN's log is off by 1.4e-6 at 1 (log(1) must be 0)
//   selu, hardsigmoid  no matching oneDNN algorithm in 2.6
// Only dense float32 inputs are taken (contiguous, channels-last or any other dense layout: the
// primitive runs over their memory as one flat line and writes a result laid out as the input,
// which is the reference's layout too); out= variants only contiguous ones.
#include <limits>
#include <optional>
#include <string_view>

#include "loom/dispatcher/library.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::algorithm;

/// One eltwise computation: the algorithm and its two parameters.
struct Eltwise {
  algorithm alg;
  float alpha = 0;
  float beta = 0;
};

/// True when x is a dense float32 CPU tensor (contiguous, channels-last or another dense
/// layout: is_dense) of at least min_numel elements. The dtype and size come first: they turn
/// away the small calls in a few instructions.
bool eltwise_takes(const Tensor& x, int64_t min_numel) {
  return x.defined() && x.dtype() == DType::Float32 && x.numel() >= min_numel && takes({x}) &&
         is_dense(x);
}

/// A new float32 tensor laid out as the dense tensor like (its strides; PyTorch's
/// preserve_format), so that the flat loops write each element where like has it.
Tensor empty_dense_like(const Tensor& like) {
  if (like.is_contiguous()) return Tensor::empty(like.sizes(), TensorOptions{}.with(DType::Float32));
  return Tensor::empty({like.numel()}, TensorOptions{}.with(DType::Float32))
      .as_strided_view(like.sizes(), like.strides(), 0);
}

/// Inputs from this many elements are scanned for NaN on the OpenMP team.
constexpr int64_t kParallelScan = int64_t{1} << 16;

/// True when the contiguous float32 tensor x holds a NaN: one vectorised pass (x != x), on the
/// OpenMP team above kParallelScan elements (Note [No empty parallel regions] in
/// ops/core/cpu/parallel.h: small scans branch around the region).
bool has_nan(const Tensor& x) {
  const float* p = static_cast<const float*>(x.data_ptr());
  const int64_t n = x.numel();
  int found = 0;
  if (n >= kParallelScan) {
#pragma omp parallel for simd reduction(| : found)
    for (int64_t i = 0; i < n; ++i) found |= p[i] != p[i];
  } else {
#pragma omp simd reduction(| : found)
    for (int64_t i = 0; i < n; ++i) found |= p[i] != p[i];
  }
  return found != 0;
}

/// True when out can receive the result for self in place of the reference: a contiguous
/// float32 CPU tensor of self's sizes (the reference resizes or rejects the others).
bool out_takes(const Tensor& self, const Tensor& out) {
  return out.defined() && out.dtype() == DType::Float32 && takes({out}) && out.is_contiguous() &&
         self.is_contiguous() && out.sizes() == self.sizes();
}

/// Runs e over src's elements into dst (both contiguous, same numel; may be the same memory).
void run(const Eltwise& e, const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  Key key("eltwise.fwd");
  key.add(static_cast<int64_t>(e.alg)).add(static_cast<double>(e.alpha));
  key.add(static_cast<double>(e.beta)).add(n);
  // Any contiguous shape is one flat line to an eltwise primitive: one primitive per numel.
  const dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  auto p = cached(key, [&] {
    auto d =
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, e.alg, md, e.alpha, e.beta);
    auto pd = dnnl::eltwise_forward::primitive_desc(d, engine());
    return CachedPrimitive{dnnl::eltwise_forward(pd), pd, nullptr};
  });
  execute(p->primitive, {{DNNL_ARG_SRC, memory_of(src, md)}, {DNNL_ARG_DST, memory_of(dst, md)}});
}

Tensor forward(const Eltwise& e, const Tensor& self) {
  Tensor out = empty_dense_like(self);
  run(e, self, out);
  return out;
}
Tensor forward_inplace(const Eltwise& e, const Tensor& self) {
  run(e, self, self);
  self.bump_version();
  return self;
}
Tensor forward_out(const Eltwise& e, const Tensor& self, const Tensor& out) {
  run(e, self, out);
  out.bump_version();
  return out;
}

// ---- ops without parameters: name, algorithm, threshold ---------------------------------------

// The smallest numel each op is taken at (Note [Eltwise domain]), measured on 2 threads with
// AVX-512: an eltwise primitive costs about 2 us, the reference from 0.3 ns an element (relu,
// abs) to 25 (mish). At each threshold, reference vs onednn in us: tanh 512 4.5/3.3, mish
// 256 6.5/3.1, gelu(tanh) 512 5.3/2.9, gelu 2048 8.5/2.2, sigmoid 2048 4.0/2.1, silu 2048
// 3.7/2.2, sqrt 4096 10.3/1.9, exp 4096 6.6/2.7, relu 16384 8.7/4.5 (with the NaN scan),
// relu6 16384 13.7/4.5, clamp 16384 17.2/4.5; at half of each, oneDNN does not win.
struct Tanh {
  static constexpr std::string_view kName = "tanh";
  static constexpr algorithm kAlg = algorithm::eltwise_tanh;
  static constexpr int64_t kMin = 512;
};
struct Sigmoid {
  static constexpr std::string_view kName = "sigmoid";
  static constexpr algorithm kAlg = algorithm::eltwise_logistic;
  static constexpr int64_t kMin = 2048;
};
struct Silu {
  static constexpr std::string_view kName = "silu";
  static constexpr algorithm kAlg = algorithm::eltwise_swish;  // x * sigmoid(alpha x), alpha 1
  static constexpr float kAlpha = 1;
  static constexpr int64_t kMin = 2048;
};
struct Mish {
  static constexpr std::string_view kName = "mish";
  static constexpr algorithm kAlg = algorithm::eltwise_mish;
  static constexpr int64_t kMin = 256;
};
struct Hardswish {
  static constexpr std::string_view kName = "hardswish";
  static constexpr algorithm kAlg = algorithm::eltwise_hardswish;
  static constexpr int64_t kMin = 2048;
};

// Ops whose oneDNN algorithm differs from the reference on NaN scan for one first.
struct Relu {
  static constexpr std::string_view kName = "relu";
  static constexpr algorithm kAlg = algorithm::eltwise_relu;
  static constexpr bool kScanNan = true;
  static constexpr int64_t kMin = 16384;
};
struct Relu6 {
  static constexpr std::string_view kName = "relu6";
  static constexpr algorithm kAlg = algorithm::eltwise_clip_v2;  // clamp to [alpha, beta]
  static constexpr float kAlpha = 0;
  static constexpr float kBeta = 6;
  static constexpr bool kScanNan = true;
  static constexpr int64_t kMin = 16384;
};
struct Exp {
  static constexpr std::string_view kName = "exp";
  static constexpr algorithm kAlg = algorithm::eltwise_exp;
  static constexpr bool kScanNan = true;
  static constexpr int64_t kMin = 4096;
};
struct Abs {
  static constexpr std::string_view kName = "abs";
  static constexpr algorithm kAlg = algorithm::eltwise_abs;
  static constexpr int64_t kMin = 16384;
};
struct Sqrt {
  static constexpr std::string_view kName = "sqrt";
  static constexpr algorithm kAlg = algorithm::eltwise_sqrt;
  static constexpr int64_t kMin = 4096;
};

template <typename Op>
Eltwise eltwise_of() {
  if constexpr (requires { Op::kBeta; }) {
    return {Op::kAlg, Op::kAlpha, Op::kBeta};
  } else if constexpr (requires { Op::kAlpha; }) {
    return {Op::kAlg, Op::kAlpha, 0};
  } else {
    return {Op::kAlg, 0, 0};
  }
}

/// True when Op takes self: eltwise_takes, and no NaN in self where Op must scan for one.
template <typename Op>
bool op_takes(const Tensor& self) {
  if (!eltwise_takes(self, Op::kMin)) return false;
  if constexpr (requires { Op::kScanNan; }) return !has_nan(self);
  return true;
}

template <typename Op>
std::string qualified(std::string_view suffix) {
  std::string s = "aten::";
  s.append(Op::kName).append(suffix);
  return s;
}

template <typename Op>
Tensor unary(const Tensor& self) {
  static const auto op = onednn::op<Tensor(const Tensor&)>(qualified<Op>(""));
  if (!op_takes<Op>(self)) return op.call_next_provider(kCPU, self);
  return forward(eltwise_of<Op>(), self);
}
template <typename Op>
Tensor unary_(const Tensor& self) {
  static const auto op = onednn::op<Tensor(const Tensor&)>(qualified<Op>("_"));
  if (!op_takes<Op>(self)) return op.call_next_provider(kCPU, self);
  return forward_inplace(eltwise_of<Op>(), self);
}
template <typename Op>
Tensor unary_out(const Tensor& self, const Tensor& out) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&)>(qualified<Op>(".out"));
  if (!out_takes(self, out) || !op_takes<Op>(self)) {
    return op.call_next_provider(kCPU, self, out);
  }
  return forward_out(eltwise_of<Op>(), self, out);
}

template <typename Op>
void register_unary(Library& m) {
  m.impl(Op::kName, &unary<Op>);
  m.impl(str_cat(Op::kName, "_"), &unary_<Op>);
  m.impl(str_cat(Op::kName, ".out"), &unary_out<Op>);
}

// ---- ops with parameters ------------------------------------------------------------------------

constexpr int64_t kMinLeakyRelu = 16384;
constexpr int64_t kMinElu = 2048;

// leaky_relu: oneDNN's relu with a slope (x > 0 ? x : slope * x, NaN kept, as the reference).
Tensor leaky_relu(const Tensor& self, const Scalar& slope) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Scalar&)>("aten::leaky_relu");
  if (!eltwise_takes(self, kMinLeakyRelu)) return op.call_next_provider(kCPU, self, slope);
  return forward({algorithm::eltwise_relu, slope.to<float>(), 0}, self);
}
Tensor leaky_relu_(const Tensor& self, const Scalar& slope) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Scalar&)>("aten::leaky_relu_");
  if (!eltwise_takes(self, kMinLeakyRelu)) return op.call_next_provider(kCPU, self, slope);
  return forward_inplace({algorithm::eltwise_relu, slope.to<float>(), 0}, self);
}
Tensor leaky_relu_out(const Tensor& self, const Scalar& slope, const Tensor& out) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Scalar&, const Tensor&)>("aten::leaky_relu.out");
  if (!eltwise_takes(self, kMinLeakyRelu) || !out_takes(self, out)) {
    return op.call_next_provider(kCPU, self, slope, out);
  }
  return forward_out({algorithm::eltwise_relu, slope.to<float>(), 0}, self, out);
}

// elu: oneDNN's elu is alpha (exp(x) - 1) below 0, x above; Loom's scale and input_scale
// must be 1 (Note [Eltwise domain]).
bool elu_takes(const Tensor& self, const Scalar& scale, const Scalar& input_scale) {
  return eltwise_takes(self, kMinElu) && scale.to_double() == 1 && input_scale.to_double() == 1;
}
using EluSig = Tensor(const Tensor&, const Scalar&, const Scalar&, const Scalar&);
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& in_scale) {
  static const auto op = onednn::op<EluSig>("aten::elu");
  if (!elu_takes(self, scale, in_scale)) {
    return op.call_next_provider(kCPU, self, alpha, scale, in_scale);
  }
  return forward({algorithm::eltwise_elu, alpha.to<float>(), 0}, self);
}
Tensor elu_(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& in_scale) {
  static const auto op = onednn::op<EluSig>("aten::elu_");
  if (!elu_takes(self, scale, in_scale)) {
    return op.call_next_provider(kCPU, self, alpha, scale, in_scale);
  }
  return forward_inplace({algorithm::eltwise_elu, alpha.to<float>(), 0}, self);
}
Tensor elu_out(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& in_scale,
               const Tensor& out) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Scalar&, const Scalar&, const Scalar&, const Tensor&)>(
          "aten::elu.out");
  if (!elu_takes(self, scale, in_scale) || !out_takes(self, out)) {
    return op.call_next_provider(kCPU, self, alpha, scale, in_scale, out);
  }
  return forward_out({algorithm::eltwise_elu, alpha.to<float>(), 0}, self, out);
}

// gelu: 'none' is oneDNN's gelu_erf, 'tanh' its gelu_tanh; any other string is the
// reference's error.
// The tanh form costs the reference a tanh per element, the erf form an erf: thresholds differ.
constexpr int64_t kMinGeluErf = 2048;
constexpr int64_t kMinGeluTanh = 512;
bool gelu_takes(const Tensor& self, std::string_view approximate) {
  if (approximate == "tanh") return eltwise_takes(self, kMinGeluTanh);
  return approximate == "none" && eltwise_takes(self, kMinGeluErf);
}
Eltwise gelu_of(std::string_view approximate) {
  return {approximate == "tanh" ? algorithm::eltwise_gelu_tanh : algorithm::eltwise_gelu_erf};
}
Tensor gelu(const Tensor& self, std::string_view approximate) {
  static const auto op = onednn::op<Tensor(const Tensor&, std::string_view)>("aten::gelu");
  if (!gelu_takes(self, approximate)) return op.call_next_provider(kCPU, self, approximate);
  return forward(gelu_of(approximate), self);
}
Tensor gelu_(const Tensor& self, std::string_view approximate) {
  static const auto op = onednn::op<Tensor(const Tensor&, std::string_view)>("aten::gelu_");
  if (!gelu_takes(self, approximate)) return op.call_next_provider(kCPU, self, approximate);
  return forward_inplace(gelu_of(approximate), self);
}
Tensor gelu_out(const Tensor& self, std::string_view approximate, const Tensor& out) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, std::string_view, const Tensor&)>("aten::gelu.out");
  if (!gelu_takes(self, approximate) || !out_takes(self, out)) {
    return op.call_next_provider(kCPU, self, approximate, out);
  }
  return forward_out(gelu_of(approximate), self, out);
}

// hardtanh and clamp: oneDNN's clip_v2 clamps to [alpha, beta]. Taken for bounds that are
// not NaN with lo <= hi, and inputs without NaN (Note [Eltwise domain]).
constexpr int64_t kMinClip = 16384;
constexpr float kInf = std::numeric_limits<float>::infinity();

/// The clip of [lo, hi] (in float32, as the reference converts them), or nullopt.
std::optional<Eltwise> clip_of(const Tensor& self, float lo, float hi) {
  if (!eltwise_takes(self, kMinClip) || !(lo <= hi) || has_nan(self)) return std::nullopt;
  return Eltwise{algorithm::eltwise_clip_v2, lo, hi};
}

using HardtanhSig = Tensor(const Tensor&, const Scalar&, const Scalar&);
Tensor hardtanh(const Tensor& self, const Scalar& lo, const Scalar& hi) {
  static const auto op = onednn::op<HardtanhSig>("aten::hardtanh");
  const auto e = clip_of(self, lo.to<float>(), hi.to<float>());
  if (!e) return op.call_next_provider(kCPU, self, lo, hi);
  return forward(*e, self);
}
Tensor hardtanh_(const Tensor& self, const Scalar& lo, const Scalar& hi) {
  static const auto op = onednn::op<HardtanhSig>("aten::hardtanh_");
  const auto e = clip_of(self, lo.to<float>(), hi.to<float>());
  if (!e) return op.call_next_provider(kCPU, self, lo, hi);
  return forward_inplace(*e, self);
}
Tensor hardtanh_out(const Tensor& self, const Scalar& lo, const Scalar& hi, const Tensor& out) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Scalar&, const Scalar&, const Tensor&)>(
          "aten::hardtanh.out");
  std::optional<Eltwise> e;
  if (out_takes(self, out)) e = clip_of(self, lo.to<float>(), hi.to<float>());
  if (!e) return op.call_next_provider(kCPU, self, lo, hi, out);
  return forward_out(*e, self, out);
}

using OptScalar = std::optional<Scalar>;
/// clamp's clip: a missing bound is an infinite one; both missing is the reference's error.
std::optional<Eltwise> clamp_of(const Tensor& self, const OptScalar& lo, const OptScalar& hi) {
  if (!lo && !hi) return std::nullopt;
  return clip_of(self, lo ? lo->to<float>() : -kInf, hi ? hi->to<float>() : kInf);
}
using ClampSig = Tensor(const Tensor&, OptScalar, OptScalar);
Tensor clamp(const Tensor& self, OptScalar lo, OptScalar hi) {
  static const auto op = onednn::op<ClampSig>("aten::clamp");
  const auto e = clamp_of(self, lo, hi);
  if (!e) return op.call_next_provider(kCPU, self, lo, hi);
  return forward(*e, self);
}
Tensor clamp_(const Tensor& self, OptScalar lo, OptScalar hi) {
  static const auto op = onednn::op<ClampSig>("aten::clamp_");
  const auto e = clamp_of(self, lo, hi);
  if (!e) return op.call_next_provider(kCPU, self, lo, hi);
  return forward_inplace(*e, self);
}
Tensor clamp_out(const Tensor& self, OptScalar lo, OptScalar hi, const Tensor& out) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, OptScalar, OptScalar, const Tensor&)>("aten::clamp.out");
  std::optional<Eltwise> e;
  if (out_takes(self, out)) e = clamp_of(self, lo, hi);
  if (!e) return op.call_next_provider(kCPU, self, lo, hi, out);
  return forward_out(*e, self, out);
}

// ---- threshold_backward (relu's gradient) ----

/// Note [Dense threshold_backward]: relu's gradient, grad_output where self > threshold and 0
/// elsewhere (a NaN in self passes the gradient, as in PyTorch: `self <= threshold ? 0 :
/// grad`). oneDNN's relu backward zeroes it for NaN, so this is a plain loop, taken when both
/// operands are dense float32 with the same strides (contiguous or channels-last: a
/// channels-last CNN's activations), above kMinThresholdBackward elements; the result is laid
/// out as they are. The reference engine walks a permuted layout (channels-last) element by
/// element today, about 3x slower than this flat loop; everything else is handed on.
constexpr int64_t kMinThresholdBackward = 16384;

Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&, const Scalar&)>(
      "aten::threshold_backward");
  if (!eltwise_takes(self, kMinThresholdBackward) || !eltwise_takes(grad_output, 0) ||
      grad_output.sizes() != self.sizes() || grad_output.strides() != self.strides()) {
    return op.call_next_provider(kCPU, grad_output, self, threshold);
  }
  const float t = static_cast<float>(threshold.to_double());
  Tensor out = empty_dense_like(self);
  const float* g = static_cast<const float*>(grad_output.data_ptr());
  const float* x = static_cast<const float*>(self.data_ptr());
  float* o = static_cast<float*>(out.data_ptr());
  const int64_t n = self.numel();
#pragma omp parallel for simd schedule(static) if (n >= kParallelScan)
  for (int64_t i = 0; i < n; ++i) {
    // Both loads unconditional: a select, not a branch (a branch on relu's sign pattern
    // mispredicts half the time and stops the loop from vectorising).
    const float gi = g[i], xi = x[i];
    o[i] = xi <= t ? 0.0f : gi;
  }
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
  m.impl("threshold_backward", &threshold_backward);
  register_unary<Tanh>(m);
  register_unary<Sigmoid>(m);
  register_unary<Silu>(m);
  register_unary<Mish>(m);
  register_unary<Hardswish>(m);
  m.impl("relu", &unary<Relu>);
  m.impl("relu_", &unary_<Relu>);
  m.impl("relu6", &unary<Relu6>);
  m.impl("relu6_", &unary_<Relu6>);
  register_unary<Exp>(m);
  m.impl("hardtanh", &hardtanh);
  m.impl("hardtanh_", &hardtanh_);
  m.impl("hardtanh.out", &hardtanh_out);
  m.impl("clamp", &clamp);
  m.impl("clamp_", &clamp_);
  m.impl("clamp.out", &clamp_out);
  register_unary<Abs>(m);
  register_unary<Sqrt>(m);
  m.impl("leaky_relu", &leaky_relu);
  m.impl("leaky_relu_", &leaky_relu_);
  m.impl("leaky_relu.out", &leaky_relu_out);
  m.impl("elu", &elu);
  m.impl("elu_", &elu_);
  m.impl("elu.out", &elu_out);
  m.impl("gelu", &gelu);
  m.impl("gelu_", &gelu_);
  m.impl("gelu.out", &gelu_out);
}

}  // namespace loom::onednn
