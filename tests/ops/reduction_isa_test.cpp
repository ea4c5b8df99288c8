// The per-ISA reduction and softmax kernels (ops/core/cpu/vec/) at every instruction-set
// level this CPU runs (loom::cpu::set_isa), against float64 oracles: sizes around the
// vector widths and the cascade's block and chunk boundaries, outer and inner dims, strided
// inputs, NaN and infinities, exp's accuracy in ulps and the cascade sum's error bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "loom/core/cpu_isa.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "isa_test_util.h"
#include "ops_test_util.h"

namespace loom {
namespace {

using cpu::Isa;
using testing::expect_close;
using testing::make_tensor;
using testing::supported_isa_levels;
using testing::to_doubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::nan("");

/// A counter-based generator (splitmix64 of seed + i): the same values in any language, so
/// the cascade's accuracy can be set beside PyTorch's on identical data.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
/// Uniform float in [0, 1) with 24 random bits.
float unit(uint64_t seed, uint64_t i) {
  return static_cast<float>(mix(seed * 0x100000000ULL + i) >> 40) * 0x1p-24f;
}

std::vector<double> uniform(int64_t n, uint64_t seed, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * unit(seed, i);
  return v;
}

const int64_t kSizes[] = {0,   1,    15,   16,   17,   31,   33,    63,    64,    65,
                          127, 1000, 1023, 1024, 1025, 4097, 65535, 65536, 65537, 200003};

class ReductionIsa : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
  void TearDown() override { cpu::set_isa(cpu::supported_isa()); }
};

TEST_F(ReductionIsa, SumAtEveryLevelMatchesOracleAndIsTheSameBits) {
  for (int64_t n : kSizes) {
    const std::vector<double> v = uniform(n, 1, -1, 2);
    double want = 0, mag = 0;
    for (double x : v) {
      want += static_cast<float>(x);
      mag += std::fabs(static_cast<float>(x));
    }
    const Tensor x = make_tensor(v, {n});
    std::vector<double> first;
    for (Isa l : supported_isa_levels()) {
      cpu::set_isa(l);
      const std::vector<double> got = to_doubles(sum(x));
      // 16 + log2(n / 1024) + 6 roundings at most (Note [Cascade sum]), each 2^-24 of the
      // magnitude at most.
      EXPECT_NEAR(got[0], want, 40 * 0x1p-24 * mag + 1e-30) << "n " << n << " " << isa_name(l);
      if (first.empty()) {
        first = got;
      } else {
        EXPECT_EQ(got[0], first[0]) << "n " << n << ": " << isa_name(l) << " differs from baseline";
      }
      expect_close(mean(x), {}, {n == 0 ? kNan : want / static_cast<double>(n)}, 1e-5, 1e-6);
    }
  }
}

TEST_F(ReductionIsa, HalfAndBFloat16SumsGoThroughFloat) {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    for (int64_t n : {1, 17, 4095, 4096, 4097, 70001}) {
      const Tensor x = make_tensor(uniform(n, 10, 0, 1), {n}, t);
      double want = 0;
      for (double v : to_doubles(x)) want += v;  // the stored (rounded) values
      for (Isa l : supported_isa_levels()) {
        cpu::set_isa(l);
        // The result itself is rounded to the 16-bit type (8 or 11 significant bits).
        expect_close(sum(x), {}, {want}, t == DType::BFloat16 ? 8e-3 : 1e-3, 0);
        expect_close(sum(x, {0}, false, DType::Float32), {}, {want}, 1e-6, 0);
      }
    }
  }
}

TEST_F(ReductionIsa, SumOverInnerOuterAndMiddleDims) {
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 1},     {3, 17},     {17, 3},     {16, 64},    {65, 63},  {33, 257},
      {40, 300},  {17, 1024},  {2050, 5},   {4, 31, 70}, {3, 1, 129}};
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    const std::vector<double> v = uniform(n, 2, -1, 1);
    for (bool strided : {false, true}) {
      const Tensor x = make_tensor(v, s, DType::Float32, strided);
      for (Isa l : supported_isa_levels()) {
        cpu::set_isa(l);
        for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
          for (bool keep : {false, true}) {
            // The oracle: sum over dim d in double.
            std::vector<int64_t> os = s;
            os[d] = 1;
            int64_t inner = 1;
            for (size_t k = d + 1; k < s.size(); ++k) inner *= s[k];
            const int64_t outer = n / (s[d] * inner);
            std::vector<double> want(static_cast<size_t>(outer * inner), 0.0);
            for (int64_t o = 0; o < outer; ++o) {
              for (int64_t r = 0; r < s[d]; ++r) {
                for (int64_t i = 0; i < inner; ++i) {
                  want[o * inner + i] += static_cast<float>(v[(o * s[d] + r) * inner + i]);
                }
              }
            }
            if (!keep) os.erase(os.begin() + d);
            SCOPED_TRACE(std::string(isa_name(l)) + " dim " + std::to_string(d) +
                         (strided ? " strided" : "") + (keep ? " keepdim" : ""));
            const Tensor got = sum(x, {d}, keep);
            expect_close(got, os, want, 1e-5, 1e-5);
            // Every level adds in the same order (Note [Cascade sum]): the same bits.
            cpu::set_isa(Isa::baseline);
            EXPECT_EQ(to_doubles(sum(x, {d}, keep)), to_doubles(got));
            cpu::set_isa(l);
          }
        }
      }
    }
  }
}

TEST_F(ReductionIsa, SumPropagatesNanAndInfinities) {
  for (int64_t n : {1, 17, 1000, 70000}) {
    for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
      for (Isa l : supported_isa_levels()) {
        cpu::set_isa(l);
        std::vector<double> v(static_cast<size_t>(n), 1.0);
        v[pos] = kInf;
        EXPECT_EQ(to_doubles(sum(make_tensor(v, {n})))[0], kInf) << n << " " << pos;
        v[pos] = kNan;
        EXPECT_TRUE(std::isnan(to_doubles(sum(make_tensor(v, {n})))[0])) << n << " " << pos;
        if (n > 1) {
          v[pos] = kInf;
          v[pos == 0 ? n - 1 : 0] = -kInf;  // inf + -inf is NaN, as in PyTorch
          EXPECT_TRUE(std::isnan(to_doubles(sum(make_tensor(v, {n})))[0])) << n << " " << pos;
          // Over an outer dim too: column 0 gets the NaN.
          std::vector<double> m(static_cast<size_t>(3 * n), 1.0);
          for (int64_t i = 0; i < n; ++i) m[3 * i] = v[i];
          EXPECT_TRUE(std::isnan(to_doubles(sum(make_tensor(m, {n, 3}), {0}))[0]));
        }
      }
    }
  }
}

TEST_F(ReductionIsa, MaxMinArgAtEveryLevel) {
  for (int64_t n : kSizes) {
    if (n == 0) continue;
    std::vector<double> v = uniform(n, 3, -5, 5);
    for (double& x : v) x = std::round(x * 8) / 8;  // ties
    double mx = -kInf, mn = kInf;
    int64_t imx = 0, imn = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (v[i] > mx) mx = v[i], imx = i;
      if (v[i] < mn) mn = v[i], imn = i;
    }
    const Tensor x = make_tensor(v, {n});
    for (Isa l : supported_isa_levels()) {
      cpu::set_isa(l);
      SCOPED_TRACE(std::string(isa_name(l)) + " n " + std::to_string(n));
      expect_close(max(x), {}, {mx}, 0, 0);
      expect_close(min(x), {}, {mn}, 0, 0);
      expect_close(argmax(x), {}, {static_cast<double>(imx)}, 0, 0);
      expect_close(argmin(x), {}, {static_cast<double>(imn)}, 0, 0);
      const auto [values, indices] = max(view(x, {1, n}), 1, true);
      expect_close(values, {1, 1}, {mx}, 0, 0);
      expect_close(indices, {1, 1}, {static_cast<double>(imx)}, 0, 0);
      expect_close(amin(make_tensor(v, {n}, DType::Float32, true)), {}, {mn}, 0, 0);
    }
  }
}

TEST_F(ReductionIsa, MaxAndArgmaxTakeTheFirstNan) {
  for (int64_t n : {2, 17, 100, 1025}) {
    std::vector<double> v = uniform(n, 4, -1, 1);
    v[n / 2] = kNan;
    v[n - 1] = kNan;
    v[0] = kInf;
    const Tensor x = make_tensor(v, {n});
    for (Isa l : supported_isa_levels()) {
      cpu::set_isa(l);
      EXPECT_TRUE(std::isnan(to_doubles(max(x))[0]));
      EXPECT_TRUE(std::isnan(to_doubles(amin(x))[0]));
      expect_close(argmax(x), {}, {static_cast<double>(n / 2)}, 0, 0);
      expect_close(argmin(x), {}, {static_cast<double>(n / 2)}, 0, 0);
    }
  }
  // All -inf: the first index, as in PyTorch.
  const Tensor ninf = make_tensor(std::vector<double>(40, -kInf), {40});
  for (Isa l : supported_isa_levels()) {
    cpu::set_isa(l);
    expect_close(argmax(ninf), {}, {0}, 0, 0);
    expect_close(max(ninf), {}, {-kInf}, 0, 0);
  }
}

TEST_F(ReductionIsa, VarStdNormAtEveryLevel) {
  for (int64_t n : kSizes) {
    if (n < 2) continue;
    // An offset mean: the two-pass variance must not lose the spread to it.
    const std::vector<double> v = uniform(n, 8, 99, 101);
    double mean = 0, sq = 0;
    for (double x : v) mean += static_cast<float>(x), sq += static_cast<double>(static_cast<float>(x)) * static_cast<float>(x);
    mean /= static_cast<double>(n);
    double m2 = 0;
    for (double x : v) m2 += (static_cast<float>(x) - mean) * (static_cast<float>(x) - mean);
    const Tensor x = make_tensor(v, {n});
    for (Isa l : supported_isa_levels()) {
      cpu::set_isa(l);
      SCOPED_TRACE(std::string(isa_name(l)) + " n " + std::to_string(n));
      expect_close(var(x), {}, {m2 / static_cast<double>(n - 1)}, 1e-5, 0);
      expect_close(loom::std(x), {}, {std::sqrt(m2 / static_cast<double>(n - 1))}, 1e-5, 0);
      expect_close(norm(x), {}, {std::sqrt(sq)}, 1e-6, 0);
      std::vector<double> bad = v;
      bad[n / 2] = kNan;
      EXPECT_TRUE(std::isnan(to_doubles(var(make_tensor(bad, {n})))[0]));
      bad[n / 2] = kInf;
      EXPECT_TRUE(std::isnan(to_doubles(var(make_tensor(bad, {n})))[0]));
      EXPECT_EQ(to_doubles(norm(make_tensor(bad, {n})))[0], kInf);
    }
  }
}

/// softmax / log_softmax of each line of v (rows of len) in double.
std::vector<double> softmax_oracle(const std::vector<double>& v, int64_t len, bool log) {
  std::vector<double> out(v.size());
  for (size_t b = 0; b < v.size(); b += static_cast<size_t>(len)) {
    double m = -kInf;
    for (int64_t i = 0; i < len; ++i) m = std::max(m, static_cast<double>(static_cast<float>(v[b + i])));
    double s = 0;
    for (int64_t i = 0; i < len; ++i) s += std::exp(static_cast<float>(v[b + i]) - m);
    for (int64_t i = 0; i < len; ++i) {
      const double d = static_cast<float>(v[b + i]) - m;
      out[b + i] = log ? d - std::log(s) : std::exp(d) / s;
    }
  }
  return out;
}

TEST_F(ReductionIsa, SoftmaxForwardAndBackwardAtEveryLevel) {
  for (int64_t len : {1, 15, 16, 17, 33, 1000, 1025, 4097}) {
    const int64_t rows = 3;
    const std::vector<double> v = uniform(rows * len, 5, -20, 20);
    const std::vector<double> gv = uniform(rows * len, 6, -1, 1);
    const Tensor x = make_tensor(v, {rows, len});
    const Tensor g = make_tensor(gv, {rows, len});
    const std::vector<double> sm = softmax_oracle(v, len, false);
    const std::vector<double> lsm = softmax_oracle(v, len, true);
    for (Isa l : supported_isa_levels()) {
      cpu::set_isa(l);
      SCOPED_TRACE(std::string(isa_name(l)) + " len " + std::to_string(len));
      const Tensor y = softmax(x, 1);
      const Tensor ly = log_softmax(x, 1);
      expect_close(y, {rows, len}, sm, 1e-5, 1e-7);
      expect_close(ly, {rows, len}, lsm, 1e-5, 1e-5);
      // Backward from the kernel's own outputs, against the formulas in double.
      const std::vector<double> yd = to_doubles(y), lyd = to_doubles(ly);
      std::vector<double> want(yd.size()), lwant(yd.size());
      for (int64_t r = 0; r < rows; ++r) {
        double dot = 0, gs = 0;
        for (int64_t i = 0; i < len; ++i) {
          const size_t k = static_cast<size_t>(r * len + i);
          dot += static_cast<float>(gv[k]) * yd[k];
          gs += static_cast<float>(gv[k]);
        }
        for (int64_t i = 0; i < len; ++i) {
          const size_t k = static_cast<size_t>(r * len + i);
          want[k] = yd[k] * (static_cast<float>(gv[k]) - dot);
          lwant[k] = static_cast<float>(gv[k]) - std::exp(lyd[k]) * gs;
        }
      }
      expect_close(_softmax_backward_data(g, y, 1, DType::Float32), {rows, len}, want, 1e-4, 1e-6);
      expect_close(_log_softmax_backward_data(g, ly, 1, DType::Float32), {rows, len}, lwant, 1e-4,
                   1e-5);
    }
  }
}

TEST_F(ReductionIsa, SoftmaxOverAMiddleDimAndLogsumexp) {
  for (int64_t len : {1, 17, 40}) {
    for (int64_t inner : {3, 64, 70}) {
      const int64_t outer = 2, n = outer * len * inner;
      std::vector<double> v = uniform(n, 9, -10, 10);
      v[inner + 1] = -kInf;
      // The oracle: lines along dim 1, gathered, softmaxed and put back.
      std::vector<double> want(v.size()), lwant(v.size()), lse(static_cast<size_t>(outer * inner));
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t c = 0; c < inner; ++c) {
          std::vector<double> line(static_cast<size_t>(len));
          for (int64_t j = 0; j < len; ++j) line[j] = v[(o * len + j) * inner + c];
          const std::vector<double> sm = softmax_oracle(line, len, false);
          const std::vector<double> lsm = softmax_oracle(line, len, true);
          double m = -kInf, s = 0;
          for (double x : line) m = std::max(m, static_cast<double>(static_cast<float>(x)));
          for (double x : line) s += std::exp(static_cast<float>(x) - m);
          lse[o * inner + c] = m == -kInf ? -kInf : m + std::log(s);  // PyTorch: -inf
          for (int64_t j = 0; j < len; ++j) {
            want[(o * len + j) * inner + c] = sm[j];
            lwant[(o * len + j) * inner + c] = lsm[j];
          }
        }
      }
      const Tensor x = make_tensor(v, {outer, len, inner});
      for (Isa l : supported_isa_levels()) {
        cpu::set_isa(l);
        SCOPED_TRACE(std::string(isa_name(l)) + " len " + std::to_string(len) + " inner " +
                     std::to_string(inner));
        expect_close(softmax(x, 1), {outer, len, inner}, want, 1e-5, 1e-7);
        expect_close(log_softmax(x, 1), {outer, len, inner}, lwant, 1e-5, 1e-5);
        expect_close(logsumexp(x, {1}), {outer, inner}, lse, 1e-6, 1e-6);
        // logsumexp over contiguous rows: the last dim of the transposed oracle, rows of len.
        const Tensor rows = make_tensor(v, {outer * inner, len});
        std::vector<double> rl(static_cast<size_t>(outer * inner));
        for (int64_t r = 0; r < outer * inner; ++r) {
          double m = -kInf, s = 0;
          for (int64_t j = 0; j < len; ++j) m = std::max(m, static_cast<double>(static_cast<float>(v[r * len + j])));
          for (int64_t j = 0; j < len; ++j) s += std::exp(static_cast<float>(v[r * len + j]) - m);
          rl[r] = m == -kInf ? -kInf : m + std::log(s);
        }
        expect_close(logsumexp(rows, {1}), {outer * inner}, rl, 1e-6, 1e-6);
      }
    }
  }
}

TEST_F(ReductionIsa, SoftmaxNanAndInfinities) {
  for (int64_t len : {3, 20, 100}) {
    for (Isa l : supported_isa_levels()) {
      cpu::set_isa(l);
      std::vector<double> v = uniform(len, 7, -1, 1);
      v[1] = -kInf;  // weight 0
      std::vector<double> want = softmax_oracle(v, len, false);
      expect_close(softmax(make_tensor(v, {len}), 0), {len}, want, 1e-5, 1e-7);
      v[2] = kNan;  // a NaN makes the line NaN
      const std::vector<double> y = to_doubles(softmax(make_tensor(v, {len}), 0));
      const std::vector<double> ly = to_doubles(log_softmax(make_tensor(v, {len}), 0));
      for (int64_t i = 0; i < len; ++i) EXPECT_TRUE(std::isnan(y[i]) && std::isnan(ly[i])) << i;
      // A line of -inf is NaN (0/0), as in PyTorch.
      const std::vector<double> all = to_doubles(softmax(make_tensor(std::vector<double>(len, -kInf), {len}), 0));
      for (double a : all) EXPECT_TRUE(std::isnan(a));
    }
  }
}

/// ulps between a float result and the exact value.
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double ulp = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) -
                     std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

TEST_F(ReductionIsa, VectorExpIsWithinTwoUlps) {
  // _log_softmax_backward_data(g, y) with g = (0, 1) on a line (y, 0) is 0 - exp(y) * 1:
  // the kernel's exp of y, exactly.
  const int64_t n = 200000;
  std::vector<float> y(static_cast<size_t>(2 * n)), g(static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    y[2 * i] = static_cast<float>(-87.0 + (88.7 + 87.0) * static_cast<double>(i) / (n - 1));
    y[2 * i + 1] = 0;
    g[2 * i] = 0;
    g[2 * i + 1] = 1;
  }
  const Tensor yt = Tensor::from_vector(y, {n, 2}), gt = Tensor::from_vector(g, {n, 2});
  for (Isa l : supported_isa_levels()) {
    cpu::set_isa(l);
    const std::vector<double> r = to_doubles(_log_softmax_backward_data(gt, yt, 1, DType::Float32));
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      worst = std::max(worst, ulps(static_cast<float>(-r[2 * i]), std::exp(static_cast<double>(y[2 * i]))));
    }
    std::printf("exp max error at %s: %.2f ulp\n", isa_name(l), worst);
    EXPECT_LE(worst, 2.0) << isa_name(l);
    // The ends: -inf and far below give 0, far above and +inf give inf, NaN stays NaN.
    const std::vector<float> ends = {-std::numeric_limits<float>::infinity(), -200, -104, 89, 200,
                                     std::numeric_limits<float>::infinity(), NAN};
    std::vector<float> ye, ge;
    for (float e : ends) ye.insert(ye.end(), {e, 0}), ge.insert(ge.end(), {0, 1});
    const auto k = static_cast<int64_t>(ends.size());
    const std::vector<double> re = to_doubles(_log_softmax_backward_data(
        Tensor::from_vector(ge, {k, 2}), Tensor::from_vector(ye, {k, 2}), 1, DType::Float32));
    EXPECT_EQ(re[0], 0.0);
    EXPECT_EQ(re[2], 0.0);
    EXPECT_EQ(re[4], 0.0);
    EXPECT_EQ(re[6], -kInf);
    EXPECT_EQ(re[8], -kInf);
    EXPECT_EQ(re[10], -kInf);
    EXPECT_TRUE(std::isnan(re[12]));
  }
}

/// The data sets of the accuracy comparison in docs/design/cpu-kernels.md (the same
/// generator drives PyTorch there): name, n, element i.
struct DataSet {
  const char* name;
  float (*at)(int64_t i);
};
const DataSet kDataSets[] = {
    {"uniform [0,1)", [](int64_t i) { return unit(11, i); }},
    {"uniform [-1,1)", [](int64_t i) { return 2 * unit(12, i) - 1; }},
    {"constant 0.1", [](int64_t) { return 0.1f; }},
    {"wide exponents", [](int64_t i) {
       return (2 * unit(13, i) - 1) * std::ldexp(1.0f, static_cast<int>(unit(14, i) * 40) - 20);
     }},
};

TEST_F(ReductionIsa, CascadeSumErrorStaysWithinItsBound) {
  // 16M elements: 256 chunks of 2^16 on the threads, each a cascade of 64 blocks.
  const int64_t n = int64_t{1} << 24;
  for (const DataSet& d : kDataSets) {
    std::vector<float> v(static_cast<size_t>(n));
    double exact = 0, mag = 0;  // float64 in 4096-element pieces: error far below float's
    for (int64_t b = 0; b < n; b += 4096) {
      double s = 0, m = 0;
      for (int64_t i = b; i < b + 4096; ++i) {
        v[i] = d.at(i);
        s += v[i];
        m += std::fabs(v[i]);
      }
      exact += s;
      mag += m;
    }
    const Tensor x = Tensor::from_vector(v, {n});
    const double got = to_doubles(sum(x))[0];
    const double rel = std::fabs(got - exact) / std::fabs(exact);
    std::printf("cascade sum, %s, n=2^24: relative error %.3g (%.2f ulp of the result, %.3g of sum|x|)\n",
                d.name, rel, ulps(static_cast<float>(got), exact), std::fabs(got - exact) / mag);
    // Within 40 roundings of the magnitude (Note [Cascade sum]); typical errors are far smaller.
    EXPECT_LE(std::fabs(got - exact), 40 * 0x1p-24 * mag) << d.name;
  }
}

}  // namespace
}  // namespace loom
