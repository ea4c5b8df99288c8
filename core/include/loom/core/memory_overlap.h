#pragma once
/// @file
/// Memory overlap between the tensors of one call, shared by every backend: an op that writes
/// into a tensor (in-place, out=, copy_) must not read an input whose elements partly share
/// memory with it, and must not write a tensor several of whose elements are one location,
/// or the result depends on the order of the loop (Note [Memory overlap]).
///
/// Note [Memory overlap]: PyTorch's rule, with one refinement. Two tensors are compared by
/// the bytes of their storage they can touch:
/// - No: different storages, no elements, or byte ranges that do not intersect;
/// - Full: the same elements in the same order (same start, size and strides): an elementwise
///   op reads each element before it writes it, so `x.mul_(x)` is fine;
/// - Partial: both dense (every byte of their range is an element), ranges intersecting,
///   not Full (`x[1:].mul_(x[:-1])`, `x.copy_(x.t())`): refused with PyTorch's message;
/// - TooHard: ranges intersecting, one of them not dense (interleaved columns of a matrix,
///   an expanded input): whether an element is shared is not decided. PyTorch lets such calls
///   run, and they may give wrong values; Loom's elementwise engines read such an input from
///   a copy instead, so the answer is right whether or not elements are shared.
/// Ops that write at positions given by other tensors (index_add_, scatter_, index_put_,
/// masked_scatter_) read any input that shares their output's storage from a copy (PyTorch
/// raises there), so they are right in every case; the matmul family computes into a
/// temporary when out shares memory with an input.
/// A written-to tensor with a broadcast (stride 0) dim of size > 1 has internal overlap and
/// is refused (but for fill_, which writes one value).

#include <cstdint>
#include <string_view>

#include "loom/core/tensor.h"

namespace loom {

/// Whether a tensor's elements share memory among themselves.
enum class MemOverlap {
  No,       ///< every element has its own bytes (non-overlapping and dense, or provably so)
  Yes,      ///< a dim of size > 1 has stride 0
  TooHard,  ///< not decided (a general strided layout)
};

/// How the elements of two tensors share memory (Note [Memory overlap]).
enum class MemOverlapStatus {
  No,       ///< no byte in common
  Full,     ///< the same elements in the same order
  Partial,  ///< both dense, some bytes in common, not Full
  TooHard,  ///< byte ranges intersect, one of them is not dense
};

/// True if t's elements, in some order of its dims, cover a contiguous range exactly once
/// (PyTorch's is_non_overlapping_and_dense).
bool is_non_overlapping_and_dense(const Tensor& t);

/// Whether t's elements share memory among themselves.
MemOverlap has_internal_overlap(const Tensor& t);

/// How a's and b's elements share memory.
MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b);

/// Throws ValueError naming op if t (a written-to tensor) has internal overlap (MemOverlap::Yes):
/// "op: unsupported operation: more than one element of the written-to tensor refers to a
/// single memory location. Please clone() the tensor before performing the operation."
void assert_no_internal_overlap(std::string_view op, const Tensor& t);

/// Note [Memory overlap]: checks one input of a call that writes `written`. Throws ValueError
/// naming op and both tensors for a partial overlap, and for a full one unless allow_full
/// (elementwise ops, which read each element before writing it). Returns true when the input
/// must be read from a copy (an undecided overlap), false when it can be read in place.
bool check_input_overlap(std::string_view op, const Tensor& written, std::string_view input_name,
                         const Tensor& input, bool allow_full);

/// PyTorch's assert_no_partial_overlap: check_input_overlap with allow_full, ignoring the
/// undecided case.
inline void assert_no_partial_overlap(std::string_view op, const Tensor& written,
                                      std::string_view input_name, const Tensor& input) {
  (void)check_input_overlap(op, written, input_name, input, /*allow_full=*/true);
}

/// PyTorch's assert_no_overlap: check_input_overlap without allow_full, ignoring the
/// undecided case.
inline void assert_no_overlap(std::string_view op, const Tensor& written,
                              std::string_view input_name, const Tensor& input) {
  (void)check_input_overlap(op, written, input_name, input, /*allow_full=*/false);
}

}  // namespace loom
