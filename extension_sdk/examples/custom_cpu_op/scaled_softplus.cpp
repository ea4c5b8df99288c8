// custom_cpu_op: a new operator with a CPU kernel and a backward, on Loom's stable ABI only.
//
//   custom::scaled_softplus(Tensor x, float beta) -> Tensor
//       y = log(1 + exp(beta * x)) / beta          (softplus with a sharpness beta > 0)
//   custom::scaled_softplus_backward(Tensor grad, Tensor x, float beta) -> Tensor
//       dx = grad * sigmoid(beta * x)              (its derivative, an op of its own)
//
// Written with loom/stable.hpp, the header-only C++ wrapper over the C table of loom/capi.h:
// the plugin links libloom.so and nothing else of Loom, so the same binary keeps loading into
// later Loom versions of the same major version. Its only exported symbol is the entry point
// loom_plugin_manifest (LOOM_STABLE_EXTENSION_DEPS; loom_add_extension hides the rest).
//
// Note [The backward is an op]: the derivative does not compute the gradient itself; it calls
// custom::scaled_softplus_backward through the dispatcher. The gradient then runs on whatever
// device the tensors are on (the CUDA example adds a CUDA kernel for it and the same derivative
// works unchanged), and the backward op could be given a derivative of its own later.
#include <cmath>
#include <cstdint>
#include <loom/stable.hpp>
#include <string>
#include <vector>

namespace ls = loom::stable;

namespace {

// softplus(beta x) / beta without overflow: max(z, 0) + log1p(exp(-|z|)), z = beta x.
template <typename T>
void softplus_forward(const T* x, T* y, int64_t n, T beta) {
  for (int64_t i = 0; i < n; ++i) {
    const T z = beta * x[i];
    y[i] = (std::fmax(z, T(0)) + std::log1p(std::exp(-std::fabs(z)))) / beta;
  }
}

// d/dx softplus(beta x) / beta = sigmoid(beta x).
template <typename T>
void softplus_backward(const T* g, const T* x, T* dx, int64_t n, T beta) {
  for (int64_t i = 0; i < n; ++i) dx[i] = g[i] / (T(1) + std::exp(-beta * x[i]));
}

// The checks every kernel of both ops makes; errors say op, argument and what was given.
double checked_beta(const char* op, const ls::Value& beta) {
  const double b = beta.to_double();
  if (!(b > 0) || !std::isfinite(b)) {
    throw ls::ValueError(std::string(op) + ": expected beta > 0, got " + std::to_string(b));
  }
  return b;
}

void check_floating(const char* op, const char* name, const ls::Tensor& t) {
  if (t.dtype() != ls::dtype::float32() && t.dtype() != ls::dtype::float64()) {
    throw ls::TypeError(std::string(op) + ": expected " + name +
                        " of dtype float32 or float64, got " + t.describe());
  }
}

// custom::scaled_softplus on the CPU.
ls::Tensor scaled_softplus_cpu(const std::vector<ls::Value>& args) {
  const char* op = "custom::scaled_softplus";
  const ls::Tensor x = args[0].to_tensor().contiguous();
  check_floating(op, "x", x);
  const double beta = checked_beta(op, args[1]);
  ls::Tensor y = ls::Tensor::empty(x.sizes(), x.dtype(), "cpu");
  if (x.dtype() == ls::dtype::float64()) {
    softplus_forward(x.data_ptr<double>(), y.data_ptr<double>(), x.numel(), beta);
  } else {
    softplus_forward(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), float(beta));
  }
  return y;
}

// custom::scaled_softplus_backward on the CPU.
ls::Tensor scaled_softplus_backward_cpu(const std::vector<ls::Value>& args) {
  const char* op = "custom::scaled_softplus_backward";
  const ls::Tensor grad = args[0].to_tensor().contiguous();
  const ls::Tensor x = args[1].to_tensor().contiguous();
  check_floating(op, "x", x);
  const double beta = checked_beta(op, args[2]);
  if (grad.sizes() != x.sizes() || grad.dtype() != x.dtype()) {
    throw ls::ValueError(std::string(op) + ": expected grad shaped and typed as x, got grad " +
                         grad.describe() + " and x " + x.describe());
  }
  ls::Tensor dx = ls::Tensor::empty(x.sizes(), x.dtype(), "cpu");
  if (x.dtype() == ls::dtype::float64()) {
    softplus_backward(grad.data_ptr<double>(), x.data_ptr<double>(), dx.data_ptr<double>(),
                      x.numel(), beta);
  } else {
    softplus_backward(grad.data_ptr<float>(), x.data_ptr<float>(), dx.data_ptr<float>(), x.numel(),
                      float(beta));
  }
  return dx;
}

void register_ops(ls::PluginRegistrar& registrar) {
  ls::Library& m = registrar.library("custom");  // undone when the plugin unloads
  m.def("scaled_softplus(Tensor x, float beta) -> Tensor");
  m.def("scaled_softplus_backward(Tensor grad, Tensor x, float beta) -> Tensor");
  m.impl("scaled_softplus", "CPU", scaled_softplus_cpu);
  m.impl("scaled_softplus_backward", "CPU", scaled_softplus_backward_cpu);
  // Note [The backward is an op]. Argument 1 of the schema is beta.
  const ls::Op backward = ls::Op::find("custom::scaled_softplus_backward");
  m.impl_backward("scaled_softplus", [backward](ls::BackwardContext& ctx) {
    if (!ctx.needs_input_grad(0)) return;
    ctx.set_grad_input(
        0, backward.call_tensor(ctx.grad_output(0), ctx.input(0), ctx.argument(1).to_double()));
  });
}

}  // namespace

// The entry point. Tensor::contiguous() calls aten::contiguous from ops_core, which the loader
// therefore loads first.
LOOM_STABLE_EXTENSION_DEPS("custom_cpu_op", "1.0.0",
                           "custom::scaled_softplus (CPU, with a backward): the SDK's example op",
                           register_ops, "ops_core")
