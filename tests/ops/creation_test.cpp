// Tests of the creation ops (ops/core/cpu/creation.cpp): PyTorch's dtypes, sizes and values,
// reproducible random factories, the *_like forms and tensors over host memory.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
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

class CreationTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
};

V vec(IntArrayRef a) { return V(a.begin(), a.end()); }

TEST_F(CreationTest, EmptyZerosOnesFull) {
  Tensor e = empty({2, 3});
  EXPECT_EQ(e.dtype(), DType::Float32);
  EXPECT_EQ(vec(e.sizes()), (V{2, 3}));
  EXPECT_TRUE(e.is_contiguous());
  expect_close(zeros({2, 2}, DType::Int32), {2, 2}, {0, 0, 0, 0});
  EXPECT_EQ(zeros({2}, DType::Int32).dtype(), DType::Int32);
  expect_close(ones({3}, DType::Float16), {3}, {1, 1, 1});
  expect_close(ones({}), {}, {1});
  EXPECT_EQ(zeros({0, 4}).numel(), 0);
  Tensor f = full({2}, 2.5);
  EXPECT_EQ(f.dtype(), DType::Float32);
  expect_close(f, {2}, {2.5, 2.5});
  EXPECT_EQ(full({2}, 7).dtype(), DType::Int64);
  EXPECT_EQ(full({2}, true).dtype(), DType::Bool);
  Tensor big = full({1}, int64_t{9007199254740993});  // exact beyond double's precision
  EXPECT_EQ(big.data_ptr<int64_t>()[0], int64_t{9007199254740993});
  expect_close(full({2}, 3, DType::BFloat16), {2}, {3, 3});
  expect_close(full({7}, -1.5, DType::Float64), {7}, std::vector<double>(7, -1.5));
  Tensor i16 = full({3, 5}, 300, DType::Int16);
  expect_close(i16, {3, 5}, std::vector<double>(15, 300));
  EXPECT_EQ(message_of([&] {
              zeros({2, -1});
            }),
            "Trying to create tensor with negative dimension -1: [2, -1]");
}

TEST_F(CreationTest, Arange) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), DType::Int64);
  expect_close(a, {5}, {0, 1, 2, 3, 4});
  Tensor b = arange(1, 2.5, 0.5);
  EXPECT_EQ(b.dtype(), DType::Float32);
  expect_close(b, {3}, {1, 1.5, 2});
  expect_close(arange(10, 0, -3), {4}, {10, 7, 4, 1});
  expect_close(arange(0, 1, 0.3, DType::Float64), {4}, {0, 0.3, 0.6, 0.9}, 1e-12, 1e-12);
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_EQ(arange(5.0).dtype(), DType::Float32);
  expect_close(arange(4, DType::Float64), {4}, {0, 1, 2, 3});
  EXPECT_EQ(message_of([&] { arange(0, 5, 0); }), "arange: step must be nonzero");
  // Note [Result sizes that overflow]: end - start wrapped to -1, and empty reported it.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(message_of([&] { arange(kMin, kMax, 1); }),
            "arange: the result size overflows int64 (the length of the range from "
            "-9223372036854775808 to 9223372036854775807 by 1)");
  EXPECT_EQ(message_of([&] { arange(0, 1, 1e-300); }),
            "arange: the result size overflows int64 (the length of the range from 0 to 1 by "
            "1e-300)");
  EXPECT_EQ(arange(kMin, kMax, int64_t{1} << 62).numel(), 4);
  expect_close(arange(kMax - 2, kMax, 1), {2}, {double(kMax - 2), double(kMax - 1)});
  EXPECT_EQ(arange(kMax, kMin, -(int64_t{1} << 62)).numel(), 4);
  // PyTorch's C++ text says "upper bound and larger bound"; the bounds are upper and lower.
  EXPECT_EQ(message_of([&] { arange(0, 5, -1); }),
            "arange: upper bound and lower bound inconsistent with step sign (start=0, end=5, "
            "step=-1)");
  EXPECT_EQ(message_of([&] { arange(2.5, -1, 0.5); }),
            "arange: upper bound and lower bound inconsistent with step sign (start=2.5, end=-1, "
            "step=0.5)");
}

TEST_F(CreationTest, Linspace) {
  Tensor l = linspace(0, 1, 5);
  EXPECT_EQ(l.dtype(), DType::Float32);
  expect_close(l, {5}, {0, 0.25, 0.5, 0.75, 1});
  expect_close(linspace(-1, 1, 1), {1}, {-1});
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  expect_close(linspace(0, 10, 4, DType::Int64), {4}, {0, 3, 6, 10});
  expect_close(linspace(3, -3, 3, DType::Float64), {3}, {3, 0, -3});
  EXPECT_EQ(message_of([&] { linspace(0, 1, -1); }), "number of steps must be non-negative");
}

TEST_F(CreationTest, Eye) {
  expect_close(eye(2), {2, 2}, {1, 0, 0, 1});
  expect_close(eye(2, 3, DType::Int64), {2, 3}, {1, 0, 0, 0, 1, 0});
  EXPECT_EQ(eye(0).numel(), 0);
  EXPECT_EQ(eye(3, DType::Float64).dtype(), DType::Float64);
  EXPECT_EQ(rand({2}, DType::Float64).dtype(), DType::Float64);
  EXPECT_EQ(randn({2}, DType::Float16).dtype(), DType::Float16);
  EXPECT_EQ(message_of([&] { eye(-2, 2); }), "eye: n must be greater or equal to 0, got -2");
  // A negative m was taken for "no m" and gave an n x n identity.
  EXPECT_EQ(message_of([&] { eye(2, -5); }), "eye: m must be greater or equal to 0, got -5");
  EXPECT_EQ(message_of([&] { eye(-1); }), "eye: n must be greater or equal to 0, got -1");
  // Note [Result sizes that overflow]: eye names itself, not empty.
  EXPECT_EQ(message_of([&] { eye(int64_t{1} << 32); }),
            "eye: the result size overflows int64 (the number of elements of sizes [4294967296, "
            "4294967296])");
  EXPECT_EQ(message_of([&] { eye(int64_t{1} << 31, int64_t{1} << 31, DType::Float64); }),
            "eye: the result size overflows int64 (the number of bytes of sizes [2147483648, "
            "2147483648] of float64)");
}

TEST_F(CreationTest, RandIsReproducibleAndInRange) {
  manual_seed(7);
  Tensor a = rand({1000});
  manual_seed(7);
  Tensor b = rand({1000});
  EXPECT_EQ(to_doubles(a), to_doubles(b));
  const auto v = to_doubles(a);
  double mean = 0;
  for (double x : v) {
    EXPECT_GE(x, 0);
    EXPECT_LT(x, 1);
    mean += x / v.size();
  }
  EXPECT_NEAR(mean, 0.5, 0.05);
  Tensor c = rand({2});
  EXPECT_NE(to_doubles(c), std::vector<double>(v.begin(), v.begin() + 2));  // the stream moved on
  // A private generator.
  CPUGenerator g1(3), g2(3);
  EXPECT_EQ(to_doubles(rand({4}, &g1, DType::Float64)), to_doubles(rand({4}, &g2, DType::Float64)));
  for (double x : to_doubles(rand({200}, nullptr, DType::Float16))) EXPECT_LT(x, 1);
  EXPECT_TRUE(
      contains(message_of<TypeError>([&] { rand({2}, nullptr, DType::Int64); }), "floating point"));
}

TEST_F(CreationTest, Randn) {
  manual_seed(11);
  Tensor a = randn({4001}, nullptr, DType::Float64);
  manual_seed(11);
  EXPECT_EQ(to_doubles(a), to_doubles(randn({4001}, nullptr, DType::Float64)));
  double mean = 0, sq = 0;
  for (double x : to_doubles(a)) {
    mean += x / 4001;
    sq += x * x / 4001;
  }
  EXPECT_NEAR(mean, 0, 0.06);
  EXPECT_NEAR(sq - mean * mean, 1, 0.08);
}

TEST_F(CreationTest, Randint) {
  manual_seed(5);
  Tensor a = randint(3, 7, {500});
  EXPECT_EQ(a.dtype(), DType::Int64);
  std::vector<int> seen(4, 0);
  for (double x : to_doubles(a)) {
    ASSERT_GE(x, 3);
    ASSERT_LT(x, 7);
    seen[static_cast<int>(x) - 3]++;
  }
  for (int n : seen) EXPECT_GT(n, 50);
  manual_seed(5);
  EXPECT_EQ(to_doubles(a), to_doubles(randint(3, 7, {500})));
  Tensor b = randint(2, {3, 2}, nullptr, DType::Int32);
  EXPECT_EQ(b.dtype(), DType::Int32);
  EXPECT_EQ(vec(b.sizes()), (V{3, 2}));
  EXPECT_EQ(message_of([&] { randint(5, 5, {2}); }),
            "random_ expects 'from' to be less than 'to', but got from=5 >= to=5");
}

TEST_F(CreationTest, Bernoulli) {
  // Probabilities 0 and 1 are deterministic, on a non-contiguous input.
  Tensor p = make_tensor({0, 1, 1, 0, 1, 0}, {2, 3}, DType::Float64, true);
  expect_close(bernoulli(p), {2, 3}, {0, 1, 1, 0, 1, 0});
  EXPECT_EQ(bernoulli(p).dtype(), DType::Float64);
  manual_seed(1);
  Tensor q = bernoulli(zeros({2000}), 0.3);
  double mean = 0;
  for (double x : to_doubles(q)) {
    ASSERT_TRUE(x == 0 || x == 1);
    mean += x / 2000;
  }
  EXPECT_NEAR(mean, 0.3, 0.04);
  manual_seed(1);
  EXPECT_EQ(to_doubles(q), to_doubles(bernoulli(zeros({2000}), 0.3)));
  EXPECT_EQ(message_of([&] { bernoulli(full({1}, 1.5)); }),
            "bernoulli_ expects p to be in [0, 1], but got p=1.5");
}

TEST_F(CreationTest, LikeForms) {
  Tensor x = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64, true);
  Tensor z = zeros_like(x);
  EXPECT_EQ(z.dtype(), DType::Float64);
  EXPECT_TRUE(z.is_contiguous());  // strided (non-dense) input: contiguous result
  expect_close(z, {2, 3}, {0, 0, 0, 0, 0, 0});
  expect_close(ones_like(x, DType::Int8), {2, 3}, {1, 1, 1, 1, 1, 1});
  expect_close(full_like(x, 2), {2, 3}, {2, 2, 2, 2, 2, 2});
  EXPECT_EQ(full_like(x, 2).dtype(), DType::Float64);
  EXPECT_EQ(vec(empty_like(x).sizes()), (V{2, 3}));
  // A dense permuted input keeps its strides (preserve_format).
  Tensor tr = transpose(make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1);
  Tensor e = empty_like(tr);
  EXPECT_EQ(vec(e.strides()), (V{1, 3}));
  expect_close(ones_like(tr), {3, 2}, {1, 1, 1, 1, 1, 1});
  for (double v : to_doubles(rand_like(x))) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 1);
  }
  EXPECT_EQ(randn_like(x).dtype(), DType::Float64);
  for (double v : to_doubles(randint_like(x, -2, 2))) {
    EXPECT_GE(v, -2);
    EXPECT_LT(v, 2);
    EXPECT_EQ(v, std::floor(v));
  }
  EXPECT_EQ(zeros_like(make_tensor({3}, {})).dim(), 0);
  EXPECT_EQ(zeros_like(make_tensor({}, {0, 2})).numel(), 0);
}

// Note [Meta tensors] (core/src/allocator.cpp): the factories make meta tensors through the Meta
// key, with every check and shape rule of the CPU kernels and no data.
TEST_F(CreationTest, MetaFactoriesMakeShapesWithoutData) {
  const Device meta("meta");
  Tensor z = zeros({2, 3}, DType::Int32, meta);
  EXPECT_EQ(z.device(), meta);
  EXPECT_EQ(z.describe(), "[2, 3] meta int32");
  EXPECT_EQ(vec(z.strides()), (V{3, 1}));
  EXPECT_EQ(z.data_ptr(), nullptr) << "no memory, as PyTorch's meta data_ptr() is 0";
  EXPECT_EQ(arange(0, 10, 3, {}, meta).describe(), "[4] meta int64");
  EXPECT_EQ(linspace(0, 1, 5, DType::Float64, meta).describe(), "[5] meta float64");
  EXPECT_EQ(eye(3, 4, {}, meta).describe(), "[3, 4] meta float32");
  EXPECT_EQ(full({2}, 7, {}, meta).dtype(), DType::Int64);
  EXPECT_EQ(empty_like(z).describe(), "[2, 3] meta int32");
  EXPECT_EQ(ones_like(z, DType::Float64).describe(), "[2, 3] meta float64");
  // The checks are the CPU kernels', word for word.
  EXPECT_EQ(message_of([&] { arange(0, 5, -1, {}, meta); }), message_of([&] { arange(0, 5, -1); }));
  EXPECT_EQ(message_of([&] { randint(3, 3, {2}, nullptr, {}, meta); }),
            message_of([&] { randint(3, 3, {2}); }));
  EXPECT_THROW(rand({2}, DType::Int64, meta), TypeError);

  // A meta random factory does not advance the generator.
  manual_seed(3);
  const std::vector<double> expected = to_doubles(rand({4}));
  manual_seed(3);
  EXPECT_EQ(rand({1000}, {}, meta).describe(), "[1000] meta float32");
  EXPECT_EQ(randn({1000}, {}, meta).numel(), 1000);
  EXPECT_EQ(to_doubles(rand({4})), expected);

  // A CPU tensor made "like" on meta runs the CPU kernel (the higher key) and writes nothing.
  Tensor cpu = make_tensor({1, 2, 3, 4, 5, 6}, {2, 3}).as_strided_view({3, 2}, {1, 3}, 0);
  Tensor on_meta = zeros_like(cpu, {}, meta);
  EXPECT_EQ(on_meta.describe(), "[3, 2] meta float32");
  EXPECT_EQ(vec(on_meta.strides()), vec(cpu.strides())) << "preserve_format, as on the CPU";
  EXPECT_EQ(rand_like(cpu, {}, meta).device(), meta);
  EXPECT_EQ(full_like(cpu, 2.0, {}, meta).device(), meta);

  // Pointwise ops run on meta (the reference kernels serve the Meta key); ops whose result's
  // shape depends on the values have no Meta kernel and say so.
  EXPECT_EQ(add(z, z).describe(), z.describe());
  EXPECT_THROW(nonzero(z), NotImplementedError);
  EXPECT_THROW(add(cpu, on_meta), DeviceError);

  // to("meta") keeps the shape and copies nothing; reading a meta tensor is PyTorch's error.
  const Tensor moved = cpu.to(meta);
  EXPECT_EQ(moved.describe(), "[3, 2] meta float32");
  EXPECT_TRUE(contains(message_of<NotImplementedError>([&] { zeros({1}, {}, meta).item(); }),
                       "Tensor.item() cannot be called on meta tensors"));
  EXPECT_TRUE(contains(message_of<NotImplementedError>([&] { cpu.copy_(moved); }),
                       "Cannot copy out of meta tensor; no data!"));
}

TEST_F(CreationTest, FromHostMemory) {
  Tensor a = tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  expect_close(a, {2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(tensor(std::vector<int64_t>{5, 6}).dtype(), DType::Int64);
  std::vector<double> buf{1, 2, 3, 4, 5, 6};
  Tensor b = from_blob(buf.data(), {2, 3}, DType::Float64);
  expect_close(b, {2, 3}, buf);
  buf[4] = 50;  // no copy: the tensor sees the buffer
  EXPECT_EQ(to_doubles(b)[4], 50);
  Tensor c = from_blob(buf.data(), {3}, DType::Float64, {2});
  expect_close(c, {3}, {1, 3, 50});
  static int deleted = 0;
  {
    Tensor d = from_blob(buf.data(), {2}, DType::Float64, {}, [](void*) { ++deleted; });
  }
  EXPECT_EQ(deleted, 1);
  // A null pointer for elements was accepted, and the first read crashed.
  EXPECT_TRUE(contains(message_of([] { from_blob(nullptr, {4}, DType::Float32); }),
                       "from_blob: data is null, but sizes [4] describe 4 elements"));
  EXPECT_EQ(from_blob(nullptr, {0}, DType::Float32).numel(), 0);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Boxed calls with PyTorch's conventions: trailing defaults omitted (randint's dtype=long).
TEST_F(CreationTest, BoxedCallsFillDefaults) {
  Stack s{IValue(int64_t{4}), IValue(std::vector<int64_t>{3})};
  Dispatcher::instance().find_op_or_throw("aten::randint").call_boxed(s);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.back().to_tensor().dtype(), DType::Int64);
  Stack a{IValue(Scalar(2)), IValue(Scalar(5))};
  Dispatcher::instance().find_op_or_throw("aten::arange.start_step").call_boxed(a);
  expect_close(a.back().to_tensor(), {3}, {2, 3, 4});
  Stack r{IValue(make_tensor({1, 2, 3}, {3})), IValue(std::vector<int64_t>{1})};
  Dispatcher::instance().find_op_or_throw("aten::roll").call_boxed(r);
  expect_close(r.back().to_tensor(), {3}, {3, 1, 2});
}

}  // namespace
}  // namespace loom
