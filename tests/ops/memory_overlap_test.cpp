// Overlapping memory in in-place, out= and copy_ calls (Note [Memory overlap] in
// loom/core/memory_overlap.h) through the ops: PyTorch's errors for partial overlap, correct
// values for full overlap (the same tensor in and out) and for interleaved views, which the
// elementwise engine reads from a copy.
#include <gtest/gtest.h>

#include <vector>

#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::make_tensor;
using testing::message_of;
using testing::to_doubles;
using D = std::vector<double>;

constexpr const char* kPartial =
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location";

class MemoryOverlapOpsTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
};

TEST_F(MemoryOverlapOpsTest, PartialOverlapRaises) {
  const Tensor x = make_tensor({0, 1, 2, 3}, {4});
  std::string msg = message_of([&] { x.narrow(0, 1, 3).copy_(x.narrow(0, 0, 3)); });
  EXPECT_TRUE(contains(msg, "copy_: ")) << msg;
  EXPECT_TRUE(contains(msg, kPartial)) << msg;
  msg = message_of([&] { x.narrow(0, 1, 3).mul_(x.narrow(0, 0, 3)); });
  EXPECT_TRUE(contains(msg, "mul_") && contains(msg, kPartial)) << msg;
  msg = message_of([&] { add_out(x.narrow(0, 0, 3), x.narrow(0, 1, 3), 1.0); });
  EXPECT_TRUE(contains(msg, "add") && contains(msg, kPartial)) << msg;
  // Nothing was written by the refused calls.
  EXPECT_EQ(to_doubles(x), (D{0, 1, 2, 3}));

  const Tensor m = make_tensor({0, 1, 2, 3}, {2, 2});
  msg = message_of([&] { m.copy_(m.t()); });
  EXPECT_TRUE(contains(msg, kPartial)) << msg;
  EXPECT_EQ(to_doubles(m), (D{0, 1, 2, 3}));
}

TEST_F(MemoryOverlapOpsTest, FullOverlapIsCorrect) {
  const Tensor x = make_tensor({1, 2, 3, 4}, {4});
  x.mul_(x);
  EXPECT_EQ(to_doubles(x), (D{1, 4, 9, 16}));
  mul_out(x, x, x);
  EXPECT_EQ(to_doubles(x), (D{1, 16, 81, 256}));
  x.copy_(x);
  const Tensor alias = x.as_strided_view(x.sizes(), x.strides(), x.storage_offset());
  x.add_(alias);  // another TensorImpl over the same elements
  EXPECT_EQ(to_doubles(x), (D{2, 32, 162, 512}));
  // A dtype-converting in-place op on itself.
  const Tensor i = make_tensor({1, 2, 3}, {3}, DType::Int32);
  i.add_(i, 2);
  EXPECT_EQ(to_doubles(i), (D{3, 6, 9}));
}

TEST_F(MemoryOverlapOpsTest, InterleavedViewsReadFromACopy) {
  // Columns of one matrix: strided views whose ranges intersect without sharing elements,
  // and a shifted strided view that does share them. Both give the values of reading the
  // input first.
  const Tensor m = make_tensor({0, 1, 2, 3, 4, 5}, {3, 2});
  m.select(1, 0).add_(m.select(1, 1));
  EXPECT_EQ(to_doubles(m), (D{1, 1, 5, 3, 9, 5}));
  const Tensor w = make_tensor({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4});
  // w[:, 1:] = w[:, :-1] (non-dense on both sides, elements shared).
  w.narrow(1, 1, 3).copy_(w.narrow(1, 0, 3));
  EXPECT_EQ(to_doubles(w), (D{0, 0, 1, 2, 4, 4, 5, 6}));
  // An expanded input of the output's own row.
  const Tensor e = make_tensor({1, 2, 3, 4}, {2, 2});
  e.add_(e.select(0, 0).unsqueeze(0).expand({2, 2}));
  EXPECT_EQ(to_doubles(e), (D{2, 4, 4, 6}));
}

TEST_F(MemoryOverlapOpsTest, WrittenTensorMustNotOverlapItself) {
  const Tensor x = make_tensor({1, 2, 3}, {3});
  const Tensor ex = x.expand({2, 3});
  std::string msg = message_of([&] { ex.add_(make_tensor({1, 1, 1, 1, 1, 1}, {2, 3})); });
  EXPECT_TRUE(contains(msg, "more than one element of the written-to tensor")) << msg;
  msg = message_of([&] { ex.copy_(make_tensor({1, 1, 1, 1, 1, 1}, {2, 3})); });
  EXPECT_TRUE(contains(msg, "more than one element of the written-to tensor")) << msg;
  msg = message_of([&] {
    mm_out(ex.narrow(1, 0, 2), make_tensor({1, 2, 3, 4}, {2, 2}),
           make_tensor({1, 0, 0, 1}, {2, 2}));
  });
  EXPECT_TRUE(contains(msg, "more than one element of the written-to tensor")) << msg;
  msg = message_of([&] {
    index_add_(ex, 1, make_tensor({0}, {1}, DType::Int64), make_tensor({1, 1}, {2, 1}));
  });
  EXPECT_TRUE(contains(msg, "index_add_") && contains(msg, "more than one element")) << msg;
  EXPECT_EQ(to_doubles(x), (D{1, 2, 3}));
  // fill_ writes one value: allowed, as in PyTorch.
  ex.fill_(7);
  EXPECT_EQ(to_doubles(x), (D{7, 7, 7}));
}

}  // namespace
}  // namespace loom
