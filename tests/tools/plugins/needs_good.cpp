// Depends on tools_test_good, which the loader must find on the search path and load first.
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("tools_test_needs_good", "0.1", "adds a Meta kernel to tools_test::twice",
            "tools_test_good");

LOOM_LIBRARY_IMPL(tools_test, Meta, m) {
  m.impl("twice", [](const loom::Tensor& self) { return self; });
}
