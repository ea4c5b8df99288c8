// Derivative formulas of the linear-algebra family (Note [Derivative kernels] in
// loom/autograd/derivative.h), as PyTorch's derivatives.yaml writes them. matmul, linear
// and einsum have kernels of their own (not composites), so they get formulas too: linear's
// is one node (it sits on every MLP's path), einsum's is einsum again.
#include <algorithm>
#include <cctype>
#include <string>

#include "autograd/common.h"
#include "loom/autograd/derivative.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom {
namespace {
using autograd::BackwardContext;
using autograd::variable_list;
using formulas::scaled;

// t's last two dims swapped.
Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

// ---- matmul

// The gradients of matmul(a, b) (every rank combination, broadcast batch dims) for grad g.
// The engine sums them to a's and b's shapes where the batch dims were broadcast.
variable_list matmul_backward(const Tensor& g, const Tensor& a, const Tensor& b, bool need_a,
                              bool need_b) {
  const int64_t da = a.dim(), db = b.dim();
  Tensor ga, gb;
  if (da == 1 && db == 1) {  // dot
    if (need_a) ga = g * b;
    if (need_b) gb = g * a;
  } else if (da == 2 && db == 1) {  // mv
    if (need_a) ga = outer(g, b);
    if (need_b) gb = mv(a.t(), g);
  } else if (da == 1 && db == 2) {  // [k] @ [k, n]
    if (need_a) ga = mv(b, g);
    if (need_b) gb = outer(a, g);
  } else if (da == 2 && db == 2) {  // mm
    if (need_a) ga = g.mm(b.t());
    if (need_b) gb = a.t().mm(g);
  } else if (da >= 3 && db <= 2) {
    // [..., m, k] @ [k, n] (or [k]): b's gradient is one GEMM over the folded rows.
    const Tensor B = db == 1 ? b.unsqueeze(-1) : b;
    const Tensor G = db == 1 ? g.unsqueeze(-1) : g;
    if (need_a) ga = matmul(G, B.t());
    if (need_b) {
      const int64_t k = a.size(-1);
      gb = a.reshape({-1, k}).t().mm(G.reshape({-1, G.size(-1)}));
      if (db == 1) gb = gb.squeeze(-1);
    }
  } else {
    // Batched: 1-D operands become a row / a column, dropped again afterwards.
    const Tensor A = da == 1 ? a.unsqueeze(0) : a;
    const Tensor B = db == 1 ? b.unsqueeze(-1) : b;
    Tensor G = db == 1 ? g.unsqueeze(-1) : g;
    if (da == 1) G = G.unsqueeze(-2);
    if (need_a) {
      ga = matmul(G, mT(B));
      if (da == 1) ga = ga.squeeze(-2);
    }
    if (need_b) {
      gb = matmul(mT(A), G);
      if (db == 1) gb = gb.squeeze(-1);
    }
  }
  return {ga, gb};
}

// ---- linear

// out = input @ weight^T + bias as one node: grad_input = grad @ weight, grad_weight =
// grad^T @ input over the folded leading dims, grad_bias = grad summed over them.
variable_list linear_backward(BackwardContext& c) {
  const Tensor& g = c.grad();
  const bool need_x = c.needs_grad(0), need_w = c.needs_grad(1), need_b = c.needs_grad(2);
  const Tensor w = need_x ? c.saved("weight") : Tensor();
  const Tensor x = need_w ? c.saved("input") : Tensor();
  const IntArrayRef xs = c.input_sizes(0), ws = c.input_sizes(1);
  Tensor gx, gw, gb;
  if (ws.size() == 1) {  // weight [in]: out = input @ weight has input's leading dims
    if (need_x) gx = g.unsqueeze(-1) * w;
    if (need_w) gw = xs.size() == 1 ? g * x : mv(x.reshape({-1, xs.back()}).t(), g.reshape({-1}));
    if (need_b) gb = g;
    return {gx, gw, gb};
  }
  const int64_t out_features = ws[0];
  if (xs.size() == 1) {  // input [in]: out [out]
    if (need_x) gx = mv(w.t(), g);
    if (need_w) gw = outer(g, x);
    if (need_b) gb = g;
    return {gx, gw, gb};
  }
  const Tensor g2 = xs.size() == 2 ? g : g.reshape({-1, out_features});
  if (need_x) gx = xs.size() == 2 ? g.mm(w) : matmul(g, w);
  if (need_w) gw = g2.t().mm(xs.size() == 2 ? x : x.reshape({-1, xs.back()}));
  if (need_b) {
    const IntArrayRef bs = c.input_sizes(2);
    // The usual [out] bias: one reduction; any other broadcast shape is left to the engine.
    gb = bs.size() == 1 && bs[0] == out_features ? g2.sum({0}) : g;
  }
  return {gx, gw, gb};
}

// ---- einsum

// One operand's or the output's subscripts, each label a letter (an ellipsis spelled out).
using Labels = std::string;

bool has(const Labels& l, char c) { return l.find(c) != Labels::npos; }

// Order of einsum's implicit output: uppercase first, as PyTorch numbers labels.
int label_rank(char c) { return c <= 'Z' ? c - 'A' : c - 'a' + 26; }

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
};

// Parses equation for operands of the given ranks, replacing each ellipsis by letters the
// equation does not use (right-aligned: an operand with fewer ellipsis dims takes the last).
Equation parse_equation(std::string_view equation, const std::vector<int64_t>& ranks) {
  std::string eq;
  for (char ch : equation) {
    if (ch != ' ') eq += ch;
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',') {
      terms.emplace_back();
    } else {
      terms.back() += ch;
    }
  }
  int64_t ell = 0;
  for (size_t i = 0; i < terms.size() && i < ranks.size(); ++i) {
    const size_t dots = terms[i].find("...");
    if (dots == std::string::npos) continue;
    ell = std::max<int64_t>(ell, ranks[i] - static_cast<int64_t>(terms[i].size() - 3));
  }
  std::string spare;  // letters for the ellipsis dims
  for (char ch = 'A'; static_cast<int64_t>(spare.size()) < ell && ch <= 'z'; ++ch) {
    if (std::isalpha(static_cast<unsigned char>(ch)) && eq.find(ch) == std::string::npos) {
      spare += ch;
    }
  }
  auto expand = [&](const std::string& t, int64_t n) {
    const size_t dots = t.find("...");
    if (dots == std::string::npos) return t;
    return t.substr(0, dots) + spare.substr(static_cast<size_t>(ell - n)) + t.substr(dots + 3);
  };
  Equation out;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t n = i < ranks.size() ? ranks[i] - static_cast<int64_t>(terms[i].size() - 3) : 0;
    out.inputs.push_back(expand(terms[i], n));
  }
  if (arrow != std::string::npos) {
    out.output = expand(eq.substr(arrow + 2), ell);
  } else {
    out.output = spare;
    std::string once;
    for (char ch = 'A'; ch <= 'z'; ++ch) {
      if (!std::isalpha(static_cast<unsigned char>(ch)) || has(spare, ch)) continue;
      int count = 0;
      for (char x : lhs) count += x == ch;
      if (count == 1) once += ch;
    }
    std::sort(once.begin(), once.end(),
              [](char a, char b) { return label_rank(a) < label_rank(b); });
    out.output += once;
  }
  return out;
}

// The gradient of einsum for operand i: einsum of the output gradient with the other
// operands down to i's labels; labels only i has (summed in the forward) are broadcast
// back, and a repeated label (a diagonal) is written into zeros of i's shape.
Tensor einsum_operand_grad(const Equation& eq, const Tensor& g, const std::vector<Tensor>& ops,
                           size_t i, IntArrayRef in_sizes) {
  const Labels& term = eq.inputs[i];
  // Each label's (broadcast) size.
  auto size_of = [&](char l) {
    int64_t s = 1;
    for (size_t j = 0; j < eq.output.size(); ++j) {
      if (eq.output[j] == l) s = std::max(s, g.size(static_cast<int64_t>(j)));
    }
    for (size_t k = 0; k < ops.size(); ++k) {
      for (size_t j = 0; j < eq.inputs[k].size(); ++j) {
        if (eq.inputs[k][j] == l) s = std::max(s, ops[k].size(static_cast<int64_t>(j)));
      }
    }
    return s;
  };
  Labels distinct, keep;
  for (char l : term) {
    if (has(distinct, l)) continue;
    distinct += l;
    bool elsewhere = has(eq.output, l);
    for (size_t k = 0; k < ops.size() && !elsewhere; ++k)
      elsewhere = k != i && has(eq.inputs[k], l);
    if (elsewhere) keep += l;
  }
  std::string sub = eq.output;
  std::vector<Tensor> args{g};
  for (size_t k = 0; k < ops.size(); ++k) {
    if (k == i) continue;
    sub += "," + eq.inputs[k];
    args.push_back(ops[k]);
  }
  Tensor r;
  if (args.size() == 1) {  // every output label is i's: a permutation of the gradient
    std::vector<int64_t> perm;
    for (char l : keep) perm.push_back(static_cast<int64_t>(eq.output.find(l)));
    r = g.dim() == 0 ? g : g.permute(perm);
  } else {
    r = einsum(sub + "->" + keep, args);
  }
  Labels cur = keep;
  for (char l : distinct) {
    if (has(cur, l)) continue;
    const int64_t s = size_of(l);
    std::vector<int64_t> sizes(r.sizes().begin(), r.sizes().end());
    sizes.push_back(s);
    r = r.unsqueeze(-1).expand(sizes);
    cur += l;
  }
  std::vector<int64_t> perm;
  for (char l : distinct) perm.push_back(static_cast<int64_t>(cur.find(l)));
  r = r.permute(perm);
  if (distinct.size() == term.size()) return r;  // the engine sums broadcast size-1 dims
  // Repeated labels: first sum what this operand broadcast, then fill the diagonal.
  std::vector<int64_t> bdims;
  for (size_t j = 0; j < distinct.size(); ++j) {
    const size_t pos = term.find(distinct[j]);
    if (in_sizes[pos] == 1 && r.size(static_cast<int64_t>(j)) != 1) {
      bdims.push_back(static_cast<int64_t>(j));
    }
  }
  if (!bdims.empty()) r = r.sum(bdims, true);
  Tensor z = zeros(in_sizes, g.dtype());
  std::vector<int64_t> zstrides(in_sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(in_sizes.size()) - 2; d >= 0; --d) {
    zstrides[d] = zstrides[d + 1] * std::max<int64_t>(in_sizes[d + 1], 1);
  }
  std::vector<int64_t> dsizes, dstrides;
  for (char l : distinct) {
    int64_t st = 0;
    for (size_t j = 0; j < term.size(); ++j) {
      if (term[j] == l) st += zstrides[j];
    }
    dsizes.push_back(in_sizes[term.find(l)]);
    dstrides.push_back(st);
  }
  as_strided(z, dsizes, dstrides, 0).copy_(r);
  return z;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, Autograd, m) {
  using autograd::derivative;

  derivative(m, "mm", {"self", "mat2"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {c.needs_grad(0) ? g.mm(c.saved("mat2").t()) : Tensor(),
            c.needs_grad(1) ? c.saved("self").t().mm(g) : Tensor()};
  });
  derivative(m, "bmm", {"self", "mat2"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {c.needs_grad(0) ? g.bmm(mT(c.saved("mat2"))) : Tensor(),
            c.needs_grad(1) ? mT(c.saved("self")).bmm(g) : Tensor()};
  });
  derivative(m, "mv", {"self", "vec"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {c.needs_grad(0) ? outer(g, c.saved("vec")) : Tensor(),
            c.needs_grad(1) ? mv(c.saved("self").t(), g) : Tensor()};
  });
  derivative(m, "dot", {"self", "tensor"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {c.needs_grad(0) ? g * c.saved("tensor") : Tensor(),
            c.needs_grad(1) ? g * c.saved("self") : Tensor()};
  });
  derivative(m, "outer", {"self", "vec2"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();  // outer promotes: the operands are read in grad's dtype
    return {c.needs_grad(0) ? mv(g, c.saved("vec2").to(g.dtype())) : Tensor(),
            c.needs_grad(1) ? mv(g.t(), c.saved("self").to(g.dtype())) : Tensor()};
  });
  derivative(m, "addmm", {"mat1", "mat2"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    const Scalar alpha = c.scalar("alpha");
    return {c.needs_grad(0) ? scaled(g, c.scalar("beta")) : Tensor(),
            c.needs_grad(1) ? scaled(g.mm(c.saved("mat2").t()), alpha) : Tensor(),
            c.needs_grad(2) ? scaled(c.saved("mat1").t().mm(g), alpha) : Tensor()};
  });
  derivative(m, "baddbmm", {"batch1", "batch2"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    const Scalar alpha = c.scalar("alpha");
    return {c.needs_grad(0) ? scaled(g, c.scalar("beta")) : Tensor(),
            c.needs_grad(1) ? scaled(g.bmm(mT(c.saved("batch2"))), alpha) : Tensor(),
            c.needs_grad(2) ? scaled(mT(c.saved("batch1")).bmm(g), alpha) : Tensor()};
  });
  derivative(m, "addbmm", {"batch1", "batch2"}, [](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    const Scalar alpha = c.scalar("alpha");
    // out = beta * self + sum_b batch1[b] @ batch2[b]: every batch sees the same grad.
    const int64_t nb = c.input_sizes(1)[0];
    const Tensor gb = g.unsqueeze(0).expand({nb, g.size(0), g.size(1)});
    return {c.needs_grad(0) ? scaled(g, c.scalar("beta")) : Tensor(),
            c.needs_grad(1) ? scaled(gb.bmm(mT(c.saved("batch2"))), alpha) : Tensor(),
            c.needs_grad(2) ? scaled(mT(c.saved("batch1")).bmm(gb), alpha) : Tensor()};
  });
  derivative(m, "matmul", {"self", "other"}, [](BackwardContext& c) -> variable_list {
    return matmul_backward(c.grad(), c.saved("self"), c.saved("other"), c.needs_grad(0),
                           c.needs_grad(1));
  });
  derivative(m, "linear", {"input", "weight"}, linear_backward);
  derivative(m, "einsum", {"tensors"}, [](BackwardContext& c) -> variable_list {
    const std::vector<Tensor> ops = c.saved_list("tensors");
    std::vector<int64_t> ranks;
    for (const Tensor& t : ops) ranks.push_back(t.dim());
    const Equation eq = parse_equation(c.arg("equation").to_string(), ranks);
    const size_t first = c.slot("tensors");
    variable_list grads(first + ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!c.needs_grad(first + i)) continue;
      grads[first + i] = einsum_operand_grad(eq, c.grad(), ops, i, c.input_sizes(first + i));
    }
    return grads;
  });
}

}  // namespace loom
