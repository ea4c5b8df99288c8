#pragma once
/// @file
/// Which SIMD instruction set the CPU kernels run with, chosen once at run time.
///
/// Note [CPU kernels per instruction set]
/// A hot CPU loop is written once, in a file compiled three times (cmake/LoomIsa.cmake's
/// `loom_add_isa_sources`): for the x86-64 baseline (SSE2), for AVX2+FMA and for AVX-512
/// (F/BW/VL/DQ, 512-bit vectors preferred). Each copy lives in its own namespace
/// (`LOOM_ISA_NAMESPACE`: `isa_default`, `isa_avx2`, `isa_avx512`) and the caller picks one
/// with `loom::cpu::isa()`, the best level this CPU runs and the user allows. This is
/// PyTorch's DispatchStub idea (ATEN_CPU_CAPABILITY) without the stub registry: a switch at
/// the call site is one predictable branch and keeps the choice readable.
///
/// The rule that makes this safe: a per-ISA file holds only plain loops over raw pointers and
/// includes nothing with inline functions of its own (no loom headers, no std containers);
/// everything it defines is inside LOOM_ISA_NAMESPACE. Otherwise the linker may keep an
/// AVX-512 copy of some shared inline function and a baseline CPU would run it (SIGILL).
///
/// `LOOM_CPU_ISA=default|avx2|avx512` caps the level (as ATEN_CPU_CAPABILITY does); the tests
/// run each path against the float64 oracle that way.

namespace loom::cpu {

/// An instruction-set level, in increasing order.
enum class Isa { baseline = 0, avx2 = 1, avx512 = 2 };

/// The level the kernels use: the best this CPU supports (cpuid and the OS's saved vector
/// state), capped by LOOM_CPU_ISA when set. Read once; one relaxed load after that.
Isa isa();
/// Caps the level from code (tests; wins over the environment). An unsupported level is
/// lowered to the best supported one. Returns the level now in force.
Isa set_isa(Isa cap);
/// The best level this CPU supports, ignoring any cap.
Isa supported_isa();
/// "default", "avx2" or "avx512" (the names LOOM_CPU_ISA takes).
const char* isa_name(Isa level);

}  // namespace loom::cpu

/// Declares the same functions in each per-ISA namespace, for callers of a per-ISA file:
/// `namespace loom::cpu { LOOM_ISA_DECLARE(double sum_f32(const float*, int64_t);) }`.
/// LOOM_ISA_ALL_LEVELS is defined (by loom_add_isa_sources) where all three copies are built.
#if defined(LOOM_ISA_ALL_LEVELS)
#define LOOM_ISA_DECLARE(...)        \
  namespace isa_default {            \
  __VA_ARGS__                        \
  }                                  \
  namespace isa_avx2 {               \
  __VA_ARGS__                        \
  }                                  \
  namespace isa_avx512 {             \
  __VA_ARGS__                        \
  }
/// The copy of function fn (declared with LOOM_ISA_DECLARE in loom::cpu) for loom::cpu::isa(),
/// as a function pointer: `LOOM_ISA_CALL(sum_f32)(data, n)`. Use inside namespace loom::cpu
/// or qualify fn's namespace.
#define LOOM_ISA_CALL(fn)                                                   \
  (::loom::cpu::isa() == ::loom::cpu::Isa::avx512 ? &::loom::cpu::isa_avx512::fn \
   : ::loom::cpu::isa() == ::loom::cpu::Isa::avx2 ? &::loom::cpu::isa_avx2::fn   \
                                                  : &::loom::cpu::isa_default::fn)
#else
#define LOOM_ISA_DECLARE(...) \
  namespace isa_default {     \
  __VA_ARGS__                 \
  }
/// Without the per-ISA copies: the baseline copy of fn.
#define LOOM_ISA_CALL(fn) (&::loom::cpu::isa_default::fn)
#endif
