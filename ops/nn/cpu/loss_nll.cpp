// Reference CPU kernels: nll_loss_forward/backward and nll_loss2d_forward/backward, and the
// composites over them (nll_loss, nll_loss2d, nll_loss_nd, cross_entropy_loss; Note [Loss
// composites] in cpu/loss_util.h), with PyTorch's checks and messages. Inputs may be
// strided; sums accumulate in double, in fixed chunks (the result does not depend on the
// thread count).
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

#include "cpu/loss_util.h"
#include "cpu/meta.h"
#include "loom/ops/nn/meta/loss.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/creation.h"
#include "loom/ops/nn/loss.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/shape.h"

namespace loom::ops::cpu::loss {
namespace {

using reduction::cast_contiguous;
using reduction::data_of;
using reduction::load;
using reduction::store;

/// The geometry of an nll kernel: the input seen as [n, c, h, w] (1-D: n = h = w = 1; 2-D:
/// h = w = 1) with its strides, and the target as [n, h, w] with its strides. A missing
/// dim has size 1 and stride 0.
struct NllGeometry {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t xn = 0, xc = 0, xh = 0, xw = 0;
  int64_t tn = 0, th = 0, tw = 0;

  /// Number of (sample, position) pairs, each with one target.
  int64_t count() const { return n * h * w; }
  /// Calls f(p, x_off, t_off) for the pairs p in [begin, end) (row-major over [n, h, w]),
  /// with the offsets of the pair's input (at class 0) and target elements.
  template <typename F>
  void for_range(int64_t begin, int64_t end, F&& f) const {
    if (begin >= end) return;
    int64_t j = begin % w, i = (begin / w) % h, b = begin / (w * h);
    int64_t xo = b * xn + i * xh + j * xw, to = b * tn + i * th + j * tw;
    for (int64_t p = begin; p < end; ++p) {
      f(p, xo, to);
      xo += xw;
      to += tw;
      if (++j < w) continue;
      j = 0;
      xo += xh - w * xw;
      to += th - w * tw;
      if (++i < h) continue;
      i = 0;
      xo += xn - h * xh;
      to += tn - h * th;
    }
  }
};

/// Checks what both families check: devices, the reduction, the dtypes of input and target.
void check_common(std::string_view op, const Tensor& self, const Tensor& target,
                  const Tensor& weight, int64_t reduction, bool allow_byte) {
  check_defined(op, {{"self", self}, {"target", target}});
  check_same_device(op, {{"self", self}, {"target", target}, {"weight", weight}});
  check_reduction(op, reduction);
  LOOM_CHECK_T(TypeError,
               target.dtype() == DType::Int64 || (allow_byte && target.dtype() == DType::UInt8), op,
               ": expected scalar type Long but found ", torch_type_name(target.dtype()),
               " for argument 'target' ", target.describe());
}

/// The class index of pair p, or -1 when it is ignore_index; `bad` is set for an index
/// outside [0, c) (then -1 too, so nothing is read).
template <typename I>
inline int64_t class_of(const I* t, int64_t t_off, const NllGeometry& g, int64_t ignore_index,
                        std::atomic<bool>& bad) {
  const auto cls = static_cast<int64_t>(t[t_off]);
  if (cls == ignore_index) return -1;
  if (cls < 0 || cls >= g.c) {
    bad.store(true, std::memory_order_relaxed);
    return -1;
  }
  return cls;
}

/// Throws PyTorch's IndexError for the first target (in order) outside [0, c).
template <typename I>
[[noreturn]] void throw_bad_target(std::string_view op, const I* t, const NllGeometry& g,
                                   int64_t ignore_index) {
  g.for_range(0, g.count(), [&](int64_t, int64_t, int64_t to) {
    const auto cls = static_cast<int64_t>(t[to]);
    if (cls != ignore_index && (cls < 0 || cls >= g.c)) {
      LOOM_THROW(IndexError, op, ": Target ", cls, " is out of bounds.");
    }
  });
  LOOM_THROW(IndexError, op, ": a target is out of bounds.");
}

/// Calls f(I*) with the target's typed pointer (int64 or uint8).
template <typename F>
void dispatch_target(const Tensor& target, F&& f) {
  if (target.dtype() == DType::UInt8) {
    f(data_of<uint8_t>(target));
  } else {
    f(data_of<int64_t>(target));
  }
}

/// Loss and weight sums of the reduced forms.
struct LossSums {
  double loss = 0, weight = 0;
  LossSums& operator+=(const LossSums& o) {
    loss += o.loss;
    weight += o.weight;
    return *this;
  }
};

/// The forward of both families: unreduced [N] / [N, H, W] when `unreduced`, else the
/// reduced 0-dim loss; and total_weight.
std::tuple<Tensor, Tensor> nll_forward(std::string_view op, const Tensor& self,
                                       const Tensor& target, const Tensor& weight,
                                       int64_t reduction, int64_t ignore_index, bool unreduced) {
  const NllGeometry g = meta::nll_geometry<NllGeometry>(self, target);
  Tensor total_weight = Tensor::empty({}, options_like(self, self.dtype()));
  DimVector sizes;  // reduced: a 0-dim loss
  if (unreduced) sizes = self.dim() == 4 ? DimVector{g.n, g.h, g.w} : DimVector{g.n};
  Tensor output = Tensor::empty(sizes, options_like(self, self.dtype()));
  dispatch_floats(op, self, [&]<typename T>(T*) {
    // Meta: no values, so neither the loss nor the target check (a value's) runs.
    if (is_meta(output)) return;
    const T* x = data_of<T>(self);
    const Tensor w = weight.defined() ? cast_contiguous(weight, self.dtype()) : Tensor();
    const T* wp = w.defined() ? data_of<T>(w) : nullptr;
    dispatch_target(target, [&]<typename I>(const I* t) {
      std::atomic<bool> bad{false};
      // The loss of the pair at (x_off, t_off), and its weight wt (0 when ignored).
      auto value = [&](int64_t xo, int64_t to, double& wt) {
        const int64_t cls = class_of(t, to, g, ignore_index, bad);
        if (cls < 0) {
          wt = 0;
          return 0.0;
        }
        wt = wp != nullptr ? static_cast<double>(load(wp + cls)) : 1.0;
        return -static_cast<double>(load(x + xo + cls * g.xc)) * wt;
      };
      if (unreduced) {
        T* o = data_of<T>(output);
        parallel_chunks(g.count(), [&](int64_t begin, int64_t end) {
          g.for_range(begin, end, [&](int64_t p, int64_t xo, int64_t to) {
            double wt;
            store(o + p, value(xo, to, wt));
          });
        });
        store(data_of<T>(total_weight), 0.0);
      } else {
        const LossSums s = chunked_sum<LossSums>(g.count(), [&](int64_t begin, int64_t end) {
          LossSums part;
          g.for_range(begin, end, [&](int64_t, int64_t xo, int64_t to) {
            double wt;
            part.loss += value(xo, to, wt);
            part.weight += wt;
          });
          return part;
        });
        double out = s.loss;
        if (target.numel() == 0) {
          out = reduction == kMean ? std::numeric_limits<double>::quiet_NaN() : 0.0;
        } else if (reduction == kMean) {
          out /= s.weight;  // all targets ignored: 0 / 0, nan as in PyTorch
        }
        store(data_of<T>(output), out);
        store(data_of<T>(total_weight), s.weight);
      }
      if (bad.load()) throw_bad_target(op, t, g, ignore_index);
    });
  });
  return {output, total_weight};
}

/// The backward of both families: the gradient with respect to self (contiguous, self's
/// sizes and dtype), zero but at each pair's target class.
Tensor nll_backward(std::string_view op, const Tensor& grad_output, const Tensor& self,
                    const Tensor& target, const Tensor& weight, int64_t reduction,
                    int64_t ignore_index, const Tensor& total_weight, bool unreduced) {
  const NllGeometry g = meta::nll_geometry<NllGeometry>(self, target);
  Tensor grad_input = Tensor::empty(self.sizes(), options_like(self, self.dtype()));
  if (grad_input.numel() > 0 && !is_meta(grad_input)) {
    std::memset(grad_input.data_ptr(), 0, grad_input.numel() * grad_input.element_size());
  }
  dispatch_floats(op, self, [&]<typename T>(T*) {
    if (is_meta(grad_input)) return;  // no values (nor the target check, a value's)
    T* r = data_of<T>(grad_input);
    const Tensor w = weight.defined() ? cast_contiguous(weight, self.dtype()) : Tensor();
    const T* wp = w.defined() ? data_of<T>(w) : nullptr;
    // Unreduced: grad_output holds one value per pair; else one value for all.
    const Tensor go = unreduced ? cast_contiguous(grad_output, self.dtype()) : Tensor();
    double scale = 0;
    if (!unreduced) {
      scale = -detail::read_scalar_as_double(grad_output);
      if (reduction == kMean) scale /= detail::read_scalar_as_double(total_weight);
    }
    dispatch_target(target, [&]<typename I>(const I* t) {
      std::atomic<bool> bad{false};
      // grad_input is contiguous [n, c, h * w]: pair p of sample b sits at b c hw + p % hw.
      const int64_t hw = g.h * g.w;
      parallel_chunks(g.count(), [&](int64_t begin, int64_t end) {
        g.for_range(begin, end, [&](int64_t p, int64_t, int64_t to) {
          const int64_t cls = class_of(t, to, g, ignore_index, bad);
          if (cls < 0) return;
          const double wt = wp != nullptr ? static_cast<double>(load(wp + cls)) : 1.0;
          const double gv = unreduced ? -static_cast<double>(load(data_of<T>(go) + p)) : scale;
          store(r + (p / hw) * g.c * hw + p % hw + cls * hw, wt * gv);
        });
      });
      if (bad.load()) throw_bad_target(op, t, g, ignore_index);
    });
  });
  return grad_input;
}

// ---- nll_loss_forward / nll_loss_backward: input [C] or [N, C] ---------------------------------

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
  check_defined(op, {{"grad_output", grad_output}});
  check_same_device(op,
                    {{"grad_output", grad_output}, {"self", self}, {"total_weight", total_weight}});
  check_common(op, self, target, weight, reduction, /*allow_byte=*/true);
  meta::check_nll_loss_backward(op, grad_output, self, target, weight, reduction, total_weight);
  return nll_backward(op, grad_output, self, target, weight, reduction, ignore_index, total_weight,
                      meta::nll_loss_unreduced(self, reduction));
}

// ---- nll_loss2d_forward / nll_loss2d_backward: input [N, C, H, W] ------------------------------

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
  check_defined(op, {{"grad_output", grad_output}});
  check_same_device(op,
                    {{"grad_output", grad_output}, {"self", self}, {"total_weight", total_weight}});
  check_common(op, self, target, weight, reduction, /*allow_byte=*/false);
  meta::check_nll_loss2d_backward(op, grad_output, self, target, weight, reduction,
                                  total_weight);
  return nll_backward(op, grad_output, self, target, weight, reduction, ignore_index, total_weight,
                      reduction == kNone);
}

// ---- composites (Note [Loss composites]) ------------------------------------------------------

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                int64_t reduction, int64_t ignore_index) {
  check_reduction("nll_loss", reduction);
  return std::get<0>(loom::nll_loss_forward(self, target, weight, static_cast<Reduction>(reduction),
                                            ignore_index));
}

Tensor nll_loss2d(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                  int64_t reduction, int64_t ignore_index) {
  check_reduction("nll_loss2d", reduction);
  return std::get<0>(loom::nll_loss2d_forward(self, target, weight,
                                              static_cast<Reduction>(reduction), ignore_index));
}

/// PyTorch's nll_loss_nd: 1-D and 2-D inputs go to nll_loss, 4-D to nll_loss2d, and the
/// others (3-D, 5-D and up) to nll_loss2d as [N, C, 1, d1 * ... * dk].
Tensor nll_loss_nd(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                   int64_t reduction, int64_t ignore_index) {
  constexpr std::string_view op = "nll_loss_nd";
  check_defined(op, {{"self", self}, {"target", target}});
  check_reduction(op, reduction);
  const auto r = static_cast<Reduction>(reduction);
  LOOM_CHECK(self.dim() >= 1, op, ": Expected 1 or more dimensions (got ", self.dim(), ")");
  if (self.dim() != 1) {
    LOOM_CHECK(target.dim() >= 1, op, ": Expected a target with a batch dim for input ",
               self.describe(), ", got target ", target.describe());
    LOOM_CHECK(self.size(0) == target.size(0), op, ": Expected input batch_size (", self.size(0),
               ") to match target batch_size (", target.size(0), ").");
  }
  if (self.dim() == 1 || self.dim() == 2) {
    return loom::nll_loss(self, target, weight, r, ignore_index);
  }
  if (self.dim() == 4) return loom::nll_loss2d(self, target, weight, r, ignore_index);
  const int64_t n = self.size(0), c = self.size(1);
  DimVector out_size{n};
  for (int64_t d = 2; d < self.dim(); ++d) out_size.push_back(self.size(d));
  const IntArrayRef spatial(out_size.data() + 1, out_size.size() - 1);
  LOOM_CHECK(target.sizes().size() == out_size.size() &&
                 IntArrayRef(target.sizes().data() + 1, target.sizes().size() - 1) == spatial,
             op, ": Expected target size ", sizes_str(out_size), ", got ",
             sizes_str(target.sizes()));
  // An empty batch keeps its zero sizes (view cannot infer -1 from zero elements).
  const Tensor input = self.numel() > 0 ? loom::view(loom::contiguous(self), {n, c, 1, -1})
                                        : loom::view(loom::contiguous(self), {n, c, 0, 0});
  const Tensor tgt = target.numel() > 0 ? loom::view(loom::contiguous(target), {n, 1, -1})
                                        : loom::view(loom::contiguous(target), {n, 0, 0});
  const Tensor out = loom::nll_loss2d(input, tgt, weight, r, ignore_index);
  return r == Reduction::None ? loom::view(out, out_size) : out;
}

/// weight [C] as a view that broadcasts along class_dim of an input of ndim dims.
Tensor weight_along(const Tensor& weight, int64_t ndim, int64_t class_dim) {
  if (ndim <= 1) return weight;
  DimVector shape(static_cast<size_t>(ndim), 1);
  shape[class_dim] = weight.size(0);
  return loom::view(weight, shape);
}

/// Cross entropy with class probabilities (target has self's shape).
Tensor cross_entropy_prob_target(const Tensor& self, const Tensor& target_, const Tensor& weight,
                                 int64_t reduction, double label_smoothing) {
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const int64_t n_classes = self.size(class_dim);
  LOOM_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == n_classes),
             "cross_entropy: weight tensor should be defined either for all ", n_classes,
             " classes or no classes but got weight tensor of shape: ",
             sizes_str(weight.defined() ? weight.sizes() : IntArrayRef{}));
  const Tensor input = loom::log_softmax(self, class_dim, self.dtype());
  Tensor target = target_;
  if (label_smoothing > 0.0) {
    LOOM_CHECK(
        label_smoothing <= 1.0,
        "cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
    target = loom::add(loom::mul(target_, 1 - label_smoothing),
                       Scalar(label_smoothing / static_cast<double>(n_classes)));
  }
  Tensor prod = loom::mul(input, target);
  if (weight.defined()) prod = loom::mul(prod, weight_along(weight, input.dim(), class_dim));
  switch (reduction) {
    case kMean: {
      const Tensor s = loom::neg(loom::sum(prod));
      if (input.numel() == 0) return loom::full({}, std::nan(""), s.dtype(), s.device());
      return loom::div(s, Scalar(input.numel() / n_classes));
    }
    case kSum:
      return loom::neg(loom::sum(prod));
    default:
      return loom::neg(loom::sum(prod, {class_dim}));
  }
}

/// Cross entropy with class indices and label smoothing: (1 - eps) nll + eps / C times the
/// loss against the uniform distribution, both reduced the same way.
Tensor cross_entropy_label_smoothing(const Tensor& self, const Tensor& target,
                                     const std::optional<Tensor>& weight, int64_t reduction,
                                     int64_t ignore_index, double label_smoothing) {
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const auto r = static_cast<Reduction>(reduction);
  const Tensor input = loom::log_softmax(self, class_dim, self.dtype());
  const Tensor nll = loom::nll_loss_nd(input, target, weight, r, ignore_index);
  const int64_t n_classes = input.size(class_dim);
  Tensor smooth_loss =
      weight ? loom::neg(loom::sum(loom::mul(input, weight_along(*weight, input.dim(), class_dim)),
                                   {class_dim}))
             : loom::neg(loom::sum(input, {class_dim}));
  smooth_loss =
      loom::where(loom::eq(target, Scalar(ignore_index)),
                  loom::full({}, 0.0, smooth_loss.dtype(), smooth_loss.device()), smooth_loss);
  Tensor ret = smooth_loss;
  if (reduction == kMean) {
    // The mean divides by the weights of the targets that count, as nll_loss_nd's does:
    // their sum is the sum-reduced nll loss of an input of -1 everywhere.
    const Tensor minus_one =
        loom::expand(loom::full({}, -1.0, input.dtype(), input.device()), input.sizes());
    const Tensor weight_sum =
        loom::nll_loss_nd(minus_one, target, weight, Reduction::Sum, ignore_index);
    ret = loom::div(loom::sum(smooth_loss), weight_sum);
  } else if (reduction == kSum) {
    ret = loom::sum(smooth_loss);
  }
  return loom::add(loom::mul(nll, 1 - label_smoothing),
                   loom::mul(ret, label_smoothing / static_cast<double>(n_classes)));
}

/// PyTorch's cross_entropy_loss: probabilities when target has self's shape, else class
/// indices, with or without label smoothing.
Tensor cross_entropy_loss(const Tensor& self, const Tensor& target,
                          const std::optional<Tensor>& weight_opt, int64_t reduction,
                          int64_t ignore_index, double label_smoothing) {
  constexpr std::string_view op = "cross_entropy_loss";
  const std::optional<Tensor> weight =
      weight_opt && weight_opt->defined() ? weight_opt : std::nullopt;
  check_defined(op, {{"self", self}, {"target", target}});
  check_reduction(op, reduction);
  LOOM_CHECK_T(IndexError, self.dim() >= 1, op,
               ": expected an input of 1 or more dimensions (classes on dim 1, or 0 without a "
               "batch), got ",
               self.describe());
  if (self.sizes() == target.sizes()) {
    LOOM_CHECK_T(TypeError, is_floating_point(target.dtype()), op,
                 ": Expected floating point type for target with class probabilities, got ",
                 torch_type_name(target.dtype()));
    LOOM_CHECK(ignore_index < 0, op,
               ": ignore_index is not supported for floating point target, got ignore_index ",
               ignore_index);
    return cross_entropy_prob_target(self, target, weight.value_or(Tensor()), reduction,
                                     label_smoothing);
  }
  if (label_smoothing > 0.0) {
    LOOM_CHECK(label_smoothing <= 1.0, op,
               ": label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
    return cross_entropy_label_smoothing(self, target, weight, reduction, ignore_index,
                                         label_smoothing);
  }
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  return loom::nll_loss_nd(loom::log_softmax(self, class_dim, self.dtype()), target, weight,
                           static_cast<Reduction>(reduction), ignore_index);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("nll_loss_forward", &nll_loss_forward);
  m.impl("nll_loss_backward", &nll_loss_backward);
  m.impl("nll_loss2d_forward", &nll_loss2d_forward);
  m.impl("nll_loss2d_backward", &nll_loss2d_backward);
}

// The composites (Note [Loss composites]): one kernel for every backend and for autograd,
// which records the ops they call.
LOOM_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.set_provider("reference");
  m.impl("nll_loss", &nll_loss);
  m.impl("nll_loss2d", &nll_loss2d);
  m.impl("nll_loss_nd", &nll_loss_nd);
  m.impl("cross_entropy_loss", &cross_entropy_loss);
}

}  // namespace loom::ops::cpu::loss
