#pragma once
// The per-ISA float reduction kernels of vec/reduce_kernels.cpp, one copy per instruction set
// (Note [CPU kernels per instruction set] in loom/core/cpu_isa.h): call them as
// `LOOM_ISA_CALL(sum_f32)(p, n)` from namespace loom::cpu. Sums use Note [Cascade sum]
// (vec/reduce_simd.h): float lanes, pairwise blocks in double, the same bits at every ISA
// level; they return the double total (round it once, where the caller is done).

#include <cstdint>

#include "loom/core/cpu_isa.h"

namespace loom::cpu {
LOOM_ISA_DECLARE(
    /// Sum of p[0..n) (Note [Cascade sum]); 0 for n == 0.
    double sum_f32(const float* p, int64_t n);
    /// Sum of p[i]^2 (the 2-norm's square), by the same cascade.
    double sum_squares_f32(const float* p, int64_t n);
    /// Sum of (p[i] - mean)^2 (the second pass of a variance), by the same cascade.
    double sum_sq_dev_f32(const float* p, int64_t n, float mean);
    /// out[c] = sum over r < rows of p[r * row_stride + c], for c < cols (a sum over an
    /// outer dim: each column is a lane of the cascade, down the rows).
    void sum_cols_f32(const float* p, int64_t rows, int64_t cols, int64_t row_stride,
                      double* out);
    /// Max / min of p[0..n), n >= 1; NaN when any element is NaN.
    float max_f32(const float* p, int64_t n);
    float min_f32(const float* p, int64_t n);
    /// Index of the first max / min of p[0..n), n >= 1, a NaN counting as the extreme (its
    /// first index wins); *value receives the element.
    int64_t argmax_f32(const float* p, int64_t n, float* value);
    int64_t argmin_f32(const float* p, int64_t n, float* value);)
}  // namespace loom::cpu
