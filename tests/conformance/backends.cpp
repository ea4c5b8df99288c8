// The backends the conformance harness checks, and the documented tolerances
// (docs/design/conformance.md). A backend joins with one line here.
#include "conformance.h"

namespace loom::conformance {

std::vector<Backend>& registry() {
  static auto* r = new std::vector<Backend>();
  return *r;
}

bool register_backend(Backend b) {
  registry().push_back(std::move(b));
  return true;
}

const std::vector<Backend>& backends() { return registry(); }

Tolerance tolerance_for(DType t) {
  switch (t) {
    case DType::Float64:
      return {1e-10, 1e-12};  // the same math in another order (strided loops, blocking)
    case DType::Float32:
      return {1e-4, 1e-5};  // vectorised exp/log (a few ulp) and float accumulation
    case DType::Float16:
      return {5e-3, 1e-3};  // one float16 rounding of the result, plus a little
    case DType::BFloat16:
      return {3e-2, 1e-2};  // bfloat16 keeps 8 bits of mantissa
    default:
      return {0, 0};
  }
}

// The reference CPU kernels themselves: every layout and dtype against float64.
LOOM_CONFORMANCE_BACKEND({.name = "reference", .plugin = "", .provider = "reference"});

#ifdef LOOM_WITH_ONEDNN
// The oneDNN kernels (plugins/cpu_onednn) on the ops they provide. Float32 only: other dtypes
// are handed to the reference and so match it exactly.
LOOM_CONFORMANCE_BACKEND({.name = "onednn", .plugin = "cpu_onednn", .provider = "onednn"});
#endif

}  // namespace loom::conformance
