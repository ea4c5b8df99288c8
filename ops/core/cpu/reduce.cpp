// Reference CPU kernels: sum, mean, prod, all, any (Note [Reduction geometry] in
// reduce_engine.h). float32 sums run the per-ISA cascade (Note [Cascade sum] in
// cpu/vec/reduce_simd.h) over contiguous rows and over outer dims, float16/bfloat16 rows
// through a float buffer; chunk partials add in double, in a fixed order.
#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "cpu/vec/reduce_kernels.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu::reduction {
namespace {

using meta::sum_dtype;

/// Sum of n elements p[0], p[s], ... in double (double, the 16-bit floats, strided float): eight independent lanes (so the loop
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

/// A contiguous float16/bfloat16 row: converted to float 4096 elements at a time (on the
/// stack) and summed by the cascade; the pieces add in double, in order.
template <typename T>
double half_row_sum(const T* p, int64_t n) {
  constexpr int64_t kPiece = 4096;
  float buf[kPiece];
  double total = 0;
  for (int64_t b = 0; b < n; b += kPiece) {
    const int64_t len = std::min(kPiece, n - b);
    for (int64_t i = 0; i < len; ++i) buf[i] = load(p + b + i);
    total += LOOM_ISA_CALL(sum_f32)(buf, len);
  }
  return total;
}

template <typename T>
struct SumOp {
  using Acc = acc_t<T>;
  Acc init() const { return 0; }
  void row(Acc& acc, const T* p, int64_t n, int64_t s, int64_t) const {
    if constexpr (std::is_same_v<T, float>) {
      acc += s == 1 ? LOOM_ISA_CALL(sum_f32)(p, n) : float_row_sum(p, n, s);
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      acc += s == 1 ? half_row_sum(p, n) : float_row_sum(p, n, s);
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

/// A float32 sum over one outer dim (the reduced elements of an output are a column of
/// rows that lie row_stride apart, neighbouring outputs are neighbours in memory, as in a sum
/// over dim 0 of a row-major matrix): the per-ISA column cascade, tiles of columns in
/// parallel. False (nothing done) for other geometries.
bool sum_f32_over_rows(const ReducePlan& p, const float* base, double* out) {
  if (p.device.is_meta() || p.red_sizes.size() != 1 || p.red_strides[0] == 1 ||
      p.outer_sizes.empty() || p.outer_strides.back() != 1 || p.red_numel < 2) {
    return false;
  }
  constexpr int64_t kTile = 256;
  const int64_t rows = p.red_numel;
  const int64_t row_stride = p.red_strides[0];
  const int64_t cols = p.outer_sizes.back();
  const DimVec oo_sizes(p.outer_sizes.begin(), p.outer_sizes.end() - 1);
  const DimVec oo_strides(p.outer_strides.begin(), p.outer_strides.end() - 1);
  const int64_t n_oo = p.outer_numel / cols;
  const int64_t tiles = (cols + kTile - 1) / kTile;
  const auto kernel = LOOM_ISA_CALL(sum_cols_f32);
  const bool big = p.outer_numel * rows >= kGrain;
  maybe_parallel_for(big && n_oo * tiles > 1, n_oo * tiles, [&](int64_t t) {
    const int64_t oo = t / tiles;
    const int64_t c0 = (t % tiles) * kTile;
    const int64_t nc = std::min(kTile, cols - c0);
    kernel(base + offset_of(oo, oo_sizes, oo_strides) + c0, rows, nc, row_stride,
           out + oo * cols + c0);
  });
  return true;
}

/// The sums of plan's outputs into out (double for floats, int64 for integers).
template <typename T>
void sum_into(const ReducePlan& plan, const T* base, acc_t<T>* out) {
  if constexpr (std::is_same_v<T, float>) {
    if (plan.outer_numel > 0 && sum_f32_over_rows(plan, base, out)) return;
  }
  run_reduce(plan, base, SumOp<T>{}, out);
}

/// Runs Op<T> (T = src's dtype) over plan and returns the output in out_dtype.
template <template <typename> class Op>
Tensor reduce_to(const Tensor& src, const ReducePlan& plan, DType out_dtype) {
  return dispatch_all(src.dtype(), [&]<typename T>(T*) {
    std::vector<typename Op<T>::Acc> acc(static_cast<size_t>(plan.outer_numel));
    if constexpr (std::is_same_v<Op<T>, SumOp<T>>) {
      sum_into(plan, data_of<T>(src), acc.data());
    } else {
      run_reduce(plan, data_of<T>(src), Op<T>{}, acc.data());
    }
    return tensor_from_values(plan, out_dtype, acc.data());
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
    sum_into(plan, data_of<T>(in), acc.data());
    const double n = static_cast<double>(plan.red_numel);
    for (double& a : acc) a /= n;  // 0/0 is nan for an empty reduction, as in PyTorch
    return tensor_from_values(plan, out, acc.data());
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

LOOM_REFERENCE_KERNELS(aten, m) {
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
