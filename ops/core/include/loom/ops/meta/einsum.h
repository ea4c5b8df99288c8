#pragma once
/// @file
/// einsum: argument checks, parameter parsing (the equation) and output shapes every backend
/// of this op shares, so that error messages are word for word the same on every device. The
/// wording is PyTorch's.
///
/// The rules: labels a-z, A-Z and one "..." per term; the ellipsis covers the dims a term's
/// named subscripts leave over, right-aligned across operands as in broadcasting; a repeated
/// label in a term is its diagonal (its strides summed); a size-1 dim broadcasts against a
/// larger one (stride 0); the implicit output is the ellipsis, then the labels seen once, in
/// the order A-Z a-z. parse_einsum turns an equation and its operands into one strided view
/// per operand over distinct labels and the output's labels; how the operands are then
/// contracted is each backend's business.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/array_ref.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/core/tensor.h"

namespace loom::ops::meta {

/// The number of letter labels: A-Z (0-25) then a-z (26-51); the ellipsis's dims follow.
inline constexpr int kEinsumLetters = 52;

/// The label parse_einsum_term gives "...".
inline constexpr int kEinsumEllipsis = -1;

/// The label of a subscript letter.
inline int einsum_label_of(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }

/// A label as the messages print it: its letter, or "..." for a dim of the ellipsis.
inline std::string einsum_label_name(int l) {
  if (l >= kEinsumLetters) return "...";
  return std::string(1, static_cast<char>(l < 26 ? 'A' + l : 'a' + l - 26));
}

/// Parses the subscripts eq[begin, end) of one term ("ij", "...ij", "b...") into labels,
/// kEinsumEllipsis for "..."; `what` names the term in messages ("operand 1", "the output").
inline std::vector<int> parse_einsum_term(std::string_view eq, size_t begin, size_t end,
                                          std::string_view what) {
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
      out.push_back(kEinsumEllipsis);
      i += 2;
      continue;
    }
    LOOM_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'),
               "einsum(): invalid subscript given at index ", i,
               " in the equation string, subscripts must be in [a-zA-Z]");
    out.push_back(einsum_label_of(c));
  }
  return out;
}

/// One operand as a strided view over distinct labels: per label (in dim order) its size,
/// broadcast to the label's size, and its stride in the operand's elements (0 where broadcast;
/// the sum of the strides of a repeated label's dims).
struct EinsumOperand {
  std::vector<int> labels;       ///< distinct labels, in dim order
  std::vector<int64_t> sizes;    ///< per label
  std::vector<int64_t> strides;  ///< per label
};

/// A parsed einsum call: each operand's view and the output's labels.
struct EinsumEquation {
  std::vector<EinsumOperand> operands;  ///< one per tensor, in order
  std::vector<int> output;              ///< the output's labels, in dim order
  int num_labels = kEinsumLetters;      ///< labels are in [0, num_labels)
};

/// Checks einsum's operands (defined, one device, one dtype) and parses equation against
/// them (the file comment's rules), with PyTorch's messages.
inline EinsumEquation parse_einsum(std::string_view equation, ArrayRef<Tensor> tensors) {
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
  // Split "lhs->rhs" and the lhs at commas.
  const size_t arrow = equation.find("->");
  const size_t lhs_end = arrow == std::string_view::npos ? equation.size() : arrow;
  std::vector<std::vector<int>> terms;
  for (size_t b = 0;;) {
    const size_t comma = std::min(equation.find(',', b), lhs_end);
    terms.push_back(parse_einsum_term(equation, b, comma, str_cat("operand ", terms.size())));
    if (comma >= lhs_end) break;
    b = comma + 1;
  }
  LOOM_CHECK(terms.size() <= tensors.size(),
             "einsum(): fewer operands were provided than specified in the equation (",
             tensors.size(), " given, ", terms.size(), " in the equation)");
  LOOM_CHECK(terms.size() >= tensors.size(),
             "einsum(): more operands were provided than specified in the equation (",
             tensors.size(), " given, ", terms.size(), " in the equation)");

  // Dims per term; the ellipsis covers the dims its subscripts leave over, right-aligned.
  int64_t ell_dims = 0;
  std::vector<int64_t> term_ell(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    const bool has_ell = std::count(terms[i].begin(), terms[i].end(), kEinsumEllipsis) > 0;
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
  EinsumEquation eq;
  eq.num_labels = kEinsumLetters + static_cast<int>(ell_dims);
  std::vector<int64_t> size_of(static_cast<size_t>(eq.num_labels), -1);
  std::vector<int> count(static_cast<size_t>(eq.num_labels), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    EinsumOperand x;
    int64_t d = 0;
    auto add_dim = [&](int l) {
      const int64_t s = tensors[i].size(d), st = tensors[i].stride(d);
      ++d;
      ++count[static_cast<size_t>(l)];
      const auto it = std::find(x.labels.begin(), x.labels.end(), l);
      if (it == x.labels.end()) {
        x.labels.push_back(l);
        x.sizes.push_back(s);
        x.strides.push_back(st);
        return;
      }
      const auto j = static_cast<size_t>(it - x.labels.begin());
      LOOM_CHECK(x.sizes[j] == s, "einsum(): subscript ", einsum_label_name(l),
                 " is repeated for operand ", i, " but the sizes don't match, ", x.sizes[j],
                 " != ", s);
      x.strides[j] += st;  // the diagonal
    };
    for (int l : terms[i]) {
      if (l != kEinsumEllipsis) {
        add_dim(l);
        continue;
      }
      for (int64_t e = ell_dims - term_ell[i]; e < ell_dims; ++e) {
        add_dim(kEinsumLetters + static_cast<int>(e));
      }
    }
    for (size_t j = 0; j < x.labels.size(); ++j) {
      int64_t& g = size_of[static_cast<size_t>(x.labels[j])];
      const int64_t s = x.sizes[j];
      LOOM_CHECK(g < 0 || g == s || g == 1 || s == 1,
                 "einsum(): operands do not broadcast: subscript ", einsum_label_name(x.labels[j]),
                 " has size ", s, " for operand ", i, " but size ", g, " for an earlier operand");
      if (g < 0 || g == 1) g = s;
    }
    eq.operands.push_back(std::move(x));
  }
  // Size-1 dims broadcast to the label's size (stride 0).
  for (EinsumOperand& x : eq.operands) {
    for (size_t j = 0; j < x.labels.size(); ++j) {
      const int64_t g = size_of[static_cast<size_t>(x.labels[j])];
      if (x.sizes[j] != g) {
        x.sizes[j] = g;
        x.strides[j] = 0;
      }
    }
  }

  // The output labels: explicit after "->", else the ellipsis then the labels seen once.
  if (arrow != std::string_view::npos) {
    for (int l : parse_einsum_term(equation, arrow + 2, equation.size(), "the output")) {
      if (l == kEinsumEllipsis) {
        for (int e = 0; e < ell_dims; ++e) eq.output.push_back(kEinsumLetters + e);
        continue;
      }
      LOOM_CHECK(count[static_cast<size_t>(l)] > 0, "einsum(): output subscript ",
                 einsum_label_name(l), " does not appear in the equation for any input operand");
      LOOM_CHECK(std::find(eq.output.begin(), eq.output.end(), l) == eq.output.end(),
                 "einsum(): output subscript ", einsum_label_name(l),
                 " appears more than once in the output");
      eq.output.push_back(l);
    }
  } else {
    for (int e = 0; e < ell_dims; ++e) eq.output.push_back(kEinsumLetters + e);
    for (int l = 0; l < kEinsumLetters; ++l) {
      if (count[static_cast<size_t>(l)] == 1) eq.output.push_back(l);
    }
  }
  return eq;
}

}  // namespace loom::ops::meta
