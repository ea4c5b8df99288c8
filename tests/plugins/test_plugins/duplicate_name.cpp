// Test plugin `duplicate_name`: a second file whose manifest calls itself "good_ops".
// Refused while the real good_ops is loaded; the search-order test also uses a copy of
// it, named libloom_good_ops.so, as a look-alike that a search must find first.

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("good_ops", "9.9.9-duplicate", "test plugin: a second good_ops");

LOOM_LIBRARY(dupns, m) { m.def("marker(Tensor x) -> Tensor"); }
