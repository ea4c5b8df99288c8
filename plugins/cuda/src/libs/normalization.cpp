// CUDA kernels of native_batch_norm, native_layer_norm, native_group_norm and their backward
// ops on the own kernels of libs/normalization.cu, with the reference
// CPU kernels' checks and results (ops/nn/cpu/normalization.cpp): saved statistics in the
// input's dtype, running statistics updated in place with momentum (unbiased variance), empty
// [0] saved statistics in evaluation mode. Own kernels rather than cuDNN's batch norm: they take
// every dtype the reference does with optional weight and bias, and sum in a fixed order
// (deterministic).
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "libs/common.h"
#include "libs/kernels.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/meta/normalization.h"
#include "loom/ops/pointwise.h"

namespace loom::cuda::libs {
namespace {

namespace meta = loom::ops::meta;

using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;

bool present(const std::optional<Tensor>& t) { return t && t->defined(); }

int64_t prod(IntArrayRef sizes, size_t first, size_t last) {
  int64_t n = 1;
  for (size_t d = first; d < last; ++d) n *= sizes[d];
  return n;
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
  meta::check_norm_at_least_2d(op, input);
  check_float_dtype(op, "input", input);
  meta::check_native_batch_norm(input, weight, bias, running_mean, running_var, training);
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
  meta::check_norm_output_mask(op, output_mask);
  meta::check_norm_at_least_2d(op, input);
  check_float_dtype(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  meta::check_norm_grad_sizes(op, grad_out, input);
  const DType dt = input.dtype();
  const int64_t N = input.size(0), C = input.size(1);
  const int64_t S = prod(input.sizes(), 2, input.sizes().size());
  meta::check_batch_norm_backward_stats(op, C, train, running_mean, running_var, save_mean,
                                        save_invstd, weight);
  Tensor mean, scale;
  if (train) {
    mean = contiguous_as(*save_mean, dt);
    scale = contiguous_as(*save_invstd, dt);
  } else {
    mean = contiguous_as(*running_mean, dt);
    scale = contiguous_as(*running_var, dt);
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

Tensor3 native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          double eps) {
  constexpr const char* op = "native_layer_norm";
  check_cuda_tensors(op, {{"input", input}});
  check_devices(op, input, {{"weight", &weight}, {"bias", &bias}});
  check_float_dtype(op, "input", input);
  const auto [M, K] = meta::check_layer_norm_inputs(op, input, normalized_shape, weight, bias);
  const DType dt = input.dtype();
  OpGuard g(op, input);
  const Tensor x = dense(input);
  const Tensor w = param_as(weight, dt), b = param_as(bias, dt);
  Tensor out = new_on(input, input.sizes(), dt);
  const std::vector<int64_t> stat = meta::layer_norm_stat_sizes(input, normalized_shape.size());
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
  meta::check_norm_output_mask(op, output_mask);
  check_float_dtype(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  const auto [M, K] = meta::check_layer_norm_inputs(op, input, normalized_shape, weight, bias);
  meta::check_layer_norm_backward(op, grad_out, input, mean_t, rstd_t, M);
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

Tensor3 native_group_norm(const Tensor& input, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, int64_t N, int64_t C, int64_t HxW,
                          int64_t group, double eps) {
  constexpr const char* op = "native_group_norm";
  check_cuda_tensors(op, {{"input", input}});
  check_devices(op, input, {{"weight", &weight}, {"bias", &bias}});
  check_float_dtype(op, "input", input);
  meta::check_group_norm_inputs(op, input, weight, bias, C, group);
  meta::check_group_norm_geometry(op, input, N, C, HxW);
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
  meta::check_norm_output_mask(op, output_mask);
  check_float_dtype(op, "input", input);
  check_same_dtype(op, {{"grad_out", grad_out}, {"input", input}});
  meta::check_group_norm_inputs(op, input, weight, std::nullopt, C, group);
  meta::check_group_norm_geometry(op, input, N, C, HxW);
  meta::check_group_norm_backward(op, grad_out, input, mean_t, rstd_t, N, group);
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
