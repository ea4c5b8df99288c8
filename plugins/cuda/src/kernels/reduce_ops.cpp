// CUDA kernels of the reductions: sum, mean, prod, all, any, max/min (full and .dim), amax,
// amin, argmax, argmin, var, std, var_mean, std_mean. Result dtypes, dim handling, checks and
// messages follow ops/core/cpu/{reduce,reduce_minmax,reduce_stats}.cpp; the kernels are in
// reduce.cu (Note [CUDA reduction plan]).
#include <cmath>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "kernels/copy_kernel.h"
#include "kernels/cuda_iterator.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/reduction.h"
#include "runtime/context.h"

namespace loom::cuda {
namespace {

using ops::meta::check_nonzero_reduced;
using ops::meta::reduce_mask;
using ops::meta::reduce_mask_one;
using ops::meta::sum_dtype;

using Dims = std::vector<int64_t>;
using kernels::RedOp;

// What to reduce into what (Note [CUDA reduction plan] in reduce.cu).
struct Plan {
  Dims out_sizes;
  Tensor src;  // contiguous, viewed as [outer, red, inner]
  int64_t outer = 1, red = 1, inner = 1;
};

Plan make_plan(const Tensor& self, const std::vector<bool>& mask, bool keepdim) {
  Plan p;
  const int64_t nd = self.dim();
  Dims kept_sizes, kept_strides, red_sizes, red_strides;
  int64_t lo = -1, hi = -1;  // first and last reduced dim of size > 1
  for (int64_t d = 0; d < nd; ++d) {
    if (mask[d]) {
      if (keepdim) p.out_sizes.push_back(1);
      red_sizes.push_back(self.size(d));
      red_strides.push_back(self.stride(d));
      p.red *= self.size(d);
      if (self.size(d) != 1) {
        if (lo < 0) lo = d;
        hi = d;
      }
    } else {
      p.out_sizes.push_back(self.size(d));
      kept_sizes.push_back(self.size(d));
      kept_strides.push_back(self.stride(d));
    }
  }
  int64_t kept = 1;
  for (int64_t s : kept_sizes) kept *= s;
  // A contiguous input whose reduced dims (of size > 1) form one block [lo, hi] with no
  // kept dim of size > 1 inside it is already [outer, red, inner].
  bool block = self.is_contiguous();
  for (int64_t d = lo; block && lo >= 0 && d <= hi; ++d) block = mask[d] || self.size(d) == 1;
  if (block) {
    p.src = self;
    if (lo < 0) {  // nothing of size > 1 is reduced
      p.outer = kept;
      p.inner = 1;
    } else {
      for (int64_t d = 0; d < lo; ++d) p.outer *= self.size(d);
      for (int64_t d = hi + 1; d < nd; ++d) p.inner *= self.size(d);
    }
    kernels::ReduceLaunch probe;
    probe.outer = p.outer;
    probe.red = p.red;
    probe.inner = p.inner;
    if (p.inner == 1 || kernels::reduce_takes_columns(probe)) return p;
  }
  // Otherwise: kept dims first, reduced dims last, copied contiguously.
  Dims sizes = kept_sizes, strides = kept_strides;
  sizes.insert(sizes.end(), red_sizes.begin(), red_sizes.end());
  strides.insert(strides.end(), red_strides.begin(), red_strides.end());
  p.src = cast_copy(self.as_strided_view(sizes, strides, self.storage_offset()), self.dtype());
  p.outer = kept;
  p.inner = 1;
  return p;
}

// Runs r over plan p into values (dtype out_dtype, may be undefined) and indices.
void run_reduce(const char* op, const Plan& p, kernels::ReduceLaunch r) {
  r.in_dtype = to_dt(p.src.dtype());
  r.in = p.src.data_ptr();
  r.outer = p.outer;
  r.red = p.red;
  r.inner = p.inner;
  if (r.outer * r.inner == 0) return;
  const int dev = device_index(p.src);
  Tensor workspace;
  const size_t bytes = kernels::reduce_workspace_bytes(r);
  if (bytes > 0) {
    workspace = Tensor::empty({static_cast<int64_t>(bytes)},
                              TensorOptions{}.with(DType::UInt8).with(p.src.device()));
    r.workspace = workspace.data_ptr();
  }
  DeviceGuard guard(dev);
  kernels::launch_reduce(r, current_stream(dev));
  check_launch(op);
}

Tensor new_output(const Tensor& like, const Plan& p, DType dtype) {
  return Tensor::empty(p.out_sizes, TensorOptions{}.with(dtype).with(like.device()));
}

// Values of op over mask, written as out_dtype.
Tensor reduce_values(const char* op, const Tensor& src, const std::vector<bool>& mask, bool keepdim,
                     RedOp code, DType out_dtype) {
  const Plan p = make_plan(src, mask, keepdim);
  Tensor out = new_output(src, p, out_dtype);
  kernels::ReduceLaunch r;
  r.op = code;
  r.out_dtype = to_dt(out_dtype);
  r.out = out.data_ptr();
  run_reduce(op, p, r);
  return out;
}

// ---- sum / mean / prod / all / any -------------------------------------------------------------

Tensor sum_like(const char* op, RedOp code, const Tensor& self, const std::vector<bool>& mask,
                bool keepdim, std::optional<DType> dtype) {
  const DType out = sum_dtype(self, dtype);
  const Tensor src = dtype && *dtype != self.dtype() ? cast_copy(self, *dtype) : self;
  return reduce_values(op, src, mask, keepdim, code, out);
}

Tensor sum_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                std::optional<DType> dtype) {
  check_cuda_tensors("sum", {{"self", self}});
  return sum_like("sum", RedOp::Sum, self, reduce_mask("sum", self, dim), keepdim, dtype);
}
Tensor sum(const Tensor& self, std::optional<DType> dtype) {
  return sum_dims(self, std::nullopt, false, dtype);
}

Tensor prod(const Tensor& self, std::optional<DType> dtype) {
  check_cuda_tensors("prod", {{"self", self}});
  return sum_like("prod", RedOp::Prod, self, reduce_mask("prod", self, std::nullopt), false, dtype);
}
Tensor prod_dim(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  check_cuda_tensors("prod", {{"self", self}});
  return sum_like("prod", RedOp::Prod, self, reduce_mask_one("prod", self, dim), keepdim, dtype);
}

Tensor mean_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim,
                 std::optional<DType> dtype) {
  check_cuda_tensors("mean", {{"self", self}});
  const DType out = ops::meta::mean_dtype(self, dtype);
  const Tensor in = self.dtype() == out ? self : cast_copy(self, out);
  return reduce_values("mean", in, reduce_mask("mean", in, dim), keepdim, RedOp::Mean, out);
}
Tensor mean(const Tensor& self, std::optional<DType> dtype) {
  return mean_dims(self, std::nullopt, false, dtype);
}

template <bool kAll>
Tensor logical_impl(const Tensor& self, const std::vector<bool>& mask, bool keepdim) {
  check_cuda_tensors(kAll ? "all" : "any", {{"self", self}});
  const DType out = ops::meta::logical_reduce_dtype(self);
  return reduce_values(kAll ? "all" : "any", self, mask, keepdim, kAll ? RedOp::All : RedOp::Any,
                       out);
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

// ---- max / min / amax / amin / argmax / argmin
// ---------------------------------------------------

const char* name_of(bool is_max) { return is_max ? "max" : "min"; }

// (values, indices) over mask; values undefined unless want_values.
std::tuple<Tensor, Tensor> arg_extreme(const char* op, bool is_max, const Tensor& self,
                                       const std::vector<bool>& mask, bool keepdim,
                                       bool want_values) {
  const Plan p = make_plan(self, mask, keepdim);
  Tensor values = want_values ? new_output(self, p, self.dtype()) : Tensor();
  Tensor indices = new_output(self, p, DType::Int64);
  kernels::ReduceLaunch r;
  r.op =
      want_values ? (is_max ? RedOp::Max : RedOp::Min) : (is_max ? RedOp::ArgMax : RedOp::ArgMin);
  r.out_dtype = to_dt(self.dtype());
  r.out = want_values ? values.data_ptr() : nullptr;
  r.indices = static_cast<int64_t*>(indices.data_ptr());
  run_reduce(op, p, r);
  return {values, indices};
}

template <bool kMax>
Tensor full_extreme(const Tensor& self) {
  check_cuda_tensors(name_of(kMax), {{"self", self}});
  ops::meta::check_full_extreme(name_of(kMax), self);
  return reduce_values(name_of(kMax), self, reduce_mask(name_of(kMax), self, std::nullopt), false,
                       kMax ? RedOp::Max : RedOp::Min, self.dtype());
}

template <bool kMax>
std::tuple<Tensor, Tensor> with_dim(const Tensor& self, int64_t dim, bool keepdim) {
  check_cuda_tensors(name_of(kMax), {{"self", self}});
  const std::vector<bool> mask = reduce_mask_one(name_of(kMax), self, dim);
  check_nonzero_reduced(name_of(kMax), self, mask);
  return arg_extreme(name_of(kMax), kMax, self, mask, keepdim, true);
}

template <bool kMax>
Tensor a_extreme(const Tensor& self, IntArrayRef dim, bool keepdim) {
  const char* op = kMax ? "amax" : "amin";
  check_cuda_tensors(op, {{"self", self}});
  const std::vector<bool> mask = reduce_mask(op, self, dim);
  check_nonzero_reduced(op, self, mask);
  return reduce_values(op, self, mask, keepdim, kMax ? RedOp::Max : RedOp::Min, self.dtype());
}

template <bool kMax>
Tensor arg(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const char* op = kMax ? "argmax" : "argmin";
  check_cuda_tensors(op, {{"self", self}});
  if (!dim) {
    ops::meta::check_arg_full(op, self);
    return std::get<1>(
        arg_extreme(op, kMax, self, reduce_mask(op, self, std::nullopt), keepdim, false));
  }
  const std::vector<bool> mask = reduce_mask_one(op, self, *dim);
  check_nonzero_reduced(op, self, mask);
  return std::get<1>(arg_extreme(op, kMax, self, mask, keepdim, false));
}

Tensor max_full(const Tensor& self) { return full_extreme<true>(self); }
Tensor min_full(const Tensor& self) { return full_extreme<false>(self); }
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

// ---- var / std ---------------------------------------------------------------------------------

// (var or std, mean if want_mean) over dim with correction (default 1).
std::tuple<Tensor, Tensor> moments(const char* op, const Tensor& self,
                                   std::optional<IntArrayRef> dim,
                                   const std::optional<Scalar>& correction, bool keepdim,
                                   bool take_sqrt, bool want_mean) {
  check_cuda_tensors(op, {{"self", self}});
  ops::meta::check_var_std_dtype(op, self);
  const Plan p = make_plan(self, reduce_mask(op, self, dim), keepdim);
  Tensor spread = new_output(self, p, self.dtype());
  Tensor mean = want_mean ? new_output(self, p, self.dtype()) : Tensor();
  kernels::ReduceLaunch r;
  r.op = RedOp::Var;
  r.out_dtype = to_dt(self.dtype());
  r.out = spread.data_ptr();
  r.mean_out = want_mean ? mean.data_ptr() : nullptr;
  r.correction = correction ? correction->to_double() : 1.0;
  r.take_sqrt = take_sqrt;
  run_reduce(op, p, r);
  return {spread, mean};
}

Tensor var_correction(const Tensor& self, std::optional<IntArrayRef> dim,
                      std::optional<Scalar> correction, bool keepdim) {
  return std::get<0>(moments("var", self, dim, correction, keepdim, false, false));
}
Tensor std_correction(const Tensor& self, std::optional<IntArrayRef> dim,
                      std::optional<Scalar> correction, bool keepdim) {
  return std::get<0>(moments("std", self, dim, correction, keepdim, true, false));
}
Tensor var(const Tensor& self, bool unbiased) {
  return var_correction(self, std::nullopt, Scalar(unbiased ? 1 : 0), false);
}
Tensor var_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return var_correction(self, dim, Scalar(unbiased ? 1 : 0), keepdim);
}
Tensor std_(const Tensor& self, bool unbiased) {
  return std_correction(self, std::nullopt, Scalar(unbiased ? 1 : 0), false);
}
Tensor std_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return std_correction(self, dim, Scalar(unbiased ? 1 : 0), keepdim);
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                    std::optional<Scalar> correction, bool keepdim) {
  return moments("var_mean", self, dim, correction, keepdim, false, true);
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                    std::optional<Scalar> correction, bool keepdim) {
  return moments("std_mean", self, dim, correction, keepdim, true, true);
}

// ---- norms -------------------------------------------------------------------------------------

Tensor norm_impl(const Tensor& input, const std::optional<Scalar>& p,
                 std::optional<IntArrayRef> dim, bool keepdim,
                 std::optional<DType> dtype = std::nullopt) {
  check_cuda_tensors("norm", {{"self", input}});
  // A dtype converts the input first (and must be floating, as the input must).
  const Tensor self = dtype && *dtype != input.dtype() && is_floating_point(input.dtype())
                          ? cast_copy(input, *dtype)
                          : input;
  ops::meta::check_norm_dtypes(dtype, self);
  const double order = p ? p->to_double() : 2.0;
  const kernels::NormKind kind = ops::meta::norm_kind<kernels::NormKind>(order);
  const std::vector<bool> mask = reduce_mask("norm", self, dim);
  ops::meta::check_norm_nonempty(self, mask, order);
  const Plan plan = make_plan(self, mask, keepdim);
  Tensor out = new_output(self, plan, self.dtype());
  kernels::ReduceLaunch r;
  r.op = RedOp::Norm;
  r.norm_kind = kind;
  r.norm_p = order;
  r.out_dtype = to_dt(self.dtype());
  r.out = out.data_ptr();
  run_reduce("norm", plan, r);
  return out;
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

// ---- logsumexp, cumsum, cumprod -------------------------------------------------------------

Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  check_cuda_tensors("logsumexp", {{"self", self}});
  // Integers give the default float dtype, as in PyTorch.
  const Tensor src = is_integral(self.dtype()) ? cast_copy(self, DType::Float32) : self;
  return reduce_values("logsumexp", src, reduce_mask("logsumexp", src, dim), keepdim,
                       RedOp::LogSumExp, src.dtype());
}

template <bool kProd>
Tensor scan(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  const char* op = kProd ? "cumprod" : "cumsum";
  check_cuda_tensors(op, {{"self", self}});
  dim = ops::meta::wrap_dim(op, dim, self.dim());  // a 0-dim tensor takes 0 and -1
  const DType out_dtype = ops::meta::sum_dtype(self, dtype);
  const Tensor src =
      self.dtype() == out_dtype && self.is_contiguous() ? self : cast_copy(self, out_dtype);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(out_dtype).with(self.device()));
  if (out.numel() == 0) return out;
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d < dim) outer *= self.size(d);
    if (d == dim) len = self.size(d);
    if (d > dim) inner *= self.size(d);
  }
  const int dev = device_index(out);
  DeviceGuard guard(dev);
  kernels::launch_scan(to_dt(out_dtype), src.data_ptr(), out.data_ptr(), outer, len, inner, kProd,
                       current_stream(dev));
  check_launch(op);
  return out;
}

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return scan<false>(self, dim, dtype);
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return scan<true>(self, dim, dtype);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("logsumexp", &logsumexp);
  m.impl("cumsum", &cumsum);
  m.impl("cumprod", &cumprod);
  m.impl("norm.Scalar", &norm_scalar);
  m.impl("norm.ScalarOpt_dim", &norm_dim);
  m.impl("norm.ScalarOpt_dtype", &norm_dtype);
  m.impl("norm.ScalarOpt_dim_dtype", &norm_dim_dtype);
  m.impl("linalg_vector_norm", &linalg_vector_norm);
  m.impl("frobenius_norm.dim", &frobenius_norm);
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
  m.impl("max", &max_full);
  m.impl("min", &min_full);
  m.impl("max.dim", &max_dim);
  m.impl("min.dim", &min_dim);
  m.impl("amax", &amax);
  m.impl("amin", &amin);
  m.impl("argmax", &argmax);
  m.impl("argmin", &argmin);
  m.impl("var", &var);
  m.impl("var.dim", &var_dim);
  m.impl("var.correction", &var_correction);
  m.impl("std", &std_);
  m.impl("std.dim", &std_dim);
  m.impl("std.correction", &std_correction);
  m.impl("var_mean.correction", &var_mean);
  m.impl("std_mean.correction", &std_mean);
}

}  // namespace loom::cuda
