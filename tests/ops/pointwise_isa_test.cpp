// The pointwise engine's per-ISA fast path (ops/core/cpu/vec/pointwise_kernels.cpp, chosen in
// cpu/pointwise_engine.cpp; Note [Per-ISA fast path] in cpu/tensor_iterator.h) at every
// instruction-set level this CPU runs, against float64 oracles: float32 and float64 add, sub,
// mul, div (tensor, Scalar and 0-d tensor forms; functional, in-place and out=), relu,
// threshold_backward, sigmoid, silu, fill_ and copy_, on sizes around the vector widths, the parallel grain
// and the streaming-store threshold, with misaligned outputs; NaN and signed zeros; and the
// strided, broadcast and mixed-dtype cases that take the generic loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "loom/core/cpu_isa.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "isa_test_util.h"
#include "ops_test_util.h"

namespace loom {
namespace {

using cpu::Isa;
using testing::flat_tensor;
using testing::random_values;
using testing::to_doubles;

// Around the vector widths (4, 8, 16 floats), the parallel grain (32768) and, last, above
// the streaming threshold for float32 (16 MiB = 4M floats).
const std::vector<int64_t> kSizes = {0, 1, 2, 15, 16, 17, 31, 33, 1000, 32768 + 5, 65537};
constexpr int64_t kStreamFloats = (int64_t{16} << 20) / 4 + 17;

/// A contiguous but not vector-aligned tensor of n elements: element 1 of a larger buffer.
Tensor misaligned_empty(int64_t n, DType dtype) {
  return Tensor::empty({n + 1}, TensorOptions{}.with(dtype)).narrow(0, 1, n);
}

double eps_of(DType d) { return d == DType::Float32 ? 0x1p-23 : 0x1p-52; }

/// Expects got == want elementwise within tol[i] (NaN equals NaN).
void expect_within(const Tensor& got, const std::vector<double>& want,
                   const std::vector<double>& tol, const std::string& what) {
  const std::vector<double> g = to_doubles(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = (std::isnan(want[i]) && std::isnan(g[i])) || g[i] == want[i] ||
                    std::fabs(g[i] - want[i]) <= tol[i];
    ASSERT_TRUE(ok) << what << ", element " << i << " of " << g.size() << ": got " << g[i]
                    << ", expected " << want[i];
  }
}

class PointwiseIsa : public testing::IsaLevelTest {
 protected:
  void SetUp() override {
    testing::load_ops_core();
    IsaLevelTest::SetUp();
  }
};

// add/sub with alpha, mul, div: the oracle in float64 from the stored inputs; the result may
// differ by a rounding of each operation (a fused multiply-add rounds once).
TEST_P(PointwiseIsa, BinaryTensorFormsMatchTheOracle) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<int64_t> sizes = kSizes;
    if (dtype == DType::Float32) sizes.push_back(kStreamFloats);
    for (int64_t n : sizes) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      const Tensor a = flat_tensor(random_values(n, 1 + n, -4, 4), dtype);
      std::vector<double> bv = random_values(n, 2 + n, 0.5, 3);
      for (size_t i = 0; i < bv.size(); i += 2) bv[i] = -bv[i];  // nonzero divisors, both signs
      const Tensor b = flat_tensor(bv, dtype);
      const std::vector<double> av = to_doubles(a), bd = to_doubles(b);
      const double e = eps_of(dtype);
      auto check = [&](const char* op, double alpha, auto f, const Tensor& got) {
        std::vector<double> want(av.size()), tol(av.size());
        for (size_t i = 0; i < av.size(); ++i) {
          want[i] = f(av[i], bd[i]);
          tol[i] = 2 * e * (std::fabs(av[i]) + std::fabs(alpha * bd[i]) + std::fabs(want[i]));
        }
        expect_within(got, want, tol, what + " " + op);
      };
      const auto plus = [](double x, double y) { return x + y; };
      check("add", 1, plus, add(a, b));
      Tensor out = misaligned_empty(n, dtype);
      add_out(out, a, b);  // out= into a misaligned view: the streaming loop's head
      check("add.out misaligned", 1, plus, out);
      if (n == kStreamFloats) continue;  // the other formulas share the loop; keep it quick
      check("add alpha", 2.5, [](double x, double y) { return x + 2.5 * y; }, add(a, b, 2.5));
      check("sub alpha", 0.5, [](double x, double y) { return x - 0.5 * y; }, sub(a, b, 0.5));
      check("mul", 0, [](double x, double y) { return x * y; }, mul(a, b));
      check("div", 0, [](double x, double y) { return x / y; }, div(a, b));
      Tensor c = a.clone();
      add_(c, b);
      check("add_", 1, plus, c);
      c = a.clone();
      mul_(c, b);
      check("mul_", 0, [](double x, double y) { return x * y; }, c);
    }
  }
}

TEST_P(PointwiseIsa, ScalarAndZeroDimFormsMatchTheOracle) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t n : kSizes) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      const Tensor a = flat_tensor(random_values(n, 3 + n, -4, 4), dtype);
      const std::vector<double> av = to_doubles(a);
      const double e = eps_of(dtype);
      auto check = [&](const char* op, auto f, const Tensor& got) {
        std::vector<double> want(av.size()), tol(av.size());
        for (size_t i = 0; i < av.size(); ++i) {
          want[i] = f(av[i]);
          tol[i] = 4 * e * (std::fabs(av[i]) + std::fabs(want[i]) + 4);
        }
        expect_within(got, want, tol, what + " " + op);
      };
      check("add Scalar", [](double x) { return x + 1.25; }, add(a, 1.25));
      check("sub Scalar alpha", [](double x) { return x - 2 * 0.75; }, sub(a, 0.75, 2));
      check("mul Scalar", [](double x) { return x * 0.5; }, mul(a, 0.5));
      check("div Scalar", [](double x) { return x / 3; }, div(a, 3.0));
      // A 0-d tensor operand is a broadcast single value (stride 0) on the fast path.
      const Tensor s = Tensor::empty({}, TensorOptions{}.with(dtype));
      fill_(s, 1.5);
      check("add 0-d", [](double x) { return x + 1.5; }, add(a, s));
      check("mul 0-d", [](double x) { return x * 1.5; }, mul(a, s));
      check("div 0-d", [](double x) { return x / 1.5; }, div(a, s));
      Tensor c = a.clone();
      mul_(c, 0.5);
      check("mul_ Scalar", [](double x) { return x * 0.5; }, c);
    }
  }
}

// relu keeps NaN (PyTorch: relu(NaN) = NaN) and gives +0 for -0 and -inf; threshold_backward
// passes the gradient where self is NaN and zeroes it where self <= threshold.
TEST_P(PointwiseIsa, ReluAndThresholdBackwardSpecialValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<int64_t> sizes = kSizes;
    if (dtype == DType::Float32) sizes.push_back(kStreamFloats);
    for (int64_t n : sizes) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      std::vector<double> xv = random_values(n, 5 + n, -2, 2);
      const double special[] = {nan, -0.0, 0.0, inf, -inf, 0.5, -0.5, 1e-40};
      for (size_t i = 0; i < xv.size(); i += 7) xv[i] = special[(i / 7) % 8];
      if (n > 0) xv.back() = nan;  // in the tail
      const Tensor x = flat_tensor(xv, dtype);
      const Tensor g = flat_tensor(random_values(n, 6 + n, -1, 1), dtype);
      const std::vector<double> xd = to_doubles(x), gd = to_doubles(g);
      std::vector<double> want_relu(xd.size()), want_tb(xd.size()), exact(xd.size(), 0);
      for (size_t i = 0; i < xd.size(); ++i) {
        want_relu[i] = (xd[i] > 0 || std::isnan(xd[i])) ? xd[i] : 0.0;
        want_tb[i] = xd[i] <= 0.5 ? 0.0 : gd[i];
      }
      const Tensor r = relu(x);
      expect_within(r, want_relu, exact, what + " relu");
      const std::vector<double> rd = to_doubles(r);
      for (size_t i = 0; i < rd.size(); ++i) {
        if (rd[i] == 0) {
          ASSERT_FALSE(std::signbit(rd[i])) << what << " relu(-0) is +0, " << i;
        }
      }
      Tensor c = x.clone();
      relu_(c);
      expect_within(c, want_relu, exact, what + " relu_");
      expect_within(threshold_backward(g, x, 0.5), want_tb, exact, what + " threshold_backward");
    }
  }
}

// sigmoid and silu (float32: a vector exp of about 1 ulp; float64: the generic loop).
TEST_P(PointwiseIsa, SigmoidAndSiluMatchTheOracle) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t n : kSizes) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      std::vector<double> xv = random_values(n, 13 + n, -12, 12);
      const double special[] = {nan, inf, -inf, 100, -100, -88.5, -89, 0, -0.0, 20, 1e-30};
      for (size_t i = 0; i < xv.size(); i += 5) xv[i] = special[(i / 5) % 11];
      if (n > 0) xv.back() = -inf;  // in the tail
      const Tensor x = flat_tensor(xv, dtype);
      const std::vector<double> xd = to_doubles(x);
      std::vector<double> want_sig(xd.size()), want_silu(xd.size()), tol_sig(xd.size()),
          tol_silu(xd.size());
      const double rtol = dtype == DType::Float32 ? 6e-7 : 1e-15;
      for (size_t i = 0; i < xd.size(); ++i) {
        const double e = std::exp(-xd[i]);
        want_sig[i] = 1 / (1 + e);
        want_silu[i] = xd[i] / (1 + e);  // NaN at -inf (-inf / inf), as in PyTorch
        tol_sig[i] = 1e-36 + rtol * std::fabs(want_sig[i]);
        tol_silu[i] = 1e-36 + rtol * std::fabs(want_silu[i]);
      }
      expect_within(sigmoid(x), want_sig, tol_sig, what + " sigmoid");
      expect_within(silu(x), want_silu, tol_silu, what + " silu");
      Tensor c = x.clone();
      silu_(c);
      expect_within(c, want_silu, tol_silu, what + " silu_");
    }
  }
}

TEST_P(PointwiseIsa, FillAndCopyEveryElementSize) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::Bool,
                      DType::Int64}) {
    std::vector<int64_t> sizes = kSizes;
    if (dtype == DType::Float32 || dtype == DType::Int8) sizes.push_back(kStreamFloats);
    for (int64_t n : sizes) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      const double v = dtype == DType::Bool ? 1 : 3;
      Tensor t = misaligned_empty(n, dtype);
      fill_(t, v);
      expect_within(t, std::vector<double>(n, v), std::vector<double>(n, 0), what + " fill_");
      Tensor dst = Tensor::empty({n}, TensorOptions{}.with(dtype));
      copy_(dst, t);
      expect_within(dst, std::vector<double>(n, v), std::vector<double>(n, 0), what + " copy_");
    }
  }
}

// A contiguous copy_ puts every element in its place, small (memcpy) and large (the
// streaming byte loop), with a misaligned source and destination.
TEST_P(PointwiseIsa, CopyKeepsEveryElementInPlace) {
  for (DType dtype : {DType::Float32, DType::Int8, DType::Int64}) {
    std::vector<int64_t> sizes = kSizes;
    sizes.push_back(dtype == DType::Int64 ? kStreamFloats / 2 : kStreamFloats);
    if (dtype == DType::Int8) sizes.push_back(kStreamFloats * 4);  // 64 MiB of bytes
    for (int64_t n : sizes) {
      const std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
      const int64_t period = dtype == DType::Int8 ? 127 : 100003;
      Tensor src = misaligned_empty(n, dtype);
      copy_(src, remainder(arange(n), Scalar(period)));  // int64: exact past 2^24
      Tensor dst = misaligned_empty(n, dtype);
      copy_(dst, src);
      std::vector<double> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = static_cast<double>(i % period);
      expect_within(dst, want, std::vector<double>(static_cast<size_t>(n), 0), what);
    }
  }
}

// Strided, row-broadcast and mixed-dtype operands take the generic loop: same formulas.
TEST_P(PointwiseIsa, GenericCasesMatchTheOracle) {
  const int64_t rows = 37, cols = 33;
  const Tensor a = testing::make_tensor(random_values(rows * cols, 7), {rows, cols},
                                        DType::Float32, /*strided=*/true);
  const Tensor row = testing::make_tensor(random_values(cols, 8), {cols});
  const Tensor d = testing::make_tensor(random_values(rows * cols, 9), {rows, cols}, DType::Float64);
  const std::vector<double> av = to_doubles(a), rv = to_doubles(row), dv = to_doubles(d);
  std::vector<double> want_row(av.size()), want_mixed(av.size()), tol(av.size());
  for (int64_t i = 0; i < rows * cols; ++i) {
    want_row[i] = av[i] + 2 * rv[i % cols];
    want_mixed[i] = av[i] * dv[i];
    tol[i] = 1e-6 * (std::fabs(av[i]) + std::fabs(rv[i % cols]) + std::fabs(dv[i]) + 1);
  }
  expect_within(add(a, row, 2), want_row, tol, "strided + row broadcast");
  const Tensor m = mul(a, d);
  EXPECT_EQ(m.dtype(), DType::Float64);
  expect_within(m, want_mixed, tol, "float32 strided * float64");
  std::vector<double> want_relu(av.size());
  for (size_t i = 0; i < av.size(); ++i) want_relu[i] = av[i] > 0 ? av[i] : 0;
  expect_within(relu(a), want_relu, std::vector<double>(av.size(), 0), "strided relu");
}

INSTANTIATE_TEST_SUITE_P(Levels, PointwiseIsa, ::testing::ValuesIn(testing::all_isa_levels()),
                         testing::isa_level_name);

}  // namespace
}  // namespace loom
