#pragma once
/// @file
/// einsum written over other ops (views, sum.dim_IntList, reshape, bmm, contiguous), so it
/// runs on any device that has those: the CUDA plugin registers it as its einsum kernel. It
/// includes only Loom's public headers, so tests/plugins/cuda/libs_test.cpp also runs it on
/// CPU tensors against the reference kernel (this machine has no GPU).
///
/// The equation's front end, checks and messages are the reference's: both parse with
/// loom/ops/meta/einsum.h (its file comment gives the rules). Operands are then contracted
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
#include "loom/ops/meta/einsum.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"

namespace loom::cuda::libs {
namespace einsum_detail {

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
  const ops::meta::EinsumEquation eq = ops::meta::parse_einsum(equation, tensors);
  // Each operand as a view with one dim per distinct label (diagonals for repeats, stride 0
  // for broadcast dims).
  std::vector<Term> operands;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ops::meta::EinsumOperand& x = eq.operands[i];
    operands.push_back(Term{
        tensors[i].as_strided_view(x.sizes, x.strides, tensors[i].storage_offset()), x.labels});
  }
  const std::vector<int>& out_labels = eq.output;
  const auto n_labels = static_cast<size_t>(eq.num_labels);
  std::vector<bool> in_output(n_labels, false);
  for (int l : out_labels) in_output[static_cast<size_t>(l)] = true;
  Term cur = operands[0];
  for (size_t i = 1; i < operands.size(); ++i) {
    std::vector<bool> needed = in_output;
    for (size_t j = i + 1; j < operands.size(); ++j)
      for (int l : operands[j].labels) needed[static_cast<size_t>(l)] = true;
    cur = contract(cur, operands[i], needed);
  }
  cur = sum_out(cur, in_output);
  return loom::contiguous(permuted(cur, out_labels));
}

}  // namespace loom::cuda::libs
