#pragma once
// The per-ISA softmax kernels of vec/softmax_kernels.cpp (Note [CPU kernels per instruction
// set] in loom/core/cpu_isa.h): call them as `LOOM_ISA_CALL(softmax_line_f32)(x, y, n)` from
// namespace loom::cpu. A line is n contiguous floats; sums are Note [Cascade sum]
// (vec/reduce_simd.h), exp is within about 1 ulp over the whole float range.

#include <cstdint>

#include "loom/core/cpu_isa.h"

namespace loom::cpu {
LOOM_ISA_DECLARE(
    /// y[i] = exp(x[i]) for i < n (y may be x).
    void exp_f32(const float* x, float* y, int64_t n);
    /// y = softmax(x) over one line: exp(x - max) / sum; NaN anywhere makes the line NaN.
    void softmax_line_f32(const float* x, float* y, int64_t n);
    /// y = log_softmax(x) over one line: (x - max) - log(sum(exp(x - max))).
    void log_softmax_line_f32(const float* x, float* y, int64_t n);
    /// r = y * (g - sum(g * y)), softmax's backward from its output y.
    void softmax_backward_line_f32(const float* g, const float* y, float* r, int64_t n);
    /// r = g - exp(y) * sum(g), log_softmax's backward from its output y.
    void log_softmax_backward_line_f32(const float* g, const float* y, float* r, int64_t n);
    /// Softmax of w (<= 64) neighbouring lines that run down a middle dim: element j of
    /// line c at x[j * stride + c], for j < len (dim 1 of a contiguous NCHW tensor).
    void softmax_cols_f32(const float* x, float* y, int64_t len, int64_t stride, int64_t w);
    /// log_softmax of w (<= 64) neighbouring lines, as softmax_cols_f32.
    void log_softmax_cols_f32(const float* x, float* y, int64_t len, int64_t stride, int64_t w);
    /// Sum of exp(x[i] - shift) for i < n (logsumexp's rows), by the cascade.
    double sum_exp_f32(const float* x, int64_t n, float shift);)
}  // namespace loom::cpu
