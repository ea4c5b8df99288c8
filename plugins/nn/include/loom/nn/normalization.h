#pragma once
/// @file
/// BatchNorm1d, BatchNorm2d, LayerNorm and GroupNorm (torch.nn): affine weight ones and
/// bias zeros; batch norm keeps running_mean (zeros), running_var (ones) and
/// num_batches_tracked (int64 0) as buffers when track_running_stats.

#include <cstdint>
#include <optional>
#include <vector>

#include "loom/nn/module.h"

namespace loom::nn {

/// Batch normalisation over the channel dim 1 (what BatchNorm1d and 2d share). In training,
/// batch statistics normalise and the running ones are updated with momentum (or as a
/// cumulative average when momentum is std::nullopt, by num_batches_tracked); in eval, the
/// running statistics normalise (batch ones without track_running_stats).
class BatchNormBase : public Module {
 public:
  /// Sets running_mean to 0, running_var to 1, num_batches_tracked to 0.
  void reset_running_stats();
  /// reset_running_stats(), weight to 1, bias to 0.
  void reset_parameters();
  /// The normalised input.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t num_features;            ///< C
  const double eps;                      ///< added to the variance
  const std::optional<double> momentum;  ///< running-stat factor; nullopt: cumulative average
  const bool affine;                     ///< learnable weight and bias
  const bool track_running_stats;        ///< keep running statistics
  Tensor& weight;                        ///< [C] or undefined
  Tensor& bias;                          ///< [C] or undefined
  Tensor& running_mean;                  ///< [C] or undefined
  Tensor& running_var;                   ///< [C] or undefined
  Tensor& num_batches_tracked;           ///< int64 0-dim or undefined

 protected:
  /// @cond INTERNAL
  BatchNormBase(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                bool track_running_stats);
  virtual void check_input_dim(const Tensor& input) const = 0;
  /// @endcond
};

/// Batch norm of [N, C] or [N, C, L] (torch.nn.BatchNorm1d).
class BatchNorm1d : public BatchNormBase {
 public:
  /// PyTorch's defaults: eps 1e-5, momentum 0.1, affine, tracking running stats.
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNormBase(num_features, eps, momentum, affine, track_running_stats) {}

 protected:
  /// @cond INTERNAL
  void check_input_dim(const Tensor& input) const override;
  /// @endcond
};

/// Batch norm of [N, C, H, W] (torch.nn.BatchNorm2d).
class BatchNorm2d : public BatchNormBase {
 public:
  /// PyTorch's defaults: eps 1e-5, momentum 0.1, affine, tracking running stats.
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5,
                       std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNormBase(num_features, eps, momentum, affine, track_running_stats) {}

 protected:
  /// @cond INTERNAL
  void check_input_dim(const Tensor& input) const override;
  /// @endcond
};

/// Layer normalisation over the trailing normalized_shape dims (torch.nn.LayerNorm).
class LayerNorm : public Module {
 public:
  /// normalized_shape: the trailing sizes normalised together.
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true, bool bias = true);
  /// One trailing dim of size normalized_size.
  explicit LayerNorm(int64_t normalized_size, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true)
      : LayerNorm(std::vector<int64_t>{normalized_size}, eps, elementwise_affine, bias) {}
  /// weight to 1, bias to 0.
  void reset_parameters();
  /// layer_norm(input, normalized_shape, weight, bias, eps).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const std::vector<int64_t> normalized_shape;  ///< trailing sizes
  const double eps;                             ///< added to the variance
  const bool elementwise_affine;                ///< learnable weight (and bias)
  Tensor& weight;                               ///< normalized_shape or undefined
  Tensor& bias;                                 ///< normalized_shape or undefined
};

/// Group normalisation of [N, C, *] in num_groups groups of channels (torch.nn.GroupNorm).
class GroupNorm : public Module {
 public:
  /// num_channels must be divisible by num_groups.
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  /// weight to 1, bias to 0.
  void reset_parameters();
  /// group_norm(input, num_groups, weight, bias, eps).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t num_groups;    ///< groups of channels
  const int64_t num_channels;  ///< C
  const double eps;            ///< added to the variance
  const bool affine;           ///< learnable weight and bias
  Tensor& weight;              ///< [C] or undefined
  Tensor& bias;                ///< [C] or undefined
};

}  // namespace loom::nn
