// Tests of the view and shape ops (ops/core/cpu/shape_views.cpp, shape_copies.cpp): sizes,
// strides and values as PyTorch gives them, storage and version sharing of views,
// non-contiguous, zero-size and 0-d inputs, negative dims and PyTorch's error messages.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "loom/ops/core.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::expect_close;
using testing::make_tensor;
using testing::message_of;
using testing::to_doubles;
using V = std::vector<int64_t>;

class ShapeTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
};

std::vector<double> iota(int64_t n, double from = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

V vec(IntArrayRef a) { return V(a.begin(), a.end()); }

// 0..n-1 as float32 with the given sizes, contiguous or strided.
Tensor arange_t(IntArrayRef sizes, bool strided = false, DType t = DType::Float32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return make_tensor(iota(n), sizes, t, strided);
}

// A view shares storage and version counter with its base.
void expect_view_of(const Tensor& view, const Tensor& base) {
  EXPECT_TRUE(view.is_alias_of(base));
  const uint32_t v = base.version();
  view.bump_version();
  EXPECT_EQ(base.version(), v + 1);
}

TEST_F(ShapeTest, ViewSharesStorageAndVersion) {
  Tensor x = arange_t({2, 3});
  Tensor v = view(x, {3, -1});
  EXPECT_EQ(vec(v.sizes()), (V{3, 2}));
  EXPECT_EQ(vec(v.strides()), (V{2, 1}));
  expect_view_of(v, x);
  static_cast<float*>(v.data_ptr())[5] = 42;
  EXPECT_EQ(to_doubles(x)[5], 42);
}

TEST_F(ShapeTest, ViewErrors) {
  Tensor x = arange_t({2, 3});
  EXPECT_EQ(message_of([&] {
              view(x, {2, 5});
            }),
            "view: shape '[2, 5]' is invalid for input of size 6");
  EXPECT_TRUE(contains(message_of([&] { view(x, {-1, -1}); }), "only one dimension"));
  EXPECT_TRUE(contains(message_of([&] { view(transpose(x, 0, 1), {6}); }),
                       "view size is not compatible with input tensor's size and stride"));
}

TEST_F(ShapeTest, ViewOfNonContiguousWhenStridesAllow) {
  // [2, 3] with last stride 2: splitting the last dim keeps a view (PyTorch: strides [6, 2]).
  Tensor x = arange_t({2, 3}, true);
  Tensor v = view(x, {2, 3, 1});
  EXPECT_EQ(vec(v.strides()), (V{6, 2, 2}));
  Tensor w = view(x, {1, 2, 3});
  EXPECT_EQ(vec(w.strides()), (V{12, 6, 2}));
}

TEST_F(ShapeTest, ReshapeViewOrCopy) {
  Tensor x = arange_t({2, 3});
  Tensor r = reshape(x, {6});
  EXPECT_TRUE(r.is_alias_of(x));
  Tensor tt = transpose(x, 0, 1);
  Tensor c = reshape(tt, {6});
  EXPECT_FALSE(c.is_alias_of(x));
  expect_close(c, {6}, {0, 3, 1, 4, 2, 5});
  EXPECT_EQ(vec(c.strides()), (V{1}));
  Tensor s = reshape(arange_t({2, 3}, true), {3, 2});
  expect_close(s, {3, 2}, iota(6));
  // 0-d and zero-size.
  Tensor z = reshape(make_tensor({7}, {}), {1, 1});
  expect_close(z, {1, 1}, {7});
  Tensor e = reshape(make_tensor({}, {0, 3}), {3, 0, 5});
  EXPECT_EQ(vec(e.sizes()), (V{3, 0, 5}));
  EXPECT_EQ(vec(e.strides()), (V{5, 5, 1}));
  EXPECT_TRUE(contains(message_of([&] {
                         reshape(make_tensor({}, {0, 3}), {0, -1});
                       }),
                       "cannot reshape tensor of 0 elements"));
}

TEST_F(ShapeTest, FlattenUnflatten) {
  Tensor x = arange_t({2, 3, 4});
  Tensor f = flatten(x);
  EXPECT_EQ(vec(f.sizes()), (V{24}));
  EXPECT_TRUE(f.is_alias_of(x));
  Tensor g = flatten(x, 1);
  EXPECT_EQ(vec(g.sizes()), (V{2, 12}));
  Tensor h = flatten(x, -3, -2);
  EXPECT_EQ(vec(h.sizes()), (V{6, 4}));
  EXPECT_EQ(vec(flatten(make_tensor({3}, {})).sizes()), (V{1}));
  Tensor p = flatten(permute(x, {2, 0, 1}), 1);  // needs a copy
  expect_close(p, {4, 6}, {0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                           2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23});
  EXPECT_TRUE(contains(message_of([&] { flatten(x, 2, 1); }), "start_dim cannot come after"));
  EXPECT_EQ(message_of<IndexError>([&] { flatten(x, 3); }),
            "flatten: Dimension out of range (expected to be in range of [-3, 2], but got 3)");

  Tensor u = unflatten(arange_t({2, 6}), -1, {3, -1});
  EXPECT_EQ(vec(u.sizes()), (V{2, 3, 2}));
  EXPECT_EQ(vec(u.strides()), (V{6, 2, 1}));
  EXPECT_TRUE(contains(message_of([&] {
                         unflatten(arange_t({2, 6}), 1, {4, 2});
                       }),
                       "don't multiply up to the size of dim 1 (6)"));
}

TEST_F(ShapeTest, SqueezeUnsqueeze) {
  Tensor x = arange_t({1, 3, 1, 2});
  Tensor s = squeeze(x);
  EXPECT_EQ(vec(s.sizes()), (V{3, 2}));
  EXPECT_EQ(vec(s.strides()), (V{2, 1}));
  expect_view_of(s, x);
  EXPECT_EQ(vec(squeeze(x, -2).sizes()), (V{1, 3, 2}));
  EXPECT_EQ(vec(squeeze(x, 1).sizes()), (V{1, 3, 1, 2}));  // size 3: unchanged
  EXPECT_EQ(vec(squeeze(x, IntArrayRef{0, 2}).sizes()), (V{3, 2}));
  EXPECT_EQ(vec(squeeze(make_tensor({5}, {}), 0).sizes()), (V{}));
  EXPECT_EQ(message_of<IndexError>([&] { squeeze(x, 4); }),
            "squeeze: Dimension out of range (expected to be in range of [-4, 3], but got 4)");

  Tensor y = arange_t({2, 3}, true);  // strides [6, 2]
  EXPECT_EQ(vec(unsqueeze(y, 0).strides()), (V{12, 6, 2}));
  EXPECT_EQ(vec(unsqueeze(y, 1).strides()), (V{6, 6, 2}));
  EXPECT_EQ(vec(unsqueeze(y, -1).sizes()), (V{2, 3, 1}));
  EXPECT_EQ(vec(unsqueeze(y, -1).strides()), (V{6, 2, 1}));
  EXPECT_EQ(vec(unsqueeze(make_tensor({5}, {}), 0).sizes()), (V{1}));
  EXPECT_EQ(message_of<IndexError>([&] { unsqueeze(y, 3); }),
            "unsqueeze: Dimension out of range (expected to be in range of [-3, 2], but got 3)");
}

TEST_F(ShapeTest, TransposePermuteT) {
  Tensor x = arange_t({2, 3, 4});
  Tensor tr = transpose(x, 0, -1);
  EXPECT_EQ(vec(tr.sizes()), (V{4, 3, 2}));
  EXPECT_EQ(vec(tr.strides()), (V{1, 4, 12}));
  expect_view_of(tr, x);
  Tensor p = permute(x, {1, -1, 0});
  EXPECT_EQ(vec(p.sizes()), (V{3, 4, 2}));
  EXPECT_EQ(vec(p.strides()), (V{4, 1, 12}));
  EXPECT_EQ(to_doubles(p)[1], 12);  // p[0, 0, 1] = x[1, 0, 0]
  EXPECT_EQ(to_doubles(p)[2], 1);   // p[0, 1, 0] = x[0, 0, 1]
  EXPECT_EQ(message_of([&] { permute(x, {0, 0, 1}); }), "permute: duplicate dims are not allowed.");
  // PyTorch's dense permute says "permute(sparse_coo)"; the op is named as it is.
  EXPECT_EQ(message_of([&] {
              permute(x, {0, 1});
            }),
            "permute: number of dimensions in the tensor input does not match the length of the "
            "desired ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 2");
  EXPECT_EQ(message_of<IndexError>([&] {
              permute(x, {0, 1, 3});
            }),
            "permute: Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  EXPECT_EQ(message_of<IndexError>([&] { transpose(x, 0, 3); }),
            "transpose: Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  Tensor m = arange_t({2, 3});
  expect_close(t(m), {3, 2}, {0, 3, 1, 4, 2, 5});
  EXPECT_EQ(vec(t(arange_t({3})).sizes()), (V{3}));
  EXPECT_EQ(vec(t(make_tensor({1}, {})).sizes()), (V{}));
  EXPECT_EQ(message_of([&] { t(x); }), "t() expects a tensor with <= 2 dimensions, but self is 3D");
  EXPECT_EQ(vec(transpose(make_tensor({1}, {}), 0, -1).sizes()), (V{}));
}

TEST_F(ShapeTest, Expand) {
  Tensor x = arange_t({3, 1});
  Tensor e = expand(x, {2, 3, 4});
  EXPECT_EQ(vec(e.sizes()), (V{2, 3, 4}));
  EXPECT_EQ(vec(e.strides()), (V{0, 1, 0}));
  expect_view_of(e, x);
  EXPECT_EQ(vec(expand(x, {-1, 5}).sizes()), (V{3, 5}));
  expect_close(expand_as(arange_t({3}), arange_t({2, 3})), {2, 3}, {0, 1, 2, 0, 1, 2});
  EXPECT_EQ(vec(expand(make_tensor({4}, {}), {2, 2}).strides()), (V{0, 0}));
  EXPECT_EQ(message_of([&] {
              expand(x, {3, 2}).sizes();
              expand(arange_t({3}), {2, 4});
            }),
            "expand: The expanded size of the tensor (4) must match the existing size (3) at "
            "non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]");
  EXPECT_TRUE(contains(message_of([&] { expand(x, {3}); }),
                       "the number of sizes provided (1) must be greater or equal to the number "
                       "of dimensions in the tensor (2)"));
  EXPECT_TRUE(contains(message_of([&] {
                         expand(x, {-1, 3, 1});
                       }),
                       "isn't allowed in a leading, non-existing dimension 0"));
  EXPECT_EQ(vec(expand(make_tensor({}, {0, 1}), {0, 4}).sizes()), (V{0, 4}));
}

TEST_F(ShapeTest, NarrowSliceSelect) {
  Tensor x = arange_t({4, 5}, true);  // strides [10, 2]
  Tensor n = narrow(x, 1, -3, 2);
  EXPECT_EQ(vec(n.sizes()), (V{4, 2}));
  EXPECT_EQ(vec(n.strides()), (V{10, 2}));
  EXPECT_EQ(n.storage_offset(), 4);
  EXPECT_EQ(to_doubles(n)[0], 2);
  expect_view_of(n, x);
  EXPECT_EQ(message_of([&] { narrow(x, 0, 3, 2); }),
            "narrow: start (3) + length (2) exceeds dimension size (4).");
  EXPECT_EQ(message_of<IndexError>([&] { narrow(x, 0, 5, 0); }),
            "narrow: start out of range (expected to be in range of [-4, 4], but got 5)");

  Tensor s = slice(x, 1, 1, std::nullopt, 2);
  expect_close(s, {4, 2}, {1, 3, 6, 8, 11, 13, 16, 18});
  EXPECT_EQ(vec(s.strides()), (V{10, 4}));
  EXPECT_EQ(vec(slice(x, 0, -100, 100).sizes()), (V{4, 5}));
  EXPECT_EQ(vec(slice(x, 0, 3, 1).sizes()), (V{0, 5}));
  expect_close(slice(x, -1, -2), {4, 2}, {3, 4, 8, 9, 13, 14, 18, 19});
  EXPECT_EQ(message_of([&] { slice(x, 0, 0, 4, 0); }), "slice: slice step must be positive");
  EXPECT_TRUE(contains(message_of([&] { slice(make_tensor({1}, {})); }), "0-dim"));

  Tensor r = select(x, 0, -1);
  expect_close(r, {5}, {15, 16, 17, 18, 19});
  EXPECT_EQ(vec(r.strides()), (V{2}));
  expect_view_of(r, x);
  Tensor c = select(x, 1, 2);
  expect_close(c, {4}, {2, 7, 12, 17});
  EXPECT_EQ(message_of<IndexError>([&] { select(x, 0, 4); }),
            "select(): index 4 out of range for tensor of size [4, 5] at dimension 0");
  EXPECT_TRUE(contains(message_of<IndexError>([&] { select(make_tensor({1}, {}), 0, 0); }),
                       "select() cannot be applied to a 0-dim tensor."));
  EXPECT_EQ(select(arange_t({3}), 0, 1).dim(), 0);
}

TEST_F(ShapeTest, AsStrided) {
  Tensor x = arange_t({9});
  Tensor a = as_strided(x, {2, 2}, {3, 1}, 1);
  expect_close(a, {2, 2}, {1, 2, 4, 5});
  expect_view_of(a, x);
  Tensor b = as_strided(slice(x, 0, 2), {3}, {2});  // default offset: self's
  expect_close(b, {3}, {2, 4, 6});
  EXPECT_TRUE(contains(message_of([&] { as_strided(x, {2}, {-1}); }), "Negative strides"));
  EXPECT_EQ(message_of([&] {
              as_strided(x, {2, 2}, {1});
            }),
            "as_strided: mismatch in length of strides and shape");
}

TEST_F(ShapeTest, SplitChunkUnbind) {
  Tensor x = arange_t({5, 2});
  auto parts = split(x, 2);
  ASSERT_EQ(parts.size(), 3u);
  expect_close(parts[2], {1, 2}, {8, 9});
  EXPECT_EQ(parts[1].storage_offset(), 4);
  expect_view_of(parts[0], x);
  auto cols = split(x, 1, -1);
  ASSERT_EQ(cols.size(), 2u);
  expect_close(cols[1], {5, 1}, {1, 3, 5, 7, 9});
  auto ws = split_with_sizes(x, {1, 4});
  EXPECT_EQ(vec(ws[1].sizes()), (V{4, 2}));
  EXPECT_EQ(message_of([&] {
              split_with_sizes(x, {1, 2});
            }),
            "split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at "
            "dimension 0), but got split_sizes=[1, 2]");
  EXPECT_EQ(message_of([&] { split(x, 0); }),
            "split: split_size can only be 0 if dimension size is 0, but got dimension size of 5");
  EXPECT_EQ(split(make_tensor({}, {0, 2}), 0).size(), 1u);

  auto ch = chunk(x, 3);
  ASSERT_EQ(ch.size(), 3u);  // sizes 2, 2, 1
  EXPECT_EQ(ch[2].size(0), 1);
  EXPECT_EQ(chunk(arange_t({6}), 4).size(), 3u);  // PyTorch: split size 2 -> 3 chunks
  EXPECT_EQ(chunk(make_tensor({}, {0}), 3).size(), 3u);
  EXPECT_TRUE(contains(message_of([&] { chunk(x, 0); }), "greater than 0, got: 0"));

  auto rows = unbind(arange_t({2, 3}, true), 1);
  ASSERT_EQ(rows.size(), 3u);
  expect_close(rows[2], {2}, {2, 5});
  EXPECT_TRUE(
      contains(message_of<IndexError>([&] { unbind(make_tensor({1}, {})); }), "no dimensions"));
}

TEST_F(ShapeTest, Cat) {
  Tensor a = arange_t({2, 2});
  Tensor b = arange_t({2, 3}, true);
  Tensor c = cat({a, b}, -1);
  expect_close(c, {2, 5}, {0, 1, 0, 1, 2, 2, 3, 3, 4, 5});
  EXPECT_FALSE(c.is_alias_of(a));
  expect_close(cat({a, a}), {4, 2}, {0, 1, 2, 3, 0, 1, 2, 3});
  // Legacy 1-D empty tensors are skipped; zero-size along dim joins.
  expect_close(cat({make_tensor({}, {0}), a, make_tensor({}, {0, 2})}), {2, 2}, {0, 1, 2, 3});
  Tensor i = cat({arange_t({2}, false, DType::Int64), arange_t({1}, true, DType::Int64)});
  EXPECT_EQ(i.dtype(), DType::Int64);
  expect_close(i, {3}, {0, 1, 0});
  // Mixed dtypes promote (float32 + int64 -> float32), as in PyTorch.
  Tensor p = cat({a, make_tensor({7, 8}, {1, 2}, DType::Int64, true)});
  EXPECT_EQ(p.dtype(), DType::Float32);
  expect_close(p, {3, 2}, {0, 1, 2, 3, 7, 8});
  EXPECT_EQ(
      message_of([&] {
        cat({a, b});
      }),
      "cat: Sizes of tensors must match except in dimension 0. Expected size 2 but got size 3 "
      "for tensor number 1 in the list.");
  EXPECT_EQ(message_of([&] {
              cat({a, arange_t({2})});
            }),
            "cat: Tensors must have same number of dimensions: got 2 and 1");
  EXPECT_EQ(message_of([&] { cat({make_tensor({1}, {})}); }),
            "cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  EXPECT_EQ(message_of([&] { cat(TensorList{}); }),
            "torch.cat(): expected a non-empty list of Tensors");
  EXPECT_EQ(message_of<IndexError>([&] {
              cat({a, a}, 2);
            }),
            "cat: Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_F(ShapeTest, Stack) {
  Tensor a = arange_t({2, 3});
  Tensor b = arange_t({2, 3}, true);
  Tensor s0 = stack({a, b});
  EXPECT_EQ(vec(s0.sizes()), (V{2, 2, 3}));
  Tensor s = stack({a, b}, -1);
  EXPECT_EQ(vec(s.sizes()), (V{2, 3, 2}));
  expect_close(s, {2, 3, 2}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5});
  expect_close(stack({make_tensor({1}, {}), make_tensor({2}, {})}), {2}, {1, 2});
  Tensor mixed = stack(
      {make_tensor({1, 2}, {2}, DType::Int32), make_tensor({0.5, 3}, {2}, DType::Float64)}, 1);
  EXPECT_EQ(mixed.dtype(), DType::Float64);
  expect_close(mixed, {2, 2}, {1, 0.5, 2, 3});
  EXPECT_EQ(message_of([&] {
              stack({a, arange_t({3})});
            }),
            "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3] at "
            "entry 1");
  EXPECT_EQ(message_of<IndexError>([&] {
              stack({a, a}, 3);
            }),
            "stack: Dimension out of range (expected to be in range of [-3, 2], but got 3)");
}

TEST_F(ShapeTest, Repeat) {
  Tensor x = arange_t({2}, true);
  expect_close(repeat(x, {2, 2}), {2, 4}, {0, 1, 0, 1, 0, 1, 0, 1});
  Tensor m = arange_t({2, 2});
  expect_close(repeat(m, {1, 2, 1}), {1, 4, 2}, {0, 1, 2, 3, 0, 1, 2, 3});
  expect_close(repeat(m, {2, 1}), {4, 2}, {0, 1, 2, 3, 0, 1, 2, 3});
  expect_close(repeat(make_tensor({3}, {}), {2}), {2}, {3, 3});
  EXPECT_EQ(vec(repeat(m, {0, 2}).sizes()), (V{0, 4}));
  EXPECT_EQ(
      message_of([&] { repeat(m, {2}); }),
      "repeat: Number of dimensions of repeat dims can not be smaller than number of dimensions of "
      "tensor");
  // Note [Result sizes that overflow]: 2 * 2^62 wrapped to a negative size reported by empty.
  EXPECT_EQ(message_of([&] { repeat(x, {int64_t{1} << 62}); }),
            "repeat: the result size overflows int64 (2 * 4611686018427387904 at dimension 0)");
  EXPECT_EQ(message_of([&] {
              repeat(x, {int64_t{1} << 40, int64_t{1} << 30});
            }),
            "repeat: the result size overflows int64 (the number of elements of sizes "
            "[1099511627776, 2147483648])");
  EXPECT_EQ(message_of([&] { tile(x, {int64_t{1} << 62}); }),
            "repeat: the result size overflows int64 (2 * 4611686018427387904 at dimension 0)");
}

TEST_F(ShapeTest, Flip) {
  Tensor x = arange_t({2, 3}, true);
  expect_close(flip(x, {0}), {2, 3}, {3, 4, 5, 0, 1, 2});
  expect_close(flip(x, {-1}), {2, 3}, {2, 1, 0, 5, 4, 3});
  expect_close(flip(x, {0, 1}), {2, 3}, {5, 4, 3, 2, 1, 0});
  expect_close(flip(x, {}), {2, 3}, iota(6));
  expect_close(flip(make_tensor({4}, {}), {0}), {}, {4});
  EXPECT_EQ(flip(make_tensor({}, {0, 2}), {1}).numel(), 0);
  EXPECT_TRUE(contains(message_of([&] { flip(x, {0, -2}); }), "dims has duplicates"));
}

TEST_F(ShapeTest, Roll) {
  Tensor x = arange_t({2, 3}, true);
  expect_close(roll(x, {1}), {2, 3}, {5, 0, 1, 2, 3, 4});
  expect_close(roll(x, {-1}, {1}), {2, 3}, {1, 2, 0, 4, 5, 3});
  expect_close(roll(x, {1, 4}, {0, 1}), {2, 3}, {5, 3, 4, 2, 0, 1});
  expect_close(roll(x, {0}, {0}), {2, 3}, iota(6));
  EXPECT_EQ(roll(make_tensor({}, {0, 3}), {2}, {1}).numel(), 0);
  EXPECT_EQ(message_of([&] {
              roll(x, {1, 2}, {0});
            }),
            "roll: shifts and dimensions must align. shifts: 2, dims:1");
}

TEST_F(ShapeTest, TrilTriu) {
  Tensor x = make_tensor(iota(12, 1), {3, 4}, DType::Float32, true);
  expect_close(tril(x), {3, 4}, {1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  expect_close(triu(x), {3, 4}, {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  expect_close(tril(x, -1), {3, 4}, {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  expect_close(triu(x, 2), {3, 4}, {0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0});
  expect_close(triu(x, -5), {3, 4}, iota(12, 1));
  // Batched, integer dtype.
  Tensor b = make_tensor(iota(8, 1), {2, 2, 2}, DType::Int32);
  expect_close(tril(b), {2, 2, 2}, {1, 0, 3, 4, 5, 0, 7, 8});
  EXPECT_EQ(tril(b).dtype(), DType::Int32);
  EXPECT_EQ(tril(make_tensor({}, {0, 3})).numel(), 0);
  EXPECT_EQ(message_of([&] { tril(arange_t({3})); }),
            "tril: input tensor must have at least 2 dimensions");
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// A copy big enough to take copy_strided's parallel path, from a transposed input.
TEST_F(ShapeTest, LargeTransposedCopy) {
  const int64_t r = 640, c = 512;  // 1.25 MiB of float32
  Tensor x = make_tensor(iota(r * c), {r, c});
  Tensor y = reshape(transpose(x, 0, 1), {c * r});
  ASSERT_FALSE(y.is_alias_of(x));
  const float* p = y.data_ptr<float>();
  for (int64_t j = 0; j < c; j += 37) {
    for (int64_t i = 0; i < r; i += 13) {
      ASSERT_EQ(p[j * r + i], static_cast<float>(i * c + j)) << "at " << j << ", " << i;
    }
  }
  // Size-1 dims and contiguous neighbours collapse; the values are unchanged.
  Tensor z = cat({unsqueeze(x, 1), unsqueeze(x, 1)}, 1);
  EXPECT_EQ(vec(z.sizes()), (V{r, 2, c}));
  EXPECT_EQ(z.data_ptr<float>()[c + 5], 5);
  EXPECT_EQ(z.data_ptr<float>()[2 * c * (r - 1) + c + 7], static_cast<float>((r - 1) * c + 7));
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST_F(ShapeTest, AliasesAndComposites) {
  Tensor x = arange_t({2, 3, 4});
  Tensor m = movedim(x, 0, -1);
  EXPECT_EQ(vec(m.sizes()), (V{3, 4, 2}));
  EXPECT_EQ(vec(m.strides()), (V{4, 1, 12}));
  Tensor m2 = movedim(x, {0, 1}, {2, 0});  // PyTorch: sizes [3, 4, 2]
  EXPECT_EQ(vec(m2.sizes()), (V{3, 4, 2}));
  EXPECT_EQ(vec(m2.strides()), (V{4, 1, 12}));
  Tensor m3 = movedim(x, {2}, {0});
  EXPECT_EQ(vec(m3.sizes()), (V{4, 2, 3}));
  EXPECT_EQ(vec(swapaxes(x, 0, 2).strides()), (V{1, 4, 12}));
  EXPECT_EQ(vec(view_as(x, arange_t({6, 4})).sizes()), (V{6, 4}));
  EXPECT_TRUE(reshape_as(x, arange_t({24})).is_alias_of(x));
  auto parts = split(arange_t({5}), IntArrayRef{2, 3});
  ASSERT_EQ(parts.size(), 2u);
  expect_close(parts[1], {3}, {2, 3, 4});
  expect_close(tile(arange_t({2, 2}), {2}), {2, 4}, {0, 1, 0, 1, 2, 3, 2, 3});
  expect_close(tile(arange_t({2}), {2, 1}), {2, 2}, {0, 1, 0, 1});
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST_F(ShapeTest, InPlaceForms) {
  Tensor x = arange_t({2, 3}, true);  // strides [6, 2]
  Tensor base = x;
  Tensor r = unsqueeze_(x, 0);
  EXPECT_TRUE(r.is_same(x));
  EXPECT_EQ(vec(x.sizes()), (V{1, 2, 3}));
  EXPECT_EQ(vec(x.strides()), (V{12, 6, 2}));
  squeeze_(x);
  EXPECT_EQ(vec(x.sizes()), (V{2, 3}));
  transpose_(x, 0, 1);
  EXPECT_EQ(vec(x.strides()), (V{2, 6}));
  t_(x);
  EXPECT_EQ(vec(x.sizes()), (V{2, 3}));
  // tril_/triu_ write through a strided tensor and bump its version.
  Tensor m = make_tensor(std::vector<double>(9, 1), {3, 3}, DType::Float64, true);
  const uint32_t v = m.version();
  tril_(m, -1);
  EXPECT_EQ(m.version(), v + 1);
  expect_close(m, {3, 3}, {0, 0, 0, 1, 0, 0, 1, 1, 0});
  Tensor b = make_tensor(std::vector<double>(8, 1), {2, 2, 2}, DType::Int64);
  triu_(transpose(b, 0, 2));  // zeroes y[i, 1, 0] = b[0, 1, i]
  expect_close(b, {2, 2, 2}, {1, 1, 0, 0, 1, 1, 1, 1});
}

}  // namespace
}  // namespace loom
