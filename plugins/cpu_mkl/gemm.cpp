// The matmul family on MKL's cblas_sgemm and cblas_sgemm_batch_strided: mm, bmm, addmm,
// baddbmm, the out= forms of mm, bmm and addmm, linear and matmul, float32 only. Every call
// outside BLAS's domain goes to the next provider (oneDNN's kernels when cpu_onednn is
// loaded, else the reference kernels of ops/core/cpu/linalg.cpp), so shapes, dtypes and
// error messages are theirs (docs/design/cpu-providers.md).
#include <dlfcn.h>
#include <mkl_cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/linalg.h"
#include "loom/ops/provider/gemm_operands.h"

namespace loom::mkl {
namespace {

/// Products of at most this many multiply-adds (all batches together) are handed on: a BLAS
/// call costs about a microsecond of fixed work, which the reference's unpacked loop beats
/// on tiny products (the same bound as cpu_onednn's matmul kernels).
constexpr int64_t kMaxHandedOnMultiplyAdds = 16 * 16 * 16;

/// MKL's LP64 interface takes 32-bit sizes, leading dimensions and batch strides.
constexpr int64_t kMaxBlasInt = INT32_MAX;

// Note [BLAS operands]: BLAS reads a matrix row-major with a leading dimension (its row
// stride, at least its width) or, transposed, column-major with one. A Loom view whose
// columns are contiguous is the first, one whose rows are contiguous the second; a view
// strided both ways, or whose rows overlap (an expanded row), is neither and is handed on.
// A column-major result C is written as the row-major C^T = B^T A^T. Batches are one more
// stride per operand (0 for a broadcast input), as cblas_sgemm_batch_strided takes them.

/// A batch of matrices: data, sizes and strides in elements.
struct Matrices {
  float* data = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 0, batch_stride = 0;
};

/// The BLAS view of one operand (Note [BLAS operands]).
struct BlasOperand {
  bool transposed = false;
  int64_t ld = 0;
};

std::optional<BlasOperand> blas_operand(const Matrices& m) {
  const int64_t rows = std::max<int64_t>(m.rows, 1), cols = std::max<int64_t>(m.cols, 1);
  if (cols == 1 || m.col_stride == 1) {
    const int64_t ld = rows == 1 ? cols : m.row_stride;
    if (ld >= cols && ld <= kMaxBlasInt) return BlasOperand{false, ld};
  }
  if (rows == 1 || m.row_stride == 1) {
    const int64_t ld = cols == 1 ? rows : m.col_stride;
    if (ld >= rows && ld <= kMaxBlasInt) return BlasOperand{true, ld};
  }
  return std::nullopt;
}

/// Calls of cblas_sgemm and cblas_sgemm_batch_strided since load (tests read it).
std::atomic<int64_t> g_gemm_calls{0};

/// MKL's own cblas_sgemm and cblas_sgemm_batch_strided. A process may already have another
/// CBLAS in its global scope (loom-bench links OpenBLAS for its raw peer), which the dynamic
/// linker would bind this plugin's calls to; the entry points are looked up in MKL's
/// interface library itself instead (the linked symbols are the fallback).
struct Blas {
  decltype(&cblas_sgemm) sgemm = &cblas_sgemm;
  decltype(&cblas_sgemm_batch_strided) sgemm_batch_strided = &cblas_sgemm_batch_strided;
};

const Blas& blas() {
  static const Blas b = [] {
    Blas r;
    if (void* h = dlopen("libmkl_intel_lp64.so.3", RTLD_LAZY | RTLD_NOLOAD)) {
      if (void* f = dlsym(h, "cblas_sgemm")) r.sgemm = reinterpret_cast<decltype(r.sgemm)>(f);
      if (void* f = dlsym(h, "cblas_sgemm_batch_strided")) {
        r.sgemm_batch_strided = reinterpret_cast<decltype(r.sgemm_batch_strided)>(f);
      }
      dlclose(h);  // the plugin's own dependency keeps the library loaded
    }
    return r;
  }();
  return b;
}

CBLAS_TRANSPOSE trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

/// c[i] = alpha * a[i] @ b[i] + beta * c[i] for each of batch matrices (c never read when
/// beta is 0). Returns false, having written nothing, when an operand is not a BLAS operand
/// or a size does not fit MKL's 32-bit integers.
bool gemm(int64_t batch, Matrices a, Matrices b, Matrices c, float alpha, float beta) {
  const int64_t m = c.rows, n = c.cols, k = a.cols;
  for (int64_t v : {batch, m, n, k, a.batch_stride, b.batch_stride, c.batch_stride}) {
    if (v > kMaxBlasInt) return false;
  }
  // The result's matrices must not overlap one another.
  const int64_t c_extent = (c.rows - 1) * c.row_stride + (c.cols - 1) * c.col_stride + 1;
  if (batch > 1 && c.batch_stride < c_extent) return false;
  auto oa = blas_operand(a), ob = blas_operand(b), oc = blas_operand(c);
  if (!oa || !ob || !oc) return false;
  if (oc->transposed) {  // C^T = B^T A^T, row-major
    std::swap(a, b);
    std::swap(oa, ob);
    oa->transposed = !oa->transposed;
    ob->transposed = !ob->transposed;
  }
  const auto M = static_cast<MKL_INT>(oc->transposed ? n : m);
  const auto N = static_cast<MKL_INT>(oc->transposed ? m : n);
  const auto K = static_cast<MKL_INT>(k);
  g_gemm_calls.fetch_add(1, std::memory_order_relaxed);
  if (batch == 1) {
    blas().sgemm(CblasRowMajor, trans(oa->transposed), trans(ob->transposed), M, N, K, alpha,
                a.data, static_cast<MKL_INT>(oa->ld), b.data, static_cast<MKL_INT>(ob->ld), beta,
                c.data, static_cast<MKL_INT>(oc->ld));
  } else {
    blas().sgemm_batch_strided(
        CblasRowMajor, trans(oa->transposed), trans(ob->transposed), M, N, K, alpha, a.data,
        static_cast<MKL_INT>(oa->ld), static_cast<MKL_INT>(a.batch_stride), b.data,
        static_cast<MKL_INT>(ob->ld), static_cast<MKL_INT>(b.batch_stride), beta, c.data,
        static_cast<MKL_INT>(oc->ld), static_cast<MKL_INT>(c.batch_stride),
        static_cast<MKL_INT>(batch));
  }
  return true;
}

/// The matrices of t (2-D: one; 3-D: one per index of dim 0).
Matrices matrices_of(const Tensor& t) {
  const int64_t r = t.dim();
  return Matrices{t.data_ptr<float>(), t.size(r - 2),   t.size(r - 1),
                  t.stride(r - 2),     t.stride(r - 1), r == 3 ? t.stride(0) : 0};
}

// ---- which calls are taken

/// True when every defined tensor is a non-empty float32 CPU tensor with non-negative
/// strides (BLAS's domain here). Undefined tensors (an absent bias) are skipped.
bool takes(std::initializer_list<std::reference_wrapper<const Tensor>> tensors) {
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (t.device().type() != DeviceType::cpu() || t.numel() == 0 || t.dtype() != DType::Float32) {
      return false;
    }
    for (int64_t s : t.strides()) {
      if (s < 0) return false;
    }
  }
  return true;
}

using provider::broadcasts_to;
using provider::copy_broadcast;
using provider::multiply_adds;
using provider::new_float_empty;
using provider::overlaps;

bool mm_shapes(const Tensor& self, const Tensor& mat2) {
  return provider::mm_shapes(self, mat2, kMaxHandedOnMultiplyAdds);
}

bool bmm_shapes(const Tensor& self, const Tensor& mat2) {
  return provider::bmm_shapes(self, mat2, kMaxHandedOnMultiplyAdds);
}

/// out = beta * self + alpha * (a @ b) over batch matrices, self broadcast to out (checked
/// by the caller); beta = 0 ignores self (NaN there does not propagate, as in the reference).
bool add_product_into(const Tensor& self, int64_t batch, const Matrices& a, const Matrices& b,
                      const Tensor& out, double beta, double alpha) {
  if (beta != 0) copy_broadcast(self, out);
  return gemm(batch, a, b, matrices_of(out), static_cast<float>(alpha),
              static_cast<float>(beta));
}

template <typename Sig>
OperatorHandle::Typed<Sig> find(std::string_view name) {
  return Dispatcher::instance().find_op_or_throw(name).template typed<Sig>();
}

constexpr DispatchKey kCPU = DispatchKey::CPU;

// ---- mm, bmm and their out= forms

Tensor mm(const Tensor& self, const Tensor& mat2) {
  static const auto op = find<Tensor(const Tensor&, const Tensor&)>("aten::mm");
  if (!takes({self, mat2}) || !mm_shapes(self, mat2)) {
    return op.call_next_provider(kCPU, self, mat2);
  }
  Tensor out = new_float_empty({self.size(0), mat2.size(1)});
  if (!gemm(1, matrices_of(self), matrices_of(mat2), matrices_of(out), 1, 0)) {
    return op.call_next_provider(kCPU, self, mat2);
  }
  return out;
}

Tensor bmm(const Tensor& self, const Tensor& mat2) {
  static const auto op = find<Tensor(const Tensor&, const Tensor&)>("aten::bmm");
  if (!takes({self, mat2}) || !bmm_shapes(self, mat2)) {
    return op.call_next_provider(kCPU, self, mat2);
  }
  Tensor out = new_float_empty({self.size(0), self.size(1), mat2.size(2)});
  if (!gemm(self.size(0), matrices_of(self), matrices_of(mat2), matrices_of(out), 1, 0)) {
    return op.call_next_provider(kCPU, self, mat2);
  }
  return out;
}

/// The out= forms of mm and bmm (shapes_ok: a call mm or bmm would take): out resized as
/// the reference does, handed on when it overlaps an input.
Tensor product_out(
    const OperatorHandle::Typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>& op,
    std::string_view name, const Tensor& self, const Tensor& mat2, const Tensor& out,
    bool shapes_ok, const std::vector<int64_t>& sizes) {
  if (!shapes_ok || !provider::out_takes(out, self, mat2)) {
    return op.call_next_provider(kCPU, self, mat2, out);
  }
  resize_output(name, out, sizes);
  const int64_t batch = sizes.size() == 3 ? sizes[0] : 1;
  if (!takes({out}) ||
      !gemm(batch, matrices_of(self), matrices_of(mat2), matrices_of(out), 1, 0)) {
    return op.call_next_provider(kCPU, self, mat2, out);
  }
  out.bump_version();
  return out;
}

Tensor mm_out(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  static const auto op = find<Tensor(const Tensor&, const Tensor&, const Tensor&)>("aten::mm.out");
  const bool ok = takes({self, mat2}) && mm_shapes(self, mat2);
  return product_out(
      op, "mm.out", self, mat2, out, ok,
      ok ? std::vector<int64_t>{self.size(0), mat2.size(1)} : std::vector<int64_t>{});
}

Tensor bmm_out(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  static const auto op =
      find<Tensor(const Tensor&, const Tensor&, const Tensor&)>("aten::bmm.out");
  const bool ok = takes({self, mat2}) && bmm_shapes(self, mat2);
  return product_out(
      op, "bmm.out", self, mat2, out, ok,
      ok ? std::vector<int64_t>{self.size(0), self.size(1), mat2.size(2)} : std::vector<int64_t>{});
}

// ---- addmm, baddbmm

using AddSig = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);

/// alpha = 0 is handed on: BLAS then skips the product, so an infinity in it would not give
/// the reference's NaN.
bool scalars_ok(const Scalar& beta, const Scalar& alpha) { return alpha.to_double() != 0; }

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  static const auto op = find<AddSig>("aten::addmm");
  if (!takes({self, mat1, mat2}) || !mm_shapes(mat1, mat2) || !scalars_ok(beta, alpha) ||
      !broadcasts_to(self, {mat1.size(0), mat2.size(1)})) {
    return op.call_next_provider(kCPU, self, mat1, mat2, beta, alpha);
  }
  Tensor out = new_float_empty({mat1.size(0), mat2.size(1)});
  if (!add_product_into(self, 1, matrices_of(mat1), matrices_of(mat2), out, beta.to_double(),
                        alpha.to_double())) {
    return op.call_next_provider(kCPU, self, mat1, mat2, beta, alpha);
  }
  return out;
}

Tensor addmm_out(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                 const Scalar& alpha, const Tensor& out) {
  static const auto op = find<Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&,
                                     const Scalar&, const Tensor&)>("aten::addmm.out");
  auto hand_on = [&] { return op.call_next_provider(kCPU, self, mat1, mat2, beta, alpha, out); };
  if (!takes({self, mat1, mat2}) || !mm_shapes(mat1, mat2) || !scalars_ok(beta, alpha) ||
      !provider::out_takes(out, mat1, mat2)) {
    return hand_on();
  }
  const std::vector<int64_t> sizes{mat1.size(0), mat2.size(1)};
  if (!broadcasts_to(self, sizes)) return hand_on();
  // out may be self (addmm_ spelled as out=): then BLAS's beta * C reads it in place.
  const bool out_is_self = provider::out_is_self(out, self, sizes);
  if (!out_is_self && overlaps(out, self)) return hand_on();
  resize_output("addmm.out", out, sizes);
  if (!takes({out})) return hand_on();
  const bool done = out_is_self ? gemm(1, matrices_of(mat1), matrices_of(mat2), matrices_of(out),
                                       static_cast<float>(alpha.to_double()),
                                       static_cast<float>(beta.to_double()))
                                : add_product_into(self, 1, matrices_of(mat1), matrices_of(mat2),
                                                   out, beta.to_double(), alpha.to_double());
  if (!done) return hand_on();
  out.bump_version();
  return out;
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  static const auto op = find<AddSig>("aten::baddbmm");
  if (!takes({self, batch1, batch2}) || !bmm_shapes(batch1, batch2) || !scalars_ok(beta, alpha) ||
      !broadcasts_to(self, {batch1.size(0), batch1.size(1), batch2.size(2)})) {
    return op.call_next_provider(kCPU, self, batch1, batch2, beta, alpha);
  }
  Tensor out = new_float_empty({batch1.size(0), batch1.size(1), batch2.size(2)});
  if (!add_product_into(self, batch1.size(0), matrices_of(batch1), matrices_of(batch2), out,
                        beta.to_double(), alpha.to_double())) {
    return op.call_next_provider(kCPU, self, batch1, batch2, beta, alpha);
  }
  return out;
}

// ---- matmul, linear

/// t's dims [0, t.dim() - 2) broadcast to batch (t.dim() >= 2), merged into one batch dim:
/// its stride in *stride. False when they do not merge without a copy.
bool merged_batch(const Tensor& t, IntArrayRef batch, int64_t* stride) {
  const auto nb = static_cast<int64_t>(batch.size());
  std::vector<int64_t> sizes(batch.begin(), batch.end()), strides(batch.size(), 0);
  for (int64_t d = nb - 1, e = t.dim() - 3; d >= 0 && e >= 0; --d, --e) {
    if (t.size(e) != 1) strides[static_cast<size_t>(d)] = t.stride(e);
  }
  *stride = 0;
  if (nb == 0) return true;
  const Tensor view = t.as_strided_view(sizes, strides, t.storage_offset());
  return ops::meta::mergeable(view, 0, nb - 1, stride);
}

Tensor matmul(const Tensor& self, const Tensor& other) {
  static const auto op = find<Tensor(const Tensor&, const Tensor&)>("aten::matmul");
  auto hand_on = [&] { return op.call_next_provider(kCPU, self, other); };
  const int64_t da = self.dim(), db = other.dim();
  if (!takes({self, other}) || da < 2 || db < 2 || self.size(-1) != other.size(-2)) {
    return hand_on();
  }
  const int64_t k = self.size(-1), n = other.size(-1);
  if (db == 2) {  // self's leading dims folded into rows when they merge: one GEMM
    int64_t row_stride = 0;
    if (ops::meta::mergeable(self, 0, da - 2, &row_stride)) {
      const int64_t rows = self.numel() / k;
      std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
      sizes.back() = n;
      if (multiply_adds(sizes, k) <= kMaxHandedOnMultiplyAdds) return hand_on();
      Tensor out = new_float_empty(sizes);
      const Matrices a{self.data_ptr<float>(), rows, k, row_stride, self.stride(-1), 0};
      const Matrices c{out.data_ptr<float>(), rows, n, n, 1, 0};
      return gemm(1, a, matrices_of(other), c, 1, 0) ? out : hand_on();
    }
  }
  // Batch dims broadcast; each operand's batch dims must merge into one (strides uniform).
  std::vector<int64_t> batch;
  // Batch dims that do not broadcast: the reference's error.
  if (!provider::matmul_batch_sizes(self, other, &batch)) return hand_on();
  int64_t batch_count = 1;
  for (int64_t b : batch) batch_count *= b;
  std::vector<int64_t> sizes = batch;
  sizes.push_back(self.size(-2));
  sizes.push_back(n);
  if (multiply_adds(sizes, k) <= kMaxHandedOnMultiplyAdds) return hand_on();
  int64_t sa = 0, sb = 0;
  if (!merged_batch(self, batch, &sa) || !merged_batch(other, batch, &sb)) return hand_on();
  Tensor out = new_float_empty(sizes);
  const int64_t m = self.size(-2);
  const Matrices a{self.data_ptr<float>(), m, k, self.stride(-2), self.stride(-1), sa};
  const Matrices b{other.data_ptr<float>(), k, n, other.stride(-2), other.stride(-1), sb};
  const Matrices c{out.data_ptr<float>(), m, n, n, 1, m * n};
  return gemm(batch_count, a, b, c, 1, 0) ? out : hand_on();
}

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  static const auto op =
      find<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&)>("aten::linear");
  auto hand_on = [&] { return op.call_next_provider(kCPU, input, weight, bias); };
  const Tensor b = bias && bias->defined() ? *bias : Tensor();
  if (!takes({input, weight, b}) || input.dim() < 2 || weight.dim() != 2 ||
      input.size(-1) != weight.size(1) ||
      (b.defined() && (b.dim() != 1 || b.size(0) != weight.size(0)))) {
    return hand_on();
  }
  const int64_t k = input.size(-1), n = weight.size(0);
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end());
  sizes.back() = n;
  int64_t row_stride = 0;
  if (multiply_adds(sizes, k) <= kMaxHandedOnMultiplyAdds ||
      !ops::meta::mergeable(input, 0, input.dim() - 2, &row_stride)) {
    return hand_on();
  }
  const int64_t rows = input.numel() / k;
  Tensor out = new_float_empty(sizes);
  const Matrices a{input.data_ptr<float>(), rows, k, row_stride, input.stride(-1), 0};
  // weight [n, k] read as its transpose [k, n]: no copy.
  const Matrices w{weight.data_ptr<float>(), k, n, weight.stride(1), weight.stride(0), 0};
  const Tensor out2 = out.as_strided_view({rows, n}, {n, 1}, 0);
  return add_product_into(b, 1, a, w, out2, b.defined() ? 1.0 : 0.0, 1.0) ? out : hand_on();
}

}  // namespace

/// The number of BLAS calls the kernels made since the plugin was loaded (exported for the
/// tests, which check that a call was taken rather than handed on).
extern "C" __attribute__((visibility("default"))) int64_t loom_cpu_mkl_gemm_calls() {
  return g_gemm_calls.load(std::memory_order_relaxed);
}

/// The provider's priority: above cpu_onednn's (10) on Intel CPUs, where MKL's sgemm leads,
/// below it elsewhere (docs/design/cpu-providers.md has the measurements).
int provider_priority() {
  __builtin_cpu_init();
  return __builtin_cpu_is("intel") ? 20 : 5;
}

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("mkl", provider_priority());
  m.impl("mm", &mm);
  m.impl("mm.out", &mm_out);
  m.impl("bmm", &bmm);
  m.impl("bmm.out", &bmm_out);
  m.impl("addmm", &addmm);
  m.impl("addmm.out", &addmm_out);
  m.impl("baddbmm", &baddbmm);
  m.impl("matmul", &matmul);
  m.impl("linear", &linear);
}

}  // namespace loom::mkl
