// The schemas of the core operator pack, in PyTorch's spelling.
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("ops_core", LOOM_VERSION_STRING, "core operators: reference CPU kernels");

LOOM_LIBRARY(aten, m) {
  m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("mul.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)");
  m.def("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor");
}
