// Reference CPU kernels: arithmetic binary ops (add, sub, mul, div, pow, remainder, fmod,
// maximum, minimum, atan2) on the TensorIterator engine.
#include <cmath>
#include <optional>
#include <string_view>

#include "cpu/meta.h"
#include "cpu/tensor_iterator.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/integer_math.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::ops::cpu {
namespace {

using meta::bool_if;
using meta::check_alpha;
using meta::check_sub_bool;
using meta::parse_rounding;
using meta::Rounding;
using meta::throw_zero_division;

// Integer results wrap and integer division never traps (Note [Wrapping integer arithmetic]
// in loom/ops/meta/integer_math.h).

// a + b and a * b in computation type C.
template <typename C>
C plus(C a, C b) {
  if constexpr (meta::WrappingInt<C>) {
    return meta::wrapping_add(a, b);
  } else {
    return a + b;
  }
}
template <typename C>
C times(C a, C b) {
  if constexpr (meta::WrappingInt<C>) {
    return meta::wrapping_mul(a, b);
  } else {
    return a * b;
  }
}

// sign * alpha in C (sign is 1 or -1); -INT_MIN wraps to INT_MIN.
template <typename C>
C signed_alpha(const Scalar& alpha, int sign) {
  const C al = alpha.to<C>();
  if constexpr (meta::WrappingInt<C>) {
    return sign > 0 ? al : meta::wrapping_neg(al);
  } else {
    return static_cast<C>(sign * al);
  }
}

// ---- add / sub ---------------------------------------------------------------------------

// Note [Small-tensor fast path]
// For a handful of elements the engine's set-up (broadcast, promotion, coalescing) costs
// more than the arithmetic, and scalar-sized adds are what optimizer loops and index
// arithmetic do all day. Two contiguous CPU tensors of one floating or int64 dtype and
// one shape, no out=, take a direct loop; everything else goes through TensorIterator.
constexpr int64_t kSmallNumel = 16;

template <typename T>
Tensor small_add(const Tensor& self, const Tensor& other, T alpha) {
  Tensor r = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  const T* a = static_cast<const T*>(self.data_ptr());
  const T* b = static_cast<const T*>(other.data_ptr());
  T* y = static_cast<T*>(r.data_ptr());
  for (int64_t i = 0; i < self.numel(); ++i) y[i] = plus(a[i], times(alpha, b[i]));
  return r;
}

std::optional<Tensor> try_small_add(const Tensor& self, const Tensor& other, const Scalar& alpha,
                                    int sign) {
  if (!self.defined() || !other.defined() || self.dtype() != other.dtype() ||
      self.numel() > kSmallNumel || !self.device().is_cpu() || !other.device().is_cpu() ||
      self.sizes() != other.sizes() || !self.is_contiguous() || !other.is_contiguous() ||
      alpha.is_bool()) {
    return std::nullopt;
  }
  switch (self.dtype()) {
    case DType::Float32:
      return small_add<float>(self, other, static_cast<float>(sign * alpha.to_double()));
    case DType::Float64:
      return small_add<double>(self, other, sign * alpha.to_double());
    case DType::Int64:
      if (!alpha.is_integral()) return std::nullopt;  // the engine reports PyTorch's error
      return small_add<int64_t>(self, other, signed_alpha<int64_t>(alpha, sign));
    default:
      return std::nullopt;
  }
}

// self + sign * alpha * other, for add (sign 1) and sub (sign -1).
Tensor add_impl(std::string_view op, const Tensor& self, const Tensor& other, const Scalar& alpha,
                const Tensor* out, bool inplace, int sign) {
  TensorIterator it(op);
  it.add_input("self", self).add_input("other", other);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  check_alpha(op, it.common_dtype(), alpha);
  dispatch_dtypes<kAllTypes>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    if constexpr (kHasFlatLoops<T>) {  // Note [Per-ISA fast path]
      if (flat_binary<T>(it, BinaryKernel::add, signed_alpha<C>(alpha, sign))) return;
    }
    if (sign > 0 && alpha.to_double() == 1) {
      it.for_each<T, T, T>([](C a, C b) { return plus(a, b); });
    } else {
      if constexpr (std::is_same_v<C, bool>) {
        const bool al = alpha.to<bool>();
        it.for_each<T, T, T>([al](bool a, bool b) { return a || (al && b); });
      } else {
        const C al = signed_alpha<C>(alpha, sign);
        it.for_each<T, T, T>([al](C a, C b) { return plus(a, times(al, b)); });
      }
    }
  });
  return it.finish();
}

Tensor add_scalar_impl(std::string_view op, const Tensor& self, const Scalar& other,
                       const Scalar& alpha, const Tensor* out, bool inplace, int sign) {
  TensorIterator it(op);
  it.add_input("self", self).add_scalar(other);
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  check_alpha(op, it.common_dtype(), alpha);
  dispatch_dtypes<kAllTypes>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    if constexpr (std::is_same_v<C, bool>) {
      const bool s = other.to<bool>() && alpha.to<bool>();
      it.for_each<T, T>([s](bool a) { return a || s; });
    } else {
      // alpha * other in the computation type, as PyTorch folds it.
      const C s = times(signed_alpha<C>(alpha, sign), other.to<C>());
      if constexpr (kHasFlatLoops<T>) {  // Note [Per-ISA fast path]
        if (flat_binary_scalar<T>(it, BinaryKernel::add, s)) return;
      }
      it.for_each<T, T>([s](C a) { return plus(a, s); });
    }
  });
  return it.finish();
}

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (auto r = try_small_add(self, other, alpha, 1)) return *std::move(r);
  return add_impl("add.Tensor", self, other, alpha, nullptr, false, 1);
}
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  add_impl("add_.Tensor", self, other, alpha, &self, true, 1);
  return self;
}
Tensor& add_out(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  add_impl("add.out", self, other, alpha, &out, false, 1);
  return out;
}
Tensor add_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return add_scalar_impl("add.Scalar", self, other, alpha, nullptr, false, 1);
}
Tensor& add_scalar_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  add_scalar_impl("add_.Scalar", self, other, alpha, &self, true, 1);
  return self;
}
Tensor& add_scalar_out(const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  add_scalar_impl("add.Scalar_out", self, other, alpha, &out, false, 1);
  return out;
}

Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_sub_bool("sub.Tensor", self.dtype(), other.dtype());
  if (auto r = try_small_add(self, other, alpha, -1)) return *std::move(r);
  return add_impl("sub.Tensor", self, other, alpha, nullptr, false, -1);
}
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_sub_bool("sub_.Tensor", self.dtype(), other.dtype());
  add_impl("sub_.Tensor", self, other, alpha, &self, true, -1);
  return self;
}
Tensor& sub_out(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out) {
  check_sub_bool("sub.out", self.dtype(), other.dtype());
  add_impl("sub.out", self, other, alpha, &out, false, -1);
  return out;
}
Tensor sub_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  check_sub_bool("sub.Scalar", self.dtype(), bool_if(other));
  return add_scalar_impl("sub.Scalar", self, other, alpha, nullptr, false, -1);
}
Tensor& sub_scalar_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  check_sub_bool("sub_.Scalar", self.dtype(), bool_if(other));
  add_scalar_impl("sub_.Scalar", self, other, alpha, &self, true, -1);
  return self;
}
Tensor& sub_scalar_out(const Tensor& self, const Scalar& other, const Scalar& alpha, Tensor& out) {
  check_sub_bool("sub.Scalar_out", self.dtype(), bool_if(other));
  add_scalar_impl("sub.Scalar_out", self, other, alpha, &out, false, -1);
  return out;
}

// ---- mul -----------------------------------------------------------------------------------

struct Mul {
  static constexpr std::string_view kName = "mul";
  static constexpr unsigned kCats = kAllTypes;
  static constexpr ResultRule kRule = ResultRule::Common;
  static constexpr BinaryKernel kFlat = BinaryKernel::mul;  // Note [Per-ISA fast path]
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>) {
      return a && b;
    } else {
      return times(a, b);
    }
  }
};

// ---- div -----------------------------------------------------------------------------------

// PyTorch's div_floor for floats (c10::div_floor_floating): floor(a / b) computed through
// fmod so it agrees with Python's //.
template <typename C>
C div_floor_float(C a, C b) {
  if (b == 0) return a / b;
  const C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div != 0) {
    C fl = std::floor(div);
    if (div - fl > C(0.5)) fl += 1;
    return fl;
  }
  return std::copysign(C(0), a / b);
}

// Integer kernels divide by a checked divisor: a zero sets the flag (functors may not throw
// inside the parallel loop) and gives 0; the caller throws.
template <typename C, typename F>
auto guarded(std::atomic<bool>& zero, F f) {
  return [&zero, f](C a, C b) -> C {
    if (b == 0) {
      zero.store(true, std::memory_order_relaxed);
      return C(0);
    }
    return f(a, b);
  };
}

// a / b with the rounding mode; other is a tensor or (scalar_other) a Scalar.
Tensor div_impl(std::string_view op, const Tensor& self, const Tensor* other,
                const Scalar* scalar_other, Rounding mode, const Tensor* out, bool inplace) {
  TensorIterator it(op);
  it.add_input("self", self);
  if (other != nullptr) {
    it.add_input("other", *other);
  } else {
    it.add_scalar(*scalar_other);
  }
  it.set_rule(meta::div_result_rule(mode));
  set_variant_output(it, inplace ? &self : out, inplace);
  it.build();
  std::atomic<bool> zero{false};
  dispatch_dtypes<kInts | kFloats>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    auto run = [&](auto f) {
      if (other != nullptr) {
        it.for_each<T, T, T>(f);
      } else {
        const C s = scalar_other->to<C>();
        it.for_each<T, T>([f, s](C a) { return f(a, s); });
      }
    };
    if constexpr (std::is_floating_point_v<C>) {
      if constexpr (kHasFlatLoops<T>) {  // Note [Per-ISA fast path]
        if (mode == Rounding::None &&
            (other != nullptr ? flat_binary<T>(it, BinaryKernel::div, T(1))
                              : flat_binary_scalar<T>(it, BinaryKernel::div, scalar_other->to<C>()))) {
          return;
        }
      }
      switch (mode) {
        case Rounding::None:
          run([](C a, C b) { return a / b; });
          break;
        case Rounding::Trunc:
          run([](C a, C b) { return std::trunc(a / b); });
          break;
        case Rounding::Floor:
          run([](C a, C b) { return div_floor_float(a, b); });
          break;
      }
    } else if (mode == Rounding::Floor) {
      run(guarded<C>(zero, [](C a, C b) { return meta::div_floor_int(a, b); }));
    } else {
      run(guarded<C>(zero, [](C a, C b) { return meta::div_trunc_int(a, b); }));
    }
  });
  if (zero.load()) throw_zero_division(op);
  return it.finish();
}

Tensor div(const Tensor& self, const Tensor& other) {
  return div_impl("div.Tensor", self, &other, nullptr, Rounding::None, nullptr, false);
}
Tensor& div_(Tensor& self, const Tensor& other) {
  div_impl("div_.Tensor", self, &other, nullptr, Rounding::None, &self, true);
  return self;
}
Tensor& div_out(const Tensor& self, const Tensor& other, Tensor& out) {
  div_impl("div.out", self, &other, nullptr, Rounding::None, &out, false);
  return out;
}
Tensor div_mode(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  const Rounding r = parse_rounding("div.Tensor_mode", mode);
  return div_impl("div.Tensor_mode", self, &other, nullptr, r, nullptr, false);
}
Tensor& div_mode_(Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  const Rounding r = parse_rounding("div_.Tensor_mode", mode);
  div_impl("div_.Tensor_mode", self, &other, nullptr, r, &self, true);
  return self;
}
Tensor& div_mode_out(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode,
                     Tensor& out) {
  const Rounding r = parse_rounding("div.out_mode", mode);
  div_impl("div.out_mode", self, &other, nullptr, r, &out, false);
  return out;
}
Tensor div_scalar(const Tensor& self, const Scalar& other) {
  return div_impl("div.Scalar", self, nullptr, &other, Rounding::None, nullptr, false);
}
Tensor& div_scalar_(Tensor& self, const Scalar& other) {
  div_impl("div_.Scalar", self, nullptr, &other, Rounding::None, &self, true);
  return self;
}
Tensor div_scalar_mode(const Tensor& self, const Scalar& other,
                       std::optional<std::string_view> mode) {
  const Rounding r = parse_rounding("div.Scalar_mode", mode);
  return div_impl("div.Scalar_mode", self, nullptr, &other, r, nullptr, false);
}
Tensor& div_scalar_mode_(Tensor& self, const Scalar& other, std::optional<std::string_view> mode) {
  const Rounding r = parse_rounding("div_.Scalar_mode", mode);
  div_impl("div_.Scalar_mode", self, nullptr, &other, r, &self, true);
  return self;
}

// ---- remainder / fmod ------------------------------------------------------------------------

// Python's % (sign of the divisor) for remainder, C's fmod (sign of the dividend) for fmod.
template <bool kPython>
Tensor mod_impl(std::string_view op, const Tensor* self, const Scalar* scalar_self,
                const Tensor* other, const Scalar* scalar_other, const Tensor* out, bool inplace) {
  TensorIterator it(op);
  if (self != nullptr) {
    it.add_input("self", *self);
  } else {
    it.add_scalar(*scalar_self);
  }
  if (other != nullptr) {
    it.add_input("other", *other);
  } else {
    it.add_scalar(*scalar_other);
  }
  set_variant_output(it, inplace ? self : out, inplace);
  it.build();
  std::atomic<bool> zero{false};
  dispatch_dtypes<kInts | kFloats>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    auto run = [&](auto f) {
      if (self != nullptr && other != nullptr) {
        it.for_each<T, T, T>(f);
      } else if (self != nullptr) {
        const C s = scalar_other->to<C>();
        it.for_each<T, T>([f, s](C a) { return f(a, s); });
      } else {
        const C s = scalar_self->to<C>();
        it.for_each<T, T>([f, s](C b) { return f(s, b); });
      }
    };
    if constexpr (std::is_floating_point_v<C>) {
      run([](C a, C b) {
        C m = std::fmod(a, b);
        if (kPython && m != 0 && ((b < 0) != (m < 0))) m += b;
        return m;
      });
    } else {
      run(guarded<C>(zero, [](C a, C b) {
        return kPython ? meta::remainder_int(a, b) : meta::fmod_int(a, b);
      }));
    }
  });
  if (zero.load()) throw_zero_division(op);
  return it.finish();
}

template <bool kPython>
struct ModKernels {
  static constexpr std::string_view base() { return kPython ? "remainder" : "fmod"; }
  static Tensor tensor(const Tensor& self, const Tensor& other) {
    return mod_impl<kPython>(kPython ? "remainder.Tensor" : "fmod.Tensor", &self, nullptr, &other,
                             nullptr, nullptr, false);
  }
  static Tensor& tensor_(Tensor& self, const Tensor& other) {
    mod_impl<kPython>(kPython ? "remainder_.Tensor" : "fmod_.Tensor", &self, nullptr, &other,
                      nullptr, &self, true);
    return self;
  }
  static Tensor& tensor_out(const Tensor& self, const Tensor& other, Tensor& out) {
    mod_impl<kPython>(kPython ? "remainder.Tensor_out" : "fmod.Tensor_out", &self, nullptr, &other,
                      nullptr, &out, false);
    return out;
  }
  static Tensor scalar(const Tensor& self, const Scalar& other) {
    return mod_impl<kPython>(kPython ? "remainder.Scalar" : "fmod.Scalar", &self, nullptr, nullptr,
                             &other, nullptr, false);
  }
  static Tensor& scalar_(Tensor& self, const Scalar& other) {
    mod_impl<kPython>(kPython ? "remainder_.Scalar" : "fmod_.Scalar", &self, nullptr, nullptr,
                      &other, &self, true);
    return self;
  }
  static Tensor& scalar_out(const Tensor& self, const Scalar& other, Tensor& out) {
    mod_impl<kPython>(kPython ? "remainder.Scalar_out" : "fmod.Scalar_out", &self, nullptr, nullptr,
                      &other, &out, false);
    return out;
  }
};

Tensor remainder_scalar_tensor(const Scalar& self, const Tensor& other) {
  return mod_impl<true>("remainder.Scalar_Tensor", nullptr, &self, &other, nullptr, nullptr, false);
}

// ---- pow -----------------------------------------------------------------------------------

template <typename C>
C pow_value(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return a || !b;
  } else if constexpr (std::is_floating_point_v<C>) {
    return std::pow(a, b);
  } else {
    return meta::pow_int(a, b);
  }
}

Tensor pow_impl(std::string_view op, const Tensor* self, const Scalar* scalar_self,
                const Tensor* exponent, const Scalar* scalar_exp, const Tensor* out, bool inplace) {
  TensorIterator it(op);
  if (self != nullptr) {
    it.add_input("self", *self);
  } else {
    it.add_scalar(*scalar_self);
  }
  if (exponent != nullptr) {
    it.add_input("exponent", *exponent);
  } else {
    it.add_scalar(*scalar_exp);
  }
  set_variant_output(it, inplace ? self : out, inplace);
  it.build();
  meta::check_pow_exponent(op, it.common_dtype(), scalar_exp);
  dispatch_dtypes<kAllTypes>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    if (self != nullptr && exponent != nullptr) {
      it.for_each<T, T, T>([](C a, C b) { return pow_value(a, b); });
    } else if (self != nullptr) {
      const C e = scalar_exp->to<C>();
      if constexpr (std::is_floating_point_v<C>) {
        if (e == 2) return it.for_each<T, T>([](C a) { return a * a; });
        if (e == C(0.5)) return it.for_each<T, T>([](C a) { return std::sqrt(a); });
      }
      it.for_each<T, T>([e](C a) { return pow_value(a, e); });
    } else {
      const C s = scalar_self->to<C>();
      it.for_each<T, T>([s](C b) { return pow_value(s, b); });
    }
  });
  return it.finish();
}

Tensor pow_tt(const Tensor& self, const Tensor& exponent) {
  return pow_impl("pow.Tensor_Tensor", &self, nullptr, &exponent, nullptr, nullptr, false);
}
Tensor& pow_tt_out(const Tensor& self, const Tensor& exponent, Tensor& out) {
  pow_impl("pow.Tensor_Tensor_out", &self, nullptr, &exponent, nullptr, &out, false);
  return out;
}
Tensor& pow_tensor_(Tensor& self, const Tensor& exponent) {
  pow_impl("pow_.Tensor", &self, nullptr, &exponent, nullptr, &self, true);
  return self;
}
Tensor pow_ts(const Tensor& self, const Scalar& exponent) {
  return pow_impl("pow.Tensor_Scalar", &self, nullptr, nullptr, &exponent, nullptr, false);
}
Tensor& pow_ts_out(const Tensor& self, const Scalar& exponent, Tensor& out) {
  pow_impl("pow.Tensor_Scalar_out", &self, nullptr, nullptr, &exponent, &out, false);
  return out;
}
Tensor& pow_scalar_(Tensor& self, const Scalar& exponent) {
  pow_impl("pow_.Scalar", &self, nullptr, nullptr, &exponent, &self, true);
  return self;
}
Tensor pow_st(const Scalar& self, const Tensor& exponent) {
  return pow_impl("pow.Scalar", nullptr, &self, &exponent, nullptr, nullptr, false);
}
Tensor& pow_st_out(const Scalar& self, const Tensor& exponent, Tensor& out) {
  pow_impl("pow.Scalar_out", nullptr, &self, &exponent, nullptr, &out, false);
  return out;
}

// ---- maximum / minimum / atan2 ----------------------------------------------------------------

template <bool kMax>
struct MinMax {
  static constexpr std::string_view kName = kMax ? "maximum" : "minimum";
  static constexpr unsigned kCats = kAllTypes;
  static constexpr ResultRule kRule = ResultRule::Common;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (a != a) return a;  // NaN propagates
      if (b != b) return b;
    }
    return kMax ? (a > b ? a : b) : (a < b ? a : b);
  }
};

struct Atan2 {
  static constexpr std::string_view kName = "atan2";
  static constexpr unsigned kCats = kFloats;
  static constexpr ResultRule kRule = ResultRule::IntToFloat;
  template <typename C>
  C operator()(C a, C b) const {
    return std::atan2(a, b);
  }
};

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("add.Tensor", &add);
  m.impl("add_.Tensor", &add_);
  m.impl("add.out", &add_out);
  m.impl("add.Scalar", &add_scalar);
  m.impl("add_.Scalar", &add_scalar_);
  m.impl("add.Scalar_out", &add_scalar_out);
  m.impl("sub.Tensor", &sub);
  m.impl("sub_.Tensor", &sub_);
  m.impl("sub.out", &sub_out);
  m.impl("sub.Scalar", &sub_scalar);
  m.impl("sub_.Scalar", &sub_scalar_);
  m.impl("sub.Scalar_out", &sub_scalar_out);
  m.impl("mul.Tensor", &binary_fn<Mul>);
  m.impl("mul_.Tensor", &binary_inplace<Mul>);
  m.impl("mul.out", &binary_out<Mul>);
  m.impl("mul.Scalar", &binary_scalar_fn<Mul>);
  m.impl("mul_.Scalar", &binary_scalar_inplace<Mul>);
  m.impl("mul.Scalar_out", &binary_scalar_out<Mul>);
  m.impl("div.Tensor", &div);
  m.impl("div_.Tensor", &div_);
  m.impl("div.out", &div_out);
  m.impl("div.Tensor_mode", &div_mode);
  m.impl("div_.Tensor_mode", &div_mode_);
  m.impl("div.out_mode", &div_mode_out);
  m.impl("div.Scalar", &div_scalar);
  m.impl("div_.Scalar", &div_scalar_);
  m.impl("div.Scalar_mode", &div_scalar_mode);
  m.impl("div_.Scalar_mode", &div_scalar_mode_);
  m.impl("remainder.Tensor", &ModKernels<true>::tensor);
  m.impl("remainder_.Tensor", &ModKernels<true>::tensor_);
  m.impl("remainder.Tensor_out", &ModKernels<true>::tensor_out);
  m.impl("remainder.Scalar", &ModKernels<true>::scalar);
  m.impl("remainder_.Scalar", &ModKernels<true>::scalar_);
  m.impl("remainder.Scalar_out", &ModKernels<true>::scalar_out);
  m.impl("remainder.Scalar_Tensor", &remainder_scalar_tensor);
  m.impl("fmod.Tensor", &ModKernels<false>::tensor);
  m.impl("fmod_.Tensor", &ModKernels<false>::tensor_);
  m.impl("fmod.Tensor_out", &ModKernels<false>::tensor_out);
  m.impl("fmod.Scalar", &ModKernels<false>::scalar);
  m.impl("fmod_.Scalar", &ModKernels<false>::scalar_);
  m.impl("fmod.Scalar_out", &ModKernels<false>::scalar_out);
  m.impl("pow.Tensor_Tensor", &pow_tt);
  m.impl("pow.Tensor_Tensor_out", &pow_tt_out);
  m.impl("pow_.Tensor", &pow_tensor_);
  m.impl("pow.Tensor_Scalar", &pow_ts);
  m.impl("pow.Tensor_Scalar_out", &pow_ts_out);
  m.impl("pow_.Scalar", &pow_scalar_);
  m.impl("pow.Scalar", &pow_st);
  m.impl("pow.Scalar_out", &pow_st_out);
  m.impl("maximum", &binary_fn<MinMax<true>>);
  m.impl("maximum.out", &binary_out<MinMax<true>>);
  m.impl("minimum", &binary_fn<MinMax<false>>);
  m.impl("minimum.out", &binary_out<MinMax<false>>);
  m.impl("atan2", &binary_fn<Atan2>);
  m.impl("atan2_", &binary_inplace<Atan2>);
  m.impl("atan2.out", &binary_out<Atan2>);
}

}  // namespace loom::ops::cpu
