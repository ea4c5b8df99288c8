#pragma once
/// @file
/// Argument checks, parameter parsing and output shapes every backend of the normalization
/// ops (native_batch_norm, native_layer_norm, native_group_norm, their backward ops and the
/// batch_norm / layer_norm / group_norm composites) shares, so that error messages are word
/// for word the same on every device. Each kernel checks its own devices and the dtypes it
/// supports first, then calls these.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor.h"

namespace loom::ops::meta {

/// Whether an optional parameter (weight, bias, a statistic) is given and defined.
inline bool norm_param_present(const std::optional<Tensor>& t) { return t && t->defined(); }

/// The product of sizes[first, last).
inline int64_t norm_numel(IntArrayRef sizes, size_t first, size_t last) {
  int64_t n = 1;
  for (size_t d = first; d < last; ++d) n *= sizes[d];
  return n;
}

/// Throws unless a backward op's output_mask has its 3 entries (input, weight, bias).
inline void check_norm_output_mask(std::string_view op, const std::vector<bool>& mask) {
  LOOM_CHECK(mask.size() == 3, op, ": output_mask must have 3 entries, got ", mask.size());
}

/// Throws unless input is [N, C, *] (batch norm, group norm).
inline void check_norm_at_least_2d(std::string_view op, const Tensor& input) {
  LOOM_CHECK(input.dim() >= 2, op, ": expected input with at least 2 dims (N, C, *), but got ",
             "input of size ", sizes_str(input.sizes()));
}

/// Throws unless grad_out has input's sizes.
inline void check_norm_grad_sizes(std::string_view op, const Tensor& grad_out,
                                  const Tensor& input) {
  LOOM_CHECK(grad_out.sizes() == input.sizes(), op, ": grad_out of size ",
             sizes_str(grad_out.sizes()), " does not match input of size ",
             sizes_str(input.sizes()));
}

// ---- batch norm ----

/// PyTorch's size checks of _batch_norm_impl_index, shared by batch_norm and the native ops:
/// every given parameter has C = input.size(1) elements, and the running statistics are
/// given in evaluation mode. Messages start with op (PyTorch's have no op name).
inline void check_batch_norm_params(std::string_view op, const Tensor& input,
                                    const std::optional<Tensor>& weight,
                                    const std::optional<Tensor>& bias,
                                    const std::optional<Tensor>& running_mean,
                                    const std::optional<Tensor>& running_var, bool training) {
  const int64_t c = input.size(1);
  auto check = [&](const char* name, const std::optional<Tensor>& t) {
    if (!norm_param_present(t)) return;
    LOOM_CHECK(t->numel() == c, op, ": ", name, " should contain ", c, " elements not ",
               t->numel());
  };
  check("running_mean", running_mean);
  LOOM_CHECK(training || norm_param_present(running_mean), op,
             ": running_mean must be defined in evaluation mode");
  check("running_var", running_var);
  LOOM_CHECK(training || norm_param_present(running_var), op,
             ": running_var must be defined in evaluation mode");
  check("weight", weight);
  check("bias", bias);
}

/// Throws, in training mode, unless input [N, C, *] has more than one value per channel
/// (N times the product of the sizes after C), as torch.nn.functional.batch_norm does: with
/// one value the batch variance is 0, so the output is the bias alone, and the running
/// variance's unbiased update divides 0 by 0. An empty input passes (batch_norm returns it
/// as it is; native_batch_norm refuses it in check_native_batch_norm).
inline void check_batch_norm_values_per_channel(std::string_view op, const Tensor& input,
                                                bool training) {
  if (!training) return;
  const int64_t per_channel = input.size(0) * norm_numel(input.sizes(), 2, input.sizes().size());
  LOOM_CHECK(per_channel != 1, op,
             ": Expected more than 1 value per channel when training, got input size ",
             sizes_str(input.sizes()));
}

/// native_batch_norm's checks after the devices and dtypes: input [N, C, *] (done first by
/// the caller), the parameters, a non-empty input in training mode, and more than one value
/// per channel to take a variance of.
inline void check_native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                    const std::optional<Tensor>& bias,
                                    const std::optional<Tensor>& running_mean,
                                    const std::optional<Tensor>& running_var, bool training) {
  check_batch_norm_params("native_batch_norm", input, weight, bias, running_mean, running_var,
                          training);
  LOOM_CHECK(!training || input.numel() > 0,
             "native_batch_norm: input tensor must have at least one element, but got input_sizes "
             "= ",
             sizes_str(input.sizes()));
  check_batch_norm_values_per_channel("native_batch_norm", input, training);
}

/// native_batch_norm_backward's checks of the statistics and the weight: save_mean and
/// save_invstd in training mode (train), else running_mean and running_var, must be given,
/// each with C elements, as must a given weight.
inline void check_batch_norm_backward_stats(std::string_view op, int64_t C, bool train,
                                            const std::optional<Tensor>& running_mean,
                                            const std::optional<Tensor>& running_var,
                                            const std::optional<Tensor>& save_mean,
                                            const std::optional<Tensor>& save_invstd,
                                            const std::optional<Tensor>& weight) {
  auto check_stat = [&](const char* name, const std::optional<Tensor>& t, const char* mode) {
    LOOM_CHECK(norm_param_present(t), op, ": ", name, " must be defined in ", mode, " mode");
    LOOM_CHECK(t->numel() == C, op, ": ", name, " should contain ", C, " elements not ",
               t->numel());
  };
  if (train) {
    check_stat("save_mean", save_mean, "training");
    check_stat("save_invstd", save_invstd, "training");
  } else {
    check_stat("running_mean", running_mean, "evaluation");
    check_stat("running_var", running_var, "evaluation");
  }
  if (norm_param_present(weight)) {
    LOOM_CHECK(weight->numel() == C, op, ": weight should contain ", C, " elements not ",
               weight->numel());
  }
}

// ---- layer norm ----

/// PyTorch's _check_layer_norm_inputs, its messages prefixed with op; returns (M, N): the
/// number of normalized rows and their length.
inline std::pair<int64_t, int64_t> check_layer_norm_inputs(std::string_view op, const Tensor& input,
                                                           IntArrayRef normalized_shape,
                                                           const std::optional<Tensor>& weight,
                                                           const std::optional<Tensor>& bias) {
  const auto nd = static_cast<int64_t>(normalized_shape.size());
  LOOM_CHECK(nd >= 1, op,
             ": Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
             "least one element, but got normalized_shape = ",
             sizes_str(normalized_shape));
  LOOM_CHECK(!norm_param_present(weight) || weight->sizes() == normalized_shape, op,
             ": Expected weight to be of same shape as normalized_shape, but got weight of shape ",
             sizes_str(weight->sizes()), " and normalized_shape = ", sizes_str(normalized_shape));
  LOOM_CHECK(!norm_param_present(bias) || bias->sizes() == normalized_shape, op,
             ": Expected bias to be of same shape as normalized_shape, but got bias of shape ",
             sizes_str(bias->sizes()), " and normalized_shape = ", sizes_str(normalized_shape));
  const int64_t in_nd = input.dim();
  bool ok = in_nd >= nd;
  for (int64_t i = 0; ok && i < nd; ++i) ok = input.size(in_nd - nd + i) == normalized_shape[i];
  if (!ok) {
    std::string expected = "[*";
    for (int64_t s : normalized_shape) expected += str_cat(", ", s);
    LOOM_THROW(ValueError, op, ": Given normalized_shape=", sizes_str(normalized_shape),
               ", expected input with shape ", expected, "], but got input of size",
               sizes_str(input.sizes()));
  }
  const auto split = static_cast<size_t>(in_nd - nd);
  return {norm_numel(input.sizes(), 0, split),
          norm_numel(input.sizes(), split, input.sizes().size())};
}

/// mean and rstd's sizes: input's leading sizes, then a 1 per normalized dim.
inline std::vector<int64_t> layer_norm_stat_sizes(const Tensor& input, size_t normalized_ndim) {
  std::vector<int64_t> s(input.sizes().begin(), input.sizes().end());
  for (size_t i = s.size() - normalized_ndim; i < s.size(); ++i) s[i] = 1;
  return s;
}

/// native_layer_norm_backward's checks after check_layer_norm_inputs (which gave M):
/// grad_out has input's sizes, mean and rstd one element per row.
inline void check_layer_norm_backward(std::string_view op, const Tensor& grad_out,
                                      const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                      int64_t M) {
  check_norm_grad_sizes(op, grad_out, input);
  LOOM_CHECK(mean.numel() == M && rstd.numel() == M, op, ": expected mean and rstd with ", M,
             " elements (one per normalized row), but got mean ", mean.describe(), " and rstd ",
             rstd.describe());
}

// ---- group norm ----

/// PyTorch's group norm checks of num_groups against C and of weight and bias ([C] each), its
/// messages prefixed with op.
inline void check_group_norm_inputs(std::string_view op, const Tensor& input,
                                    const std::optional<Tensor>& weight,
                                    const std::optional<Tensor>& bias, int64_t C, int64_t group) {
  LOOM_CHECK(group > 0, op, ": Expected num_groups to be positive, but got num_groups=", group);
  LOOM_CHECK(C % group == 0, op,
             ": Expected number of channels in input to be divisible by num_groups, but got "
             "input of shape ",
             sizes_str(input.sizes()), " and num_groups=", group);
  LOOM_CHECK(!norm_param_present(weight) || (weight->dim() == 1 && weight->numel() == C), op,
             ": Expected weight to be a vector of size equal to the number of channels in input, "
             "but got weight of shape ",
             sizes_str(weight->sizes()), " and input of shape ", sizes_str(input.sizes()));
  LOOM_CHECK(!norm_param_present(bias) || (bias->dim() == 1 && bias->numel() == C), op,
             ": Expected bias to be a vector of size equal to the number of channels in input, "
             "but got bias of shape ",
             sizes_str(bias->sizes()), " and input of shape ", sizes_str(input.sizes()));
}

/// Throws unless input holds N * C * HxW elements (the native group norm ops' geometry).
inline void check_group_norm_geometry(std::string_view op, const Tensor& input, int64_t N,
                                      int64_t C, int64_t HxW) {
  LOOM_CHECK(N >= 0 && C >= 0 && HxW >= 0 && input.numel() == N * C * HxW, op,
             ": expected input with N * C * HxW = ", N, " * ", C, " * ", HxW,
             " elements, but got input of shape ", sizes_str(input.sizes()));
}

/// native_group_norm_backward's checks after the inputs and geometry: grad_out has input's
/// sizes, mean and rstd N * group elements.
inline void check_group_norm_backward(std::string_view op, const Tensor& grad_out,
                                      const Tensor& input, const Tensor& mean, const Tensor& rstd,
                                      int64_t N, int64_t group) {
  check_norm_grad_sizes(op, grad_out, input);
  LOOM_CHECK(mean.numel() == N * group && rstd.numel() == N * group, op,
             ": expected mean and rstd with N * group = ", N * group, " elements, but got mean ",
             mean.describe(), " and rstd ", rstd.describe());
}

}  // namespace loom::ops::meta
