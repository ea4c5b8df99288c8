// Reference CPU kernels: var, std (correction and unbiased forms), norm, frobenius_norm,
// logsumexp. They accumulate in double (Note [Reduction geometry] in reduce_engine.h), except
// contiguous float32 rows of var/std and the 2-norm, which run the per-ISA float cascade
// (Note [Cascade sum] in cpu/vec/reduce_simd.h), as do logsumexp's.
#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "cpu/vec/reduce_kernels.h"
#include "cpu/vec/softmax_kernels.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu::reduction {
namespace {

/// Count, mean and sum of squared deviations: rows are two-pass (accurate), partial
/// results merge with Chan's formula.
struct Moments {
  double n = 0, mean = 0, m2 = 0;
};

template <typename T>
struct MomentsOp {
  using Acc = Moments;
  Acc init() const { return {}; }
  void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t) const {
    if constexpr (std::is_same_v<T, float>) {
      if (s == 1) {
        // Two passes of the cascade; the deviations are taken from the float nearest the
        // mean, and sum((x - m)^2) = sum((x - mf)^2) - n (m - mf)^2 puts the rest back.
        const double mean = LOOM_ISA_CALL(sum_f32)(p, n) / static_cast<double>(n);
        const auto mf = static_cast<float>(mean);
        const double d = mean - static_cast<double>(mf);
        const double m2 = LOOM_ISA_CALL(sum_sq_dev_f32)(p, n, mf) - static_cast<double>(n) * d * d;
        acc = merge(acc, {static_cast<double>(n), mean, m2 < 0 ? 0.0 : m2});  // NaN stays
        return;
      }
    }
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(load(p + i * s));
    const double mean = sum / static_cast<double>(n);
    double m2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(load(p + i * s)) - mean;
      m2 += d * d;
    }
    acc = merge(acc, {static_cast<double>(n), mean, m2});
  }
  Acc merge(const Acc& a, const Acc& b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const double n = a.n + b.n;
    const double delta = b.mean - a.mean;
    return {n, a.mean + delta * b.n / n, a.m2 + b.m2 + delta * delta * a.n * b.n / n};
  }
};

/// Runs Op<T> over plan (T a floating dtype of src) and writes finish(acc) in src's dtype.
template <template <typename> class Op, typename Finish>
Tensor reduce_floating(std::string_view op, const Tensor& src, const ReducePlan& plan,
                       Op<float> /*tag*/, Finish finish) {
  return dispatch_floats(op, src, [&]<typename T>(T*) {
    std::vector<typename Op<T>::Acc> acc(static_cast<size_t>(plan.outer_numel));
    run_reduce(plan, data_of<T>(src), Op<T>{}, acc.data());
    std::vector<double> out(acc.size());
    for (size_t i = 0; i < acc.size(); ++i) out[i] = finish(acc[i]);
    return tensor_from_values(plan, src.dtype(), out.data());
  });
}

Tensor var_std(const Tensor& self, std::optional<IntArrayRef> dim,
               const std::optional<Scalar>& correction, bool keepdim, bool take_sqrt) {
  const char* op = take_sqrt ? "std" : "var";
  meta::check_var_std_dtype(op, self);
  const double c = correction ? correction->to_double() : 1.0;
  const ReducePlan plan = make_plan(self, reduce_mask(op, self, dim), keepdim);
  return reduce_floating(op, self, plan, MomentsOp<float>{}, [&](const Moments& m) {
    const double v = m.m2 / std::max(0.0, m.n - c);
    return take_sqrt ? std::sqrt(v) : v;
  });
}

/// (var or std, mean) from one pass over the moments.
std::tuple<Tensor, Tensor> moments_and_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                            const std::optional<Scalar>& correction, bool keepdim,
                                            bool take_sqrt) {
  const char* op = take_sqrt ? "std_mean" : "var_mean";
  meta::check_var_std_dtype(op, self);
  const double c = correction ? correction->to_double() : 1.0;
  const ReducePlan plan = make_plan(self, reduce_mask(op, self, dim), keepdim);
  return dispatch_floats(op, self, [&]<typename T>(T*) {
    std::vector<Moments> acc(static_cast<size_t>(plan.outer_numel));
    run_reduce(plan, data_of<T>(self), MomentsOp<T>{}, acc.data());
    std::vector<double> spread(acc.size()), mean(acc.size());
    for (size_t i = 0; i < acc.size(); ++i) {
      const double v = acc[i].m2 / std::max(0.0, acc[i].n - c);
      spread[i] = take_sqrt ? std::sqrt(v) : v;
      mean[i] = acc[i].n == 0 ? std::nan("") : acc[i].mean;
    }
    return std::tuple<Tensor, Tensor>(tensor_from_values(plan, self.dtype(), spread.data()),
                                      tensor_from_values(plan, self.dtype(), mean.data()));
  });
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                    std::optional<Scalar> correction, bool keepdim) {
  return moments_and_mean(self, dim, correction, keepdim, false);
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                    std::optional<Scalar> correction, bool keepdim) {
  return moments_and_mean(self, dim, correction, keepdim, true);
}

Tensor var(const Tensor& self, bool unbiased) {
  return var_std(self, std::nullopt, Scalar(unbiased ? 1 : 0), false, false);
}
Tensor var_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return var_std(self, dim, Scalar(unbiased ? 1 : 0), keepdim, false);
}
Tensor var_correction(const Tensor& self, std::optional<IntArrayRef> dim,
                      std::optional<Scalar> correction, bool keepdim) {
  return var_std(self, dim, correction, keepdim, false);
}
Tensor std_(const Tensor& self, bool unbiased) {
  return var_std(self, std::nullopt, Scalar(unbiased ? 1 : 0), false, true);
}
Tensor std_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return var_std(self, dim, Scalar(unbiased ? 1 : 0), keepdim, true);
}
Tensor std_correction(const Tensor& self, std::optional<IntArrayRef> dim,
                      std::optional<Scalar> correction, bool keepdim) {
  return var_std(self, dim, correction, keepdim, true);
}

/// Which vector norm: the special orders get their own loops.
enum class NormKind { Zero, One, Two, Inf, NegInf, General };

struct NormSpec {
  NormKind kind;
  double p;
};

template <typename T>
struct NormOp {
  NormSpec spec{NormKind::Two, 2};
  using Acc = double;
  Acc init() const {
    if (spec.kind == NormKind::Inf) return 0;
    if (spec.kind == NormKind::NegInf) return std::numeric_limits<double>::infinity();
    return 0;
  }
  void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t) const {
    double a = acc;
    switch (spec.kind) {
      case NormKind::Zero:
        for (int64_t i = 0; i < n; ++i) a += load(p + i * s) != 0 ? 1.0 : 0.0;
        break;
      case NormKind::One:
        for (int64_t i = 0; i < n; ++i) a += std::fabs(static_cast<double>(load(p + i * s)));
        break;
      case NormKind::Two:
        if constexpr (std::is_same_v<T, float>) {
          if (s == 1) {
            a += LOOM_ISA_CALL(sum_squares_f32)(p, n);
            break;
          }
        }
        for (int64_t i = 0; i < n; ++i) {
          const double x = load(p + i * s);
          a += x * x;
        }
        break;
      case NormKind::Inf:
        for (int64_t i = 0; i < n; ++i) {
          const double x = std::fabs(static_cast<double>(load(p + i * s)));
          if (x > a || std::isnan(x)) a = std::isnan(a) ? a : x;
        }
        break;
      case NormKind::NegInf:
        for (int64_t i = 0; i < n; ++i) {
          const double x = std::fabs(static_cast<double>(load(p + i * s)));
          if (x < a || std::isnan(x)) a = std::isnan(a) ? a : x;
        }
        break;
      case NormKind::General:
        for (int64_t i = 0; i < n; ++i) {
          a += std::pow(std::fabs(static_cast<double>(load(p + i * s))), spec.p);
        }
        break;
    }
    acc = a;
  }
  Acc merge(Acc a, Acc b) const {
    if (spec.kind == NormKind::Inf || spec.kind == NormKind::NegInf) {
      if (std::isnan(a) || std::isnan(b)) return std::nan("");
      return spec.kind == NormKind::Inf ? std::max(a, b) : std::min(a, b);
    }
    return a + b;
  }
};

Tensor norm_impl(const Tensor& input, const std::optional<Scalar>& p,
                 std::optional<IntArrayRef> dim, bool keepdim,
                 std::optional<DType> dtype = std::nullopt) {
  // A dtype converts the input first (and must be floating, as the input must).
  const Tensor self = dtype && *dtype != input.dtype() && is_floating_point(input.dtype())
                          ? cast_contiguous(input, *dtype)
                          : input;
  meta::check_norm_dtypes(dtype, self);
  const double order = p ? p->to_double() : 2.0;
  const NormSpec spec{meta::norm_kind<NormKind>(order), order};
  const std::vector<bool> mask = reduce_mask("norm", self, dim);
  meta::check_norm_nonempty(self, mask, order);
  const ReducePlan plan = make_plan(self, mask, keepdim);
  return dispatch_floats("norm", self, [&]<typename T>(T*) {
    std::vector<double> acc(static_cast<size_t>(plan.outer_numel));
    run_reduce(plan, data_of<T>(self), NormOp<T>{spec}, acc.data());
    for (double& a : acc) {
      if (spec.kind == NormKind::Two) a = std::sqrt(a);
      if (spec.kind == NormKind::General) a = std::pow(a, 1.0 / order);
    }
    return tensor_from_values(plan, self.dtype(), acc.data());
  });
}

Tensor norm_scalar(const Tensor& self, const Scalar& p) {
  return norm_impl(self, p, std::nullopt, false);
}
Tensor norm_dtype(const Tensor& self, std::optional<Scalar> p, DType dtype) {
  return norm_impl(self, p, std::nullopt, false, dtype);
}
Tensor norm_dim_dtype(const Tensor& self, std::optional<Scalar> p, IntArrayRef dim, bool keepdim,
                      DType dtype) {
  return norm_impl(self, p, dim, keepdim, dtype);
}
Tensor linalg_vector_norm(const Tensor& self, const Scalar& ord, std::optional<IntArrayRef> dim,
                          bool keepdim, std::optional<DType> dtype) {
  return norm_impl(self, ord, dim, keepdim, dtype);
}
Tensor norm_dim(const Tensor& self, std::optional<Scalar> p, IntArrayRef dim, bool keepdim) {
  return norm_impl(self, p, dim, keepdim);
}
Tensor frobenius_norm(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return norm_impl(self, Scalar(2), dim, keepdim);
}

/// Running (max, sum of exp(x - max)): stable for any magnitude.
struct LseAcc {
  double m = -std::numeric_limits<double>::infinity();
  double s = 0;
};

LseAcc lse_merge(const LseAcc& a, const LseAcc& b) {
  if (std::isnan(a.m) || std::isnan(b.m)) return {std::nan(""), 0};
  if (a.m == -std::numeric_limits<double>::infinity()) return b;
  if (b.m == -std::numeric_limits<double>::infinity()) return a;
  if (std::isinf(a.m) || std::isinf(b.m)) return {std::numeric_limits<double>::infinity(), 1};
  const double m = std::max(a.m, b.m);
  return {m, a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m)};
}

/// A contiguous float row on the per-ISA kernels: vector max, then exp(x - max) summed by
/// the cascade.
LseAcc contiguous_float_row(const float* p, int64_t n) {
  const float m = LOOM_ISA_CALL(max_f32)(p, n);  // NaN when any element is
  if (std::isnan(m)) return {std::nan(""), 0};
  if (!std::isfinite(m)) return {m, 1};
  return {m, LOOM_ISA_CALL(sum_exp_f32)(p, n, m)};
}

template <typename T>
struct LseOp {
  using Acc = LseAcc;
  Acc init() const { return {}; }
  void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t) const {
    if constexpr (std::is_same_v<T, float>) {
      if (s == 1) {
        acc = lse_merge(acc, contiguous_float_row(p, n));
        return;
      }
    }
    LseAcc r;
    for (int64_t i = 0; i < n; ++i) {
      const double x = load(p + i * s);
      if (std::isnan(x)) {
        acc = {x, 0};
        return;
      }
      r.m = std::max(r.m, x);
    }
    if (std::isfinite(r.m)) {
      for (int64_t i = 0; i < n; ++i) r.s += std::exp(static_cast<double>(load(p + i * s)) - r.m);
    } else {
      r.s = 1;
    }
    acc = lse_merge(acc, r);
  }
  Acc merge(const Acc& a, const Acc& b) const { return lse_merge(a, b); }
};

Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  // Integers give the default float dtype, as in PyTorch.
  const Tensor src = is_integral(self.dtype()) ? cast_contiguous(self, DType::Float32) : self;
  const ReducePlan plan = make_plan(src, reduce_mask("logsumexp", src, dim), keepdim);
  return reduce_floating("logsumexp", src, plan, LseOp<float>{}, [](const LseAcc& a) {
    if (std::isnan(a.m) || std::isinf(a.m)) return a.m;
    return a.m + std::log(a.s);
  });
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("var", &var);
  m.impl("var.dim", &var_dim);
  m.impl("var.correction", &var_correction);
  m.impl("std", &std_);
  m.impl("std.dim", &std_dim);
  m.impl("std.correction", &std_correction);
  m.impl("var_mean.correction", &var_mean);
  m.impl("std_mean.correction", &std_mean);
  m.impl("norm.Scalar", &norm_scalar);
  m.impl("norm.ScalarOpt_dim", &norm_dim);
  m.impl("norm.ScalarOpt_dtype", &norm_dtype);
  m.impl("norm.ScalarOpt_dim_dtype", &norm_dim_dtype);
  m.impl("linalg_vector_norm", &linalg_vector_norm);
  m.impl("frobenius_norm.dim", &frobenius_norm);
  m.impl("logsumexp", &logsumexp);
}

}  // namespace loom::ops::cpu::reduction
