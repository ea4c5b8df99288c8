// Reference CPU kernels: max, min (full and .dim with indices), amax, amin, argmax, argmin.
// NaN wins (it propagates, and its first index is reported); ties keep the first index.
// Contiguous float32 rows run the per-ISA kernels (cpu/vec/reduce_kernels.h).
#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "cpu/vec/reduce_kernels.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu::reduction {
namespace {

template <typename V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

template <typename V, bool kMax>
V extreme_init() {
  if constexpr (std::is_floating_point_v<V>) {
    return kMax ? -std::numeric_limits<V>::infinity() : std::numeric_limits<V>::infinity();
  } else {
    return kMax ? std::numeric_limits<V>::lowest() : std::numeric_limits<V>::max();
  }
}

template <bool kMax>
struct ExtremeOp {
  template <typename T>
  struct Op {
    using Acc = value_t<T>;
    Acc init() const { return extreme_init<Acc, kMax>(); }
    void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t) const {
      if (is_nan(acc)) return;
      if constexpr (std::is_same_v<T, float>) {
        if (s == 1) {
          const float x = kMax ? LOOM_ISA_CALL(max_f32)(p, n) : LOOM_ISA_CALL(min_f32)(p, n);
          acc = is_nan(x) ? x : (kMax ? std::max(acc, x) : std::min(acc, x));
          return;
        }
      }
      Acc m = acc;
      for (int64_t i = 0; i < n; ++i) {
        const Acc x = load(p + i * s);
        if (is_nan(x)) {
          acc = x;
          return;
        }
        m = kMax ? (x > m ? x : m) : (x < m ? x : m);
      }
      acc = m;
    }
    void step(Acc& acc, const T* p) const {
      const Acc x = load(p);
      const bool take = kMax ? x > acc : x < acc;
      acc = (take || is_nan(x)) ? x : acc;  // a NaN acc stays: comparisons with it are false
    }
    Acc merge(Acc a, Acc b) const {
      if (is_nan(a)) return a;
      if (is_nan(b)) return b;
      return kMax ? std::max(a, b) : std::min(a, b);
    }
  };
};

template <typename V>
struct ArgAcc {
  V v;
  int64_t idx;
};

template <bool kMax>
struct ArgOp {
  template <typename T>
  struct Op {
    using V = value_t<T>;
    using Acc = ArgAcc<V>;
    static bool better(V x, V v) {
      if (is_nan(v)) return false;
      return is_nan(x) || (kMax ? x > v : x < v);
    }
    Acc init() const { return {V{}, -1}; }
    void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t first) const {
      if constexpr (std::is_same_v<T, float>) {
        if (s == 1) {
          float v;
          const int64_t i = kMax ? LOOM_ISA_CALL(argmax_f32)(p, n, &v)
                                 : LOOM_ISA_CALL(argmin_f32)(p, n, &v);
          if (acc.idx < 0 || better(v, acc.v)) acc = {v, first + i};
          return;
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        const V x = load(p + i * s);
        if (acc.idx < 0 || better(x, acc.v)) acc = {x, first + i};
      }
    }
    Acc merge(const Acc& a, const Acc& b) const {
      if (a.idx < 0) return b;
      if (b.idx < 0) return a;
      return better(b.v, a.v) ? b : a;
    }
  };
};

const char* name_of(bool is_max) { return is_max ? "max" : "min"; }

template <bool kMax>
Tensor extreme(const Tensor& self, const std::vector<bool>& mask, bool keepdim) {
  const ReducePlan plan = make_plan(self, mask, keepdim);
  return dispatch_all(self.dtype(), [&]<typename T>(T*) {
    using Op = typename ExtremeOp<kMax>::template Op<T>;
    std::vector<typename Op::Acc> acc(static_cast<size_t>(plan.outer_numel));
    run_reduce(plan, data_of<T>(self), Op{}, acc.data());
    return tensor_from_values(plan, self.dtype(), acc.data());
  });
}

/// (values, indices) of the arg-reduction over mask; values only when want_values.
template <bool kMax>
std::tuple<Tensor, Tensor> arg_extreme(const Tensor& self, const std::vector<bool>& mask,
                                       bool keepdim, bool want_values) {
  const ReducePlan plan = make_plan(self, mask, keepdim);
  return dispatch_all(self.dtype(), [&]<typename T>(T*) {
    using Op = typename ArgOp<kMax>::template Op<T>;
    std::vector<typename Op::Acc> acc(static_cast<size_t>(plan.outer_numel));
    run_reduce(plan, data_of<T>(self), Op{}, acc.data());
    std::vector<int64_t> idx(acc.size());
    std::vector<typename Op::V> val(acc.size());
    for (size_t i = 0; i < acc.size(); ++i) {
      idx[i] = acc[i].idx;
      val[i] = acc[i].v;
    }
    Tensor values = want_values ? tensor_from_values(plan, self.dtype(), val.data()) : Tensor();
    return std::tuple<Tensor, Tensor>(values, tensor_from_values(plan, DType::Int64, idx.data()));
  });
}

template <bool kMax>
Tensor full(const Tensor& self) {
  meta::check_full_extreme(name_of(kMax), self);
  return extreme<kMax>(self, reduce_mask(name_of(kMax), self, std::nullopt), false);
}

template <bool kMax>
std::tuple<Tensor, Tensor> with_dim(const Tensor& self, int64_t dim, bool keepdim) {
  const std::vector<bool> mask = reduce_mask_one(name_of(kMax), self, dim);
  check_nonzero_reduced(name_of(kMax), self, mask);
  return arg_extreme<kMax>(self, mask, keepdim, true);
}

template <bool kMax>
Tensor a_extreme(const Tensor& self, IntArrayRef dim, bool keepdim) {
  const char* op = kMax ? "amax" : "amin";
  const std::vector<bool> mask = reduce_mask(op, self, dim);
  check_nonzero_reduced(op, self, mask);
  return extreme<kMax>(self, mask, keepdim);
}

template <bool kMax>
Tensor arg(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const char* op = kMax ? "argmax" : "argmin";
  if (!dim) {
    meta::check_arg_full(op, self);
    // dim=None reduces the flattened input; keepdim keeps every dim as size 1.
    return std::get<1>(
        arg_extreme<kMax>(self, reduce_mask(op, self, std::nullopt), keepdim, false));
  }
  const std::vector<bool> mask = reduce_mask_one(op, self, *dim);
  check_nonzero_reduced(op, self, mask);
  return std::get<1>(arg_extreme<kMax>(self, mask, keepdim, false));
}

Tensor max_full(const Tensor& self) { return full<true>(self); }
Tensor min_full(const Tensor& self) { return full<false>(self); }
std::tuple<Tensor, Tensor> max_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return with_dim<true>(self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return with_dim<false>(self, dim, keepdim);
}
Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return a_extreme<true>(self, dim, keepdim);
}
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return a_extreme<false>(self, dim, keepdim);
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg<true>(self, dim, keepdim);
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg<false>(self, dim, keepdim);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("max", &max_full);
  m.impl("min", &min_full);
  m.impl("max.dim", &max_dim);
  m.impl("min.dim", &min_dim);
  m.impl("amax", &amax);
  m.impl("amin", &amin);
  m.impl("argmax", &argmax);
  m.impl("argmin", &argmin);
}

}  // namespace loom::ops::cpu::reduction
