#pragma once
/// @file
/// Batch, layer and group normalization of the nn pack, with PyTorch's semantics, and the
/// backward ops autograd uses. The ops_nn plugin must be loaded.
///
/// Statistics are biased (divide by the count) when normalizing; batch norm's running
/// variance is updated with the unbiased one, as PyTorch does. Inputs of float16 and
/// bfloat16 compute in float; float and double accumulate in double.

#include <array>
#include <optional>
#include <tuple>
#include <vector>

#include "loom/ops/op_handle.h"

namespace loom {

/// Batch normalization over dim 1 of input [N, C, *] (native_batch_norm). In training,
/// normalizes with the batch statistics and, when running_mean / running_var are given,
/// updates them in place: running = momentum * batch + (1 - momentum) * running, with the
/// unbiased variance. In evaluation, normalizes with the running statistics (both
/// required). Returns (output, save_mean, save_invstd); the saved statistics are [C] in
/// training and empty [0] tensors in evaluation, as on PyTorch's CPU backend.
inline std::tuple<Tensor, Tensor, Tensor> native_batch_norm(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    bool training, double momentum, double eps) {
  LOOM_TYPED_OP(
      op, "aten::native_batch_norm",
      std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const std::optional<Tensor>&,
                                         const std::optional<Tensor>&, const std::optional<Tensor>&,
                                         const std::optional<Tensor>&, bool, double, double));
  return op(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

/// Gradients of native_batch_norm: (grad_input, grad_weight, grad_bias), each computed only
/// where output_mask says (undefined otherwise). In training the batch statistics are
/// save_mean / save_invstd; in evaluation they are the running ones (eps applied here).
inline std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_invstd, bool train,
    double eps, std::array<bool, 3> output_mask) {
  LOOM_TYPED_OP(
      op, "aten::native_batch_norm_backward",
      std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                         const std::optional<Tensor>&, const std::optional<Tensor>&,
                                         const std::optional<Tensor>&, const std::optional<Tensor>&,
                                         bool, double, const std::vector<bool>&));
  return op(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
            std::vector<bool>(output_mask.begin(), output_mask.end()));
}

/// Batch normalization as torch.batch_norm (PyTorch's argument order): checks the
/// parameters' sizes, then native_batch_norm. An empty input gives a copy of it.
/// cudnn_enabled is accepted for compatibility and ignored.
inline Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias,
                         const std::optional<Tensor>& running_mean,
                         const std::optional<Tensor>& running_var, bool training, double momentum,
                         double eps, bool cudnn_enabled = true) {
  LOOM_TYPED_OP(op, "aten::batch_norm",
                Tensor(const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&,
                       const std::optional<Tensor>&, const std::optional<Tensor>&, bool, double,
                       double, bool));
  return op(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled);
}

/// Layer normalization over the trailing dims normalized_shape (native_layer_norm).
/// Returns (output, mean, rstd); mean and rstd have input's leading sizes followed by one
/// 1 per normalized dim ([2, 3, 1] for input [2, 3, 4] and normalized_shape [4]).
inline std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input,
                                                            IntArrayRef normalized_shape,
                                                            const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias,
                                                            double eps) {
  LOOM_TYPED_OP(
      op, "aten::native_layer_norm",
      std::tuple<Tensor, Tensor, Tensor>(const Tensor&, IntArrayRef, const std::optional<Tensor>&,
                                         const std::optional<Tensor>&, double));
  return op(input, normalized_shape, weight, bias, eps);
}

/// Gradients of native_layer_norm from its saved mean and rstd: (grad_input, grad_weight,
/// grad_bias) where output_mask says (undefined otherwise).
inline std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape, const Tensor& mean,
    const Tensor& rstd, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    std::array<bool, 3> output_mask) {
  LOOM_TYPED_OP(
      op, "aten::native_layer_norm_backward",
      std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, IntArrayRef, const Tensor&,
                                         const Tensor&, const std::optional<Tensor>&,
                                         const std::optional<Tensor>&, const std::vector<bool>&));
  return op(grad_out, input, normalized_shape, mean, rstd, weight, bias,
            std::vector<bool>(output_mask.begin(), output_mask.end()));
}

/// Layer normalization as torch.layer_norm (F.layer_norm): the output of native_layer_norm.
inline Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                         const std::optional<Tensor>& weight = std::nullopt,
                         const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5,
                         bool cudnn_enable = true) {
  LOOM_TYPED_OP(op, "aten::layer_norm",
                Tensor(const Tensor&, IntArrayRef, const std::optional<Tensor>&,
                       const std::optional<Tensor>&, double, bool));
  return op(input, normalized_shape, weight, bias, eps, cudnn_enable);
}

/// Group normalization of input viewed as [N, C, HxW] with `group` groups of C / group
/// channels (native_group_norm). Returns (output, mean, rstd), mean and rstd of shape
/// [N, group].
inline std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input,
                                                            const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias,
                                                            int64_t N, int64_t C, int64_t HxW,
                                                            int64_t group, double eps) {
  LOOM_TYPED_OP(op, "aten::native_group_norm",
                std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const std::optional<Tensor>&,
                                                   const std::optional<Tensor>&, int64_t, int64_t,
                                                   int64_t, int64_t, double));
  return op(input, weight, bias, N, C, HxW, group, eps);
}

/// Gradients of native_group_norm from its saved mean and rstd: (grad_input, grad_weight,
/// grad_bias) where output_mask says (undefined otherwise).
inline std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const std::optional<Tensor>& weight, int64_t N, int64_t C, int64_t HxW, int64_t group,
    std::array<bool, 3> output_mask) {
  LOOM_TYPED_OP(
      op, "aten::native_group_norm_backward",
      std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                         const std::optional<Tensor>&, int64_t, int64_t, int64_t,
                                         int64_t, const std::vector<bool>&));
  return op(grad_out, input, mean, rstd, weight, N, C, HxW, group,
            std::vector<bool>(output_mask.begin(), output_mask.end()));
}

/// Group normalization as torch.group_norm (F.group_norm) of input [N, C, *].
inline Tensor group_norm(const Tensor& input, int64_t num_groups,
                         const std::optional<Tensor>& weight = std::nullopt,
                         const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5,
                         bool cudnn_enabled = true) {
  LOOM_TYPED_OP(op, "aten::group_norm",
                Tensor(const Tensor&, int64_t, const std::optional<Tensor>&,
                       const std::optional<Tensor>&, double, bool));
  return op(input, num_groups, weight, bias, eps, cudnn_enabled);
}

}  // namespace loom
