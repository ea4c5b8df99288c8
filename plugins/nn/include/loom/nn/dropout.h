#pragma once
/// @file
/// Dropout and Dropout2d (torch.nn): active in training mode only; draws from the CPU
/// default generator (loom::manual_seed makes the masks reproducible).

#include "loom/nn/module.h"

namespace loom::nn {

/// Zeroes each element with probability p in training and scales the rest by 1 / (1 - p);
/// the identity in eval mode.
class Dropout : public Module {
 public:
  /// p in [0, 1]; throws ValueError otherwise.
  explicit Dropout(double p = 0.5);
  /// dropout(input, p, is_training()).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const double p;  ///< probability of zeroing an element
};

/// Zeroes whole channels of [N, C, H, W] with probability p in training (torch.nn.Dropout2d).
class Dropout2d : public Module {
 public:
  /// p in [0, 1]; throws ValueError otherwise.
  explicit Dropout2d(double p = 0.5);
  /// feature_dropout(input, p, is_training()).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const double p;  ///< probability of zeroing a channel
};

}  // namespace loom::nn
