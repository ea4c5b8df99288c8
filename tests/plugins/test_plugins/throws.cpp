// Test plugin `throws`: two blocks register two ops (and a kernel), then a third block
// throws. Everything must be rolled back, device type excepted (types are permanent).

#include <stdexcept>

#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("throws", "1.0", "test plugin: throws from its third registration block");

LOOM_LIBRARY(throwns, m) {
  m.def("first(Tensor x) -> Tensor");
  m.def("second(Tensor x) -> Tensor");
}

LOOM_LIBRARY_IMPL(throwns, CPU, m) {
  m.impl("first", [](const loom::Tensor& x) { return x; });
}

LOOM_LIBRARY_FRAGMENT(throwns, m) { throw std::runtime_error("deliberate failure in block 3"); }
