// Tests of core/src/memory_overlap.cpp: how two views of one storage share memory (Note
// [Memory overlap]), on views made with as_strided_view only (no op pack needed).
#include "loom/core/memory_overlap.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::message_of;

Tensor base(int64_t n) { return Tensor::empty({n}, TensorOptions{}.with(DType::Float32)); }

TEST(MemoryOverlapTest, DenseViewsClassified) {
  const Tensor x = base(16);
  const Tensor m = x.as_strided_view({4, 4}, {4, 1}, 0);
  const Tensor mt = x.as_strided_view({4, 4}, {1, 4}, 0);  // m.t()
  EXPECT_TRUE(is_non_overlapping_and_dense(mt));
  EXPECT_EQ(get_overlap_status(m, m), MemOverlapStatus::Full);
  EXPECT_EQ(get_overlap_status(m, x.as_strided_view({4, 4}, {4, 1}, 0)), MemOverlapStatus::Full);
  EXPECT_EQ(get_overlap_status(m, mt), MemOverlapStatus::Partial);  // x.copy_(x.t())
  // x[1:4] and x[0:3]
  EXPECT_EQ(get_overlap_status(x.as_strided_view({3}, {1}, 1), x.as_strided_view({3}, {1}, 0)),
            MemOverlapStatus::Partial);
  // Adjacent halves share no byte.
  EXPECT_EQ(get_overlap_status(x.as_strided_view({8}, {1}, 0), x.as_strided_view({8}, {1}, 8)),
            MemOverlapStatus::No);
  EXPECT_EQ(get_overlap_status(m, base(16)), MemOverlapStatus::No);
  EXPECT_EQ(get_overlap_status(m, x.as_strided_view({0}, {1}, 0)), MemOverlapStatus::No);
}

TEST(MemoryOverlapTest, InterleavedViewsAreUndecided) {
  const Tensor x = base(16);
  const Tensor col0 = x.as_strided_view({4}, {4}, 0), col1 = x.as_strided_view({4}, {4}, 1);
  EXPECT_FALSE(is_non_overlapping_and_dense(col0));
  EXPECT_EQ(get_overlap_status(col0, col1), MemOverlapStatus::TooHard);
  // The elementwise engines read such an input from a copy; others let it pass.
  EXPECT_TRUE(check_input_overlap("op", col0, "other", col1, /*allow_full=*/true));
  EXPECT_FALSE(check_input_overlap("op", col0, "other", base(4), /*allow_full=*/true));
  // Ranges that do not intersect are decided even for strided views.
  EXPECT_EQ(get_overlap_status(x.as_strided_view({2}, {2}, 0), x.as_strided_view({2}, {2}, 8)),
            MemOverlapStatus::No);
}

TEST(MemoryOverlapTest, InternalOverlap) {
  const Tensor x = base(4);
  EXPECT_EQ(has_internal_overlap(x), MemOverlap::No);
  EXPECT_EQ(has_internal_overlap(x.as_strided_view({3, 4}, {0, 1}, 0)), MemOverlap::Yes);
  EXPECT_EQ(has_internal_overlap(x.as_strided_view({2, 2}, {1, 1}, 0)), MemOverlap::TooHard);
  EXPECT_EQ(has_internal_overlap(x.as_strided_view({1, 4}, {0, 1}, 0)), MemOverlap::No);
  const std::string msg = message_of<ValueError>([&] {
    assert_no_internal_overlap("add_.Tensor", x.as_strided_view({3, 4}, {0, 1}, 0));
  });
  EXPECT_TRUE(contains(msg,
                       "add_.Tensor: unsupported operation: more than one element of the "
                       "written-to tensor refers to a single memory location"))
      << msg;
}

TEST(MemoryOverlapTest, MessagesNameOpAndTensors) {
  const Tensor x = base(4);
  const Tensor a = x.as_strided_view({3}, {1}, 1), b = x.as_strided_view({3}, {1}, 0);
  const std::string msg =
      message_of<ValueError>([&] { assert_no_partial_overlap("mul_.Tensor", a, "other", b); });
  EXPECT_TRUE(contains(msg,
                       "mul_.Tensor: unsupported operation: some elements of the input "
                       "tensor and the written-to tensor refer to a single memory location"))
      << msg;
  EXPECT_TRUE(contains(msg, "other: [3] cpu float32, storage offset 0")) << msg;
  EXPECT_TRUE(contains(msg, "storage offset 1")) << msg;
  // Full overlap: fine for elementwise ops, refused for the others.
  EXPECT_NO_THROW(assert_no_partial_overlap("mul_.Tensor", a, "other", a));
  EXPECT_THROW(assert_no_overlap("index_select.out", a, "self", a), ValueError);
}

}  // namespace
}  // namespace loom
