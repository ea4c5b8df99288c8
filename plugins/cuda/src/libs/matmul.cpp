// CUDA kernels of the matmul family through cuBLAS: mm, bmm, addmm, baddbmm, addbmm, mv, dot,
// outer, matmul, linear and the out= forms of mm, bmm and addmm (the ops the reference CPU
// provider registers in ops/core/cpu/linalg.cpp), with the checks and messages both share
// (loom/ops/meta/linalg.h).
//
// Note [cuBLAS layouts]: cuBLAS is column-major; a row-major C = A @ B is computed as the
// column-major C^T = B^T @ A^T, so every call passes (B, A) with n and m swapped. A matrix
// view whose rows are contiguous (stride(-1) == 1) reaches cuBLAS as it is ("N"), one whose
// columns are contiguous (stride(-2) == 1, e.g. a transposed weight) as "T"; any other view
// is copied to a contiguous one first. Results are always written to a new contiguous
// tensor (the out= forms copy that into out), so C never aliases an input. Batched products
// use cublasGemmStridedBatchedEx over one batch stride per operand (0 for a broadcast one).
//
// Dtypes: float32 (CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32 when
// backends::allow_tf32()), float16 and bfloat16 (float accumulation, reduced-precision
// split-K reductions disallowed on the handle), float64. alpha and beta are float for all
// but float64, double there. Integer matmuls are refused (cuBLAS has no integer GEMM here).
// Deterministic mode needs nothing: cuBLAS is deterministic per stream with the fixed
// workspace each (handle, stream) gets (Note [Library handles] in libs/handles.h).
#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "libs/common.h"
#include "libs/handles.h"
#include "loom/core/backend_flags.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/linalg.h"
#include "loom/ops/pointwise.h"

namespace loom::cuda::libs {
namespace {

using ops::meta::as_column;
using ops::meta::as_row;
using ops::meta::check_same_mm_dtype;
using ops::meta::expand_view;
using ops::meta::mergeable;

// ---- views ----

/// A 2-d view [r, c] as a batch of one [1, r, c].
Tensor batch_of_one(const Tensor& t) {
  return t.as_strided_view({1, t.size(0), t.size(1)}, {0, t.stride(0), t.stride(1)},
                           t.storage_offset());
}

/// The transpose of a 2-d view.
Tensor transposed(const Tensor& t) {
  return t.as_strided_view({t.size(1), t.size(0)}, {t.stride(1), t.stride(0)}, t.storage_offset());
}

// ---- the cuBLAS call ----

/// An operand [batch, r, c] as cuBLAS takes it in the swapped product (Note [cuBLAS layouts]):
/// the tensor holding its data, "N" for contiguous rows or "T" for contiguous columns, its
/// leading dimension and its batch stride.
struct Operand {
  Tensor data;
  cublasOperation_t op;
  int64_t ld;
  int64_t batch_stride;
};

Operand operand_of(const Tensor& t3) {
  const int64_t r = t3.size(1), c = t3.size(2), s0 = t3.stride(1), s1 = t3.stride(2);
  const int64_t bs = t3.size(0) == 1 ? 0 : t3.stride(0);
  if ((c == 1 || s1 == 1) && (r == 1 || s0 >= std::max<int64_t>(1, c))) {
    return {t3, CUBLAS_OP_N, r == 1 ? std::max<int64_t>(1, c) : s0, bs};
  }
  if ((r == 1 || s0 == 1) && (c == 1 || s1 >= std::max<int64_t>(1, r))) {
    return {t3, CUBLAS_OP_T, c == 1 ? std::max<int64_t>(1, r) : s1, bs};
  }
  const Tensor copy = dense(t3);
  return {copy, CUBLAS_OP_N, std::max<int64_t>(1, c), t3.size(0) == 1 ? 0 : r * c};
}

cublasComputeType_t compute_type(DType d) {
  if (d == DType::Float64) return CUBLAS_COMPUTE_64F;
  if (d == DType::Float32 && backends::allow_tf32()) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

/// c[i] = alpha * a[i] @ b[i] + beta * c[i] for a [batch, m, k], b [batch, k, n] (any strides)
/// and c a contiguous [batch, m, n] (beta == 0: c is not read). The caller has set the
/// device.
void gemm(std::string_view op, int device, const Tensor& a, const Tensor& b, const Tensor& c,
          double alpha, double beta) {
  const int64_t batch = c.size(0), m = c.size(1), n = c.size(2), k = a.size(2);
  if (batch == 0 || m == 0 || n == 0) return;
  const DType dt = c.dtype();
  cublasHandle_t h = cublas_handle(op, device);
  if (k == 0) {
    // Nothing to multiply: c = beta * c.
    if (beta == 0) {
      zero_fill(op, c);
    } else if (beta != 1) {
      const float fb = static_cast<float>(beta);
      const void* pb = dt == DType::Float64 ? static_cast<const void*>(&beta) : &fb;
      LOOM_CUBLAS_CHECK(
          cublasScalEx(h, to_int(op, "the number of elements", c.numel()), pb,
                       dt == DType::Float64 ? CUDA_R_64F : CUDA_R_32F, ptr(c), cuda_dtype(dt), 1,
                       dt == DType::Float64 ? CUDA_R_64F : CUDA_R_32F),
          op);
    }
    return;
  }
  const Operand A = operand_of(a), B = operand_of(b);
  const float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
  const void* pa = dt == DType::Float64 ? static_cast<const void*>(&alpha) : &fa;
  const void* pb = dt == DType::Float64 ? static_cast<const void*>(&beta) : &fb;
  const cudaDataType_t t = cuda_dtype(dt);
  const int im = to_int(op, "m", m), in = to_int(op, "n", n), ik = to_int(op, "k", k);
  const int lda = to_int(op, "the leading dimension of mat1", A.ld);
  const int ldb = to_int(op, "the leading dimension of mat2", B.ld);
  const int ldc = to_int(op, "n", std::max<int64_t>(1, n));
  if (batch == 1) {
    LOOM_CUBLAS_CHECK(cublasGemmEx(h, B.op, A.op, in, im, ik, pa, ptr(B.data), t, ldb, ptr(A.data),
                                   t, lda, pb, ptr(c), t, ldc, compute_type(dt), CUBLAS_GEMM_DEFAULT),
                      op);
  } else {
    LOOM_CUBLAS_CHECK(
        cublasGemmStridedBatchedEx(h, B.op, A.op, in, im, ik, pa, ptr(B.data), t, ldb,
                                   B.batch_stride, ptr(A.data), t, lda, A.batch_stride, pb, ptr(c),
                                   t, ldc, m * n, to_int(op, "the batch size", batch),
                                   compute_type(dt), CUBLAS_GEMM_DEFAULT),
        op);
  }
}

// ---- checks (the reference kernels' wording) ----

void check_matmul_dtype(std::string_view op, const Tensor& t, std::string_view name) {
  LOOM_CHECK_T(TypeError, t.dtype() == DType::Float32 || t.dtype() == DType::Float64 ||
                              t.dtype() == DType::Float16 || t.dtype() == DType::BFloat16,
               op, ": ", name, " of dtype ", dtype_name(t.dtype()), " on ", t.device().str(),
               " is not supported by cuBLAS here (float32, float64, float16 and bfloat16 are)");
}

void check_mm(std::string_view op, const Tensor& self, const Tensor& mat2) {
  check_cuda_tensors(op, {{"self", self}, {"mat2", mat2}});
  ops::meta::check_mm(op, self, mat2);
  check_matmul_dtype(op, self, "self");
}

void check_addmm(std::string_view op, const Tensor& self, const Tensor& mat1, const Tensor& mat2) {
  check_cuda_tensors(op, {{"self", self}, {"mat1", mat1}, {"mat2", mat2}});
  ops::meta::check_addmm(op, self, mat1, mat2);
  check_matmul_dtype(op, mat1, "mat1");
}

void check_bmm(std::string_view op, const Tensor& b1, const Tensor& b2) {
  ops::meta::check_bmm(op, b1, b2);
  check_matmul_dtype(op, b1, "batch1");
}

/// out = beta * self (broadcast to out) + alpha * (a @ b) for 3-d a, b and a new contiguous
/// 3-d out (the caller has set the device).
void addmm_into(std::string_view op, int device, const Tensor& self, const Tensor& a,
                const Tensor& b, const Tensor& out, const Scalar& beta, const Scalar& alpha) {
  const double be = beta.to_double();
  if (be != 0 && out.numel() > 0) copy_into(out, expand_view(op, self, out.sizes()));
  gemm(op, device, a, b, out, alpha.to_double(), be);
}

/// The out= forms: result copied into out (resized as resize_output does).
Tensor& write_out(std::string_view op, const Tensor& result, Tensor& out) {
  check_cuda_tensors(op, {{"out", out}, {"result", result}});
  LOOM_CHECK_T(TypeError, out.dtype() == result.dtype(), op, ": expected out to have dtype ",
               dtype_name(result.dtype()), " but got ", dtype_name(out.dtype()));
  resize_output(op, out, result.sizes());
  if (result.numel() > 0) copy_into(out, result);
  out.bump_version();
  return out;
}

// ---- mm, addmm ----

Tensor mm_impl(std::string_view op, const Tensor& self, const Tensor& mat2) {
  check_mm(op, self, mat2);
  OpGuard g(op, self);
  Tensor out = new_on(self, {self.size(0), mat2.size(1)}, self.dtype());
  gemm(op, g.device(), batch_of_one(self), batch_of_one(mat2), batch_of_one(out), 1.0, 0.0);
  return out;
}

Tensor mm(const Tensor& self, const Tensor& mat2) { return mm_impl("mm", self, mat2); }

Tensor& mm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  return write_out("mm.out", mm_impl("mm.out", self, mat2), out);
}

Tensor addmm_impl(std::string_view op, const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                  const Scalar& beta, const Scalar& alpha) {
  check_addmm(op, self, mat1, mat2);
  OpGuard g(op, mat1);
  Tensor out = new_on(mat1, {mat1.size(0), mat2.size(1)}, mat1.dtype());
  expand_view(op, self, out.sizes());  // the shape check even when beta is 0
  addmm_into(op, g.device(), batch_of_one(expand_view(op, self, out.sizes())), batch_of_one(mat1),
             batch_of_one(mat2), batch_of_one(out), beta, alpha);
  return out;
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  return addmm_impl("addmm", self, mat1, mat2, beta, alpha);
}

Tensor& addmm_out(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                  const Scalar& alpha, Tensor& out) {
  // The product goes to a new tensor first, so out may be self (addmm_).
  return write_out("addmm.out", addmm_impl("addmm.out", self, mat1, mat2, beta, alpha), out);
}

// ---- bmm, baddbmm, addbmm ----

Tensor bmm_impl(std::string_view op, const Tensor& self, const Tensor& mat2) {
  check_cuda_tensors(op, {{"self", self}, {"mat2", mat2}});
  check_bmm(op, self, mat2);
  OpGuard g(op, self);
  Tensor out = new_on(self, {self.size(0), self.size(1), mat2.size(2)}, self.dtype());
  gemm(op, g.device(), self, mat2, out, 1.0, 0.0);
  return out;
}

Tensor bmm(const Tensor& self, const Tensor& mat2) { return bmm_impl("bmm", self, mat2); }

Tensor& bmm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  return write_out("bmm.out", bmm_impl("bmm.out", self, mat2), out);
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  constexpr std::string_view op = "baddbmm";
  check_cuda_tensors(op, {{"self", self}, {"batch1", batch1}, {"batch2", batch2}});
  check_bmm(op, batch1, batch2);
  check_same_dtype(op, {{"self", self}, {"batch1", batch1}});
  OpGuard g(op, batch1);
  Tensor out = new_on(batch1, {batch1.size(0), batch1.size(1), batch2.size(2)}, batch1.dtype());
  addmm_into(op, g.device(), expand_view(op, self, out.sizes()), batch1, batch2, out, beta, alpha);
  return out;
}

Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
              const Scalar& alpha) {
  constexpr std::string_view op = "addbmm";
  check_cuda_tensors(op, {{"self", self}, {"batch1", batch1}, {"batch2", batch2}});
  check_bmm(op, batch1, batch2);
  check_same_dtype(op, {{"self", self}, {"batch1", batch1}});
  OpGuard g(op, batch1);
  Tensor out = new_on(batch1, {batch1.size(1), batch2.size(2)}, batch1.dtype());
  const Tensor s = expand_view(op, self, out.sizes());
  double be = beta.to_double();
  if (be != 0 && out.numel() > 0) copy_into(out, s);
  if (batch1.size(0) == 0) {
    // No products: out = beta * self.
    gemm(op, g.device(), batch_of_one(new_on(out, {out.size(0), 0}, out.dtype())),
         batch_of_one(new_on(out, {0, out.size(1)}, out.dtype())), batch_of_one(out), 1.0, be);
    return out;
  }
  // The products summed into out one batch at a time (in order: deterministic).
  for (int64_t b = 0; b < batch1.size(0); ++b) {
    const Tensor b1 = batch1.as_strided_view({1, batch1.size(1), batch1.size(2)},
                                             {0, batch1.stride(1), batch1.stride(2)},
                                             batch1.storage_offset() + b * batch1.stride(0));
    const Tensor b2 = batch2.as_strided_view({1, batch2.size(1), batch2.size(2)},
                                             {0, batch2.stride(1), batch2.stride(2)},
                                             batch2.storage_offset() + b * batch2.stride(0));
    gemm(op, g.device(), b1, b2, batch_of_one(out), alpha.to_double(), be);
    be = 1;
  }
  return out;
}

// ---- dot, mv, outer ----

Tensor dot(const Tensor& self, const Tensor& tensor) {
  constexpr std::string_view op = "dot";
  check_cuda_tensors(op, {{"self", self}, {"tensor", tensor}});
  ops::meta::check_dot(self, tensor);
  check_matmul_dtype(op, self, "self");
  OpGuard g(op, self);
  Tensor out = new_on(self, {}, self.dtype());
  gemm(op, g.device(), batch_of_one(as_row(self)), batch_of_one(as_column(tensor)),
       out.as_strided_view({1, 1, 1}, {1, 1, 1}, 0), 1.0, 0.0);
  return out;
}

Tensor mv(const Tensor& self, const Tensor& vec) {
  constexpr std::string_view op = "mv";
  check_cuda_tensors(op, {{"self", self}, {"vec", vec}});
  ops::meta::check_mv(self, vec);
  check_matmul_dtype(op, self, "self");
  OpGuard g(op, self);
  Tensor out = new_on(self, {self.size(0)}, self.dtype());
  gemm(op, g.device(), batch_of_one(self), batch_of_one(as_column(vec)),
       out.as_strided_view({1, self.size(0), 1}, {0, 1, 1}, 0), 1.0, 0.0);
  return out;
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  constexpr std::string_view op = "outer";
  check_cuda_tensors(op, {{"self", self}, {"vec2", vec2}});
  const DType d = ops::meta::check_outer(self, vec2);
  const Tensor a = self.dtype() == d ? self : loom::to(self, d);
  const Tensor b = vec2.dtype() == d ? vec2 : loom::to(vec2, d);
  check_matmul_dtype(op, a, "self");
  OpGuard g(op, a);
  Tensor out = new_on(a, {a.size(0), b.size(0)}, d);
  gemm(op, g.device(), batch_of_one(as_column(a)), batch_of_one(as_row(b)), batch_of_one(out), 1.0,
       0.0);
  return out;
}

// ---- matmul, linear ----

/// t [batch..., r, c] as [B, r, c]: a view when its batch dims merge, else a contiguous copy.
Tensor fold_batch(const Tensor& t) {
  const int64_t nb = t.dim() - 2;
  int64_t count = 1;
  for (int64_t d = 0; d < nb; ++d) count *= t.size(d);
  if (nb == 0) return batch_of_one(t);
  int64_t stride = 0;
  const Tensor src = mergeable(t, 0, nb - 1, &stride) ? t : dense(t);
  if (!src.is_same(t)) mergeable(src, 0, nb - 1, &stride);
  return src.as_strided_view({count, t.size(-2), t.size(-1)},
                             {count == 1 ? 0 : stride, src.stride(-2), src.stride(-1)},
                             src.storage_offset());
}

Tensor matmul_impl(std::string_view op, const Tensor& a, const Tensor& b) {
  check_cuda_tensors(op, {{"self", a}, {"other", b}});
  ops::meta::check_matmul_dims(op, a, b);
  const int64_t da = a.dim(), db = b.dim();
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 2 && db == 2) return mm(a, b);
  check_same_mm_dtype(op, a, b);
  check_matmul_dtype(op, a, "self");
  // As matrices: a 1-D a is a row [1, k], a 1-D b a column [k, 1]; those dims are dropped.
  const Tensor A = da == 1 ? as_row(a) : a;
  const Tensor B = db == 1 ? as_column(b) : b;
  const ops::meta::MatmulShape shape = ops::meta::matmul_shape(op, A, B, da, db);
  const std::vector<int64_t>& batch = shape.batch;
  const int64_t m = shape.m, k = shape.k, n = shape.n;
  OpGuard g(op, a);
  Tensor out = new_on(a, shape.result, a.dtype());
  int64_t rows = m;
  for (int64_t s : batch) rows *= s;
  int64_t row_stride = 0;
  if (B.dim() == 2 && mergeable(A, 0, A.dim() - 2, &row_stride)) {
    // [..., m, k] @ [k, n]: one GEMM over the merged rows.
    const Tensor a2 = A.as_strided_view({rows, k}, {row_stride, A.stride(-1)}, A.storage_offset());
    gemm(op, g.device(), batch_of_one(a2), batch_of_one(B), out.as_strided_view({1, rows, n}, {0, n, 1}, 0),
         1.0, 0.0);
    return out;
  }
  std::vector<int64_t> sa(batch), sb(batch);
  sa.insert(sa.end(), {m, k});
  sb.insert(sb.end(), {k, n});
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  gemm(op, g.device(), fold_batch(expand_view(op, A, sa)), fold_batch(expand_view(op, B, sb)),
       out.as_strided_view({count, m, n}, {m * n, n, 1}, 0), 1.0, 0.0);
  return out;
}

Tensor matmul(const Tensor& self, const Tensor& other) { return matmul_impl("matmul", self, other); }

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  constexpr std::string_view op = "linear";
  check_cuda_tensors(op, {{"input", input}, {"weight", weight}});
  ops::meta::check_linear_weight(weight);
  const bool has_bias = bias && bias->defined();
  if (has_bias) {
    check_cuda_tensors(op, {{"input", input}, {"weight", weight}, {"bias", *bias}});
    check_same_dtype(op, {{"input", input}, {"bias", *bias}});
  }
  if (weight.dim() < 2 || input.dim() < 1) {
    Tensor out = matmul_impl(op, input, weight);
    return has_bias ? loom::add(out, *bias) : out;
  }
  const Tensor wt = transposed(weight);
  const int64_t k = input.size(-1), n = wt.size(1);
  LOOM_CHECK(wt.size(0) == k, op, ": mat1 and mat2 shapes cannot be multiplied (",
             input.numel() / std::max<int64_t>(k, 1), "x", k, " and ", wt.size(0), "x", n, ")");
  check_same_mm_dtype(op, input, weight);
  check_matmul_dtype(op, input, "input");
  // input [..., k] as [rows, k] (a view when its leading dims merge), out [rows, n].
  const Tensor x = input.dim() == 1 ? as_row(input) : input;
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  int64_t row_stride = 0;
  const Tensor xs = mergeable(x, 0, x.dim() - 2, &row_stride) ? x : dense(x);
  if (!xs.is_same(x)) mergeable(xs, 0, xs.dim() - 2, &row_stride);
  const Tensor x2 = xs.as_strided_view({rows, k}, {row_stride, xs.stride(-1)}, xs.storage_offset());
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - 1);
  sizes.push_back(n);
  OpGuard g(op, input);
  Tensor out = new_on(input, sizes, input.dtype());
  const Tensor out2 = out.as_strided_view({1, rows, n}, {0, n, 1}, 0);
  if (has_bias) {
    addmm_into(op, g.device(), expand_view(op, *bias, {1, rows, n}), batch_of_one(x2),
               batch_of_one(wt), out2, Scalar(1), Scalar(1));
  } else {
    gemm(op, g.device(), batch_of_one(x2), batch_of_one(wt), out2, 1.0, 0.0);
  }
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("mm", &mm);
  m.impl("mm.out", &mm_out);
  m.impl("bmm", &bmm);
  m.impl("bmm.out", &bmm_out);
  m.impl("addmm", &addmm);
  m.impl("addmm.out", &addmm_out);
  m.impl("baddbmm", &baddbmm);
  m.impl("addbmm", &addbmm);
  m.impl("dot", &dot);
  m.impl("mv", &mv);
  m.impl("outer", &outer);
  m.impl("matmul", &matmul);
  m.impl("linear", &linear);
}

}  // namespace loom::cuda::libs
