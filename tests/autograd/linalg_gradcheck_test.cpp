// Derivative formulas of the linear-algebra family (ops/core/autograd/linalg.cpp): gradcheck
// in float64 with non-contiguous operands, broadcast self for addmm / baddbmm / addbmm,
// every rank combination and broadcast batch dims for matmul, linear with and without
// bias, and einsum equations (ellipsis, diagonals, sums, broadcasting).
#include <gtest/gtest.h>

#include "gradcheck_util.h"
#include "loom/autograd/autograd.h"
#include "loom/autograd/gradcheck.h"
#include "loom/loom.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using autograd::gradcheck;
using autograd::variable_list;
using testing::expect_gradcheck;
using testing::leaf;
using testing::make_tensor;
using testing::numel_of;
using testing::random_values;
using testing::to_doubles;
using testing::transposed_leaf;
using Sizes = std::vector<int64_t>;
using Fn = std::function<variable_list(const variable_list&)>;

// f of two tensors, checked for both and for each alone.
void check2(const std::function<Tensor(const Tensor&, const Tensor&)>& f, const Tensor& a,
            const Tensor& b, const std::string& what) {
  expect_gradcheck([&](const variable_list& in) -> variable_list { return {f(in[0], in[1])}; },
                   {a, b}, what);
  const Tensor a0 = a.detach(), b0 = b.detach();
  expect_gradcheck([&](const variable_list& in) -> variable_list { return {f(in[0], b0)}; }, {a},
                   what + " (first only)");
  expect_gradcheck([&](const variable_list& in) -> variable_list { return {f(a0, in[0])}; }, {b},
                   what + " (second only)");
}

class LinalgGradcheckTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
};

TEST_F(LinalgGradcheckTest, MmBmmMvDotOuter) {
  auto mm_ = [](const Tensor& a, const Tensor& b) { return mm(a, b); };
  check2(mm_, leaf({3, 4}, 1), leaf({4, 2}, 2), "mm");
  check2(mm_, transposed_leaf({3, 4}, 3), leaf({4, 2}, 4, true), "mm non-contiguous");
  check2([](const Tensor& a, const Tensor& b) { return bmm(a, b); }, leaf({2, 3, 4}, 5),
         transposed_leaf({2, 4, 2}, 6), "bmm");
  check2([](const Tensor& a, const Tensor& b) { return mv(a, b); }, transposed_leaf({3, 4}, 7),
         leaf({4}, 8, true), "mv");
  check2([](const Tensor& a, const Tensor& b) { return dot(a, b); }, leaf({5}, 9),
         leaf({5}, 10, true), "dot");
  check2([](const Tensor& a, const Tensor& b) { return outer(a, b); }, leaf({3}, 11, true),
         leaf({4}, 12), "outer");
}

TEST_F(LinalgGradcheckTest, AddmmAddbmmBaddbmm) {
  struct Self {
    Sizes sizes;
    const char* name;
  };
  for (const auto& [beta, alpha] :
       std::vector<std::pair<double, double>>{{1, 1}, {0.5, -2}, {0, 1.5}}) {
    const std::string k = loom::str_cat(" beta ", beta, " alpha ", alpha);
    for (const Self& s :
         {Self{{3, 2}, "full"}, Self{{2}, "row"}, Self{{3, 1}, "column"}, Self{{}, "0-d"}}) {
      const Tensor self = leaf(s.sizes, 13);
      expect_gradcheck(
          [&](const variable_list& in) -> variable_list {
            return {addmm(in[0], in[1], in[2], beta, alpha)};
          },
          {self, transposed_leaf({3, 4}, 14), leaf({4, 2}, 15, true)},
          loom::str_cat("addmm self ", s.name, k));
      expect_gradcheck(
          [&](const variable_list& in) -> variable_list {
            return {addbmm(in[0], in[1], in[2], beta, alpha)};
          },
          {self, leaf({2, 3, 4}, 16), transposed_leaf({2, 4, 2}, 17)},
          loom::str_cat("addbmm self ", s.name, k));
    }
    for (const Self& s : {Self{{2, 3, 2}, "full"}, Self{{3, 2}, "matrix"}, Self{{1, 3, 1}, "ones"},
                          Self{{}, "0-d"}}) {
      expect_gradcheck(
          [&](const variable_list& in) -> variable_list {
            return {baddbmm(in[0], in[1], in[2], beta, alpha)};
          },
          {leaf(s.sizes, 18), transposed_leaf({2, 3, 4}, 19), leaf({2, 4, 2}, 20, true)},
          loom::str_cat("baddbmm self ", s.name, k));
    }
  }
  // Only the matrices.
  const Tensor self = leaf({3, 2}, 21).detach();
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {addmm(self, in[0], in[1])}; },
      {leaf({3, 4}, 22), leaf({4, 2}, 23)}, "addmm matrices only");
}

TEST_F(LinalgGradcheckTest, MatmulRankCombinations) {
  const std::vector<std::pair<Sizes, Sizes>> cases = {{{4}, {4}},
                                                      {{3, 4}, {4}},
                                                      {{4}, {4, 2}},
                                                      {{3, 4}, {4, 2}},
                                                      {{2, 3, 4}, {4}},
                                                      {{2, 3, 4}, {4, 2}},
                                                      {{4}, {2, 4, 3}},
                                                      {{3, 4}, {2, 4, 2}},
                                                      {{2, 3, 4}, {2, 4, 2}},
                                                      {{2, 1, 3, 4}, {3, 4, 2}},
                                                      {{1, 3, 4}, {2, 4, 2}},
                                                      {{2, 2, 3, 4}, {4}},
                                                      {{4}, {2, 2, 4, 3}},
                                                      {{5, 2, 3, 4}, {4, 2}}};
  uint64_t seed = 100;
  for (const auto& [sa, sb] : cases) {
    const std::string k = loom::str_cat(sizes_str(sa), " @ ", sizes_str(sb));
    check2([](const Tensor& a, const Tensor& b) { return matmul(a, b); }, leaf(sa, seed),
           leaf(sb, seed + 1, true), "matmul " + k);
    seed += 2;
  }
  check2([](const Tensor& a, const Tensor& b) { return matmul(a, b); },
         transposed_leaf({2, 4, 3}, 130), transposed_leaf({3, 2}, 131), "matmul transposed");
  check2([](const Tensor& a, const Tensor& b) { return matmul(a, b); },
         transposed_leaf({2, 2, 3}, 132).transpose(0, 1).detach().set_requires_grad(true),
         leaf({3, 2}, 133), "matmul permuted batch");
}

TEST_F(LinalgGradcheckTest, Linear) {
  for (const Sizes& xs : std::vector<Sizes>{{5, 4}, {4}, {2, 3, 4}, {2, 1, 3, 4}}) {
    const std::string k = "input " + sizes_str(xs);
    const Tensor x = leaf(xs, 140, true), w = transposed_leaf({3, 4}, 141), b = leaf({3}, 142);
    expect_gradcheck(
        [](const variable_list& in) -> variable_list { return {linear(in[0], in[1], in[2])}; },
        {x, w, b}, "linear bias " + k);
    expect_gradcheck(
        [](const variable_list& in) -> variable_list { return {linear(in[0], in[1])}; }, {x, w},
        "linear no bias " + k);
    const Tensor x0 = x.detach(), w0 = w.detach();
    expect_gradcheck(
        [&](const variable_list& in) -> variable_list { return {linear(x0, w0, in[0])}; }, {b},
        "linear bias only " + k);
    expect_gradcheck(
        [&](const variable_list& in) -> variable_list { return {linear(x0, in[0], in[1])}; },
        {w, b}, "linear weight and bias " + k);
    expect_gradcheck([&](const variable_list& in) -> variable_list { return {linear(in[0], w0)}; },
                     {x}, "linear input only " + k);
    // A broadcast bias shape and a 1-D weight.
    expect_gradcheck(
        [](const variable_list& in) -> variable_list { return {linear(in[0], in[1], in[2])}; },
        {x, w, leaf({1}, 143)}, "linear bias [1] " + k);
    expect_gradcheck(
        [](const variable_list& in) -> variable_list { return {linear(in[0], in[1], in[2])}; },
        {x, leaf({4}, 144), leaf({}, 145)}, "linear 1-D weight " + k);
  }
}

TEST_F(LinalgGradcheckTest, Einsum) {
  struct Case {
    std::string eq;
    std::vector<Sizes> sizes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 2}}},
      {"ij,jk", {{3, 4}, {4, 2}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 2}}},
      {"i,j->ij", {{3}, {4}}},
      {"i,i->", {{4}, {4}}},
      {"ij->ji", {{3, 4}}},
      {"ij->", {{3, 4}}},
      {"ij->j", {{3, 4}}},
      {"ii->i", {{3, 3}}},
      {"ii", {{3, 3}}},
      {"iij->ji", {{3, 3, 2}}},
      {"ij,ij->ij", {{3, 4}, {3, 4}}},
      {"ij,kj->ik", {{3, 4}, {2, 4}}},
      {"ijk,ik->j", {{2, 3, 4}, {2, 4}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {4, 2}}},
      {"b...,b...->b", {{2, 3, 4}, {2, 3, 4}}},
      {"...i,i", {{2, 3}, {3}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"ij,j->ij", {{3, 1}, {4}}},  // a broadcast size-1 label
      {"bij,bjk->bik", {{1, 3, 4}, {2, 4, 2}}},
      {"ii,i->i", {{3, 3}, {3}}},
      {"i j , j k -> i k", {{3, 4}, {4, 2}}},
      {"Ab,bC->AC", {{2, 3}, {3, 2}}},
  };
  uint64_t seed = 200;
  for (const Case& c : cases) {
    variable_list in;
    for (const Sizes& s : c.sizes) {
      const bool strided = s.size() >= 2 && seed % 2 == 0;
      in.push_back(leaf(s, seed++, strided));
    }
    expect_gradcheck([&](const variable_list& x) -> variable_list { return {einsum(c.eq, x)}; }, in,
                     "einsum " + c.eq);
    if (in.size() > 1) {
      // Only the last operand.
      variable_list fixed(in.begin(), in.end() - 1);
      for (Tensor& t : fixed) t = t.detach();
      expect_gradcheck(
          [&](const variable_list& x) -> variable_list {
            variable_list all = fixed;
            all.push_back(x[0]);
            return {einsum(c.eq, all)};
          },
          {in.back()}, "einsum last operand only " + c.eq);
    }
  }
  expect_gradcheck([](const variable_list& x) -> variable_list { return {einsum("ij,jk->ik", x)}; },
                   {transposed_leaf({3, 4}, 250), transposed_leaf({4, 2}, 251)},
                   "einsum transposed");
}

TEST_F(LinalgGradcheckTest, EmptyInputs) {
  // Zero-size rows and a zero-size contraction: gradients of the inputs' shapes (zeros).
  auto run = [](const std::string& what, const Fn& f, const variable_list& in) {
    SCOPED_TRACE(what);
    try {
      f(in)[0].sum().backward();
      for (const Tensor& t : in) {
        ASSERT_TRUE(t.grad().defined());
        EXPECT_EQ(sizes_str(t.grad().sizes()), sizes_str(t.sizes()));
        for (double v : to_doubles(t.grad())) EXPECT_EQ(v, 0);
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
  };
  run("mm rows", [](const variable_list& in) -> variable_list { return {mm(in[0], in[1])}; },
      {leaf({0, 4}, 400), leaf({4, 2}, 401)});
  run("mm inner", [](const variable_list& in) -> variable_list { return {mm(in[0], in[1])}; },
      {leaf({3, 0}, 402), leaf({0, 2}, 403)});
  run("matmul", [](const variable_list& in) -> variable_list { return {matmul(in[0], in[1])}; },
      {leaf({2, 0, 4}, 404), leaf({4, 2}, 405)});
  run("linear",
      [](const variable_list& in) -> variable_list { return {linear(in[0], in[1], in[2])}; },
      {leaf({0, 4}, 406), leaf({3, 4}, 407), leaf({3}, 408)});
  run("einsum", [](const variable_list& in) -> variable_list { return {einsum("ij,jk", in)}; },
      {leaf({3, 0}, 409), leaf({0, 2}, 410)});
}

TEST_F(LinalgGradcheckTest, SecondDerivatives) {
  auto gg = [](const Fn& f, const variable_list& in, const std::string& what) {
    SCOPED_TRACE(what);
    try {
      autograd::gradgradcheck(f, in);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
  };
  gg([](const variable_list& in) -> variable_list { return {mm(in[0], in[1])}; },
     {leaf({3, 4}, 300), leaf({4, 2}, 301)}, "mm");
  gg([](const variable_list& in) -> variable_list { return {matmul(in[0], in[1])}; },
     {leaf({2, 3, 4}, 302), leaf({4, 2}, 303)}, "matmul");
  gg([](const variable_list& in) -> variable_list { return {linear(in[0], in[1], in[2])}; },
     {leaf({5, 4}, 304), leaf({3, 4}, 305), leaf({3}, 306)}, "linear");
  gg([](const variable_list& in) -> variable_list { return {linear(in[0], in[1], in[2])}; },
     {leaf({2, 5, 4}, 307), leaf({3, 4}, 308), leaf({3}, 309)}, "linear 3-D input");
  gg([](const variable_list& in) -> variable_list { return {bmm(in[0], in[1])}; },
     {leaf({2, 3, 4}, 310), leaf({2, 4, 2}, 311)}, "bmm");
  gg([](const variable_list& in) -> variable_list { return {mv(in[0], in[1])}; },
     {leaf({3, 4}, 312), leaf({4}, 313)}, "mv");
  gg([](const variable_list& in) -> variable_list { return {dot(in[0], in[1])}; },
     {leaf({4}, 314), leaf({4}, 315)}, "dot");
  gg([](const variable_list& in) -> variable_list { return {outer(in[0], in[1])}; },
     {leaf({3}, 316), leaf({4}, 317)}, "outer");
  gg([](const variable_list& in) -> variable_list { return {addmm(in[0], in[1], in[2], 0.5, 2)}; },
     {leaf({2}, 318), leaf({3, 4}, 319), leaf({4, 2}, 320)}, "addmm");
  gg(
      [](const variable_list& in) -> variable_list {
        return {baddbmm(in[0], in[1], in[2], 0.5, 2)};
      },
      {leaf({3, 2}, 321), leaf({2, 3, 4}, 322), leaf({2, 4, 2}, 323)}, "baddbmm");
  gg([](const variable_list& in) -> variable_list { return {addbmm(in[0], in[1], in[2], 0.5, 2)}; },
     {leaf({3, 2}, 324), leaf({2, 3, 4}, 325), leaf({2, 4, 2}, 326)}, "addbmm");
  gg([](const variable_list& in) -> variable_list { return {matmul(in[0], in[1])}; },
     {leaf({4}, 327), leaf({2, 4, 3}, 328)}, "matmul 1-D @ batched");
  gg([](const variable_list& in) -> variable_list { return {einsum("bij,bjk->bik", in)}; },
     {leaf({2, 3, 4}, 329), leaf({2, 4, 2}, 330)}, "einsum");
  gg([](const variable_list& in) -> variable_list { return {einsum("ij,j->i", in)}; },
     {leaf({3, 4}, 331), leaf({4}, 332)}, "einsum matrix-vector");
}

}  // namespace
}  // namespace loom
