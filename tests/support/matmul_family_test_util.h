#pragma once
// For the suites of a CPU provider of the matmul family (cpu_onednn's matmul, cpu_mkl's
// gemm): the ops of the family, operand layouts a GEMM library reads differently from a
// contiguous matrix, and one graph through every op whose gradients are compared between the
// provider and the reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loom/autograd/autograd.h"
#include "loom/loom.h"
#include "provider_test_util.h"

namespace loom::testing {

/// The ops of the matmul family each provider registers.
inline const std::vector<std::string>& matmul_family_ops() {
  static const std::vector<std::string> ops = {"aten::mm",     "aten::mm.out",    "aten::bmm",
                                               "aten::bmm.out", "aten::addmm",   "aten::addmm.out",
                                               "aten::baddbmm", "aten::linear",  "aten::matmul"};
  return ops;
}

/// A [rows, cols] float32 matrix laid out column-major (a transposed view).
inline Tensor transposed_matrix(int64_t rows, int64_t cols) { return randn({cols, rows}).t(); }

/// A [rows, cols] float32 view with row stride 4 * cols and column stride 2 (strided both
/// ways: neither row- nor column-major).
inline Tensor strided_matrix(int64_t rows, int64_t cols) {
  return randn({rows * 2, cols * 2}).as_strided_view({rows, cols}, {cols * 4, 2}, 1);
}

/// Expects the gradients of a graph through every op of the family (linear, addmm, matmul,
/// bmm, baddbmm, mm) to agree under provider and under the reference: float32 leaves from
/// the global generator, |got - want| <= 1e-3 + 1e-3 * |want| (products of four layers).
inline void expect_matmul_family_gradients_agree(const std::string& provider) {
  const Tensor x0 = randn({32, 20}), w0 = randn({16, 20}), b0 = randn({16});
  const Tensor m0 = randn({16, 12}), s0 = randn({12}), p0 = randn({3, 12, 9}),
               q0 = randn({3, 9, 6});
  auto grads = [&](const std::string& under) {
    ProviderScope scope(under);
    std::vector<Tensor> leaves;
    for (const Tensor& t : {x0, w0, b0, m0, s0, p0, q0}) {
      leaves.push_back(t.clone().requires_grad_());
    }
    const Tensor &x = leaves[0], &w = leaves[1], &b = leaves[2], &m = leaves[3], &s = leaves[4],
                 &p = leaves[5], &q = leaves[6];
    const Tensor h = relu(linear(x, w, b));                          // [32, 16]
    const Tensor g = addmm(s, h, m, 0.5, 2.0);                       // [32, 12]
    const Tensor u = matmul(g.unsqueeze(0).expand({3, 32, 12}), p);  // [3, 32, 9]
    const Tensor v = bmm(u, q);                                      // [3, 32, 6]
    const Tensor r = baddbmm(v, u, q, 1, 1);                         // [3, 32, 6]
    const Tensor loss = (mm(r.sum({0}), h.narrow(0, 0, 6)) * h).sum();
    loss.backward();
    std::vector<Tensor> out;
    for (const Tensor& l : leaves) out.push_back(l.grad());
    return out;
  };
  const std::vector<Tensor> got = grads(provider), want = grads("reference");
  const char* names[] = {"x", "w", "b", "m", "s", "p", "q"};
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].defined()) << names[i];
    expect_allclose(got[i], want[i], 1e-3, 1e-3, std::string("grad of ") + names[i]);
  }
}

}  // namespace loom::testing
