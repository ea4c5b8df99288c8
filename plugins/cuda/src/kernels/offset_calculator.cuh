#pragma once
// OffsetCalculator: an output linear index to each operand's element offset (Note [CUDA kernel
// geometry] in kernel_api.h). Index is uint32_t (the fast path: every index and offset fits in
// int32, checked by fits_32bit) or uint64_t; offsets are the signed type of the same width.
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_api.h"

namespace loom::cuda::kernels {

template <int N, typename Index>
struct OffsetCalculator {
  using Offset = std::make_signed_t<Index>;
  int ndim;
  Index sizes[kMaxDims];
  Offset strides[N][kMaxDims];

  /// From a geometry's first N operands.
  explicit OffsetCalculator(const Geometry& g) : ndim(g.ndim) {
    for (int d = 0; d < kMaxDims; ++d) {
      sizes[d] = d < g.ndim ? static_cast<Index>(g.sizes[d]) : Index(1);
      for (int k = 0; k < N; ++k)
        strides[k][d] = d < g.ndim ? static_cast<Offset>(g.strides[k][d]) : 0;
    }
  }

  /// The offsets (in elements) of linear output index `linear` in each operand.
  __device__ __forceinline__ void get(Index linear, Offset (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == ndim) break;
      const Index q = linear / sizes[d];
      const Offset r = static_cast<Offset>(linear - q * sizes[d]);
      linear = q;
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += r * strides[k][d];
    }
  }
};

/// True when numel and every operand's reachable offsets (either sign) fit in int32.
inline bool fits_32bit(const Geometry& g, int nops, int64_t numel) {
  constexpr int64_t kMax = INT32_MAX;
  if (numel > kMax) return false;
  for (int k = 0; k < nops; ++k) {
    int64_t reach = 0;
    for (int d = 0; d < g.ndim; ++d) {
      const int64_t s = g.strides[k][d] < 0 ? -g.strides[k][d] : g.strides[k][d];
      reach += s * (g.sizes[d] - 1);
      if (reach > kMax) return false;
    }
  }
  return true;
}

}  // namespace loom::cuda::kernels
