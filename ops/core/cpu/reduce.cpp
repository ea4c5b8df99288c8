// Reference CPU kernels: sum, mean, prod, all, any (Note [Reduction geometry] in
// reduce_engine.h).
#include "cpu/reduce_engine.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu::reduction {
namespace {

using meta::sum_dtype;

/// Sum of n elements p[0], p[s], ... in double: eight independent lanes (so the loop
/// vectorises) and pairwise halves above 4096 elements, so the error grows as O(log n).
template <typename T>
double float_row_sum(const T* p, int64_t n, int64_t s) {
  if (n > 4096) {
    const int64_t h = (n / 2) & ~int64_t{7};
    return float_row_sum(p, h, s) + float_row_sum(p + h * s, n - h, s);
  }
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  if (s == 1) {
    for (; i + 8 <= n; i += 8) {
      for (int k = 0; k < 8; ++k) a[k] += static_cast<double>(load(p + i + k));
    }
  } else {
    for (; i + 8 <= n; i += 8) {
      for (int k = 0; k < 8; ++k) a[k] += static_cast<double>(load(p + (i + k) * s));
    }
  }
  double tail = 0;
  for (; i < n; ++i) tail += static_cast<double>(load(p + i * s));
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail;
}

/// float_row_sum for contiguous float, compiled for AVX2 (picked at run time): the same
/// lanes and pairing, so the result is bit-identical to the baseline build's.
[[gnu::target("avx2,fma")]] double float_row_sum_avx2(const float* p, int64_t n) {
  if (n > 4096) {
    const int64_t h = (n / 2) & ~int64_t{7};
    return float_row_sum_avx2(p, h) + float_row_sum_avx2(p + h, n - h);
  }
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) a[k] += static_cast<double>(p[i + k]);
  }
  double tail = 0;
  for (; i < n; ++i) tail += static_cast<double>(p[i]);
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail;
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

template <typename T>
struct SumOp {
  using Acc = acc_t<T>;
  Acc init() const { return 0; }
  void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t) const {
    if constexpr (std::is_same_v<T, float>) {
      acc += s == 1 && has_avx2() ? float_row_sum_avx2(p, n) : float_row_sum(p, n, s);
    } else if constexpr (is_float_v<T>) {
      acc += float_row_sum(p, n, s);
    } else {
      // Integers wrap on overflow, as in PyTorch (unsigned arithmetic keeps that defined).
      uint64_t t = static_cast<uint64_t>(acc);
      for (int64_t i = 0; i < n; ++i) t += static_cast<uint64_t>(load(p + i * s));
      acc = static_cast<int64_t>(t);
    }
  }
  void step(Acc& acc, const T* p) const {
    if constexpr (is_float_v<T>) {
      acc += static_cast<double>(load(p));
    } else {
      acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(load(p)));
    }
  }
  Acc merge(Acc a, Acc b) const {
    if constexpr (is_float_v<T>) {
      return a + b;
    } else {
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    }
  }
};

template <typename T>
struct ProdOp {
  using Acc = acc_t<T>;
  Acc init() const { return 1; }
  void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t) const {
    if constexpr (is_float_v<T>) {
      for (int64_t i = 0; i < n; ++i) acc *= static_cast<double>(load(p + i * s));
    } else {
      uint64_t t = static_cast<uint64_t>(acc);
      for (int64_t i = 0; i < n; ++i) t *= static_cast<uint64_t>(load(p + i * s));
      acc = static_cast<int64_t>(t);
    }
  }
  Acc merge(Acc a, Acc b) const {
    if constexpr (is_float_v<T>) {
      return a * b;
    } else {
      return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    }
  }
};

template <bool kAll>
struct LogicalOp {
  template <typename T>
  struct Op {
    using Acc = uint8_t;
    Acc init() const { return kAll ? 1 : 0; }
    void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t) const {
      bool r = acc != 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool nz = load(p + i * s) != 0;
        r = kAll ? (r && nz) : (r || nz);
      }
      acc = r;
    }
    void step(Acc& acc, const T* p) const {
      const bool nz = load(p) != 0;
      acc = kAll ? (acc && nz) : (acc || nz);
    }
    Acc merge(Acc a, Acc b) const { return kAll ? (a && b) : (a || b); }
  };
};

/// Runs Op<T> (T = src's dtype) over plan and returns the output in out_dtype.
template <template <typename> class Op>
Tensor reduce_to(const Tensor& src, const ReducePlan& plan, DType out_dtype) {
  return dispatch_all(src.dtype(), [&]<typename T>(T*) {
    std::vector<typename Op<T>::Acc> acc(static_cast<size_t>(plan.outer_numel));
    run_reduce(plan, data_of<T>(src), Op<T>{}, acc.data());
    return tensor_from_values(plan.out_sizes, out_dtype, acc.data());
  });
}

Tensor sum_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                std::optional<DType> dtype) {
  const DType out = sum_dtype(self, dtype);
  const Tensor src = dtype && *dtype != self.dtype() ? cast_contiguous(self, *dtype) : self;
  return reduce_to<SumOp>(src, make_plan(src, reduce_mask("sum", src, dim), keepdim), out);
}

Tensor sum(const Tensor& self, std::optional<DType> dtype) {
  return sum_dims(self, std::nullopt, false, dtype);
}

Tensor prod_impl(const Tensor& self, const std::vector<bool>& mask, bool keepdim,
                 std::optional<DType> dtype) {
  const DType out = sum_dtype(self, dtype);
  const Tensor src = dtype && *dtype != self.dtype() ? cast_contiguous(self, *dtype) : self;
  return reduce_to<ProdOp>(src, make_plan(src, mask, keepdim), out);
}

Tensor prod(const Tensor& self, std::optional<DType> dtype) {
  return prod_impl(self, reduce_mask("prod", self, std::nullopt), false, dtype);
}

Tensor prod_dim(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  return prod_impl(self, reduce_mask_one("prod", self, dim), keepdim, dtype);
}

Tensor mean_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                 std::optional<DType> dtype) {
  const DType out = meta::mean_dtype(self, dtype);
  const Tensor in = self.dtype() == out ? self : cast_contiguous(self, out);
  const ReducePlan plan = make_plan(in, reduce_mask("mean", in, dim), keepdim);
  return dispatch_floats("mean", in, [&]<typename T>(T*) {
    std::vector<double> acc(static_cast<size_t>(plan.outer_numel));
    run_reduce(plan, data_of<T>(in), SumOp<T>{}, acc.data());
    const double n = static_cast<double>(plan.red_numel);
    for (double& a : acc) a /= n;  // 0/0 is nan for an empty reduction, as in PyTorch
    return tensor_from_values(plan.out_sizes, out, acc.data());
  });
}

Tensor mean(const Tensor& self, std::optional<DType> dtype) {
  return mean_dims(self, std::nullopt, false, dtype);
}

/// all/any give bool, except for uint8 inputs, which give uint8 (PyTorch's legacy rule).
template <bool kAll>
Tensor logical_impl(const Tensor& self, const std::vector<bool>& mask, bool keepdim) {
  const DType out = meta::logical_reduce_dtype(self);
  return reduce_to<LogicalOp<kAll>::template Op>(self, make_plan(self, mask, keepdim), out);
}

Tensor all(const Tensor& self) {
  return logical_impl<true>(self, reduce_mask("all", self, std::nullopt), false);
}
Tensor all_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return logical_impl<true>(self, reduce_mask_one("all", self, dim), keepdim);
}
Tensor all_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim) {
  return logical_impl<true>(self, reduce_mask("all", self, dim), keepdim);
}
Tensor any(const Tensor& self) {
  return logical_impl<false>(self, reduce_mask("any", self, std::nullopt), false);
}
Tensor any_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return logical_impl<false>(self, reduce_mask_one("any", self, dim), keepdim);
}
Tensor any_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim) {
  return logical_impl<false>(self, reduce_mask("any", self, dim), keepdim);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("reference");
  m.impl("sum", &sum);
  m.impl("sum.dim_IntList", &sum_dims);
  m.impl("mean", &mean);
  m.impl("mean.dim", &mean_dims);
  m.impl("prod", &prod);
  m.impl("prod.dim_int", &prod_dim);
  m.impl("all", &all);
  m.impl("all.dim", &all_dim);
  m.impl("all.dims", &all_dims);
  m.impl("any", &any);
  m.impl("any.dim", &any_dim);
  m.impl("any.dims", &any_dims);
}

}  // namespace loom::ops::cpu::reduction
