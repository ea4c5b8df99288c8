#pragma once
/// @file
/// The matmul family (mm, addmm, bmm, baddbmm, addbmm, dot, mv, outer, matmul, linear):
/// argument checks, parameter parsing and output shapes every backend of these ops shares, so
/// that error messages are word for word the same on every device. The wording is PyTorch's.
/// Each backend makes its own device check first (check_defined and check_same_device on the
/// CPU, the CUDA plugin's check_cuda_tensors), then calls these.

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "loom/core/dtype.h"
#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor.h"
#include "loom/ops/meta/pointwise.h"  // c_type_name, torch_type_name

namespace loom::ops::meta {

/// Throws TypeError unless the two operands of a product have the same dtype.
inline void check_same_mm_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  LOOM_CHECK_T(TypeError, a.dtype() == b.dtype(), op,
               ": expected m1 and m2 to have the same dtype, but got: ", c_type_name(a.dtype()),
               " != ", c_type_name(b.dtype()));
}

/// A view of t broadcast to sizes (right-aligned, size-1 dims get stride 0), with PyTorch's
/// expand message when t does not broadcast.
inline Tensor expand_view(std::string_view op, const Tensor& t, IntArrayRef sizes) {
  const auto nd = static_cast<int64_t>(sizes.size());
  LOOM_CHECK(t.dim() <= nd, op, ": the number of sizes provided (", nd,
             ") must be greater or equal to the number of dimensions in the tensor (", t.dim(),
             ")");
  std::vector<int64_t> st(static_cast<size_t>(nd), 0);
  for (int64_t d = nd - 1, e = t.dim() - 1; e >= 0; --d, --e) {
    if (t.size(e) == sizes[d]) {
      st[d] = t.stride(e);
    } else {
      LOOM_CHECK(t.size(e) == 1, op, ": The expanded size of the tensor (", sizes[d],
                 ") must match the existing size (", t.size(e), ") at non-singleton dimension ", d,
                 ".  Target sizes: ", sizes_str(sizes), ".  Tensor sizes: ", sizes_str(t.sizes()));
    }
  }
  return t.as_strided_view(sizes, st, t.storage_offset());
}

/// Whether dims [d0, d1] of t merge into one dim without a copy; if so *stride is the merged
/// dim's stride (size-1 dims, whose strides mean nothing, are passed over).
inline bool mergeable(const Tensor& t, int64_t d0, int64_t d1, int64_t* stride) {
  *stride = 1;
  int64_t expect = -1;
  for (int64_t d = d1; d >= d0; --d) {
    if (t.size(d) == 1) continue;
    if (expect < 0) {
      *stride = t.stride(d);
    } else if (t.stride(d) != expect) {
      return false;
    }
    expect = t.stride(d) * t.size(d);
  }
  return true;
}

/// mm's checks after the device check: two matrices whose inner sizes agree, one dtype.
inline void check_mm(std::string_view op, const Tensor& self, const Tensor& mat2) {
  LOOM_CHECK(self.dim() == 2, op, ": self must be a matrix, got ", self.dim(), "-D tensor ",
             self.describe());
  LOOM_CHECK(mat2.dim() == 2, op, ": mat2 must be a matrix, got ", mat2.dim(), "-D tensor ",
             mat2.describe());
  LOOM_CHECK(self.size(1) == mat2.size(0), op, ": mat1 and mat2 shapes cannot be multiplied (",
             self.size(0), "x", self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_same_mm_dtype(op, self, mat2);
}

/// addmm's checks after the device check: mat1 @ mat2 defined, self of their dtype (self's
/// shape is checked when it is broadcast to the result, expand_view).
inline void check_addmm(std::string_view op, const Tensor& self, const Tensor& mat1,
                        const Tensor& mat2) {
  LOOM_CHECK(mat1.dim() == 2, op, ": mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  LOOM_CHECK(mat2.dim() == 2, op, ": mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  LOOM_CHECK(mat1.size(1) == mat2.size(0), op, ": mat1 and mat2 shapes cannot be multiplied (",
             mat1.size(0), "x", mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_same_mm_dtype(op, mat1, mat2);
  LOOM_CHECK_T(TypeError, self.dtype() == mat1.dtype(), op,
               ": self and mat2 must have the same dtype, but got ", c_type_name(self.dtype()),
               " and ", c_type_name(mat2.dtype()));
}

/// bmm's checks after the device check (also baddbmm's and addbmm's on batch1, batch2): two
/// 3-D batches of one batch size whose inner sizes agree, one dtype.
inline void check_bmm(std::string_view op, const Tensor& b1, const Tensor& b2) {
  LOOM_CHECK(b1.dim() == 3, op, ": batch1 must be a 3D tensor, got ", b1.dim(), "-D tensor ",
             b1.describe());
  LOOM_CHECK(b2.dim() == 3, op, ": batch2 must be a 3D tensor, got ", b2.dim(), "-D tensor ",
             b2.describe());
  LOOM_CHECK(b2.size(0) == b1.size(0) && b2.size(1) == b1.size(2), op,
             ": Expected size for first two dimensions of batch2 tensor to be: [", b1.size(0), ", ",
             b1.size(2), "] but got: [", b2.size(0), ", ", b2.size(1), "].");
  check_same_mm_dtype(op, b1, b2);
}

/// PyTorch refuses a floating beta or alpha for integer tensors rather than truncating it, and
/// one the dtype cannot hold rather than wrapping it (Note [Checked scalar conversion]).
inline void check_mm_scalars(std::string_view op, DType t, const Scalar& beta,
                             const Scalar& alpha) {
  if (!is_integral(t)) return;
  LOOM_CHECK(!beta.is_floating_point(), op,
             ": For integral input tensors, argument beta must not be a floating point number.");
  LOOM_CHECK(!alpha.is_floating_point(), op,
             ": For integral input tensors, argument alpha must not be a floating point number.");
  check_scalar_fits(op, beta, t);
  check_scalar_fits(op, alpha, t);
}

/// dot's checks after the device check: two 1-D tensors of one size and dtype.
inline void check_dot(const Tensor& self, const Tensor& tensor) {
  LOOM_CHECK(self.dim() == 1 && tensor.dim() == 1, "dot: 1D tensors expected, but got ", self.dim(),
             "D and ", tensor.dim(), "D tensors");
  LOOM_CHECK(self.size(0) == tensor.size(0), "dot: inconsistent tensor size, expected tensor [",
             self.size(0), "] and src [", tensor.size(0),
             "] to have the same number of elements, but got ", self.size(0), " and ",
             tensor.size(0), " elements respectively");
  LOOM_CHECK_T(TypeError, self.dtype() == tensor.dtype(),
               "dot : expected both vectors to have same dtype, but found ",
               torch_type_name(self.dtype()), " and ", torch_type_name(tensor.dtype()));
}

/// mv's checks after the device check: a matrix and a vector that fit, one dtype.
inline void check_mv(const Tensor& self, const Tensor& vec) {
  LOOM_CHECK(self.dim() == 2 && vec.dim() == 1, "mv: vector + matrix @ vector expected, got 1, ",
             self.dim(), ", ", vec.dim());
  LOOM_CHECK(self.size(1) == vec.size(0), "mv: size mismatch, got input (", self.size(0),
             "), mat (", self.size(0), "x", self.size(1), "), vec (", vec.size(0), ")");
  check_same_mm_dtype("mv", self, vec);
}

/// outer's checks after the device check: two vectors; returns the dtype of the result
/// (outer is a broadcast product in PyTorch, so it promotes).
inline DType check_outer(const Tensor& self, const Tensor& vec2) {
  LOOM_CHECK(self.dim() == 1, "outer: Expected 1-D argument self, but got ", self.dim(), "-D");
  LOOM_CHECK(vec2.dim() == 1, "outer: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  return promote_types(self.dtype(), vec2.dtype());
}

/// matmul's first check after the device check: neither argument is 0-D.
inline void check_matmul_dims(std::string_view op, const Tensor& a, const Tensor& b) {
  LOOM_CHECK(a.dim() > 0 && b.dim() > 0, op,
             ": both arguments to matmul need to be at least 1D, but they are ", a.dim(), "D and ",
             b.dim(), "D");
}

/// The shapes of a batched matmul (a case other than dot, mv and mm).
struct MatmulShape {
  std::vector<int64_t> batch;   ///< the broadcast batch dims
  std::vector<int64_t> result;  ///< PyTorch's output shape (a 1-D operand's dim dropped)
  int64_t m = 0;                ///< rows of each product
  int64_t k = 0;                ///< the contracted size
  int64_t n = 0;                ///< columns of each product
};

/// A 1-D vector as a row [1, n].
inline Tensor as_row(const Tensor& v) {
  return v.as_strided_view({1, v.size(0)}, {0, v.stride(0)}, v.storage_offset());
}

/// A 1-D vector as a column [n, 1].
inline Tensor as_column(const Tensor& v) {
  return v.as_strided_view({v.size(0), 1}, {v.stride(0), 0}, v.storage_offset());
}

/// matmul's shapes for a and b as matrices A, B (a 1-D a as the row as_row(a), a 1-D b as the
/// column as_column(b)): checks that the products fit and the batch dims broadcast. da and db
/// are the ranks of the original a and b (a 1-D operand's dim is left out of result).
inline MatmulShape matmul_shape(std::string_view op, const Tensor& A, const Tensor& B, int64_t da,
                                int64_t db) {
  MatmulShape s;
  s.m = A.size(-2);
  s.k = A.size(-1);
  s.n = B.size(-1);
  LOOM_CHECK(B.size(-2) == s.k, op, ": mat1 and mat2 shapes cannot be multiplied (", s.m, "x", s.k,
             " and ", B.size(-2), "x", s.n, ")");
  const int64_t ba = A.dim() - 2, bb = B.dim() - 2, nb = std::max(ba, bb);
  s.batch.resize(static_cast<size_t>(nb));
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t ea = i - (nb - ba), eb = i - (nb - bb);
    const int64_t sa = ea >= 0 ? A.size(ea) : 1, sb = eb >= 0 ? B.size(eb) : 1;
    LOOM_CHECK(sa == sb || sa == 1 || sb == 1, op, ": The size of tensor a (", sa,
               ") must match the size of tensor b (", sb, ") at non-singleton dimension ", i);
    s.batch[static_cast<size_t>(i)] = sa == 1 ? sb : sa;
  }
  s.result = s.batch;
  if (da > 1) s.result.push_back(s.m);
  if (db > 1) s.result.push_back(s.n);
  return s;
}

/// linear's check on weight: it is transposed as t() does, which takes at most 2 dims.
inline void check_linear_weight(const Tensor& weight) {
  LOOM_CHECK(weight.dim() <= 2, "linear: t() expects a tensor with <= 2 dimensions, but weight is ",
             weight.dim(), "D");
}

}  // namespace loom::ops::meta
