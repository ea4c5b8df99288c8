#pragma once
/// @file
/// Activation modules (torch.nn): each applies the op pack's function of the same name.

#include <cstdint>
#include <string>

#include "loom/nn/module.h"

namespace loom::nn {

/// max(0, x).
class ReLU : public Module {
 public:
  /// relu(input).
  Tensor forward(const Tensor& input) override;
};

/// min(max(0, x), 6).
class ReLU6 : public Module {
 public:
  /// relu6(input).
  Tensor forward(const Tensor& input) override;
};

/// x for x >= 0, negative_slope * x below.
class LeakyReLU : public Module {
 public:
  /// PyTorch's default slope 0.01.
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  /// leaky_relu(input, negative_slope).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const double negative_slope;  ///< slope below 0
};

/// x for x > 0, alpha * (exp(x) - 1) below.
class ELU : public Module {
 public:
  /// PyTorch's default alpha 1.
  explicit ELU(double alpha = 1.0) : alpha(alpha) {}
  /// elu(input, alpha).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const double alpha;  ///< the negative saturation
};

/// Scaled ELU with the self-normalising constants.
class SELU : public Module {
 public:
  /// selu(input).
  Tensor forward(const Tensor& input) override;
};

/// x * Phi(x); approximate "tanh" uses the tanh formula.
class GELU : public Module {
 public:
  /// approximate: "none" or "tanh".
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {}
  /// gelu(input, approximate).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const std::string approximate;  ///< "none" or "tanh"
};

/// 1 / (1 + exp(-x)).
class Sigmoid : public Module {
 public:
  /// sigmoid(input).
  Tensor forward(const Tensor& input) override;
};

/// tanh(x).
class Tanh : public Module {
 public:
  /// tanh(input).
  Tensor forward(const Tensor& input) override;
};

/// x * sigmoid(x).
class SiLU : public Module {
 public:
  /// silu(input).
  Tensor forward(const Tensor& input) override;
};

/// x * tanh(softplus(x)).
class Mish : public Module {
 public:
  /// mish(input).
  Tensor forward(const Tensor& input) override;
};

/// log(1 + exp(beta * x)) / beta, linear above threshold.
class Softplus : public Module {
 public:
  /// PyTorch's defaults beta 1, threshold 20.
  explicit Softplus(double beta = 1.0, double threshold = 20.0)
      : beta(beta), threshold(threshold) {}
  /// softplus(input, beta, threshold).
  Tensor forward(const Tensor& input) override;
  const double beta;       ///< sharpness
  const double threshold;  ///< linear above beta * x > threshold
};

/// x clamped to [min_val, max_val].
class Hardtanh : public Module {
 public:
  /// PyTorch's defaults -1, 1.
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0)
      : min_val(min_val), max_val(max_val) {}
  /// hardtanh(input, min_val, max_val).
  Tensor forward(const Tensor& input) override;
  const double min_val;  ///< lower bound
  const double max_val;  ///< upper bound
};

/// Piecewise-linear sigmoid.
class Hardsigmoid : public Module {
 public:
  /// hardsigmoid(input).
  Tensor forward(const Tensor& input) override;
};

/// x * hardsigmoid(x).
class Hardswish : public Module {
 public:
  /// hardswish(input).
  Tensor forward(const Tensor& input) override;
};

/// x for x >= 0, a * x below, with a learnable a per channel (torch.nn.PReLU): weight
/// [num_parameters] starts at init; with several parameters, input dim 1 is the channel.
class PReLU : public Module {
 public:
  /// num_parameters 1 (shared) or the number of channels.
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  /// where(x >= 0, x, weight * x), weight broadcast along dim 1.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const int64_t num_parameters;  ///< 1 or C
  Tensor& weight;                ///< [num_parameters]
};

/// softmax along dim.
class Softmax : public Module {
 public:
  /// The dim normalised.
  explicit Softmax(int64_t dim) : dim(dim) {}
  /// softmax(input, dim).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const int64_t dim;  ///< normalised dim
};

/// log(softmax) along dim, computed stably.
class LogSoftmax : public Module {
 public:
  /// The dim normalised.
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  /// log_softmax(input, dim).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const int64_t dim;  ///< normalised dim
};

}  // namespace loom::nn
