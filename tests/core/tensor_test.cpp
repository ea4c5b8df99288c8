// Tests for core/src/tensor.cpp, core/src/tensor_impl.cpp and core/src/storage.cpp: geometry,
// views, element access, printing, requires_grad and storage lifetime.

#include "loom/core/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "loom/core/half.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

std::vector<int64_t> vec(IntArrayRef r) { return {r.begin(), r.end()}; }

using ::loom::testing::message_of;

template <typename T>
Tensor arange(int64_t n, std::vector<int64_t> sizes, T start = 0) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<T>(start + i);
  return Tensor::from_vector<T>(v, sizes);
}

// ---------------------------------------------------------------- construction

TEST(TensorTest, EmptyIsContiguousWithRowMajorStrides) {
  Tensor t = Tensor::empty({2, 3, 4});
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.device(), kCPU);
  EXPECT_EQ(t.element_size(), 4u);
  EXPECT_EQ(t.storage_offset(), 0);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.storage().nbytes(), 96u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  EXPECT_FALSE(t.requires_grad());
  EXPECT_EQ(t.version(), 0u);
  EXPECT_TRUE(t.key_set().has(DispatchKey::CPU));
  EXPECT_FALSE(t.key_set().has(DispatchKey::Autograd));  // Note [Autograd key]
}

TEST(TensorTest, EmptyWithOptions) {
  Tensor t = Tensor::empty({5}, TensorOptions{}.with(DType::Int16));
  EXPECT_EQ(t.dtype(), DType::Int16);
  EXPECT_EQ(t.storage().nbytes(), 10u);
  Tensor g = Tensor::empty({2}, TensorOptions{.requires_grad = true});
  EXPECT_TRUE(g.requires_grad());
}

TEST(TensorTest, ContiguousStridesTreatZeroSizesAsOne) {
  EXPECT_EQ(vec(contiguous_strides(std::vector<int64_t>{2, 0, 3})),
            (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(vec(contiguous_strides(std::vector<int64_t>{})), (std::vector<int64_t>{}));
  EXPECT_EQ(vec(contiguous_strides(std::vector<int64_t>{7})), (std::vector<int64_t>{1}));
  EXPECT_EQ(vec(contiguous_strides(std::vector<int64_t>{4, 1, 5, 2})),
            (std::vector<int64_t>{10, 10, 2, 1}));
}

TEST(TensorTest, EmptyWithZeroElements) {
  Tensor t = Tensor::empty({2, 0, 3});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.storage().nbytes(), 0u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{3, 3, 1}));
}

TEST(TensorTest, DataPtrOfAnEmptyTensorIsNull) {
  // An empty storage has no memory; offsetting its null pointer would be undefined.
  Tensor e = Tensor::empty({0});
  EXPECT_EQ(e.data_ptr(), nullptr);
  Tensor v = e.as_strided_view({0, 4}, {4, 1}, 5);
  EXPECT_EQ(v.data_ptr(), nullptr);
  EXPECT_EQ(v.storage_offset(), 5);
  EXPECT_EQ(v.str(), "tensor([], size=(0, 4))");
}

TEST(TensorTest, EmptyRejectsNegativeAndOverflowingSizes) {
  EXPECT_THAT(message_of<ValueError>([] {
                Tensor::empty({2, -1});
              }),
              HasSubstr("empty: negative dimension -1 in sizes [2, -1]"));
  EXPECT_THAT(message_of<ValueError>([] {
                Tensor::empty({int64_t{1} << 40, int64_t{1} << 40});
              }),
              HasSubstr("overflow"));
  // The element count fits, but the byte count does not.
  for (int64_t n : {int64_t{1} << 62, int64_t{1} << 61, (int64_t{1} << 60) + 1}) {
    EXPECT_THAT(
        message_of<ValueError>([n] { Tensor::empty({n}, TensorOptions{}.with(DType::Float64)); }),
        HasSubstr("overflow"))
        << n;
  }
}

TEST(TensorTest, EmptyOnADeviceWithoutAllocatorThrowsDeviceError) {
  const Device bare(DeviceType::register_type("tensortest_bare"), 0);
  EXPECT_THAT(message_of<DeviceError>([&] { Tensor::empty({2}, TensorOptions{}.with(bare)); }),
              HasSubstr("no allocator is registered for device type 'tensortest_bare'"));
}

TEST(TensorTest, AnInvalidDTypeValueIsATypeError) {
  // A DType made from an integer indexed past the per-dtype tables (bad_alloc, garbage).
  EXPECT_THAT(message_of<TypeError>([] { Tensor::empty({2}, TensorOptions{}.with(DType(42))); }),
              HasSubstr("empty: invalid dtype value 42"));
  EXPECT_THROW(Tensor::empty({2}, TensorOptions{}.with(static_cast<DType>(-3))), TypeError);
}

TEST(TensorTest, MetaTensorsHaveShapesButNoData) {
  const Tensor m = Tensor::empty({2, 3}, TensorOptions{}.with(Device("meta")));
  EXPECT_EQ(vec(m.sizes()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m.data_ptr(), nullptr);
}

TEST(TensorTest, FromVectorCopiesValues) {
  Tensor t = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, std::vector<int64_t>{2, 3});
  EXPECT_EQ(t.dtype(), DType::Int32);
  EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{2, 3}));
  const int32_t* p = t.data_ptr<int32_t>();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p[i], i + 1);
  EXPECT_THAT(message_of<ValueError>([] {
                Tensor::from_vector<float>({1, 2, 3}, std::vector<int64_t>{2, 2});
              }),
              HasSubstr("from_vector: 3 values do not fill sizes [2, 2] (4 elements)"));
}

TEST(TensorTest, ScalarIsZeroDim) {
  Tensor t = Tensor::scalar(2.5);
  EXPECT_EQ(t.dim(), 0);
  EXPECT_EQ(t.numel(), 1);
  EXPECT_TRUE(t.sizes().empty());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.dtype(), DType::Float64);
  EXPECT_EQ(t.item<double>(), 2.5);
  EXPECT_EQ(Tensor::scalar<int64_t>(-3).dtype(), DType::Int64);
  EXPECT_EQ(Tensor::scalar(true).dtype(), DType::Bool);
  EXPECT_EQ(Tensor::scalar<uint8_t>(200).item<int>(), 200);
}

// ---------------------------------------------------------------- dims

TEST(TensorTest, SizeAndStrideAcceptNegativeDims) {
  Tensor t = Tensor::empty({2, 3, 4});
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(2), 4);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.size(-3), 2);
  EXPECT_EQ(t.stride(-1), 1);
  EXPECT_EQ(t.stride(-2), 4);
  EXPECT_EQ(t.stride(0), 12);
}

TEST(TensorTest, OutOfRangeDimsUsePyTorchWording) {
  Tensor t = Tensor::empty({2, 3});
  EXPECT_EQ(message_of<IndexError>([&] { t.size(2); }),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(message_of<IndexError>([&] { t.stride(-3); }),
            "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_EQ(wrap_dim(-1, 2), 1);
  EXPECT_EQ(wrap_dim(1, 2), 1);
  EXPECT_EQ(wrap_dim(-2, 2), 0);
  // A 0-dim tensor accepts dims -1 and 0 where a dim is wrapped (as PyTorch's sum(dim=0)).
  EXPECT_EQ(wrap_dim(0, 0), 0);
  EXPECT_EQ(wrap_dim(-1, 0), 0);
  EXPECT_EQ(message_of<IndexError>([] { wrap_dim(1, 0); }),
            "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

TEST(TensorTest, SizeOfAZeroDimTensorIsAnIndexError) {
  // torch.tensor(1.).size(0): "dimension specified as 0 but tensor has no dimensions".
  Tensor t = Tensor::scalar(1.0f);
  EXPECT_EQ(message_of<IndexError>([&] { t.size(0); }),
            "dimension specified as 0 but tensor has no dimensions");
  EXPECT_EQ(message_of<IndexError>([&] { t.stride(-1); }),
            "dimension specified as -1 but tensor has no dimensions");
}

// ---------------------------------------------------------------- views

TEST(TensorTest, AsStridedViewSharesStorageAndVersionCounter) {
  Tensor base = arange<float>(6, {2, 3});
  Tensor view = base.as_strided_view(std::vector<int64_t>{3, 2}, std::vector<int64_t>{1, 3}, 0);
  EXPECT_TRUE(view.is_alias_of(base));
  EXPECT_FALSE(view.is_same(base));
  EXPECT_EQ(view.storage().impl(), base.storage().impl());
  EXPECT_EQ(view.impl()->version_counter(), base.impl()->version_counter());
  EXPECT_EQ(view.data_ptr(), base.data_ptr());
  EXPECT_EQ(base.version(), 0u);
  view.bump_version();
  EXPECT_EQ(base.version(), 1u);
  EXPECT_EQ(view.version(), 1u);
  base.bump_version();
  EXPECT_EQ(view.version(), 2u);
  // Writes through the view are visible in the base.
  view.data_ptr<float>()[0 * 1 + 1 * 3] = 42;  // element (0, 1) of the view: strides (1, 3)
  EXPECT_EQ(base.data_ptr<float>()[3], 42);
  Tensor other = arange<float>(6, {2, 3});
  EXPECT_FALSE(other.is_alias_of(base));
}

TEST(TensorTest, AsStridedViewWithOffset) {
  Tensor base = arange<float>(6, {6});
  Tensor v = base.as_strided_view(std::vector<int64_t>{2}, std::vector<int64_t>{2}, 1);
  EXPECT_EQ(v.storage_offset(), 1);
  EXPECT_EQ(static_cast<float*>(v.data_ptr()), base.data_ptr<float>() + 1);
  EXPECT_FALSE(v.is_contiguous());
}

TEST(TensorTest, OutOfBoundsGeometryThrowsWithSizesInTheMessage) {
  Tensor base = arange<float>(6, {2, 3});
  EXPECT_EQ(message_of<ValueError>([&] {
              base.as_strided_view(std::vector<int64_t>{3, 3}, std::vector<int64_t>{3, 1}, 0);
            }),
            "tensor geometry: sizes [3, 3], strides [3, 1] and offset 0 need 36 bytes but the "
            "storage holds 24");
  EXPECT_THAT(message_of<ValueError>([&] {
                base.as_strided_view(std::vector<int64_t>{6}, std::vector<int64_t>{1}, 1);
              }),
              HasSubstr("offset 1 need 28 bytes but the storage holds 24"));
  EXPECT_THAT(message_of<ValueError>([&] {
                base.as_strided_view(std::vector<int64_t>{2}, std::vector<int64_t>{1, 1}, 0);
              }),
              HasSubstr("sizes [2] and strides [1, 1] have different lengths"));
  EXPECT_THAT(message_of<ValueError>([&] {
                base.as_strided_view(std::vector<int64_t>{2}, std::vector<int64_t>{-1}, 1);
              }),
              HasSubstr("negative stride -1"));
  EXPECT_THAT(message_of<ValueError>([&] {
                base.as_strided_view(std::vector<int64_t>{-2}, std::vector<int64_t>{1}, 0);
              }),
              HasSubstr("negative size -2"));
  EXPECT_THAT(message_of<ValueError>([&] {
                base.as_strided_view(std::vector<int64_t>{1}, std::vector<int64_t>{1}, -1);
              }),
              HasSubstr("negative storage offset -1"));
  // An empty view may sit anywhere.
  Tensor e = base.as_strided_view(std::vector<int64_t>{0, 5}, std::vector<int64_t>{100, 1}, 6);
  EXPECT_EQ(e.numel(), 0);
}

TEST(TensorTest, HugeStridesDoNotOverflowTheBoundsCheck) {
  Tensor base = arange<float>(6, {6});
  const int64_t big = std::numeric_limits<int64_t>::max();
  for (auto [size, stride] :
       {std::pair<int64_t, int64_t>{2, big}, {3, big / 2}, {2, big / 4}, {int64_t{1} << 62, 4}}) {
    EXPECT_THAT(message_of<ValueError>([&, size = size, stride = stride] {
                  base.as_strided_view(std::vector<int64_t>{size}, std::vector<int64_t>{stride}, 0);
                }),
                HasSubstr("tensor geometry"))
        << size << " x " << stride;
  }
  EXPECT_THROW(base.as_strided_view(std::vector<int64_t>{1}, std::vector<int64_t>{1}, big),
               ValueError);
}

TEST(TensorTest, SetGeometryKeepsTheOldGeometryOnError) {
  Tensor t = arange<float>(6, {2, 3});
  EXPECT_THROW(t.impl()->set_geometry(std::vector<int64_t>{7}, std::vector<int64_t>{1}, 0),
               ValueError);
  EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{2, 3}));
  t.impl()->set_geometry(std::vector<int64_t>{3, 2}, std::vector<int64_t>{1, 3}, 0);
  EXPECT_EQ(vec(t.sizes()), (std::vector<int64_t>{3, 2}));
  EXPECT_FALSE(t.is_contiguous());
  t.impl()->set_geometry(std::vector<int64_t>{6}, std::vector<int64_t>{1}, 0);
  EXPECT_TRUE(t.is_contiguous());
}

TEST(TensorTest, IsContiguous) {
  Tensor base = arange<float>(24, {24});
  auto view = [&](std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t off = 0) {
    return base.as_strided_view(sizes, strides, off);
  };
  EXPECT_TRUE(view({2, 3, 4}, {12, 4, 1}).is_contiguous());
  EXPECT_FALSE(view({3, 2}, {1, 3}).is_contiguous());         // transposed
  EXPECT_FALSE(view({4, 3, 2}, {1, 4, 12}).is_contiguous());  // permuted
  EXPECT_TRUE(view({2, 1, 3}, {3, 99, 1}).is_contiguous());   // size-1 dims: any stride
  EXPECT_TRUE(view({1, 1}, {7, 9}).is_contiguous());
  EXPECT_TRUE(view({1}, {5}).is_contiguous());
  EXPECT_TRUE(view({}, {}, 5).is_contiguous());
  EXPECT_FALSE(view({2, 3}, {0, 1}).is_contiguous());       // expanded
  EXPECT_FALSE(view({2, 3}, {6, 1}).is_contiguous());       // a row gap
  EXPECT_TRUE(view({2, 3}, {3, 1}, 5).is_contiguous());     // an offset does not matter
  EXPECT_TRUE(view({2, 0, 3}, {0, 7, 5}).is_contiguous());  // no elements
}

// ---------------------------------------------------------------- element access

TEST(TensorTest, DataPtrChecksTheDtype) {
  Tensor t = Tensor::empty({2});
  EXPECT_NE(t.data_ptr<float>(), nullptr);
  EXPECT_EQ(message_of<TypeError>([&] { t.data_ptr<int64_t>(); }),
            "data_ptr<int64>: tensor [2] cpu float32 has dtype float32");
  EXPECT_THROW(t.data_ptr<double>(), TypeError);
  EXPECT_THROW(Tensor::scalar(true).data_ptr<uint8_t>(), TypeError);
}

TEST(TensorTest, ItemConvertsTheSingleElement) {
  EXPECT_EQ(Tensor::scalar(3.75f).item<float>(), 3.75f);
  EXPECT_EQ(Tensor::scalar(3.75f).item<int64_t>(), 3);
  EXPECT_EQ(Tensor::scalar(-3.75).item<int>(), -3);
  EXPECT_EQ(Tensor::scalar<int32_t>(-7).item<double>(), -7.0);
  EXPECT_EQ(Tensor::scalar(true).item<int>(), 1);
  EXPECT_TRUE(Tensor::scalar(true).item<bool>());
  EXPECT_EQ(Tensor::from_vector<int16_t>({5}, std::vector<int64_t>{1, 1}).item<int64_t>(), 5);
  Tensor h = Tensor::empty({}, TensorOptions{}.with(DType::Float16));
  *static_cast<uint16_t*>(h.data_ptr()) = float_to_half(0.333f);
  EXPECT_EQ(h.item<float>(), half_to_float(float_to_half(0.333f)));
  Tensor b = Tensor::empty({1}, TensorOptions{}.with(DType::BFloat16));
  *static_cast<uint16_t*>(b.data_ptr()) = float_to_bfloat16(-2.5f);
  EXPECT_EQ(b.item<double>(), -2.5);
}

TEST(TensorTest, ItemIsExactForLargeInt64) {
  const int64_t big = (int64_t{1} << 62) + 1;  // not representable as double
  EXPECT_EQ(Tensor::scalar<int64_t>(big).item<int64_t>(), big);
  EXPECT_EQ(Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::max()).item<int64_t>(),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::min()).item<int64_t>(),
            std::numeric_limits<int64_t>::min());
  const Scalar s = Tensor::scalar<int64_t>(big).item();
  EXPECT_TRUE(s.is_integral());
  EXPECT_EQ(s.to_int(), big);
  EXPECT_TRUE(Tensor::scalar(1.5f).item().is_floating_point());
  EXPECT_EQ(Tensor::scalar(1.5f).item().to_double(), 1.5);
  EXPECT_TRUE(Tensor::scalar(false).item().is_bool());
  EXPECT_TRUE(Tensor::scalar<uint8_t>(255).item().is_integral());
  EXPECT_EQ(Tensor::scalar<uint8_t>(255).item().to_int(), 255);
}

TEST(TensorTest, ItemNeedsExactlyOneElement) {
  Tensor t = Tensor::empty({2, 2});
  EXPECT_EQ(message_of<ValueError>([&] { t.item<float>(); }),
            "item(): a Tensor with 4 elements cannot be converted to Scalar (tensor [2, 2] cpu "
            "float32)");
  EXPECT_THROW(Tensor::empty({0}).item<float>(), ValueError);
}

// ---------------------------------------------------------------- describe / str

TEST(TensorTest, Describe) {
  EXPECT_EQ(Tensor::empty({2, 3}).describe(), "[2, 3] cpu float32");
  EXPECT_EQ(Tensor::scalar<int64_t>(1).describe(), "[] cpu int64");
  EXPECT_EQ(Tensor().describe(), "undefined");
  EXPECT_EQ(sizes_str(std::vector<int64_t>{4, 0, 1}), "[4, 0, 1]");
  EXPECT_EQ(sizes_str(std::vector<int64_t>{}), "[]");
}

TEST(TensorStrTest, MatrixPrintsLikePyTorch) {
  EXPECT_EQ(Tensor::from_vector<float>({1, 2, 3, 4}, std::vector<int64_t>{2, 2}).str(),
            "tensor([[1., 2.],\n        [3., 4.]])");
  std::ostringstream os;
  os << Tensor::from_vector<float>({1, 2}, std::vector<int64_t>{2});
  EXPECT_EQ(os.str(), "tensor([1., 2.])");
}

TEST(TensorStrTest, ZeroDim) {
  EXPECT_EQ(Tensor::scalar(3.5f).str(), "tensor(3.5000)");
  EXPECT_EQ(Tensor::scalar(3.0f).str(), "tensor(3.)");
  EXPECT_EQ(Tensor::scalar(0.0f).str(), "tensor(0.)");
  EXPECT_EQ(Tensor::scalar(-0.0f).str(), "tensor(-0.)");
  EXPECT_EQ(Tensor::scalar(2.0).str(), "tensor(2., dtype=torch.float64)");
  EXPECT_EQ(Tensor::scalar<int64_t>(7).str(), "tensor(7)");
  EXPECT_EQ(Tensor::scalar<int32_t>(-7).str(), "tensor(-7, dtype=torch.int32)");
  EXPECT_EQ(Tensor::scalar(true).str(), "tensor(True)");
  EXPECT_EQ(Tensor::scalar(std::nanf("")).str(), "tensor(nan)");
  EXPECT_EQ(Tensor::scalar(-std::numeric_limits<float>::infinity()).str(), "tensor(-inf)");
  EXPECT_EQ(Tensor::scalar(1e-5f).str(), "tensor(1.0000e-05)");
  EXPECT_EQ(Tensor::scalar(1e9f).str(), "tensor(1.0000e+09)");
}

TEST(TensorStrTest, FloatsShareOneFormat) {
  // One non-integer makes every element use 4 decimals.
  EXPECT_EQ(Tensor::from_vector<float>({1, 2.5}, std::vector<int64_t>{2}).str(),
            "tensor([1.0000, 2.5000])");
  // Elements are right-aligned to the widest.
  EXPECT_EQ(Tensor::from_vector<float>({1, 10}, std::vector<int64_t>{2}).str(),
            "tensor([ 1., 10.])");
  EXPECT_EQ(Tensor::from_vector<float>({-1, 2}, std::vector<int64_t>{2}).str(),
            "tensor([-1.,  2.])");
  EXPECT_EQ(Tensor::from_vector<float>({1, 100}, std::vector<int64_t>{2}).str(),
            "tensor([  1., 100.])");
  EXPECT_EQ(Tensor::from_vector<float>({0.5, -12.25, 3}, std::vector<int64_t>{3}).str(),
            "tensor([  0.5000, -12.2500,   3.0000])");
  EXPECT_EQ(Tensor::from_vector<double>({0.1, 0.2}, std::vector<int64_t>{2}).str(),
            "tensor([0.1000, 0.2000], dtype=torch.float64)");
}

TEST(TensorStrTest, ScientificWhenTheRangeIsWide) {
  EXPECT_EQ(Tensor::from_vector<float>({1e-5f, 1}, std::vector<int64_t>{2}).str(),
            "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(Tensor::from_vector<float>({1, 1e5f}, std::vector<int64_t>{2}).str(),
            "tensor([1.0000e+00, 1.0000e+05])");
  EXPECT_EQ(Tensor::from_vector<float>({0, 2e8f}, std::vector<int64_t>{2}).str(),
            "tensor([0.0000e+00, 2.0000e+08])");
  EXPECT_EQ(Tensor::from_vector<float>({-1.5f, 3000}, std::vector<int64_t>{2}).str(),
            "tensor([-1.5000e+00,  3.0000e+03])");
}

TEST(TensorStrTest, NonFiniteValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Tensor::from_vector<float>({0, nan, inf, -inf}, std::vector<int64_t>{4}).str(),
            "tensor([0., nan, inf, -inf])");
  EXPECT_EQ(Tensor::from_vector<float>({1.5, -nan}, std::vector<int64_t>{2}).str(),
            "tensor([1.5000,    nan])");
  EXPECT_EQ(Tensor::from_vector<float>({1, inf}, std::vector<int64_t>{2}).str(),
            "tensor([1., inf])");
}

TEST(TensorStrTest, IntegersAndBools) {
  EXPECT_EQ(Tensor::from_vector<int64_t>({1, 2, 3, 40}, std::vector<int64_t>{2, 2}).str(),
            "tensor([[ 1,  2],\n        [ 3, 40]])");
  EXPECT_EQ(Tensor::from_vector<int32_t>({1, 2}, std::vector<int64_t>{2}).str(),
            "tensor([1, 2], dtype=torch.int32)");
  EXPECT_EQ(Tensor::from_vector<uint8_t>({255, 0}, std::vector<int64_t>{2}).str(),
            "tensor([255,   0], dtype=torch.uint8)");
  EXPECT_EQ(Tensor::from_vector<int8_t>({-128, 5}, std::vector<int64_t>{2}).str(),
            "tensor([-128,    5], dtype=torch.int8)");
  EXPECT_EQ(Tensor::from_vector<bool>({true, false}, std::vector<int64_t>{2}).str(),
            "tensor([ True, False])");
  // int64 values print exactly, not through double.
  EXPECT_EQ(Tensor::from_vector<int64_t>(
                {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()},
                std::vector<int64_t>{2})
                .str(),
            "tensor([ 9223372036854775807, -9223372036854775808])");
}

TEST(TensorStrTest, HalfTypesPrintTheirValues) {
  Tensor h = Tensor::empty({2}, TensorOptions{}.with(DType::Float16));
  auto* p = static_cast<uint16_t*>(h.data_ptr());
  p[0] = float_to_half(1.0f);
  p[1] = float_to_half(0.5f);
  EXPECT_EQ(h.str(), "tensor([1.0000, 0.5000], dtype=torch.float16)");
  Tensor b = Tensor::empty({2}, TensorOptions{}.with(DType::BFloat16));
  auto* q = static_cast<uint16_t*>(b.data_ptr());
  q[0] = float_to_bfloat16(3.0f);
  q[1] = float_to_bfloat16(-4.0f);
  EXPECT_EQ(b.str(), "tensor([ 3., -4.], dtype=torch.bfloat16)");
}

TEST(TensorStrTest, NonContiguousViewsPrintTheirElements) {
  Tensor base = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, std::vector<int64_t>{2, 3});
  Tensor t = base.as_strided_view(std::vector<int64_t>{3, 2}, std::vector<int64_t>{1, 3}, 0);
  EXPECT_EQ(t.str(), "tensor([[1., 4.],\n        [2., 5.],\n        [3., 6.]])");
  Tensor col = base.as_strided_view(std::vector<int64_t>{2}, std::vector<int64_t>{3}, 1);
  EXPECT_EQ(col.str(), "tensor([2., 5.])");
  Tensor elem = base.as_strided_view(std::vector<int64_t>{}, std::vector<int64_t>{}, 5);
  EXPECT_EQ(elem.str(), "tensor(6.)");
  Tensor expanded = base.as_strided_view(std::vector<int64_t>{2, 2}, std::vector<int64_t>{0, 1}, 4);
  EXPECT_EQ(expanded.str(), "tensor([[5., 6.],\n        [5., 6.]])");
}

TEST(TensorStrTest, ThreeDims) {
  EXPECT_EQ(arange<int64_t>(8, {2, 2, 2}).str(),
            "tensor([[[0, 1],\n"
            "         [2, 3]],\n"
            "\n"
            "        [[4, 5],\n"
            "         [6, 7]]])");
}

TEST(TensorStrTest, EmptyTensors) {
  EXPECT_EQ(Tensor::empty({0}).str(), "tensor([])");
  EXPECT_EQ(Tensor::empty({2, 0}).str(), "tensor([], size=(2, 0))");
  EXPECT_EQ(Tensor::empty({0}, TensorOptions{}.with(DType::Int64)).str(),
            "tensor([], dtype=torch.int64)");
  EXPECT_EQ(Tensor::empty({0, 3}, TensorOptions{}.with(DType::Bool)).str(),
            "tensor([], size=(0, 3), dtype=torch.bool)");
}

TEST(TensorStrTest, LongRowsWrapAtEightyColumns) {
  EXPECT_EQ(arange<float>(30, {30}).str(),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
            "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
            "        28., 29.])");
}

TEST(TensorStrTest, LargeTensorsAreSummarized) {
  EXPECT_EQ(arange<int64_t>(2000, {2000}).str(),
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  EXPECT_EQ(arange<float>(10000, {100, 100}, 1000).str(),
            "tensor([[ 1000.,  1001.,  1002.,  ...,  1097.,  1098.,  1099.],\n"
            "        [ 1100.,  1101.,  1102.,  ...,  1197.,  1198.,  1199.],\n"
            "        [ 1200.,  1201.,  1202.,  ...,  1297.,  1298.,  1299.],\n"
            "        ...,\n"
            "        [10700., 10701., 10702.,  ..., 10797., 10798., 10799.],\n"
            "        [10800., 10801., 10802.,  ..., 10897., 10898., 10899.],\n"
            "        [10900., 10901., 10902.,  ..., 10997., 10998., 10999.]])");
  // 1000 elements is the threshold: still printed in full.
  const std::string full = arange<int64_t>(1000, {1000}).str();
  EXPECT_EQ(full.find("..."), std::string::npos);
  EXPECT_THAT(full, HasSubstr("999])"));
}

TEST(TensorStrTest, RequiresGradSuffix) {
  Tensor t = Tensor::from_vector<float>({1, 2}, std::vector<int64_t>{2});
  t.set_requires_grad(true);
  EXPECT_EQ(t.str(), "tensor([1., 2.], requires_grad=True)");
  Tensor d = Tensor::from_vector<double>({1, 2}, std::vector<int64_t>{2});
  d.set_requires_grad(true);
  EXPECT_EQ(d.str(), "tensor([1., 2.], dtype=torch.float64, requires_grad=True)");
}

TEST(TensorStrTest, UndefinedTensor) { EXPECT_EQ(Tensor().str(), "tensor(undefined)"); }

// ---------------------------------------------------------------- requires_grad

TEST(TensorTest, RequiresGradOnlyForFloatingDtypes) {
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    Tensor x = Tensor::empty({2}, TensorOptions{}.with(t));
    x.set_requires_grad(true);
    EXPECT_TRUE(x.requires_grad()) << dtype_name(t);
    x.set_requires_grad(false);
    EXPECT_FALSE(x.requires_grad()) << dtype_name(t);
  }
  for (DType t :
       {DType::Bool, DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64}) {
    Tensor x = Tensor::empty({2}, TensorOptions{}.with(t));
    const std::string msg = message_of<TypeError>([&] { x.set_requires_grad(true); });
    EXPECT_THAT(msg, HasSubstr("only Tensors of floating point dtype can require gradients"));
    EXPECT_THAT(msg, HasSubstr(std::string(dtype_name(t))));
    EXPECT_FALSE(x.requires_grad());
    x.set_requires_grad(false);  // always allowed
    EXPECT_FALSE(x.requires_grad());
  }
  EXPECT_THROW(Tensor::empty({2}, TensorOptions{.dtype = DType::Int64, .requires_grad = true}),
               TypeError);
}

TEST(TensorTest, SetRequiresGradReturnsItself) {
  Tensor t = Tensor::empty({1});
  EXPECT_TRUE(t.set_requires_grad(true).is_same(t));
  EXPECT_TRUE(t.requires_grad());
}

// Note [Autograd key]: only a tensor that requires grad carries the Autograd key.
TEST(TensorTest, AutogradKeyFollowsRequiresGrad) {
  Tensor t = Tensor::empty({1});
  t.set_requires_grad(false);  // no metadata needed for false
  EXPECT_EQ(t.impl()->autograd_meta(), nullptr);
  EXPECT_FALSE(t.key_set().has(DispatchKey::Autograd));
  t.set_requires_grad(true);
  EXPECT_TRUE(t.key_set().has(DispatchKey::Autograd));
  t.set_requires_grad(false);
  EXPECT_FALSE(t.key_set().has(DispatchKey::Autograd));
}

// ---------------------------------------------------------------- undefined

TEST(TensorTest, UndefinedTensorThrowsOnAccess) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.impl(), nullptr);
  EXPECT_FALSE(t.requires_grad());
  EXPECT_TRUE(t.key_set().empty());
  EXPECT_THAT(message_of<ValueError>([&] { t.sizes(); }), HasSubstr("the tensor is undefined"));
  EXPECT_THROW(t.dim(), ValueError);
  EXPECT_THROW(t.numel(), ValueError);
  EXPECT_THROW(t.dtype(), ValueError);
  EXPECT_THROW(t.size(0), ValueError);
  EXPECT_THROW(t.data_ptr(), ValueError);
  EXPECT_THROW(t.data_ptr<float>(), ValueError);
  EXPECT_THROW(t.item<float>(), ValueError);
  EXPECT_THROW(t.version(), ValueError);
  EXPECT_THROW(t.set_requires_grad(true), ValueError);
  EXPECT_THROW(t.as_strided_view(std::vector<int64_t>{}, std::vector<int64_t>{}, 0), ValueError);
  EXPECT_THROW(t.is_alias_of(Tensor::empty({1})), ValueError);
  EXPECT_TRUE(t.is_same(Tensor()));
}

// ---------------------------------------------------------------- storage lifetime

TEST(TensorTest, StorageIsSharedByViewsAndFreedWithTheLast) {
  Allocator& a = cpu_allocator();
  const int64_t live0 = a.stats().live_blocks;
  const int64_t allocated0 = a.stats().allocated_bytes;
  {
    Tensor base = Tensor::empty({1000});
    EXPECT_EQ(a.stats().live_blocks, live0 + 1);
    EXPECT_EQ(a.stats().allocated_bytes, allocated0 + 4032);  // 4000 rounded up to 64
    EXPECT_EQ(base.storage().use_count(), 1);
    EXPECT_EQ(base.storage().impl()->allocator(), &a);
    Tensor copy = base;  // shares the impl, not a new storage handle
    EXPECT_EQ(base.storage().use_count(), 1);
    EXPECT_TRUE(copy.is_same(base));
    Tensor view = base.as_strided_view(std::vector<int64_t>{10}, std::vector<int64_t>{1}, 0);
    EXPECT_EQ(base.storage().use_count(), 2);
    {
      Storage extra = base.storage();
      EXPECT_EQ(extra.use_count(), 3);
      EXPECT_TRUE(extra.is_alias_of(view.storage()));
    }
    EXPECT_EQ(base.storage().use_count(), 2);
    base = Tensor();
    copy = Tensor();
    EXPECT_EQ(view.storage().use_count(), 1);
    EXPECT_EQ(a.stats().live_blocks, live0 + 1);  // the view keeps the memory alive
  }
  EXPECT_EQ(a.stats().live_blocks, live0);
  EXPECT_EQ(a.stats().allocated_bytes, allocated0);
}

TEST(TensorTest, StorageHandles) {
  Storage none;
  EXPECT_FALSE(none.defined());
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_EQ(none.nbytes(), 0u);
  EXPECT_EQ(none.use_count(), 0);
  EXPECT_EQ(none.device(), kCPU);
  Storage s = Storage::allocate(128, kCPU);
  EXPECT_TRUE(s.defined());
  EXPECT_EQ(s.nbytes(), 128u);
  EXPECT_NE(s.data(), nullptr);
  EXPECT_EQ(s.impl()->allocator(), &cpu_allocator());
  EXPECT_FALSE(s.is_alias_of(none));
}

// Adopted memory is released through its own deleter when the last tensor dies.
int g_adopted_frees = 0;
TEST(TensorTest, AdoptedStorageUsesItsDeleter) {
  static float buffer[4] = {1, 2, 3, 4};
  g_adopted_frees = 0;
  {
    DataPtr data(
        buffer, nullptr, [](void*, void*) { ++g_adopted_frees; }, kCPU);
    Storage s(boost::intrusive_ptr<StorageImpl>(new StorageImpl(std::move(data), 16, nullptr)));
    EXPECT_EQ(s.impl()->allocator(), nullptr);
    Tensor t(boost::intrusive_ptr<TensorImpl>(new TensorImpl(
        s, DType::Float32, std::vector<int64_t>{2, 2}, std::vector<int64_t>{2, 1}, 0)));
    EXPECT_EQ(t.str(), "tensor([[1., 2.],\n        [3., 4.]])");
    EXPECT_EQ(g_adopted_frees, 0);
  }
  EXPECT_EQ(g_adopted_frees, 1);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(TensorResizeTest, GrowsStorageAndKeepsBytes) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor view = t.as_strided_view({4}, {1}, 0);
  t.resize_({3, 5});
  EXPECT_EQ(sizes_str(t.sizes()), "[3, 5]");
  EXPECT_EQ(sizes_str(t.strides()), "[5, 1]");
  EXPECT_GE(t.storage().nbytes(), 15 * sizeof(float));
  // The first bytes survive, and a view of the same storage sees the new memory.
  EXPECT_EQ(t.data_ptr<float>()[3], 4.0f);
  EXPECT_EQ(view.data_ptr<float>(), t.data_ptr<float>());
}

TEST(TensorResizeTest, ShrinkingKeepsStorage) {
  Tensor t = Tensor::empty({4, 4});
  const size_t nbytes = t.storage().nbytes();
  t.resize_({2});
  EXPECT_EQ(sizes_str(t.sizes()), "[2]");
  EXPECT_EQ(t.storage().nbytes(), nbytes);
  t.resize_({0, 3});
  EXPECT_EQ(t.numel(), 0);
}

TEST(TensorResizeTest, RespectsStorageOffsetAndRefusesNegativeSizes) {
  Tensor base = Tensor::empty({4});
  Tensor tail = base.as_strided_view({2}, {1}, 2);
  tail.resize_({5});
  EXPECT_GE(tail.storage().nbytes(), 7 * sizeof(float));
  EXPECT_EQ(tail.storage_offset(), 2);
  EXPECT_THROW(tail.resize_({-1}), Error);
}

TEST(TensorResizeTest, AdoptedMemoryIsNotResizable) {
  static float buffer[4];
  Storage s(boost::intrusive_ptr<StorageImpl>(
      new StorageImpl(DataPtr(buffer, nullptr, nullptr, Device()), sizeof(buffer), nullptr)));
  Tensor t(boost::intrusive_ptr<TensorImpl>(new TensorImpl(s, DType::Float32, {4}, {1}, 0)));
  t.resize_({2});  // fits: no reallocation needed
  try {
    t.resize_({8});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to resize storage that is not resizable"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom
