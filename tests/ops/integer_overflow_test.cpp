// Integer edge cases of the pointwise kernels (ops/core/cpu/{binary,unary}.cpp through
// loom/ops/meta/integer_math.h): MIN / -1 and MIN % -1 in every form of div, remainder and
// fmod, which trapped with SIGFPE before; and the results that wrap, as in PyTorch, where C++
// has signed overflow (add, sub, mul, neg, abs, pow), which UBSan builds stop on. Also the
// Scalars written into a tensor (fill_, full, masked_fill, index_fill, scatter, alpha, clamp,
// addcmul), which must fit its dtype (loom/ops/meta/scalar_conversion.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

#include "loom/ops/core.h"
#include "loom/ops/meta/integer_math.h"
#include "loom/ops/meta/scalar_conversion.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

namespace meta = ops::meta;

// A constant expression may not overflow, so these fail to compile if a helper computes
// through signed overflow (uint16 * uint16 promoted to int included).
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
static_assert(meta::div_trunc_int(kMin64, int64_t{-1}) == kMin64);
static_assert(meta::div_floor_int(kMin32, -1) == kMin32);
static_assert(meta::fmod_int(kMin64, int64_t{-1}) == 0);
static_assert(meta::remainder_int(kMin32, -1) == 0);
static_assert(meta::remainder_int(-7, 2) == 1 && meta::fmod_int(-7, 2) == -1);
static_assert(meta::div_floor_int(-7, 2) == -4 && meta::div_floor_int(7, -2) == -4);
static_assert(meta::wrapping_neg(kMin64) == kMin64 && meta::wrapping_abs(kMin32) == kMin32);
static_assert(meta::wrapping_add(std::numeric_limits<int64_t>::max(), int64_t{1}) == kMin64);
static_assert(meta::wrapping_mul(kMin32, -1) == kMin32);
static_assert(meta::pow_int<int16_t>(-1, 2) == 1);
static_assert(meta::pow_int<uint16_t>(65535, 2) == 1);
static_assert(meta::pow_int<int64_t>(3, 41) == -420491770248316829);  // 3 ** 41 mod 2 ** 64

class IntegerOverflow : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_core(); }
};

template <typename T>
class SignedOverflow : public IntegerOverflow {};
using SignedTypes = ::testing::Types<int8_t, int16_t, int32_t, int64_t>;
TYPED_TEST_SUITE(SignedOverflow, SignedTypes);

// The elements of a 1-d tensor of C++ type T, exactly (to_doubles rounds int64).
template <typename T>
std::vector<T> values_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

// The same values in a strided view (stride 2), so the engine's strided loop runs too.
template <typename T>
Tensor strided_of(const std::vector<T>& v) {
  std::vector<T> spaced(v.size() * 2, T(0));
  for (size_t i = 0; i < v.size(); ++i) spaced[2 * i] = v[i];
  return Tensor::from_vector(spaced, {static_cast<int64_t>(spaced.size())})
      .as_strided_view({static_cast<int64_t>(v.size())}, {2}, 0);
}

TYPED_TEST(SignedOverflow, MinDividedByMinusOneWrapsInEveryFormOfDiv) {
  using T = TypeParam;
  constexpr T kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
  const std::vector<T> a = {kMin, kMax, T(-7), T(0), kMin, T(7)};
  const std::vector<T> b = {T(-1), T(-1), T(-1), T(-1), T(2), T(-2)};
  const std::vector<T> trunc = {kMin, T(-kMax), T(7), T(0), T(kMin / 2), T(-3)};
  const std::vector<T> floor = {kMin, T(-kMax), T(7), T(0), T(kMin / 2), T(-4)};
  const auto n = static_cast<int64_t>(a.size());
  for (bool strided : {false, true}) {
    SCOPED_TRACE(strided ? "strided" : "contiguous");
    const Tensor ta = strided ? strided_of(a) : Tensor::from_vector(a, {n});
    const Tensor tb = strided ? strided_of(b) : Tensor::from_vector(b, {n});
    EXPECT_EQ(values_of<T>(div(ta, tb, "trunc")), trunc);
    EXPECT_EQ(values_of<T>(div(ta, tb, "floor")), floor);
    Tensor out = Tensor::empty({n}, TensorOptions{}.with(dtype_of<T>));
    div_out(out, ta, tb, "trunc");
    EXPECT_EQ(values_of<T>(out), trunc);
    div_out(out, ta, tb, "floor");
    EXPECT_EQ(values_of<T>(out), floor);
    Tensor in = Tensor::from_vector(a, {n});
    div_(in, tb, "floor");
    EXPECT_EQ(values_of<T>(in), floor);
  }
  // By the Scalar -1, functional and in-place.
  const Tensor ta = Tensor::from_vector(a, {n});
  const std::vector<T> negated = {kMin, T(-kMax), T(7), T(0), kMin, T(-7)};
  for (const char* mode : {"trunc", "floor"}) {
    SCOPED_TRACE(mode);
    EXPECT_EQ(values_of<T>(div(ta, Scalar(-1), mode)), negated);
    Tensor in = Tensor::from_vector(a, {n});
    div_(in, Scalar(-1), mode);
    EXPECT_EQ(values_of<T>(in), negated);
  }
}

TYPED_TEST(SignedOverflow, MinModuloMinusOneIsZeroInEveryFormOfRemainderAndFmod) {
  using T = TypeParam;
  constexpr T kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
  const std::vector<T> a = {kMin, kMax, T(-7), kMin, T(-7), T(7)};
  const std::vector<T> b = {T(-1), T(-1), T(-1), T(3), T(2), T(-2)};
  const T min_mod3 = T(kMin % 3);  // C's sign of the dividend
  const std::vector<T> rem = {T(0), T(0), T(0), T(min_mod3 == 0 ? 0 : min_mod3 + 3), T(1), T(-1)};
  const std::vector<T> fm = {T(0), T(0), T(0), min_mod3, T(-1), T(1)};
  const std::vector<T> zeros(a.size(), T(0));
  const auto n = static_cast<int64_t>(a.size());
  for (bool strided : {false, true}) {
    SCOPED_TRACE(strided ? "strided" : "contiguous");
    const Tensor ta = strided ? strided_of(a) : Tensor::from_vector(a, {n});
    const Tensor tb = strided ? strided_of(b) : Tensor::from_vector(b, {n});
    EXPECT_EQ(values_of<T>(remainder(ta, tb)), rem);
    EXPECT_EQ(values_of<T>(fmod(ta, tb)), fm);
    Tensor out = Tensor::empty({n}, TensorOptions{}.with(dtype_of<T>));
    remainder_out(out, ta, tb);
    EXPECT_EQ(values_of<T>(out), rem);
    fmod_out(out, ta, tb);
    EXPECT_EQ(values_of<T>(out), fm);
    Tensor in = Tensor::from_vector(a, {n});
    remainder_(in, tb);
    EXPECT_EQ(values_of<T>(in), rem);
    in = Tensor::from_vector(a, {n});
    fmod_(in, tb);
    EXPECT_EQ(values_of<T>(in), fm);
    // A Scalar divisor, and a Scalar dividend (remainder.Scalar_Tensor).
    EXPECT_EQ(values_of<T>(remainder(ta, Scalar(-1))), zeros);
    EXPECT_EQ(values_of<T>(fmod(ta, Scalar(-1))), zeros);
    remainder_out(out, ta, Scalar(-1));
    EXPECT_EQ(values_of<T>(out), zeros);
    fmod_out(out, ta, Scalar(-1));
    EXPECT_EQ(values_of<T>(out), zeros);
    const Tensor minus_one = strided ? strided_of(std::vector<T>(a.size(), T(-1)))
                                     : Tensor::from_vector(std::vector<T>(a.size(), T(-1)), {n});
    EXPECT_EQ(values_of<T>(remainder(Scalar(static_cast<int64_t>(kMin)), minus_one)), zeros);
  }
  Tensor in = Tensor::from_vector(a, {n});
  remainder_(in, Scalar(-1));
  EXPECT_EQ(values_of<T>(in), zeros);
  in = Tensor::from_vector(a, {n});
  fmod_(in, Scalar(-1));
  EXPECT_EQ(values_of<T>(in), zeros);
}

TYPED_TEST(SignedOverflow, ZeroDivisorStillRaisesZeroDivisionError) {
  using T = TypeParam;
  const Tensor a = Tensor::from_vector(std::vector<T>{std::numeric_limits<T>::min(), T(1)}, {2});
  const Tensor b = Tensor::from_vector(std::vector<T>{T(-1), T(0)}, {2});
  for (auto f :
       std::vector<std::function<void()>>{[&] { div(a, b, "trunc"); }, [&] { div(a, b, "floor"); },
                                          [&] { remainder(a, b); }, [&] { fmod(a, b); }}) {
    EXPECT_TRUE(testing::contains(testing::message_of<ValueError>(f), "ZeroDivisionError"));
  }
}

// Sums, products and negations wrap (two's complement) as PyTorch's do.
TYPED_TEST(SignedOverflow, ArithmeticWrapsOnOverflow) {
  using T = TypeParam;
  using U = std::make_unsigned_t<T>;
  constexpr T kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
  const std::vector<T> a = {kMax, kMin, kMin, kMax, T(-1)};
  const std::vector<T> b = {T(1), T(-1), kMin, kMax, kMin};
  const auto n = static_cast<int64_t>(a.size());
  auto wrap = [](uint64_t v) { return static_cast<T>(static_cast<U>(v)); };
  std::vector<T> sum, diff, prod, sum_alpha;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto ua = static_cast<uint64_t>(a[i]), ub = static_cast<uint64_t>(b[i]);
    sum.push_back(wrap(ua + ub));
    diff.push_back(wrap(ua - ub));
    prod.push_back(wrap(ua * ub));
    sum_alpha.push_back(wrap(ua - ub * static_cast<uint64_t>(int64_t{kMin})));
  }
  // Contiguous int64 tensors this small take add's fast path (Note [Small-tensor fast path]),
  // strided ones the engine.
  for (bool strided : {false, true}) {
    SCOPED_TRACE(strided ? "strided" : "contiguous");
    const Tensor ta = strided ? strided_of(a) : Tensor::from_vector(a, {n});
    const Tensor tb = strided ? strided_of(b) : Tensor::from_vector(b, {n});
    EXPECT_EQ(values_of<T>(add(ta, tb)), sum);
    EXPECT_EQ(values_of<T>(sub(ta, tb)), diff);
    EXPECT_EQ(values_of<T>(mul(ta, tb)), prod);
    // sub with alpha = MIN: -alpha wraps to MIN.
    EXPECT_EQ(values_of<T>(sub(ta, tb, Scalar(static_cast<int64_t>(kMin)))), sum_alpha);
  }
  const Tensor ta = Tensor::from_vector(a, {n});
  EXPECT_EQ(values_of<T>(add(ta, Scalar(1))),
            (std::vector<T>{kMin, T(kMin + 1), T(kMin + 1), kMin, T(0)}));
  EXPECT_EQ(values_of<T>(mul(ta, Scalar(2))), (std::vector<T>{T(-2), T(0), T(0), T(-2), T(-2)}));
  EXPECT_EQ(values_of<T>(neg(ta)), (std::vector<T>{T(-kMax), kMin, kMin, T(-kMax), T(1)}));
  EXPECT_EQ(values_of<T>(abs(ta)), (std::vector<T>{kMax, kMin, kMin, kMax, T(1)}));
  // pow wraps: 3 ** (8 * sizeof(T) + 1) mod 2**bits, and (-1) ** 2 (int16 computed through
  // uint16 promoted to int overflowed).
  const Tensor base = Tensor::from_vector(std::vector<T>{T(3), T(-1), T(-1)}, {3});
  const Tensor exp = Tensor::from_vector(std::vector<T>{T(8 * sizeof(T) + 1), T(2), T(3)}, {3});
  uint64_t p3 = 1;
  for (size_t i = 0; i < 8 * sizeof(T) + 1; ++i) p3 *= 3;
  EXPECT_EQ(values_of<T>(pow(base, exp)), (std::vector<T>{wrap(p3), T(1), T(-1)}));
  // addcmul: self + value * t1 * t2 wraps too (MAX + 1 * 2 * 1 = MIN + 1).
  const Tensor big = Tensor::from_vector(std::vector<T>{kMax, T(1)}, {2});
  const Tensor two = Tensor::from_vector(std::vector<T>{T(2), T(2)}, {2});
  const Tensor one = Tensor::from_vector(std::vector<T>{T(1), T(1)}, {2});
  EXPECT_EQ(values_of<T>(addcmul(big, two, one, Scalar(1))), (std::vector<T>{T(kMin + 1), T(3)}));
}

// Note [Checked scalar conversion]: the rule of c10::checked_convert, dtype by dtype.
TEST(CheckedScalarConversion, FollowsC10sRule) {
  using meta::scalar_overflows;
  EXPECT_FALSE(scalar_overflows(Scalar(int64_t{127}), DType::Int8));
  EXPECT_TRUE(scalar_overflows(Scalar(int64_t{128}), DType::Int8));
  EXPECT_TRUE(scalar_overflows(Scalar(int64_t{-129}), DType::Int8));
  EXPECT_FALSE(scalar_overflows(Scalar(int64_t{-128}), DType::Int8));
  // An integer may wrap into uint8 from as low as -255, as in c10 (uint8 - 1 == uint8 + 255).
  EXPECT_FALSE(scalar_overflows(Scalar(int64_t{-1}), DType::UInt8));
  EXPECT_FALSE(scalar_overflows(Scalar(int64_t{-255}), DType::UInt8));
  EXPECT_TRUE(scalar_overflows(Scalar(int64_t{-256}), DType::UInt8));
  EXPECT_TRUE(scalar_overflows(Scalar(int64_t{256}), DType::UInt8));
  EXPECT_TRUE(scalar_overflows(Scalar(-1.0), DType::UInt8));  // floats get no such allowance
  EXPECT_TRUE(scalar_overflows(Scalar(int64_t{1} << 31), DType::Int32));
  EXPECT_FALSE(scalar_overflows(Scalar(std::numeric_limits<int64_t>::min()), DType::Int64));
  EXPECT_TRUE(scalar_overflows(Scalar(std::nan("")), DType::Int64));
  EXPECT_TRUE(scalar_overflows(Scalar(INFINITY), DType::Int32));
  EXPECT_TRUE(scalar_overflows(Scalar(9223372036854775808.0), DType::Int64));  // 2^63
  EXPECT_FALSE(scalar_overflows(Scalar(-9223372036854775808.0), DType::Int64));
  EXPECT_FALSE(scalar_overflows(Scalar(2.5), DType::Int8));
  EXPECT_TRUE(scalar_overflows(Scalar(127.5), DType::Int8));
  EXPECT_TRUE(scalar_overflows(Scalar(1e300), DType::Float32));
  EXPECT_FALSE(scalar_overflows(Scalar(std::nan("")), DType::Float32));
  EXPECT_FALSE(scalar_overflows(Scalar(-INFINITY), DType::Float16));
  EXPECT_TRUE(scalar_overflows(Scalar(int64_t{70000}), DType::Float16));
  EXPECT_FALSE(scalar_overflows(Scalar(1e38), DType::BFloat16));
  EXPECT_TRUE(scalar_overflows(Scalar(1e39), DType::BFloat16));
  EXPECT_FALSE(scalar_overflows(Scalar(1e308), DType::Float64));
  EXPECT_FALSE(scalar_overflows(Scalar(1e30), DType::Bool));
  EXPECT_FALSE(scalar_overflows(Scalar(true), DType::Int8));
}

// Every op that writes a Scalar into a tensor refuses one its dtype cannot hold, with
// PyTorch's words, rather than storing a wrapped or undefined value.
TEST_F(IntegerOverflow, ScalarsWrittenIntoATensorMustFitItsDtype) {
  using testing::message_of;
  EXPECT_EQ(message_of([] { full({2}, 1e30, DType::Int32); }),
            "full: value cannot be converted to type int without overflow");
  EXPECT_EQ(message_of([] { full({2}, std::nan(""), DType::Int64); }),
            "full: value cannot be converted to type int64_t without overflow");
  EXPECT_EQ(message_of([] { full({2}, 1e300, DType::Float32); }),
            "full: value cannot be converted to type float without overflow");
  EXPECT_EQ(message_of([] { full({2}, int64_t{-256}, DType::UInt8); }),
            "full: value cannot be converted to type uint8_t without overflow");
  EXPECT_EQ(message_of([] { full_like(zeros({2}, DType::Int16), int64_t{40000}); }),
            "full_like: value cannot be converted to type int16_t without overflow");
  Tensor i64 = zeros({2}, DType::Int64);
  EXPECT_EQ(message_of([&] { i64.fill_(Scalar(INFINITY)); }),
            "fill_.Scalar: value cannot be converted to type int64_t without overflow");
  EXPECT_EQ(message_of([&] { fill_(i64, full({}, 1e19, DType::Float64)); }),
            "fill_.Tensor: value cannot be converted to type int64_t without overflow");
  const Tensor i8 = zeros({2}, DType::Int8);
  const Tensor mask = Tensor::from_vector<bool>({true, false}, {2});
  EXPECT_EQ(message_of([&] { i8.masked_fill(mask, Scalar(int64_t{300})); }),
            "masked_fill.Scalar: value cannot be converted to type int8_t without overflow");
  const Tensor first = Tensor::from_vector<int64_t>({0}, {1});
  EXPECT_EQ(message_of([&] { index_fill(i8, 0, first, Scalar(int64_t{1000})); }),
            "index_fill: value cannot be converted to type int8_t without overflow");
  EXPECT_EQ(message_of([&] { scatter(i8, 0, first, Scalar(int64_t{-200})); }),
            "scatter.value: value cannot be converted to type int8_t without overflow");
  EXPECT_EQ(message_of([&] { index_add(i8, 0, first, zeros({1}, DType::Int8), 128); }),
            "index_add: value cannot be converted to type int8_t without overflow");
  EXPECT_EQ(message_of([&] { add(i8, i8, Scalar(int64_t{1000})); }),
            "add.Tensor: value cannot be converted to type int8_t without overflow");
  EXPECT_EQ(message_of([&] { i8.clamp(Scalar(int64_t{1000}), std::nullopt); }),
            "clamp: value cannot be converted to type int8_t without overflow");
  EXPECT_EQ(message_of([&] { addcmul(i8, i8, i8, Scalar(int64_t{128})); }),
            "addcmul: value cannot be converted to type int8_t without overflow");
  // Nothing was written, and the values that fit still do, uint8's wrapping negatives included.
  EXPECT_EQ(values_of<int64_t>(i64), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(values_of<uint8_t>(full({2}, int64_t{-1}, DType::UInt8)),
            (std::vector<uint8_t>{255, 255}));
  EXPECT_EQ(values_of<int8_t>(i8.masked_fill(mask, Scalar(int64_t{-128}))),
            (std::vector<int8_t>{-128, 0}));
  EXPECT_EQ(values_of<int32_t>(full({1}, -2.5, DType::Int32)), (std::vector<int32_t>{-2}));
  EXPECT_TRUE(std::isinf(full({1}, INFINITY, DType::Float16).item().to<double>()));
  // A wrapped number is cast like a tensor, as in PyTorch: int8 + 1000 wraps.
  EXPECT_EQ(values_of<int8_t>(add(i8, Scalar(int64_t{1000}))), (std::vector<int8_t>{-24, -24}));
}

}  // namespace
}  // namespace loom
