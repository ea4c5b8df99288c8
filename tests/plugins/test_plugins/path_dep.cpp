// Test plugin `path_dep`: names a dependency by file instead of by plugin name, which
// would bypass the name checks and the unload-order protection.

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("path_dep", "1.0", "test plugin: a dependency given as a path", "libloom_good_ops.so");

LOOM_LIBRARY(pathdepns, m) { m.def("orphan(Tensor x) -> Tensor"); }
