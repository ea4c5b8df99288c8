// Reductions, scans and softmax of ops_core against float64 oracles written here: random
// inputs, contiguous and strided, several dims (negative too), keepdim, zero-size, 0-dim,
// ties, NaN, and PyTorch's error messages.
#include "loom/ops/reduction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::expect_close;
using testing::make_tensor;
using testing::message_of;
using testing::random_values;
using testing::to_doubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::nan("");

using Group = std::vector<double>;

/// The oracle: output sizes and f applied to each output's group of elements (reduced dims
/// in row-major order). dims empty means all dims.
struct Ref {
  std::vector<int64_t> sizes;
  std::vector<double> values;
};

Ref ref_reduce(const std::vector<double>& x, const std::vector<int64_t>& sizes,
               std::vector<int64_t> dims, bool keepdim,
               const std::function<double(const Group&)>& f) {
  const auto nd = static_cast<int64_t>(sizes.size());
  std::vector<bool> mask(sizes.size(), dims.empty());
  for (int64_t d : dims) mask[(d + nd) % std::max<int64_t>(nd, 1)] = true;
  Ref r;
  std::vector<int64_t> out_dims;
  int64_t outer = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (!mask[d]) {
      r.sizes.push_back(sizes[d]);
      outer *= sizes[d];
    } else if (keepdim) {
      r.sizes.push_back(1);
    }
  }
  std::vector<Group> groups(static_cast<size_t>(outer));
  std::vector<int64_t> idx(sizes.size(), 0);
  for (size_t k = 0; k < x.size(); ++k) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d) {
      if (!mask[d]) o = o * sizes[d] + idx[d];
    }
    groups[o].push_back(x[k]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  for (const Group& g : groups) r.values.push_back(f(g));
  return r;
}

/// The oracle for ops along one dim: f maps each line to a line.
std::vector<double> ref_lines(const std::vector<double>& x, const std::vector<int64_t>& sizes,
                              int64_t dim, const std::function<Group(const Group&)>& f) {
  const auto nd = static_cast<int64_t>(sizes.size());
  if (nd == 0) return f(x);
  dim = (dim + nd) % nd;
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= sizes[d];
  const int64_t len = sizes[dim];
  const int64_t outer = static_cast<int64_t>(x.size()) / std::max<int64_t>(len * inner, 1);
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      Group g;
      for (int64_t j = 0; j < len; ++j) g.push_back(x[(o * len + j) * inner + i]);
      const Group r = f(g);
      for (int64_t j = 0; j < len; ++j) out[(o * len + j) * inner + i] = r[j];
    }
  }
  return out;
}

double g_sum(const Group& g) { return std::accumulate(g.begin(), g.end(), 0.0); }
double g_prod(const Group& g) {
  return std::accumulate(g.begin(), g.end(), 1.0, std::multiplies<>());
}
double g_mean(const Group& g) { return g_sum(g) / static_cast<double>(g.size()); }
double g_max(const Group& g) { return *std::max_element(g.begin(), g.end()); }
double g_min(const Group& g) { return *std::min_element(g.begin(), g.end()); }
double g_argmax(const Group& g) {
  return static_cast<double>(std::max_element(g.begin(), g.end()) - g.begin());
}
double g_argmin(const Group& g) {
  return static_cast<double>(std::min_element(g.begin(), g.end()) - g.begin());
}
std::function<double(const Group&)> g_var(double correction) {
  return [correction](const Group& g) {
    const double m = g_mean(g);
    double s = 0;
    for (double v : g) s += (v - m) * (v - m);
    return s / std::max(0.0, static_cast<double>(g.size()) - correction);
  };
}

class Reduction : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
};

/// The shapes and dim lists every dim-list reduction is checked on.
struct Case {
  std::vector<int64_t> sizes;
  std::vector<int64_t> dims;
};
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {{3, 4, 5}, {}},  {{3, 4, 5}, {0}},    {{3, 4, 5}, {-1}},
      {{3, 4, 5}, {1}}, {{3, 4, 5}, {0, 2}}, {{3, 4, 5}, {-1, 1}},
      {{7}, {0}},       {{2, 1, 3}, {1}},    {{2, 3, 2, 2}, {0, 3}},
  };
  return c;
}

/// Checks op(x, dims, keepdim) against ref on every case, dtype and layout.
void check_dim_reduction(const std::function<Tensor(const Tensor&, IntArrayRef, bool)>& op,
                         const std::function<double(const Group&)>& ref,
                         std::initializer_list<DType> dtypes, double lo = -2, double hi = 2,
                         double rtol = 1e-5) {
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    int64_t n = 1;
    for (int64_t s : c.sizes) n *= s;
    std::vector<double> x = random_values(static_cast<size_t>(n), seed++, lo, hi);
    for (DType t : dtypes) {
      // The oracle sees exactly the values the tensor holds.
      if (is_integral(t)) {
        for (double& v : x) v = std::round(v);
      } else if (t == DType::Float32) {
        for (double& v : x) v = static_cast<float>(v);
      }
      for (bool strided : {false, true}) {
        for (bool keepdim : {false, true}) {
          SCOPED_TRACE(::testing::PrintToString(c.sizes) + " dims " +
                       ::testing::PrintToString(c.dims) + " " + std::string(dtype_name(t)) +
                       (strided ? " strided" : "") + (keepdim ? " keepdim" : ""));
          const Ref r = ref_reduce(x, c.sizes, c.dims, keepdim, ref);
          const double tol = t == DType::Float32 ? rtol : 1e-12;
          expect_close(op(make_tensor(x, c.sizes, t, strided), c.dims, keepdim), r.sizes, r.values,
                       tol, tol);
        }
      }
    }
  }
}

// ---- sum, mean, prod ----

TEST_F(Reduction, SumOverDimsMatchesOracle) {
  check_dim_reduction([](const Tensor& x, IntArrayRef d, bool k) { return sum(x, d, k); }, g_sum,
                      {DType::Float32, DType::Float64, DType::Int64});
}

TEST_F(Reduction, SumDtypes) {
  EXPECT_EQ(sum(make_tensor({1, 2, 3}, {3}, DType::Int32)).dtype(), DType::Int64);
  EXPECT_EQ(sum(make_tensor({1, 0, 1}, {3}, DType::Bool)).item<int64_t>(), 2);
  EXPECT_EQ(sum(make_tensor({1, 2}, {2}, DType::Float32)).dtype(), DType::Float32);
  const Tensor d = sum(make_tensor({1.5, 2.25}, {2}, DType::Float32), DType::Float64);
  EXPECT_EQ(d.dtype(), DType::Float64);
  EXPECT_EQ(d.item<double>(), 3.75);
  // A dtype converts the input first: 1.5 and 2.25 truncate to 1 and 2.
  EXPECT_EQ(sum(make_tensor({1.5, 2.25}, {2}, DType::Float32), DType::Int64).item<int64_t>(), 3);
  EXPECT_EQ(sum(make_tensor({1, 2, 3, 4}, {2, 2}, DType::Float16), {1}).dtype(), DType::Float16);
  expect_close(sum(make_tensor({1, 2, 3, 4}, {2, 2}, DType::BFloat16), {0}), {2}, {4, 6});
}

TEST_F(Reduction, SumZeroSizeAndScalar) {
  expect_close(sum(make_tensor({}, {0, 3})), {}, {0});
  expect_close(sum(make_tensor({}, {0, 3}), {0}), {3}, {0, 0, 0});
  expect_close(sum(make_tensor({}, {0, 3}), {1}, true), {0, 1}, {});
  expect_close(sum(make_tensor({2.5}, {})), {}, {2.5});
  expect_close(sum(make_tensor({2.5}, {}), {0}), {}, {2.5});
  expect_close(sum(make_tensor({2.5}, {}), {-1}, true), {}, {2.5});
}

TEST_F(Reduction, SumOf16MFloatsIsAccurate) {
  const int64_t n = int64_t{1} << 24;
  const Tensor x = Tensor::from_vector(std::vector<float>(static_cast<size_t>(n), 0.1f), {n});
  const double want = static_cast<double>(n) * static_cast<double>(0.1f);
  // The float cascade (Note [Cascade sum]) is 2 ulps off on this input, which rounds the
  // same way at every step; PyTorch 2.x's float cascade is 7 ulps (5.2e-7) off.
  expect_close(sum(x), {}, {want}, 2e-7, 0);
  // Split reductions of a large row (partial results merged across chunks).
  expect_close(sum(x.as_strided_view({2, n / 2}, {n / 2, 1}, 0), {1}), {2}, {want / 2, want / 2},
               2e-7, 0);
}

TEST_F(Reduction, MeanMatchesOracle) {
  check_dim_reduction([](const Tensor& x, IntArrayRef d, bool k) { return mean(x, d, k); }, g_mean,
                      {DType::Float32, DType::Float64});
  expect_close(mean(make_tensor({1, 2, 3, 6}, {2, 2}, DType::Float64)), {}, {3});
  expect_close(mean(make_tensor({1, 2, 3, 6}, {2, 2}, DType::Int64), DType::Float32), {}, {3});
  expect_close(mean(make_tensor({}, {0, 2})), {}, {kNan});
  expect_close(mean(make_tensor({}, {0, 2}), {0}), {2}, {kNan, kNan});
}

TEST_F(Reduction, MeanOfIntegersIsAnError) {
  const std::string msg = message_of<TypeError>([] {
    mean(make_tensor({1, 2}, {2}, DType::Int64));
  });
  EXPECT_TRUE(contains(msg,
                       "mean(): could not infer output dtype. Input dtype must be either a "
                       "floating point or complex dtype. Got: int64"))
      << msg;
}

TEST_F(Reduction, ProdOneDimAndEdgeCases) {
  const std::vector<double> x = random_values(60, 7, 0.5, 1.5);
  for (int64_t d : {0, 1, 2, -1, -3}) {
    for (bool strided : {false, true}) {
      const Ref r = ref_reduce(x, {3, 4, 5}, {d}, false, g_prod);
      expect_close(prod(make_tensor(x, {3, 4, 5}, DType::Float64, strided), d), r.sizes, r.values,
                   1e-12);
    }
  }
  expect_close(prod(make_tensor({}, {0})), {}, {1});
  expect_close(prod(make_tensor({}, {2, 0}), 1), {2}, {1, 1});
  const Tensor i = prod(make_tensor({2, 3, 4}, {3}, DType::Int32));
  EXPECT_EQ(i.dtype(), DType::Int64);
  EXPECT_EQ(i.item<int64_t>(), 24);
}

TEST_F(Reduction, OuterReductionsOverTilesOfOutputs) {
  // Kept dims end with a stride-1 dim, reduced dims are strided: outputs are reduced in tiles.
  std::vector<double> x = random_values(5 * 30 * 130, 29);
  x[7 * 130 + 100] = kNan;
  for (std::vector<int64_t> dims : {std::vector<int64_t>{1}, std::vector<int64_t>{0, 1}}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    const Tensor in = make_tensor(x, {5, 30, 130}, DType::Float64);
    const Ref s = ref_reduce(x, {5, 30, 130}, dims, false, g_sum);
    expect_close(sum(in, dims), s.sizes, s.values, 1e-12);
    const Ref m = ref_reduce(x, {5, 30, 130}, dims, true, [](const Group& g) {
      for (double v : g) {
        if (std::isnan(v)) return v;
      }
      return g_max(g);
    });
    expect_close(amax(in, dims, true), m.sizes, m.values, 0, 0);
    std::vector<double> r = x;
    for (double& v : r) v = std::isnan(v) ? 0 : std::round(v * 4);
    const Ref i = ref_reduce(r, {5, 30, 130}, dims, false, g_sum);
    expect_close(sum(make_tensor(r, {5, 30, 130}, DType::Int64), dims), i.sizes, i.values, 0, 0);
    const Ref a = ref_reduce(r, {5, 30, 130}, dims, false, [](const Group& g) {
      return std::all_of(g.begin(), g.end(), [](double v) { return v != 0; }) ? 1.0 : 0.0;
    });
    expect_close(all(make_tensor(r, {5, 30, 130}, DType::Int64), dims), a.sizes, a.values, 0, 0);
  }
}

TEST_F(Reduction, ZeroAndNegativeStrides) {
  const Tensor base = make_tensor({1, 2, 3, 4, 5, 6}, {6}, DType::Float64);
  // An expanded view: every row is the same storage.
  const Tensor ex = base.as_strided_view({3, 2}, {0, 1}, 0);
  expect_close(sum(ex, {0}), {2}, {3, 6});
  expect_close(sum(ex, {1}), {3}, {3, 3, 3});
  expect_close(sum(ex), {}, {9});
  expect_close(amax(ex, {0}), {2}, {1, 2});
  expect_close(cumsum(ex, 0), {3, 2}, {1, 2, 2, 4, 3, 6});
  expect_close(softmax(ex, 0), {3, 2}, {1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  // A transposed view.
  const Tensor tr = base.as_strided_view({3, 2}, {1, 3}, 0);  // [[1, 4], [2, 5], [3, 6]]
  expect_close(sum(tr, {0}), {2}, {6, 15});
  expect_close(std::get<1>(max(tr, 1)), {3}, {1, 1, 1});
  expect_close(argmax(tr), {}, {5});
  expect_close(cumsum(tr, 1), {3, 2}, {1, 5, 2, 7, 3, 9});
}

// ---- max, min, amax, amin, argmax, argmin ----

TEST_F(Reduction, MaxMinDimMatchOracleWithIndices) {
  const std::vector<double> x = random_values(60, 11);
  for (DType t : {DType::Float32, DType::Float64}) {
    for (int64_t d : {0, 1, 2, -1, -2}) {
      for (bool strided : {false, true}) {
        for (bool keepdim : {false, true}) {
          const Tensor in = make_tensor(x, {3, 4, 5}, t, strided);
          auto [mv, mi] = max(in, d, keepdim);
          const Ref rv = ref_reduce(x, {3, 4, 5}, {d}, keepdim, g_max);
          const Ref ri = ref_reduce(x, {3, 4, 5}, {d}, keepdim, g_argmax);
          expect_close(mv, rv.sizes, rv.values, 1e-6);
          expect_close(mi, ri.sizes, ri.values, 0, 0);
          EXPECT_EQ(mi.dtype(), DType::Int64);
          auto [nv, ni] = min(in, d, keepdim);
          expect_close(nv, rv.sizes, ref_reduce(x, {3, 4, 5}, {d}, keepdim, g_min).values, 1e-6);
          expect_close(ni, ri.sizes, ref_reduce(x, {3, 4, 5}, {d}, keepdim, g_argmin).values, 0, 0);
        }
      }
    }
  }
}

TEST_F(Reduction, MaxMinFullAndTiesAndNan) {
  const Tensor x = make_tensor({1, 5, 5, 0, 0, -3}, {2, 3}, DType::Int64);
  EXPECT_EQ(max(x).item<int64_t>(), 5);
  EXPECT_EQ(min(x).item<int64_t>(), -3);
  EXPECT_EQ(max(x).dtype(), DType::Int64);
  const Tensor ties = make_tensor({2, 7, 7, 1, 1, 7}, {6}, DType::Float32);
  EXPECT_EQ(std::get<1>(max(ties, 0)).item<int64_t>(), 1);
  EXPECT_EQ(std::get<1>(min(ties, 0)).item<int64_t>(), 3);
  EXPECT_EQ(argmax(ties).item<int64_t>(), 1);
  EXPECT_EQ(argmin(ties).item<int64_t>(), 3);
  const Tensor nan = make_tensor({1, kNan, 9, kNan}, {4}, DType::Float32);
  EXPECT_TRUE(std::isnan(max(nan).item<double>()));
  EXPECT_TRUE(std::isnan(min(nan).item<double>()));
  EXPECT_EQ(std::get<1>(max(nan, 0)).item<int64_t>(), 1);
  EXPECT_EQ(argmin(nan).item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(amax(nan).item<double>()));
  expect_close(max(make_tensor({3}, {})), {}, {3});
  EXPECT_TRUE(max(make_tensor({1, 0, 1}, {3}, DType::Bool)).item<bool>());
}

TEST_F(Reduction, MaxMinOfEmptyAreErrors) {
  const std::string m = message_of([] { max(make_tensor({}, {0, 2})); });
  EXPECT_TRUE(contains(m, "max(): Expected reduction dim to be specified for input.numel() == 0."))
      << m;
  const std::string d = message_of<IndexError>([] { min(make_tensor({}, {0, 2}), 0); });
  EXPECT_TRUE(contains(d, "min(): Expected reduction dim 0 to have non-zero size.")) << d;
  const std::string a = message_of<IndexError>([] { amax(make_tensor({}, {2, 0}), {1}); });
  EXPECT_TRUE(contains(a, "amax(): Expected reduction dim 1 to have non-zero size.")) << a;
  const std::string g = message_of([] { argmax(make_tensor({}, {0})); });
  EXPECT_TRUE(
      contains(g, "argmax(): Expected reduction dim to be specified for input.numel() == 0."))
      << g;
  // Reducing a non-empty dim of an empty tensor is fine.
  auto [v, i] = max(make_tensor({}, {0, 2}), 1);
  EXPECT_EQ(sizes_str(v.sizes()), "[0]");
}

TEST_F(Reduction, AmaxAminMatchOracle) {
  check_dim_reduction([](const Tensor& x, IntArrayRef d, bool k) { return amax(x, d, k); }, g_max,
                      {DType::Float32, DType::Float64, DType::Int64}, -2, 2, 0);
  check_dim_reduction([](const Tensor& x, IntArrayRef d, bool k) { return amin(x, d, k); }, g_min,
                      {DType::Float32, DType::Int64}, -2, 2, 0);
}

TEST_F(Reduction, ArgmaxArgminMatchOracle) {
  const std::vector<double> x = random_values(60, 5);
  for (bool strided : {false, true}) {
    const Tensor in = make_tensor(x, {3, 4, 5}, DType::Float32, strided);
    expect_close(argmax(in), {}, ref_reduce(x, {3, 4, 5}, {}, false, g_argmax).values, 0, 0);
    expect_close(argmin(in), {}, ref_reduce(x, {3, 4, 5}, {}, false, g_argmin).values, 0, 0);
    expect_close(argmax(in, std::nullopt, true), {1, 1, 1},
                 ref_reduce(x, {3, 4, 5}, {}, false, g_argmax).values, 0, 0);
    for (int64_t d : {0, 1, -1}) {
      for (bool keepdim : {false, true}) {
        const Ref r = ref_reduce(x, {3, 4, 5}, {d}, keepdim, g_argmax);
        expect_close(argmax(in, d, keepdim), r.sizes, r.values, 0, 0);
        const Ref s = ref_reduce(x, {3, 4, 5}, {d}, keepdim, g_argmin);
        expect_close(argmin(in, d, keepdim), s.sizes, s.values, 0, 0);
      }
    }
  }
  // A long row is split into chunks; the index must survive the merge (ties: first).
  std::vector<float> big(300000, 1.0f);
  big[123456] = 5;
  big[250000] = 5;
  EXPECT_EQ(argmax(Tensor::from_vector(big, {300000})).item<int64_t>(), 123456);
  big[299999] = -1;
  EXPECT_EQ(argmin(Tensor::from_vector(big, {300000})).item<int64_t>(), 299999);
}

// ---- var, std, norm, logsumexp ----

TEST_F(Reduction, VarStdMatchOracle) {
  for (double c : {0.0, 1.0, 2.0}) {
    check_dim_reduction(
        [c](const Tensor& x, IntArrayRef d, bool k) { return var(x, d, Scalar(c), k); }, g_var(c),
        {DType::Float32, DType::Float64});
    check_dim_reduction(
        [c](const Tensor& x, IntArrayRef d, bool k) { return loom::std(x, d, Scalar(c), k); },
        [c](const Group& g) { return std::sqrt(g_var(c)(g)); }, {DType::Float64});
  }
  {
    const std::vector<double> v = random_values(60, 37);
    const Tensor in = make_tensor(v, {3, 4, 5}, DType::Float64, true);
    auto [vv, vm] = var_mean(in, std::vector<int64_t>{0, -1}, Scalar(0), true);
    expect_close(vv, {1, 4, 1}, ref_reduce(v, {3, 4, 5}, {0, -1}, true, g_var(0)).values, 1e-12);
    expect_close(vm, {1, 4, 1}, ref_reduce(v, {3, 4, 5}, {0, -1}, true, g_mean).values, 1e-12);
    auto [sv, sm] = std_mean(in, std::nullopt);
    expect_close(sv, {}, {std::sqrt(ref_reduce(v, {3, 4, 5}, {}, false, g_var(1)).values[0])},
                 1e-12);
    expect_close(sm, {}, ref_reduce(v, {3, 4, 5}, {}, false, g_mean).values, 1e-12);
  }
  const Tensor x = make_tensor({1, 2, 3, 4}, {4}, DType::Float64);
  expect_close(var(x), {}, {5.0 / 3});
  expect_close(var(x, false), {}, {5.0 / 4});
  expect_close(loom::std(x, std::nullopt), {}, {std::sqrt(5.0 / 3)});
  expect_close(var(make_tensor({1}, {1}, DType::Float64)), {}, {kNan});
  const std::string m = message_of<TypeError>([] { var(make_tensor({1, 2}, {2}, DType::Int64)); });
  EXPECT_TRUE(contains(m, "std and var only support floating point and complex dtypes")) << m;
}

TEST_F(Reduction, NormMatchesOracle) {
  const std::vector<std::pair<double, std::function<double(const Group&)>>> orders = {
      {2,
       [](const Group& g) {
         double s = 0;
         for (double v : g) s += v * v;
         return std::sqrt(s);
       }},
      {1,
       [](const Group& g) {
         double s = 0;
         for (double v : g) s += std::fabs(v);
         return s;
       }},
      {3,
       [](const Group& g) {
         double s = 0;
         for (double v : g) s += std::pow(std::fabs(v), 3);
         return std::cbrt(s);
       }},
      {0,
       [](const Group& g) {
         double s = 0;
         for (double v : g) s += v != 0;
         return s;
       }},
      {kInf,
       [](const Group& g) {
         double s = 0;
         for (double v : g) s = std::max(s, std::fabs(v));
         return s;
       }},
      {-kInf,
       [](const Group& g) {
         double s = kInf;
         for (double v : g) s = std::min(s, std::fabs(v));
         return s;
       }},
  };
  for (const auto& [p, ref] : orders) {
    SCOPED_TRACE(p);
    check_dim_reduction(
        [p](const Tensor& x, IntArrayRef d, bool k) { return norm(x, Scalar(p), d, k); }, ref,
        {DType::Float32, DType::Float64});
  }
  const Tensor x = make_tensor({3, 4}, {2}, DType::Float64);
  expect_close(norm(x), {}, {5});
  expect_close(norm(x, std::nullopt, {0}), {}, {5});
  expect_close(linalg_vector_norm(x), {}, {5});
  expect_close(
      linalg_vector_norm(make_tensor({3, -4, 1, 1}, {2, 2}), 1, std::vector<int64_t>{1}, true),
      {2, 1}, {7, 2});
  const Tensor d =
      linalg_vector_norm(make_tensor({3, 4}, {2}), kInf, std::nullopt, false, DType::Float64);
  EXPECT_EQ(d.dtype(), DType::Float64);
  expect_close(d, {}, {4});
  expect_close(frobenius_norm(make_tensor({3, 4, 0, 12}, {2, 2}), {0, 1}), {}, {13});
  const std::string m = message_of<TypeError>([] { norm(make_tensor({1}, {1}, DType::Int64)); });
  EXPECT_TRUE(contains(m, "norm(): input dtype should be either floating point")) << m;
}

TEST_F(Reduction, LogsumexpIsStable) {
  check_dim_reduction([](const Tensor& x, IntArrayRef d, bool k) { return logsumexp(x, d, k); },
                      [](const Group& g) {
                        double s = 0;
                        for (double v : g) s += std::exp(v);
                        return std::log(s);
                      },
                      {DType::Float32, DType::Float64});
  expect_close(logsumexp(make_tensor({1000, 1000}, {2}), {0}), {}, {1000 + std::log(2.0)});
  expect_close(logsumexp(make_tensor({-kInf, -kInf, 1, -kInf}, {2, 2}), {1}), {2}, {-kInf, 1});
  expect_close(logsumexp(make_tensor({kInf, 1}, {2}), {0}), {}, {kInf});
  expect_close(logsumexp(make_tensor({kNan, 1}, {2}), {0}), {}, {kNan});
  expect_close(logsumexp(make_tensor({}, {0, 2}), {0}), {2}, {-kInf, -kInf});
  EXPECT_EQ(logsumexp(make_tensor({1, 2}, {2}, DType::Int64), {0}).dtype(), DType::Float32);
}

// ---- all, any ----

TEST_F(Reduction, AllAny) {
  const std::vector<double> x = {1, 0, 1, 1, 1, 1, 0, 0, 0};
  for (DType t : {DType::Bool, DType::Float32, DType::Int64}) {
    for (bool strided : {false, true}) {
      const Tensor in = make_tensor(x, {3, 3}, t, strided);
      EXPECT_FALSE(all(in).item<bool>());
      EXPECT_TRUE(any(in).item<bool>());
      expect_close(all(in, 1), {3}, {0, 1, 0});
      expect_close(any(in, 1), {3}, {1, 1, 0});
      expect_close(all(in, 0, true), {1, 3}, {0, 0, 0});
      expect_close(any(in, -2), {3}, {1, 1, 1});
      expect_close(all(in, std::vector<int64_t>{0, 1}), {}, {0});
      EXPECT_EQ(all(in, 1).dtype(), DType::Bool);
    }
  }
  EXPECT_EQ(all(make_tensor({1, 2}, {2}, DType::UInt8)).dtype(), DType::UInt8);
  EXPECT_TRUE(all(make_tensor({}, {0})).item<bool>());
  EXPECT_FALSE(any(make_tensor({}, {0})).item<bool>());
  EXPECT_TRUE(any(make_tensor({0, kNan}, {2})).item<bool>());
}

// ---- cumsum, cumprod ----

TEST_F(Reduction, CumsumCumprodMatchOracle) {
  const std::vector<double> x = random_values(60, 13, 0.5, 1.5);
  auto csum = [](const Group& g) {
    Group r(g.size());
    std::partial_sum(g.begin(), g.end(), r.begin());
    return r;
  };
  auto cprod = [](const Group& g) {
    Group r(g.size());
    std::partial_sum(g.begin(), g.end(), r.begin(), std::multiplies<>());
    return r;
  };
  for (DType t : {DType::Float32, DType::Float64}) {
    for (int64_t d : {0, 1, 2, -1}) {
      for (bool strided : {false, true}) {
        const Tensor in = make_tensor(x, {3, 4, 5}, t, strided);
        expect_close(cumsum(in, d), {3, 4, 5}, ref_lines(x, {3, 4, 5}, d, csum));
        expect_close(cumprod(in, d), {3, 4, 5}, ref_lines(x, {3, 4, 5}, d, cprod));
      }
    }
  }
  const Tensor i = cumsum(make_tensor({1, 2, 3}, {3}, DType::Int32), 0);
  EXPECT_EQ(i.dtype(), DType::Int64);
  expect_close(i, {3}, {1, 3, 6});
  expect_close(cumprod(make_tensor({1, 2, 3}, {3}, DType::Int64), 0, DType::Float64), {3},
               {1, 2, 6});
  expect_close(cumsum(make_tensor({4}, {}), 0), {}, {4});
  expect_close(cumsum(make_tensor({}, {0, 2}), 1), {0, 2}, {});
}

// ---- softmax family ----

Group ref_softmax(const Group& g) {
  const double m = *std::max_element(g.begin(), g.end());
  double s = 0;
  for (double v : g) s += std::exp(v - m);
  Group r;
  for (double v : g) r.push_back(std::exp(v - m) / s);
  return r;
}
Group ref_log_softmax(const Group& g) {
  Group r = ref_softmax(g);
  for (double& v : r) v = std::log(v);
  return r;
}

TEST_F(Reduction, SoftmaxLogSoftmaxMatchOracle) {
  const std::vector<double> x = random_values(60, 17, -20, 20);
  for (DType t : {DType::Float32, DType::Float64}) {
    for (int64_t d : {0, 1, 2, -1}) {
      for (bool strided : {false, true}) {
        const Tensor in = make_tensor(x, {3, 4, 5}, t, strided);
        expect_close(softmax(in, d), {3, 4, 5}, ref_lines(x, {3, 4, 5}, d, ref_softmax), 1e-5,
                     1e-7);
        expect_close(log_softmax(in, d), {3, 4, 5}, ref_lines(x, {3, 4, 5}, d, ref_log_softmax),
                     1e-5, 1e-5);
        expect_close(_softmax(in, d, false), {3, 4, 5}, ref_lines(x, {3, 4, 5}, d, ref_softmax),
                     1e-5, 1e-7);
      }
    }
  }
  // Large values: subtracting the max keeps it finite.
  expect_close(softmax(make_tensor({1000, 1000}, {2}), 0), {2}, {0.5, 0.5});
  expect_close(log_softmax(make_tensor({1000, 0}, {2}), 0), {2}, {0, -1000});
  const Tensor d = softmax(make_tensor({1, 2}, {2}, DType::Float32), 0, DType::Float64);
  EXPECT_EQ(d.dtype(), DType::Float64);
  const Tensor h = _softmax(make_tensor({1, 2}, {2}, DType::Float16), 0, true);
  EXPECT_EQ(h.dtype(), DType::Float32);
  expect_close(h, {2}, ref_softmax({1, 2}), 1e-3);
  expect_close(softmax(make_tensor({3}, {}), 0), {}, {1});
  expect_close(softmax(make_tensor({}, {0, 3}), 1), {0, 3}, {});
  const std::string m =
      message_of<TypeError>([] { softmax(make_tensor({1}, {1}, DType::Int64), 0); });
  EXPECT_TRUE(contains(m, "expected a floating point input")) << m;
}

TEST_F(Reduction, SoftmaxOfLongFloatLines) {
  // The vectorised float path: wide range, -inf entries (exp gives 0) and a NaN line.
  std::vector<double> x = random_values(3 * 1000, 31, -90, 90);
  for (double& v : x) v = static_cast<float>(v);
  x[5] = -kInf;
  x[1000 + 17] = kNan;
  for (size_t i = 2000; i < 2010; ++i) x[i] = x[i] / 10;
  const Tensor in = make_tensor(x, {3, 1000}, DType::Float32);
  auto nan_aware = [](Group (*f)(const Group&)) {
    return [f](const Group& g) {
      for (double v : g) {
        if (std::isnan(v)) return Group(g.size(), v);
      }
      return f(g);
    };
  };
  expect_close(softmax(in, 1), {3, 1000}, ref_lines(x, {3, 1000}, 1, nan_aware(ref_softmax)), 2e-6,
               1e-30);
  expect_close(log_softmax(in, -1), {3, 1000},
               ref_lines(x, {3, 1000}, 1, nan_aware(ref_log_softmax)), 2e-6, 1e-4);
}

TEST_F(Reduction, SoftmaxOverMiddleDimsInTiles) {
  // Contiguous, dim not last: lines are done in tiles (inner 70 = two full tiles and a part).
  std::vector<double> x = random_values(2 * 9 * 70, 41, -30, 30);
  for (double& v : x) v = static_cast<float>(v);
  x[3] = -kInf;
  for (DType t : {DType::Float32, DType::Float64}) {
    const Tensor in = make_tensor(x, {2, 9, 70}, t);
    expect_close(softmax(in, 1), {2, 9, 70}, ref_lines(x, {2, 9, 70}, 1, ref_softmax), 1e-5, 1e-12);
    expect_close(log_softmax(in, 0), {2, 9, 70}, ref_lines(x, {2, 9, 70}, 0, ref_log_softmax), 1e-5,
                 1e-5);
  }
}

TEST_F(Reduction, SoftmaxBackwardMatchesFormula) {
  const std::vector<double> x = random_values(12, 19);
  const std::vector<double> g = random_values(12, 23);
  for (int64_t d : {0, -1}) {
    for (bool strided : {false, true}) {
      const Tensor in = make_tensor(x, {3, 4}, DType::Float64, strided);
      const Tensor grad = make_tensor(g, {3, 4}, DType::Float64, strided);
      const Tensor y = softmax(in, d);
      const Tensor ly = log_softmax(in, d);
      // Oracle: the Jacobian-vector product, by central finite differences of the forward.
      std::vector<double> want(12), want_log(12);
      for (size_t i = 0; i < 12; ++i) {
        std::vector<double> xp = x, xm = x;
        xp[i] += 1e-6;
        xm[i] -= 1e-6;
        const auto sp = ref_lines(xp, {3, 4}, d, ref_softmax);
        const auto sm = ref_lines(xm, {3, 4}, d, ref_softmax);
        const auto lp = ref_lines(xp, {3, 4}, d, ref_log_softmax);
        const auto lm = ref_lines(xm, {3, 4}, d, ref_log_softmax);
        for (size_t j = 0; j < 12; ++j) {
          want[i] += g[j] * (sp[j] - sm[j]) / 2e-6;
          want_log[i] += g[j] * (lp[j] - lm[j]) / 2e-6;
        }
      }
      expect_close(_softmax_backward_data(grad, y, d, DType::Float64), {3, 4}, want, 1e-5, 1e-7);
      expect_close(_log_softmax_backward_data(grad, ly, d, DType::Float64), {3, 4}, want_log, 1e-5,
                   1e-7);
    }
  }
}

// ---- dims ----

TEST_F(Reduction, DimErrors) {
  const Tensor x = make_tensor({1, 2, 3, 4}, {2, 2});
  // Each names its op (core's wrap_dim cannot: loom/ops/meta/wrap_dim.h).
  EXPECT_EQ(message_of<IndexError>([&] { sum(x, {2}); }),
            "sum: Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  const std::string dup = message_of([&] { sum(x, {0, -2}); });
  EXPECT_TRUE(contains(dup, "dim 0 appears multiple times in the list of dims")) << dup;
  EXPECT_EQ(message_of<IndexError>([&] { softmax(x, 3); }),
            "softmax: Dimension out of range (expected to be in range of [-2, 1], but got 3)");
  EXPECT_EQ(message_of<IndexError>([&] { log_softmax(x, -3); }),
            "log_softmax: Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_EQ(message_of<IndexError>([&] { _softmax(x, 2, false); }),
            "_softmax: Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(message_of<IndexError>([&] { cumsum(x, -3); }),
            "cumsum: Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_EQ(message_of<IndexError>([&] { prod(x, 5); }),
            "prod: Dimension out of range (expected to be in range of [-2, 1], but got 5)");
  EXPECT_EQ(message_of<IndexError>([&] { std::get<0>(max(x, 2)); }),
            "max: Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(message_of<IndexError>([&] { argmax(x, -3); }),
            "argmax: Dimension out of range (expected to be in range of [-2, 1], but got -3)");
}

}  // namespace
}  // namespace loom
