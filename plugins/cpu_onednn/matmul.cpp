// oneDNN kernels of the matmul family: mm, bmm, addmm, baddbmm, the out= forms of mm, bmm
// and addmm, linear and matmul, all on one oneDNN matmul primitive per layout (cached,
// Note [oneDNN matmul layouts]). Every call outside oneDNN's domain goes to the reference
// kernels of ops/core/cpu/linalg.cpp, so shapes, dtypes and error messages are theirs.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/linalg.h"
#include "loom/ops/provider/gemm_operands.h"
#include "onednn.h"

namespace loom::onednn {
namespace {

using dnnl::memory;

// Note [oneDNN matmul layouts]: oneDNN's fast matmul implementations (brgemm, or its jit
// sgemm) take row- or column-major matrices with a leading stride, batch dims laid out
// outside the matrices, and broadcast batch dims given as size 1. Anything else (a stride-0
// batch dim, a matrix strided in both dims, a column-major result) gets its reference
// implementation, "ref:any", slower than Loom's own GEMM. So each operand is described
// (1) with dense strides for its size-1 dims, whose strides mean nothing, (2) with a size-1
// dim where an input's batch dim has stride 0 (an expanded tensor), which oneDNN broadcasts,
// and (3) when oneDNN still picks its reference implementation, the primitive computes in
// row-major copies of the operands (reorders), made and copied back around each call.

/// Products of at most this many multiply-adds (all batches together) go to the reference
/// kernel, whose unpacked loop serves them in under a microsecond (a 16x4 by 4x8 layer:
/// 0.4 us, oneDNN 1.6 us); a oneDNN call has a fixed cost of about 1.5 us (cache key, memory
/// objects, execution), paid back above this size (16x16x16: 1.5 us either way).
constexpr int64_t kMaxReferenceMultiplyAdds = 16 * 16 * 16;

/// oneDNN's limit on the rank of a matmul operand.
constexpr size_t kMaxRank = 12;

/// One operand as oneDNN sees it: dims and strides (batch dims first), and its data.
struct Operand {
  memory::dims dims, strides;
  void* data = nullptr;
};

/// A matrix operand from raw geometry.
Operand matrix(void* data, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  return Operand{{rows, cols}, {row_stride, col_stride}, data};
}

/// t as an operand of rank `rank` (t.dim() <= rank): leading size-1 dims are prepended.
Operand operand_of(const Tensor& t, size_t rank) {
  const size_t lead = rank - static_cast<size_t>(t.dim());
  Operand o{memory::dims(lead, 1), memory::dims(lead, 0), t.data_ptr()};
  o.dims.insert(o.dims.end(), t.sizes().begin(), t.sizes().end());
  o.strides.insert(o.strides.end(), t.strides().begin(), t.strides().end());
  return o;
}

/// Gives the size-1 dims of o strides that make its layout plain (step 1 of the Note).
void normalize(Operand& o) {
  const size_t r = o.dims.size();
  memory::dims& d = o.dims;
  memory::dims& s = o.strides;
  // A size-1 matrix dim takes the stride that keeps the other one's layout: a single column
  // of a row-major matrix, a single row of a column-major one.
  if (d[r - 1] == 1) s[r - 1] = (s[r - 2] == 1 && d[r - 2] != 1) ? d[r - 2] : 1;
  if (d[r - 2] == 1) s[r - 2] = s[r - 1] == 1 ? d[r - 1] : 1;
  // A size-1 batch dim lies outside everything inside it.
  for (size_t i = r - 2; i-- > 0;) {
    if (d[i] != 1) continue;
    int64_t extent = 1;
    for (size_t j = i + 1; j < r; ++j) extent = std::max(extent, s[j] * d[j]);
    s[i] = extent;
  }
}

/// Turns a stride-0 batch dim of one input into a size-1 dim oneDNN broadcasts (step 2),
/// where the other input really has that dim.
void broadcast_batch(Operand& a, Operand& b) {
  for (size_t i = 0; i + 2 < a.dims.size(); ++i) {
    const bool a_real = a.dims[i] > 1 && a.strides[i] != 0;
    const bool b_real = b.dims[i] > 1 && b.strides[i] != 0;
    if (a.dims[i] > 1 && a.strides[i] == 0 && b_real) {
      a.dims[i] = 1;
    } else if (b.dims[i] > 1 && b.strides[i] == 0 && a_real) {
      b.dims[i] = 1;
    }
  }
}

memory::desc desc_of(const Operand& o) {
  return memory::desc(o.dims, memory::data_type::f32, o.strides);
}

/// The row-major descriptor of o's dims.
memory::desc plain_desc_of(const Operand& o) {
  memory::dims strides(o.dims.size(), 1);
  for (size_t i = o.dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * o.dims[i + 1];
  return memory::desc(o.dims, memory::data_type::f32, strides);
}

/// What the cache keeps beside a matmul primitive: the operands' own layouts, and whether
/// the primitive computes in row-major copies of them (step 3 of the Note).
struct Layouts {
  memory::desc a, b, c;
  bool copy_a = false, copy_b = false, copy_c = false;
};

/// Memory over o's data in its own layout `own`, or a copy in `want` when copy is set.
memory in_layout(const memory::desc& own, const memory::desc& want, void* data, bool copy) {
  memory m(own, engine(), data);
  if (!copy) return m;
  memory t(want, engine());
  reorder(m, t);
  return t;
}

/// c = alpha * (a @ b) [+ bias] [+ beta * c] on operands of one rank whose batch dims are
/// equal or broadcast (size 1); bias, when given, is a dense row [1, ..., 1, n] and then
/// alpha is 1. Returns false, having written nothing, when oneDNN has no primitive for it.
bool product_into(Operand a, Operand b, Operand c, const Operand* bias, float alpha, float beta) {
  broadcast_batch(a, b);
  normalize(a);
  normalize(b);
  normalize(c);
  Key key("matmul");
  key.add(IntArrayRef(a.dims)).add(IntArrayRef(a.strides));
  key.add(IntArrayRef(b.dims)).add(IntArrayRef(b.strides));
  key.add(IntArrayRef(c.dims)).add(IntArrayRef(c.strides));
  key.add(static_cast<int64_t>(bias != nullptr));
  key.add(static_cast<double>(alpha)).add(static_cast<double>(beta));
  std::shared_ptr<const CachedPrimitive> p;
  try {
    p = cached(key, [&] {
      dnnl::primitive_attr attr;
      if (alpha != 1) attr.set_output_scales(0, {alpha});
      if (beta != 0) {
        dnnl::post_ops ops;
        ops.append_sum(beta);
        attr.set_post_ops(ops);
      }
      auto make_pd = [&](const memory::desc& da, const memory::desc& db, const memory::desc& dc) {
        const auto d =
            bias ? dnnl::matmul::desc(da, db, desc_of(*bias), dc) : dnnl::matmul::desc(da, db, dc);
        return dnnl::matmul::primitive_desc(d, attr, engine());
      };
      auto layouts = std::make_shared<Layouts>();
      layouts->a = desc_of(a);
      layouts->b = desc_of(b);
      layouts->c = desc_of(c);
      auto pd = make_pd(layouts->a, layouts->b, layouts->c);
      if (std::string_view(pd.impl_info_str()).substr(0, 3) == "ref") {
        const memory::desc pa = plain_desc_of(a), pb = plain_desc_of(b), pc = plain_desc_of(c);
        layouts->copy_a = pa != layouts->a;
        layouts->copy_b = pb != layouts->b;
        layouts->copy_c = pc != layouts->c;
        pd = make_pd(pa, pb, pc);
      }
      return CachedPrimitive{dnnl::matmul(pd), pd, layouts};
    });
  } catch (const dnnl::error&) {
    return false;
  }
  const auto& l = *static_cast<const Layouts*>(p->extra.get());
  Args args{{DNNL_ARG_SRC, in_layout(l.a, p->pd.src_desc(), a.data, l.copy_a)},
            {DNNL_ARG_WEIGHTS, in_layout(l.b, p->pd.weights_desc(), b.data, l.copy_b)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(desc_of(*bias), engine(), bias->data));
  memory dst(l.c, engine(), c.data);
  if (!l.copy_c) {
    args.emplace(DNNL_ARG_DST, dst);
    execute(p->primitive, args);
    return true;
  }
  memory tmp = beta != 0 ? in_layout(l.c, p->pd.dst_desc(), c.data, true)
                         : memory(p->pd.dst_desc(), engine());
  args.emplace(DNNL_ARG_DST, tmp);
  execute(p->primitive, args);
  reorder(tmp, dst);
  return true;
}

// ---- the Loom side: which calls are taken, and their operands

using provider::broadcasts_to;
using provider::copy_broadcast;
using provider::multiply_adds;
using provider::new_float_empty;

/// True when out (already sized) can be written by oneDNN: no two elements share memory.
bool writable(const Tensor& out) {
  for (int64_t d = 0; d < out.dim(); ++d) {
    if (out.size(d) > 1 && out.stride(d) == 0) return false;
  }
  return true;
}

/// True when self (broadcast to out) is a dense row [n], [1, n], [1, 1, n]: oneDNN's bias.
bool is_bias_row(const Tensor& self, const Tensor& out) {
  const int64_t n = out.size(-1);
  if (self.dim() == 0 || self.size(-1) != n || (n > 1 && self.stride(-1) != 1)) return false;
  for (int64_t d = 0; d + 1 < self.dim(); ++d) {
    if (self.size(d) != 1) return false;
  }
  return true;
}

/// out = beta * self + alpha * (a @ b), self broadcast to out (checked by the caller). self
/// is oneDNN's bias when it is a row and beta = alpha = 1; otherwise it is copied into out
/// and added by a sum post-op. beta = 0 ignores self (NaN there does not propagate).
bool add_product_into(const Tensor& self, const Operand& a, const Operand& b, const Tensor& out,
                      const Scalar& beta, const Scalar& alpha) {
  const auto r = static_cast<size_t>(out.dim());
  const auto be = static_cast<float>(beta.to_double()), al = static_cast<float>(alpha.to_double());
  if (be == 0) return product_into(a, b, operand_of(out, r), nullptr, al, 0);
  if (be == 1 && al == 1 && is_bias_row(self, out)) {
    Operand bias{memory::dims(r, 1), memory::dims(r, out.size(-1)), self.data_ptr()};
    bias.dims[r - 1] = out.size(-1);
    bias.strides[r - 1] = 1;
    return product_into(a, b, operand_of(out, r), &bias, 1, 0);
  }
  copy_broadcast(self, out);
  return product_into(a, b, operand_of(out, r), nullptr, al, be);
}

// ---- mm, bmm

bool mm_shapes(const Tensor& self, const Tensor& mat2) {
  return provider::mm_shapes(self, mat2, kMaxReferenceMultiplyAdds);
}

bool bmm_shapes(const Tensor& self, const Tensor& mat2) {
  return provider::bmm_shapes(self, mat2, kMaxReferenceMultiplyAdds);
}

Tensor mm(const Tensor& self, const Tensor& mat2) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&)>("aten::mm");
  if (!takes({self, mat2}) || !mm_shapes(self, mat2))
    return op.call_next_provider(kCPU, self, mat2);
  Tensor out = new_float_empty({self.size(0), mat2.size(1)});
  if (!product_into(operand_of(self, 2), operand_of(mat2, 2), operand_of(out, 2), nullptr, 1, 0)) {
    return op.call_next_provider(kCPU, self, mat2);
  }
  return out;
}

Tensor bmm(const Tensor& self, const Tensor& mat2) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&)>("aten::bmm");
  if (!takes({self, mat2}) || !bmm_shapes(self, mat2)) {
    return op.call_next_provider(kCPU, self, mat2);
  }
  Tensor out = new_float_empty({self.size(0), self.size(1), mat2.size(2)});
  if (!product_into(operand_of(self, 3), operand_of(mat2, 3), operand_of(out, 3), nullptr, 1, 0)) {
    return op.call_next_provider(kCPU, self, mat2);
  }
  return out;
}

/// The out= forms of mm and bmm (shapes_ok: a call mm or bmm would take): out resized as the
/// reference does, handed on when it overlaps an input (the reference computes into a
/// temporary then).
Tensor product_out(
    const OperatorHandle::Typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>& op,
    std::string_view name, const Tensor& self, const Tensor& mat2, const Tensor& out,
    bool shapes_ok, std::vector<int64_t> sizes) {
  if (!shapes_ok || !provider::out_takes(out, self, mat2)) {
    return op.call_next_provider(kCPU, self, mat2, out);
  }
  resize_output(name, out, sizes);
  const auto r = sizes.size();
  if (!takes({out}) || !writable(out) ||
      !product_into(operand_of(self, r), operand_of(mat2, r), operand_of(out, r), nullptr, 1, 0)) {
    return op.call_next_provider(kCPU, self, mat2, out);
  }
  out.bump_version();
  return out;
}

Tensor mm_out(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Tensor&, const Tensor&)>("aten::mm.out");
  const bool ok = takes({self, mat2}) && mm_shapes(self, mat2);
  return product_out(
      op, "mm.out", self, mat2, out, ok,
      ok ? std::vector<int64_t>{self.size(0), mat2.size(1)} : std::vector<int64_t>{});
}

Tensor bmm_out(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Tensor&, const Tensor&)>("aten::bmm.out");
  const bool ok = takes({self, mat2}) && bmm_shapes(self, mat2);
  return product_out(
      op, "bmm.out", self, mat2, out, ok,
      ok ? std::vector<int64_t>{self.size(0), self.size(1), mat2.size(2)} : std::vector<int64_t>{});
}

// ---- addmm, baddbmm

using AddSig = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  static const auto op = onednn::op<AddSig>("aten::addmm");
  if (!takes({self, mat1, mat2}) || !mm_shapes(mat1, mat2) ||
      !broadcasts_to(self, {mat1.size(0), mat2.size(1)})) {
    return op.call_next_provider(kCPU, self, mat1, mat2, beta, alpha);
  }
  Tensor out = new_float_empty({mat1.size(0), mat2.size(1)});
  if (!add_product_into(self, operand_of(mat1, 2), operand_of(mat2, 2), out, beta, alpha)) {
    return op.call_next_provider(kCPU, self, mat1, mat2, beta, alpha);
  }
  return out;
}

Tensor addmm_out(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                 const Scalar& alpha, const Tensor& out) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&,
                        const Tensor&)>("aten::addmm.out");
  auto hand_on = [&] { return op.call_next_provider(kCPU, self, mat1, mat2, beta, alpha, out); };
  if (!takes({self, mat1, mat2}) || !mm_shapes(mat1, mat2) ||
      !provider::out_takes(out, mat1, mat2)) {
    return hand_on();
  }
  const std::vector<int64_t> sizes{mat1.size(0), mat2.size(1)};
  if (!broadcasts_to(self, sizes)) return hand_on();
  // out may be self (addmm_ spelled as out=): then the sum post-op reads it in place.
  const bool out_is_self = provider::out_is_self(out, self, sizes);
  if (!out_is_self && provider::overlaps(out, self)) return hand_on();
  resize_output("addmm.out", out, sizes);
  if (!takes({out}) || !writable(out)) return hand_on();
  bool done;
  if (out_is_self) {
    done =
        product_into(operand_of(mat1, 2), operand_of(mat2, 2), operand_of(out, 2), nullptr,
                     static_cast<float>(alpha.to_double()), static_cast<float>(beta.to_double()));
  } else {
    done = add_product_into(self, operand_of(mat1, 2), operand_of(mat2, 2), out, beta, alpha);
  }
  if (!done) return hand_on();
  out.bump_version();
  return out;
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  static const auto op = onednn::op<AddSig>("aten::baddbmm");
  if (!takes({self, batch1, batch2}) || !bmm_shapes(batch1, batch2) ||
      !broadcasts_to(self, {batch1.size(0), batch1.size(1), batch2.size(2)})) {
    return op.call_next_provider(kCPU, self, batch1, batch2, beta, alpha);
  }
  Tensor out = new_float_empty({batch1.size(0), batch1.size(1), batch2.size(2)});
  if (!add_product_into(self, operand_of(batch1, 3), operand_of(batch2, 3), out, beta, alpha)) {
    return op.call_next_provider(kCPU, self, batch1, batch2, beta, alpha);
  }
  return out;
}

// ---- matmul, linear

/// out = a @ b for a of rank >= 2 and b [k, n]: a's leading dims folded into rows when they
/// merge (one GEMM, as the reference does), else b broadcast over a's batch dims.
bool folded_product_into(const Tensor& a, const Operand& b, const Tensor& out, const Tensor& bias) {
  const int64_t k = a.size(-1), n = out.size(-1);
  int64_t row_stride = 0;
  const Scalar one(1);
  if (a.dim() == 2 || ops::meta::mergeable(a, 0, a.dim() - 2, &row_stride)) {
    const int64_t rows = a.numel() / k;
    const Operand a2 =
        a.dim() == 2 ? operand_of(a, 2) : matrix(a.data_ptr(), rows, k, row_stride, a.stride(-1));
    if (!bias.defined()) {
      return product_into(a2, b, matrix(out.data_ptr(), rows, n, n, 1), nullptr, 1, 0);
    }
    const Tensor out2 = out.dim() == 2 ? out : out.as_strided_view({rows, n}, {n, 1}, 0);
    return add_product_into(bias, a2, b, out2, one, one);
  }
  const auto r = static_cast<size_t>(a.dim());
  if (r > kMaxRank) return false;
  Operand b_r = b;
  b_r.dims.insert(b_r.dims.begin(), r - 2, 1);
  b_r.strides.insert(b_r.strides.begin(), r - 2, 0);
  if (bias.defined()) {
    if (r != 3) return false;  // copy_broadcast is 2-D and 3-D
    return add_product_into(bias, operand_of(a, r), b_r, out, one, one);
  }
  return product_into(operand_of(a, r), b_r, operand_of(out, r), nullptr, 1, 0);
}

Tensor matmul(const Tensor& self, const Tensor& other) {
  static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&)>("aten::matmul");
  auto hand_on = [&] { return op.call_next_provider(kCPU, self, other); };
  const int64_t da = self.dim(), db = other.dim();
  if (!takes({self, other}) || da < 2 || db < 2 || self.size(-1) != other.size(-2)) {
    return hand_on();
  }
  if (static_cast<size_t>(std::max(da, db)) > kMaxRank) return hand_on();
  std::vector<int64_t> sizes;
  // Batch dims that do not broadcast: the reference's error.
  if (!provider::matmul_batch_sizes(self, other, &sizes)) return hand_on();
  sizes.push_back(self.size(-2));
  sizes.push_back(other.size(-1));
  if (multiply_adds(sizes, self.size(-1)) <= kMaxReferenceMultiplyAdds) return hand_on();
  Tensor out = new_float_empty(sizes);
  const bool done =
      db == 2 ? folded_product_into(self, operand_of(other, 2), out, Tensor())
              : product_into(operand_of(self, sizes.size()), operand_of(other, sizes.size()),
                             operand_of(out, sizes.size()), nullptr, 1, 0);
  return done ? out : hand_on();
}

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  static const auto op =
      onednn::op<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&)>(
          "aten::linear");
  const Tensor b = bias && bias->defined() ? *bias : Tensor();
  if (!takes({input, weight, b}) || input.dim() < 2 || weight.dim() != 2 ||
      input.size(-1) != weight.size(1) ||
      (b.defined() && (b.dim() != 1 || b.size(0) != weight.size(0)))) {
    return op.call_next_provider(kCPU, input, weight, bias);
  }
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end());
  sizes.back() = weight.size(0);
  if (multiply_adds(sizes, input.size(-1)) <= kMaxReferenceMultiplyAdds) {
    return op.call_next_provider(kCPU, input, weight, bias);
  }
  Tensor out = new_float_empty(sizes);
  // weight [out, in] is read as its transpose [in, out]: no copy, a column-major matrix.
  const Operand wt =
      matrix(weight.data_ptr(), weight.size(1), weight.size(0), weight.stride(1), weight.stride(0));
  if (!folded_product_into(input, wt, out, b)) {
    return op.call_next_provider(kCPU, input, weight, bias);
  }
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("onednn", /*priority=*/10);
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

}  // namespace loom::onednn
