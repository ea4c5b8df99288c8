// The indexing and sorting families' derivative formulas (ops/core/autograd/indexing.cpp,
// sorting.cpp) against finite differences, on float64 inputs that are often non-contiguous,
// with negative dims, repeated indices, broadcasting masks and the in-place forms.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "gradcheck_util.h"
#include "loom/autograd/autograd.h"
#include "loom/loom.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using autograd::variable_list;
using testing::contains;
using testing::expect_gradcheck;
using testing::make_tensor;
using testing::message_of;
using testing::to_doubles;
using Values = std::vector<double>;

// A float64 leaf with distinct values (none zero); strided: its last dim has stride 2.
Tensor input(std::vector<int64_t> sizes, bool strided = true, double seed = 0) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Values v;
  for (int64_t i = 0; i < n; ++i) {
    v.push_back(std::sin(1.3 * static_cast<double>(i) + seed) + 0.1 * static_cast<double>(i) + 1.5);
  }
  Tensor t = make_tensor(v, sizes, DType::Float64, strided);
  t.set_requires_grad(true);
  return t;
}

Tensor longs(Values v, std::vector<int64_t> sizes) { return make_tensor(v, sizes, DType::Int64); }

Tensor mask(Values v, std::vector<int64_t> sizes) { return make_tensor(v, sizes, DType::Bool); }

class IndexingGradcheckTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
};

TEST_F(IndexingGradcheckTest, SelectionAlongOneDim) {
  Tensor x = input({3, 4});
  const Tensor idx = longs({2, 0, 2}, {3});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {index_select(in[0], -1, idx)}; },
      {x});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {index_select(in[0], 0, idx)}; }, {x});
  const Tensor gidx = longs({0, 0, 3, 1, 2, 2}, {3, 2});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {gather(in[0], -1, gidx)}; }, {x});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {gather(in[0], 0, longs({2, 0, 1, 1}, {1, 4}))};
      },
      {x});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {take(in[0], longs({0, 11, 5, 5}, {2, 2}))};
      },
      {x});
}

TEST_F(IndexingGradcheckTest, Scatter) {
  Tensor self = input({3, 4});
  Tensor src = input({2, 5}, true, 1);  // larger than the index: only its corner is read
  const Tensor idx = longs({0, 2, 1, 1, 3, 0}, {2, 3});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {scatter(in[0], -1, idx, in[1])}; },
      {self, src});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {scatter(in[0], 1, idx, Scalar(2.5))};
      },
      {self});
  const Tensor dup = longs({0, 0, 1, 1, 1, 1}, {2, 3});  // repeated targets add up
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {scatter_add(in[0], 1, dup, in[1])}; },
      {self, src});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {scatter_add(in[0], 0, longs({2, 0, 2, 1}, {1, 4}), in[1])};
      },
      {self, input({1, 4}, false, 2)});
  // In place on a non-leaf.
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        scatter_(y, -1, idx, in[1]);
        scatter_add_(y, 1, dup, in[1]);
        return {y};
      },
      {self, src});
}

TEST_F(IndexingGradcheckTest, ScatterReduce) {
  Tensor self = input({3, 4});
  Tensor src = input({2, 3}, true, 1);
  const Tensor idx = longs({0, 0, 3, 1, 1, 1}, {2, 3});
  for (const char* reduce : {"sum", "mean", "amax", "amin", "prod"}) {
    for (bool include_self : {true, false}) {
      SCOPED_TRACE(std::string(reduce) + (include_self ? " include_self" : " exclude_self"));
      expect_gradcheck(
          [&](const variable_list& in) -> variable_list {
            return {scatter_reduce(in[0], -1, idx, in[1], reduce, include_self)};
          },
          {self, src});
      expect_gradcheck(
          [&](const variable_list& in) -> variable_list {
            Tensor y = in[0] * 1.0;
            scatter_reduce_(y, 1, idx, in[1], reduce, include_self);
            return {y};
          },
          {self, src});
    }
  }
  // prod with zeros: one zero in a group, two zeros in another.
  Tensor zs = make_tensor({0, 2, 3, 0, 0, 5}, {2, 3}, DType::Float64);
  zs.set_requires_grad(true);
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {scatter_reduce(in[0], 1, longs({0, 0, 1, 2, 2, 3}, {2, 3}), in[1], "prod", true)};
      },
      {self, zs});
}

TEST_F(IndexingGradcheckTest, IndexAddAndIndexFill) {
  Tensor self = input({3, 4});
  const Tensor idx = longs({2, 0, 2}, {3});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {index_add(in[0], -1, idx, in[1], 2.0)};
      },
      {self, input({3, 3}, true, 1)});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {index_add(in[0], 0, idx, in[1])}; },
      {self, input({3, 4}, false, 2)});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {index_fill(in[0], -1, idx, Scalar(7.0))};
      },
      {self});
  Tensor value = make_tensor({0.5}, {}, DType::Float64);
  value.set_requires_grad(true);
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {index_fill(in[0], 0, idx, in[1])}; },
      {self, value});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        index_add_(y, 1, idx, in[1]);
        index_fill_(y, 0, longs({1}, {1}), in[2]);
        return {y};
      },
      {self, input({3, 3}, true, 3), value});
}

TEST_F(IndexingGradcheckTest, Masks) {
  Tensor self = input({2, 3});
  const Tensor m = mask({1, 0, 1}, {3});  // broadcasts over self's rows
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {masked_fill(in[0], m, Scalar(-1.0))};
      },
      {self});
  Tensor value = make_tensor({0.5}, {}, DType::Float64);
  value.set_requires_grad(true);
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {masked_fill(in[0], m, in[1])}; },
      {self, value});
  // masked_select broadcasts self against a larger mask.
  const Tensor m2 = mask({1, 0, 1, 1, 1, 0}, {2, 3});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {masked_select(in[0], m2)}; }, {self});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {masked_select(in[0], m2)}; },
      {input({3}, true, 1)});
  // masked_scatter reads the first 4 of source's 5 elements.
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list { return {masked_scatter(in[0], m2, in[1])}; },
      {self, input({5}, true, 2)});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        masked_fill_(y, m, in[2]);
        masked_scatter_(y, mask({0, 1, 0, 0, 0, 1}, {2, 3}), in[1]);
        return {y};
      },
      {self, input({2, 2}, true, 2), value});
}

TEST_F(IndexingGradcheckTest, AdvancedIndexing) {
  Tensor x = input({3, 4});
  const Tensor rows = longs({2, 0, 2}, {3});
  expect_gradcheck([&](const variable_list& in) -> variable_list { return {index(in[0], {rows})}; },
                   {x});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {index(in[0], {std::nullopt, longs({-1, 1, 1}, {3})})};
      },
      {x});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {index(in[0], {longs({0, 2}, {2, 1}), longs({1, 3, 3}, {1, 3})})};
      },
      {x});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {index(in[0], {mask({1, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1}, {3, 4})})};
      },
      {x});
  for (bool accumulate : {true, false}) {
    SCOPED_TRACE(accumulate ? "accumulate" : "overwrite");
    // values broadcast over the indexed rows' columns.
    const Tensor distinct = longs({2, 0}, {2});
    expect_gradcheck(
        [&](const variable_list& in) -> variable_list {
          return {index_put(in[0], {distinct}, in[1], accumulate)};
        },
        {x, input({4}, true, 1)});
    expect_gradcheck(
        [&](const variable_list& in) -> variable_list {
          return {index_put(in[0], {std::nullopt, longs({3, 1}, {2})}, in[1], accumulate)};
        },
        {x, input({3, 2}, false, 2)});
    expect_gradcheck(
        [&](const variable_list& in) -> variable_list {
          Tensor y = in[0] * 1.0;
          index_put_(y, {distinct, longs({1, 1}, {2})}, in[1], accumulate);
          return {y};
        },
        {x, input({2}, true, 3)});
  }
  // Repeated indices with accumulate add up.
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {index_put(in[0], {rows}, in[1], true)};
      },
      {x, input({3, 4}, true, 4)});
}

TEST_F(IndexingGradcheckTest, IntegerResultsNeedNoGradient) {
  Tensor x = input({2, 3});
  EXPECT_FALSE(nonzero(x).requires_grad());
  EXPECT_FALSE(argwhere(x).requires_grad());
  EXPECT_FALSE(one_hot(longs({0, 2}, {2}), 3).requires_grad());
  EXPECT_FALSE(argsort(x, int64_t{-1}, false).requires_grad());
  EXPECT_FALSE(std::get<1>(sort(x)).requires_grad());
}

TEST_F(IndexingGradcheckTest, SortingValues) {
  Tensor x = input({3, 4});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {std::get<0>(sort(in[0]))}; }, {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {std::get<0>(sort(in[0], 0, true))}; },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {std::get<0>(sort(in[0], std::optional<bool>(true), -2, false))};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {std::get<0>(topk(in[0], 2, -1))}; },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {std::get<0>(topk(in[0], 2, 0, false, false))};
      },
      {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {msort(in[0])}; }, {x});
  Tensor scalar = make_tensor({2.0}, {}, DType::Float64);
  scalar.set_requires_grad(true);
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {std::get<0>(sort(in[0]))}; },
      {scalar});
}

TEST_F(IndexingGradcheckTest, UniqueHasNoDerivative) {
  // As in PyTorch: the values require grad, and backward names the op.
  Tensor x = input({4});
  Tensor u = std::get<0>(unique(x));
  ASSERT_TRUE(u.requires_grad());
  const std::string msg = message_of([&] { u.sum().backward(); });
  EXPECT_TRUE(contains(msg, "_unique2")) << msg;
}

TEST_F(IndexingGradcheckTest, OnlyTheSecondInputRequiresGrad) {
  const Tensor x = input({3, 4}).detach();
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {index_put(x, {longs({2, 0}, {2})}, in[0], false)};
      },
      {input({4}, true, 1)});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {scatter(x, 1, longs({0, 2, 1}, {1, 3}), in[0])};
      },
      {input({1, 3}, false, 2)});
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {masked_scatter(x, mask({1, 0, 0, 1}, {4}), in[0])};
      },
      {input({6}, true, 3)});
}

TEST_F(IndexingGradcheckTest, SecondDerivatives) {
  auto check2 = [](const std::function<variable_list(const variable_list&)>& fn,
                   const variable_list& inputs) {
    try {
      autograd::gradgradcheck(fn, inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  };
  Tensor x = input({3, 4});
  const Tensor idx = longs({2, 0, 2}, {3});
  check2(
      [&](const variable_list& in) -> variable_list {
        return {index_select(in[0], 0, idx) *
                gather(in[0], 1, longs({1, 0, 3, 3, 2, 2, 0, 1, 3, 0, 0, 1}, {3, 4}))};
      },
      {x});
  check2(
      [&](const variable_list& in) -> variable_list {
        return {index(in[0], {idx}) *
                masked_fill(in[0], mask({0, 1, 1, 0}, {4}), Scalar(0.0)).narrow(0, 0, 3)};
      },
      {x});
  check2(
      [&](const variable_list& in) -> variable_list {
        Tensor s = scatter_add(in[0], 1, longs({0, 0, 1}, {1, 3}), in[0].narrow(0, 0, 1));
        return {s * std::get<0>(sort(in[0], -1))};
      },
      {x});
}

}  // namespace
}  // namespace loom
