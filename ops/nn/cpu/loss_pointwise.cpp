// Reference CPU kernels: the pointwise losses (mse, smooth_l1, huber, soft_margin,
// binary_cross_entropy, binary_cross_entropy_with_logits), their backward ops, and the
// composites l1_loss, kl_div and margin_ranking_loss (Note [Loss composites] in
// cpu/loss_util.h).
//
// Note [Pointwise loss engine]: a loss is a functor on the computation type (float for
// float32 and the 16-bit floats, double for float64) over up to four operands (grad_output,
// self, target, weight, pos_weight). The operands broadcast together and promote to a
// common floating dtype with PyTorch's rules (a 0-dim tensor does not lift the dtype of
// dimensioned ones of its category); an absent optional operand reads as 1. Dims of size 1
// are dropped and dims whose strides chain in every operand are merged, so contiguous
// operands are one flat loop. The reduced forms sum in double, in fixed chunks merged in
// order (chunked_sum), and never materialise the unreduced loss. Backward ops write a
// gradient of self's shape and dtype; "mean" scales by 1 / self.numel() as PyTorch does.
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "cpu/loss_util.h"
#include "cpu/meta.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/creation.h"
#include "loom/ops/nn/meta/loss.h"
#include "loom/ops/pointwise.h"

namespace loom::ops::cpu::loss {
namespace {

using reduction::cast_contiguous;
using reduction::data_of;
using reduction::DimVec;
using reduction::load;
using reduction::store;

/// A named operand; an undefined tensor is an absent optional, read as 1.
struct Operand {
  std::string_view name;
  Tensor tensor;
};

/// The broadcast geometry of N operands (Note [Pointwise loss engine]).
template <size_t N>
struct Plan {
  DType dtype = DType::Float32;   ///< the common (computation storage) dtype
  DimVector shape;                ///< the broadcast shape
  int64_t numel = 1;              ///< elements of the broadcast shape
  DimVec sizes;                   ///< coalesced sizes
  std::array<DimVec, N> strides;  ///< coalesced strides per operand, in elements
  std::array<Tensor, N> tensors;  ///< the operands, in dtype
};

/// Checks, promotes, broadcasts and coalesces the operands. With result_like, the broadcast
/// must be the shape of that operand (self): backward ops write self's gradient, and
/// PyTorch's binary_cross_entropy multiplies by its weight in place.
template <size_t N>
Plan<N> make_plan(std::string_view op, const std::array<Operand, N>& ops,
                  std::optional<size_t> result_like = std::nullopt) {
  const Tensor* first = nullptr;
  for (const Operand& o : ops) {
    if (!o.tensor.defined()) continue;
    if (first == nullptr) first = &o.tensor;
    LOOM_CHECK_T(DeviceError, o.tensor.device() == first->device(), op,
                 ": Expected all tensors to be on the same device, but found ",
                 first->device().str(), " and ", o.tensor.device().str(), " (", o.name, ")");
  }
  Plan<N> p;
  std::array<meta::LossOperand, N> named;
  for (size_t k = 0; k < N; ++k) named[k] = {ops[k].name, &ops[k].tensor};
  p.dtype = meta::loss_result_dtype(named);
  if (!is_floating_point(p.dtype)) throw_dtype_unsupported(op, p.dtype);
  const std::vector<int64_t> shape = meta::loss_broadcast_shape(op, named);
  p.shape.assign(shape.begin(), shape.end());
  if (result_like) {
    const Operand& like = ops[*result_like];
    meta::check_broadcast_result_shape(op, IntArrayRef(p.shape), like.name, like.tensor);
  }
  for (int64_t s : p.shape) p.numel *= s;
  const size_t nd = p.shape.size();
  std::array<DimVec, N> full;
  for (size_t k = 0; k < N; ++k) {
    const Tensor& t = ops[k].tensor;
    p.tensors[k] = !t.defined()           ? loom::full({}, 1.0, p.dtype, first->device())
                   : t.dtype() == p.dtype ? t
                                          : cast_contiguous(t, p.dtype);
    full[k].assign(nd, 0);
    const auto td = static_cast<size_t>(p.tensors[k].dim());
    for (size_t i = 0; i < td; ++i) {
      const auto ti = static_cast<int64_t>(i);
      full[k][nd - td + i] = p.tensors[k].size(ti) == 1 ? 0 : p.tensors[k].stride(ti);
    }
  }
  // Coalesce: drop size-1 dims, merge a dim into the next inner one when every operand's
  // strides chain.
  for (size_t d = 0; d < nd; ++d) {
    if (p.shape[d] == 1) continue;
    bool merge = !p.sizes.empty();
    for (size_t k = 0; merge && k < N; ++k) {
      merge = p.strides[k].back() == full[k][d] * p.shape[d];
    }
    if (merge) {
      p.sizes.back() *= p.shape[d];
      for (size_t k = 0; k < N; ++k) p.strides[k].back() = full[k][d];
    } else {
      p.sizes.push_back(p.shape[d]);
      for (size_t k = 0; k < N; ++k) p.strides[k].push_back(full[k][d]);
    }
  }
  return p;
}

/// Calls row(position, offsets, n) for the rows covering the flat positions [begin, end)
/// of the broadcast shape: n elements from each operand's offset, along its inner stride.
template <size_t N, typename Row>
void for_rows(const Plan<N>& p, int64_t begin, int64_t end, Row&& row) {
  std::array<int64_t, N> off{};
  const size_t nd = p.sizes.size();
  if (nd == 0) {
    if (begin < end) row(begin, off, end - begin);
    return;
  }
  DimVec idx(nd, 0);
  int64_t rem = begin;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = rem % p.sizes[d];
    rem /= p.sizes[d];
    for (size_t k = 0; k < N; ++k) off[k] += idx[d] * p.strides[k][d];
  }
  for (int64_t pos = begin; pos < end;) {
    const int64_t n = std::min(end - pos, p.sizes[nd - 1] - idx[nd - 1]);
    row(pos, off, n);
    pos += n;
    idx[nd - 1] += n;
    for (size_t k = 0; k < N; ++k) off[k] += n * p.strides[k][nd - 1];
    for (size_t d = nd - 1; d > 0 && idx[d] == p.sizes[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
      for (size_t k = 0; k < N; ++k) {
        off[k] += p.strides[k][d - 1] - p.sizes[d] * p.strides[k][d];
      }
    }
  }
}

/// Calls out(i, f(operands at i)) for i in [i0, i1) of a row starting at q with strides st.
template <typename T, size_t N, typename F, typename Out, size_t... I>
inline void row_loop(const std::array<const T*, N>& q, const std::array<int64_t, N>& st, int64_t i0,
                     int64_t i1, const F& f, Out&& out, std::index_sequence<I...>) {
  using C = compute_t<T>;
  if (((st[I] == 1) && ...)) {
    for (int64_t i = i0; i < i1; ++i) out(i, f(static_cast<C>(load(q[I] + i))...));
  } else {
    for (int64_t i = i0; i < i1; ++i) out(i, f(static_cast<C>(load(q[I] + i * st[I]))...));
  }
}

/// The unreduced loss (a new tensor of the broadcast shape, in the plan's dtype) or its
/// mean or sum (0-dim). make<C>() gives the functor on the computation type C.
template <size_t N, typename Make>
Tensor run(std::string_view op, const Plan<N>& p, int64_t reduction, Make&& make) {
  Tensor result = Tensor::empty(reduction == kNone ? IntArrayRef(p.shape) : IntArrayRef(),
                                options_like(p.tensors[0], p.dtype));
  dispatch_floats(op, p.tensors[0], [&]<typename T>(T*) {
    if (is_meta(result)) return;  // no values (nor the value checks of binary_cross_entropy)
    using C = compute_t<T>;
    constexpr auto seq = std::make_index_sequence<N>{};
    const auto f = make.template operator()<C>();
    std::array<const T*, N> base;
    std::array<int64_t, N> inner{};
    for (size_t k = 0; k < N; ++k) {
      base[k] = data_of<T>(p.tensors[k]);
      if (!p.sizes.empty()) inner[k] = p.strides[k].back();
    }
    auto row_start = [&](const std::array<int64_t, N>& off) {
      std::array<const T*, N> q;
      for (size_t k = 0; k < N; ++k) q[k] = base[k] + off[k];
      return q;
    };
    if (reduction == kNone) {
      T* o = data_of<T>(result);
      parallel_chunks(p.numel, [&](int64_t begin, int64_t end) {
        for_rows(p, begin, end, [&](int64_t pos, const std::array<int64_t, N>& off, int64_t n) {
          T* w = o + pos;
          row_loop(
              row_start(off), inner, 0, n, f, [w](int64_t i, C v) { store(w + i, v); }, seq);
        });
      });
      return;
    }
    // Blocks of values summed by a vectorised double reduction: one serial chain of double
    // adds would bound the loop.
    constexpr int64_t kBlock = 256;
    const double total = chunked_sum<double>(p.numel, [&](int64_t begin, int64_t end) {
      double s = 0;
      for_rows(p, begin, end, [&](int64_t, const std::array<int64_t, N>& off, int64_t n) {
        const std::array<const T*, N> q = row_start(off);
        for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
          const int64_t b1 = std::min(n, b0 + kBlock);
          C buf[kBlock];
          row_loop(
              q, inner, b0, b1, f, [&buf, b0](int64_t i, C v) { buf[i - b0] = v; }, seq);
          double acc = 0;
#pragma omp simd reduction(+ : acc)
          for (int64_t i = 0; i < b1 - b0; ++i) acc += static_cast<double>(buf[i]);
          s += acc;
        }
      });
      return s;
    });
    // A mean over no elements is 0 / 0: nan, as PyTorch's.
    store(data_of<T>(result), reduction == kMean ? total / static_cast<double>(p.numel) : total);
  });
  return result;
}

/// c ? a : b without a branch, both being computed anyway: a floating ternary is a branch
/// under -ftrapping-math, which stops the vectoriser.
template <typename C>
[[gnu::always_inline]] inline C pick(bool c, C a, C b) {
  using Bits = std::conditional_t<sizeof(C) == 4, int32_t, int64_t>;
  const Bits m = -static_cast<Bits>(c);
  return std::bit_cast<C>((std::bit_cast<Bits>(a) & m) | (std::bit_cast<Bits>(b) & ~m));
}

/// A forward loss over its operands (the first two are self and target); with
/// result_like_self the broadcast must be self's shape.
template <size_t N, typename Make>
Tensor loss_forward(std::string_view op, int64_t reduction, const std::array<Operand, N>& ops,
                    Make&& make, bool result_like_self = false) {
  check_defined(op, {{ops[0].name, ops[0].tensor}, {ops[1].name, ops[1].tensor}});
  check_reduction(op, reduction);
  return run(op, make_plan(op, ops, result_like_self ? std::optional<size_t>(0) : std::nullopt),
             reduction, make);
}

/// A backward op over (grad_output, self, target, ...): the gradient of self, self's shape
/// and dtype. make<C>(norm) gets 1 / self.numel() for the mean, else 1.
template <size_t N, typename Make>
Tensor loss_backward(std::string_view op, int64_t reduction, const std::array<Operand, N>& ops,
                     Make&& make) {
  check_defined(
      op,
      {{ops[0].name, ops[0].tensor}, {ops[1].name, ops[1].tensor}, {ops[2].name, ops[2].tensor}});
  check_reduction(op, reduction);
  const Tensor& self = ops[1].tensor;
  const Plan<N> p = make_plan(op, ops, /*result_like=*/size_t{1});
  const double norm = reduction == kMean ? 1.0 / static_cast<double>(self.numel()) : 1.0;
  const Tensor grad =
      run(op, p, kNone, [&]<typename C>() { return make.template operator()<C>(norm); });
  return grad.dtype() == self.dtype() ? grad : cast_contiguous(grad, self.dtype());
}

// ---- mse, smooth_l1, huber, soft_margin ---------------------------------------------------------

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return loss_forward("mse_loss", reduction,
                      std::array{Operand{"self", self}, Operand{"target", target}},
                      []<typename C>() {
                        return [](C x, C y) {
                          const C d = x - y;
                          return d * d;
                        };
                      });
}

Tensor mse_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         int64_t reduction) {
  return loss_backward(
      "mse_loss_backward", reduction,
      std::array{Operand{"grad_output", grad}, Operand{"self", self}, Operand{"target", target}},
      []<typename C>(double norm) {
        return [k = C(2 * norm)](C g, C x, C y) { return k * (x - y) * g; };
      });
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  meta::check_smooth_l1_beta("smooth_l1_loss", beta);
  return loss_forward("smooth_l1_loss", reduction,
                      std::array{Operand{"self", self}, Operand{"target", target}},
                      [beta]<typename C>() {
                        return [b = C(beta)](C x, C y) {
                          const C z = std::abs(x - y);
                          return pick(z < b, C(0.5) * z * z / b, z - C(0.5) * b);
                        };
                      });
}

Tensor smooth_l1_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                               int64_t reduction, double beta) {
  meta::check_smooth_l1_beta("smooth_l1_loss_backward", beta);
  // As PyTorch's kernel: |x - y| >= beta takes the sign's branch, so beta = 0 is the L1
  // gradient (with -1 at x == y).
  return loss_backward(
      "smooth_l1_loss_backward", reduction,
      std::array{Operand{"grad_output", grad}, Operand{"self", self}, Operand{"target", target}},
      [beta]<typename C>(double norm) {
        return [k = C(norm), b = C(beta)](C g, C x, C y) {
          const C d = x - y;
          return pick(d <= -b, -k * g, pick(d >= b, k * g, k * d * g / b));
        };
      });
}

Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  meta::check_huber_delta("huber_loss", delta);
  return loss_forward("huber_loss", reduction,
                      std::array{Operand{"self", self}, Operand{"target", target}},
                      [delta]<typename C>() {
                        return [dl = C(delta)](C x, C y) {
                          const C z = std::abs(x - y);
                          return pick(z < dl, C(0.5) * z * z, dl * (z - C(0.5) * dl));
                        };
                      });
}

Tensor huber_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                           int64_t reduction, double delta) {
  return loss_backward(
      "huber_loss_backward", reduction,
      std::array{Operand{"grad_output", grad}, Operand{"self", self}, Operand{"target", target}},
      [delta]<typename C>(double norm) {
        return [k = C(norm), dl = C(delta)](C g, C x, C y) {
          const C d = x - y;
          return pick(d <= -dl, -k * g * dl, pick(d >= dl, k * g * dl, k * d * g));
        };
      });
}

Tensor soft_margin_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return loss_forward(
      "soft_margin_loss", reduction, std::array{Operand{"self", self}, Operand{"target", target}},
      []<typename C>() { return [](C x, C y) { return std::log1p(std::exp(-x * y)); }; });
}

Tensor soft_margin_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                 int64_t reduction) {
  return loss_backward(
      "soft_margin_loss_backward", reduction,
      std::array{Operand{"grad_output", grad}, Operand{"self", self}, Operand{"target", target}},
      []<typename C>(double norm) {
        return [k = C(norm)](C g, C x, C y) {
          const C z = std::exp(-y * x);
          return -k * y * z / (C(1) + z) * g;
        };
      });
}

// ---- binary cross entropy ------------------------------------------------------------------

/// Elements outside [0, 1] (or nan), flagged from inside the loop and reported after it.
struct RangeFlags {
  std::atomic<bool> input{false}, target{false};
  void raise(std::string_view op) const {
    LOOM_CHECK(!input.load(), op, ": all elements of input should be between 0 and 1");
    LOOM_CHECK(!target.load(), op, ": all elements of target should be between 0 and 1");
  }
};

Tensor binary_cross_entropy(const Tensor& self, const Tensor& target,
                            const std::optional<Tensor>& weight, int64_t reduction) {
  constexpr std::string_view op = "binary_cross_entropy";
  check_defined(op, {{"self", self}, {"target", target}});
  meta::check_bce_same_size(op, self, target);
  RangeFlags bad;
  auto make = [&bad]<typename C>() {
    return [&bad](C x, C y, C w) {
      if (!(x >= C(0) && x <= C(1))) bad.input.store(true, std::memory_order_relaxed);
      if (!(y >= C(0) && y <= C(1))) bad.target.store(true, std::memory_order_relaxed);
      // Each log is clamped at -100, so x = 0 or 1 costs at most 100, as in PyTorch.
      return w *
             ((y - C(1)) * std::max(std::log1p(-x), C(-100)) - y * std::max(std::log(x), C(-100)));
    };
  };
  const Tensor loss = loss_forward(op, reduction,
                                   std::array{Operand{"self", self}, Operand{"target", target},
                                              Operand{"weight", weight.value_or(Tensor())}},
                                   make, /*result_like_self=*/true);
  bad.raise(op);
  return loss;
}

Tensor binary_cross_entropy_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                     const std::optional<Tensor>& weight, int64_t reduction) {
  constexpr std::string_view op = "binary_cross_entropy_backward";
  check_defined(op, {{"self", self}, {"target", target}});
  meta::check_bce_same_size(op, self, target);
  return loss_backward(
      op, reduction,
      std::array{Operand{"grad_output", grad}, Operand{"self", self}, Operand{"target", target},
                 Operand{"weight", weight.value_or(Tensor())}},
      []<typename C>(double norm) {
        return [k = C(norm)](C g, C x, C y, C w) {
          constexpr C kEps = C(1e-12f);  // PyTorch's EPSILON, a float
          return k * w * g * (x - y) / std::max((C(1) - x) * x, kEps);
        };
      });
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight,
                                        int64_t reduction) {
  // (1 - t) x - (1 + (pw - 1) t) log_sigmoid(x), with log_sigmoid(x) =
  // min(x, 0) - log1p(exp(-|x|)): no exp overflows whatever the sign of x.
  return loss_forward("binary_cross_entropy_with_logits", reduction,
                      std::array{Operand{"self", self}, Operand{"target", target},
                                 Operand{"weight", weight.value_or(Tensor())},
                                 Operand{"pos_weight", pos_weight.value_or(Tensor())}},
                      []<typename C>() {
                        return [](C x, C y, C w, C pw) {
                          const C log_sigmoid =
                              std::min(x, C(0)) - std::log1p(std::exp(-std::abs(x)));
                          return w * ((C(1) - y) * x - (C(1) + (pw - C(1)) * y) * log_sigmoid);
                        };
                      });
}

// ---- composites (Note [Loss composites]) ------------------------------------------------------

/// The composites check that their operands broadcast before calling the ops they are made of,
/// so that a mismatch names the loss ("l1_loss: The size of tensor self (2) must match ..."),
/// not "sub.Tensor", an op the caller never called.
void check_composite_broadcast(std::string_view op, std::span<const meta::LossOperand> operands) {
  meta::loss_broadcast_shape(op, operands);
}

Tensor l1_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_defined("l1_loss", {{"self", self}, {"target", target}});
  check_reduction("l1_loss", reduction);
  check_composite_broadcast("l1_loss", std::array{meta::LossOperand{"self", &self},
                                                  meta::LossOperand{"target", &target}});
  return apply_loss_reduction(loom::abs(loom::sub(self, target)), reduction);
}

/// PyTorch's kl_div: exp(t) (t - x) for log targets, else xlogy(t, t) - t x, where
/// xlogy(t, t) is 0 at t = 0 (and nan for a nan t).
Tensor kl_div(const Tensor& self, const Tensor& target, int64_t reduction, bool log_target) {
  constexpr std::string_view op = "kl_div";
  check_defined(op, {{"self", self}, {"target", target}});
  check_reduction(op, reduction);
  LOOM_CHECK_T(TypeError, !is_integral(self.dtype()) && !is_integral(target.dtype()), op,
               ": Integral inputs not supported, got self ", self.describe(), " and target ",
               target.describe());
  check_composite_broadcast(
      op, std::array{meta::LossOperand{"self", &self}, meta::LossOperand{"target", &target}});
  Tensor out;
  if (log_target) {
    out = loom::mul(loom::exp(target), loom::sub(target, self));
  } else {
    const Tensor xlogy = loom::where(loom::eq(target, Scalar(0)),
                                     loom::full({}, 0.0, target.dtype(), target.device()),
                                     loom::mul(target, loom::log(target)));
    out = loom::sub(xlogy, loom::mul(target, self));
  }
  return apply_loss_reduction(out, reduction);
}

/// max(0, -target (input1 - input2) + margin). Integer inputs compute in float32, the
/// dtype PyTorch's float margin gives the result anyway, so that -target (input1 - input2)
/// cannot wrap around (PyTorch computes it in the integer dtype first: uint8 wraps).
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           double margin, int64_t reduction) {
  constexpr std::string_view op = "margin_ranking_loss";
  check_defined(op, {{"input1", input1}, {"input2", input2}, {"target", target}});
  check_reduction(op, reduction);
  check_composite_broadcast(
      op, std::array{meta::LossOperand{"input1", &input1}, meta::LossOperand{"input2", &input2},
                     meta::LossOperand{"target", &target}});
  DType dtype = promote_types(promote_types(input1.dtype(), input2.dtype()), target.dtype());
  if (!is_floating_point(dtype)) dtype = default_float_dtype();
  auto as_dtype = [dtype](const Tensor& t) { return t.dtype() == dtype ? t : loom::to(t, dtype); };
  const Tensor unclamped = loom::add(
      loom::neg(loom::mul(as_dtype(target), loom::sub(as_dtype(input1), as_dtype(input2)))),
      Scalar(margin));
  return apply_loss_reduction(loom::clamp(unclamped, Scalar(0)), reduction);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
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

// The composites (Note [Loss composites]): one kernel for every backend and for autograd,
// which records the ops they call.
LOOM_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.set_provider("reference");
  m.impl("l1_loss", &l1_loss);
  m.impl("kl_div", &kl_div);
  m.impl("margin_ranking_loss", &margin_ranking_loss);
}

}  // namespace loom::ops::cpu::loss
