// Reference CPU kernels: activations (relu relu6 leaky_relu elu selu gelu silu mish softplus
// hardtanh hardsigmoid hardswish), each a functor on the compute type.
#include <cmath>
#include <string_view>

#include "cpu/meta.h"
#include "cpu/tensor_iterator.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::ops::cpu {
namespace {

using meta::check_hardtanh_limits;

// Floating activations keep the dtype and refuse integers, as PyTorch's kernels do.
#define LOOM_ACTIVATION(Name, name, expr)                   \
  struct Name {                                             \
    static constexpr std::string_view kName = name;         \
    static constexpr unsigned kCats = kFloats;              \
    static constexpr ResultRule kRule = ResultRule::Common; \
    template <typename C>                                   \
    C operator()(C x) const {                               \
      return expr;                                          \
    }                                                       \
  }
LOOM_ACTIVATION(Mish, "mish", x* std::tanh(std::log1p(std::exp(x))));
LOOM_ACTIVATION(Hardsigmoid, "hardsigmoid", std::fmin(std::fmax(x + C(3), C(0)), C(6)) / C(6));
LOOM_ACTIVATION(Hardswish, "hardswish", x* std::fmin(std::fmax(x + C(3), C(0)), C(6)) / C(6));
LOOM_ACTIVATION(Selu, "selu",
                x > 0 ? C(1.0507009873554804934193349852946) * x
                      : C(1.0507009873554804934193349852946 * 1.6732632423543772848170429916717) *
                            std::expm1(x));
#undef LOOM_ACTIVATION

struct Silu {
  static constexpr std::string_view kName = "silu";
  static constexpr unsigned kCats = kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  static constexpr UnaryKernel kFlat = UnaryKernel::silu;  // Note [Per-ISA fast path]
  template <typename C>
  C operator()(C x) const {
    return x / (C(1) + std::exp(-x));
  }
};

struct Relu {
  static constexpr std::string_view kName = "relu";
  static constexpr unsigned kCats = kInts | kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  static constexpr UnaryKernel kFlat = UnaryKernel::relu;  // Note [Per-ISA fast path]
  template <typename C>
  C operator()(C x) const {
    return x > C(0) || x != x ? x : C(0);  // NaN stays NaN
  }
};

// hardtanh (and relu6 = hardtanh(0, 6)): clamp to [min_val, max_val].
struct Hardtanh {
  static constexpr std::string_view kName = "hardtanh";
  static constexpr unsigned kCats = kInts | kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  double lo = -1, hi = 1;
  template <typename C>
  C operator()(C x) const {
    if (x != x) return x;
    return x < C(lo) ? C(lo) : x > C(hi) ? C(hi) : x;
  }
};
struct Relu6 : Hardtanh {
  static constexpr std::string_view kName = "relu6";
  Relu6() : Hardtanh{0, 6} {}
};

struct LeakyRelu {
  static constexpr std::string_view kName = "leaky_relu";
  static constexpr unsigned kCats = kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  double slope;
  template <typename C>
  C operator()(C x) const {
    return x > C(0) ? x : x * C(slope);
  }
};

struct Elu {
  static constexpr std::string_view kName = "elu";
  static constexpr unsigned kCats = kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  double negcoef, poscoef, input_scale;
  template <typename C>
  C operator()(C x) const {
    return x <= C(0) ? std::expm1(x * C(input_scale)) * C(negcoef) : x * C(poscoef);
  }
};

struct Gelu {
  static constexpr std::string_view kName = "gelu";
  static constexpr unsigned kCats = kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  bool tanh_approx;
  template <typename C>
  C operator()(C x) const {
    if (tanh_approx) {
      const C k = C(0.7978845608028654);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    }
    return x * C(0.5) * (C(1) + std::erf(x * C(0.7071067811865476)));
  }
};

struct Softplus {
  static constexpr std::string_view kName = "softplus";
  static constexpr unsigned kCats = kFloats;
  static constexpr ResultRule kRule = ResultRule::Common;
  double beta, threshold;
  template <typename C>
  C operator()(C x) const {
    return x * C(beta) > C(threshold) ? x : std::log1p(std::exp(x * C(beta))) / C(beta);
  }
};

// ---- kernels with arguments --------------------------------------------------------------------

Tensor hardtanh(const Tensor& self, const Scalar& lo, const Scalar& hi) {
  check_hardtanh_limits(self, lo, hi);
  return unary_run("hardtanh", self, nullptr, false, Hardtanh{lo.to_double(), hi.to_double()});
}
Tensor& hardtanh_(Tensor& self, const Scalar& lo, const Scalar& hi) {
  check_hardtanh_limits(self, lo, hi);
  unary_run("hardtanh_", self, &self, true, Hardtanh{lo.to_double(), hi.to_double()});
  return self;
}
Tensor& hardtanh_out(const Tensor& self, const Scalar& lo, const Scalar& hi, Tensor& out) {
  check_hardtanh_limits(self, lo, hi);
  unary_run("hardtanh.out", self, &out, false, Hardtanh{lo.to_double(), hi.to_double()});
  return out;
}

Tensor leaky_relu(const Tensor& self, const Scalar& slope) {
  return unary_run("leaky_relu", self, nullptr, false, LeakyRelu{slope.to_double()});
}
Tensor& leaky_relu_(Tensor& self, const Scalar& slope) {
  unary_run("leaky_relu_", self, &self, true, LeakyRelu{slope.to_double()});
  return self;
}
Tensor& leaky_relu_out(const Tensor& self, const Scalar& slope, Tensor& out) {
  unary_run("leaky_relu.out", self, &out, false, LeakyRelu{slope.to_double()});
  return out;
}

Elu elu_op(const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  return {alpha.to_double() * scale.to_double(), scale.to_double(), input_scale.to_double()};
}
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& in_scale) {
  return unary_run("elu", self, nullptr, false, elu_op(alpha, scale, in_scale));
}
Tensor& elu_(Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& in_scale) {
  unary_run("elu_", self, &self, true, elu_op(alpha, scale, in_scale));
  return self;
}
Tensor& elu_out(const Tensor& self, const Scalar& alpha, const Scalar& scale,
                const Scalar& in_scale, Tensor& out) {
  unary_run("elu.out", self, &out, false, elu_op(alpha, scale, in_scale));
  return out;
}

Gelu gelu_op(std::string_view op, std::string_view approximate) {
  return {meta::parse_gelu_approximate(op, approximate)};
}
Tensor gelu(const Tensor& self, std::string_view approximate) {
  return unary_run("gelu", self, nullptr, false, gelu_op("gelu", approximate));
}
Tensor& gelu_(Tensor& self, std::string_view approximate) {
  unary_run("gelu_", self, &self, true, gelu_op("gelu_", approximate));
  return self;
}
Tensor& gelu_out(const Tensor& self, std::string_view approximate, Tensor& out) {
  unary_run("gelu.out", self, &out, false, gelu_op("gelu.out", approximate));
  return out;
}

Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  return unary_run("softplus", self, nullptr, false,
                   Softplus{beta.to_double(), threshold.to_double()});
}
Tensor& softplus_out(const Tensor& self, const Scalar& beta, const Scalar& threshold, Tensor& out) {
  unary_run("softplus.out", self, &out, false, Softplus{beta.to_double(), threshold.to_double()});
  return out;
}

// relu's backward (and threshold's): grad_output where self > threshold, else 0, in one
// pass; a NaN self passes its gradient, as in PyTorch.
Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {
  constexpr std::string_view op = "threshold_backward";
  TensorIterator it(op);
  it.add_input("grad_output", grad_output).add_input("self", self);
  it.build();
  dispatch_dtypes<kInts | kFloats>(op, it.common_dtype(), [&]<typename T>(T*) {
    using C = compute_t<T>;
    const auto th = static_cast<C>(threshold.to_double());
    if constexpr (kHasFlatLoops<T>) {
      if (flat_threshold_backward<T>(it, th)) return;  // Note [Per-ISA fast path]
    }
    it.for_each<T, T, T>([th](C g, C x) { return x <= th ? C(0) : g; });
  });
  return it.finish();
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("threshold_backward", &threshold_backward);
  m.impl("relu", &unary_fn<Relu>);
  m.impl("relu_", &unary_inplace<Relu>);
  m.impl("relu6", &unary_fn<Relu6>);
  m.impl("relu6_", &unary_inplace<Relu6>);
  m.impl("selu", &unary_fn<Selu>);
  m.impl("selu_", &unary_inplace<Selu>);
  m.impl("silu", &unary_fn<Silu>);
  m.impl("silu_", &unary_inplace<Silu>);
  m.impl("silu.out", &unary_out<Silu>);
  m.impl("mish", &unary_fn<Mish>);
  m.impl("mish_", &unary_inplace<Mish>);
  m.impl("mish.out", &unary_out<Mish>);
  m.impl("hardsigmoid", &unary_fn<Hardsigmoid>);
  m.impl("hardsigmoid_", &unary_inplace<Hardsigmoid>);
  m.impl("hardsigmoid.out", &unary_out<Hardsigmoid>);
  m.impl("hardswish", &unary_fn<Hardswish>);
  m.impl("hardswish_", &unary_inplace<Hardswish>);
  m.impl("hardswish.out", &unary_out<Hardswish>);
  m.impl("hardtanh", &hardtanh);
  m.impl("hardtanh_", &hardtanh_);
  m.impl("hardtanh.out", &hardtanh_out);
  m.impl("leaky_relu", &leaky_relu);
  m.impl("leaky_relu_", &leaky_relu_);
  m.impl("leaky_relu.out", &leaky_relu_out);
  m.impl("elu", &elu);
  m.impl("elu_", &elu_);
  m.impl("elu.out", &elu_out);
  m.impl("gelu", &gelu);
  m.impl("gelu_", &gelu_);
  m.impl("gelu.out", &gelu_out);
  m.impl("softplus", &softplus);
  m.impl("softplus.out", &softplus_out);
}

}  // namespace loom::ops::cpu
