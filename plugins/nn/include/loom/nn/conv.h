#pragma once
/// @file
/// Conv1d, Conv2d and ConvTranspose2d (torch.nn), zero padding, with torch.nn's default
/// init: weight from kaiming_uniform_(a = sqrt(5)), bias from U(-1/sqrt(fan_in),
/// 1/sqrt(fan_in)) with fan_in computed from the weight.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "loom/nn/module.h"

namespace loom::nn {

/// A padding mode argument ("same" or "valid"): anything a string_view is made from except a
/// number, so `Conv2d(3, 8, 3, 1, 0)` still means explicit padding 0.
template <typename P>
concept PaddingMode = std::is_convertible_v<const P&, std::string_view> && !std::is_arithmetic_v<P>;

/// What the convolution layers share: sizes, groups and the parameters.
class ConvNd : public Module {
 public:
  /// Draws weight and bias again from the default distributions.
  void reset_parameters();
  std::string extra_repr() const override;

  const int64_t in_channels;                  ///< C_in
  const int64_t out_channels;                 ///< C_out
  const std::vector<int64_t> kernel_size;     ///< per spatial dim
  const std::vector<int64_t> stride;          ///< per spatial dim
  const std::vector<int64_t> padding;         ///< per spatial dim (empty with a padding mode)
  const std::string padding_mode;             ///< "" (explicit padding), "same" or "valid"
  const std::vector<int64_t> dilation;        ///< per spatial dim
  const std::vector<int64_t> output_padding;  ///< transposed only
  const int64_t groups;                       ///< channel groups
  const bool transposed;                      ///< ConvTranspose*
  Tensor& weight;  ///< [C_out, C_in/groups, *k], transposed [C_in, C_out/groups, *k]
  Tensor& bias;    ///< [C_out] or undefined

 protected:
  /// @cond INTERNAL
  ConvNd(size_t dims, int64_t in_channels, int64_t out_channels, const IntList& kernel_size,
         const IntList& stride, const IntList& padding, std::string padding_mode,
         const IntList& dilation, const IntList& output_padding, int64_t groups, bool bias,
         bool transposed);
  std::optional<Tensor> bias_or_none() const {
    return bias.defined() ? std::optional<Tensor>(bias) : std::nullopt;
  }
  /// @endcond
};

/// 1-d convolution of [N, C_in, L] or [C_in, L] (torch.nn.Conv1d).
class Conv1d : public ConvNd {
 public:
  /// Explicit zero padding.
  Conv1d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,
         IntList padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true);
  /// padding "same" (stride 1) or "valid".
  template <PaddingMode P>
  Conv1d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride,
         const P& padding, IntList dilation = 1, int64_t groups = 1, bool bias = true)
      : ConvNd(1, in_channels, out_channels, kernel_size, stride, 0,
               std::string(std::string_view(padding)), dilation, 0, groups, bias, false) {}
  /// conv1d(input, weight, bias, ...).
  Tensor forward(const Tensor& input) override;
};

/// 2-d convolution of [N, C_in, H, W] or [C_in, H, W] (torch.nn.Conv2d).
class Conv2d : public ConvNd {
 public:
  /// Explicit zero padding.
  Conv2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,
         IntList padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true);
  /// padding "same" (stride 1) or "valid".
  template <PaddingMode P>
  Conv2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride,
         const P& padding, IntList dilation = 1, int64_t groups = 1, bool bias = true)
      : ConvNd(2, in_channels, out_channels, kernel_size, stride, 0,
               std::string(std::string_view(padding)), dilation, 0, groups, bias, false) {}
  /// conv2d(input, weight, bias, ...).
  Tensor forward(const Tensor& input) override;
};

/// 1-d transposed convolution (torch.nn.ConvTranspose1d): output length
/// (L-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1.
class ConvTranspose1d : public ConvNd {
 public:
  /// PyTorch's argument order, as ConvTranspose2d's.
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, IntList kernel_size,
                  IntList stride = 1, IntList padding = 0, IntList output_padding = 0,
                  int64_t groups = 1, bool bias = true, IntList dilation = 1);
  /// conv_transpose1d(input, weight, bias, ...).
  Tensor forward(const Tensor& input) override;
};

/// 2-d transposed convolution (torch.nn.ConvTranspose2d): output size
/// (H-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1.
class ConvTranspose2d : public ConvNd {
 public:
  /// Note PyTorch's argument order: output_padding and groups come before bias and dilation.
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, IntList kernel_size,
                  IntList stride = 1, IntList padding = 0, IntList output_padding = 0,
                  int64_t groups = 1, bool bias = true, IntList dilation = 1);
  /// conv_transpose2d(input, weight, bias, ...).
  Tensor forward(const Tensor& input) override;
};

}  // namespace loom::nn
