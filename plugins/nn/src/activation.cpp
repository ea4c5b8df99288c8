#include "loom/nn/activation.h"

#include "loom/nn/init.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn {

Tensor ReLU::forward(const Tensor& input) { return loom::relu(input); }
Tensor ReLU6::forward(const Tensor& input) { return loom::relu6(input); }
Tensor LeakyReLU::forward(const Tensor& input) { return loom::leaky_relu(input, negative_slope); }
std::string LeakyReLU::extra_repr() const { return str_cat("negative_slope=", negative_slope); }
Tensor ELU::forward(const Tensor& input) { return loom::elu(input, alpha); }
std::string ELU::extra_repr() const { return str_cat("alpha=", alpha); }
Tensor SELU::forward(const Tensor& input) { return loom::selu(input); }
Tensor GELU::forward(const Tensor& input) { return loom::gelu(input, approximate); }
std::string GELU::extra_repr() const { return str_cat("approximate='", approximate, "'"); }
Tensor Sigmoid::forward(const Tensor& input) { return loom::sigmoid(input); }
Tensor Tanh::forward(const Tensor& input) { return loom::tanh(input); }
Tensor SiLU::forward(const Tensor& input) { return loom::silu(input); }
Tensor Mish::forward(const Tensor& input) { return loom::mish(input); }
Tensor Softplus::forward(const Tensor& input) { return loom::softplus(input, beta, threshold); }
Tensor Hardtanh::forward(const Tensor& input) { return loom::hardtanh(input, min_val, max_val); }
Tensor Hardsigmoid::forward(const Tensor& input) { return loom::hardsigmoid(input); }
Tensor Hardswish::forward(const Tensor& input) { return loom::hardswish(input); }
Tensor Softmax::forward(const Tensor& input) { return loom::softmax(input, dim); }
std::string Softmax::extra_repr() const { return str_cat("dim=", dim); }
Tensor LogSoftmax::forward(const Tensor& input) { return loom::log_softmax(input, dim); }
std::string LogSoftmax::extra_repr() const { return str_cat("dim=", dim); }

PReLU::PReLU(int64_t n, double init)
    : num_parameters(n), weight(register_parameter("weight", loom::empty({n}))) {
  LOOM_CHECK(n >= 1, "PReLU: num_parameters must be at least 1, got ", n);
  init::constant_(weight, init);
}

Tensor PReLU::forward(const Tensor& input) {
  Tensor a = weight;
  if (num_parameters > 1) {
    LOOM_CHECK(input.dim() >= 2 && input.size(1) == num_parameters,
               "Mismatch of parameter numbers and input channel size. Found parameter numbers = ",
               num_parameters, " and channel size = ", input.dim() >= 2 ? input.size(1) : 1, ".");
    std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
    shape[1] = num_parameters;
    a = weight.view(shape);
  }
  return loom::where(input.ge(0.0), input, input.mul(a));
}

std::string PReLU::extra_repr() const { return str_cat("num_parameters=", num_parameters); }

}  // namespace loom::nn
