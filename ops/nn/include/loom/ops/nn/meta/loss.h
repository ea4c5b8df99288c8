#pragma once
/// @file
/// Argument checks, parameter parsing and output shapes every backend of the loss ops
/// (nll_loss_forward / nll_loss_backward, nll_loss2d_forward / nll_loss2d_backward and the
/// pointwise losses) shares, so that error messages are word for word the same on every
/// device. Each kernel checks its own devices (and the dtypes it supports) first, then calls
/// these.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"

namespace loom::ops::meta {

/// at::Reduction::None: the ops' `int reduction` argument asks for no reduction.
inline constexpr int64_t kReductionNone = 0;
/// at::Reduction::Mean: the mean over the elements (or the weighted mean).
inline constexpr int64_t kReductionMean = 1;
/// at::Reduction::Sum: the sum over the elements.
inline constexpr int64_t kReductionSum = 2;

/// Throws ValueError unless reduction is 0, 1 or 2. (PyTorch's kernels would treat any
/// other value as "none" or trip an internal assert; its Python layer refuses it.)
inline void check_reduction(std::string_view op, int64_t reduction) {
  LOOM_CHECK(reduction == kReductionNone || reduction == kReductionMean ||
                 reduction == kReductionSum,
             op, ": reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
}

// ---- nll ----

/// The geometry of an nll kernel filled in a backend's own struct G (fields n, c, h, w of
/// the input seen as [n, c, h, w], its strides xn, xc, xh, xw, and the target's tn, th, tw;
/// a missing dim keeps G's defaults, size 1 and stride 0): input 1-D [C], 2-D [N, C] or 4-D
/// [N, C, H, W] and its target.
template <typename G>
inline G nll_geometry(const Tensor& input, const Tensor& target) {
  G g;
  if (input.dim() == 1) {
    g.c = input.size(0);
    g.xc = input.stride(0);
    return g;
  }
  g.n = input.size(0);
  g.c = input.size(1);
  g.xn = input.stride(0);
  g.xc = input.stride(1);
  g.tn = target.stride(0);
  if (input.dim() == 4) {
    g.h = input.size(2);
    g.w = input.size(3);
    g.xh = input.stride(2);
    g.xw = input.stride(3);
    g.th = target.stride(1);
    g.tw = target.stride(2);
  }
  return g;
}

/// Throws unless weight is undefined or has n_classes elements (the backward ops' check).
inline void check_nll_weight(std::string_view op, const Tensor& weight, int64_t n_classes) {
  LOOM_CHECK(!weight.defined() || weight.numel() == n_classes, op,
             ": weight tensor should be defined either for all or no classes, got weight ",
             weight.defined() ? weight.describe() : "", " for ", n_classes, " classes");
}

/// Throws unless total_weight is defined and has one element.
inline void check_nll_total_weight(std::string_view op, const Tensor& total_weight) {
  check_defined(op, {{"total_weight", total_weight}});
  LOOM_CHECK(total_weight.numel() == 1, op,
             ": expected total_weight to be a single element tensor, got: ",
             sizes_str(total_weight.sizes()), " (", total_weight.numel(), " elements)");
}

/// Throws unless grad_output holds a single element (the gradient of a reduced loss).
inline void check_nll_scalar_grad(std::string_view op, const Tensor& grad_output) {
  LOOM_CHECK(
      grad_output.dim() <= 1 && grad_output.numel() == 1, op,
      ": Expected a single element grad_output tensor, but got: ", sizes_str(grad_output.sizes()));
}

/// Whether nll_loss_forward of self returns one loss per sample ([N]) rather than a 0-dim one.
inline bool nll_loss_unreduced(const Tensor& self, int64_t reduction) {
  return reduction == kReductionNone && self.dim() == 2;
}

/// The shape checks of nll_loss_forward and nll_loss_backward: input [C] or [N, C], target
/// [] or [N].
inline void check_nll_shapes(std::string_view op, const Tensor& self, const Tensor& target) {
  LOOM_CHECK(self.dim() > 0 && self.dim() <= 2, op, ": input tensor should be 1D or 2D, got ",
             self.describe());
  LOOM_CHECK(target.dim() <= 1, op,
             ": 0D or 1D target tensor expected, multi-target not supported, got ",
             target.describe());
  const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  LOOM_CHECK(no_batch_dim || (target.dim() == 1 && self.size(0) == target.size(0)), op,
             ": size mismatch (got input: ", sizes_str(self.sizes()),
             ", target: ", sizes_str(target.sizes()), ")");
  LOOM_CHECK(!(self.dim() == 1 && target.dim() == 1), op,
             ": Expected target to be 0D when input is 1D, but got target.dim = ", target.dim());
}

/// nll_loss_forward's checks after the devices, dtypes and reduction: the shapes and the
/// weight ([C] or undefined).
inline void check_nll_loss_forward(std::string_view op, const Tensor& self, const Tensor& target,
                                   const Tensor& weight) {
  check_nll_shapes(op, self, target);
  const int64_t n_classes = self.size(-1);
  LOOM_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == n_classes), op,
             ": weight tensor should be defined either for all ", n_classes,
             " classes or no classes but got weight tensor of shape: ",
             sizes_str(weight.defined() ? weight.sizes() : IntArrayRef{}));
}

/// nll_loss_backward's checks after the devices and dtypes: shapes, total_weight, weight
/// and grad_output ([N] when unreduced, else one element).
inline void check_nll_loss_backward(std::string_view op, const Tensor& grad_output,
                                    const Tensor& self, const Tensor& target,
                                    const Tensor& weight, int64_t reduction,
                                    const Tensor& total_weight) {
  check_nll_shapes(op, self, target);
  check_nll_total_weight(op, total_weight);
  check_nll_weight(op, weight, self.size(-1));
  if (nll_loss_unreduced(self, reduction)) {
    LOOM_CHECK(grad_output.dim() == 1 && grad_output.size(0) == self.size(0), op,
               ": Expected a tensor of dimension 1 and tensor.size[0] == ", self.size(0),
               " but got grad_output ", grad_output.describe());
  } else {
    check_nll_scalar_grad(op, grad_output);
  }
}

/// The shape checks of nll_loss2d_forward and nll_loss2d_backward: input [N, C, H, W],
/// target [N, H, W], weight [C] or undefined.
inline void check_nll2d_shapes(std::string_view op, const Tensor& self, const Tensor& target,
                               const Tensor& weight) {
  LOOM_CHECK(target.dim() == 3, op,
             ": only batches of spatial targets supported (3D tensors) but got targets of "
             "dimension: ",
             target.dim());
  LOOM_CHECK(self.dim() == 4, op,
             ": only batches of spatial inputs supported (4D tensors), but got input of "
             "dimension: ",
             self.dim());
  check_nll_weight(op, weight, self.size(1));
  LOOM_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) &&
                 self.size(3) == target.size(2),
             op, ": size mismatch (got input: ", sizes_str(self.sizes()),
             ", target: ", sizes_str(target.sizes()), ")");
}

/// nll_loss2d_backward's checks after the devices and dtypes: shapes, total_weight and
/// grad_output (target's shape when unreduced, else one element).
inline void check_nll_loss2d_backward(std::string_view op, const Tensor& grad_output,
                                      const Tensor& self, const Tensor& target,
                                      const Tensor& weight, int64_t reduction,
                                      const Tensor& total_weight) {
  check_nll2d_shapes(op, self, target, weight);
  check_nll_total_weight(op, total_weight);
  if (reduction == kReductionNone) {
    LOOM_CHECK(grad_output.dim() == 3, op,
               ": grad_output must have same dimension as target (3) but got dimension: ",
               sizes_str(grad_output.sizes()));
    LOOM_CHECK(grad_output.sizes() == target.sizes(), op,
               ": size mismatch (got grad_output: ", sizes_str(grad_output.sizes()),
               " target: ", sizes_str(target.sizes()), ")");
  } else {
    check_nll_scalar_grad(op, grad_output);
  }
}

// ---- pointwise losses ----

/// A named operand of a pointwise loss; an undefined tensor is an absent optional (weight,
/// pos_weight), which takes no part in the dtype or the shape.
struct LossOperand {
  std::string_view name;  ///< the argument's name, for messages
  const Tensor* tensor;   ///< the operand (never null; may be undefined)
};

/// PyTorch's result type of the defined operands: dimensioned tensors decide, a 0-dim one
/// only when it is of a higher category (floating against integral).
inline DType loss_result_dtype(std::span<const LossOperand> ops) {
  std::optional<DType> dim_result, zero_result;
  for (const LossOperand& o : ops) {
    const Tensor& t = *o.tensor;
    if (!t.defined()) continue;
    auto& r = t.dim() > 0 ? dim_result : zero_result;
    r = r ? promote_types(*r, t.dtype()) : t.dtype();
  }
  if (!dim_result) return *zero_result;
  if (zero_result && is_floating_point(*zero_result) && !is_floating_point(*dim_result)) {
    return promote_types(*dim_result, *zero_result);
  }
  return *dim_result;
}

/// The broadcast shape of the defined operands, with PyTorch's rule and message (naming the
/// operand that gave the clashing dim its size).
inline std::vector<int64_t> loss_broadcast_shape(std::string_view op,
                                                 std::span<const LossOperand> ops) {
  std::vector<int64_t> shape;
  std::vector<std::string_view> owner;  // the operand that gave each dim its size
  for (const LossOperand& o : ops) {
    const Tensor& t = *o.tensor;
    if (!t.defined()) continue;
    const auto nd = static_cast<size_t>(t.dim());
    if (nd > shape.size()) {
      owner.insert(owner.begin(), nd - shape.size(), o.name);
      shape.insert(shape.begin(), nd - shape.size(), 1);
    }
    for (size_t i = 0; i < nd; ++i) {
      const size_t d = shape.size() - nd + i;
      const int64_t s = t.size(static_cast<int64_t>(i));
      if (s == shape[d] || s == 1) continue;
      LOOM_CHECK(shape[d] == 1, op, ": The size of tensor ", owner[d], " (", shape[d],
                 ") must match the size of tensor ", o.name, " (", s,
                 ") at non-singleton dimension ", d);
      shape[d] = s;
      owner[d] = o.name;
    }
  }
  return shape;
}

/// smooth_l1_loss's (and its backward's) check of beta; op names the op in the message.
inline void check_smooth_l1_beta(std::string_view op, double beta) {
  LOOM_CHECK(beta >= 0, op, " does not support negative values for beta, got ", beta);
}

/// huber_loss's check of delta.
inline void check_huber_delta(std::string_view op, double delta) {
  LOOM_CHECK(delta > 0, op, " does not support non-positive values for delta, got ", delta);
}

/// binary_cross_entropy's (and its backward's) check that target has self's sizes.
inline void check_bce_same_size(std::string_view op, const Tensor& self, const Tensor& target) {
  LOOM_CHECK(self.sizes() == target.sizes(), op, ": Using a target size (",
             sizes_str(target.sizes()), ") that is different to the input size (",
             sizes_str(self.sizes()), ") is deprecated. Please ensure they have the same size.");
}

/// The check of a loss whose result must have the shape of one operand (name, t): the
/// operands' broadcast shape is t's sizes.
inline void check_broadcast_result_shape(std::string_view op, IntArrayRef shape,
                                         std::string_view name, const Tensor& t) {
  LOOM_CHECK(shape == t.sizes(), op, ": the inputs broadcast to ", sizes_str(shape),
             ", but the result must have the shape of ", name, " ", t.describe());
}

}  // namespace loom::ops::meta
