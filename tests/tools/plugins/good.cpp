// A well-behaved plugin for the `loom plugin check` tests: one op, one CPU kernel.
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("tools_test_good", "1.2.3", "defines tools_test::twice for the loom CLI tests");

LOOM_LIBRARY(tools_test, m) { m.def("twice(Tensor self) -> Tensor"); }

LOOM_LIBRARY_IMPL(tools_test, CPU, m) {
  m.impl("twice", [](const loom::Tensor& self) { return self; });
}
