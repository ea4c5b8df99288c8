// Reference CPU kernels: where, lerp, addcmul, addcdiv (three tensor inputs).
#include <cmath>
#include <string_view>

#include "cpu/meta.h"
#include "cpu/tensor_iterator.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/integer_math.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::ops::cpu {
namespace {

using meta::check_lerp;

// ---- where ---------------------------------------------------------------------------------

Tensor where_impl(std::string_view op, const Tensor& condition, const Tensor& self,
                  const Tensor& other, const Tensor* out) {
  meta::check_where_condition(op, condition);
  TensorIterator it(op);
  it.add_input("condition", condition, DType::Bool)
      .add_input("self", self)
      .add_input("other", other);
  if (out != nullptr) it.set_output(*out, OutputKind::Out);
  it.build();
  dispatch_all(it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    it.for_each<T, bool, T, T>([](bool c, C a, C b) { return c ? a : b; });
  });
  return it.finish();
}
Tensor where_self(const Tensor& condition, const Tensor& self, const Tensor& other) {
  return where_impl("where.self", condition, self, other, nullptr);
}
Tensor& where_self_out(const Tensor& condition, const Tensor& self, const Tensor& other,
                       Tensor& out) {
  where_impl("where.self_out", condition, self, other, &out);
  return out;
}

// ---- lerp ----------------------------------------------------------------------------------

// PyTorch's lerp: exact at both ends (weight 0 gives self, weight 1 gives end).
template <typename C>
C lerp_value(C self, C end, C weight) {
  return std::abs(weight) < C(0.5) ? self + weight * (end - self)
                                   : end - (end - self) * (C(1) - weight);
}

Tensor lerp_impl(std::string_view op, const Tensor& self, const Tensor& end, const Tensor* weight,
                 const Scalar* scalar_weight, const Tensor* out, bool inplace) {
  check_lerp(op, self, end, weight);
  TensorIterator it(op);
  it.add_input("self", self).add_input("end", end);
  if (weight != nullptr) it.add_input("weight", *weight);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  dispatch_dtypes<kFloats>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    if (weight != nullptr) {
      it.for_each<T, T, T, T>([](C a, C b, C w) { return lerp_value(a, b, w); });
    } else {
      const C w = scalar_weight->to<C>();
      it.for_each<T, T, T>([w](C a, C b) { return lerp_value(a, b, w); });
    }
  });
  return it.finish();
}
Tensor lerp_scalar(const Tensor& self, const Tensor& end, const Scalar& weight) {
  return lerp_impl("lerp.Scalar", self, end, nullptr, &weight, nullptr, false);
}
Tensor& lerp_scalar_(Tensor& self, const Tensor& end, const Scalar& weight) {
  lerp_impl("lerp_.Scalar", self, end, nullptr, &weight, &self, true);
  return self;
}
Tensor& lerp_scalar_out(const Tensor& self, const Tensor& end, const Scalar& weight, Tensor& out) {
  lerp_impl("lerp.Scalar_out", self, end, nullptr, &weight, &out, false);
  return out;
}
Tensor lerp_tensor(const Tensor& self, const Tensor& end, const Tensor& weight) {
  return lerp_impl("lerp.Tensor", self, end, &weight, nullptr, nullptr, false);
}
Tensor& lerp_tensor_(Tensor& self, const Tensor& end, const Tensor& weight) {
  lerp_impl("lerp_.Tensor", self, end, &weight, nullptr, &self, true);
  return self;
}
Tensor& lerp_tensor_out(const Tensor& self, const Tensor& end, const Tensor& weight, Tensor& out) {
  lerp_impl("lerp.Tensor_out", self, end, &weight, nullptr, &out, false);
  return out;
}

// ---- addcmul / addcdiv -------------------------------------------------------------------------

template <bool kDiv>
Tensor addc_impl(std::string_view op, const Tensor& self, const Tensor& t1, const Tensor& t2,
                 const Scalar& value, const Tensor* out, bool inplace) {
  if constexpr (kDiv) {
    meta::check_addcdiv_operands(op, t1, t2);
  }
  TensorIterator it(op);
  it.add_input("self", self).add_input("tensor1", t1).add_input("tensor2", t2);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  meta::check_addc_value(op, it.common_dtype(), value);
  constexpr unsigned cats = kDiv ? kFloats : (kInts | kFloats);
  dispatch_dtypes<cats>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    const C v = value.to<C>();
    if constexpr (kDiv) {
      it.for_each<T, T, T, T>([v](C a, C b, C c) { return a + v * (b / c); });
    } else {
      it.for_each<T, T, T, T>([v](C a, C b, C c) {
        if constexpr (meta::WrappingInt<C>) {  // Note [Wrapping integer arithmetic]
          return meta::wrapping_add(a, meta::wrapping_mul(meta::wrapping_mul(v, b), c));
        } else {
          return static_cast<C>(a + v * b * c);
        }
      });
    }
  });
  return it.finish();
}

template <bool kDiv>
struct AddcKernels {
  static Tensor fn(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
    return addc_impl<kDiv>(kDiv ? "addcdiv" : "addcmul", self, t1, t2, value, nullptr, false);
  }
  static Tensor& inplace(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
    addc_impl<kDiv>(kDiv ? "addcdiv_" : "addcmul_", self, t1, t2, value, &self, true);
    return self;
  }
  static Tensor& out(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value,
                     Tensor& out) {
    addc_impl<kDiv>(kDiv ? "addcdiv.out" : "addcmul.out", self, t1, t2, value, &out, false);
    return out;
  }
};

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("where.self", &where_self);
  m.impl("where.self_out", &where_self_out);
  m.impl("lerp.Scalar", &lerp_scalar);
  m.impl("lerp_.Scalar", &lerp_scalar_);
  m.impl("lerp.Scalar_out", &lerp_scalar_out);
  m.impl("lerp.Tensor", &lerp_tensor);
  m.impl("lerp_.Tensor", &lerp_tensor_);
  m.impl("lerp.Tensor_out", &lerp_tensor_out);
  m.impl("addcmul", &AddcKernels<false>::fn);
  m.impl("addcmul_", &AddcKernels<false>::inplace);
  m.impl("addcmul.out", &AddcKernels<false>::out);
  m.impl("addcdiv", &AddcKernels<true>::fn);
  m.impl("addcdiv_", &AddcKernels<true>::inplace);
  m.impl("addcdiv.out", &AddcKernels<true>::out);
}

}  // namespace loom::ops::cpu
