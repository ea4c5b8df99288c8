// CUDA kernels of nll_loss_forward / nll_loss_backward, nll_loss2d_forward /
// nll_loss2d_backward and the pointwise losses (mse, smooth_l1, huber, soft_margin,
// binary_cross_entropy and their backward ops, binary_cross_entropy_with_logits) on the own
// kernels of libs/loss.cu, with the reference CPU kernels' checks and messages
// (ops/nn/cpu/loss_nll.cpp, loss_pointwise.cpp). Pointwise operands are promoted, broadcast
// and made contiguous first (through the plugin's copy kernels), then one kernel computes. The composites over them (nll_loss, nll_loss_nd, cross_entropy_loss)
// are CompositeImplicitAutograd and need nothing here.
//
// An out-of-range target (nll) or an input outside [0, 1] (binary_cross_entropy) is found on
// the device: the kernel raises a flag and the op reads it back (one stream synchronization
// per call) to throw the reference's error.
#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "libs/common.h"
#include "libs/kernels.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/meta/loss.h"
#include "loom/ops/pointwise.h"

namespace loom::cuda::libs {
namespace {

namespace meta = loom::ops::meta;

constexpr int64_t kNone = meta::kReductionNone, kMean = meta::kReductionMean;
using meta::check_reduction;

// ---- nll ----

/// A zeroed {flag, value} pair on the device for a kernel to report a bad target in.
Tensor bad_flag(std::string_view op, const Tensor& like) {
  Tensor flag = new_on(like, {2}, DType::Int64);
  zero_fill(op, flag);
  return flag;
}

/// Reads the flag back and throws the reference's IndexError if a target was out of range.
void check_bad_flag(std::string_view op, const Tensor& flag, cudaStream_t stream) {
  int64_t host[2] = {0, 0};
  LOOM_CUDA_CHECK(cudaMemcpyAsync(host, flag.data_ptr(), sizeof host, cudaMemcpyDeviceToHost, stream),
                  op);
  LOOM_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  if (host[0] != 0) LOOM_THROW(IndexError, op, ": Target ", host[1], " is out of bounds.");
}

void check_common(std::string_view op, const Tensor& self, const Tensor& target,
                  const Tensor& weight, int64_t reduction, bool allow_byte) {
  if (weight.defined()) {
    check_cuda_tensors(op, {{"self", self}, {"target", target}, {"weight", weight}});
  } else {
    check_cuda_tensors(op, {{"self", self}, {"target", target}});
  }
  check_reduction(op, reduction);
  LOOM_CHECK_T(TypeError,
               target.dtype() == DType::Int64 || (allow_byte && target.dtype() == DType::UInt8), op,
               ": expected scalar type Long but found ", dtype_name(target.dtype()),
               " for argument 'target' ", target.describe());
  check_float_dtype(op, "self", self);
}

std::tuple<Tensor, Tensor> nll_forward(std::string_view op, const Tensor& self,
                                       const Tensor& target, const Tensor& weight,
                                       int64_t reduction, int64_t ignore_index, bool unreduced) {
  OpGuard g(op, self);
  const NllGeometry geo = meta::nll_geometry<NllGeometry>(self, target);
  const DType dt = self.dtype();
  const Tensor w = weight.defined() ? contiguous_as(weight, dt) : Tensor();
  Tensor total_weight = new_on(self, {}, dt);
  std::vector<int64_t> sizes;
  if (unreduced) {
    sizes = {geo.n};
    if (self.dim() == 4) sizes = {geo.n, geo.h, geo.w};
  }
  Tensor output = new_on(self, sizes, dt);
  const Tensor flag = bad_flag(op, self);
  launch_nll_forward(kind_of(dt), target.dtype() == DType::UInt8, ptr(self), ptr(target), geo,
                     w.defined() ? ptr(w) : nullptr, ignore_index, reduction == kMean, unreduced,
                     ptr(output), ptr(total_weight), static_cast<int64_t*>(ptr(flag)), g.stream());
  check_launch(op);
  check_bad_flag(op, flag, g.stream());
  return {output, total_weight};
}

Tensor nll_backward(std::string_view op, const Tensor& grad_output, const Tensor& self,
                    const Tensor& target, const Tensor& weight, int64_t reduction,
                    int64_t ignore_index, const Tensor& total_weight, bool unreduced) {
  OpGuard g(op, self);
  const NllGeometry geo = meta::nll_geometry<NllGeometry>(self, target);
  const DType dt = self.dtype();
  Tensor grad_input = new_on(self, self.sizes(), dt);
  zero_fill(op, grad_input);
  if (grad_input.numel() == 0) return grad_input;
  const Tensor w = weight.defined() ? contiguous_as(weight, dt) : Tensor();
  const Tensor go = contiguous_as(grad_output, dt);
  const Tensor tw = contiguous_as(total_weight, dt);
  const Tensor flag = bad_flag(op, self);
  launch_nll_backward(kind_of(dt), target.dtype() == DType::UInt8, ptr(target), geo,
                      w.defined() ? ptr(w) : nullptr, ignore_index, reduction == kMean, unreduced,
                      ptr(go), ptr(tw), ptr(grad_input), static_cast<int64_t*>(ptr(flag)),
                      g.stream());
  check_launch(op);
  check_bad_flag(op, flag, g.stream());
  return grad_input;
}

std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                            const std::optional<Tensor>& weight_opt,
                                            int64_t reduction, int64_t ignore_index) {
  constexpr std::string_view op = "nll_loss_forward";
  const Tensor weight = weight_opt.value_or(Tensor());
  check_common(op, self, target, weight, reduction, /*allow_byte=*/true);
  meta::check_nll_loss_forward(op, self, target, weight);
  return nll_forward(op, self, target, weight, reduction, ignore_index,
                     meta::nll_loss_unreduced(self, reduction));
}

Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight_opt, int64_t reduction,
                         int64_t ignore_index, const Tensor& total_weight) {
  constexpr std::string_view op = "nll_loss_backward";
  const Tensor weight = weight_opt.value_or(Tensor());
  check_cuda_tensors(op,
                     {{"grad_output", grad_output}, {"self", self}, {"total_weight", total_weight}});
  check_common(op, self, target, weight, reduction, /*allow_byte=*/true);
  meta::check_nll_loss_backward(op, grad_output, self, target, weight, reduction, total_weight);
  return nll_backward(op, grad_output, self, target, weight, reduction, ignore_index, total_weight,
                      meta::nll_loss_unreduced(self, reduction));
}

std::tuple<Tensor, Tensor> nll_loss2d_forward(const Tensor& self, const Tensor& target,
                                              const std::optional<Tensor>& weight_opt,
                                              int64_t reduction, int64_t ignore_index) {
  constexpr std::string_view op = "nll_loss2d_forward";
  const Tensor weight = weight_opt.value_or(Tensor());
  check_common(op, self, target, weight, reduction, /*allow_byte=*/false);
  meta::check_nll2d_shapes(op, self, target, weight);
  return nll_forward(op, self, target, weight, reduction, ignore_index, reduction == kNone);
}

Tensor nll_loss2d_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                           const std::optional<Tensor>& weight_opt, int64_t reduction,
                           int64_t ignore_index, const Tensor& total_weight) {
  constexpr std::string_view op = "nll_loss2d_backward";
  const Tensor weight = weight_opt.value_or(Tensor());
  check_cuda_tensors(op,
                     {{"grad_output", grad_output}, {"self", self}, {"total_weight", total_weight}});
  check_common(op, self, target, weight, reduction, /*allow_byte=*/false);
  meta::check_nll_loss2d_backward(op, grad_output, self, target, weight, reduction,
                                  total_weight);
  return nll_backward(op, grad_output, self, target, weight, reduction, ignore_index, total_weight,
                      reduction == kNone);
}

// ---- mse ----

/// t broadcast to shape, contiguous, in dtype d.
Tensor broadcast_dense(const Tensor& t, const std::vector<int64_t>& shape, DType d) {
  const auto nd = static_cast<int64_t>(shape.size());
  std::vector<int64_t> st(shape.size(), 0);
  for (int64_t i = nd - 1, e = t.dim() - 1; e >= 0; --i, --e) {
    st[static_cast<size_t>(i)] = t.size(e) == 1 ? 0 : t.stride(e);
  }
  const Tensor v = t.sizes() == IntArrayRef(shape) ? t : t.as_strided_view(shape, st, t.storage_offset());
  return contiguous_as(v, d);
}

/// A pointwise loss's forward over its operands (self, target, then the optional weight and
/// pos_weight, undefined when absent): promoted, broadcast (to self's shape with
/// result_like_self), then reduced.
Tensor loss_forward(std::string_view op, PointwiseLoss loss, int64_t reduction, const Tensor& self,
                    const Tensor& target, const Tensor& weight, const Tensor& pos_weight,
                    double param, bool result_like_self = false) {
  check_cuda_tensors(op, {{"self", self}, {"target", target}});
  if (weight.defined()) check_cuda_tensors(op, {{"self", self}, {"weight", weight}});
  if (pos_weight.defined()) check_cuda_tensors(op, {{"self", self}, {"pos_weight", pos_weight}});
  check_reduction(op, reduction);
  std::vector<meta::LossOperand> ops{{"self", &self}, {"target", &target}};
  if (weight.defined()) ops.push_back({"weight", &weight});
  if (pos_weight.defined()) ops.push_back({"pos_weight", &pos_weight});
  const DType dt = meta::loss_result_dtype(ops);
  LOOM_CHECK_T(TypeError, is_supported_float(dt), op, ": \"", op, "\" not implemented for '",
               dtype_name(dt), "' on CUDA");
  const std::vector<int64_t> shape = meta::loss_broadcast_shape(op, ops);
  if (result_like_self) meta::check_broadcast_result_shape(op, IntArrayRef(shape), "self", self);
  OpGuard g(op, self);
  const Tensor x = broadcast_dense(self, shape, dt), y = broadcast_dense(target, shape, dt);
  const Tensor w = weight.defined() ? broadcast_dense(weight, shape, dt) : Tensor();
  const Tensor pw = pos_weight.defined() ? broadcast_dense(pos_weight, shape, dt) : Tensor();
  const bool reduce = reduction != kNone;
  Tensor out = reduce ? new_on(self, {}, dt) : new_on(self, shape, dt);
  Tensor partials;
  if (reduce) partials = new_on(self, {loss_partials(x.numel())}, DType::Float64);
  const bool ranged = loss == PointwiseLoss::Bce;
  Tensor flags;
  if (ranged) {
    flags = new_on(self, {2}, DType::Int64);
    zero_fill(op, flags);
  }
  launch_pointwise_loss(kind_of(dt), loss, ptr(x), ptr(y), w.defined() ? ptr(w) : nullptr,
                        pw.defined() ? ptr(pw) : nullptr, param, x.numel(), reduce,
                        reduction == kMean, ptr(out),
                        reduce ? static_cast<double*>(ptr(partials)) : nullptr,
                        ranged ? static_cast<int64_t*>(ptr(flags)) : nullptr, g.stream());
  check_launch(op);
  if (ranged) {
    int64_t host[2] = {0, 0};
    LOOM_CUDA_CHECK(cudaMemcpyAsync(host, flags.data_ptr(), sizeof host, cudaMemcpyDeviceToHost,
                                    g.stream()),
                    op);
    LOOM_CUDA_CHECK(cudaStreamSynchronize(g.stream()), op);
    LOOM_CHECK(host[0] == 0, op, ": all elements of input should be between 0 and 1");
    LOOM_CHECK(host[1] == 0, op, ": all elements of target should be between 0 and 1");
  }
  return out;
}

/// A pointwise loss's backward over (grad_output, self, target, weight): self's gradient, in
/// self's shape and dtype; norm is 1 / self.numel() for the mean.
Tensor loss_backward(std::string_view op, PointwiseLoss loss, int64_t reduction, const Tensor& grad,
                     const Tensor& self, const Tensor& target, const Tensor& weight,
                     double param) {
  check_cuda_tensors(op, {{"grad_output", grad}, {"self", self}, {"target", target}});
  if (weight.defined()) check_cuda_tensors(op, {{"self", self}, {"weight", weight}});
  check_reduction(op, reduction);
  std::vector<meta::LossOperand> ops{{"grad_output", &grad}, {"self", &self}, {"target", &target}};
  if (weight.defined()) ops.push_back({"weight", &weight});
  const DType dt = meta::loss_result_dtype(ops);
  LOOM_CHECK_T(TypeError, is_supported_float(dt), op, ": \"", op, "\" not implemented for '",
               dtype_name(dt), "' on CUDA");
  const std::vector<int64_t> shape = meta::loss_broadcast_shape(op, ops);
  meta::check_broadcast_result_shape(op, IntArrayRef(shape), "self", self);
  OpGuard g(op, self);
  const Tensor x = broadcast_dense(self, shape, dt), y = broadcast_dense(target, shape, dt);
  const Tensor w = weight.defined() ? broadcast_dense(weight, shape, dt) : Tensor();
  const bool g_scalar = grad.numel() == 1;
  const Tensor gv = g_scalar ? contiguous_as(grad, dt) : broadcast_dense(grad, shape, dt);
  Tensor gi = new_on(self, shape, dt);
  const double norm = reduction == kMean ? 1.0 / static_cast<double>(self.numel()) : 1.0;
  launch_pointwise_loss_backward(kind_of(dt), loss, ptr(gv), g_scalar, ptr(x), ptr(y),
                                 w.defined() ? ptr(w) : nullptr, param, x.numel(), norm, ptr(gi),
                                 g.stream());
  check_launch(op);
  return gi.dtype() == self.dtype() ? gi : loom::to(gi, self.dtype());
}

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return loss_forward("mse_loss", PointwiseLoss::Mse, reduction, self, target, Tensor(), Tensor(),
                      0);
}

Tensor mse_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         int64_t reduction) {
  return loss_backward("mse_loss_backward", PointwiseLoss::Mse, reduction, grad, self, target,
                       Tensor(), 0);
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  meta::check_smooth_l1_beta("smooth_l1_loss", beta);
  return loss_forward("smooth_l1_loss", PointwiseLoss::SmoothL1, reduction, self, target, Tensor(),
                      Tensor(), beta);
}

Tensor smooth_l1_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                               int64_t reduction, double beta) {
  meta::check_smooth_l1_beta("smooth_l1_loss_backward", beta);
  return loss_backward("smooth_l1_loss_backward", PointwiseLoss::SmoothL1, reduction, grad, self,
                       target, Tensor(), beta);
}

Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  meta::check_huber_delta("huber_loss", delta);
  return loss_forward("huber_loss", PointwiseLoss::Huber, reduction, self, target, Tensor(),
                      Tensor(), delta);
}

Tensor huber_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                           int64_t reduction, double delta) {
  return loss_backward("huber_loss_backward", PointwiseLoss::Huber, reduction, grad, self, target,
                       Tensor(), delta);
}

Tensor soft_margin_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return loss_forward("soft_margin_loss", PointwiseLoss::SoftMargin, reduction, self, target,
                      Tensor(), Tensor(), 0);
}

Tensor soft_margin_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                 int64_t reduction) {
  return loss_backward("soft_margin_loss_backward", PointwiseLoss::SoftMargin, reduction, grad,
                       self, target, Tensor(), 0);
}

void check_same_size(std::string_view op, const Tensor& self, const Tensor& target) {
  check_cuda_tensors(op, {{"self", self}, {"target", target}});
  meta::check_bce_same_size(op, self, target);
}

Tensor binary_cross_entropy(const Tensor& self, const Tensor& target,
                            const std::optional<Tensor>& weight, int64_t reduction) {
  constexpr std::string_view op = "binary_cross_entropy";
  check_same_size(op, self, target);
  return loss_forward(op, PointwiseLoss::Bce, reduction, self, target, weight.value_or(Tensor()),
                      Tensor(), 0, /*result_like_self=*/true);
}

Tensor binary_cross_entropy_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                     const std::optional<Tensor>& weight, int64_t reduction) {
  constexpr std::string_view op = "binary_cross_entropy_backward";
  check_same_size(op, self, target);
  return loss_backward(op, PointwiseLoss::Bce, reduction, grad, self, target,
                       weight.value_or(Tensor()), 0);
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight,
                                        int64_t reduction) {
  return loss_forward("binary_cross_entropy_with_logits", PointwiseLoss::BceWithLogits, reduction,
                      self, target, weight.value_or(Tensor()), pos_weight.value_or(Tensor()), 0);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("nll_loss_forward", &nll_loss_forward);
  m.impl("nll_loss_backward", &nll_loss_backward);
  m.impl("nll_loss2d_forward", &nll_loss2d_forward);
  m.impl("nll_loss2d_backward", &nll_loss2d_backward);
  m.impl("mse_loss", &mse_loss);
  m.impl("mse_loss_backward", &mse_loss_backward);
  m.impl("smooth_l1_loss", &smooth_l1_loss);
  m.impl("smooth_l1_loss_backward", &smooth_l1_loss_backward);
  m.impl("huber_loss", &huber_loss);
  m.impl("huber_loss_backward", &huber_loss_backward);
  m.impl("soft_margin_loss", &soft_margin_loss);
  m.impl("soft_margin_loss_backward", &soft_margin_loss_backward);
  m.impl("binary_cross_entropy", &binary_cross_entropy);
  m.impl("binary_cross_entropy_backward", &binary_cross_entropy_backward);
  m.impl("binary_cross_entropy_with_logits", &binary_cross_entropy_with_logits);
}

}  // namespace loom::cuda::libs
