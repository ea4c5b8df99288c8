#pragma once
// The pointwise engine's per-ISA loops (vec/pointwise_kernels.cpp, compiled once per
// instruction set; Note [CPU kernels per instruction set] in loom/core/cpu_isa.h): float32 and
// float64 arithmetic, relu, threshold_backward and fill over flat, contiguous operands. The
// caller (binary.cpp, activation.cpp, fill.cpp) has already run TensorIterator::build() and
// hands each thread its range (Note [Per-ISA fast path] in cpu/tensor_iterator.h).
//
// This header is read by the per-ISA file too, so its ISA-independent part (the enum) holds no
// inline function; the declarations follow only outside the per-ISA files.

#include <cstdint>

namespace loom::cpu {

/// The binary formulas of binary_f32/binary_f64.
enum class BinaryKernel : int {
  add,  ///< out = a + alpha * b (sub: alpha negated; exactly a + b when alpha is 1)
  mul,  ///< out = a * b
  div,  ///< out = a / b (true division)
};

/// The unary formulas of unary_f32/unary_f64.
enum class UnaryKernel : int {
  relu,     ///< out = x > 0 or x is NaN ? x : +0
  sigmoid,  ///< out = 1 / (1 + exp(-x)) (float32 only: the vector exp is float)
  silu,     ///< out = x / (1 + exp(-x)) (float32 only)
};

}  // namespace loom::cpu

#if !defined(LOOM_ISA_NAMESPACE)
#include "loom/core/cpu_isa.h"

namespace loom::cpu {
// In every function: n elements from pointers already offset to the range's start; stream
// selects non-temporal stores (Note [Streaming stores]); b_scalar says b points at one value
// that every element uses.
LOOM_ISA_DECLARE(
    void binary_f32(BinaryKernel k, float* out, const float* a, const float* b, bool b_scalar,
                    float alpha, int64_t n, bool stream);
    void binary_f64(BinaryKernel k, double* out, const double* a, const double* b, bool b_scalar,
                    double alpha, int64_t n, bool stream);
    void unary_f32(UnaryKernel k, float* out, const float* x, int64_t n, bool stream);
    void unary_f64(UnaryKernel k, double* out, const double* x, int64_t n, bool stream);
    void threshold_backward_f32(float* out, const float* grad, const float* x, float threshold,
                                int64_t n, bool stream);
    void threshold_backward_f64(double* out, const double* grad, const double* x,
                                double threshold, int64_t n, bool stream);
    void fill_bits(void* out, uint64_t bits, int elem_size, int64_t n, bool stream);
    void copy_bytes(void* out, const void* in, int64_t bytes, bool stream);)
}  // namespace loom::cpu
#endif
