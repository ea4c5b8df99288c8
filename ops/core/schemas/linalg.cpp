// Schemas of the linear-algebra ops, in PyTorch's spelling (native_functions.yaml).
#include "loom/dispatcher/library.h"

LOOM_LIBRARY_FRAGMENT(aten, m) {
  m.def("mm(Tensor self, Tensor mat2) -> Tensor");
  m.def("mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bmm(Tensor self, Tensor mat2) -> Tensor");
  m.def("bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("matmul(Tensor self, Tensor other) -> Tensor");
  m.def("mv(Tensor self, Tensor vec) -> Tensor");
  m.def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor");
  m.def(
      "addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, "
      "Tensor(a!) out) -> Tensor(a!)");
  m.def(
      "addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor");
  m.def(
      "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor");
  m.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
  m.def("dot(Tensor self, Tensor tensor) -> Tensor");
  m.def("outer(Tensor self, Tensor vec2) -> Tensor");
  m.def("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor");
}
