// CUDA kernels of the activations (relu relu6 selu silu mish hardsigmoid hardswish hardtanh
// leaky_relu elu gelu softplus), threshold_backward, and the ternary ops where, lerp, addcmul,
// addcdiv: the recipes of ops/core/cpu/{activation,pointwise_ternary}.cpp on CudaIterator with
// an op code of the generic kernel (Note [Pointwise op codes] in pointwise.cuh).
#include <optional>
#include <string_view>

#include "kernels/cuda_iterator.h"
#include "kernels/pointwise_layer.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/pointwise.h"

namespace loom::cuda {
namespace {

using ops::meta::check_hardtanh_limits;
using ops::meta::check_lerp;

using kernels::PointwiseLaunch;
using kernels::PwOp;
using namespace pointwise;  // NOLINT: the variant layer is this file's vocabulary

// Activations without arguments.
LOOM_CUDA_OP(Relu, "relu", Relu, kInts | kFloats, Common);
LOOM_CUDA_OP(Silu, "silu", Silu, kFloats, Common);
LOOM_CUDA_OP(Mish, "mish", Mish, kFloats, Common);
LOOM_CUDA_OP(Hardsigmoid, "hardsigmoid", Hardsigmoid, kFloats, Common);
LOOM_CUDA_OP(Hardswish, "hardswish", Hardswish, kFloats, Common);
LOOM_CUDA_OP(Selu, "selu", Selu, kFloats, Common);

// ---- activations with arguments ---------------------------------------------------------------

PointwiseLaunch params(double a, double b = 0, double c = 0) {
  PointwiseLaunch p;
  set_slot_double(p.s, 0, a);
  set_slot_double(p.s, 1, b);
  set_slot_double(p.s, 2, c);
  return p;
}

Tensor hardtanh(const Tensor& self, const Scalar& lo, const Scalar& hi) {
  check_hardtanh_limits(self, lo, hi);
  return unary_run("hardtanh", PwOp::Hardtanh, kInts | kFloats, ResultRule::Common, self, nullptr,
                   false, params(lo.to_double(), hi.to_double()));
}
Tensor& hardtanh_(Tensor& self, const Scalar& lo, const Scalar& hi) {
  check_hardtanh_limits(self, lo, hi);
  unary_run("hardtanh_", PwOp::Hardtanh, kInts | kFloats, ResultRule::Common, self, &self, true,
            params(lo.to_double(), hi.to_double()));
  return self;
}
Tensor& hardtanh_out(const Tensor& self, const Scalar& lo, const Scalar& hi, Tensor& out) {
  check_hardtanh_limits(self, lo, hi);
  unary_run("hardtanh.out", PwOp::Hardtanh, kInts | kFloats, ResultRule::Common, self, &out, false,
            params(lo.to_double(), hi.to_double()));
  return out;
}
Tensor relu6(const Tensor& self) {
  return unary_run("relu6", PwOp::Hardtanh, kInts | kFloats, ResultRule::Common, self, nullptr,
                   false, params(0, 6));
}
Tensor& relu6_(Tensor& self) {
  unary_run("relu6_", PwOp::Hardtanh, kInts | kFloats, ResultRule::Common, self, &self, true,
            params(0, 6));
  return self;
}

Tensor leaky_relu(const Tensor& self, const Scalar& slope) {
  return unary_run("leaky_relu", PwOp::LeakyRelu, kFloats, ResultRule::Common, self, nullptr, false,
                   params(slope.to_double()));
}
Tensor& leaky_relu_(Tensor& self, const Scalar& slope) {
  unary_run("leaky_relu_", PwOp::LeakyRelu, kFloats, ResultRule::Common, self, &self, true,
            params(slope.to_double()));
  return self;
}
Tensor& leaky_relu_out(const Tensor& self, const Scalar& slope, Tensor& out) {
  unary_run("leaky_relu.out", PwOp::LeakyRelu, kFloats, ResultRule::Common, self, &out, false,
            params(slope.to_double()));
  return out;
}

PointwiseLaunch elu_params(const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  return params(alpha.to_double() * scale.to_double(), scale.to_double(), input_scale.to_double());
}
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& in_scale) {
  return unary_run("elu", PwOp::Elu, kFloats, ResultRule::Common, self, nullptr, false,
                   elu_params(alpha, scale, in_scale));
}
Tensor& elu_(Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& in_scale) {
  unary_run("elu_", PwOp::Elu, kFloats, ResultRule::Common, self, &self, true,
            elu_params(alpha, scale, in_scale));
  return self;
}
Tensor& elu_out(const Tensor& self, const Scalar& alpha, const Scalar& scale,
                const Scalar& in_scale, Tensor& out) {
  unary_run("elu.out", PwOp::Elu, kFloats, ResultRule::Common, self, &out, false,
            elu_params(alpha, scale, in_scale));
  return out;
}

PointwiseLaunch gelu_params(std::string_view op, std::string_view approximate) {
  const bool tanh = ops::meta::parse_gelu_approximate(op, approximate);
  PointwiseLaunch p;
  p.s.i[0] = tanh ? 1 : 0;
  return p;
}
Tensor gelu(const Tensor& self, std::string_view approximate) {
  return unary_run("gelu", PwOp::Gelu, kFloats, ResultRule::Common, self, nullptr, false,
                   gelu_params("gelu", approximate));
}
Tensor& gelu_(Tensor& self, std::string_view approximate) {
  unary_run("gelu_", PwOp::Gelu, kFloats, ResultRule::Common, self, &self, true,
            gelu_params("gelu_", approximate));
  return self;
}
Tensor& gelu_out(const Tensor& self, std::string_view approximate, Tensor& out) {
  unary_run("gelu.out", PwOp::Gelu, kFloats, ResultRule::Common, self, &out, false,
            gelu_params("gelu.out", approximate));
  return out;
}

Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  return unary_run("softplus", PwOp::Softplus, kFloats, ResultRule::Common, self, nullptr, false,
                   params(beta.to_double(), threshold.to_double()));
}
Tensor& softplus_out(const Tensor& self, const Scalar& beta, const Scalar& threshold, Tensor& out) {
  unary_run("softplus.out", PwOp::Softplus, kFloats, ResultRule::Common, self, &out, false,
            params(beta.to_double(), threshold.to_double()));
  return out;
}

Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {
  constexpr std::string_view op = "threshold_backward";
  CudaIterator it(op);
  it.add_input("grad_output", grad_output).add_input("self", self);
  it.build();
  check_dtype_category(op, it.common_dtype(), kInts | kFloats);
  PointwiseLaunch p = params(threshold.to_double());
  p.op = PwOp::ThresholdBackward;
  it.run(p);
  return it.finish();
}

// ---- where, lerp, addcmul, addcdiv -----------------------------------------------------------

Tensor where_impl(std::string_view op, const Tensor& condition, const Tensor& self,
                  const Tensor& other, const Tensor* out) {
  ops::meta::check_where_condition(op, condition);
  CudaIterator it(op);
  // The condition stays out of promotion; it is read as 0/1 in the common dtype.
  it.add_input("condition", condition, /*promote=*/false)
      .add_input("self", self)
      .add_input("other", other);
  if (out != nullptr) it.set_output(*out, OutputKind::Out);
  it.build();
  it.run(launch_of(PwOp::Where));
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

Tensor lerp_impl(std::string_view op, const Tensor& self, const Tensor& end, const Tensor* weight,
                 const Scalar* scalar_weight, const Tensor* out, bool inplace) {
  check_lerp(op, self, end, weight);
  CudaIterator it(op);
  it.add_input("self", self).add_input("end", end);
  if (weight != nullptr) {
    it.add_input("weight", *weight);
  } else {
    it.add_scalar(*scalar_weight, /*promote=*/false);  // the CPU reads it as .to<C>()
  }
  it.set_variant_output(inplace ? &self : out, inplace);
  it.build();
  check_dtype_category(op, it.common_dtype(), kFloats);
  it.run(launch_of(PwOp::Lerp));
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

template <bool kDiv>
Tensor addc_impl(std::string_view op, const Tensor& self, const Tensor& t1, const Tensor& t2,
                 const Scalar& value, const Tensor* out, bool inplace) {
  if constexpr (kDiv) {
    ops::meta::check_addcdiv_operands(op, t1, t2);
  }
  CudaIterator it(op);
  it.add_input("self", self).add_input("tensor1", t1).add_input("tensor2", t2);
  it.set_variant_output(inplace ? &self : out, inplace);
  it.build();
  ops::meta::check_addc_value(op, it.common_dtype(), value);
  check_dtype_category(op, it.common_dtype(), kDiv ? kFloats : (kInts | kFloats));
  PointwiseLaunch p = launch_of(kDiv ? PwOp::Addcdiv : PwOp::Addcmul);
  set_slot(p.s, 0, value);
  it.run(p);
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

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  // activation.cpp
  m.impl("threshold_backward", &threshold_backward);
  m.impl("relu", &unary_fn<Relu>);
  m.impl("relu_", &unary_inplace<Relu>);
  m.impl("relu6", &relu6);
  m.impl("relu6_", &relu6_);
  m.impl("selu", &unary_fn<Selu>);
  m.impl("selu_", &unary_inplace<Selu>);
  register_unary<Silu>(m);
  register_unary<Mish>(m);
  register_unary<Hardsigmoid>(m);
  register_unary<Hardswish>(m);
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
  // pointwise_ternary.cpp
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

}  // namespace loom::cuda
