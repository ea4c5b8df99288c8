// Reference CPU kernels: mm, bmm, addmm, addbmm, baddbmm, mv, dot, outer, matmul, linear
// (and the out= forms of mm, bmm, addmm), all on the blocked GEMM of cpu/gemm.h
// (Note [Reference GEMM]); any strides, zero-size dims, PyTorch's checks and wording.
#include "loom/ops/meta/linalg.h"

#include "cpu/gemm.h"
#include "cpu/meta.h"
#include "loom/core/memory_overlap.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {

using gemm::AccOf;
using gemm::dispatch;
using gemm::Elem;
using gemm::for_each_offset;
using gemm::Mat;
using gemm::mat_of;
using gemm::row_major_strides;
using meta::check_same_mm_dtype;
using meta::expand_view;

namespace {

Tensor new_empty(IntArrayRef sizes, DType t, Device device) {
  return Tensor::empty(sizes, TensorOptions{}.with(t).with(device));
}

/// dst = beta * src elementwise (same sizes, any strides); beta == 0 writes zeros without
/// reading src, as PyTorch's addmm ignores NaN in self then.
void scale_into(std::string_view op, const Tensor& dst, const Tensor& src, const Scalar& beta) {
  if (is_meta(dst)) return;  // Note [Meta kernels share the reference's setup]
  dispatch(op, dst.dtype(), [&]<typename S>(S*) {
    using A = AccOf<S>;
    const A b = beta.to<A>();
    S* d = static_cast<S*>(dst.data_ptr());
    const S* s = static_cast<const S*>(src.data_ptr());
    for_each_offset<2>(dst.sizes(), {dst.strides(), src.strides()}, [&](const auto& o) {
      d[o[0]] = b == A(0) ? Elem<S>::store(A(0))
                          : (b == A(1) ? s[o[1]] : Elem<S>::store(b * Elem<S>::load(s[o[1]])));
    });
  });
}

/// c = beta*c + alpha*(a @ b) for 2-D views (c must not overlap a or b).
void gemm_into(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& c,
               const Scalar& beta, const Scalar& alpha, bool parallel = true) {
  if (is_meta(c)) return;
  dispatch(op, c.dtype(), [&]<typename S>(S*) {
    using A = AccOf<S>;
    gemm::gemm<S>(a.size(0), b.size(1), a.size(1), alpha.to<A>(), mat_of<const S>(a, 0, 1),
                  mat_of<const S>(b, 0, 1), beta.to<A>(), mat_of<S>(c, 0, 1), parallel);
  });
}

/// Makes out hold sizes and dtype: kept when it already does, else resized (resize_output).
void prepare_out(std::string_view op, const Tensor& out, IntArrayRef sizes, DType dtype) {
  LOOM_CHECK_T(TypeError, out.dtype() == dtype, op, ": expected out to have dtype ",
               dtype_name(dtype), " but got ", dtype_name(out.dtype()));
  resize_output(op, out, sizes);
  assert_no_internal_overlap(op, out);  // Note [Memory overlap]
}

/// Runs compute(dst) on out, or on a temporary copied into out if out overlaps an input.
template <typename F>
void into_out(const Tensor& out, std::initializer_list<const Tensor*> inputs, F&& compute) {
  bool alias = false;
  for (const Tensor* t : inputs) alias |= t->defined() && t->numel() > 0 && out.is_alias_of(*t);
  if (!alias) {
    compute(out);
  } else {
    Tensor tmp = new_empty(out.sizes(), out.dtype(), out.device());
    compute(tmp);
    scale_into("copy", out, tmp, Scalar(1));
  }
  out.bump_version();
}

// ---- mm, addmm ----

void check_mm(std::string_view op, const Tensor& self, const Tensor& mat2) {
  check_defined(op, {{"self", self}, {"mat2", mat2}});
  check_same_device(op, {{"self", self}, {"mat2", mat2}});
  meta::check_mm(op, self, mat2);
}

Tensor mm(const Tensor& self, const Tensor& mat2) {
  check_mm("mm", self, mat2);
  Tensor out = new_empty({self.size(0), mat2.size(1)}, self.dtype(), self.device());
  gemm_into("mm", self, mat2, out, Scalar(0), Scalar(1));
  return out;
}

Tensor& mm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  check_mm("mm.out", self, mat2);
  prepare_out("mm.out", out, {self.size(0), mat2.size(1)}, self.dtype());
  into_out(out, {&self, &mat2},
           [&](const Tensor& o) { gemm_into("mm.out", self, mat2, o, Scalar(0), Scalar(1)); });
  return out;
}

void check_addmm(std::string_view op, const Tensor& self, const Tensor& mat1, const Tensor& mat2) {
  check_defined(op, {{"self", self}, {"mat1", mat1}, {"mat2", mat2}});
  check_same_device(op, {{"self", self}, {"mat1", mat1}, {"mat2", mat2}});
  meta::check_addmm(op, self, mat1, mat2);
}

using meta::check_mm_scalars;

/// out = beta*self + alpha*(mat1 @ mat2), out already [m, n].
void addmm_compute(std::string_view op, const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                   const Scalar& beta, const Scalar& alpha, const Tensor& out) {
  check_mm_scalars(op, out.dtype(), beta, alpha);
  const Tensor s = expand_view(op, self, out.sizes());
  if (beta.to_double() == 0) {
    gemm_into(op, mat1, mat2, out, Scalar(0), alpha);
  } else {
    scale_into(op, out, s, beta);
    gemm_into(op, mat1, mat2, out, Scalar(1), alpha);
  }
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  check_addmm("addmm", self, mat1, mat2);
  Tensor out = new_empty({mat1.size(0), mat2.size(1)}, mat1.dtype(), mat1.device());
  addmm_compute("addmm", self, mat1, mat2, beta, alpha, out);
  return out;
}

Tensor& addmm_out(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                  const Scalar& alpha, Tensor& out) {
  check_addmm("addmm.out", self, mat1, mat2);
  const std::vector<int64_t> sizes{mat1.size(0), mat2.size(1)};
  expand_view("addmm.out", self, sizes);  // check before touching out
  prepare_out("addmm.out", out, sizes, mat1.dtype());
  // out may be self (addmm_ spelled as out=): gemm reads out as C, so only a temporary when
  // out overlaps mat1/mat2 or is self under a different geometry.
  const bool out_is_self =
      self.is_same(out) ||
      (self.is_alias_of(out) && self.sizes() == out.sizes() && self.strides() == out.strides() &&
       self.storage_offset() == out.storage_offset());
  if (out_is_self) {
    into_out(out, {&mat1, &mat2}, [&](const Tensor& o) {
      if (o.is_same(out)) {
        gemm_into("addmm.out", mat1, mat2, o, beta, alpha);
      } else {
        addmm_compute("addmm.out", self, mat1, mat2, beta, alpha, o);
      }
    });
  } else {
    into_out(out, {&self, &mat1, &mat2}, [&](const Tensor& o) {
      addmm_compute("addmm.out", self, mat1, mat2, beta, alpha, o);
    });
  }
  return out;
}

// ---- bmm, baddbmm, addbmm ----

void check_bmm(std::string_view op, const Tensor& b1, const Tensor& b2) {
  check_same_device(op, {{"batch1", b1}, {"batch2", b2}});
  meta::check_bmm(op, b1, b2);
}

Tensor bmm(const Tensor& self, const Tensor& mat2) {
  check_defined("bmm", {{"self", self}, {"mat2", mat2}});
  check_bmm("bmm", self, mat2);
  Tensor out = new_empty({self.size(0), self.size(1), mat2.size(2)}, self.dtype(), self.device());
  batched_gemm_into("bmm", self, mat2, out, Scalar(0), Scalar(1));
  return out;
}

Tensor& bmm_out(const Tensor& self, const Tensor& mat2, Tensor& out) {
  check_defined("bmm.out", {{"self", self}, {"mat2", mat2}, {"out", out}});
  check_bmm("bmm.out", self, mat2);
  prepare_out("bmm.out", out, {self.size(0), self.size(1), mat2.size(2)}, self.dtype());
  into_out(out, {&self, &mat2}, [&](const Tensor& o) {
    batched_gemm_into("bmm.out", self, mat2, o, Scalar(0), Scalar(1));
  });
  return out;
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  check_defined("baddbmm", {{"self", self}, {"batch1", batch1}, {"batch2", batch2}});
  check_bmm("baddbmm", batch1, batch2);
  check_same_dtype("baddbmm", {{"self", self}, {"batch1", batch1}});
  check_mm_scalars("baddbmm", batch1.dtype(), beta, alpha);
  Tensor out =
      new_empty({batch1.size(0), batch1.size(1), batch2.size(2)}, batch1.dtype(), batch1.device());
  const Tensor s = expand_view("baddbmm", self, out.sizes());
  if (beta.to_double() == 0) {
    batched_gemm_into("baddbmm", batch1, batch2, out, Scalar(0), alpha);
  } else {
    scale_into("baddbmm", out, s, beta);
    batched_gemm_into("baddbmm", batch1, batch2, out, Scalar(1), alpha);
  }
  return out;
}

Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
              const Scalar& alpha) {
  check_defined("addbmm", {{"self", self}, {"batch1", batch1}, {"batch2", batch2}});
  check_bmm("addbmm", batch1, batch2);
  check_same_dtype("addbmm", {{"self", self}, {"batch1", batch1}});
  check_mm_scalars("addbmm", batch1.dtype(), beta, alpha);
  Tensor out = new_empty({batch1.size(1), batch2.size(2)}, batch1.dtype(), batch1.device());
  // out = beta*self, then the products summed into it one batch at a time.
  scale_into("addbmm", out, expand_view("addbmm", self, out.sizes()), beta);
  for (int64_t b = 0; b < batch1.size(0); ++b) {
    const Tensor b1 = batch1.as_strided_view({batch1.size(1), batch1.size(2)},
                                             {batch1.stride(1), batch1.stride(2)},
                                             batch1.storage_offset() + b * batch1.stride(0));
    const Tensor b2 = batch2.as_strided_view({batch2.size(1), batch2.size(2)},
                                             {batch2.stride(1), batch2.stride(2)},
                                             batch2.storage_offset() + b * batch2.stride(0));
    gemm_into("addbmm", b1, b2, out, Scalar(1), alpha);
  }
  return out;
}

// ---- dot, mv, outer ----

Tensor dot(const Tensor& self, const Tensor& tensor) {
  check_defined("dot", {{"self", self}, {"tensor", tensor}});
  check_same_device("dot", {{"self", self}, {"tensor", tensor}});
  meta::check_dot(self, tensor);
  Tensor out = new_empty({}, self.dtype(), self.device());
  const Tensor a =
      self.as_strided_view({1, self.size(0)}, {0, self.stride(0)}, self.storage_offset());
  const Tensor b =
      tensor.as_strided_view({tensor.size(0), 1}, {tensor.stride(0), 0}, tensor.storage_offset());
  gemm_into("dot", a, b, out.as_strided_view({1, 1}, {1, 1}, 0), Scalar(0), Scalar(1));
  return out;
}

Tensor mv(const Tensor& self, const Tensor& vec) {
  check_defined("mv", {{"self", self}, {"vec", vec}});
  check_same_device("mv", {{"self", self}, {"vec", vec}});
  meta::check_mv(self, vec);
  Tensor out = new_empty({self.size(0)}, self.dtype(), self.device());
  gemm_into("mv", self,
            vec.as_strided_view({vec.size(0), 1}, {vec.stride(0), 0}, vec.storage_offset()),
            out.as_strided_view({self.size(0), 1}, {1, 0}, 0), Scalar(0), Scalar(1));
  return out;
}

/// A contiguous copy of t converted to dtype d.
Tensor converted(const Tensor& t, DType d) {
  if (t.dtype() == d) return t;
  Tensor out = new_empty(t.sizes(), d, t.device());
  if (is_meta(out)) return out;
  dispatch("to", d, [&]<typename D>(D*) {
    dispatch("to", t.dtype(), [&]<typename S>(S*) {
      D* o = static_cast<D*>(out.data_ptr());
      const S* s = static_cast<const S*>(t.data_ptr());
      for_each_offset<2>(t.sizes(), {out.strides(), t.strides()}, [&](const auto& q) {
        o[q[0]] = Elem<D>::store(static_cast<AccOf<D>>(Elem<S>::load(s[q[1]])));
      });
    });
  });
  return out;
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  check_defined("outer", {{"self", self}, {"vec2", vec2}});
  check_same_device("outer", {{"self", self}, {"vec2", vec2}});
  const DType d = meta::check_outer(self, vec2);
  const Tensor a = converted(self, d), b = converted(vec2, d);
  Tensor out = new_empty({a.size(0), b.size(0)}, d, a.device());
  gemm_into("outer", a.as_strided_view({a.size(0), 1}, {a.stride(0), 0}, a.storage_offset()),
            b.as_strided_view({1, b.size(0)}, {0, b.stride(0)}, b.storage_offset()), out, Scalar(0),
            Scalar(1));
  return out;
}

}  // namespace

// ---- matmul, linear (batched_gemm_into is shared with cpu/linalg_einsum.cpp) ----

/// c[i] = beta*c[i] + alpha*(a[i] @ b[i]) over the leading (batch) dims of equal-rank a, b, c;
/// broadcast batch dims may have stride 0 in a and b.
void batched_gemm_into(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& c,
                       const Scalar& beta, const Scalar& alpha) {
  if (is_meta(c)) return;
  const int64_t nd = c.dim();
  const IntArrayRef batch = IntArrayRef(c.sizes().data(), static_cast<size_t>(nd - 2));
  std::vector<std::array<int64_t, 3>> offsets;
  for_each_offset<3>(batch,
                     {IntArrayRef(a.strides().data(), static_cast<size_t>(nd - 2)),
                      IntArrayRef(b.strides().data(), static_cast<size_t>(nd - 2)),
                      IntArrayRef(c.strides().data(), static_cast<size_t>(nd - 2))},
                     [&](const auto& o) { offsets.push_back(o); });
  const int64_t m = c.size(-2), n = c.size(-1), k = a.size(-1);
  const auto nb = static_cast<int64_t>(offsets.size());
  dispatch(op, c.dtype(), [&]<typename S>(S*) {
    using A = AccOf<S>;
    const A al = alpha.to<A>(), be = beta.to<A>();
    auto one = [&](int64_t i, bool parallel) {
      const auto& o = offsets[static_cast<size_t>(i)];
      gemm::gemm<S>(m, n, k, al, mat_of<const S>(a, -2, -1, o[0]), mat_of<const S>(b, -2, -1, o[1]),
                    be, mat_of<S>(c, -2, -1, o[2]), parallel);
    };
    // Many small products: one per thread; otherwise each product uses all threads.
    if (nb > 1 && m * n * k < 128 * 128 * 128) {
#pragma omp parallel for schedule(dynamic) if (nb * m * n * k >= 64 * 64 * 64)
      for (int64_t i = 0; i < nb; ++i) one(i, false);
    } else {
      for (int64_t i = 0; i < nb; ++i) one(i, true);
    }
  });
}

static Tensor matmul_reference(std::string_view op, const Tensor& a, const Tensor& b) {
  check_defined(op, {{"self", a}, {"other", b}});
  check_same_device(op, {{"self", a}, {"other", b}});
  meta::check_matmul_dims(op, a, b);
  const int64_t da = a.dim(), db = b.dim();
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 2 && db == 2) return mm(a, b);
  check_same_mm_dtype(op, a, b);
  // As matrices: a 1-D a is a row [1, k], a 1-D b a column [k, 1]; those dims are dropped.
  const Tensor A = da == 1 ? meta::as_row(a) : a;
  const Tensor B = db == 1 ? meta::as_column(b) : b;
  const meta::MatmulShape shape = meta::matmul_shape(op, A, B, da, db);
  const std::vector<int64_t>& batch = shape.batch;
  const int64_t m = shape.m, k = shape.k, n = shape.n;
  Tensor out = new_empty(shape.result, a.dtype(), a.device());
  int64_t row_stride = 0;
  if (B.dim() == 2 && meta::mergeable(A, 0, A.dim() - 2, &row_stride)) {
    // [..., m, k] @ [k, n]: one GEMM over the merged rows, as PyTorch folds it.
    int64_t rows = m;
    for (int64_t s : batch) rows *= s;
    const Tensor a2 = A.as_strided_view({rows, k}, {row_stride, A.stride(-1)}, A.storage_offset());
    gemm_into(op, a2, B, out.as_strided_view({rows, n}, {n, 1}, 0), Scalar(0), Scalar(1));
    return out;
  }
  std::vector<int64_t> sa(batch), sb(batch), sc(batch);
  sa.insert(sa.end(), {m, k});
  sb.insert(sb.end(), {k, n});
  sc.insert(sc.end(), {m, n});
  batched_gemm_into(op, expand_view(op, A, sa), expand_view(op, B, sb),
                    out.as_strided_view(sc, row_major_strides(sc), 0), Scalar(0), Scalar(1));
  return out;
}

namespace {

Tensor matmul(const Tensor& self, const Tensor& other) {
  return matmul_reference("matmul", self, other);
}

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  check_defined("linear", {{"input", input}, {"weight", weight}});
  meta::check_linear_weight(weight);
  const Tensor wt = weight.dim() < 2 ? weight
                                     : weight.as_strided_view({weight.size(1), weight.size(0)},
                                                              {weight.stride(1), weight.stride(0)},
                                                              weight.storage_offset());
  const bool has_bias = bias && bias->defined();
  if (has_bias) {
    check_same_device("linear", {{"input", input}, {"weight", weight}, {"bias", *bias}});
    check_same_dtype("linear", {{"input", input}, {"bias", *bias}});
  }
  if (input.dim() == 2 && wt.dim() == 2 && has_bias) {
    check_mm("linear", input, wt);
    Tensor out = new_empty({input.size(0), wt.size(1)}, input.dtype(), input.device());
    addmm_compute("linear", *bias, input, wt, Scalar(1), Scalar(1), out);
    return out;
  }
  Tensor out = matmul_reference("linear", input, wt);
  if (has_bias) {
    const Tensor b = expand_view("linear", *bias, out.sizes());
    if (is_meta(out)) return out;
    dispatch("linear", out.dtype(), [&]<typename S>(S*) {
      S* o = static_cast<S*>(out.data_ptr());
      const S* s = static_cast<const S*>(b.data_ptr());
      for_each_offset<2>(out.sizes(), {out.strides(), b.strides()}, [&](const auto& q) {
        o[q[0]] = Elem<S>::store(Elem<S>::load(o[q[0]]) + Elem<S>::load(s[q[1]]));
      });
    });
  }
  return out;
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
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

}  // namespace loom::ops::cpu
