#pragma once
// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw ("Parallel
// random numbers: as easy as 1, 2, 3", SC 2011), which cuRAND and PyTorch's CUDA kernels also
// use. Block b of a stream keyed by a 64-bit seed is a pure function of (seed, b), so any
// thread can make any part of the stream: a kernel that draws one seed from a Generator and
// fills its elements from blocks 0, 1, 2, ... in parallel gives the same numbers for every
// thread count (Note [Counter-based draws] in ops/nn/cpu/dropout.cpp).
#include <cstdint>

namespace loom::ops::cpu {

/// The words of blocks first .. first + 15 of the Philox4x32-10 stream keyed by seed, block
/// by block (words[4 * j + l] is word l of block first + j). The sixteen blocks are computed
/// side by side, a loop the compiler vectorises.
inline void philox4x32_16(uint64_t seed, uint64_t first, uint32_t (&words)[64]) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // the round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // the key schedule's steps
  uint32_t c0[16], c1[16], c2[16], c3[16];
  for (int j = 0; j < 16; ++j) {
    const uint64_t block = first + static_cast<uint64_t>(j);
    c0[j] = static_cast<uint32_t>(block);
    c1[j] = static_cast<uint32_t>(block >> 32);
    c2[j] = 0;
    c3[j] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    for (int j = 0; j < 16; ++j) {
      const uint64_t p0 = static_cast<uint64_t>(kMul0) * c0[j];
      const uint64_t p1 = static_cast<uint64_t>(kMul1) * c2[j];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[j] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[j] ^ k1;
      c1[j] = static_cast<uint32_t>(p1);
      c3[j] = static_cast<uint32_t>(p0);
      c0[j] = n0;
      c2[j] = n2;
    }
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  for (int j = 0; j < 16; ++j) {
    words[4 * j] = c0[j];
    words[4 * j + 1] = c1[j];
    words[4 * j + 2] = c2[j];
    words[4 * j + 3] = c3[j];
  }
}

}  // namespace loom::ops::cpu
