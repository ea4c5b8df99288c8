// Test plugin `missing_dep`: depends on a plugin that exists nowhere. Its op must never
// be defined.

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("missing_dep", "1.0", "test plugin: depends on no_such_plugin", "no_such_plugin");

LOOM_LIBRARY(missingns, m) { m.def("orphan(Tensor x) -> Tensor"); }
