// The core operator pack: its manifest and its namespace.
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("ops_core", LOOM_VERSION_STRING, "core operators: reference CPU kernels");

// The pack owns namespace aten; each family adds its schemas from schemas/<family>.cpp
// with LOOM_LIBRARY_FRAGMENT(aten, m).
LOOM_LIBRARY(aten, m) {}
