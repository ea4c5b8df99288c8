// Sorting ops of ops_core against float64 oracles written here: sort (stable and not),
// argsort, msort, topk and unique (_unique2, unique_dim, unique_consecutive). Inputs have
// ties and NaNs, are contiguous and strided, dims are negative too, and errors carry
// PyTorch's messages.
#include "loom/ops/sorting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "loom/ops/shape.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::expect_close;
using testing::make_tensor;
using testing::message_of;
using testing::random_values;
using testing::to_doubles;

using Sizes = std::vector<int64_t>;
using Values = std::vector<double>;

const double kNan = std::nan("");
const double kInf = std::numeric_limits<double>::infinity();

class Sorting : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
};

/// Values with many ties (multiples of 0.5 in [-2, 2)) and, optionally, NaNs.
Values tied_values(size_t n, uint64_t seed, bool nans) {
  Values v = random_values(n, seed, -2, 2);
  for (size_t i = 0; i < n; ++i) {
    v[i] = std::floor(v[i] * 2) / 2;
    if (nans && i % 7 == 3) v[i] = kNan;
  }
  return v;
}

/// NaN-aware order: NaN above everything.
bool less_nan_last(double a, double b) { return (!std::isnan(a) && std::isnan(b)) || a < b; }

/// The oracle for one line: a stable sort of its positions.
std::vector<int64_t> stable_order(const Values& line, bool descending) {
  std::vector<int64_t> order(line.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return descending ? less_nan_last(line[b], line[a]) : less_nan_last(line[a], line[b]);
  });
  return order;
}

/// Splits row-major values of sizes into the lines along dim; line(o, i) is element i of line o.
struct LineView {
  Sizes sizes;
  int64_t dim, outer, len, inner;
  LineView(Sizes s, int64_t d) : sizes(std::move(s)) {
    const auto nd = static_cast<int64_t>(sizes.size());
    dim = (d + nd) % nd;
    len = sizes[dim];
    outer = inner = 1;
    for (int64_t k = 0; k < dim; ++k) outer *= sizes[k];
    for (int64_t k = dim + 1; k < nd; ++k) inner *= sizes[k];
  }
  int64_t lines() const { return outer * inner; }
  int64_t at(int64_t line, int64_t i) const {
    return ((line / inner) * len + i) * inner + line % inner;
  }
  Values get(const Values& v, int64_t line) const {
    Values out;
    for (int64_t i = 0; i < len; ++i) out.push_back(v[at(line, i)]);
    return out;
  }
};

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

/// Checks (values, indices) as a sort of x along dim: the values in order, and each index
/// pointing at its value; with stable also the exact (oracle) indices.
void check_sort(const std::tuple<Tensor, Tensor>& got, const Values& x, const Sizes& sizes,
                int64_t dim, bool descending, bool stable) {
  const LineView lv(sizes, dim);
  const Values v = to_doubles(std::get<0>(got)), ix = to_doubles(std::get<1>(got));
  ASSERT_EQ(std::get<1>(got).dtype(), DType::Int64);
  ASSERT_EQ(sizes_str(std::get<0>(got).sizes()), sizes_str(sizes));
  for (int64_t l = 0; l < lv.lines(); ++l) {
    const Values line = lv.get(x, l);
    const std::vector<int64_t> order = stable_order(line, descending);
    for (int64_t i = 0; i < lv.len; ++i) {
      const int64_t p = lv.at(l, i);
      ASSERT_TRUE(same_value(v[p], line[order[i]]))
          << "line " << l << " position " << i << ": got " << v[p] << ", want " << line[order[i]];
      const auto j = static_cast<int64_t>(ix[p]);
      ASSERT_TRUE(j >= 0 && j < lv.len && same_value(line[j], v[p]))
          << "line " << l << " position " << i << ": index " << j << " does not hold " << v[p];
      if (stable) {
        ASSERT_EQ(j, order[i]) << "line " << l << " position " << i;
      }
    }
  }
}

// ---- sort, argsort, msort --------------------------------------------------------------------

TEST_F(Sorting, SortMatchesOracle) {
  struct Case {
    Sizes sizes;
    int64_t dim;
  };
  uint64_t seed = 1;
  for (const Case& c : {Case{{40}, 0}, Case{{3, 37}, -1}, Case{{25, 3}, 0}, Case{{2, 19, 3}, 1},
                        Case{{2, 3, 4}, -3}}) {
    int64_t n = 1;
    for (int64_t s : c.sizes) n *= s;
    for (bool nans : {false, true}) {
      const Values x = tied_values(static_cast<size_t>(n), seed++, nans);
      for (DType t : {DType::Float32, DType::Float64, DType::Float16}) {
        for (bool strided : {false, true}) {
          for (bool descending : {false, true}) {
            SCOPED_TRACE(::testing::PrintToString(c.sizes) + " dim " + std::to_string(c.dim) + " " +
                         std::string(dtype_name(t)) + (strided ? " strided" : "") +
                         (descending ? " descending" : "") + (nans ? " nan" : ""));
            const Tensor in = make_tensor(x, c.sizes, t, strided);
            check_sort(sort(in, c.dim, descending), x, c.sizes, c.dim, descending, false);
            check_sort(sort(in, std::optional<bool>(true), c.dim, descending), x, c.sizes, c.dim,
                       descending, true);
            check_sort(sort(in, std::optional<bool>(), c.dim, descending), x, c.sizes, c.dim,
                       descending, false);
          }
        }
      }
    }
  }
}

TEST_F(Sorting, SortIntegersAndBool) {
  const Values x = random_values(30, 7, -20, 20);
  Values xi;
  for (double v : x) xi.push_back(std::round(v));
  for (DType t : {DType::Int64, DType::Int32, DType::Int8, DType::UInt8}) {
    Values xv = xi;
    if (t == DType::UInt8) {
      for (double& v : xv) v = std::fabs(v);
    }
    check_sort(sort(make_tensor(xv, {5, 6}, t, true), 1, true), xv, {5, 6}, 1, true, false);
    check_sort(sort(make_tensor(xv, {5, 6}, t), std::optional<bool>(true), 0), xv, {5, 6}, 0, false,
               true);
  }
  const Values b{1, 0, 1, 1, 0};
  check_sort(sort(make_tensor(b, {5}, DType::Bool), std::optional<bool>(true)), b, {5}, 0, false,
             true);
}

TEST_F(Sorting, StableSortKeepsTiesInOrder) {
  // Descending too: ties stay in their original order (PyTorch: [2, 2, 1, 1], [1, 3, 0, 2]).
  const auto [v, i] = sort(make_tensor({1, 2, 1, 2}, {4}), std::optional<bool>(true), -1, true);
  expect_close(v, {4}, {2, 2, 1, 1});
  expect_close(i, {4}, {1, 3, 0, 2});
  // -0.0 and 0.0 are equal: a stable sort leaves them be.
  const auto [z, zi] = sort(make_tensor({0.0, -0.0, 0.0, -0.0}, {4}), std::optional<bool>(true));
  expect_close(zi, {4}, {0, 1, 2, 3});
  EXPECT_TRUE(std::signbit(to_doubles(z)[1]));
  // NaN last ascending, first descending.
  const Tensor x = make_tensor({1.0, kNan, -kInf, 3.0, kNan, 0.0}, {6});
  const auto [a, ai] = sort(x, std::optional<bool>(true));
  expect_close(a, {6}, {-kInf, 0, 1, 3, kNan, kNan});
  expect_close(ai, {6}, {2, 5, 0, 3, 1, 4});
  const auto [d, di] = sort(x, std::optional<bool>(true), 0, true);
  expect_close(d, {6}, {kNan, kNan, 3, 1, 0, -kInf});
  expect_close(di, {6}, {1, 4, 3, 0, 5, 2});
}

TEST_F(Sorting, SortEdgeCases) {
  // 0-dim: itself, index 0.
  const auto [v0, i0] = sort(make_tensor({5}, {}));
  expect_close(v0, {}, {5});
  expect_close(i0, {}, {0});
  // Empty.
  const auto [ve, ie] = sort(make_tensor({}, {3, 0}), 0);
  expect_close(ve, {3, 0}, {});
  expect_close(ie, {3, 0}, {});
  // A broadcast (stride 0) dim is left as it is, indices 0..n-1, as in PyTorch.
  const Tensor e = expand(make_tensor({2, 1}, {2, 1}), {2, 40});
  const auto [vb, ib] = sort(e, 1);
  expect_close(vb, {2, 40}, to_doubles(e));
  Values want;
  for (int r = 0; r < 2; ++r) {
    for (int k = 0; k < 40; ++k) want.push_back(k);
  }
  expect_close(ib, {2, 40}, want);
  EXPECT_EQ(message_of<IndexError>([] {
              sort(make_tensor({1, 2}, {2}), 1);
            }),
            "sort: Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

TEST_F(Sorting, ArgsortAndMsort) {
  const Values x = tied_values(24, 11, true);
  const Tensor t = make_tensor(x, {4, 6}, DType::Float64, true);
  const Tensor i = argsort(t, int64_t{-1}, true);
  EXPECT_EQ(i.dtype(), DType::Int64);
  // argsort is sort's indices.
  expect_close(i, {4, 6}, to_doubles(std::get<1>(sort(t, -1, true))), 0, 0);
  // The stable overload gives the oracle's exact order.
  const Tensor s = argsort(t, true, int64_t{0});
  const LineView lv({4, 6}, 0);
  const Values sv = to_doubles(s);
  for (int64_t l = 0; l < lv.lines(); ++l) {
    const std::vector<int64_t> order = stable_order(lv.get(x, l), false);
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(sv[lv.at(l, k)], order[k]);
  }
  // msort sorts along dim 0.
  expect_close(msort(t), {4, 6}, to_doubles(std::get<0>(sort(t, 0))), 0, 0);
  expect_close(msort(make_tensor({3, 1, 2}, {3})), {3}, {1, 2, 3});
}

// ---- topk ------------------------------------------------------------------------------------

/// Checks topk's result: values as the oracle's first k (of a sort descending for largest,
/// ascending otherwise, NaN as the largest value), indices pointing at their values.
void check_topk(const std::tuple<Tensor, Tensor>& got, const Values& x, const Sizes& sizes,
                int64_t dim, int64_t k, bool largest) {
  const LineView lv(sizes, dim);
  Sizes out_sizes = sizes;
  out_sizes[lv.dim] = k;
  const LineView ov(out_sizes, dim);
  ASSERT_EQ(sizes_str(std::get<0>(got).sizes()), sizes_str(out_sizes));
  const Values v = to_doubles(std::get<0>(got)), ix = to_doubles(std::get<1>(got));
  for (int64_t l = 0; l < lv.lines(); ++l) {
    const Values line = lv.get(x, l);
    const std::vector<int64_t> order = stable_order(line, largest);
    std::vector<int64_t> seen;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t p = ov.at(l, i);
      ASSERT_TRUE(same_value(v[p], line[order[i]]))
          << "line " << l << " rank " << i << ": got " << v[p] << ", want " << line[order[i]];
      const auto j = static_cast<int64_t>(ix[p]);
      ASSERT_TRUE(j >= 0 && j < lv.len && same_value(line[j], v[p]));
      ASSERT_TRUE(std::find(seen.begin(), seen.end(), j) == seen.end())
          << "index " << j << " twice";
      seen.push_back(j);
    }
  }
}

TEST_F(Sorting, TopkMatchesOracle) {
  uint64_t seed = 20;
  // n = 200 with k <= 3 takes the partial-sort path (k * 64 <= n); the others nth_element.
  for (const auto& [sizes, dim] : std::vector<std::pair<Sizes, int64_t>>{
           {{200}, 0}, {{3, 30}, -1}, {{30, 2}, 0}, {{2, 9, 3}, 1}}) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    const auto nd = static_cast<int64_t>(sizes.size());
    const int64_t len = sizes[static_cast<size_t>((dim + nd) % nd)];
    for (bool nans : {false, true}) {
      const Values x = tied_values(static_cast<size_t>(n), seed++, nans);
      for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{3}, len}) {
        for (bool largest : {true, false}) {
          for (bool strided : {false, true}) {
            SCOPED_TRACE(::testing::PrintToString(sizes) + " k " + std::to_string(k) +
                         (largest ? " largest" : " smallest") + (strided ? " strided" : "") +
                         (nans ? " nan" : ""));
            check_topk(topk(make_tensor(x, sizes, DType::Float64, strided), k, dim, largest), x,
                       sizes, dim, k, largest);
            check_topk(topk(make_tensor(x, sizes, DType::Float32, strided), k, dim, largest), x,
                       sizes, dim, k, largest);
          }
        }
      }
    }
  }
}

TEST_F(Sorting, TopkTiesAndNanAsPyTorch) {
  // NaN is the largest value: it comes first for largest and is avoided for smallest.
  const Tensor x = make_tensor({1.0, kNan, 3.0, kNan, 3.0}, {5});
  const auto [v, i] = topk(x, 3);
  expect_close(v, {3}, {kNan, kNan, 3});
  expect_close(i, {3}, {1, 3, 4});
  const auto [s, si] = topk(x, 3, -1, false);
  expect_close(s, {3}, {1, 3, 3});
  expect_close(si, {3}, {0, 2, 4});
  // Ties resolve as in PyTorch's CPU kernel (the same selection algorithm).
  const auto [t, ti] = topk(make_tensor({1, 3, 3, 2, 3}, {5}), 2);
  expect_close(t, {2}, {3, 3});
  expect_close(ti, {2}, {2, 4});
  // Integers and 16-bit floats.
  expect_close(std::get<0>(topk(make_tensor({5, -1, 7, 2}, {4}, DType::Int32), 2)), {2}, {7, 5});
  expect_close(std::get<0>(topk(make_tensor({0.5, -1, 7, 2}, {4}, DType::BFloat16), 2, 0, false)),
               {2}, {-1, 0.5});
  // sorted=false still returns the k elements.
  const auto [u, ui] = topk(make_tensor({4, 9, 1, 7, 3}, {5}), 3, 0, true, false);
  Values uv = to_doubles(u);
  std::sort(uv.begin(), uv.end());
  EXPECT_EQ(uv, (Values{4, 7, 9}));
}

TEST_F(Sorting, TopkEdgeCasesAndErrors) {
  const auto [v0, i0] = topk(make_tensor({2}, {}), 1);
  expect_close(v0, {}, {2});
  expect_close(i0, {}, {0});
  expect_close(std::get<0>(topk(make_tensor({1, 2, 3}, {3}), 0)), {0}, {});
  const Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(message_of([&] { topk(x, 4); }),
            "topk: selected index k out of range (k = 4, but dimension 1 has size 3)");
  EXPECT_EQ(message_of([&] { topk(x, -1); }),
            "topk: selected index k out of range (k = -1, but dimension 1 has size 3)");
  EXPECT_EQ(message_of([&] { topk(make_tensor({2}, {}), 2); }),
            "topk: selected index k out of range (k = 2, but dimension 0 has size 1)");
  EXPECT_EQ(message_of<TypeError>([] {
              topk(make_tensor({1, 0, 1}, {3}, DType::Bool), 2);
            }),
            "\"topk_cpu\" not implemented for 'Bool'");
}

// ---- unique ----------------------------------------------------------------------------------

TEST_F(Sorting, UniqueMatchesOracle) {
  const Values x = tied_values(60, 30, false);
  for (DType t : {DType::Float32, DType::Float64, DType::Int64}) {
    Values xv = x;
    if (t == DType::Int64) {
      for (double& v : xv) v = std::round(v * 2);
    }
    for (bool strided : {false, true}) {
      const auto [u, inv, cnt] = _unique2(make_tensor(xv, {6, 10}, t, strided), true, true, true);
      Values want = xv;
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      expect_close(u, {static_cast<int64_t>(want.size())}, want, 0, 0);
      const Values uv = to_doubles(u), iv = to_doubles(inv), cv = to_doubles(cnt);
      ASSERT_EQ(sizes_str(inv.sizes()), "[6, 10]");
      Values counted(want.size(), 0);
      for (size_t k = 0; k < xv.size(); ++k) {
        EXPECT_EQ(uv[static_cast<size_t>(iv[k])], xv[k]);
        counted[static_cast<size_t>(iv[k])] += 1;
      }
      EXPECT_EQ(cv, counted);
    }
  }
}

TEST_F(Sorting, UniqueNanBoolFlagsAndEdgeCases) {
  // Each NaN is its own value, sorted last.
  const auto [u, inv, cnt] = _unique2(make_tensor({kNan, 1.0, kNan}, {3}), true, true, true);
  expect_close(u, {3}, {1, kNan, kNan});
  expect_close(cnt, {3}, {1, 1, 1});
  const Values iv = to_doubles(inv);
  EXPECT_EQ(iv[1], 0);
  EXPECT_NE(iv[0], iv[2]);
  const auto [b, bi, bc] = _unique2(make_tensor({1, 0, 1}, {3}, DType::Bool), true, true, true);
  EXPECT_EQ(b.dtype(), DType::Bool);
  expect_close(b, {2}, {0, 1});
  expect_close(bi, {3}, {1, 0, 1});
  expect_close(bc, {2}, {1, 2});
  // Without the flags, inverse and counts are empty.
  const auto [f, fi, fc] = _unique2(make_tensor({3, 1, 3}, {3}, DType::Int64));
  expect_close(f, {2}, {1, 3});
  expect_close(fi, {0}, {});
  expect_close(fc, {0}, {});
  // 0-dim: one value, a 0-dim inverse; empty: inverse keeps the input's shape.
  const auto [s, si, sc] = _unique2(make_tensor({3}, {}), true, true, true);
  expect_close(s, {1}, {3});
  expect_close(si, {}, {0});
  expect_close(sc, {1}, {1});
  const auto [e, ei, ec] = _unique2(make_tensor({}, {0, 2}), true, true, true);
  expect_close(e, {0}, {});
  expect_close(ei, {0, 2}, {});
  expect_close(ec, {0}, {});
  // loom::unique picks _unique2 or unique_dim.
  expect_close(std::get<0>(unique(make_tensor({2, 1, 2}, {3}))), {2}, {1, 2});
  expect_close(std::get<0>(unique(make_tensor({1, 2, 1, 2}, {2, 2}), true, false, false, 0)),
               {1, 2}, {1, 2});
}

TEST_F(Sorting, UniqueDim) {
  // Rows [[1, 2], [0, 1], [1, 2]]: unique rows sorted, inverse per row, counts.
  const Tensor x = make_tensor({1, 2, 0, 1, 1, 2}, {3, 2}, DType::Int64, true);
  const auto [u, inv, cnt] = unique_dim(x, 0, true, true, true);
  expect_close(u, {2, 2}, {0, 1, 1, 2});
  expect_close(inv, {3}, {1, 0, 1});
  expect_close(cnt, {2}, {1, 2});
  // Columns of [[1, 2, 1], [0, 1, 0]] (dim 1 and -1).
  const Tensor y = make_tensor({1, 2, 1, 0, 1, 0}, {2, 3});
  for (int64_t dim : {1, -1}) {
    const auto [c, ci, cc] = unique_dim(y, dim, true, true, true);
    expect_close(c, {2, 2}, {1, 2, 0, 1});
    expect_close(ci, {3}, {0, 1, 0});
    expect_close(cc, {2}, {2, 1});
  }
  // Empty along dim; errors for other zero sizes and for a 0-dim input.
  const auto [e, ei, ec] = unique_dim(make_tensor({}, {0, 2}), 0);
  expect_close(e, {0, 2}, {});
  expect_close(ei, {0}, {});
  EXPECT_EQ(message_of([] {
              unique_dim(make_tensor({}, {0, 2}), 1);
            }),
            "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  EXPECT_EQ(message_of([] {
              unique_dim(make_tensor({}, {0, 0}), 0);
            }),
            "Number of zero sized dimensions is more than one, so unique cannot be applied ");
  EXPECT_EQ(message_of<IndexError>([] { unique_dim(make_tensor({2}, {}), 0); }),
            "unique_dim: dimension specified as 0 but tensor has no dimensions");
}

TEST_F(Sorting, UniqueConsecutive) {
  const Tensor x = make_tensor({1, 1, 2, 2, 3, 1, 1, 2}, {2, 4}, DType::Int64, true);
  const auto [u, inv, cnt] = unique_consecutive(x, true, true);
  expect_close(u, {5}, {1, 2, 3, 1, 2});
  expect_close(inv, {2, 4}, {0, 0, 1, 1, 2, 3, 3, 4});
  expect_close(cnt, {5}, {2, 2, 1, 2, 1});
  // Runs of NaN do not merge.
  const auto [n, ni, nc] = unique_consecutive(make_tensor({kNan, kNan, 1}, {3}), true, true);
  expect_close(n, {3}, {kNan, kNan, 1});
  expect_close(nc, {3}, {1, 1, 1});
  // Flags off: empty inverse and counts (1-D, with or without dim=0).
  for (std::optional<int64_t> dim : {std::optional<int64_t>(), std::optional<int64_t>(0)}) {
    const auto [v, vi, vc] = unique_consecutive(make_tensor({1, 1, 2}, {3}), false, false, dim);
    expect_close(v, {2}, {1, 2});
    expect_close(vi, {0}, {});
    expect_close(vc, {0}, {});
  }
  // Along a dim: consecutive equal columns merge.
  const auto [c, ci, cc] =
      unique_consecutive(make_tensor({1, 1, 2, 1, 1, 3}, {2, 3}), true, true, int64_t{1});
  expect_close(c, {2, 2}, {1, 2, 1, 3});
  expect_close(ci, {3}, {0, 0, 1});
  expect_close(cc, {2}, {2, 1});
  const auto [e, ei, ec] = unique_consecutive(make_tensor({}, {0, 2}), true, true);
  expect_close(e, {0}, {});
  expect_close(ei, {0, 2}, {});
  expect_close(ec, {0}, {});
}

}  // namespace
}  // namespace loom
