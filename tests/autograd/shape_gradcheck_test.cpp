// The shape family's derivative formulas (ops/core/autograd/shape.cpp) against finite
// differences: views, splits (only some outputs used), concatenation, the copying shape ops
// and their in-place forms, on float64 inputs that are often non-contiguous, with negative
// dims; plus in-place changes through views (the engine's CopySlices).
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
using testing::expect_gradcheck;
using testing::make_tensor;
using testing::to_doubles;
using Values = std::vector<double>;

// A float64 leaf with distinct values; strided: its last dim has stride 2.
Tensor input(std::vector<int64_t> sizes, bool strided = true, double seed = 0) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  Values v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(std::sin(1.3 * static_cast<double>(i) + seed) + 0.1 * i);
  Tensor t = make_tensor(v, sizes, DType::Float64, strided);
  t.set_requires_grad(true);
  return t;
}

// A transposed (non-contiguous, no stride-2 gaps) float64 leaf of the given final sizes.
Tensor transposed(int64_t rows, int64_t cols, double seed = 0) {
  Tensor base = input({cols, rows}, false, seed);
  Tensor t = base.detach().t();
  t.set_requires_grad(true);
  return t;
}

class ShapeGradcheckTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
};

TEST_F(ShapeGradcheckTest, ViewsThatKeepEveryElement) {
  Tensor x = input({2, 3});
  EXPECT_FALSE(x.is_contiguous());
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].view({6})}; }, {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].view({3, -1})};
      },
      {input({2, 3}, false)});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].unflatten(-1, {1, 3})};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].view_as(zeros({3, 2}, DType::Float64))};
      },
      {input({2, 3}, false)});
  Tensor y = input({2, 1, 3, 1});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].squeeze()}; }, {y});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].squeeze(-1)}; },
                   {y});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {squeeze(in[0], IntArrayRef{1, -1})};
      },
      {y});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].unsqueeze(-1)}; },
                   {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].unsqueeze(1)}; },
                   {x});
  Tensor z = input({2, 3, 4});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {in[0].transpose(0, -1)}; }, {z});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].permute({-1, 0, 1})};
      },
      {z});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].t()}; }, {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {movedim(in[0], 0, -1)}; },
                   {z});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {movedim(in[0], IntArrayRef{0, -1}, IntArrayRef{-1, 1})};
      },
      {z});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {swapaxes(in[0], -1, 1)}; }, {z});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        LOOM_TYPED_OP(op, "aten::swapdims", Tensor(const Tensor&, int64_t, int64_t));
        return {op(in[0], 0, 2)};
      },
      {z});
}

TEST_F(ShapeGradcheckTest, ReshapeAndFlattenViewOrCopy) {
  // Viewable (stride-2 gaps merge) and not viewable (transposed): a copy, not a view.
  Tensor x = input({2, 3});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].reshape({3, 2})};
      },
      {x});
  Tensor xt = transposed(2, 3);
  Tensor r = xt.reshape({-1});
  EXPECT_FALSE(r.is_alias_of(xt));
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].reshape({-1})}; },
                   {xt});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].flatten()}; },
                   {xt});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].flatten(1, -1), in[0].flatten(0, -2), in[0].flatten(-1, -1)};
      },
      {input({2, 3, 4})});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].flatten()}; },
                   {input({}, false)});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].reshape_as(zeros({6}, DType::Float64))};
      },
      {xt});
}

TEST_F(ShapeGradcheckTest, InPlaceOnReshapeCopyDoesNotReachTheBase) {
  // reshape of a transposed tensor copies: changing the copy in place must not act as a
  // change of its input (the input is a leaf here, which a view could not be changed through).
  Tensor x = transposed(2, 3);
  Tensor y = x.reshape({-1});
  y.mul_(2.0);
  y.sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), Values(6, 2.0));
}

TEST_F(ShapeGradcheckTest, ExpandSumsOverTheExpandedDims) {
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].expand({3, 2, 4})};
      },
      {input({2, 1})});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].expand({2, -1})};
      },
      {input({3})});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].expand_as(zeros({2, 3}, DType::Float64))};
      },
      {input({1, 3})});
}

TEST_F(ShapeGradcheckTest, ViewsThatSeePartOfTheInput) {
  Tensor x = input({3, 4});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {in[0].narrow(-1, 1, 2)}; }, {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {in[0].narrow(0, -2, 2)}; }, {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {slice(in[0], 1, 1, {}, 2)}; }, {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {slice(in[0], -2, -2)}; },
                   {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].select(-1, 1)}; },
                   {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].select(0, -1)}; },
                   {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {as_strided(in[0], {2, 2}, {1, 4}, 1)};
      },
      {input({3, 4}, false)});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list { return {as_strided(in[0], {3}, {2})}; },
      {input({6}, false)});
  // An input with a storage offset (its own default offset), and a view that reads elements
  // twice (their gradients add up).
  Tensor offset_leaf = input({8}, false).detach().narrow(0, 2, 5);
  offset_leaf.set_requires_grad(true);
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {as_strided(in[0], {2, 2}, {2, 1})};
      },
      {offset_leaf});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {as_strided(in[0], {2, 3}, {1, 1}, 3)};
      },
      {offset_leaf});
}

TEST_F(ShapeGradcheckTest, SplitsWithOnlySomeOutputsUsed) {
  Tensor x = input({3, 5});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].split(2, -1)[1]}; },
                   {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        auto parts = in[0].split(2, -1);
        return {parts[0], parts[2]};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {split_with_sizes(in[0], {1, 3, 1}, 1)[1]};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        auto parts = split(in[0], IntArrayRef{2, 1}, -2);
        return {parts[1] * 2.0 + parts[0].sum()};
      },
      {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].chunk(2, 0)[0]}; },
                   {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].chunk(3, -1)[2]}; },
                   {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].unbind(-1)[3]}; },
                   {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        auto rows = in[0].unbind(0);
        return {rows[0] * rows[2]};
      },
      {x});
}

TEST_F(ShapeGradcheckTest, ConcatenationAndStacking) {
  Tensor a = input({2, 3});
  Tensor b = transposed(2, 2, 1);
  Tensor c = input({2, 1}, false, 2);
  expect_gradcheck([](const variable_list& in) -> variable_list { return {cat(in, -1)}; },
                   {a, b, c});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        LOOM_TYPED_OP(op, "aten::concat", Tensor(TensorList, int64_t));
        return {op(in, 1)};
      },
      {a, b, c});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        LOOM_TYPED_OP(op, "aten::concatenate", Tensor(TensorList, int64_t));
        return {op({in[0], in[1]}, 0)};
      },
      {a, input({1, 3}, false, 3)});
  // The second input does not require grad; the legacy [0] one is skipped by cat.
  Tensor d = input({2, 3}, true, 4).detach();
  Tensor empty = zeros({0}, DType::Float64);
  empty.set_requires_grad(true);
  expect_gradcheck(
      [&](const variable_list& in) -> variable_list {
        return {cat({in[0], d, in[1]}, 0)};
      },
      {a, empty});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {stack(in, -1)}; },
                   {a, input({2, 3}, false, 5)});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {stack(in, 0)}; },
                   {transposed(3, 2), input({3, 2}, true, 6)});
}

TEST_F(ShapeGradcheckTest, CopyingShapeOps) {
  Tensor x = input({2, 3});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].repeat({2, 1, 3})};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].repeat({2, 2})};
      },
      {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {tile(in[0], {2})}; },
                   {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {tile(in[0], {2, 1, 2})};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {in[0].flip({0, -1})};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        return {roll(in[0], {1, -2}, {0, 1})};
      },
      {x});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {roll(in[0], {4})}; },
                   {x});
  Tensor sq = transposed(3, 3);
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].tril(-1)}; }, {sq});
  expect_gradcheck([](const variable_list& in) -> variable_list { return {in[0].triu(1)}; }, {sq});
}

TEST_F(ShapeGradcheckTest, InPlaceShapeOps) {
  Tensor x = input({2, 1, 3});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        transpose_(y, 0, -1);
        return {y};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        squeeze_(y, 1);
        unsqueeze_(y, -1);
        return {y};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        squeeze_(y);
        t_(y);
        return {y};
      },
      {x});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        tril_(y);
        return {y};
      },
      {transposed(3, 3)});
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        triu_(y, -1);
        return {y};
      },
      {input({3, 4})});
}

TEST_F(ShapeGradcheckTest, InPlaceThroughAViewReachesTheBase) {
  Tensor x = make_tensor({1, 2, 3}, {3}, DType::Float64);
  x.set_requires_grad(true);
  Tensor y = x * 1.0;
  y.narrow(0, 0, 1).mul_(2.0);
  y.sum().backward();
  EXPECT_EQ(to_doubles(x.grad()), (Values{2, 1, 1}));

  // The same through gradcheck, with a step slice and a select, and reading the view after.
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        Tensor v = slice(y, -1, 0, {}, 2);
        v.mul_(in[1]);
        y.select(0, 1).add_(in[1].select(0, 0));
        return {y, v};
      },
      {input({2, 4}), input({2, 1}, false, 1)});
  // Through one output of split and one of unbind.
  expect_gradcheck(
      [](const variable_list& in) -> variable_list {
        Tensor y = in[0] * 1.0;
        y.split(2, 1)[1].mul_(3.0);
        y.unbind(0)[0].mul_(in[0].select(0, 1));
        return {y};
      },
      {input({2, 4})});
}

TEST_F(ShapeGradcheckTest, SecondDerivatives) {
  // The formulas are written with differentiable ops, so create_graph works through them.
  auto check2 = [](const std::function<variable_list(const variable_list&)>& fn,
                   const variable_list& inputs) {
    try {
      autograd::gradgradcheck(fn, inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  };
  Tensor x = input({2, 3});
  check2(
      [](const variable_list& in) -> variable_list {
        return {in[0].view({3, 2}).permute({1, 0}) * in[0]};
      },
      {x});
  check2(
      [](const variable_list& in) -> variable_list {
        return {in[0].unsqueeze(0).expand({2, 2, 3}) * in[0]};
      },
      {x});
  check2(
      [](const variable_list& in) -> variable_list {
        return {in[0].narrow(-1, 1, 2) * in[0].select(1, 0).unsqueeze(1)};
      },
      {x});
  check2(
      [](const variable_list& in) -> variable_list {
        auto parts = in[0].split(1, -1);
        return {cat({parts[2], parts[0], parts[1]}, 1) * stack({in[0], in[0]}, 0).sum({0})};
      },
      {x});
  check2(
      [](const variable_list& in) -> variable_list {
        return {in[0].repeat({1, 2}).flip({-1}) * roll(in[0], {1}, {1}).repeat({1, 2}).tril()};
      },
      {x});
}

}  // namespace
}  // namespace loom
