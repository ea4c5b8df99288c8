#pragma once
/// @file
/// Reductions, scans and the softmax family of the core pack, with PyTorch's semantics:
/// negative dims wrap, a dim list may name several dims (none or empty: all of them),
/// keepdim keeps reduced dims as size 1, a dtype argument converts the input first.

#include <optional>
#include <tuple>

#include "loom/ops/op_handle.h"

namespace loom {

/// Sum of all elements as a 0-dim tensor (integers and bool give int64 unless dtype is given).
inline Tensor sum(const Tensor& self, std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::sum", Tensor(const Tensor&, std::optional<DType>));
  return op(self, dtype);
}

/// Sum over dims (sum.dim_IntList).
inline Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim = false,
                  std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::sum.dim_IntList",
                Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<DType>));
  return op(self, dim, keepdim, dtype);
}

/// Mean of all elements; the input (or dtype) must be floating.
inline Tensor mean(const Tensor& self, std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::mean", Tensor(const Tensor&, std::optional<DType>));
  return op(self, dtype);
}

/// Mean over dims (mean.dim); an empty reduction gives nan.
inline Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::mean.dim",
                Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<DType>));
  return op(self, dim, keepdim, dtype);
}

/// Product of all elements (integers and bool give int64).
inline Tensor prod(const Tensor& self, std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::prod", Tensor(const Tensor&, std::optional<DType>));
  return op(self, dtype);
}

/// Product along one dim (prod.dim_int).
inline Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::prod.dim_int",
                Tensor(const Tensor&, int64_t, bool, std::optional<DType>));
  return op(self, dim, keepdim, dtype);
}

/// Largest element (NaN if any); an empty input is an error.
inline Tensor max(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::max", Tensor(const Tensor&));
  return op(self);
}

/// (values, indices) of the largest elements along dim; ties give the first index.
inline std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::max.dim", std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool));
  return op(self, dim, keepdim);
}

/// Smallest element (NaN if any); an empty input is an error.
inline Tensor min(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::min", Tensor(const Tensor&));
  return op(self);
}

/// (values, indices) of the smallest elements along dim; ties give the first index.
inline std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::min.dim", std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool));
  return op(self, dim, keepdim);
}

/// Maximum over dims (empty: all dims).
inline Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::amax", Tensor(const Tensor&, IntArrayRef, bool));
  return op(self, dim, keepdim);
}

/// Minimum over dims (empty: all dims).
inline Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::amin", Tensor(const Tensor&, IntArrayRef, bool));
  return op(self, dim, keepdim);
}

/// Index of the largest element along dim (none: of the flattened input), as int64.
inline Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt,
                     bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::argmax", Tensor(const Tensor&, std::optional<int64_t>, bool));
  return op(self, dim, keepdim);
}

/// Index of the smallest element along dim (none: of the flattened input), as int64.
inline Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt,
                     bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::argmin", Tensor(const Tensor&, std::optional<int64_t>, bool));
  return op(self, dim, keepdim);
}

/// Variance over dims (none: all) dividing by N - correction (default 1).
inline Tensor var(const Tensor& self, std::optional<IntArrayRef> dim,
                  std::optional<Scalar> correction = std::nullopt, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::var.correction",
                Tensor(const Tensor&, std::optional<IntArrayRef>, std::optional<Scalar>, bool));
  return op(self, dim, correction, keepdim);
}

/// Variance of all elements (unbiased: divide by N - 1).
inline Tensor var(const Tensor& self, bool unbiased = true) {
  LOOM_TYPED_OP(op, "aten::var", Tensor(const Tensor&, bool));
  return op(self, unbiased);
}

/// Standard deviation over dims (none: all) with N - correction (default 1).
inline Tensor std(const Tensor& self, std::optional<IntArrayRef> dim,
                  std::optional<Scalar> correction = std::nullopt, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::std.correction",
                Tensor(const Tensor&, std::optional<IntArrayRef>, std::optional<Scalar>, bool));
  return op(self, dim, correction, keepdim);
}

/// Standard deviation of all elements (unbiased: divide by N - 1).
inline Tensor std(const Tensor& self, bool unbiased = true) {
  LOOM_TYPED_OP(op, "aten::std", Tensor(const Tensor&, bool));
  return op(self, unbiased);
}

/// (variance, mean) over dims (none: all) in one pass, with N - correction (default 1).
inline std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                           std::optional<Scalar> correction = std::nullopt,
                                           bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::var_mean.correction",
                std::tuple<Tensor, Tensor>(const Tensor&, std::optional<IntArrayRef>,
                                           std::optional<Scalar>, bool));
  return op(self, dim, correction, keepdim);
}

/// (standard deviation, mean) over dims (none: all) in one pass.
inline std::tuple<Tensor, Tensor> std_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                           std::optional<Scalar> correction = std::nullopt,
                                           bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::std_mean.correction",
                std::tuple<Tensor, Tensor>(const Tensor&, std::optional<IntArrayRef>,
                                           std::optional<Scalar>, bool));
  return op(self, dim, correction, keepdim);
}

/// Vector p-norm of all elements (p: 2, 1, 0, inf, -inf or any other order).
inline Tensor norm(const Tensor& self, const Scalar& p = 2) {
  LOOM_TYPED_OP(op, "aten::norm.Scalar", Tensor(const Tensor&, const Scalar&));
  return op(self, p);
}

/// Vector p-norm over dims (p none: 2; dims empty: all).
inline Tensor norm(const Tensor& self, std::optional<Scalar> p, IntArrayRef dim,
                   bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::norm.ScalarOpt_dim",
                Tensor(const Tensor&, std::optional<Scalar>, IntArrayRef, bool));
  return op(self, p, dim, keepdim);
}

/// Vector norm of order ord over dims (none or empty: all), computed in dtype if given
/// (torch.linalg.vector_norm).
inline Tensor linalg_vector_norm(const Tensor& self, const Scalar& ord = 2,
                                 std::optional<IntArrayRef> dim = std::nullopt,
                                 bool keepdim = false, std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(
      op, "aten::linalg_vector_norm",
      Tensor(const Tensor&, const Scalar&, std::optional<IntArrayRef>, bool, std::optional<DType>));
  return op(self, ord, dim, keepdim, dtype);
}

/// Frobenius norm over dims (PyTorch's norm(p="fro")).
inline Tensor frobenius_norm(const Tensor& self, IntArrayRef dim, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::frobenius_norm.dim", Tensor(const Tensor&, IntArrayRef, bool));
  return op(self, dim, keepdim);
}

/// log(sum(exp(x))) over dims, computed stably (integers give float32).
inline Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::logsumexp", Tensor(const Tensor&, IntArrayRef, bool));
  return op(self, dim, keepdim);
}

/// True if every element is nonzero (bool; uint8 for uint8 inputs).
inline Tensor all(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::all", Tensor(const Tensor&));
  return op(self);
}

/// all along one dim.
inline Tensor all(const Tensor& self, int64_t dim, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::all.dim", Tensor(const Tensor&, int64_t, bool));
  return op(self, dim, keepdim);
}

/// all over dims (all.dims).
inline Tensor all(const Tensor& self, IntArrayRef dim, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::all.dims", Tensor(const Tensor&, std::optional<IntArrayRef>, bool));
  return op(self, dim, keepdim);
}

/// True if any element is nonzero (bool; uint8 for uint8 inputs).
inline Tensor any(const Tensor& self) {
  LOOM_TYPED_OP(op, "aten::any", Tensor(const Tensor&));
  return op(self);
}

/// any along one dim.
inline Tensor any(const Tensor& self, int64_t dim, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::any.dim", Tensor(const Tensor&, int64_t, bool));
  return op(self, dim, keepdim);
}

/// any over dims (any.dims).
inline Tensor any(const Tensor& self, IntArrayRef dim, bool keepdim = false) {
  LOOM_TYPED_OP(op, "aten::any.dims", Tensor(const Tensor&, std::optional<IntArrayRef>, bool));
  return op(self, dim, keepdim);
}

/// Cumulative sum along dim (integers give int64 unless dtype is given).
inline Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::cumsum", Tensor(const Tensor&, int64_t, std::optional<DType>));
  return op(self, dim, dtype);
}

/// Cumulative product along dim (integers give int64 unless dtype is given).
inline Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::cumprod", Tensor(const Tensor&, int64_t, std::optional<DType>));
  return op(self, dim, dtype);
}

/// Softmax along dim (softmax.int), in dtype if given.
inline Tensor softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::softmax.int", Tensor(const Tensor&, int64_t, std::optional<DType>));
  return op(self, dim, dtype);
}

/// Log-softmax along dim (log_softmax.int), in dtype if given.
inline Tensor log_softmax(const Tensor& self, int64_t dim,
                          std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::log_softmax.int", Tensor(const Tensor&, int64_t, std::optional<DType>));
  return op(self, dim, dtype);
}

/// The softmax kernel op (half_to_float: a float16 input gives float32).
inline Tensor _softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  LOOM_TYPED_OP(op, "aten::_softmax", Tensor(const Tensor&, int64_t, bool));
  return op(self, dim, half_to_float);
}

/// The log-softmax kernel op (half_to_float: a float16 input gives float32).
inline Tensor _log_softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  LOOM_TYPED_OP(op, "aten::_log_softmax", Tensor(const Tensor&, int64_t, bool));
  return op(self, dim, half_to_float);
}

/// Gradient of softmax given its output: output * (grad - sum(grad * output, dim)).
inline Tensor _softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                     DType input_dtype) {
  LOOM_TYPED_OP(op, "aten::_softmax_backward_data",
                Tensor(const Tensor&, const Tensor&, int64_t, DType));
  return op(grad_output, output, dim, input_dtype);
}

/// Gradient of log_softmax given its output: grad - exp(output) * sum(grad, dim).
inline Tensor _log_softmax_backward_data(const Tensor& grad_output, const Tensor& output,
                                         int64_t dim, DType input_dtype) {
  LOOM_TYPED_OP(op, "aten::_log_softmax_backward_data",
                Tensor(const Tensor&, const Tensor&, int64_t, DType));
  return op(grad_output, output, dim, input_dtype);
}

}  // namespace loom
