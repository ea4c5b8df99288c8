// The C++ user API over the packs: Tensor methods (`x.matmul(w).relu()`), operators, and
// PyTorch-style indexing (`x.index({Slice(0, 2), 1})`, Note [Index translation]), checked
// against values worked out by hand or by a float64 loop here.
#include <gtest/gtest.h>

#include <vector>

#include "loom/loom.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;
using testing::contains;
using testing::expect_close;
using testing::make_tensor;
using testing::message_of;
using testing::to_doubles;
using Values = std::vector<double>;

class TensorApiTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
  /// [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] as float32.
  static Tensor x34() { return make_tensor({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}); }
};

TEST_F(TensorApiTest, MethodsChainLikePyTorch) {
  const Tensor x = make_tensor({1, -2, 3, -4}, {2, 2});
  const Tensor w = make_tensor({1, 0, 0, -1}, {2, 2});
  // x @ w = [[1, 2], [3, 4]] then relu, sum.
  expect_close(x.matmul(w).relu(), {2, 2}, {1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(x.matmul(w).relu().sum().item<double>(), 10);
  expect_close(x.abs().sqrt().pow(2.0), {2, 2}, {1, 2, 3, 4});
  expect_close(x.t().contiguous().view({4}), {4}, {1, 3, -2, -4});
  expect_close(x.reshape({4}).unsqueeze(0).squeeze(0), {4}, {1, -2, 3, -4});
  expect_close(x.mean({1}, /*keepdim=*/true), {2, 1}, {-0.5, -0.5});
  const auto [values, indices] = x.max(1);
  expect_close(values, {2}, {1, 3});
  expect_close(indices, {2}, {0, 0});
  expect_close(x.softmax(1).sum({1}), {2}, {1, 1});
  EXPECT_EQ(x.to(DType::Float64).dtype(), DType::Float64);
}

TEST_F(TensorApiTest, InPlaceMethodsReturnSelfAndBumpTheVersion) {
  Tensor x = make_tensor({1, 2, 3}, {3});
  const uint32_t v0 = x.version();
  const Tensor& r = x.add_(1).mul_(2);
  EXPECT_TRUE(r.is_same(x));
  expect_close(x, {3}, {4, 6, 8});
  EXPECT_GT(x.version(), v0);
  x.zero_();
  expect_close(x, {3}, {0, 0, 0});
}

TEST_F(TensorApiTest, OperatorsPromoteAndBroadcast) {
  const Tensor a = make_tensor({1, 2, 3}, {3});
  const Tensor b = make_tensor({10, 20}, {2, 1});
  expect_close(a + b * 2, {2, 3}, {21, 22, 23, 41, 42, 43});
  expect_close(1 - a, {3}, {0, -1, -2});
  expect_close(-a / 2, {3}, {-0.5, -1, -1.5});
  const Tensor mask = a > 1;
  EXPECT_EQ(mask.dtype(), DType::Bool);
  expect_close(mask, {3}, {0, 1, 1});
}

TEST_F(TensorApiTest, DetachSharesStorageWithoutHistory) {
  const Tensor x = make_tensor({1, 2}, {2});
  const Tensor d = x.detach();
  EXPECT_TRUE(d.is_alias_of(x));
  EXPECT_FALSE(d.is_same(x));
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(x.to(kCPU).is_same(x));
}

TEST_F(TensorApiTest, BasicIndexingGivesViews) {
  const Tensor x = x34();
  // x[1] -> row 1.
  expect_close(x.index({1}), {4}, {4, 5, 6, 7});
  // x[:, 2] -> column 2.
  expect_close(x.index({Slice(), 2}), {3}, {2, 6, 10});
  // x[0:3:2, 1:] -> rows 0 and 2, columns 1..3; a view of x.
  const Tensor v = x.index({Slice(0, 3, 2), Slice(1)});
  expect_close(v, {2, 3}, {1, 2, 3, 9, 10, 11});
  EXPECT_TRUE(v.is_alias_of(x));
  // x[-1, -1], x[None, ..., 0], x[..., None].
  EXPECT_DOUBLE_EQ(x.index({-1, -1}).item<double>(), 11);
  expect_close(x.index({None, Ellipsis, 0}), {1, 3}, {0, 4, 8});
  EXPECT_EQ(sizes_str(x.index({Ellipsis, None}).sizes()), "[3, 4, 1]");
  // x[True] adds a dim of 1, x[False] one of 0.
  EXPECT_EQ(sizes_str(x.index({true}).sizes()), "[1, 3, 4]");
  EXPECT_EQ(sizes_str(x.index({false}).sizes()), "[0, 3, 4]");
}

TEST_F(TensorApiTest, AdvancedIndexingByTensorsAndMasks) {
  const Tensor x = x34();
  // x[[2, 0]] -> rows 2 and 0 (a copy).
  const Tensor rows = Tensor::from_vector<int64_t>({2, 0}, {2});
  const Tensor r = x.index({rows});
  expect_close(r, {2, 4}, {8, 9, 10, 11, 0, 1, 2, 3});
  EXPECT_FALSE(r.is_alias_of(x));
  // x[1:, [3, 1]] -> a slice then a tensor index.
  const Tensor cols = Tensor::from_vector<int64_t>({3, 1}, {2});
  expect_close(x.index({Slice(1), cols}), {2, 2}, {7, 5, 11, 9});
  // x[x > 6] -> the elements above 6, in order.
  expect_close(x.index({x > 6}), {5}, {7, 8, 9, 10, 11});
  // x[[0, 2], [1, 3]] -> pairs (0, 1) and (2, 3).
  const Tensor i0 = Tensor::from_vector<int64_t>({0, 2}, {2});
  const Tensor i1 = Tensor::from_vector<int64_t>({1, 3}, {2});
  expect_close(x.index({i0, i1}), {2}, {1, 11});
}

TEST_F(TensorApiTest, IndexPutWritesThroughViewsAndMasks) {
  Tensor x = x34();
  x.index_put_({Slice(), 0}, 100.0);                         // x[:, 0] = 100
  x.index_put_({x > 9}, -1.0);                               // x[x > 9] = -1
  x.index_put_({0, Slice(1, 3)}, make_tensor({7, 8}, {2}));  // x[0, 1:3] = [7, 8]
  expect_close(x, {3, 4}, {-1, 7, 8, 3, -1, 5, 6, 7, -1, 9, -1, -1});
}

TEST_F(TensorApiTest, IndexErrorsReadLikePyTorch) {
  const Tensor x = x34();
  EXPECT_TRUE(contains(message_of([&] {
                         x.index({0, 0, 0});
                       }),
                       "too many indices for tensor of dimension 2"));
  EXPECT_TRUE(contains(message_of([&] {
                         x.index({Ellipsis, Ellipsis});
                       }),
                       "an index can only have a single ellipsis"));
  EXPECT_TRUE(contains(message_of([&] { x.index({5}); }), "out of range"));
}

TEST_F(TensorApiTest, PrintsLikePyTorch) {
  EXPECT_EQ(make_tensor({1, 2, 3, 4}, {2, 2}).str(), "tensor([[1., 2.],\n        [3., 4.]])");
}

}  // namespace
}  // namespace loom
