// Reference CPU kernel: einsum. The equation is parsed into labels (loom/ops/meta/einsum.h,
// shared with the CUDA plugin, with the checks); each operand becomes a strided view over its
// labels (a repeated label sums its strides, i.e. takes the diagonal;
// a size-1 dim broadcast against a larger one gets stride 0). Operands are then contracted
// left to right, each pair as one batched GEMM ([batch, left, contracted] @ [batch,
// contracted, right]); labels that only one side has and nothing later needs are summed out
// first. Groups of labels that cannot be merged into one strided dim are copied first.
#include <array>
#include <optional>
#include <string>

#include "cpu/gemm.h"
#include "cpu/meta.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/einsum.h"

namespace loom::ops::cpu {
namespace {

using gemm::AccOf;
using gemm::dispatch;
using gemm::Elem;
using gemm::for_each_offset;
using gemm::row_major_strides;

/// An operand (or intermediate) as a strided view over distinct labels.
struct Term {
  Tensor t;                      // the data (strides below are in its elements)
  std::vector<int> labels;       // distinct labels, in dim order
  std::vector<int64_t> sizes;    // per label
  std::vector<int64_t> strides;  // per label (0 where broadcast)
  int find(int label) const {
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == label) return static_cast<int>(i);
    return -1;
  }
};

/// A contiguous tensor holding term summed over its labels not in keep, dims in keep's order
/// (every kept label must be in the term).
Term sum_to(std::string_view op, const Term& x, const std::vector<int>& keep) {
  std::vector<int64_t> iter_sizes, in_strides, acc_strides;
  Term out;
  out.labels = keep;
  for (int l : keep) out.sizes.push_back(x.sizes[x.find(l)]);
  out.strides = row_major_strides(out.sizes);
  for (size_t i = 0; i < keep.size(); ++i) {
    const int j = x.find(keep[i]);
    iter_sizes.push_back(x.sizes[j]);
    in_strides.push_back(x.strides[j]);
    acc_strides.push_back(out.strides[i]);
  }
  for (size_t j = 0; j < x.labels.size(); ++j) {
    if (std::find(keep.begin(), keep.end(), x.labels[j]) != keep.end()) continue;
    iter_sizes.push_back(x.sizes[j]);
    in_strides.push_back(x.strides[j]);
    acc_strides.push_back(0);
  }
  out.t = Tensor::empty(out.sizes, options_like(x.t, x.t.dtype()));
  if (is_meta(out.t)) return out;
  dispatch(op, x.t.dtype(), [&]<typename S>(S*) {
    using A = AccOf<S>;
    std::vector<A> acc(static_cast<size_t>(out.t.numel()), A(0));
    const S* in = static_cast<const S*>(x.t.data_ptr());
    for_each_offset<2>(iter_sizes, {acc_strides, in_strides},
                       [&](const auto& o) { acc[o[0]] += Elem<S>::load(in[o[1]]); });
    S* o = static_cast<S*>(out.t.data_ptr());
    for (size_t i = 0; i < acc.size(); ++i) o[i] = Elem<S>::store(acc[i]);
  });
  return out;
}

/// x without the labels that are neither in keep_if nor needed (summed out), else x itself.
Term drop_unneeded(std::string_view op, const Term& x, const Term& other,
                   const std::vector<bool>& needed) {
  std::vector<int> keep;
  for (int l : x.labels)
    if (needed[l] || other.find(l) >= 0) keep.push_back(l);
  if (keep.size() == x.labels.size()) return x;
  return sum_to(op, x, keep);
}

/// Merges labels [begin, end) of (sizes, strides) ordered by `order` into one dim, if the
/// strides allow it without a copy.
bool merge(const Term& x, const std::vector<int>& order, size_t begin, size_t end, int64_t* size,
           int64_t* stride) {
  *size = 1;
  *stride = 1;
  int64_t expect = -1;
  for (size_t i = end; i-- > begin;) {
    const int j = x.find(order[i]);
    const int64_t s = x.sizes[j], st = x.strides[j];
    *size *= s;
    if (s == 1) continue;
    if (expect < 0) {
      *stride = st;
    } else if (st != expect) {
      return false;
    }
    expect = st * s;
  }
  return true;
}

/// x as a 3-D [g0, g1, g2] view, the groups being consecutive runs of `order` (lengths n0,
/// n1, n2); copied into that order first when a group cannot be merged.
Tensor as_3d(std::string_view op, const Term& x, const std::vector<int>& order, size_t n0,
             size_t n1) {
  std::array<int64_t, 3> sz, st;
  const size_t cut[4] = {0, n0, n0 + n1, order.size()};
  bool ok = true;
  for (int g = 0; g < 3; ++g) ok &= merge(x, order, cut[g], cut[g + 1], &sz[g], &st[g]);
  if (ok) return x.t.as_strided_view(sz, st, x.t.storage_offset());
  const Term c = sum_to(op, x, order);
  for (int g = 0; g < 3; ++g) merge(c, order, cut[g], cut[g + 1], &sz[g], &st[g]);
  return c.t.as_strided_view(sz, st, 0);
}

/// The contraction of x and y, keeping the labels in needed (and those both still share
/// with later operands, which needed includes).
Term contract(std::string_view op, const Term& x0, const Term& y0,
              const std::vector<bool>& needed) {
  const Term x = drop_unneeded(op, x0, y0, needed);
  const Term y = drop_unneeded(op, y0, x, needed);
  std::vector<int> batch, left, contracted, right;
  for (int l : x.labels) {
    if (y.find(l) < 0) {
      left.push_back(l);
    } else {
      (needed[l] ? batch : contracted).push_back(l);
    }
  }
  for (int l : y.labels)
    if (x.find(l) < 0) right.push_back(l);
  std::vector<int> xo(batch), yo(batch);
  xo.insert(xo.end(), left.begin(), left.end());
  xo.insert(xo.end(), contracted.begin(), contracted.end());
  yo.insert(yo.end(), contracted.begin(), contracted.end());
  yo.insert(yo.end(), right.begin(), right.end());
  const Tensor a = as_3d(op, x, xo, batch.size(), left.size());
  const Tensor b = as_3d(op, y, yo, batch.size(), contracted.size());
  Term out;
  out.labels = batch;
  out.labels.insert(out.labels.end(), left.begin(), left.end());
  out.labels.insert(out.labels.end(), right.begin(), right.end());
  for (int l : out.labels)
    out.sizes.push_back(x.find(l) >= 0 ? x.sizes[x.find(l)] : y.sizes[y.find(l)]);
  out.strides = row_major_strides(out.sizes);
  out.t = Tensor::empty(out.sizes, options_like(x.t, x.t.dtype()));
  const Tensor c = out.t.as_strided_view({a.size(0), a.size(1), b.size(2)},
                                         {a.size(1) * b.size(2), b.size(2), 1}, 0);
  batched_gemm_into(op, a, b, c, Scalar(0), Scalar(1));
  return out;
}

Tensor einsum(std::string_view equation, TensorList tensors, std::optional<IntArrayRef> path) {
  constexpr std::string_view op = "einsum";
  const meta::EinsumEquation eq = meta::parse_einsum(equation, tensors);
  std::vector<Term> ops;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const meta::EinsumOperand& x = eq.operands[i];
    ops.push_back(Term{tensors[i], x.labels, x.sizes, x.strides});
  }
  const std::vector<int>& out_labels = eq.output;
  const int n_labels = eq.num_labels;

  Term cur = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::vector<bool> needed(static_cast<size_t>(n_labels), false);
    for (int l : out_labels) needed[l] = true;
    for (size_t j = i + 1; j < ops.size(); ++j)
      for (int l : ops[j].labels) needed[l] = true;
    cur = contract(op, cur, ops[i], needed);
  }
  // Sum what the output lacks; when nothing is summed the result is a permuted view.
  if (cur.labels.size() == out_labels.size()) {
    std::vector<int64_t> sz, st;
    for (int l : out_labels) {
      sz.push_back(cur.sizes[cur.find(l)]);
      st.push_back(cur.strides[cur.find(l)]);
    }
    if (ops.size() > 1) return cur.t.as_strided_view(sz, st, cur.t.storage_offset());
  }
  return sum_to(op, cur, out_labels).t;
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("einsum", &einsum);
}

}  // namespace loom::ops::cpu
