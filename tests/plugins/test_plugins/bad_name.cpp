// Test plugin `bad_name`: its manifest name has spaces, which no search could find.

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("bad name with spaces", "1.0", "test plugin: invalid manifest name");

LOOM_LIBRARY(badnamens, m) { m.def("never(Tensor x) -> Tensor"); }
