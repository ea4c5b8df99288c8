// Schemas of the padding ops and their backward ops, in PyTorch's spelling
// (native_functions.yaml). pad is the composite users call (F.pad); it picks
// constant_pad_nd or a reflection / replication / circular op by mode and rank.
#include "loom/dispatcher/library.h"

// One schema a line, exactly as PyTorch spells it, so each op greps.
// clang-format off
LOOM_LIBRARY_FRAGMENT(aten, m) {
  m.def("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor");
  m.def("reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor");
  m.def("reflection_pad1d_backward(Tensor grad_output, Tensor self, SymInt[2] padding) -> Tensor");
  m.def("reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor");
  m.def("reflection_pad2d_backward(Tensor grad_output, Tensor self, SymInt[4] padding) -> Tensor");
  m.def("reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor");
  m.def("reflection_pad3d_backward(Tensor grad_output, Tensor self, SymInt[6] padding) -> Tensor");
  m.def("replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor");
  m.def("replication_pad1d_backward(Tensor grad_output, Tensor self, SymInt[2] padding) -> Tensor");
  m.def("replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor");
  m.def("replication_pad2d_backward(Tensor grad_output, Tensor self, SymInt[4] padding) -> Tensor");
  m.def("replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor");
  m.def("replication_pad3d_backward(Tensor grad_output, Tensor self, SymInt[6] padding) -> Tensor");
  m.def("_pad_circular(Tensor self, SymInt[] pad) -> Tensor");
  m.def("pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor");
}
// clang-format on
