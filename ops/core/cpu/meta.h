#pragma once
// The Meta key's kernels are the reference CPU kernels themselves (docs/design/compile.md).
//
// Note [Meta kernels share the reference's setup]
// A meta tensor has sizes, strides and a dtype but no data (Note [Meta tensors] in
// core/src/allocator.cpp). A graph compiler propagates shapes through the Meta key, so every
// op's Meta result must carry exactly the metadata its reference result would. Rather than a
// second copy of each op's shape, dtype and layout rules (which would drift from the first),
// a reference kernel serves both keys: its set-up code (argument checks, broadcasting, type
// promotion, output allocation) runs as on the CPU, allocating its outputs on its inputs'
// device, and only the loops that read or write elements are skipped for meta tensors. The
// engines do that once for every op on them (TensorIterator::for_each, the reduction engine);
// a kernel with a loop of its own tests is_meta() before it. A kernel whose result's shape
// depends on the values (nonzero, masked_select, unique) cannot be a meta kernel: it is not
// registered at Meta, and the dispatcher says so. The op_meta test
// (tests/conformance/op_conformance_test.cpp) runs every op's samples on both keys and
// compares sizes, strides and dtypes.
//
// A family registers its kernels at both keys with LOOM_REFERENCE_KERNELS(aten, m) { ... } in
// place of LOOM_LIBRARY_IMPL(aten, CPU, m) { ... }.

#include "loom/core/tensor.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {

/// Whether t is a meta tensor (no data: the kernel skips its element loops).
inline bool is_meta(const Tensor& t) { return t.defined() && t.device().is_meta(); }

/// Options for a kernel's new output: dtype d on like's device (cpu, or meta).
inline TensorOptions options_like(const Tensor& like, DType d) {
  return TensorOptions{}.with(d).with(like.device());
}

}  // namespace loom::ops::cpu

/// Registers the block's kernels at the CPU key and, unchanged, at the Meta key (Note [Meta
/// kernels share the reference's setup]).
#define LOOM_REFERENCE_KERNELS(ns, m) \
  LOOM_REFERENCE_KERNELS_(ns, m, LOOM_CONCAT(loom_reference_kernels_, __COUNTER__))
/// @cond INTERNAL
#define LOOM_REFERENCE_KERNELS_(ns, m, uid)                      \
  static void LOOM_CONCAT(uid, _body)(::loom::Library&);         \
  LOOM_LIBRARY_IMPL(ns, CPU, m) { LOOM_CONCAT(uid, _body)(m); }  \
  LOOM_LIBRARY_IMPL(ns, Meta, m) { LOOM_CONCAT(uid, _body)(m); } \
  static void LOOM_CONCAT(uid, _body)(::loom::Library & m)
/// @endcond
