#pragma once
/// @file
/// einsum written over other ops (views, sum.dim_IntList, reshape, bmm, contiguous), so it
/// runs on any device that has those: the CUDA plugin registers it as its einsum kernel. It
/// includes only Loom's public headers, so tests/plugins/cuda/libs_test.cpp also runs it on
/// CPU tensors against the reference kernel (this machine has no GPU).
///
/// The equation's front end is the reference's (ops/core/cpu/linalg_einsum.cpp): labels a-z,
/// A-Z and one "..." per term, right-aligned across operands; a repeated label in a term is
/// its diagonal (its strides summed); a size-1 dim broadcasts (stride 0); the implicit output
/// is the ellipsis, then the labels seen once, in order A-Z a-z. Operands are then contracted
/// left to right, each pair as one bmm [batch, left, contracted] @ [batch, contracted, right]
/// after the labels only one side has and nothing later needs are summed out.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor.h"
#include "loom/ops/linalg.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"

namespace loom::cuda::libs {
namespace einsum_detail {

inline constexpr int kLetters = 52;  // A-Z then a-z
inline constexpr int kEllipsis = -1;

inline int label_of(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }
inline std::string label_name(int l) {
  if (l >= kLetters) return "...";
  return std::string(1, static_cast<char>(l < 26 ? 'A' + l : 'a' + l - 26));
}

/// An operand or intermediate: a tensor (or strided view) with one distinct label per dim.
struct Term {
  Tensor t;
  std::vector<int> labels;
  int find(int label) const {
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == label) return static_cast<int>(i);
    return -1;
  }
};

inline std::vector<int> parse_term(std::string_view eq, size_t begin, size_t end,
                                   const std::string& what) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = begin; i < end; ++i) {
    const char c = eq[i];
    if (c == ' ') continue;
    if (c == '.') {
      LOOM_CHECK(!ellipsis, "einsum(): found more than one ellipsis ('...') in ", what);
      LOOM_CHECK(i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.', "einsum(): found '.' for ",
                 what, " that is not part of any ellipsis");
      ellipsis = true;
      out.push_back(kEllipsis);
      i += 2;
      continue;
    }
    LOOM_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'),
               "einsum(): invalid subscript given at index ", i,
               " in the equation string, subscripts must be in [a-zA-Z]");
    out.push_back(label_of(c));
  }
  return out;
}

/// x summed over its labels that keep does not hold.
inline Term sum_out(const Term& x, const std::vector<bool>& keep) {
  std::vector<int64_t> dims;
  Term out;
  for (size_t j = 0; j < x.labels.size(); ++j) {
    if (keep[static_cast<size_t>(x.labels[j])]) {
      out.labels.push_back(x.labels[j]);
    } else {
      dims.push_back(static_cast<int64_t>(j));
    }
  }
  if (dims.empty()) return x;
  out.t = loom::sum(x.t, dims);
  return out;
}

/// x's dims in the order of labels (each of which x has), as a view.
inline Tensor permuted(const Term& x, const std::vector<int>& labels) {
  std::vector<int64_t> sizes, strides;
  for (int l : labels) {
    const int j = x.find(l);
    sizes.push_back(x.t.size(j));
    strides.push_back(x.t.stride(j));
  }
  return x.t.as_strided_view(sizes, strides, x.t.storage_offset());
}

inline int64_t product(const Term& x, const std::vector<int>& labels) {
  int64_t n = 1;
  for (int l : labels) n *= x.t.size(x.find(l));
  return n;
}

/// The contraction of a and b, keeping the labels `needed` holds (the output's and later
/// operands'); both have every label at its full size already (broadcast dims stride 0).
inline Term contract(const Term& a0, const Term& b0, const std::vector<bool>& needed) {
  // Labels only one side has and nothing needs are summed out first.
  std::vector<bool> keep_a = needed, keep_b = needed;
  for (int l : b0.labels) keep_a[static_cast<size_t>(l)] = true;
  for (int l : a0.labels) keep_b[static_cast<size_t>(l)] = true;
  const Term a = sum_out(a0, keep_a), b = sum_out(b0, keep_b);
  std::vector<int> batch, left, contracted, right;
  for (int l : a.labels) {
    if (b.find(l) < 0) {
      left.push_back(l);
    } else if (needed[static_cast<size_t>(l)]) {
      batch.push_back(l);
    } else {
      contracted.push_back(l);
    }
  }
  for (int l : b.labels)
    if (a.find(l) < 0) right.push_back(l);
  std::vector<int> la(batch), lb(batch);
  la.insert(la.end(), left.begin(), left.end());
  la.insert(la.end(), contracted.begin(), contracted.end());
  lb.insert(lb.end(), contracted.begin(), contracted.end());
  lb.insert(lb.end(), right.begin(), right.end());
  const int64_t B = product(a, batch), L = product(a, left), K = product(a, contracted),
                R = product(b, right);
  const Tensor a3 = loom::reshape(loom::contiguous(permuted(a, la)), {B, L, K});
  const Tensor b3 = loom::reshape(loom::contiguous(permuted(b, lb)), {B, K, R});
  const Tensor c = loom::bmm(a3, b3);
  Term out;
  std::vector<int64_t> sizes;
  for (int l : batch) sizes.push_back(a.t.size(a.find(l)));
  for (int l : left) sizes.push_back(a.t.size(a.find(l)));
  for (int l : right) sizes.push_back(b.t.size(b.find(l)));
  out.labels = batch;
  out.labels.insert(out.labels.end(), left.begin(), left.end());
  out.labels.insert(out.labels.end(), right.begin(), right.end());
  out.t = loom::reshape(c, sizes);
  return out;
}

}  // namespace einsum_detail

/// einsum(equation, tensors) over views, sums and bmm (see the file comment).
inline Tensor einsum_by_bmm(std::string_view equation, TensorList tensors) {
  using namespace einsum_detail;
  LOOM_CHECK(!tensors.empty(), "einsum(): must provide at least one operand");
  for (size_t i = 0; i < tensors.size(); ++i) {
    LOOM_CHECK_T(TypeError, tensors[i].defined(), "einsum(): operand ", i,
                 " is an undefined tensor");
    LOOM_CHECK_T(DeviceError, tensors[i].device() == tensors[0].device(),
                 "einsum(): expected all operands on the same device, got operand 0 on ",
                 tensors[0].device().str(), " and operand ", i, " on ", tensors[i].device().str());
    LOOM_CHECK_T(TypeError, tensors[i].dtype() == tensors[0].dtype(),
                 "einsum(): expected all operands to have the same dtype, but got ",
                 dtype_name(tensors[0].dtype()), " for operand 0 and ",
                 dtype_name(tensors[i].dtype()), " for operand ", i);
  }
  const size_t arrow = equation.find("->");
  const size_t lhs_end = arrow == std::string_view::npos ? equation.size() : arrow;
  std::vector<std::vector<int>> terms;
  for (size_t b = 0;;) {
    const size_t comma = std::min(equation.find(',', b), lhs_end);
    terms.push_back(parse_term(equation, b, comma, str_cat("operand ", terms.size())));
    if (comma >= lhs_end) break;
    b = comma + 1;
  }
  LOOM_CHECK(terms.size() <= tensors.size(),
             "einsum(): fewer operands were provided than specified in the equation (",
             tensors.size(), " given, ", terms.size(), " in the equation)");
  LOOM_CHECK(terms.size() >= tensors.size(),
             "einsum(): more operands were provided than specified in the equation (",
             tensors.size(), " given, ", terms.size(), " in the equation)");
  // The ellipsis covers the dims the named subscripts leave over, right-aligned.
  int64_t ell_dims = 0;
  std::vector<int64_t> term_ell(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    const bool has_ell = std::count(terms[i].begin(), terms[i].end(), kEllipsis) > 0;
    const auto named = static_cast<int64_t>(terms[i].size()) - (has_ell ? 1 : 0);
    const int64_t nd = tensors[i].dim();
    if (has_ell) {
      LOOM_CHECK(named <= nd, "einsum(): the number of subscripts in the equation (", named,
                 ") is more than the number of dimensions (", nd, ") for operand ", i);
      term_ell[i] = nd - named;
    } else {
      LOOM_CHECK(named == nd, "einsum(): the number of subscripts in the equation (", named,
                 ") does not match the number of dimensions (", nd, ") for operand ", i,
                 " and no ellipsis was given");
    }
    ell_dims = std::max(ell_dims, term_ell[i]);
  }
  const auto n_labels = static_cast<size_t>(kLetters + ell_dims);
  std::vector<int64_t> size_of(n_labels, -1);
  std::vector<int> count(n_labels, 0);
  // Each operand as a view with one dim per distinct label (diagonals for repeats).
  std::vector<Term> ops;
  std::vector<std::vector<int64_t>> op_sizes, op_strides;
  for (size_t i = 0; i < terms.size(); ++i) {
    Term x;
    std::vector<int64_t> sizes, strides;
    int64_t d = 0;
    auto add_dim = [&](int l) {
      const int64_t s = tensors[i].size(d), st = tensors[i].stride(d);
      ++d;
      ++count[static_cast<size_t>(l)];
      const int j = x.find(l);
      if (j < 0) {
        x.labels.push_back(l);
        sizes.push_back(s);
        strides.push_back(st);
        return;
      }
      LOOM_CHECK(sizes[static_cast<size_t>(j)] == s, "einsum(): subscript ", label_name(l),
                 " is repeated for operand ", i, " but the sizes don't match, ",
                 sizes[static_cast<size_t>(j)], " != ", s);
      strides[static_cast<size_t>(j)] += st;  // the diagonal
    };
    for (int l : terms[i]) {
      if (l != kEllipsis) {
        add_dim(l);
        continue;
      }
      for (int64_t e = ell_dims - term_ell[i]; e < ell_dims; ++e) {
        add_dim(kLetters + static_cast<int>(e));
      }
    }
    for (size_t j = 0; j < x.labels.size(); ++j) {
      int64_t& g = size_of[static_cast<size_t>(x.labels[j])];
      const int64_t s = sizes[j];
      LOOM_CHECK(g < 0 || g == s || g == 1 || s == 1,
                 "einsum(): operands do not broadcast: subscript ", label_name(x.labels[j]),
                 " has size ", s, " for operand ", i, " but size ", g, " for an earlier operand");
      if (g < 0 || g == 1) g = s;
    }
    x.t = tensors[i];
    ops.push_back(std::move(x));
    op_sizes.push_back(std::move(sizes));
    op_strides.push_back(std::move(strides));
  }
  // Size-1 dims broadcast to the label's size (stride 0).
  for (size_t i = 0; i < ops.size(); ++i) {
    for (size_t j = 0; j < ops[i].labels.size(); ++j) {
      const int64_t g = size_of[static_cast<size_t>(ops[i].labels[j])];
      if (op_sizes[i][j] != g) {
        op_sizes[i][j] = g;
        op_strides[i][j] = 0;
      }
    }
    ops[i].t = tensors[i].as_strided_view(op_sizes[i], op_strides[i], tensors[i].storage_offset());
  }
  std::vector<int> out_labels;
  if (arrow != std::string_view::npos) {
    for (int l : parse_term(equation, arrow + 2, equation.size(), "the output")) {
      if (l == kEllipsis) {
        for (int e = 0; e < ell_dims; ++e) out_labels.push_back(kLetters + e);
        continue;
      }
      LOOM_CHECK(count[static_cast<size_t>(l)] > 0, "einsum(): output subscript ", label_name(l),
                 " does not appear in the equation for any input operand");
      LOOM_CHECK(std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end(),
                 "einsum(): output subscript ", label_name(l),
                 " appears more than once in the output");
      out_labels.push_back(l);
    }
  } else {
    for (int e = 0; e < ell_dims; ++e) out_labels.push_back(kLetters + e);
    for (int l = 0; l < kLetters; ++l)
      if (count[static_cast<size_t>(l)] == 1) out_labels.push_back(l);
  }
  std::vector<bool> in_output(n_labels, false);
  for (int l : out_labels) in_output[static_cast<size_t>(l)] = true;
  Term cur = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::vector<bool> needed = in_output;
    for (size_t j = i + 1; j < ops.size(); ++j)
      for (int l : ops[j].labels) needed[static_cast<size_t>(l)] = true;
    cur = contract(cur, ops[i], needed);
  }
  cur = sum_out(cur, in_output);
  return loom::contiguous(permuted(cur, out_labels));
}

}  // namespace loom::cuda::libs
