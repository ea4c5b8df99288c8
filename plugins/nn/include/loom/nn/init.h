#pragma once
/// @file
/// Parameter initialisation (torch.nn.init): every function fills its tensor in place
/// without recording autograd, draws from `generator` (the CPU default generator when null,
/// so loom::manual_seed(s) makes it reproducible) and returns the tensor.

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "loom/core/generator.h"
#include "loom/core/tensor.h"

namespace loom::nn::init {

/// Which fan kaiming_* scales by: fan_in keeps the forward pass's variance, fan_out the
/// backward's.
enum class FanMode { FanIn, FanOut };

/// The recommended gain for a nonlinearity (torch.nn.init.calculate_gain): 1 for linear,
/// conv*, sigmoid; 5/3 for tanh; sqrt(2) for relu; sqrt(2 / (1 + slope^2)) for leaky_relu
/// (param is the slope, 0.01 when absent); 3/4 for selu. Throws ValueError for others.
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);
/// (fan_in, fan_out) of a weight of at least 2 dims: size(1) and size(0) times the
/// receptive field (the product of the dims after the second). Throws ValueError below 2.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

/// Fills with values drawn from U(a, b).
const Tensor& uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0,
                       Generator* generator = nullptr);
/// Fills with values drawn from N(mean, std^2).
const Tensor& normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0,
                      Generator* generator = nullptr);
/// Fills with value.
const Tensor& constant_(const Tensor& tensor, double value);
/// Fills with zeros.
const Tensor& zeros_(const Tensor& tensor);
/// Fills with ones.
const Tensor& ones_(const Tensor& tensor);
/// Xavier/Glorot uniform: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)).
const Tensor& xavier_uniform_(const Tensor& tensor, double gain = 1.0,
                              Generator* generator = nullptr);
/// Xavier/Glorot normal: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
const Tensor& xavier_normal_(const Tensor& tensor, double gain = 1.0,
                             Generator* generator = nullptr);
/// Kaiming/He uniform: U(-bound, bound), bound = gain * sqrt(3 / fan), gain from
/// calculate_gain(nonlinearity, a), fan by mode.
const Tensor& kaiming_uniform_(const Tensor& tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                               std::string_view nonlinearity = "leaky_relu",
                               Generator* generator = nullptr);
/// Kaiming/He normal: N(0, std^2), std = gain / sqrt(fan).
const Tensor& kaiming_normal_(const Tensor& tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                              std::string_view nonlinearity = "leaky_relu",
                              Generator* generator = nullptr);

}  // namespace loom::nn::init
