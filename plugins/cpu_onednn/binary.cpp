// oneDNN kernels: add, sub, mul, div of two tensors with broadcasting (the binary primitive).
//
// Note [Binary domain]: oneDNN broadcasts only its second source (a dim of src1 may be 1
// where src0's is not; src0 has the result's shape). A call is taken when both tensors are
// contiguous float32 (type promotion and every other dtype go to the reference), the result
// has at least the op's threshold of elements, and either other broadcasts to self's shape,
// or self broadcasts to other's for a commutative op (add, mul), whose operands are then
// swapped. Every other call, including each whose shapes do not broadcast, is the reference's.
// add/sub take alpha 1 and -1 (add with alpha -1 is sub and the converse); other alphas, and
// bool alphas (which the reference rejects), are handed on. maximum/minimum are not taken:
// oneDNN's max and min return the second source when either is NaN, the reference propagates
// NaN from both.
#include <cstdint>
#include <optional>
#include <string_view>

#include "loom/dispatcher/library.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::algorithm;
using dnnl::memory;

/// The plan of one binary call: the primitive's two sources and the result's sizes.
struct BinaryPlan {
  const Tensor* src0 = nullptr;  ///< has the result's shape
  const Tensor* src1 = nullptr;  ///< broadcast to it
  memory::dims dst_dims;         ///< the result's sizes (padded to at least one dim)
  memory::dims src1_dims;        ///< src1's sizes, padded with leading 1s
  std::vector<int64_t> sizes;    ///< the result's sizes, as Loom's (0-d stays 0-d)
};

/// Contiguous strides of dims.
memory::dims contiguous_strides(const memory::dims& dims) {
  memory::dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

/// The plan for self op other, or nullopt when oneDNN cannot compute it (Note [Binary
/// domain]). commutative: the operands may be swapped.
std::optional<BinaryPlan> plan_binary(const Tensor& self, const Tensor& other, bool commutative,
                                      int64_t min_numel) {
  if (!self.defined() || !other.defined() || self.dtype() != DType::Float32 ||
      other.dtype() != DType::Float32 || std::max(self.numel(), other.numel()) < min_numel) {
    return std::nullopt;
  }
  if (!takes({self, other}) || !self.is_contiguous() || !other.is_contiguous()) return std::nullopt;
  const int64_t nd = std::max(self.dim(), other.dim());
  if (nd > DNNL_MAX_NDIMS) return std::nullopt;
  // Sizes aligned at the right, as broadcasting aligns them.
  auto padded = [nd](const Tensor& t) {
    memory::dims d(static_cast<size_t>(nd), 1);
    for (int64_t i = 0; i < t.dim(); ++i) d[static_cast<size_t>(nd - t.dim() + i)] = t.size(i);
    return d;
  };
  const memory::dims a = padded(self), b = padded(other);
  bool self_broadcasts = false, other_broadcasts = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    if (b[i] == 1) {
      other_broadcasts = true;
    } else if (a[i] == 1) {
      self_broadcasts = true;
    } else {
      return std::nullopt;  // shapes that do not broadcast: the reference's error
    }
  }
  BinaryPlan plan;
  if (!self_broadcasts) {
    plan.src0 = &self;
    plan.src1 = &other;
    plan.dst_dims = a;
    plan.src1_dims = b;
  } else if (commutative && !other_broadcasts) {
    plan.src0 = &other;
    plan.src1 = &self;
    plan.dst_dims = b;
    plan.src1_dims = a;
  } else {
    return std::nullopt;
  }
  plan.sizes.assign(plan.dst_dims.begin(), plan.dst_dims.end());
  if (plan.dst_dims.empty()) {  // both 0-d
    plan.dst_dims = {1};
    plan.src1_dims = {1};
  }
  if (static_cast<int64_t>(plan.src0->numel()) < min_numel) return std::nullopt;
  return plan;
}

/// Runs alg on the plan's sources into dst (contiguous, the result's shape; may be src0).
void run(algorithm alg, const BinaryPlan& plan, const Tensor& dst) {
  Key key("binary");
  key.add(static_cast<int64_t>(alg))
      .add(IntArrayRef(plan.dst_dims))
      .add(IntArrayRef(plan.src1_dims));
  const memory::desc md0(plan.dst_dims, memory::data_type::f32, contiguous_strides(plan.dst_dims));
  const memory::desc md1(plan.src1_dims, memory::data_type::f32,
                         contiguous_strides(plan.src1_dims));
  auto p = cached(key, [&] {
    auto pd = dnnl::binary::primitive_desc(dnnl::binary::desc(alg, md0, md1, md0), engine());
    return CachedPrimitive{dnnl::binary(pd), pd, nullptr};
  });
  execute(p->primitive, {{DNNL_ARG_SRC_0, memory_of(*plan.src0, md0)},
                         {DNNL_ARG_SRC_1, memory_of(*plan.src1, md1)},
                         {DNNL_ARG_DST, memory_of(dst, md0)}});
}

/// True when a and b (contiguous) share bytes without being the same tensor data: the
/// reference's element order then decides the result, so the call is handed on.
bool partly_overlaps(const Tensor& a, const Tensor& b) {
  const auto* pa = static_cast<const char*>(a.data_ptr());
  const auto* pb = static_cast<const char*>(b.data_ptr());
  const int64_t na = a.numel() * 4, nb = b.numel() * 4;
  const bool overlap = pa < pb + nb && pb < pa + na;
  return overlap && !(pa == pb && na == nb);
}

/// True when an in-place op may write the plan's result into self: the result has self's
/// sizes (a broadcast that grows self is the reference's error) and other does not partly
/// overlap self.
bool writes_self(const BinaryPlan& plan, const Tensor& self, const Tensor& other) {
  return IntArrayRef(plan.sizes) == self.sizes() && !partly_overlaps(self, other);
}

Tensor new_result(const BinaryPlan& plan) {
  return Tensor::empty(plan.sizes, TensorOptions{}.with(DType::Float32));
}

/// The algorithm of add (sign 1) or sub (sign -1) with alpha, or nullopt for an alpha other
/// than 1 and -1, and for a bool alpha (the reference's TypeError).
std::optional<algorithm> add_alg(int sign, const Scalar& alpha) {
  if (alpha.is_bool()) return std::nullopt;
  const double a = sign * alpha.to_double();
  if (a == 1) return algorithm::binary_add;
  if (a == -1) return algorithm::binary_sub;
  return std::nullopt;
}

// The smallest result numel each op is taken at (Note [Binary domain]), measured on 2 threads:
// a binary primitive costs 3 to 5 us, the reference about 0.3 ns an element for add and mul
// and 0.6 for div (reference vs onednn at 16384: add 4.6/4.4 us, mul 4.6/3.0, div 10.5/3.1;
// at 1e5: add 17.5/7.1, mul 16.5/5.6, div 37.5/5.3).
constexpr int64_t kMinAdd = 32768;
constexpr int64_t kMinMul = 16384;
constexpr int64_t kMinDiv = 8192;

using AddSig = Tensor(const Tensor&, const Tensor&, const Scalar&);
using AddOutSig = Tensor(const Tensor&, const Tensor&, const Scalar&, const Tensor&);

template <int kSign>
Tensor add_sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const auto op = onednn::op<AddSig>(kSign > 0 ? "aten::add.Tensor" : "aten::sub.Tensor");
  const std::optional<algorithm> alg = add_alg(kSign, alpha);
  // sub is not commutative; add with alpha -1 is neither.
  const bool commutative = alg == algorithm::binary_add;
  std::optional<BinaryPlan> plan;
  if (alg) plan = plan_binary(self, other, commutative, kMinAdd);
  if (!plan) return op.call_next_provider(kCPU, self, other, alpha);
  Tensor out = new_result(*plan);
  run(*alg, *plan, out);
  return out;
}

template <int kSign>
Tensor add_sub_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const auto op = onednn::op<AddSig>(kSign > 0 ? "aten::add_.Tensor" : "aten::sub_.Tensor");
  const std::optional<algorithm> alg = add_alg(kSign, alpha);
  std::optional<BinaryPlan> plan;
  if (alg) plan = plan_binary(self, other, /*commutative=*/false, kMinAdd);
  if (!plan || !writes_self(*plan, self, other)) {
    return op.call_next_provider(kCPU, self, other, alpha);
  }
  run(*alg, *plan, self);
  self.bump_version();
  return self;
}

/// True when out is a contiguous float32 CPU tensor of the plan's result sizes that does not
/// partly overlap an input (the reference resizes or rejects the other outs).
bool out_takes(const BinaryPlan& plan, const Tensor& out) {
  return out.defined() && out.dtype() == DType::Float32 && takes({out}) && out.is_contiguous() &&
         out.sizes() == IntArrayRef(plan.sizes) && !partly_overlaps(out, *plan.src0) &&
         !partly_overlaps(out, *plan.src1);
}

template <int kSign>
Tensor add_sub_out(const Tensor& self, const Tensor& other, const Scalar& alpha,
                   const Tensor& out) {
  static const auto op = onednn::op<AddOutSig>(kSign > 0 ? "aten::add.out" : "aten::sub.out");
  const std::optional<algorithm> alg = add_alg(kSign, alpha);
  std::optional<BinaryPlan> plan;
  if (alg) plan = plan_binary(self, other, alg == algorithm::binary_add, kMinAdd);
  if (!plan || !out_takes(*plan, out)) return op.call_next_provider(kCPU, self, other, alpha, out);
  run(*alg, *plan, out);
  out.bump_version();
  return out;
}

// mul and div: one template over the op's names, algorithm and threshold.
struct Mul {
  static constexpr const char* kFn = "aten::mul.Tensor";
  static constexpr const char* kInplace = "aten::mul_.Tensor";
  static constexpr const char* kOut = "aten::mul.out";
  static constexpr algorithm kAlg = algorithm::binary_mul;
  static constexpr bool kCommutative = true;
  static constexpr int64_t kMin = kMinMul;
};
struct Div {
  static constexpr const char* kFn = "aten::div.Tensor";
  static constexpr const char* kInplace = "aten::div_.Tensor";
  static constexpr const char* kOut = "aten::div.out";
  static constexpr algorithm kAlg = algorithm::binary_div;
  static constexpr bool kCommutative = false;
  static constexpr int64_t kMin = kMinDiv;
};

template <typename Op>
Tensor binary_fn(const Tensor& self, const Tensor& other) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&)>(Op::kFn);
  const std::optional<BinaryPlan> plan = plan_binary(self, other, Op::kCommutative, Op::kMin);
  if (!plan) return op.call_next_provider(kCPU, self, other);
  Tensor out = new_result(*plan);
  run(Op::kAlg, *plan, out);
  return out;
}

template <typename Op>
Tensor binary_inplace(const Tensor& self, const Tensor& other) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&)>(Op::kInplace);
  const std::optional<BinaryPlan> plan = plan_binary(self, other, false, Op::kMin);
  if (!plan || !writes_self(*plan, self, other)) return op.call_next_provider(kCPU, self, other);
  run(Op::kAlg, *plan, self);
  self.bump_version();
  return self;
}

template <typename Op>
Tensor binary_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&, const Tensor&)>(Op::kOut);
  const std::optional<BinaryPlan> plan = plan_binary(self, other, Op::kCommutative, Op::kMin);
  if (!plan || !out_takes(*plan, out)) return op.call_next_provider(kCPU, self, other, out);
  run(Op::kAlg, *plan, out);
  out.bump_version();
  return out;
}

// div with rounding_mode None is true division; the other modes are the reference's.
using DivModeSig = Tensor(const Tensor&, const Tensor&, std::optional<std::string_view>);
Tensor div_mode(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  static const auto op = onednn::op<DivModeSig>("aten::div.Tensor_mode");
  if (mode) return op.call_next_provider(kCPU, self, other, mode);
  const std::optional<BinaryPlan> plan = plan_binary(self, other, false, kMinDiv);
  if (!plan) return op.call_next_provider(kCPU, self, other, mode);
  Tensor out = new_result(*plan);
  run(algorithm::binary_div, *plan, out);
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
  m.impl("add.Tensor", &add_sub<1>);
  m.impl("add_.Tensor", &add_sub_<1>);
  m.impl("add.out", &add_sub_out<1>);
  m.impl("sub.Tensor", &add_sub<-1>);
  m.impl("sub_.Tensor", &add_sub_<-1>);
  m.impl("sub.out", &add_sub_out<-1>);
  m.impl("mul.Tensor", &binary_fn<Mul>);
  m.impl("mul_.Tensor", &binary_inplace<Mul>);
  m.impl("mul.out", &binary_out<Mul>);
  m.impl("div.Tensor", &binary_fn<Div>);
  m.impl("div_.Tensor", &binary_inplace<Div>);
  m.impl("div.out", &binary_out<Div>);
  m.impl("div.Tensor_mode", &div_mode);
}

}  // namespace loom::onednn
