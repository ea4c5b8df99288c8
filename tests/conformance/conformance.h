#pragma once
// The conformance harness (docs/design/conformance.md): every registered op, run on sample
// inputs in every floating dtype and layout, against a float64 oracle; and every backend
// (a provider at the CPU key, or another device) against the reference backend.
//
// A backend joins with one line in backends.cpp:
//   LOOM_CONFORMANCE_BACKEND({.name = "onednn", .plugin = "cpu_onednn", .provider = "onednn"});

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/ivalue.h"

namespace loom::conformance {

/// A backend under test: a provider of kernels at a dispatch key, from a plugin.
struct Backend {
  std::string name;                    ///< shown in test names ("reference", "onednn", "cuda")
  std::string plugin;                  ///< plugin to load first ("" for none)
  std::string provider;                ///< provider name of its kernels
  DispatchKey key = DispatchKey::CPU;  ///< the key its kernels are registered at
  std::string device = "cpu";          ///< where its inputs live
  double tolerance_scale = 1;          ///< its tolerances, as a multiple of the dtype's
};

/// Registers a backend; returns true (for static registration).
bool register_backend(Backend b);
/// Every registered backend.
const std::vector<Backend>& backends();

#define LOOM_CONFORMANCE_CONCAT_(a, b) a##b
#define LOOM_CONFORMANCE_CONCAT(a, b) LOOM_CONFORMANCE_CONCAT_(a, b)
/// Registers a backend: `LOOM_CONFORMANCE_BACKEND({.name = ..., .plugin = ..., ...});`
#define LOOM_CONFORMANCE_BACKEND(...)                                              \
  [[maybe_unused]] static const bool LOOM_CONFORMANCE_CONCAT(backend_, __LINE__) = \
      ::loom::conformance::register_backend(::loom::conformance::Backend __VA_ARGS__)

/// Tolerance of a comparison: |got - want| <= atol + rtol * |want|.
struct Tolerance {
  double rtol;
  double atol;
};
/// The documented tolerance of a result computed in dtype t against the float64 oracle.
Tolerance tolerance_for(DType t);

/// How a sample lays its tensors out.
enum class Layout {
  Contiguous,     ///< fresh row-major tensors
  NonContiguous,  ///< the same values in transposed storage (every tensor with 2+ dims)
};

/// One call of an op: arguments in schema order (trailing defaults may be left out). Tensor
/// arguments hold float64 values; the harness converts them per dtype and layout.
struct Sample {
  std::string label;         ///< "[3, 4] x [4]"
  std::vector<IValue> args;  ///< the arguments
};

/// Why an op has no samples (empty: it has some).
struct Samples {
  std::vector<Sample> samples;
  std::string skip_reason;
};

/// Samples for op: from the explicit table (samples.cpp) when it has an entry, else made
/// from the schema (tensors of several shapes incl. broadcast, zero-size and 0-d; dims;
/// scalars). The reason says why an op gets none (random, factory, in-place, ...).
Samples samples_for(const OperatorHandle& op);

/// samples plus, for the gradient checks, variants whose other argument values take another
/// path in a formula: reduction none (0) and sum (2) besides the samples' mean (the losses),
/// and keepdim=true besides false (the reductions).
std::vector<Sample> with_variants(const OperatorHandle& op, std::vector<Sample> samples);

}  // namespace loom::conformance
