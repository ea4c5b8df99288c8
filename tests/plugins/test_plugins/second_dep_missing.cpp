// Test plugin `second_dep_missing`: its first dependency (good_ops) can be loaded, its
// second cannot. The load fails, and good_ops, loaded only on its behalf, must not stay.

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("second_dep_missing", "1.0", "test plugin: one dependency found, one missing",
            "good_ops", "no_such_plugin");

LOOM_LIBRARY(seconddepns, m) { m.def("orphan(Tensor x) -> Tensor"); }
