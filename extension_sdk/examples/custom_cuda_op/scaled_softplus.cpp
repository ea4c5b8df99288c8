// custom_cuda_op: custom_cuda::scaled_softplus with a CUDA kernel, a CPU kernel and a backward,
// on Loom's stable ABI only (loom/stable.hpp over loom/capi.h).
//
//   custom_cuda::scaled_softplus(Tensor x, float beta) -> Tensor
//       y = log(1 + exp(beta * x)) / beta
//   custom_cuda::scaled_softplus_backward(Tensor grad, Tensor x, float beta) -> Tensor
//       dx = grad * sigmoid(beta * x)
//
// The same op as examples/custom_cpu_op (own namespace, so both extensions can load into one
// process). The CUDA kernels (scaled_softplus_kernels.cu) run on Loom's current CUDA stream of
// the tensor's device (DeviceCurrentStream), so they are ordered with Loom's own kernels and a
// caller that switches Loom's stream moves them too; nothing here synchronizes.
//
// Note [The backward is an op] (as in custom_cpu_op): the derivative calls
// custom_cuda::scaled_softplus_backward through the dispatcher, which picks the CUDA or the CPU
// kernel by the tensors' device.
#include <cmath>
#include <cstdint>
#include <loom/stable.hpp>
#include <string>
#include <vector>

#include "scaled_softplus_kernels.h"

namespace ls = loom::stable;

namespace {

// ---- checks shared by every kernel ----
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

void check_like(const char* op, const ls::Tensor& grad, const ls::Tensor& x) {
  if (grad.sizes() != x.sizes() || grad.dtype() != x.dtype() || grad.device() != x.device()) {
    throw ls::ValueError(std::string(op) + ": expected grad shaped and typed as x, got grad " +
                         grad.describe() + " and x " + x.describe());
  }
}

// ---- CPU ----
template <typename T>
void softplus_forward(const T* x, T* y, int64_t n, T beta) {
  for (int64_t i = 0; i < n; ++i) {
    const T z = beta * x[i];
    y[i] = (std::fmax(z, T(0)) + std::log1p(std::exp(-std::fabs(z)))) / beta;
  }
}

template <typename T>
void softplus_backward(const T* g, const T* x, T* dx, int64_t n, T beta) {
  for (int64_t i = 0; i < n; ++i) dx[i] = g[i] / (T(1) + std::exp(-beta * x[i]));
}

ls::Tensor scaled_softplus_cpu(const std::vector<ls::Value>& args) {
  const char* op = "custom_cuda::scaled_softplus";
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

ls::Tensor scaled_softplus_backward_cpu(const std::vector<ls::Value>& args) {
  const char* op = "custom_cuda::scaled_softplus_backward";
  const ls::Tensor grad = args[0].to_tensor().contiguous();
  const ls::Tensor x = args[1].to_tensor().contiguous();
  check_floating(op, "x", x);
  const double beta = checked_beta(op, args[2]);
  check_like(op, grad, x);
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

// ---- CUDA ----
// The CUDA device index of "cuda:N" ("cuda" alone is device 0).
int device_index(const ls::Device& device) {
  const size_t colon = device.find(':');
  return colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1));
}

// Turns a launcher's CUDA error into a Loom error naming the op and the tensor.
void check_launch(const char* op, const char* error, const ls::Tensor& x) {
  if (error != nullptr) {
    throw ls::Error(LOOM_ERROR,
                    std::string(op) + ": the CUDA kernel failed on " + x.describe() + ": " + error);
  }
}

ls::Tensor scaled_softplus_cuda(const std::vector<ls::Value>& args) {
  const char* op = "custom_cuda::scaled_softplus";
  const ls::Tensor x = args[0].to_tensor().contiguous();
  check_floating(op, "x", x);
  const double beta = checked_beta(op, args[1]);
  const ls::Device device = x.device();
  ls::Tensor y = ls::Tensor::empty(x.sizes(), x.dtype(), device);
  check_launch(op,
               launch_scaled_softplus(device_index(device), ls::device::current_stream(device),
                                      x.dtype() == ls::dtype::float64(), x.data_ptr(), y.data_ptr(),
                                      x.numel(), beta),
               x);
  return y;
}

ls::Tensor scaled_softplus_backward_cuda(const std::vector<ls::Value>& args) {
  const char* op = "custom_cuda::scaled_softplus_backward";
  const ls::Tensor grad = args[0].to_tensor().contiguous();
  const ls::Tensor x = args[1].to_tensor().contiguous();
  check_floating(op, "x", x);
  const double beta = checked_beta(op, args[2]);
  check_like(op, grad, x);
  const ls::Device device = x.device();
  ls::Tensor dx = ls::Tensor::empty(x.sizes(), x.dtype(), device);
  check_launch(
      op,
      launch_scaled_softplus_backward(device_index(device), ls::device::current_stream(device),
                                      x.dtype() == ls::dtype::float64(), grad.data_ptr(),
                                      x.data_ptr(), dx.data_ptr(), x.numel(), beta),
      x);
  return dx;
}

void register_ops(ls::PluginRegistrar& registrar) {
  ls::Library& m = registrar.library("custom_cuda");  // undone when the plugin unloads
  m.def("scaled_softplus(Tensor x, float beta) -> Tensor");
  m.def("scaled_softplus_backward(Tensor grad, Tensor x, float beta) -> Tensor");
  m.impl("scaled_softplus", "CPU", scaled_softplus_cpu);
  m.impl("scaled_softplus", "CUDA", scaled_softplus_cuda);
  m.impl("scaled_softplus_backward", "CPU", scaled_softplus_backward_cpu);
  m.impl("scaled_softplus_backward", "CUDA", scaled_softplus_backward_cuda);
  const ls::Op backward = ls::Op::find("custom_cuda::scaled_softplus_backward");
  m.impl_backward("scaled_softplus", [backward](ls::BackwardContext& ctx) {
    if (!ctx.needs_input_grad(0)) return;
    ctx.set_grad_input(
        0, backward.call_tensor(ctx.grad_output(0), ctx.input(0), ctx.argument(1).to_double()));
  });
}

}  // namespace

// ops_core gives aten::contiguous; Loom's CUDA plugin gives the CUDA dispatch key, the device
// type and its streams, so the loader loads both first (an install without Loom's CUDA plugin
// refuses this extension, naming the missing dependency). The CUDA plugin loads on a machine
// without a GPU too; it then reports 0 devices.
LOOM_STABLE_EXTENSION_DEPS("custom_cuda_op", "1.0.0",
                           "custom_cuda::scaled_softplus (CUDA and CPU, with a backward): the "
                           "SDK's example CUDA op",
                           register_ops, "ops_core", "cuda")
