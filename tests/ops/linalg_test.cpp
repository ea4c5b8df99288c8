// Tests for ops/core/cpu/linalg*.cpp: every product against a float64 triple-loop oracle, on
// contiguous, transposed, strided, broadcast and zero-size operands, plus PyTorch's errors.
#include "loom/ops/linalg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ops_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

using Values = std::vector<double>;
using Sizes = std::vector<int64_t>;

class LinalgTest : public ::testing::Test {
 protected:
  void SetUp() override { load_ops_core(); }
};

/// How an operand is laid out in memory.
enum class Layout { Contiguous, Transposed, Strided };

/// A [rows, cols] matrix holding row-major values, laid out as asked: Transposed stores it
/// column-major (a view with swapped strides), Strided leaves gaps between elements.
Tensor matrix(const Values& v, int64_t rows, int64_t cols, DType t, Layout layout) {
  if (layout == Layout::Strided) return make_tensor(v, {rows, cols}, t, true);
  if (layout == Layout::Contiguous) return make_tensor(v, {rows, cols}, t);
  Values vt(v.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) vt[j * rows + i] = v[i * cols + j];
  Tensor base = make_tensor(vt, {cols, rows}, t);
  return base.as_strided_view({rows, cols}, {1, rows}, 0);
}

/// Oracle: [m, k] @ [k, n] on row-major doubles.
Values ref_mm(const Values& a, const Values& b, int64_t m, int64_t k, int64_t n) {
  Values c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
  return c;
}

int64_t numel_of(const Sizes& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/// Oracle for torch.matmul, written from its rules independently of the kernel.
Values ref_matmul(const Values& a, Sizes sa, const Values& b, Sizes sb, Sizes* out_sizes) {
  const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), 1);
  if (b1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Sizes ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t nb = std::max(ba.size(), bb.size());
  Sizes batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t x = i + ba.size() >= nb ? ba[i + ba.size() - nb] : 1;
    const int64_t y = i + bb.size() >= nb ? bb[i + bb.size() - nb] : 1;
    batch[i] = x == 1 ? y : x;
  }
  *out_sizes = batch;
  if (!a1) out_sizes->push_back(m);
  if (!b1) out_sizes->push_back(n);
  Values out;
  const int64_t total = numel_of(batch);
  for (int64_t t = 0; t < total; ++t) {
    // Batch index -> offsets in a and b (broadcast dims read index 0).
    Sizes idx(nb);
    for (int64_t r = t, d = static_cast<int64_t>(nb) - 1; d >= 0; --d) {
      idx[d] = r % batch[d];
      r /= batch[d];
    }
    auto offset = [&](const Sizes& bs) {
      int64_t off = 0;
      for (size_t d = 0; d < bs.size(); ++d) {
        const int64_t i = bs[d] == 1 ? 0 : idx[d + nb - bs.size()];
        off = off * bs[d] + i;
      }
      return off;
    };
    const int64_t oa = offset(ba) * m * k, ob = offset(bb) * k * n;
    Values am(a.begin() + oa, a.begin() + oa + m * k), bm(b.begin() + ob, b.begin() + ob + k * n);
    Values c = ref_mm(am, bm, m, k, n);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

double tol_for(DType t) {
  switch (t) {
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1.6e-2;
    case DType::Float32:
      return 1e-5;
    default:
      return 1e-12;
  }
}

/// Integer-valued inputs in [-4, 4] so integer dtypes are exact too.
Values int_values(size_t n, uint64_t seed) {
  Values v = random_values(n, seed, -4, 5);
  for (double& x : v) x = std::floor(x);
  return v;
}

void check_mm(int64_t m, int64_t k, int64_t n, DType t, Layout la, Layout lb, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n << " " << dtype_name(t)
                                    << " layouts " << int(la) << "," << int(lb));
  const bool integral = is_integral(t);
  Values a = integral ? int_values(m * k, seed) : random_values(m * k, seed);
  Values b = integral ? int_values(k * n, seed + 1) : random_values(k * n, seed + 1);
  if (t == DType::UInt8) {
    for (double& x : a) x = std::fabs(x);
    for (double& x : b) x = std::fabs(x);
  }
  // The oracle sees the inputs rounded to t, as the kernel does.
  const Tensor ta = matrix(a, m, k, t, la), tb = matrix(b, k, n, t, lb);
  const Values want = ref_mm(to_doubles(ta), to_doubles(tb), m, k, n);
  const double tol = tol_for(t);
  expect_close(mm(ta, tb), {m, n}, want, tol, tol * std::sqrt(double(k + 1)));
}

TEST_F(LinalgTest, MmAllLayoutsAndDtypes) {
  const Layout layouts[] = {Layout::Contiguous, Layout::Transposed, Layout::Strided};
  uint64_t seed = 1;
  for (DType t : {DType::Float32, DType::Float64})
    for (Layout la : layouts)
      for (Layout lb : layouts) {
        check_mm(7, 5, 9, t, la, lb, seed++);
        check_mm(13, 17, 19, t, la, lb, seed++);
      }
}

TEST_F(LinalgTest, MmThinShapesUseTheVectorPaths) {
  for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
    check_mm(1, 9, 7, DType::Float32, l, l, 11);
    check_mm(9, 7, 1, DType::Float32, l, l, 12);
    check_mm(1, 300, 1, DType::Float64, l, l, 13);
    check_mm(300, 40, 1, DType::Float64, l, Layout::Contiguous, 14);
  }
}

TEST_F(LinalgTest, MmLargeExercisesBlockingEdges) {
  check_mm(200, 300, 150, DType::Float32, Layout::Contiguous, Layout::Contiguous, 21);
  check_mm(200, 300, 150, DType::Float64, Layout::Transposed, Layout::Strided, 22);
  // Several column tiles per B panel, and more than one B panel (n > 3072).
  check_mm(70, 20, 600, DType::Float32, Layout::Strided, Layout::Transposed, 23);
  check_mm(2, 3, 3100, DType::Float64, Layout::Contiguous, Layout::Contiguous, 24);
  check_mm(5, 300, 300, DType::Float16, Layout::Contiguous, Layout::Transposed, 25);
}

TEST_F(LinalgTest, MmIntegerAndReducedPrecision) {
  for (DType t : {DType::Int64, DType::Int32, DType::Int16, DType::Int8, DType::UInt8})
    check_mm(6, 5, 20, t, Layout::Contiguous, Layout::Transposed, 31);
  for (DType t : {DType::Float16, DType::BFloat16}) {
    check_mm(9, 40, 18, t, Layout::Contiguous, Layout::Contiguous, 32);
    check_mm(9, 40, 18, t, Layout::Strided, Layout::Transposed, 33);
  }
}

TEST_F(LinalgTest, MmZeroSizeDims) {
  const Tensor a = make_tensor({}, {3, 0}), b = make_tensor({}, {0, 4});
  expect_close(mm(a, b), {3, 4}, Values(12, 0.0));
  expect_close(mm(b.as_strided_view({4, 0}, {1, 4}, 0), a.as_strided_view({0, 3}, {1, 1}, 0)),
               {4, 3}, Values(12, 0.0));
  expect_close(mm(make_tensor({}, {0, 5}), make_tensor(Values(10, 1.0), {5, 2})), {0, 2}, {});
}

TEST_F(LinalgTest, MmErrorsUsePyTorchWording) {
  const Tensor a = make_tensor(Values(320, 1.0), {32, 10});
  const Tensor b = make_tensor(Values(100, 1.0), {20, 5});
  EXPECT_TRUE(contains(message_of([&] { mm(a, b); }),
                       "mat1 and mat2 shapes cannot be multiplied (32x10 and 20x5)"));
  EXPECT_TRUE(contains(message_of([&] {
                         mm(make_tensor({1, 2}, {2}), a);
                       }),
                       "self must be a matrix"));
  EXPECT_TRUE(contains(message_of([&] {
                         mm(a, make_tensor({1, 2}, {2}));
                       }),
                       "mat2 must be a matrix"));
  const Tensor d = make_tensor(Values(50, 1.0), {10, 5}, DType::Float64);
  EXPECT_TRUE(contains(message_of<TypeError>([&] { mm(a, d); }),
                       "expected m1 and m2 to have the same dtype, but got: float != double"));
  EXPECT_TRUE(
      contains(message_of<TypeError>([&] {
                 mm(make_tensor({1}, {1, 1}, DType::Bool), make_tensor({1}, {1, 1}, DType::Bool));
               }),
               "not implemented for 'Bool'"));
}

TEST_F(LinalgTest, MmOut) {
  const Values a = random_values(12, 41), b = random_values(20, 42);
  const Tensor ta = make_tensor(a, {3, 4}), tb = make_tensor(b, {4, 5});
  const Values want = ref_mm(to_doubles(ta), to_doubles(tb), 3, 4, 5);
  // An out with the result's shape but strided: written in place.
  Tensor out = make_tensor(Values(15, 7.0), {3, 5}, DType::Float32, true);
  Tensor r = mm_out(out, ta, tb);
  EXPECT_TRUE(r.is_same(out));
  expect_close(out, {3, 5}, want);
  // A larger out is resized over its storage, as resize_ does.
  Tensor big = make_tensor(Values(40, 0.0), {40});
  mm_out(big, ta, tb);
  expect_close(big, {3, 5}, want);
  // out may be an input: the product goes through a temporary.
  Tensor sq = make_tensor(random_values(9, 43), {3, 3});
  const Values sqv = to_doubles(sq);
  mm_out(sq, sq, sq);
  expect_close(sq, {3, 3}, ref_mm(sqv, sqv, 3, 3, 3));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         mm_out(make_tensor(Values(15, 0), {3, 5}, DType::Float64), ta, tb);
                       }),
                       "expected out to have dtype"));
  // A smaller out grows (its storage is reallocated), as PyTorch's resize_output does.
  Tensor small = make_tensor(Values(2, 0), {2});
  mm_out(small, ta, tb);
  expect_close(small, {3, 5}, want);
}

TEST_F(LinalgTest, AddmmBetaAlphaAndBroadcastSelf) {
  const int64_t m = 6, k = 8, n = 5;
  const Tensor a = matrix(random_values(m * k, 51), m, k, DType::Float64, Layout::Transposed);
  const Tensor b = matrix(random_values(k * n, 52), k, n, DType::Float64, Layout::Strided);
  const Values p = ref_mm(to_doubles(a), to_doubles(b), m, k, n);
  const Values bias = random_values(n, 53);
  const Tensor self = make_tensor(bias, {n}, DType::Float64);
  Values want(p.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) want[i * n + j] = 0.5 * bias[j] + 2.0 * p[i * n + j];
  expect_close(addmm(self, a, b, 0.5, 2.0), {m, n}, want, 1e-12, 1e-12);
  // A full [m, n] self, default beta = alpha = 1.
  const Values full = random_values(m * n, 54);
  Values want2(p.size());
  for (size_t i = 0; i < p.size(); ++i) want2[i] = full[i] + p[i];
  expect_close(addmm(make_tensor(full, {m, n}, DType::Float64, true), a, b), {m, n}, want2, 1e-12,
               1e-12);
  // beta = 0 ignores NaN in self.
  const Tensor nan_self =
      make_tensor(Values(n, std::numeric_limits<double>::quiet_NaN()), {n}, DType::Float64);
  expect_close(addmm(nan_self, a, b, 0, 1), {m, n}, p, 1e-12, 1e-12);
  // k = 0: beta * self.
  const Tensor e1 = make_tensor({}, {m, 0}, DType::Float64),
               e2 = make_tensor({}, {0, n}, DType::Float64);
  Values want3(m * n);
  for (int64_t i = 0; i < m * n; ++i) want3[i] = 3 * bias[i % n];
  expect_close(addmm(self, e1, e2, 3, 1), {m, n}, want3, 1e-12, 1e-12);
  expect_close(addmm(nan_self, e1, e2, 0, 1), {m, n}, Values(m * n, 0.0));
  EXPECT_TRUE(contains(message_of([&] {
                         addmm(make_tensor({1, 2, 3}, {3}, DType::Float64), a, b);
                       }),
                       "The expanded size of the tensor (5) must match the existing size (3)"));
}

TEST_F(LinalgTest, AddmmIntegers) {
  const Tensor a = make_tensor({1, 2, 3, 4}, {2, 2}, DType::Int64);
  const Tensor s = make_tensor({10, 20}, {2}, DType::Int64);
  expect_close(addmm(s, a, a, 2, 3), {2, 2}, {20 + 21, 40 + 30, 20 + 45, 40 + 66});
  EXPECT_TRUE(contains(message_of([&] { addmm(s, a, a, 0.5, 1); }),
                       "For integral input tensors, argument beta must not be a floating point"));
  // Note [Checked scalar conversion]: an alpha the dtype cannot hold is refused, not wrapped.
  const Tensor a8 = make_tensor({1, 2, 3, 4}, {2, 2}, DType::Int8);
  EXPECT_EQ(message_of([&] { addmm(a8, a8, a8, 1, 300); }),
            "addmm: value cannot be converted to type int8_t without overflow");
  EXPECT_EQ(message_of([&] {
              baddbmm(make_tensor({1, 2, 3, 4}, {1, 2, 2}, DType::Int16),
                      make_tensor({1, 2, 3, 4}, {1, 2, 2}, DType::Int16),
                      make_tensor({1, 2, 3, 4}, {1, 2, 2}, DType::Int16), 40000, 1);
            }),
            "baddbmm: value cannot be converted to type int16_t without overflow");
}

TEST_F(LinalgTest, AddmmOutIncludingSelfAsOut) {
  const Tensor a = make_tensor(random_values(12, 61), {3, 4});
  const Tensor b = make_tensor(random_values(8, 62), {4, 2});
  const Values p = ref_mm(to_doubles(a), to_doubles(b), 3, 4, 2);
  const Values c0 = random_values(6, 63);
  Tensor c = make_tensor(c0, {3, 2});
  Values want(6);
  for (size_t i = 0; i < 6; ++i) want[i] = 2 * c0[i] - p[i];
  addmm_out(c, c, a, b, 2, -1);
  expect_close(c, {3, 2}, want);
  Tensor out = make_tensor(Values(6, 0), {3, 2}, DType::Float32, true);
  addmm_out(out, make_tensor(c0, {3, 2}), a, b, 2, -1);
  expect_close(out, {3, 2}, want);
}

/// [bs, m, k] batches as doubles, for the bmm-family oracles.
Values ref_bmm(const Values& a, const Values& b, int64_t bs, int64_t m, int64_t k, int64_t n) {
  Values out;
  for (int64_t i = 0; i < bs; ++i) {
    Values am(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
    Values bm(b.begin() + i * k * n, b.begin() + (i + 1) * k * n);
    Values c = ref_mm(am, bm, m, k, n);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

// Note [Serial GEMM inside a parallel loop] (cpu/gemm.h): each product of a batch above the
// tiny-GEMM size runs the blocked path serially inside the batch loop; every batch after the
// first once came back unwritten.
TEST_F(LinalgTest, BmmOfSeveralBlockedProductsWritesEveryBatch) {
  for (const Sizes& s : {Sizes{3, 5, 40, 30}, Sizes{5, 17, 33, 9}, Sizes{2, 64, 64, 64}}) {
    const int64_t bs = s[0], m = s[1], k = s[2], n = s[3];
    const Values a = random_values(bs * m * k, 81), b = random_values(bs * k * n, 82);
    for (DType t : {DType::Float64, DType::Float32}) {
      const double tol = t == DType::Float64 ? 1e-12 : 1e-4;
      expect_close(bmm(make_tensor(a, {bs, m, k}, t), make_tensor(b, {bs, k, n}, t)), {bs, m, n},
                   ref_bmm(a, b, bs, m, k, n), tol, tol);
    }
  }
}

TEST_F(LinalgTest, BmmContiguousStridedAndTransposed) {
  const int64_t bs = 4, m = 5, k = 7, n = 3;
  const Values a = random_values(bs * m * k, 71), b = random_values(bs * k * n, 72);
  const Values want = ref_bmm(a, b, bs, m, k, n);
  expect_close(bmm(make_tensor(a, {bs, m, k}), make_tensor(b, {bs, k, n})), {bs, m, n}, want);
  expect_close(bmm(make_tensor(a, {bs, m, k}, DType::Float64, true),
                   make_tensor(b, {bs, k, n}, DType::Float64, true)),
               {bs, m, n}, want, 1e-12, 1e-12);
  // b stored as [bs, n, k] and viewed transposed in its last two dims.
  Values bt(b.size());
  for (int64_t i = 0; i < bs; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) bt[(i * n + j) * k + p] = b[(i * k + p) * n + j];
  const Tensor tb =
      make_tensor(bt, {bs, n, k}, DType::Float64).as_strided_view({bs, k, n}, {n * k, 1, k}, 0);
  expect_close(bmm(make_tensor(a, {bs, m, k}, DType::Float64), tb), {bs, m, n}, want, 1e-12, 1e-12);
  // Many batches of a large size (the per-product parallel path).
  const Values a2 = random_values(2 * 130 * 140, 73), b2 = random_values(2 * 140 * 131, 74);
  expect_close(bmm(make_tensor(a2, {2, 130, 140}, DType::Float64),
                   make_tensor(b2, {2, 140, 131}, DType::Float64)),
               {2, 130, 131}, ref_bmm(a2, b2, 2, 130, 140, 131), 1e-12, 1e-12);
  expect_close(bmm(make_tensor({}, {0, 2, 3}), make_tensor({}, {0, 3, 4})), {0, 2, 4}, {});
  expect_close(bmm(make_tensor({}, {2, 2, 0}), make_tensor({}, {2, 0, 4})), {2, 2, 4},
               Values(16, 0.0));
}

TEST_F(LinalgTest, BmmOutAndErrors) {
  const Values a = random_values(2 * 3 * 4, 81), b = random_values(2 * 4 * 5, 82);
  Tensor out = make_tensor(Values(30, 0), {2, 3, 5}, DType::Float32, true);
  bmm_out(out, make_tensor(a, {2, 3, 4}), make_tensor(b, {2, 4, 5}));
  expect_close(out, {2, 3, 5}, ref_bmm(a, b, 2, 3, 4, 5));
  const Tensor b1 = make_tensor(Values(4 * 2 * 3, 1), {4, 2, 3});
  EXPECT_TRUE(contains(message_of([&] {
                         bmm(b1, make_tensor(Values(4 * 5 * 2, 1), {4, 5, 2}));
                       }),
                       "Expected size for first two dimensions of batch2 tensor to be: [4, 3] but "
                       "got: [4, 5]."));
  EXPECT_TRUE(contains(message_of([&] {
                         bmm(b1, make_tensor(Values(6, 1), {3, 2}));
                       }),
                       "batch2 must be a 3D tensor"));
}

TEST_F(LinalgTest, BaddbmmAndAddbmm) {
  const int64_t bs = 3, m = 4, k = 6, n = 5;
  const Values a = random_values(bs * m * k, 91), b = random_values(bs * k * n, 92);
  const Values p = ref_bmm(a, b, bs, m, k, n);
  const Values self = random_values(m * n, 93);
  const Tensor ta = make_tensor(a, {bs, m, k}, DType::Float64, true);
  const Tensor tb = make_tensor(b, {bs, k, n}, DType::Float64);
  const Tensor ts = make_tensor(self, {m, n}, DType::Float64);
  Values want(p.size());
  for (size_t i = 0; i < p.size(); ++i) want[i] = 0.5 * self[i % (m * n)] + 3 * p[i];
  expect_close(baddbmm(ts, ta, tb, 0.5, 3), {bs, m, n}, want, 1e-12, 1e-12);
  Values want_sum(m * n);
  for (int64_t i = 0; i < m * n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < bs; ++j) s += p[j * m * n + i];
    want_sum[i] = 2 * self[i] - s;
  }
  expect_close(addbmm(ts, ta, tb, 2, -1), {m, n}, want_sum, 1e-12, 1e-12);
  const Tensor nan_self =
      make_tensor({std::numeric_limits<double>::quiet_NaN()}, {1}, DType::Float64);
  expect_close(baddbmm(nan_self, ta, tb, 0, 1), {bs, m, n}, p, 1e-12, 1e-12);
  expect_close(addbmm(nan_self, make_tensor({}, {0, m, k}, DType::Float64),
                      make_tensor({}, {0, k, n}, DType::Float64), 0, 1),
               {m, n}, Values(m * n, 0.0));
}

TEST_F(LinalgTest, MatmulEveryRankCombination) {
  const std::vector<std::pair<Sizes, Sizes>> cases = {{{4}, {4}},
                                                      {{3, 4}, {4}},
                                                      {{4}, {4, 2}},
                                                      {{3, 4}, {4, 2}},
                                                      {{2, 3, 4}, {4}},
                                                      {{4}, {2, 4, 3}},
                                                      {{2, 3, 4}, {4, 5}},
                                                      {{3, 4}, {2, 4, 5}},
                                                      {{2, 3, 4}, {2, 4, 5}},
                                                      {{10, 1, 3, 4}, {5, 4, 2}},
                                                      {{2, 1, 3, 4}, {1, 6, 4, 2}},
                                                      {{1, 3, 4}, {7, 4, 2}},
                                                      {{2, 0, 4}, {4, 3}},
                                                      {{2, 3, 0}, {0, 5}},
                                                      {{1, 3, 4}, {0, 4, 2}}};
  uint64_t seed = 100;
  for (const auto& [sa, sb] : cases) {
    for (bool strided : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << sizes_str(sa) << " @ " << sizes_str(sb) << " strided " << strided);
      if (strided && (numel_of(sa) == 0 || numel_of(sb) == 0)) continue;
      const Values a = random_values(numel_of(sa), seed++), b = random_values(numel_of(sb), seed++);
      Sizes want_sizes;
      const Values want = ref_matmul(a, sa, b, sb, &want_sizes);
      expect_close(matmul(make_tensor(a, sa, DType::Float64, strided),
                          make_tensor(b, sb, DType::Float64, strided)),
                   want_sizes, want, 1e-12, 1e-12);
    }
  }
}

TEST_F(LinalgTest, MatmulUnmergeableBatchAndErrors) {
  // a is [2, 3, 4] viewed from [3, 2, 4] storage (batch and row dims swapped): not foldable.
  const Values raw = random_values(24, 131);
  const Tensor a = make_tensor(raw, {3, 2, 4}).as_strided_view({2, 3, 4}, {4, 8, 1}, 0);
  const Values av = to_doubles(a), bv = random_values(20, 132);
  Sizes ws;
  const Values want = ref_matmul(av, {2, 3, 4}, bv, {4, 5}, &ws);
  expect_close(matmul(a, make_tensor(bv, {4, 5})), ws, want);
  // Size-1 dims with arbitrary strides must not fool the row folding.
  const Tensor base = make_tensor(random_values(130, 133), {130});
  for (const auto& [sizes, strides] :
       std::vector<std::pair<Sizes, Sizes>>{{{5, 1, 4}, {4, 7, 1}},
                                            {{2, 1, 3, 4}, {100, 100, 10, 1}},
                                            {{3, 2, 1, 4}, {8, 4, 1, 1}}}) {
    const Tensor v = base.as_strided_view(sizes, strides, 0);
    const Values vv = to_doubles(v);
    Sizes s2;
    const Values w2 = ref_matmul(vv, sizes, bv, {4, 5}, &s2);
    expect_close(matmul(v, make_tensor(bv, {4, 5})), s2, w2);
  }
  EXPECT_TRUE(contains(message_of([&] {
                         matmul(Tensor::scalar(1.0f), make_tensor({1, 2}, {2}));
                       }),
                       "both arguments to matmul need to be at least 1D, but they are 0D and 1D"));
  EXPECT_TRUE(
      contains(message_of([&] {
                 matmul(make_tensor(Values(24, 1), {2, 3, 4}), make_tensor(Values(15, 1), {3, 5}));
               }),
               "shapes cannot be multiplied (3x4 and 3x5)"));
  EXPECT_TRUE(contains(
      message_of([&] {
        matmul(make_tensor(Values(24, 1), {2, 3, 4}), make_tensor(Values(60, 1), {3, 4, 5}));
      }),
      "The size of tensor a (2) must match the size of tensor b (3) at "
      "non-singleton dimension 0"));
}

TEST_F(LinalgTest, MvDotOuter) {
  const Values a = random_values(20, 141), x = random_values(5, 142), y = random_values(4, 143);
  expect_close(mv(matrix(a, 4, 5, DType::Float64, Layout::Transposed),
                  make_tensor(x, {5}, DType::Float64, true)),
               {4}, ref_mm(a, x, 4, 5, 1), 1e-12, 1e-12);
  expect_close(dot(make_tensor(x, {5}, DType::Float64, true),
                   make_tensor(a, {4, 5}, DType::Float64).as_strided_view({5}, {1}, 5)),
               {}, ref_mm(x, Values(a.begin() + 5, a.begin() + 10), 1, 5, 1), 1e-12, 1e-12);
  expect_close(dot(make_tensor({}, {0}), make_tensor({}, {0})), {}, {0.0});
  expect_close(
      outer(make_tensor(y, {4}, DType::Float64, true), make_tensor(x, {5}, DType::Float64)), {4, 5},
      ref_mm(y, x, 4, 1, 5), 1e-12, 1e-12);
  // outer promotes like a broadcast product: float32 x float64 -> float64.
  const Tensor o = outer(make_tensor({1, 2}, {2}), make_tensor({3, 4, 5}, {3}, DType::Float64));
  EXPECT_EQ(o.dtype(), DType::Float64);
  expect_close(o, {2, 3}, {3, 4, 5, 6, 8, 10});
  EXPECT_TRUE(contains(message_of([&] {
                         dot(make_tensor(a, {4, 5}), make_tensor(x, {5}));
                       }),
                       "1D tensors expected, but got 2D and 1D tensors"));
  EXPECT_TRUE(contains(message_of([&] { dot(make_tensor(y, {4}), make_tensor(x, {5})); }),
                       "inconsistent tensor size, expected tensor [4] and src [5]"));
  EXPECT_TRUE(contains(message_of([&] {
                         mv(make_tensor(a, {4, 5}), make_tensor(y, {4}));
                       }),
                       "size mismatch, got input (4), mat (4x5), vec (4)"));
}

TEST_F(LinalgTest, Linear) {
  const int64_t in = 6, outf = 4;
  const Values x = random_values(2 * 3 * in, 151), w = random_values(outf * in, 152),
               bias = random_values(outf, 153);
  Values wt(w.size());
  for (int64_t o = 0; o < outf; ++o)
    for (int64_t i = 0; i < in; ++i) wt[i * outf + o] = w[o * in + i];
  const Values p = ref_mm(x, wt, 6, in, outf);
  Values want(p.size());
  for (size_t i = 0; i < p.size(); ++i) want[i] = p[i] + bias[i % outf];
  const Tensor tw = make_tensor(w, {outf, in}, DType::Float64);
  const Tensor tb = make_tensor(bias, {outf}, DType::Float64);
  expect_close(linear(make_tensor(x, {6, in}, DType::Float64), tw, tb), {6, outf}, want, 1e-12,
               1e-12);
  expect_close(linear(make_tensor(x, {2, 3, in}, DType::Float64, true), tw, tb), {2, 3, outf}, want,
               1e-12, 1e-12);
  expect_close(linear(make_tensor(x, {2, 3, in}, DType::Float64), tw), {2, 3, outf}, p, 1e-12,
               1e-12);
  // A 1-D weight gives one output per row.
  expect_close(linear(make_tensor(x, {6, in}, DType::Float64),
                      make_tensor(Values(w.begin(), w.begin() + in), {in}, DType::Float64)),
               {6}, ref_mm(x, Values(w.begin(), w.begin() + in), 6, in, 1), 1e-12, 1e-12);
  EXPECT_TRUE(contains(message_of([&] {
                         linear(make_tensor(x, {6, in}), make_tensor(w, {in, outf}));
                       }),
                       "mat1 and mat2 shapes cannot be multiplied (6x6 and 4x6)"));
}

}  // namespace
}  // namespace loom::testing

namespace loom::testing {
namespace {

/// Oracle for einsum: a direct loop over the whole index space of the labels.
Values ref_einsum(const std::vector<std::string>& terms, const std::string& out,
                  const std::vector<Values>& vals, const std::vector<Sizes>& sizes,
                  Sizes* out_sizes) {
  std::map<char, int64_t> dim;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d)
      dim[terms[i][d]] = std::max(dim[terms[i][d]], sizes[i][d]);
  std::vector<char> labels;
  for (auto& [c, s] : dim) labels.push_back(c);
  out_sizes->clear();
  for (char c : out) out_sizes->push_back(dim[c]);
  Values res(static_cast<size_t>(numel_of(*out_sizes)), 0.0);
  std::map<char, int64_t> idx;
  std::function<void(size_t)> rec = [&](size_t li) {
    if (li == labels.size()) {
      double p = 1;
      for (size_t i = 0; i < terms.size(); ++i) {
        int64_t off = 0;
        for (size_t d = 0; d < terms[i].size(); ++d)
          off = off * sizes[i][d] + (sizes[i][d] == 1 ? 0 : idx[terms[i][d]]);
        p *= vals[i][off];
      }
      int64_t o = 0;
      for (size_t d = 0; d < out.size(); ++d) o = o * (*out_sizes)[d] + idx[out[d]];
      res[o] += p;
      return;
    }
    for (int64_t v = 0; v < dim[labels[li]]; ++v) {
      idx[labels[li]] = v;
      rec(li + 1);
    }
  };
  rec(0);
  return res;
}

struct EinsumCase {
  std::string equation;            // what einsum gets
  std::vector<std::string> terms;  // the oracle's spelling (ellipsis written out)
  std::string out;
  std::vector<Sizes> sizes;
};

TEST_F(LinalgTest, EinsumAgainstLoopOracle) {
  const std::vector<EinsumCase> cases = {
      {"ij,jk->ik", {"ij", "jk"}, "ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {"ij", "jk"}, "ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {"bij", "bjk"}, "bik", {{2, 3, 4}, {2, 4, 5}}},
      {"ii->i", {"ii"}, "i", {{4, 4}}},
      {"ii", {"ii"}, "", {{4, 4}}},
      {"ij->ji", {"ij"}, "ji", {{3, 4}}},
      {"ij->", {"ij"}, "", {{3, 4}}},
      {"i,j->ij", {"i", "j"}, "ij", {{3}, {4}}},
      {"i,i->", {"i", "i"}, "", {{5}, {5}}},
      {"...ij,...jk", {"xij", "xjk"}, "xik", {{2, 3, 4}, {2, 4, 5}}},
      {"...ij,...jk->...ik", {"yxij", "xjk"}, "yxik", {{3, 2, 3, 4}, {2, 4, 5}}},
      {"ij,jk,kl->il", {"ij", "jk", "kl"}, "il", {{2, 3}, {3, 4}, {4, 5}}},
      {"bn,anm,bm->ba", {"bn", "anm", "bm"}, "ba", {{2, 3}, {4, 3, 5}, {2, 5}}},
      {"ijk,jil->kl", {"ijk", "jil"}, "kl", {{2, 3, 4}, {3, 2, 5}}},
      {"ij,kj->ik", {"ij", "kj"}, "ik", {{3, 4}, {5, 4}}},
      {"iij,jk->ik", {"iij", "jk"}, "ik", {{3, 3, 4}, {4, 2}}},
      {"ij,j->i", {"ij", "j"}, "i", {{3, 1}, {4}}},  // size-1 dim broadcast
      {"b i j, b j k -> b i k", {"bij", "bjk"}, "bik", {{2, 3, 0}, {2, 0, 5}}},
      {"Ab,bA->A", {"Ab", "bA"}, "A", {{3, 4}, {4, 3}}},
  };
  uint64_t seed = 300;
  for (const EinsumCase& c : cases) {
    for (bool strided : {false, true}) {
      SCOPED_TRACE(c.equation + (strided ? " strided" : ""));
      std::vector<Values> vals;
      std::vector<Tensor> ts;
      for (const Sizes& s : c.sizes) {
        vals.push_back(random_values(numel_of(s), seed++));
        ts.push_back(make_tensor(vals.back(), s, DType::Float64, strided));
      }
      Sizes want_sizes;
      const Values want = ref_einsum(c.terms, c.out, vals, c.sizes, &want_sizes);
      expect_close(einsum(c.equation, ts), want_sizes, want, 1e-12, 1e-12);
    }
  }
  // float32 and a transposed operand.
  const Values a = random_values(12, 400), b = random_values(20, 401);
  const Tensor ta = matrix(a, 3, 4, DType::Float32, Layout::Transposed);
  expect_close(einsum("ij,jk->ik", {ta, make_tensor(b, {4, 5})}), {3, 5},
               ref_mm(to_doubles(ta), to_doubles(make_tensor(b, {4, 5})), 3, 4, 5));
}

TEST_F(LinalgTest, EinsumErrors) {
  const Tensor m = make_tensor(Values(12, 1), {3, 4}), v = make_tensor(Values(4, 1), {4});
  auto msg = [&](const std::string& eq, std::vector<Tensor> ts) {
    return message_of([&] { einsum(eq, ts); });
  };
  EXPECT_TRUE(contains(msg("ij,j", {m}), "fewer operands were provided than specified"));
  EXPECT_TRUE(contains(msg("ij", {m, v}), "more operands were provided than specified"));
  EXPECT_TRUE(contains(msg("i", {m}),
                       "the number of subscripts in the equation (1) does not match "
                       "the number of dimensions (2) for operand 0"));
  EXPECT_TRUE(contains(msg("i1", {m}), "invalid subscript given at index 1"));
  EXPECT_TRUE(contains(msg("i.j", {m}), "that is not part of any ellipsis"));
  EXPECT_TRUE(contains(msg("ij->k", {m}), "output subscript k does not appear"));
  EXPECT_TRUE(contains(msg("ij->ii", {m}), "output subscript i appears more than once"));
  EXPECT_TRUE(contains(msg("ii", {m}),
                       "subscript i is repeated for operand 0 but the sizes don't "
                       "match, 3 != 4"));
  EXPECT_TRUE(contains(msg("ij,i", {m, v}), "operands do not broadcast"));
  EXPECT_TRUE(contains(msg("...ijk", {m}), "is more than the number of dimensions (2)"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         einsum("i,i", {v, make_tensor(Values(4, 1), {4}, DType::Float64)});
                       }),
                       "same dtype"));
  // Without operands the dispatcher had no key and reported a missing kernel.
  EXPECT_EQ(msg("->", {}), "einsum(): must provide at least one operand");
}

}  // namespace
}  // namespace loom::testing
