#include "loom/nn/init.h"

#include <cmath>
#include <string>

#include "loom/autograd/grad_mode.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn::init {

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  const std::string_view linear_fns[] = {"linear",          "conv1d",           "conv2d",
                                         "conv3d",          "conv_transpose1d", "conv_transpose2d",
                                         "conv_transpose3d"};
  for (std::string_view f : linear_fns) {
    if (nonlinearity == f) return 1.0;
  }
  if (nonlinearity == "sigmoid") return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  LOOM_THROW(ValueError, "Unsupported nonlinearity ", nonlinearity);
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  LOOM_CHECK(tensor.dim() >= 2,
             "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

const Tensor& uniform_(const Tensor& tensor, double a, double b, Generator* generator) {
  autograd::NoGradGuard no_grad;
  if (tensor.numel() == 0) return tensor;
  const Tensor r = loom::rand(tensor.sizes(), generator, tensor.dtype(), tensor.device());
  tensor.copy_(r.mul(b - a).add(a));
  return tensor;
}

const Tensor& normal_(const Tensor& tensor, double mean, double std, Generator* generator) {
  autograd::NoGradGuard no_grad;
  if (tensor.numel() == 0) return tensor;
  const Tensor r = loom::randn(tensor.sizes(), generator, tensor.dtype(), tensor.device());
  tensor.copy_(r.mul(std).add(mean));
  return tensor;
}

const Tensor& constant_(const Tensor& tensor, double value) {
  autograd::NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}

const Tensor& zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }

const Tensor& ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

const Tensor& xavier_uniform_(const Tensor& tensor, double gain, Generator* generator) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double a = std::sqrt(3.0) * std;
  return uniform_(tensor, -a, a, generator);
}

const Tensor& xavier_normal_(const Tensor& tensor, double gain, Generator* generator) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return normal_(tensor, 0.0, std, generator);
}

namespace {
double kaiming_std(const Tensor& tensor, double a, FanMode mode, std::string_view nonlinearity) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const int64_t fan = mode == FanMode::FanIn ? fan_in : fan_out;
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}
}  // namespace

const Tensor& kaiming_uniform_(const Tensor& tensor, double a, FanMode mode,
                               std::string_view nonlinearity, Generator* generator) {
  if (tensor.numel() == 0) return tensor;  // PyTorch warns and does nothing
  const double bound = std::sqrt(3.0) * kaiming_std(tensor, a, mode, nonlinearity);
  return uniform_(tensor, -bound, bound, generator);
}

const Tensor& kaiming_normal_(const Tensor& tensor, double a, FanMode mode,
                              std::string_view nonlinearity, Generator* generator) {
  if (tensor.numel() == 0) return tensor;
  return normal_(tensor, 0.0, kaiming_std(tensor, a, mode, nonlinearity), generator);
}

}  // namespace loom::nn::init
