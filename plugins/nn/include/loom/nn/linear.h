#pragma once
/// @file
/// Identity, Linear, Bilinear, Flatten and Unflatten, with torch.nn's default init.

#include <cstdint>
#include <vector>

#include "loom/nn/module.h"

namespace loom::nn {

/// Returns its input (torch.nn.Identity).
class Identity : public Module {
 public:
  /// Returns input.
  Tensor forward(const Tensor& input) override { return input; }
};

/// y = x W^T + b over the last dim (torch.nn.Linear). weight [out, in] from
/// kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)); bias [out] from
/// U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
 public:
  /// A layer from in_features to out_features, with or without bias.
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  /// Draws weight and bias again from the default distributions.
  void reset_parameters();
  /// input [..., in_features] -> [..., out_features].
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t in_features;   ///< size of the input's last dim
  const int64_t out_features;  ///< size of the output's last dim
  Tensor& weight;              ///< [out_features, in_features]
  Tensor& bias;                ///< [out_features], or undefined without bias
};

/// y = x1^T A x2 + b (torch.nn.Bilinear): weight [out, in1, in2] and bias [out] from
/// U(-1/sqrt(in1), 1/sqrt(in1)).
class Bilinear : public Module {
 public:
  /// A layer of inputs of in1_features and in2_features to out_features.
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  /// Draws weight and bias again.
  void reset_parameters();
  /// input1 [..., in1], input2 [..., in2] -> [..., out].
  Tensor forward(const Tensor& input1, const Tensor& input2);
  /// Bilinear takes two inputs; the one-input form throws ValueError.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t in1_features;  ///< size of input1's last dim
  const int64_t in2_features;  ///< size of input2's last dim
  const int64_t out_features;  ///< size of the output's last dim
  Tensor& weight;              ///< [out_features, in1_features, in2_features]
  Tensor& bias;                ///< [out_features] or undefined
};

/// Flattens dims start_dim..end_dim into one (torch.nn.Flatten; start_dim 1 keeps the batch).
class Flatten : public Module {
 public:
  /// Flattens start_dim through end_dim.
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim(start_dim), end_dim(end_dim) {}
  /// input.flatten(start_dim, end_dim).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const int64_t start_dim;  ///< first dim flattened
  const int64_t end_dim;    ///< last dim flattened
};

/// Splits dim into sizes (torch.nn.Unflatten).
class Unflatten : public Module {
 public:
  /// Unflattens dim into sizes.
  Unflatten(int64_t dim, std::vector<int64_t> sizes) : dim(dim), sizes(std::move(sizes)) {}
  /// input.unflatten(dim, sizes).
  Tensor forward(const Tensor& input) override;
  const int64_t dim;                 ///< the dim split
  const std::vector<int64_t> sizes;  ///< what it becomes
};

}  // namespace loom::nn
