// Schemas of the pointwise ops, in PyTorch's spelling (native_functions.yaml).
#include "loom/dispatcher/library.h"

LOOM_LIBRARY_FRAGMENT(aten, m) {
  m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("mul.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)");
}
