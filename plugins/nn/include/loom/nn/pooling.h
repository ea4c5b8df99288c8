#pragma once
/// @file
/// Pooling modules (torch.nn): MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool2d.

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/nn/module.h"

namespace loom::nn {

/// Max over windows of [N, C, L] (torch.nn.MaxPool1d); stride defaults to kernel_size.
class MaxPool1d : public Module {
 public:
  /// stride std::nullopt: kernel_size.
  explicit MaxPool1d(IntList kernel_size, std::optional<IntList> stride = std::nullopt,
                     IntList padding = 0, IntList dilation = 1, bool ceil_mode = false);
  /// max_pool1d(input, ...).
  Tensor forward(const Tensor& input) override;
  const std::vector<int64_t> kernel_size;  ///< window size per dim
  const std::vector<int64_t> stride;       ///< window step per dim
  const std::vector<int64_t> padding;      ///< implicit -inf padding per side
  const std::vector<int64_t> dilation;     ///< spacing of window elements
  const bool ceil_mode;                    ///< ceil instead of floor for the output size
};

/// Max over windows of [N, C, H, W] (torch.nn.MaxPool2d); stride defaults to kernel_size.
class MaxPool2d : public Module {
 public:
  /// stride std::nullopt: kernel_size.
  explicit MaxPool2d(IntList kernel_size, std::optional<IntList> stride = std::nullopt,
                     IntList padding = 0, IntList dilation = 1, bool ceil_mode = false);
  /// max_pool2d(input, ...).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const std::vector<int64_t> kernel_size;  ///< window size per dim
  const std::vector<int64_t> stride;       ///< window step per dim
  const std::vector<int64_t> padding;      ///< implicit -inf padding per side
  const std::vector<int64_t> dilation;     ///< spacing of window elements
  const bool ceil_mode;                    ///< ceil instead of floor for the output size
};

/// Mean over windows of [N, C, L] (torch.nn.AvgPool1d).
class AvgPool1d : public Module {
 public:
  /// stride std::nullopt: kernel_size.
  explicit AvgPool1d(IntList kernel_size, std::optional<IntList> stride = std::nullopt,
                     IntList padding = 0, bool ceil_mode = false, bool count_include_pad = true);
  /// avg_pool1d(input, ...).
  Tensor forward(const Tensor& input) override;
  const std::vector<int64_t> kernel_size;  ///< window size per dim
  const std::vector<int64_t> stride;       ///< window step per dim
  const std::vector<int64_t> padding;      ///< implicit zero padding per side
  const bool ceil_mode;                    ///< ceil instead of floor for the output size
  const bool count_include_pad;            ///< padding counts in the divisor
};

/// Mean over windows of [N, C, H, W] (torch.nn.AvgPool2d).
class AvgPool2d : public Module {
 public:
  /// stride std::nullopt: kernel_size.
  explicit AvgPool2d(IntList kernel_size, std::optional<IntList> stride = std::nullopt,
                     IntList padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                     std::optional<int64_t> divisor_override = std::nullopt);
  /// avg_pool2d(input, ...).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const std::vector<int64_t> kernel_size;         ///< window size per dim
  const std::vector<int64_t> stride;              ///< window step per dim
  const std::vector<int64_t> padding;             ///< implicit zero padding per side
  const bool ceil_mode;                           ///< ceil instead of floor for the output size
  const bool count_include_pad;                   ///< padding counts in the divisor
  const std::optional<int64_t> divisor_override;  ///< fixed divisor
};

/// Mean pooling to a fixed output size [H', W'] (torch.nn.AdaptiveAvgPool2d).
class AdaptiveAvgPool2d : public Module {
 public:
  /// One size for both dims or {H', W'}.
  explicit AdaptiveAvgPool2d(IntList output_size);
  /// adaptive_avg_pool2d(input, output_size).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const std::vector<int64_t> output_size;  ///< [H', W']
};

/// Mean pooling of [N, C, L] to a fixed length (torch.nn.AdaptiveAvgPool1d).
class AdaptiveAvgPool1d : public Module {
 public:
  /// The output length.
  explicit AdaptiveAvgPool1d(int64_t output_size) : output_size(output_size) {}
  /// adaptive_avg_pool1d(input, output_size).
  Tensor forward(const Tensor& input) override;
  const int64_t output_size;  ///< L'
};

/// Max pooling to a fixed output size [H', W'] (torch.nn.AdaptiveMaxPool2d); forward returns
/// the values, forward_with_indices also the flat argmax per plane.
class AdaptiveMaxPool2d : public Module {
 public:
  /// One size for both dims or {H', W'}.
  explicit AdaptiveMaxPool2d(IntList output_size);
  /// The pooled values.
  Tensor forward(const Tensor& input) override;
  /// (values, indices).
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  const std::vector<int64_t> output_size;  ///< [H', W']
};

/// Resizes the spatial dims by scale_factor or to size with F.interpolate's modes
/// (torch.nn.Upsample): "nearest", "nearest-exact", "linear", "bilinear", "trilinear".
class Upsample : public Module {
 public:
  /// Give exactly one of size and scale_factor (the other empty); align_corners only with
  /// the linear modes.
  Upsample(std::vector<int64_t> size, std::vector<double> scale_factor,
           std::string mode = "nearest", std::optional<bool> align_corners = std::nullopt);
  /// interpolate(input, options).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  const std::vector<int64_t> size;          ///< output spatial sizes, or empty
  const std::vector<double> scale_factor;   ///< spatial multipliers, or empty
  const std::string mode;                   ///< interpolation mode
  const std::optional<bool> align_corners;  ///< linear modes only
};

}  // namespace loom::nn
