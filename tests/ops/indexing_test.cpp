// Indexing ops of ops_core against float64 oracles written here: index_select, gather,
// scatter (src, value, reduce), scatter_add, scatter_reduce, index_add, index_fill, take,
// masked_fill/select/scatter, advanced indexing (index, index_put_), nonzero, where and
// one_hot. Inputs are contiguous and strided, dims negative too, indices repeat, results are
// empty, and errors carry PyTorch's messages.
#include "loom/ops/indexing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "loom/dispatcher/dispatcher.h"
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
using IndexList = std::vector<std::optional<Tensor>>;

const double kNan = std::nan("");

class Indexing : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
};

/// An int64 (or int32) index tensor, contiguous or strided.
Tensor idx(const std::vector<int64_t>& v, const Sizes& sizes, DType t = DType::Int64,
           bool strided = false) {
  return make_tensor(Values(v.begin(), v.end()), sizes, t, strided);
}
Tensor idx(const std::vector<int64_t>& v) { return idx(v, {static_cast<int64_t>(v.size())}); }
Tensor mask(const std::vector<int>& v, const Sizes& sizes, bool strided = false) {
  return make_tensor(Values(v.begin(), v.end()), sizes, DType::Bool, strided);
}

int64_t numel_of(const Sizes& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}
/// Row-major strides of sizes.
Sizes strides_of(const Sizes& s) {
  Sizes st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}
/// Calls f(multi-index) for every position of sizes in row-major order.
void for_each_pos(const Sizes& sizes, const std::function<void(const Sizes&)>& f) {
  const int64_t n = numel_of(sizes);
  Sizes pos(sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(pos);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      if (++pos[d] < sizes[d]) break;
      pos[d] = 0;
    }
  }
}
int64_t flat(const Sizes& pos, const Sizes& sizes) {
  const Sizes st = strides_of(sizes);
  int64_t f = 0;
  for (size_t d = 0; d < pos.size(); ++d) f += pos[d] * st[d];
  return f;
}
/// Values rounded to what dtype t holds, so oracles see the tensor's values.
Values as_dtype(Values v, DType t) {
  for (double& x : v) {
    if (is_integral(t)) x = std::round(x);
    if (t == DType::Float32) x = static_cast<float>(x);
  }
  return v;
}

// ---- index_select ----------------------------------------------------------------------------

Values ref_index_select(const Values& x, const Sizes& sizes, int64_t dim,
                        const std::vector<int64_t>& index, Sizes* out_sizes) {
  *out_sizes = sizes;
  (*out_sizes)[dim] = static_cast<int64_t>(index.size());
  Values out;
  for_each_pos(*out_sizes, [&](const Sizes& p) {
    Sizes q = p;
    q[dim] = index[p[dim]];
    out.push_back(x[flat(q, sizes)]);
  });
  return out;
}

TEST_F(Indexing, IndexSelectMatchesOracle) {
  const Sizes sizes{3, 4, 5};
  const Values x = random_values(60, 1);
  const std::vector<int64_t> index{2, 0, 2, 1};
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    const int64_t d = (dim + 3) % 3;
    std::vector<int64_t> ix;
    for (int64_t v : index) ix.push_back(v % sizes[d]);
    for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::Float16, DType::Int8}) {
      const Values xv = as_dtype(t == DType::Int8 ? random_values(60, 2, -100, 100) : x, t);
      Sizes want_sizes;
      const Values want = ref_index_select(xv, sizes, d, ix, &want_sizes);
      for (bool strided : {false, true}) {
        for (DType it : {DType::Int64, DType::Int32}) {
          SCOPED_TRACE("dim " + std::to_string(dim) + " " + std::string(dtype_name(t)) +
                       (strided ? " strided" : "") + " index " + std::string(dtype_name(it)));
          const Tensor got = index_select(make_tensor(xv, sizes, t, strided), dim,
                                          idx(ix, {static_cast<int64_t>(ix.size())}, it, strided));
          EXPECT_EQ(got.dtype(), t);
          expect_close(got, want_sizes, want, 1e-3, 1e-3);
        }
      }
    }
  }
}

TEST_F(Indexing, IndexSelectLargeSlicesAndEdgeCases) {
  // Slices of 64 and more elements are copied as blocks.
  const Values x = random_values(3 * 100, 3);
  Sizes ws;
  const Values want = ref_index_select(x, {3, 100}, 0, {2, 2, 0}, &ws);
  expect_close(index_select(make_tensor(x, {3, 100}, DType::Float64, true), 0, idx({2, 2, 0})), ws,
               want, 0, 0);
  // A 0-dim index selects one slice; the dim stays.
  expect_close(index_select(make_tensor({1, 2, 3, 4}, {2, 2}), 1, idx({1}, {})), {2, 1}, {2, 4});
  // A 0-dim self takes a one-element index and stays 0-dim.
  expect_close(index_select(make_tensor({7}, {}), 0, idx({0})), {}, {7});
  // An empty index gives an empty dim.
  expect_close(index_select(make_tensor({1, 2, 3, 4}, {2, 2}), 0, idx({})), {0, 2}, {});
  expect_close(index_select(make_tensor({}, {0, 2}), 0, idx({})), {0, 2}, {});
}

TEST_F(Indexing, IndexSelectErrors) {
  const Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(message_of<TypeError>([&] { index_select(x, 0, make_tensor({0}, {1})); }),
            "index_select(): Expected dtype int32 or int64 for index");
  EXPECT_EQ(message_of<IndexError>([&] { index_select(x, 0, idx({5})); }),
            "index_select: index out of range in self");
  EXPECT_EQ(message_of<IndexError>([&] { index_select(x, 1, idx({-1})); }),
            "index_select: index out of range in self");
  EXPECT_EQ(message_of<IndexError>([&] {
              index_select(x, 0, idx({0}, {1, 1}));
            }),
            "index_select(): Index is supposed to be a vector");
  EXPECT_EQ(message_of([&] {
              index_select(make_tensor({1}, {}), 0, idx({0, 0}));
            }),
            "index_select(): Index to scalar can have only 1 value, got 2 value(s)");
  EXPECT_EQ(message_of<IndexError>([&] { index_select(x, 2, idx({0})); }),
            "index_select: Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_F(Indexing, IndexSelectOut) {
  const Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor out = make_tensor({0, 0, 0, 0}, {2, 2});
  const uint32_t v0 = out.version();
  const Tensor r = index_select_out(out, x, 1, idx({2, 0}));
  EXPECT_TRUE(r.is_same(out));
  EXPECT_GT(out.version(), v0);
  expect_close(out, {2, 2}, {3, 1, 6, 4});
  // An empty out whose storage is large enough takes the result's shape.
  Tensor big = Tensor::empty({8}).as_strided_view({0}, {1}, 0);
  index_select_out(big, x, 0, idx({1}));
  expect_close(big, {1, 3}, {4, 5, 6});
  EXPECT_EQ(message_of<TypeError>([&] {
              index_select_out(make_tensor({0, 0}, {1, 2}, DType::Float64), x, 1, idx({0}));
            }),
            "index_select(): self and result must have the same scalar type");
}

TEST_F(Indexing, IndexSelectBackwardSumsRepeats) {
  const Tensor grad = make_tensor({1, 2, 3, 4, 5, 6}, {3, 2});
  expect_close(index_select_backward(grad, {4, 2}, 0, idx({3, 0, 3})), {4, 2},
               {3, 4, 0, 0, 0, 0, 6, 8});
  expect_close(index_select_backward(grad, {3, 3}, -1, idx({2, 2})), {3, 3},
               {0, 0, 3, 0, 0, 7, 0, 0, 11});
}

// ---- gather ----------------------------------------------------------------------------------

Values ref_gather(const Values& x, const Sizes& xs, int64_t dim, const std::vector<int64_t>& index,
                  const Sizes& is) {
  Values out;
  for_each_pos(is, [&](const Sizes& p) {
    Sizes q = p;
    q[dim] = index[flat(p, is)];
    out.push_back(x[flat(q, xs)]);
  });
  return out;
}

TEST_F(Indexing, GatherMatchesOracle) {
  const Sizes xs{3, 4, 2};
  const Values x = random_values(24, 4);
  struct Case {
    int64_t dim;
    Sizes is;
  };
  for (const Case& c :
       {Case{0, {2, 4, 2}}, Case{1, {3, 6, 1}}, Case{-1, {2, 3, 3}}, Case{-3, {5, 1, 2}}}) {
    const int64_t d = (c.dim + 3) % 3;
    std::vector<int64_t> ix;
    const Values r = random_values(static_cast<size_t>(numel_of(c.is)), 5 + d, 0, 0.999);
    for (double v : r) ix.push_back(static_cast<int64_t>(v * static_cast<double>(xs[d])));
    for (bool strided : {false, true}) {
      SCOPED_TRACE("dim " + std::to_string(c.dim) + (strided ? " strided" : ""));
      const Tensor got = gather(make_tensor(x, xs, DType::Float64, strided), c.dim,
                                idx(ix, c.is, DType::Int64, strided));
      expect_close(got, c.is, ref_gather(x, xs, d, ix, c.is), 0, 0);
    }
  }
}

TEST_F(Indexing, GatherEdgeCasesAndErrors) {
  const Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_close(gather(make_tensor({7}, {}), 0, idx({0}, {})), {}, {7});
  // An empty index gives an empty result whatever its dtype.
  expect_close(gather(x, 0, make_tensor({}, {0, 3})), {0, 3}, {});
  EXPECT_EQ(message_of<TypeError>([&] {
              gather(x, 0, idx({0}, {1, 1}, DType::Int32));
            }),
            "gather(): Expected dtype int64 for index");
  EXPECT_EQ(message_of<IndexError>([&] {
              gather(x, 0, idx({5}, {1, 1}));
            }),
            "gather: index 5 is out of bounds for dimension 0 with size 2");
  EXPECT_EQ(message_of<IndexError>([&] {
              gather(x, 1, idx({-1}, {1, 1}));
            }),
            "gather: index -1 is out of bounds for dimension 1 with size 3");
  EXPECT_EQ(message_of([&] { gather(x, 0, idx({0})); }),
            "gather: Index tensor must have the same number of dimensions as input tensor");
  EXPECT_EQ(
      message_of([&] {
        gather(x, 0, idx(std::vector<int64_t>(8, 0), {2, 4}));
      }),
      "gather: Size does not match at dimension 1 expected index [2, 4] to be no larger than self "
      "[2, 3] apart from dimension 0");
}

// ---- scatter, scatter_add, scatter_reduce ------------------------------------------------------

/// out = self; for each position p of index (row-major): out[p with dim = index[p]] =
/// combine(out[...], src[p]). include_self=false starts each written element from identity.
Values ref_scatter(Values self, const Sizes& ss, int64_t dim, const std::vector<int64_t>& index,
                   const Sizes& is, const Values& src, const Sizes& srcs, const std::string& reduce,
                   bool include_self = true) {
  std::vector<int64_t> count(self.size(), 0);
  std::vector<bool> touched(self.size(), false);
  for_each_pos(is, [&](const Sizes& p) {
    Sizes q = p;
    q[dim] = index[flat(p, is)];
    const int64_t o = flat(q, ss);
    const double v = src.size() == 1 ? src[0] : src[flat(p, srcs)];
    double& t = self[o];
    if (!include_self && !touched[o]) {
      t = reduce == "prod" ? 1 : reduce == "amax" ? -INFINITY : reduce == "amin" ? INFINITY : 0;
    }
    touched[o] = true;
    ++count[o];
    if (reduce.empty()) {
      t = v;
    } else if (reduce == "sum" || reduce == "add" || reduce == "mean") {
      t += v;
    } else if (reduce == "prod" || reduce == "multiply") {
      t *= v;
    } else if (reduce == "amax") {
      t = std::isnan(v) ? v : (t < v ? v : t);
    } else if (reduce == "amin") {
      t = std::isnan(v) ? v : (v < t ? v : t);
    }
  });
  if (reduce == "mean") {
    for (size_t i = 0; i < self.size(); ++i) {
      const int64_t n = count[i] + (include_self ? 1 : 0);
      if (touched[i]) self[i] /= static_cast<double>(n == 0 ? 1 : n);
    }
  }
  return self;
}

struct ScatterCase {
  Sizes ss, is, srcs;
  int64_t dim;
};
const std::vector<ScatterCase>& scatter_cases() {
  static const std::vector<ScatterCase> c = {
      {{4, 3}, {6, 3}, {6, 4}, 0},  // duplicates along dim 0, src larger than index
      {{3, 5}, {2, 7}, {3, 7}, 1},  // more indices than the dim: duplicates
      {{2, 3, 4}, {2, 2, 6}, {2, 3, 6}, -1},
      {{5}, {9}, {9}, 0},
  };
  return c;
}
std::vector<int64_t> random_index(const Sizes& is, int64_t bound, uint64_t seed) {
  std::vector<int64_t> ix;
  for (double v : random_values(static_cast<size_t>(numel_of(is)), seed, 0, 0.999)) {
    ix.push_back(static_cast<int64_t>(v * static_cast<double>(bound)));
  }
  return ix;
}

TEST_F(Indexing, ScatterSrcValueAndAddMatchOracle) {
  uint64_t seed = 10;
  for (const ScatterCase& c : scatter_cases()) {
    const int64_t nd = static_cast<int64_t>(c.ss.size());
    const int64_t d = (c.dim + nd) % nd;
    const std::vector<int64_t> ix = random_index(c.is, c.ss[d], seed++);
    const Values self = random_values(static_cast<size_t>(numel_of(c.ss)), seed++);
    const Values src = random_values(static_cast<size_t>(numel_of(c.srcs)), seed++);
    for (bool strided : {false, true}) {
      SCOPED_TRACE(::testing::PrintToString(c.ss) + " dim " + std::to_string(c.dim) +
                   (strided ? " strided" : ""));
      const Tensor s = make_tensor(self, c.ss, DType::Float64, strided);
      const Tensor i = idx(ix, c.is, DType::Int64, strided);
      const Tensor u = make_tensor(src, c.srcs, DType::Float64, strided);
      expect_close(scatter(s, c.dim, i, u), c.ss,
                   ref_scatter(self, c.ss, d, ix, c.is, src, c.srcs, ""), 0, 0);
      expect_close(scatter(s, c.dim, i, Scalar(2.5)), c.ss,
                   ref_scatter(self, c.ss, d, ix, c.is, {2.5}, {}, ""), 0, 0);
      expect_close(scatter_add(s, c.dim, i, u), c.ss,
                   ref_scatter(self, c.ss, d, ix, c.is, src, c.srcs, "sum"), 1e-12, 1e-12);
      expect_close(scatter(s, c.dim, i, u, "multiply"), c.ss,
                   ref_scatter(self, c.ss, d, ix, c.is, src, c.srcs, "prod"), 1e-12, 1e-12);
      expect_close(scatter(s, c.dim, i, Scalar(3), "add"), c.ss,
                   ref_scatter(self, c.ss, d, ix, c.is, {3}, {}, "sum"), 1e-12, 1e-12);
      // The out-of-place forms leave self alone.
      expect_close(s, c.ss, self, 0, 0);
    }
  }
}

TEST_F(Indexing, ScatterReduceMatchesOracle) {
  uint64_t seed = 40;
  for (const ScatterCase& c : scatter_cases()) {
    const int64_t nd = static_cast<int64_t>(c.ss.size());
    const int64_t d = (c.dim + nd) % nd;
    const std::vector<int64_t> ix = random_index(c.is, c.ss[d], seed++);
    const Values self = random_values(static_cast<size_t>(numel_of(c.ss)), seed++);
    const Values src = random_values(static_cast<size_t>(numel_of(c.srcs)), seed++);
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
      for (bool include_self : {true, false}) {
        SCOPED_TRACE(::testing::PrintToString(c.ss) + " " + reduce +
                     (include_self ? "" : " exclude self"));
        const Values want = ref_scatter(self, c.ss, d, ix, c.is, src, c.srcs, reduce, include_self);
        expect_close(
            scatter_reduce(make_tensor(self, c.ss, DType::Float64, true), c.dim, idx(ix, c.is),
                           make_tensor(src, c.srcs, DType::Float64), reduce, include_self),
            c.ss, want, 1e-12, 1e-12);
        const Values self32 = as_dtype(self, DType::Float32), src32 = as_dtype(src, DType::Float32);
        expect_close(scatter_reduce(make_tensor(self32, c.ss), c.dim, idx(ix, c.is),
                                    make_tensor(src32, c.srcs), reduce, include_self),
                     c.ss,
                     ref_scatter(self32, c.ss, d, ix, c.is, src32, c.srcs, reduce, include_self),
                     1e-5, 1e-5);
      }
    }
  }
}

TEST_F(Indexing, ScatterReduceIntegersNanAndInPlace) {
  // Integer mean floors (PyTorch: (2 - 8) / 2 = -3, (1 + 5 + 6) / 3 = 4).
  expect_close(scatter_reduce(make_tensor({1, 2, 3, 4}, {4}, DType::Int64), 0, idx({0, 0, 1}),
                              make_tensor({5, 6, -8}, {3}, DType::Int64), "mean"),
               {4}, {4, -3, 3, 4});
  expect_close(scatter_reduce(make_tensor({1, 2, 3, 4}, {4}, DType::Int64), 0, idx({0, 1}),
                              make_tensor({-7, 3}, {2}, DType::Int64), "mean", false),
               {4}, {-7, 3, 3, 4});
  expect_close(scatter_reduce(make_tensor({1, 2, 3, 4}, {4}, DType::Int64), 0, idx({0, 0}),
                              make_tensor({5, 6}, {2}, DType::Int64), "amin", false),
               {4}, {5, 2, 3, 4});
  // NaN wins amax/amin whether it is in self or src.
  expect_close(scatter_reduce(make_tensor({1, kNan, 3, 4}, {4}), 0, idx({0, 1, 1}),
                              make_tensor({kNan, 5, 7}, {3}), "amax"),
               {4}, {kNan, kNan, 3, 4});
  // In place: returns self, bumps its version.
  Tensor s = make_tensor({0, 0, 0}, {3});
  const uint32_t v0 = s.version();
  EXPECT_TRUE(scatter_add_(s, 0, idx({2, 2, 0}), make_tensor({1, 2, 3}, {3})).is_same(s));
  EXPECT_GT(s.version(), v0);
  expect_close(s, {3}, {3, 0, 3});
  scatter_(s, 0, idx({1}), Scalar(9));
  scatter_(s, 0, idx({0}), make_tensor({-1}, {1}));
  scatter_(s, 0, idx({2}), make_tensor({2}, {1}), "multiply");
  scatter_(s, 0, idx({2, 2}), Scalar(1), "add");
  scatter_reduce_(s, 0, idx({1}), make_tensor({4}, {1}), "amin");
  expect_close(s, {3}, {-1, 4, 8});
  // Integer self with a float value: the value converts (2.5 -> 2), as PyTorch.
  expect_close(
      scatter(make_tensor({1, 2, 3, 4}, {4}, DType::Int64), 0, idx({0, 0, 1}), Scalar(2.5), "add"),
      {4}, {5, 4, 3, 4});
  // 0-dim self and index.
  expect_close(scatter(make_tensor({1}, {}), 0, idx({0}, {}), make_tensor({5}, {})), {}, {5});
  // An empty index writes nothing and checks no dtype.
  expect_close(scatter(make_tensor({1, 2}, {2}), 0, make_tensor({}, {0}), make_tensor({5}, {1})),
               {2}, {1, 2});
}

TEST_F(Indexing, SixteenBitFloatsAccumulateInTheirOwnType) {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor self = make_tensor({1, 2, 3}, {3}, t);
    const Tensor src = make_tensor({0.5, 1.5, 2.5, -1}, {4}, t);
    const Tensor a = scatter_add(self, 0, idx({0, 0, 2, 1}), src);
    EXPECT_EQ(a.dtype(), t);
    expect_close(a, {3}, {3, 1, 5.5});
    expect_close(index_add(self, 0, idx({2, 2, 0, 1}, {4}, DType::Int32), src, 2), {3}, {6, 0, 7});
    Tensor p = make_tensor({0, 0, 0}, {3}, t);
    index_put_(p, {idx({1, 1, 1, 0})}, src, true);
    expect_close(p, {3}, {-1, 4.5, 0});
    expect_close(scatter_reduce(self, 0, idx({0, 0, 2, 1}), src, "mean"), {3}, {1, 0.5, 2.75});
  }
}

TEST_F(Indexing, ScatterErrors) {
  const Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor one = make_tensor({1}, {1, 1});
  EXPECT_EQ(message_of<IndexError>([&] {
              scatter(x, 0, idx({5}, {1, 1}), one);
            }),
            "scatter: index 5 is out of bounds for dimension 0 with size 2");
  EXPECT_EQ(message_of<IndexError>([&] {
              scatter_add(x, 1, idx({-1}, {1, 1}), one);
            }),
            "scatter: index -1 is out of bounds for dimension 1 with size 3");
  EXPECT_EQ(message_of<TypeError>([&] {
              scatter(x, 0, idx({1}, {1, 1}), make_tensor({1}, {1, 1}, DType::Float64));
            }),
            "scatter(): Expected self.dtype to be equal to src.dtype");
  EXPECT_EQ(message_of<TypeError>([&] {
              scatter(x, 0, idx({1}, {1, 1}, DType::Int32), one);
            }),
            "scatter(): Expected dtype int64 for index");
  EXPECT_EQ(
      message_of([&] {
        scatter(x, 0, idx(std::vector<int64_t>(8, 0), {2, 4}), make_tensor(Values(8, 1), {2, 4}));
      }),
      "scatter: Expected index [2, 4] to be no larger than self [2, 3] apart from dimension 0 and "
      "to "
      "be no larger size than src [2, 4]");
  EXPECT_EQ(message_of([&] {
              scatter(x, 0, idx(std::vector<int64_t>(6, 0), {2, 3}), one);
            }),
            "scatter: Expected index [2, 3] to be no larger than self [2, 3] apart from dimension "
            "0 and to "
            "be no larger size than src [1, 1]");
  EXPECT_EQ(
      message_of([&] {
        scatter(x, 0, idx(std::vector<int64_t>(8, 0), {2, 4}), Scalar(1));
      }),
      "scatter: Expected index [2, 4] to be no larger than self [2, 3] apart from dimension 0");
  EXPECT_EQ(message_of([&] { scatter(x, 0, idx({0}), one); }),
            "scatter: Index tensor must have the same number of dimensions as self tensor");
  EXPECT_EQ(message_of([&] {
              scatter(x, 0, idx({0}, {1, 1}), make_tensor({1}, {1}));
            }),
            "scatter: Index tensor must have the same number of dimensions as src tensor");
  EXPECT_EQ(message_of([&] {
              scatter(x, 0, idx({1}, {1, 1}), one, "sum");
            }),
            "reduce argument must be either add or multiply.");
  EXPECT_EQ(message_of([&] {
              scatter(x, 0, idx({1}, {1, 1}), Scalar(2), "max");
            }),
            "reduce argument must be either add or multiply.");
  EXPECT_EQ(message_of([&] {
              scatter_reduce(x, 0, idx({1}, {1, 1}), one, "add");
            }),
            "reduce argument must be either sum, prod, mean, amax or amin, got add");
}

// ---- index_add, index_fill, take ------------------------------------------------------------

TEST_F(Indexing, IndexAddMatchesOracle) {
  const Sizes ss{4, 3};
  const Values self = random_values(12, 60), src = random_values(15, 61);
  // Along dim 0 with duplicates: 5 source rows into 4.
  const std::vector<int64_t> ix{3, 0, 3, 1, 3};
  Values want = self;
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 3; ++j) want[ix[i] * 3 + j] += 2.0 * src[i * 3 + j];
  }
  for (bool strided : {false, true}) {
    for (DType it : {DType::Int64, DType::Int32}) {
      expect_close(
          index_add(make_tensor(self, ss, DType::Float64, strided), 0, idx(ix, {5}, it, strided),
                    make_tensor(src, {5, 3}, DType::Float64, strided), 2.0),
          ss, want, 1e-12, 1e-12);
    }
  }
  // Along the last dim, negative.
  const Values src2 = random_values(8, 62);
  Values want2 = self;
  const std::vector<int64_t> ix2{2, 2};
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t k = 0; k < 2; ++k) want2[r * 3 + ix2[k]] += src2[r * 2 + k];
  }
  Tensor s = make_tensor(self, ss, DType::Float64);
  EXPECT_TRUE(index_add_(s, -1, idx(ix2), make_tensor(src2, {4, 2}, DType::Float64)).is_same(s));
  expect_close(s, ss, want2, 1e-12, 1e-12);
  // Integers take alpha converted to the integer type (2.7 -> 2).
  expect_close(index_add(make_tensor({1, 1, 1}, {3}, DType::Int64), 0, idx({0, 0}),
                         make_tensor({1, 1}, {2}, DType::Int64), 2.7),
               {3}, {5, 1, 1});
}

TEST_F(Indexing, IndexAddErrors) {
  const Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(message_of<TypeError>([&] {
              index_add(x, 0, make_tensor({0}, {1}), make_tensor({1, 1, 1}, {1, 3}));
            }),
            "index_add_(): Expected dtype int32/int64 for index but got: Float");
  EXPECT_EQ(message_of<IndexError>([&] {
              index_add(x, 0, idx({2}), make_tensor({1, 1, 1}, {1, 3}));
            }),
            "index_add: index out of range in self");
  EXPECT_EQ(message_of<IndexError>([&] {
              index_add(x, 0, idx({-1}), make_tensor({1, 1, 1}, {1, 3}));
            }),
            "index_add: index out of range in self");
  EXPECT_EQ(message_of<TypeError>([&] {
              index_add(x, 0, idx({0}), make_tensor({1, 1, 1}, {1, 3}, DType::Float64));
            }),
            "index_add_(): self (Float) and source (Double) must have the same scalar type");
  EXPECT_EQ(message_of([&] {
              index_add(x, 0, idx({0, 1}), make_tensor({1, 1, 1}, {1, 3}));
            }),
            "index_add_(): Number of indices (2) should be equal to source.size(dim): (1), for "
            "dim: 0");
  EXPECT_EQ(message_of([&] {
              index_add(x, 0, idx({0}), make_tensor({1, 1}, {1, 2}));
            }),
            "source tensor shape must match self tensor shape, excluding the specified dimension. "
            "Got self.shape = [2, 3] source.shape = [1, 2]");
  EXPECT_EQ(message_of<IndexError>([&] { index_add(x, 1, idx({0}), make_tensor({1}, {1})); }),
            "index_add_(): Indexing dim 1 is out of bounds of the source tensor with dim 1");
}

TEST_F(Indexing, IndexFill) {
  const Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32, true);
  expect_close(index_fill(x, 1, idx({0, -1}), Scalar(-1)), {2, 3}, {-1, 2, -1, -1, 5, -1});
  expect_close(index_fill(x, 0, idx({1}, {}), make_tensor({9}, {})), {2, 3}, {1, 2, 3, 9, 9, 9});
  expect_close(x, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = make_tensor({1, 2, 3}, {3}, DType::Int32);
  EXPECT_TRUE(index_fill_(y, 0, idx({2}), Scalar(2.9)).is_same(y));
  expect_close(y, {3}, {1, 2, 2});
  EXPECT_EQ(message_of<IndexError>([&] { index_fill(x, 1, idx({3}), Scalar(0)); }),
            "index_fill: index 3 is out of bounds for dimension 1 with size 3");
  EXPECT_EQ(message_of<IndexError>([&] { index_fill(x, 1, idx({-4}), Scalar(0)); }),
            "index_fill: index -4 is out of bounds for dimension 1 with size 3");
  EXPECT_EQ(
      message_of<IndexError>([&] { index_fill(x, 1, idx({0}, {1}, DType::Int32), Scalar(0)); }),
      "index_fill_(): Expected dtype int64 for index.");
  EXPECT_EQ(message_of([&] { index_fill(x, 1, idx({0}), make_tensor({1}, {1})); }),
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
            "dimension(s).");
}

TEST_F(Indexing, Take) {
  const Tensor x = make_tensor({0, 1, 2, 3, 4, 5}, {2, 3}, DType::Float64, true);
  expect_close(take(x, idx({0, 5, -1, 2}, {2, 2})), {2, 2}, {0, 5, 5, 2});
  expect_close(take(x, idx({})), {0}, {});
  EXPECT_EQ(message_of<IndexError>([&] { take(x, idx({6})); }),
            "out of range: tried to access index 6 on a tensor of 6 elements.");
  EXPECT_EQ(message_of<IndexError>([&] { take(x, idx({-7})); }),
            "out of range: tried to access index -7 on a tensor of 6 elements.");
  EXPECT_EQ(message_of<TypeError>([&] { take(x, idx({1}, {1}, DType::Int32)); }),
            "take(): Expected a long tensor for index, but got Int");
  EXPECT_EQ(message_of<IndexError>([&] { take(make_tensor({}, {0}), idx({0})); }),
            "take(): tried to take from an empty tensor");
}

// ---- masks -----------------------------------------------------------------------------------

TEST_F(Indexing, MaskedFillBroadcastsTheMask) {
  const Values x = random_values(6, 70);
  const Tensor m = mask({1, 0, 1}, {3});
  const Values want{-1, x[1], -1, -1, x[4], -1};
  for (bool strided : {false, true}) {
    expect_close(masked_fill(make_tensor(x, {2, 3}, DType::Float64, strided), m, Scalar(-1)),
                 {2, 3}, want, 0, 0);
    expect_close(masked_fill(make_tensor(x, {2, 3}, DType::Float64, strided), m,
                             make_tensor({-1}, {}, DType::Float64)),
                 {2, 3}, want, 0, 0);
    Tensor s = make_tensor(x, {2, 3}, DType::Float64, strided);
    const uint32_t v0 = s.version();
    EXPECT_TRUE(masked_fill_(s, mask({0, 1}, {2, 1}, strided), Scalar(7)).is_same(s));
    EXPECT_GT(s.version(), v0);
    expect_close(s, {2, 3}, {x[0], x[1], x[2], 7, 7, 7}, 0, 0);
  }
  // Out of place, self broadcasts to the mask's shape.
  expect_close(
      masked_fill(make_tensor({1, 2, 3}, {3}), mask({1, 0, 0, 0, 0, 1}, {2, 3}), Scalar(0)), {2, 3},
      {0, 2, 3, 1, 2, 0});
  // The value converts to self's dtype (2.5 -> 2 for integers).
  const Tensor i =
      masked_fill(make_tensor({1, 2, 3}, {3}, DType::Int64), mask({1, 0, 1}, {3}), 2.5);
  EXPECT_EQ(i.dtype(), DType::Int64);
  expect_close(i, {3}, {2, 2, 2});
  expect_close(masked_fill(make_tensor({1, 2}, {2}, DType::Float16), mask({0, 1}, {2}), 0.5), {2},
               {1, 0.5});
}

TEST_F(Indexing, MaskedFillErrors) {
  const Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(message_of<TypeError>([&] {
              masked_fill(x, idx({1, 0, 1}), Scalar(1));
            }),
            "masked_fill_ only supports boolean masks, but got mask with dtype long int");
  EXPECT_EQ(message_of<TypeError>([&] {
              masked_fill(x, make_tensor({1, 0, 1}, {3}, DType::UInt8), Scalar(1));
            }),
            "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char");
  EXPECT_EQ(message_of<TypeError>([&] {
              masked_fill_(x, make_tensor({1, 0, 1}, {3}), Scalar(1));
            }),
            "masked_fill_ only supports boolean masks, but got mask with dtype float");
  EXPECT_EQ(message_of([&] {
              masked_fill(x, mask({1, 0, 1}, {3}), make_tensor({1}, {1}));
            }),
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
            "dimension(s).");
  EXPECT_TRUE(testing::contains(
      message_of([&] {
        masked_fill(x, mask({1, 0, 1, 1}, {4}), Scalar(1));
      }),
      "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"));
  EXPECT_TRUE(
      testing::contains(message_of([&] {
                          masked_fill_(x, mask(std::vector<int>(12, 1), {2, 2, 3}), Scalar(1));
                        }),
                        "output with shape [2, 3] doesn't match the broadcast shape [2, 2, 3]"));
}

TEST_F(Indexing, MaskedSelect) {
  const Values x = random_values(6, 80);
  for (bool strided : {false, true}) {
    expect_close(masked_select(make_tensor(x, {2, 3}, DType::Float64, strided),
                               mask({0, 1, 1, 1, 0, 0}, {2, 3}, strided)),
                 {3}, {x[1], x[2], x[3]}, 0, 0);
  }
  // Both broadcast: a [3] self against a [2, 1] mask.
  expect_close(masked_select(make_tensor({1, 2, 3}, {3}), mask({0, 1}, {2, 1})), {3}, {1, 2, 3});
  expect_close(masked_select(make_tensor({1, 2, 3}, {3}), mask({0, 0, 0}, {3})), {0}, {});
  expect_close(masked_select(make_tensor({4}, {}), mask({1}, {})), {1}, {4});
  EXPECT_EQ(message_of<TypeError>([&] { masked_select(make_tensor({1}, {1}), idx({1})); }),
            "masked_select: expected BoolTensor for mask");
}

TEST_F(Indexing, MaskedScatter) {
  const Tensor src = make_tensor({10, 11, 12, 13, 14, 15}, {2, 3}, DType::Float32, true);
  expect_close(masked_scatter(make_tensor({0, 0, 0, 0, 0, 0}, {2, 3}), mask({1, 0, 1}, {3}), src),
               {2, 3}, {10, 0, 11, 12, 0, 13});
  // Out of place, self broadcasts.
  expect_close(masked_scatter(make_tensor({0, 0}, {2}), mask({1, 1, 0, 1}, {2, 2}), src), {2, 2},
               {10, 11, 0, 12});
  Tensor s = make_tensor({1, 2, 3}, {3});
  EXPECT_TRUE(masked_scatter_(s, mask({0, 1, 1}, {3}), src).is_same(s));
  expect_close(s, {3}, {1, 10, 11});
  EXPECT_EQ(message_of([&] {
              masked_scatter(s, mask({1, 1, 1}, {3}), make_tensor({1, 2}, {2}));
            }),
            "Number of elements of source < number of ones in mask");
  EXPECT_EQ(
      message_of<TypeError>([&] {
        masked_scatter(s, mask({1, 1, 1}, {3}), make_tensor({1, 2, 3}, {3}, DType::Float64));
      }),
      "masked_scatter_: expected self and source to have same dtypes but got Float and Double");
  EXPECT_EQ(message_of<TypeError>([&] {
              masked_scatter_(s, idx({1, 1, 1}), src);
            }),
            "masked_scatter_ only supports boolean masks, but got mask with dtype Long");
}

// ---- advanced indexing -------------------------------------------------------------------------

class AdvancedIndexing : public Indexing {
 protected:
  const Sizes xs{4, 5, 6};
  const Values x = random_values(120, 90);
  double at(int64_t i, int64_t j, int64_t k) const { return x[(i * 5 + j) * 6 + k]; }
  Tensor input(bool strided) const { return make_tensor(x, xs, DType::Float64, strided); }
};

TEST_F(AdvancedIndexing, OneIndexTensorSelectsAlongTheFirstDims) {
  for (bool strided : {false, true}) {
    // x[[2, 0, 2, -1]]: rows, duplicates and a negative index.
    const std::vector<int64_t> i{2, 0, 2, -1};
    Values want;
    for (int64_t r : i) {
      for (int64_t j = 0; j < 5; ++j) {
        for (int64_t k = 0; k < 6; ++k) want.push_back(at((r + 4) % 4, j, k));
      }
    }
    expect_close(index(input(strided), {idx(i, {4}, DType::Int64, strided)}), {4, 5, 6}, want, 0,
                 0);
    // x[:, [[1, 4], [0, 0]]] with an int32 index: the index shape replaces dim 1.
    const std::vector<int64_t> j{1, 4, 0, 0};
    want.clear();
    for (int64_t a = 0; a < 4; ++a) {
      for (int64_t b : j) {
        for (int64_t k = 0; k < 6; ++k) want.push_back(at(a, b, k));
      }
    }
    expect_close(index(input(strided), {std::nullopt, idx(j, {2, 2}, DType::Int32, strided)}),
                 {4, 2, 2, 6}, want, 0, 0);
  }
}

TEST_F(AdvancedIndexing, IndexTensorsBroadcastTogether) {
  // x[:, [[0], [3]], [1, 5, 2]]: adjacent indexed dims 1 and 2, index shape [2, 3].
  const std::vector<int64_t> j{0, 3}, k{1, 5, 2};
  Values want;
  for (int64_t a = 0; a < 4; ++a) {
    for (int64_t b : j) {
      for (int64_t c : k) want.push_back(at(a, b, c));
    }
  }
  expect_close(index(input(true), {std::nullopt, idx(j, {2, 1}), idx(k, {3})}), {4, 2, 3}, want, 0,
               0);
  // x[[1, 3], [4, 0], [5, 5]]: every dim indexed.
  expect_close(index(input(false), {idx({1, 3}), idx({4, 0}), idx({5, 5})}), {2},
               {at(1, 4, 5), at(3, 0, 5)}, 0, 0);
}

TEST_F(AdvancedIndexing, NonAdjacentIndexedDimsGoFirst) {
  // x[[0, 3], :, [1, 2]] is [2, 5]: the index dim leads (PyTorch's and NumPy's rule).
  Values want;
  const std::vector<int64_t> i{0, 3}, k{1, 2};
  for (size_t m = 0; m < 2; ++m) {
    for (int64_t j = 0; j < 5; ++j) want.push_back(at(i[m], j, k[m]));
  }
  for (bool strided : {false, true}) {
    expect_close(index(input(strided), {idx(i), std::nullopt, idx(k)}), {2, 5}, want, 0, 0);
  }
}

TEST_F(AdvancedIndexing, BoolMasksExpandToTheirNonzeroIndices) {
  // x[mask] with a [4] mask over dim 0.
  Values want;
  for (int64_t r : {1, 2}) {
    for (int64_t j = 0; j < 5; ++j) {
      for (int64_t k = 0; k < 6; ++k) want.push_back(at(r, j, k));
    }
  }
  expect_close(index(input(true), {mask({0, 1, 1, 0}, {4}, true)}), {2, 5, 6}, want, 0, 0);
  // x[:, m] with a [5, 6] mask: its trues in row-major order, after dim 0.
  std::vector<int> m(30, 0);
  m[1] = m[7] = m[29] = 1;
  want.clear();
  for (int64_t a = 0; a < 4; ++a) {
    for (int64_t f : {1, 7, 29}) want.push_back(at(a, f / 6, f % 6));
  }
  expect_close(index(input(false), {std::nullopt, mask(m, {5, 6})}), {4, 3}, want, 0, 0);
  // A mask and an index tensor together: x[mask0, :, [2, 4]] (not adjacent: index dim first).
  want.clear();
  const std::vector<int64_t> rows{0, 3}, cols{2, 4};
  for (size_t q = 0; q < 2; ++q) {
    for (int64_t j = 0; j < 5; ++j) want.push_back(at(rows[q], j, cols[q]));
  }
  expect_close(index(input(false), {mask({1, 0, 0, 1}, {4}), std::nullopt, idx(cols)}), {2, 5},
               want, 0, 0);
  // A uint8 mask works as a bool one; an all-false mask gives an empty result.
  expect_close(index(make_tensor({1, 2, 3}, {3}), {make_tensor({1, 0, 1}, {3}, DType::UInt8)}), {2},
               {1, 3});
  expect_close(index(input(false), {mask({0, 0, 0, 0}, {4})}), {0, 5, 6}, {});
  // A 0-dim mask adds a dim of size 1 (true) or 0 (false), as NumPy's x[True].
  expect_close(index(make_tensor({1, 2}, {2}), {mask({1}, {})}), {1, 2}, {1, 2});
  expect_close(index(make_tensor({1, 2}, {2}), {mask({0}, {})}), {0, 2}, {});
}

TEST_F(AdvancedIndexing, EdgeCases) {
  // An empty index tensor gives an empty dim; indexing a 0-size dim with one is fine.
  expect_close(index(input(false), {idx({})}), {0, 5, 6}, {});
  expect_close(index(make_tensor({}, {0, 3}), {idx({})}), {0, 3}, {});
  // A 0-dim index removes the dim.
  Values want;
  for (int64_t j = 0; j < 5; ++j) {
    for (int64_t k = 0; k < 6; ++k) want.push_back(at(2, j, k));
  }
  expect_close(index(input(true), {idx({2}, {})}), {5, 6}, want, 0, 0);
  // No index tensor at all: a copy of self.
  const Tensor c = index(input(false), {std::nullopt});
  expect_close(c, xs, x, 0, 0);
  // Every dtype is moved as is.
  const Tensor h = make_tensor({1.5, -2, 3}, {3}, DType::Float16);
  EXPECT_EQ(index(h, {idx({2, 0})}).dtype(), DType::Float16);
  expect_close(index(h, {idx({2, 0})}), {2}, {3, 1.5});
  expect_close(index(make_tensor({1, 0, 1}, {3}, DType::Bool), {idx({1, 2})}), {2}, {0, 1});
}

TEST_F(AdvancedIndexing, Errors) {
  const Tensor t = input(false);
  EXPECT_EQ(message_of<IndexError>([&] {
              index(t, {std::nullopt, idx({5})});
            }),
            "index 5 is out of bounds for dimension 0 with size 5");
  EXPECT_EQ(message_of<IndexError>([&] {
              index(t, {std::nullopt, idx({0}), idx({-7})});
            }),
            "index -7 is out of bounds for dimension 1 with size 6");
  EXPECT_EQ(message_of<IndexError>([&] {
              index(t, {idx({0}), idx({0}), idx({0}), idx({0})});
            }),
            "too many indices for tensor of dimension 3 (got 4)");
  EXPECT_EQ(message_of<IndexError>([&] { index(t, {make_tensor({0}, {1})}); }),
            "tensors used as indices must be long, int, byte or bool tensors");
  EXPECT_EQ(message_of<IndexError>([&] {
              index(t, {idx({0, 1}), idx({0, 1, 2})});
            }),
            "shape mismatch: indexing tensors could not be broadcast together with shapes [2], "
            "[3]");
  EXPECT_EQ(message_of<IndexError>([&] {
              index(t, {mask({1, 0, 1}, {3})});
            }),
            "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor "
            "[4, 5, 6] at index 0");
  EXPECT_EQ(message_of<IndexError>([&] {
              index(t, {std::nullopt, mask(std::vector<int>(35, 1), {5, 7})});
            }),
            "The shape of the mask [5, 7] at index 1 does not match the shape of the indexed "
            "tensor [4, 5, 6] at index 2");
  EXPECT_EQ(message_of<IndexError>([&] {
              index(make_tensor({}, {0, 3}), {idx({0})});
            }),
            "index is out of bounds for dimension with size 0");
  EXPECT_EQ(message_of<IndexError>([&] { index(make_tensor({3}, {}), {idx({0})}); }),
            "too many indices for tensor of dimension 0 (got 1)");
}

TEST_F(AdvancedIndexing, IndexPutAccumulateSumsDuplicates) {
  for (bool strided : {false, true}) {
    Tensor y = make_tensor(Values(12, 0), {3, 4}, DType::Float64, strided);
    const uint32_t v0 = y.version();
    EXPECT_TRUE(index_put_(y, {idx({0, 0, 2}, {3}, DType::Int64, strided)},
                           make_tensor(Values(12, 1), {3, 4}, DType::Float64, strided), true)
                    .is_same(y));
    EXPECT_GT(y.version(), v0);
    expect_close(y, {3, 4}, {2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1});
  }
  // Duplicates of a pair of indices, integer self, a broadcast [1] value.
  Tensor z = make_tensor({0, 0, 0, 0}, {2, 2}, DType::Int64);
  index_put_(z, {idx({1, 1, 0}), idx({0, 0, 1})}, make_tensor({3}, {1}, DType::Int64), true);
  expect_close(z, {2, 2}, {0, 3, 6, 0});
  // Bool accumulates as a logical or.
  Tensor b = make_tensor({0, 0, 0}, {3}, DType::Bool);
  index_put_(b, {idx({0, 0})}, mask({1, 1}, {2}), true);
  expect_close(b, {3}, {1, 0, 0});
}

TEST_F(AdvancedIndexing, IndexPutWithoutAccumulateKeepsTheLastWrite) {
  Tensor y = make_tensor(Values(12, 0), {3, 4});
  index_put_(y, {idx({0, 0})}, make_tensor({1, 1, 1, 1, 2, 2, 2, 2}, {2, 4}), false);
  expect_close(y, {3, 4}, {2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0});
  // A 0-dim value broadcasts to every indexed element.
  index_put_(y, {idx({1, 2}), idx({1, 3})}, make_tensor({5}, {}), false);
  expect_close(y, {3, 4}, {2, 2, 2, 2, 0, 5, 0, 0, 0, 0, 0, 5});
  // A mask with a row value broadcast over the masked rows.
  Tensor m = make_tensor(Values(12, 0), {3, 4}, DType::Float32, true);
  index_put_(m, {mask({1, 0, 1}, {3})}, make_tensor({1, 2, 3, 4}, {4}), false);
  expect_close(m, {3, 4}, {1, 2, 3, 4, 0, 0, 0, 0, 1, 2, 3, 4});
  // Not adjacent: x[[0, 1], :, [1, 2]] = v[2, 3].
  Tensor n = make_tensor(Values(24, 0), {2, 3, 4});
  index_put_(n, {idx({0, 1}), std::nullopt, idx({1, 2})}, make_tensor({0, 1, 2, 3, 4, 5}, {2, 3}),
             false);
  Values want(24, 0);
  for (int64_t j = 0; j < 3; ++j) {
    want[j * 4 + 1] = static_cast<double>(j);
    want[12 + j * 4 + 2] = static_cast<double>(3 + j);
  }
  expect_close(n, {2, 3, 4}, want);
  // index_put leaves self alone.
  const Tensor s = make_tensor({1, 2, 3}, {3});
  expect_close(index_put(s, {idx({1})}, make_tensor({9}, {1})), {3}, {1, 9, 3});
  expect_close(index_put(s, {idx({1, 1})}, make_tensor({9}, {1}), true), {3}, {1, 20, 3});
  expect_close(s, {3}, {1, 2, 3});
}

TEST_F(AdvancedIndexing, IndexPutMaskWithOneValueFills) {
  // One mask and a one-element value fill as masked_fill_ does, whatever the value's dtype.
  Tensor y = make_tensor(Values(12, 0), {3, 4});
  index_put_(y, {mask({1, 0, 1}, {3})}, make_tensor({2}, {}, DType::Float64), false);
  expect_close(y, {3, 4}, {2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2});
  // ... also after a None, where the mask covers the trailing dim.
  index_put_(y, {std::nullopt, mask({0, 1, 0, 0}, {4})}, make_tensor({7}, {1}), false);
  expect_close(y, {3, 4}, {2, 7, 2, 2, 0, 7, 0, 0, 2, 7, 2, 2});
  // A None after the mask leaves the mask on its own dim (x[:, mask, :] = v).
  Tensor z = make_tensor(Values(18, 0), {2, 3, 3});
  index_put_(z, {std::nullopt, mask({0, 1, 0}, {3}), std::nullopt}, make_tensor({5}, {}), false);
  Values want(18, 0);
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t k = 0; k < 3; ++k) want[a * 9 + 3 + k] = 5;
  }
  expect_close(z, {2, 3, 3}, want);
  // With accumulate the dtypes must match.
  EXPECT_EQ(message_of<TypeError>([&] {
              index_put_(y, {mask({1, 0, 1}, {3})}, make_tensor({2}, {}, DType::Float64), true);
            }),
            "Index put requires the source and destination dtypes match, got Float for the "
            "destination and Double for the source.");
}

TEST_F(AdvancedIndexing, IndexPutErrors) {
  Tensor y = make_tensor(Values(12, 0), {3, 4});
  EXPECT_EQ(message_of([&] {
              index_put_(y, {idx({0, 2})}, make_tensor({1, 1, 1}, {3}));
            }),
            "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of "
            "shape [2, 4]");
  EXPECT_EQ(message_of<TypeError>([&] {
              index_put_(y, {idx({0, 2})}, make_tensor({1, 1, 1, 1}, {4}, DType::Float64));
            }),
            "Index put requires the source and destination dtypes match, got Float for the "
            "destination and Double for the source.");
  EXPECT_EQ(message_of<IndexError>([&] { index_put_(y, {idx({3})}, make_tensor({1}, {})); }),
            "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(message_of<IndexError>([&] { index_put_(y, {idx({3})}, make_tensor({1}, {}), true); }),
            "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_EQ(message_of<IndexError>([&] {
              index_put_(y, {idx({0}), idx({0}), idx({0})}, make_tensor({1}, {}));
            }),
            "too many indices for tensor of dimension 2 (got 3)");
  // Nothing was written by the failed calls.
  expect_close(y, {3, 4}, Values(12, 0));
}

// The Tensor?[] argument through the boxed convention (IValue's optional tensor list).
TEST_F(AdvancedIndexing, BoxedCallTakesAnOptionalTensorList) {
  Stack s{IValue(make_tensor({1, 2, 3, 4, 5, 6}, {2, 3})),
          IValue(IndexList{std::nullopt, idx({2, 0})})};
  Dispatcher::instance().find_op_or_throw("aten::index.Tensor").call_boxed(s);
  ASSERT_EQ(s.size(), 1u);
  expect_close(s.back().to_tensor(), {2, 2}, {3, 1, 6, 4});
  // A plain tensor list converts to Tensor?[].
  Stack p{IValue(make_tensor({1, 2, 3}, {3})), IValue(std::vector<Tensor>{idx({1})}),
          IValue(make_tensor({9}, {}))};
  Dispatcher::instance().find_op_or_throw("aten::index_put").call_boxed(p);
  expect_close(p.back().to_tensor(), {3}, {1, 9, 3});
}

// ---- nonzero, argwhere, where, one_hot
// -------------------------------------------------------------

TEST_F(Indexing, NonzeroListsCoordinatesInRowMajorOrder) {
  for (bool strided : {false, true}) {
    const Tensor t = make_tensor({0, 1, 2, 0, 0, 3}, {2, 3}, DType::Float32, strided);
    const Tensor nz = nonzero(t);
    EXPECT_EQ(nz.dtype(), DType::Int64);
    expect_close(nz, {3, 2}, {0, 1, 0, 2, 1, 2});
    expect_close(argwhere(t), {3, 2}, {0, 1, 0, 2, 1, 2});
    const std::vector<Tensor> w = where(t);
    ASSERT_EQ(w.size(), 2u);
    expect_close(w[0], {3}, {0, 0, 1});
    expect_close(w[1], {3}, {1, 2, 2});
  }
  // NaN is nonzero, -0.0 is not.
  expect_close(nonzero(make_tensor({kNan, 0.0, -0.0, 1}, {4}, DType::Float64)), {2, 1}, {0, 3});
  expect_close(nonzero(make_tensor({1, 0, 1}, {3}, DType::Bool)), {2, 1}, {0, 2});
  expect_close(nonzero(make_tensor({0, 5}, {2}, DType::Float16)), {1, 1}, {1});
  // 0-dim and empty inputs.
  expect_close(nonzero(make_tensor({2}, {})), {1, 0}, {});
  expect_close(nonzero(make_tensor({0}, {})), {0, 0}, {});
  expect_close(nonzero(make_tensor({}, {0, 3})), {0, 2}, {});
  const std::vector<Tensor> w0 = where(make_tensor({2}, {}));
  ASSERT_EQ(w0.size(), 1u);
  expect_close(w0[0], {1}, {0});
}

TEST_F(Indexing, OneHot) {
  const Tensor o = one_hot(idx({2, 0, 1, 2}, {2, 2}));
  EXPECT_EQ(o.dtype(), DType::Int64);
  expect_close(o, {2, 2, 3}, {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
  expect_close(one_hot(idx({1}, {1}, DType::Int64, true), 4), {1, 4}, {0, 1, 0, 0});
  expect_close(one_hot(idx({2}, {}), 3), {3}, {0, 0, 1});
  expect_close(one_hot(idx({}), 3), {0, 3}, {});
  EXPECT_EQ(message_of([&] {
              one_hot(idx({-1, 2}));
            }),
            "one_hot: Class values must be non-negative.");
  EXPECT_EQ(message_of([&] {
              one_hot(idx({1, 2}), 2);
            }),
            "one_hot: Class values must be smaller than num_classes.");
  EXPECT_EQ(message_of([&] { one_hot(idx({})); }),
            "one_hot: Can not infer total number of classes from empty tensor.");
  EXPECT_EQ(message_of<TypeError>([&] { one_hot(idx({1}, {1}, DType::Int32)); }),
            "one_hot: one_hot is only applicable to index tensor of type LongTensor.");
  // Note [Result sizes that overflow]: one_hot names itself, not empty.
  EXPECT_EQ(message_of([&] { one_hot(idx({0}, {1}), int64_t{1} << 62); }),
            "one_hot: the result size overflows int64 (the number of bytes of sizes [1, "
            "4611686018427387904] of int64)");
  const Tensor max = Tensor::from_vector<int64_t>({std::numeric_limits<int64_t>::max()}, {1});
  EXPECT_EQ(message_of([&] { one_hot(max); }),
            "one_hot: the result size overflows int64 (9223372036854775807 + 1)");
}

}  // namespace
}  // namespace loom
