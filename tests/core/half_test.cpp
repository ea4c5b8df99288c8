// Tests for core/include/loom/core/half.h: bit-exact float16/bfloat16 conversions with
// round-to-nearest-even, checked exhaustively over all 65536 16-bit patterns.

#include "loom/core/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace loom {
namespace {

float bits_to_float(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t float_to_bits(float f) { return std::bit_cast<uint32_t>(f); }

bool is_half_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0; }
bool is_bf16_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x007f) != 0; }

// ---------------------------------------------------------------- float16

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(half_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x3555), 0x1.554p-2f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);         // largest finite
  EXPECT_EQ(half_to_float(0x0400), 0x1p-14f);         // smallest normal
  EXPECT_EQ(half_to_float(0x0001), 0x1p-24f);         // smallest subnormal
  EXPECT_EQ(half_to_float(0x03ff), 1023 * 0x1p-24f);  // largest subnormal
  EXPECT_EQ(half_to_float(0x8001), -0x1p-24f);
  EXPECT_EQ(half_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_to_float(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7c01)));
  EXPECT_TRUE(std::signbit(half_to_float(0xfe00)));

  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_half(1e10f), 0x7c00);  // overflow gives inf
  EXPECT_EQ(float_to_half(-1e10f), 0xfc00);
  EXPECT_EQ(float_to_half(1e-10f), 0x0000);  // underflow gives zero with the sign
  EXPECT_EQ(float_to_half(-1e-10f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(HalfTest, DecodeIsExactForAllPatterns) {
  // Every float16 value is value = (-1)^s * 2^(e-15) * (1 + m/1024), or 2^-14 * m/1024 when
  // e == 0; both are exact in float and in double.
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (e == 31) {
      if (m == 0) {
        EXPECT_TRUE(std::isinf(f)) << std::hex << h;
      } else {
        EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      }
      EXPECT_EQ(std::signbit(f), s == 1) << std::hex << h;
      continue;
    }
    const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, static_cast<int>(e) - 25);
    const double expected = s ? -mag : mag;
    ASSERT_EQ(static_cast<double>(f), expected) << "half bits 0x" << std::hex << h;
    EXPECT_EQ(std::signbit(f), s == 1) << std::hex << h;
  }
}

TEST(HalfTest, RoundTripsAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const uint16_t back = float_to_half(half_to_float(bits));
    if (is_half_nan(bits)) {
      EXPECT_TRUE(is_half_nan(back)) << std::hex << h << " -> " << back;
      EXPECT_EQ(back & 0x8000, bits & 0x8000) << std::hex << h;
    } else {
      ASSERT_EQ(back, bits) << "half bits 0x" << std::hex << h;
    }
  }
}

// Between any two neighbouring finite float16 values (subnormals included), the exact
// midpoint rounds to the one with an even mantissa, and one float ulp either side of it
// rounds to the nearer one.
TEST(HalfTest, RoundsToNearestEvenBetweenAllNeighbours) {
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      const auto lo = static_cast<uint16_t>(h | sign), hi = static_cast<uint16_t>((h + 1) | sign);
      const float a = half_to_float(lo), b = half_to_float(hi);
      const float mid = (a + b) / 2;  // exact: 12 significant bits
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(a) + b) / 2);
      const uint16_t even = (h & 1) == 0 ? lo : hi;
      ASSERT_EQ(float_to_half(mid), even) << "midpoint of 0x" << std::hex << lo << " and 0x" << hi;
      ASSERT_EQ(float_to_half(std::nextafter(mid, a)), lo) << std::hex << lo;
      ASSERT_EQ(float_to_half(std::nextafter(mid, b)), hi) << std::hex << hi;
    }
  }
}

TEST(HalfTest, OverflowAndUnderflowBoundaries) {
  // 65520 is halfway between 65504 (0x7bff, odd) and 65536 (would be 0x7c00): ties go to inf.
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_half(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::max()), 0x7c00);
  // 2^-25 is halfway between 0 and the smallest subnormal: ties go to 0.
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);
  EXPECT_EQ(float_to_half(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(-0x1p-25f), 0x8000);
  // 3 * 2^-25 is halfway between 0x0001 and 0x0002: ties go to 0x0002.
  EXPECT_EQ(float_to_half(3 * 0x1p-25f), 0x0002);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(float_to_half(1023.5f * 0x1p-24f), 0x0400);
  EXPECT_EQ(float_to_half(std::nextafter(0x1p-14f, 0.0f)), 0x0400);
}

TEST(HalfTest, NanStaysNanForEveryFloatNanPayload) {
  for (uint32_t payload : {0x1u, 0x1fffu, 0x2000u, 0x400000u, 0x7fffffu}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint16_t h = float_to_half(bits_to_float(sign | 0x7f800000u | payload));
      EXPECT_TRUE(is_half_nan(h)) << std::hex << payload << " -> " << h;
      EXPECT_EQ(h & 0x8000, sign >> 16);
    }
  }
}

#ifdef __FLT16_MAX__
// The compiler's _Float16 conversion (IEEE, round to nearest even) as an independent oracle,
// on every 257th float bit pattern (about 16.7 million values) and all halves.
TEST(HalfTest, AgreesWithCompilerFloat16) {
  for (uint32_t h = 0; h < 65536; ++h) {
    if (is_half_nan(static_cast<uint16_t>(h))) continue;
    const auto v = std::bit_cast<_Float16>(static_cast<uint16_t>(h));
    ASSERT_EQ(float_to_bits(half_to_float(static_cast<uint16_t>(h))),
              float_to_bits(static_cast<float>(v)))
        << std::hex << h;
  }
  for (uint64_t x = 0; x <= 0xffffffffu; x += 257) {
    const float f = bits_to_float(static_cast<uint32_t>(x));
    if (std::isnan(f)) continue;
    const auto expected = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(float_to_half(f), expected) << "float bits 0x" << std::hex << x;
  }
}
#endif

// ---------------------------------------------------------------- bfloat16

TEST(BFloat16Test, KnownValues) {
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16_to_float(0xc000), -2.0f);
  EXPECT_EQ(bfloat16_to_float(0x7f7f), 0x1.fep127f);  // largest finite
  EXPECT_EQ(bfloat16_to_float(0x0080), 0x1p-126f);    // smallest normal
  EXPECT_EQ(bfloat16_to_float(0x0001), 0x1p-133f);    // smallest subnormal
  EXPECT_EQ(bfloat16_to_float(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0x7fc0)));
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bfloat16(3.14159265f), 0x4049);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(BFloat16Test, DecodeIsTheUpperHalfOfAFloat) {
  for (uint32_t b = 0; b < 65536; ++b) {
    ASSERT_EQ(float_to_bits(bfloat16_to_float(static_cast<uint16_t>(b))), b << 16);
  }
}

TEST(BFloat16Test, RoundTripsAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const uint16_t back = float_to_bfloat16(bfloat16_to_float(bits));
    if (is_bf16_nan(bits)) {
      EXPECT_TRUE(is_bf16_nan(back)) << std::hex << b << " -> " << back;
      EXPECT_EQ(back & 0x8000, bits & 0x8000);
    } else {
      ASSERT_EQ(back, bits) << "bfloat16 bits 0x" << std::hex << b;
    }
  }
}

TEST(BFloat16Test, RoundsToNearestEvenBetweenAllNeighbours) {
  for (uint32_t b = 0; b < 0x7f80; ++b) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint32_t lo = b | sign, hi = (b + 1) | sign;
      // The float halfway between them, exactly (subnormals and the step to inf included).
      const uint32_t mid = (lo << 16) + 0x8000;
      const uint16_t even = static_cast<uint16_t>((b & 1) == 0 ? lo : hi);
      ASSERT_EQ(float_to_bfloat16(bits_to_float(mid)), even)
          << "midpoint above 0x" << std::hex << lo;
      ASSERT_EQ(float_to_bfloat16(bits_to_float(mid - 1)), lo) << std::hex << lo;
      ASSERT_EQ(float_to_bfloat16(bits_to_float(mid + 1)), hi) << std::hex << lo;
    }
  }
}

TEST(BFloat16Test, NanStaysNanEvenWhenTheUpperHalfLooksInfinite) {
  // 0x7f800001 truncated would be 0x7f80 (inf); it must stay a NaN.
  for (uint32_t payload : {0x1u, 0x7fffu, 0x8000u, 0x10000u, 0x7fffffu}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint16_t b = float_to_bfloat16(bits_to_float(sign | 0x7f800000u | payload));
      EXPECT_TRUE(is_bf16_nan(b)) << std::hex << payload << " -> " << b;
      EXPECT_EQ(b & 0x8000, sign >> 16);
    }
  }
}

}  // namespace
}  // namespace loom
