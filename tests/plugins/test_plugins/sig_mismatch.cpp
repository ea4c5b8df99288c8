// Test plugin `sig_mismatch`: the kernel takes a double where its schema says int. The
// check happens at registration, so the plugin is refused and its def rolled back.

#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("sig_mismatch", "1.0", "test plugin: kernel signature does not fit its schema");

LOOM_LIBRARY(signs, m) { m.def("repeat(Tensor x, int times) -> Tensor"); }

LOOM_LIBRARY_IMPL(signs, CPU, m) {
  m.impl("repeat", [](const loom::Tensor& x, double times) { return x; });
}
