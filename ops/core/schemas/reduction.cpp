// Schemas of the reductions, in PyTorch's spelling (native_functions.yaml).
#include "loom/dispatcher/library.h"

LOOM_LIBRARY_FRAGMENT(aten, m) { m.def("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"); }
