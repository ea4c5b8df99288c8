// CUDA kernels of native_batch_norm, native_layer_norm, native_group_norm and their backward
// ops on the own kernels of libs/normalization.cu, with the reference
// CPU kernels' checks and results (ops/nn/cpu/normalization.cpp): saved statistics in the
// input's dtype, running statistics updated in place with momentum (unbiased variance), empty
// [0] saved statistics in evaluation mode. Own kernels rather than cuDNN's batch norm: they take
// every dtype the reference does with optional weight and bias, and sum in a fixed order
// (deterministic).
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "libs/common.h"
#include "libs/kernels.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/pointwise.h"

namespace loom::cuda::libs {
namespace {

using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;

bool present(const std::optional<Tensor>& t) { return t && t->defined(); }

int64_t prod(IntArrayRef sizes, size_t first, size_t last) {
  int64_t n = 1;
  for (size_t d = first; d < last; ++d) n *= sizes[d];
  return n;
}

void check_mask(std::string_view op, const std::vector<bool>& mask) {
  LOOM_CHECK(mask.size() == 3, op, ": output_mask must have 3 entries, got ", mask.size());
}

void check_at_least_2d(std::string_view op, const Tensor& input) {
  LOOM_CHECK(input.dim() >= 2, op, ": expected input with at least 2 dims (N, C, *), but got ",
             "input of size ", sizes_str(input.sizes()));
}

/// An optional parameter as a contiguous tensor of dtype d on the device, or undefined.
Tensor param_as(const std::optional<Tensor>& t, DType d) {
  return present(t) ? contiguous_as(*t, d) : Tensor();
}

const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

void check_devices(std::string_view op, const Tensor& input,
                   std::initializer_list<std::pair<const char*, const std::optional<Tensor>*>> opt) {
  for (const auto& [name, t] : opt) {
    if (present(*t)) check_cuda_tensors(op, {{"input", input}, {name, **t}});
  }
}

// ---- batch norm ----

void check_batch_norm_params(const Tensor& input, const std::optional<Tensor>& weight,
                             const std::optional<Tensor>& bias,
                             const std::optional<Tensor>& running_mean,
                             const std::optional<Tensor>& running_var, bool training) {
  const int64_t c = input.size(1);
  auto check = [&](const char* name, const std::optional<Tensor>& t) {
    if (!present(t)) return;
    LOOM_CHECK(t->numel() == c, name, " should contain ", c, " elements not ", t->numel());
  };
  check("running_mean", running_mean);
  LOOM_CHECK(training || present(running_mean), "running_mean must be defined in evaluation mode");
  check("running_var", running_var);
  LOOM_CHECK(training || present(running_var), "running_var must be defined in evaluation mode");
  check("weight", weight);
  check("bias", bias);
}

/// A running statistic the kernel updates: t itself when contiguous in dtype d, else a
/// contiguous copy in d that finish() writes back.
struct RunningStat {
  RunningStat(const std::optional<Tensor>& t, DType d) {
    if (!present(t)) return;
    target = *t;
    work = t->dtype() == d && t->is_contiguous() ? *t : contiguous_as(*t, d);
  }
  void* data() const { return work.defined() ? work.data_ptr() : nullptr; }
  void finish() const {
    if (!target.defined()) return;
    if (work.is_same(target)) {
      target.bump_version();
    } else {
      copy_into(target, work);
    }
  }
  Tensor target, work;
};

Tensor3 native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias,
                          const std::optional<Tensor>& running_mean,
                          const std::optional<Tensor>& running_var, bool training, double momentum,
                          double eps) {
  constexpr const char* op = "native_batch_norm";
  check_cuda_tensors(op, {{"input", input}});
  check_devices(op, input, {{"weight", &weight}, {"bias", &bias}, {"running_mean", &running_mean},
                            {"running_var", &running_var}});
  check_at_least_2d(op, input);
  check_float_dtype(op, "input", input);
  check_batch_norm_params(input, weight, bias, running_mean, running_var, training);
  LOOM_CHECK(!training || input.numel() > 0,
             "input tensor must have at least one element, but got input_sizes = ",
             sizes_str(input.sizes()));
  const DType dt = input.dtype();
  const int64_t N = input.size(0), C = input.size(1);
  const int64_t S = prod(input.sizes(), 2, input.sizes().size());
  OpGuard g(op, input);
  const int kind = kind_of(dt);
  const Tensor x = dense(input);
  const Tensor w = param_as(weight, dt), b = param_as(bias, dt);
  Tensor out = new_on(input, input.sizes(), dt);
  if (training) {
    Tensor mean = new_on(input, {C}, dt), invstd = new_on(input, {C}, dt);
    const RunningStat rm(running_mean, dt), rv(running_var, dt);
    launch_batch_norm_stats(kind, ptr(x), N, C, S, eps, momentum, ptr(mean), ptr(invstd), rm.data(),
                            rv.data(), g.stream());
    check_launch(op);
    rm.finish();
    rv.finish();
    launch_batch_norm_apply(kind, ptr(x), N, C, S, ptr(mean), ptr(invstd), false, eps,
                            ptr_or_null(w), ptr_or_null(b), ptr(out), g.stream());
    check_launch(op);
    return {out, mean, invstd};
  }
  const Tensor rm = contiguous_as(*running_mean, dt), rv = contiguous_as(*running_var, dt);
  if (out.numel() > 0) {
    launch_batch_norm_apply(kind, ptr(x), N, C, S, ptr(rm), ptr(rv), true, eps, ptr_or_null(w),
                            ptr_or_null(b), ptr(out), g.stream());
    check_launch(op);
  }
  return {out, new_on(input, {0}, dt), new_on(input, {0}, dt)};
}

Tensor3 native_batch_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& running_mean,
                                   const std::optional<Tensor>& running_var,
                                   const std::optional<Tensor>& save_mean,
                                   const std::optional<Tensor>& save_invstd, bool train, double eps,
                                   const std::vector<bool>& output_mask) {
  constexpr const char* op = "native_batch_norm_backward";
  check_cuda_tensors(op, {{"grad_out", grad_out}, {"input", input}});
  check_devices(op, input, {{"weight", &weight}, {"running_mean", &running_mean},
                            {"running_var", &running_var}, {"save_mean", &save_mean},
                            {"save_invstd", &save_invstd}});
  check_mask(op, output_mask);
  check_at_least_2d(op, input);
  check_float_dtype(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  LOOM_CHECK(grad_out.sizes() == input.sizes(), op, ": grad_out of size ",
             sizes_str(grad_out.sizes()), " does not match input of size ",
             sizes_str(input.sizes()));
  const DType dt = input.dtype();
  const int64_t N = input.size(0), C = input.size(1);
  const int64_t S = prod(input.sizes(), 2, input.sizes().size());
  auto check_stat = [&](const char* name, const std::optional<Tensor>& t, const char* mode) {
    LOOM_CHECK(present(t), op, ": ", name, " must be defined in ", mode, " mode");
    LOOM_CHECK(t->numel() == C, name, " should contain ", C, " elements not ", t->numel());
  };
  Tensor mean, scale;
  if (train) {
    check_stat("save_mean", save_mean, "training");
    check_stat("save_invstd", save_invstd, "training");
    mean = contiguous_as(*save_mean, dt);
    scale = contiguous_as(*save_invstd, dt);
  } else {
    check_stat("running_mean", running_mean, "evaluation");
    check_stat("running_var", running_var, "evaluation");
    mean = contiguous_as(*running_mean, dt);
    scale = contiguous_as(*running_var, dt);
  }
  if (present(weight)) {
    LOOM_CHECK(weight->numel() == C, "weight should contain ", C, " elements not ",
               weight->numel());
  }
  OpGuard g(op, input);
  const int kind = kind_of(dt);
  const Tensor w = param_as(weight, dt);
  const Tensor x = dense(input), go = dense(grad_out);
  Tensor sum_g = new_on(input, {C}, DType::Float64), dotp = new_on(input, {C}, DType::Float64);
  Tensor gw = output_mask[1] ? new_on(input, {C}, dt) : Tensor();
  Tensor gb = output_mask[2] ? new_on(input, {C}, dt) : Tensor();
  launch_batch_norm_backward_reduce(kind, ptr(go), ptr(x), N, C, S, ptr(mean), ptr(scale), !train,
                                    eps, static_cast<double*>(ptr(sum_g)),
                                    static_cast<double*>(ptr(dotp)),
                                    gw.defined() ? ptr(gw) : nullptr,
                                    gb.defined() ? ptr(gb) : nullptr, g.stream());
  check_launch(op);
  Tensor gi;
  if (output_mask[0]) {
    gi = new_on(input, input.sizes(), dt);
    if (gi.numel() > 0) {
      launch_batch_norm_backward_input(kind, ptr(go), ptr(x), N, C, S, ptr(mean), ptr(scale),
                                       !train, eps, ptr_or_null(w),
                                       static_cast<const double*>(ptr(sum_g)),
                                       static_cast<const double*>(ptr(dotp)), train, ptr(gi),
                                       g.stream());
      check_launch(op);
    }
  }
  const DType param_dtype = present(weight) ? weight->dtype() : dt;
  if (gw.defined() && param_dtype != dt) gw = loom::to(gw, param_dtype);
  if (gb.defined() && param_dtype != dt) gb = loom::to(gb, param_dtype);
  return {gi, gw, gb};
}

// ---- layer norm ----

std::pair<int64_t, int64_t> check_layer_norm_inputs(const Tensor& input,
                                                    IntArrayRef normalized_shape,
                                                    const std::optional<Tensor>& weight,
                                                    const std::optional<Tensor>& bias) {
  const auto nd = static_cast<int64_t>(normalized_shape.size());
  LOOM_CHECK(nd >= 1,
             "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
             "one element, but got normalized_shape = ",
             sizes_str(normalized_shape));
  LOOM_CHECK(!present(weight) || weight->sizes() == normalized_shape,
             "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
             sizes_str(weight->sizes()), " and normalized_shape = ", sizes_str(normalized_shape));
  LOOM_CHECK(!present(bias) || bias->sizes() == normalized_shape,
             "Expected bias to be of same shape as normalized_shape, but got bias of shape ",
             sizes_str(bias->sizes()), " and normalized_shape = ", sizes_str(normalized_shape));
  const int64_t in_nd = input.dim();
  bool ok = in_nd >= nd;
  for (int64_t i = 0; ok && i < nd; ++i) ok = input.size(in_nd - nd + i) == normalized_shape[i];
  if (!ok) {
    std::string expected = "[*";
    for (int64_t s : normalized_shape) expected += str_cat(", ", s);
    LOOM_THROW(ValueError, "Given normalized_shape=", sizes_str(normalized_shape),
               ", expected input with shape ", expected, "], but got input of size",
               sizes_str(input.sizes()));
  }
  const auto split = static_cast<size_t>(in_nd - nd);
  return {prod(input.sizes(), 0, split), prod(input.sizes(), split, input.sizes().size())};
}

std::vector<int64_t> layer_norm_stat_sizes(const Tensor& input, size_t normalized_ndim) {
  std::vector<int64_t> s(input.sizes().begin(), input.sizes().end());
  for (size_t i = s.size() - normalized_ndim; i < s.size(); ++i) s[i] = 1;
  return s;
}

Tensor3 native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          double eps) {
  constexpr const char* op = "native_layer_norm";
  check_cuda_tensors(op, {{"input", input}});
  check_devices(op, input, {{"weight", &weight}, {"bias", &bias}});
  check_float_dtype(op, "input", input);
  const auto [M, K] = check_layer_norm_inputs(input, normalized_shape, weight, bias);
  const DType dt = input.dtype();
  OpGuard g(op, input);
  const Tensor x = dense(input);
  const Tensor w = param_as(weight, dt), b = param_as(bias, dt);
  Tensor out = new_on(input, input.sizes(), dt);
  const std::vector<int64_t> stat = layer_norm_stat_sizes(input, normalized_shape.size());
  Tensor mean = new_on(input, stat, dt), rstd = new_on(input, stat, dt);
  if (M > 0) {
    launch_layer_norm(kind_of(dt), ptr(x), M, K, eps, ptr_or_null(w), ptr_or_null(b), ptr(out),
                      ptr(mean), ptr(rstd), g.stream());
    check_launch(op);
  }
  return {out, mean, rstd};
}

Tensor3 native_layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   IntArrayRef normalized_shape, const Tensor& mean_t,
                                   const Tensor& rstd_t, const std::optional<Tensor>& weight,
                                   const std::optional<Tensor>& bias,
                                   const std::vector<bool>& output_mask) {
  constexpr const char* op = "native_layer_norm_backward";
  check_cuda_tensors(op, {{"grad_out", grad_out}, {"input", input}, {"mean", mean_t},
                          {"rstd", rstd_t}});
  check_devices(op, input, {{"weight", &weight}, {"bias", &bias}});
  check_mask(op, output_mask);
  check_float_dtype(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  const auto [M, K] = check_layer_norm_inputs(input, normalized_shape, weight, bias);
  LOOM_CHECK(grad_out.sizes() == input.sizes(), op, ": grad_out of size ",
             sizes_str(grad_out.sizes()), " does not match input of size ",
             sizes_str(input.sizes()));
  LOOM_CHECK(mean_t.numel() == M && rstd_t.numel() == M, op, ": expected mean and rstd with ", M,
             " elements (one per normalized row), but got mean ", mean_t.describe(), " and rstd ",
             rstd_t.describe());
  const DType dt = input.dtype();
  OpGuard g(op, input);
  const Tensor x = dense(input), go = dense(grad_out);
  const Tensor mean = contiguous_as(mean_t, dt), rstd = contiguous_as(rstd_t, dt);
  const Tensor w = param_as(weight, dt);
  Tensor gi = output_mask[0] ? new_on(input, input.sizes(), dt) : Tensor();
  Tensor gw = output_mask[1] ? new_on(input, normalized_shape, dt) : Tensor();
  Tensor gb = output_mask[2] ? new_on(input, normalized_shape, dt) : Tensor();
  if (M == 0) {
    if (gw.defined()) zero_fill(op, gw);
    if (gb.defined()) zero_fill(op, gb);
  }
  launch_layer_norm_backward(kind_of(dt), ptr(go), ptr(x), M, K, ptr(mean), ptr(rstd),
                             ptr_or_null(w), gi.defined() ? ptr(gi) : nullptr,
                             gw.defined() && M > 0 ? ptr(gw) : nullptr,
                             gb.defined() && M > 0 ? ptr(gb) : nullptr, g.stream());
  check_launch(op);
  if (gw.defined() && present(weight) && weight->dtype() != dt) gw = loom::to(gw, weight->dtype());
  if (gb.defined() && present(bias) && bias->dtype() != dt) gb = loom::to(gb, bias->dtype());
  return {gi, gw, gb};
}

// ---- group norm ----

void check_group_norm_inputs(const Tensor& input, const std::optional<Tensor>& weight,
                             const std::optional<Tensor>& bias, int64_t C, int64_t group) {
  LOOM_CHECK(group > 0, "Expected num_groups to be positive, but got num_groups=", group);
  LOOM_CHECK(C % group == 0,
             "Expected number of channels in input to be divisible by num_groups, but got input "
             "of shape ",
             sizes_str(input.sizes()), " and num_groups=", group);
  LOOM_CHECK(!present(weight) || (weight->dim() == 1 && weight->numel() == C),
             "Expected weight to be a vector of size equal to the number of channels in input, "
             "but got weight of shape ",
             sizes_str(weight->sizes()), " and input of shape ", sizes_str(input.sizes()));
  LOOM_CHECK(!present(bias) || (bias->dim() == 1 && bias->numel() == C),
             "Expected bias to be a vector of size equal to the number of channels in input, "
             "but got bias of shape ",
             sizes_str(bias->sizes()), " and input of shape ", sizes_str(input.sizes()));
}

void check_group_norm_geometry(std::string_view op, const Tensor& input, int64_t N, int64_t C,
                               int64_t HxW) {
  LOOM_CHECK(N >= 0 && C >= 0 && HxW >= 0 && input.numel() == N * C * HxW, op,
             ": expected input with N * C * HxW = ", N, " * ", C, " * ", HxW,
             " elements, but got input of shape ", sizes_str(input.sizes()));
}

Tensor3 native_group_norm(const Tensor& input, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, int64_t N, int64_t C, int64_t HxW,
                          int64_t group, double eps) {
  constexpr const char* op = "native_group_norm";
  check_cuda_tensors(op, {{"input", input}});
  check_devices(op, input, {{"weight", &weight}, {"bias", &bias}});
  check_float_dtype(op, "input", input);
  check_group_norm_inputs(input, weight, bias, C, group);
  check_group_norm_geometry(op, input, N, C, HxW);
  const DType dt = input.dtype();
  OpGuard g(op, input);
  const Tensor x = dense(input);
  const Tensor w = param_as(weight, dt), b = param_as(bias, dt);
  Tensor out = new_on(input, input.sizes(), dt);
  Tensor mean = new_on(input, {N, group}, dt), rstd = new_on(input, {N, group}, dt);
  launch_group_norm(kind_of(dt), ptr(x), N, C, HxW, group, eps, ptr_or_null(w), ptr_or_null(b),
                    ptr(out), ptr(mean), ptr(rstd), g.stream());
  check_launch(op);
  return {out, mean, rstd};
}

Tensor3 native_group_norm_backward(const Tensor& grad_out, const Tensor& input,
                                   const Tensor& mean_t, const Tensor& rstd_t,
                                   const std::optional<Tensor>& weight, int64_t N, int64_t C,
                                   int64_t HxW, int64_t group,
                                   const std::vector<bool>& output_mask) {
  constexpr const char* op = "native_group_norm_backward";
  check_cuda_tensors(op, {{"grad_out", grad_out}, {"input", input}, {"mean", mean_t},
                          {"rstd", rstd_t}});
  check_devices(op, input, {{"weight", &weight}});
  check_mask(op, output_mask);
  check_float_dtype(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  check_group_norm_inputs(input, weight, std::nullopt, C, group);
  check_group_norm_geometry(op, input, N, C, HxW);
  LOOM_CHECK(grad_out.sizes() == input.sizes(), op, ": grad_out of size ",
             sizes_str(grad_out.sizes()), " does not match input of size ",
             sizes_str(input.sizes()));
  LOOM_CHECK(mean_t.numel() == N * group && rstd_t.numel() == N * group, op,
             ": expected mean and rstd with N * group = ", N * group, " elements, but got mean ",
             mean_t.describe(), " and rstd ", rstd_t.describe());
  const DType dt = input.dtype();
  OpGuard g(op, input);
  const Tensor x = dense(input), go = dense(grad_out);
  const Tensor mean = contiguous_as(mean_t, dt), rstd = contiguous_as(rstd_t, dt);
  const Tensor w = param_as(weight, dt);
  Tensor gi = output_mask[0] ? new_on(input, input.sizes(), dt) : Tensor();
  Tensor gw = output_mask[1] ? new_on(input, {C}, dt) : Tensor();
  Tensor gb = output_mask[2] ? new_on(input, {C}, dt) : Tensor();
  launch_group_norm_backward(kind_of(dt), ptr(go), ptr(x), N, C, HxW, group, ptr(mean), ptr(rstd),
                             ptr_or_null(w), gi.defined() ? ptr(gi) : nullptr,
                             gw.defined() ? ptr(gw) : nullptr, gb.defined() ? ptr(gb) : nullptr,
                             g.stream());
  check_launch(op);
  const DType param_dtype = present(weight) ? weight->dtype() : dt;
  if (gw.defined() && param_dtype != dt) gw = loom::to(gw, param_dtype);
  if (gb.defined() && param_dtype != dt) gb = loom::to(gb, param_dtype);
  return {gi, gw, gb};
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("native_batch_norm", &native_batch_norm);
  m.impl("native_batch_norm_backward", &native_batch_norm_backward);
  m.impl("native_layer_norm", &native_layer_norm);
  m.impl("native_layer_norm_backward", &native_layer_norm_backward);
  m.impl("native_group_norm", &native_group_norm);
  m.impl("native_group_norm_backward", &native_group_norm_backward);
}

}  // namespace loom::cuda::libs
