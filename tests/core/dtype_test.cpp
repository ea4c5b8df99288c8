// Tests for core/src/dtype.cpp: element sizes, names, parsing and PyTorch's type promotion.

#include "loom/core/dtype.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace loom {
namespace {

constexpr std::array<DType, kNumDTypes> kAll = {
    DType::Bool,  DType::UInt8,   DType::Int8,     DType::Int16,   DType::Int32,
    DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64,
};

TEST(DTypeTest, ElementSizes) {
  EXPECT_EQ(element_size(DType::Bool), 1u);
  EXPECT_EQ(element_size(DType::UInt8), 1u);
  EXPECT_EQ(element_size(DType::Int8), 1u);
  EXPECT_EQ(element_size(DType::Int16), 2u);
  EXPECT_EQ(element_size(DType::Int32), 4u);
  EXPECT_EQ(element_size(DType::Int64), 8u);
  EXPECT_EQ(element_size(DType::Float16), 2u);
  EXPECT_EQ(element_size(DType::BFloat16), 2u);
  EXPECT_EQ(element_size(DType::Float32), 4u);
  EXPECT_EQ(element_size(DType::Float64), 8u);
}

TEST(DTypeTest, NamesAreTorchShortNames) {
  const std::array<const char*, kNumDTypes> names = {"bool",    "uint8",  "int8",    "int16",
                                                     "int32",   "int64",  "float16", "bfloat16",
                                                     "float32", "float64"};
  for (int i = 0; i < kNumDTypes; ++i) EXPECT_EQ(dtype_name(kAll[i]), names[i]);
}

TEST(DTypeTest, ParseRoundTripsEveryName) {
  for (DType t : kAll) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t) << dtype_name(t);
    EXPECT_EQ(parse_dtype("torch." + std::string(dtype_name(t))), t) << dtype_name(t);
  }
}

TEST(DTypeTest, ParseAliases) {
  // torch.float, torch.double, torch.half, torch.long, torch.int, torch.short.
  EXPECT_EQ(parse_dtype("float"), DType::Float32);
  EXPECT_EQ(parse_dtype("torch.float"), DType::Float32);
  EXPECT_EQ(parse_dtype("double"), DType::Float64);
  EXPECT_EQ(parse_dtype("half"), DType::Float16);
  EXPECT_EQ(parse_dtype("long"), DType::Int64);
  EXPECT_EQ(parse_dtype("torch.long"), DType::Int64);
  EXPECT_EQ(parse_dtype("int"), DType::Int32);
  EXPECT_EQ(parse_dtype("short"), DType::Int16);
  // Tensor.byte() / Tensor.char() names.
  EXPECT_EQ(parse_dtype("byte"), DType::UInt8);
  EXPECT_EQ(parse_dtype("char"), DType::Int8);
}

TEST(DTypeTest, ParseRejectsUnknownNames) {
  EXPECT_EQ(parse_dtype(""), std::nullopt);
  EXPECT_EQ(parse_dtype("torch."), std::nullopt);
  EXPECT_EQ(parse_dtype("Float32"), std::nullopt);
  EXPECT_EQ(parse_dtype("float32 "), std::nullopt);
  EXPECT_EQ(parse_dtype("complex64"), std::nullopt);
  EXPECT_EQ(parse_dtype("torch.torch.float32"), std::nullopt);
}

TEST(DTypeTest, Categories) {
  for (DType t : kAll) {
    const bool fp =
        t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
    EXPECT_EQ(is_floating_point(t), fp) << dtype_name(t);
    EXPECT_EQ(is_integral(t), !fp) << dtype_name(t);
    EXPECT_EQ(is_integral(t, /*include_bool=*/false), !fp && t != DType::Bool) << dtype_name(t);
  }
  EXPECT_EQ(default_float_dtype(), DType::Float32);
}

// torch.promote_types(a, b) for every pair, written out by hand from PyTorch's rules:
// bool < uint8/int8 < int16 < int32 < int64 < float16/bfloat16 < float32 < float64;
// uint8 with int8 is int16; float16 with bfloat16 is float32; an integer with a float is
// the float. Rows and columns in the order of kAll.
TEST(DTypeTest, PromoteTypesMatchesTorchForAllPairs) {
  constexpr DType b = DType::Bool, u8 = DType::UInt8, i8 = DType::Int8, i16 = DType::Int16,
                  i32 = DType::Int32, i64 = DType::Int64, f16 = DType::Float16,
                  bf16 = DType::BFloat16, f32 = DType::Float32, f64 = DType::Float64;
  // clang-format off
  const DType expected[kNumDTypes][kNumDTypes] = {
      //         b     u8    i8    i16   i32   i64   f16   bf16  f32   f64
      /* b   */ {b,    u8,   i8,   i16,  i32,  i64,  f16,  bf16, f32,  f64},
      /* u8  */ {u8,   u8,   i16,  i16,  i32,  i64,  f16,  bf16, f32,  f64},
      /* i8  */ {i8,   i16,  i8,   i16,  i32,  i64,  f16,  bf16, f32,  f64},
      /* i16 */ {i16,  i16,  i16,  i16,  i32,  i64,  f16,  bf16, f32,  f64},
      /* i32 */ {i32,  i32,  i32,  i32,  i32,  i64,  f16,  bf16, f32,  f64},
      /* i64 */ {i64,  i64,  i64,  i64,  i64,  i64,  f16,  bf16, f32,  f64},
      /* f16 */ {f16,  f16,  f16,  f16,  f16,  f16,  f16,  f32,  f32,  f64},
      /* bf16*/ {bf16, bf16, bf16, bf16, bf16, bf16, f32,  bf16, f32,  f64},
      /* f32 */ {f32,  f32,  f32,  f32,  f32,  f32,  f32,  f32,  f32,  f64},
      /* f64 */ {f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64,  f64},
  };
  // clang-format on
  for (int i = 0; i < kNumDTypes; ++i) {
    for (int j = 0; j < kNumDTypes; ++j) {
      EXPECT_EQ(promote_types(kAll[i], kAll[j]), expected[i][j])
          << "promote_types(" << dtype_name(kAll[i]) << ", " << dtype_name(kAll[j]) << ") gave "
          << dtype_name(promote_types(kAll[i], kAll[j])) << ", torch gives "
          << dtype_name(expected[i][j]);
    }
  }
}

TEST(DTypeTest, PromoteTypesIsSymmetricIdempotentAndAssociativeWhereTorchIs) {
  for (DType a : kAll) {
    EXPECT_EQ(promote_types(a, a), a);
    for (DType c : kAll) {
      EXPECT_EQ(promote_types(a, c), promote_types(c, a)) << dtype_name(a) << ", " << dtype_name(c);
      // The result can hold both inputs: promoting it again with either changes nothing.
      const DType r = promote_types(a, c);
      EXPECT_EQ(promote_types(r, a), r);
      EXPECT_EQ(promote_types(r, c), r);
    }
  }
}

TEST(DTypeTest, CanCastFollowsTorchCategories) {
  // torch.can_cast refuses float -> integral/bool and integral -> bool; everything else is fine.
  for (DType from : kAll) {
    for (DType to : kAll) {
      bool expected = true;
      if (is_floating_point(from) && !is_floating_point(to)) expected = false;
      if (from != DType::Bool && to == DType::Bool) expected = false;
      EXPECT_EQ(can_cast(from, to), expected) << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
  EXPECT_TRUE(can_cast(DType::Int64, DType::Float16));  // narrowing within a category is allowed
  EXPECT_TRUE(can_cast(DType::Float64, DType::BFloat16));
  EXPECT_TRUE(can_cast(DType::Bool, DType::UInt8));
  EXPECT_FALSE(can_cast(DType::Float32, DType::Int64));
  EXPECT_FALSE(can_cast(DType::UInt8, DType::Bool));
}

}  // namespace
}  // namespace loom
