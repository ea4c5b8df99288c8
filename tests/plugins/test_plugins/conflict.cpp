// Test plugin `conflict`: defines an op of its own, then testns::twice again, which
// good_ops already defines. The second def fails, and the first must be rolled back.

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("conflict", "1.0", "test plugin: redefines testns::twice");

LOOM_LIBRARY(conflictns, m) { m.def("innocent(Tensor x) -> Tensor"); }

LOOM_LIBRARY_FRAGMENT(testns, m) { m.def("twice(Tensor x) -> Tensor"); }
