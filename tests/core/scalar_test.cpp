// Tests for core/src/scalar.cpp: the dynamically typed number ops take as Scalar arguments.

#include "loom/core/scalar.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace loom {
namespace {

// A string literal used to convert to Scalar(true) through the pointer-to-bool conversion.
static_assert(!std::is_constructible_v<Scalar, const char*>);
static_assert(std::is_constructible_v<Scalar, bool> && std::is_constructible_v<Scalar, double>);

TEST(ScalarTest, DefaultIsIntegerZero) {
  Scalar s;
  EXPECT_EQ(s.kind(), Scalar::Kind::Int);
  EXPECT_TRUE(s.is_integral());
  EXPECT_EQ(s.to_int(), 0);
  EXPECT_EQ(s.str(), "0");
}

TEST(ScalarTest, KindsFollowTheCppType) {
  EXPECT_EQ(Scalar(1).kind(), Scalar::Kind::Int);
  EXPECT_EQ(Scalar(int8_t{-3}).kind(), Scalar::Kind::Int);
  EXPECT_EQ(Scalar(uint8_t{200}).kind(), Scalar::Kind::Int);
  EXPECT_EQ(Scalar(int64_t{1} << 40).kind(), Scalar::Kind::Int);
  EXPECT_EQ(Scalar(1.5).kind(), Scalar::Kind::Float);
  EXPECT_EQ(Scalar(1.5f).kind(), Scalar::Kind::Float);
  EXPECT_EQ(Scalar(true).kind(), Scalar::Kind::Bool);
  EXPECT_TRUE(Scalar(1.5).is_floating_point());
  EXPECT_FALSE(Scalar(1.5).is_integral());
  EXPECT_TRUE(Scalar(false).is_bool());
  EXPECT_FALSE(Scalar(false).is_integral());
}

TEST(ScalarTest, DTypeIsWhatTorchGivesATensorMadeFromIt) {
  EXPECT_EQ(Scalar(3).dtype(), DType::Int64);
  EXPECT_EQ(Scalar(uint8_t{3}).dtype(), DType::Int64);
  EXPECT_EQ(Scalar(2.5).dtype(), DType::Float32);
  EXPECT_EQ(Scalar(2.5f).dtype(), DType::Float32);
  EXPECT_EQ(Scalar(true).dtype(), DType::Bool);
}

TEST(ScalarTest, ConversionsKeepInt64Exact) {
  const int64_t big = (int64_t{1} << 62) + 1;  // not representable as double
  EXPECT_EQ(Scalar(big).to_int(), big);
  EXPECT_EQ(Scalar(big).to<int64_t>(), big);
  EXPECT_EQ(Scalar(std::numeric_limits<int64_t>::min()).to_int(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Scalar(-7).to<int32_t>(), -7);
  EXPECT_DOUBLE_EQ(Scalar(3).to_double(), 3.0);
}

TEST(ScalarTest, FloatToIntTruncatesTowardZero) {
  EXPECT_EQ(Scalar(2.9).to_int(), 2);
  EXPECT_EQ(Scalar(-2.9).to_int(), -2);
  EXPECT_FLOAT_EQ(Scalar(0.1).to<float>(), 0.1f);
  EXPECT_DOUBLE_EQ(Scalar(0.1).to_double(), 0.1);
}

TEST(ScalarTest, BoolConvertsToZeroOrOne) {
  EXPECT_EQ(Scalar(true).to_int(), 1);
  EXPECT_EQ(Scalar(false).to_int(), 0);
  EXPECT_DOUBLE_EQ(Scalar(true).to_double(), 1.0);
  EXPECT_TRUE(Scalar(true).to<bool>());
  EXPECT_TRUE(Scalar(0.5).to<bool>());
  EXPECT_FALSE(Scalar(0).to<bool>());
}

TEST(ScalarTest, StrLooksLikeItsValue) {
  EXPECT_EQ(Scalar(1).str(), "1");
  EXPECT_EQ(Scalar(-42).str(), "-42");
  EXPECT_EQ(Scalar(std::numeric_limits<int64_t>::max()).str(), "9223372036854775807");
  EXPECT_EQ(Scalar(2.5).str(), "2.5");
  EXPECT_EQ(Scalar(-0.125).str(), "-0.125");
  EXPECT_EQ(Scalar(true).str(), "True");
  EXPECT_EQ(Scalar(false).str(), "False");
}

TEST(ScalarTest, EqualityNeedsTheSameKindAndValue) {
  EXPECT_EQ(Scalar(1), Scalar(int64_t{1}));
  EXPECT_EQ(Scalar(2.5), Scalar(2.5f));
  EXPECT_EQ(Scalar(true), Scalar(true));
  EXPECT_FALSE(Scalar(1) == Scalar(2));
  EXPECT_FALSE(Scalar(1) == Scalar(1.0));
  EXPECT_FALSE(Scalar(1) == Scalar(true));
  EXPECT_FALSE(Scalar(true) == Scalar(false));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(Scalar(nan) == Scalar(nan));
}

}  // namespace
}  // namespace loom
