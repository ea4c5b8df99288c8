#include "loom/nn/activation.h"

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

}  // namespace loom::nn
