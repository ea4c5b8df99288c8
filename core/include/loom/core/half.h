#pragma once
/// @file
/// Bit-exact conversions between float and the 16-bit float formats
/// (IEEE binary16 "float16" and bfloat16), round-to-nearest-even.

#include <bit>
#include <cstdint>

namespace loom {

/// float16 bits -> float.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    // Subnormal: normalise.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    mant &= 0x3ff;
    return std::bit_cast<float>(sign | uint32_t(127 - 15 - e) << 23 | mant << 13);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | mant << 13);
  return std::bit_cast<float>(sign | (exp + 127 - 15) << 23 | mant << 13);
}

/// float -> float16 bits (round to nearest even; overflow gives inf; NaN stays NaN).
inline uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0);
  if (absx >= 0x477ff000u) return sign | 0x7c00;               // rounds to >= 65520: inf
  if (absx < 0x38800000u) {                                    // result is subnormal or zero
    const float v = std::bit_cast<float>(absx) * 16777216.0f;  // * 2^24: exact units of 2^-24
    return sign | static_cast<uint16_t>(__builtin_rintf(v));
  }
  const uint32_t rounded = absx + 0xfff + ((absx >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

/// bfloat16 bits -> float.
inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

/// float -> bfloat16 bits (round to nearest even; NaN stays NaN).
inline uint16_t float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

}  // namespace loom
