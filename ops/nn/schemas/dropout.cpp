// Schemas of the dropout family, in PyTorch's spelling (native_functions.yaml).
// native_dropout and native_dropout_backward are what a backend provides; dropout,
// feature_dropout and the alpha forms are composites over the random and pointwise ops.
#include "loom/dispatcher/library.h"

// One schema a line, exactly as PyTorch spells it, so each op greps.
// clang-format off
LOOM_LIBRARY_FRAGMENT(aten, m) {
  m.def("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)");
  m.def("native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor");
  m.def("dropout(Tensor input, float p, bool train) -> Tensor");
  m.def("feature_dropout(Tensor input, float p, bool train) -> Tensor");
  m.def("alpha_dropout(Tensor input, float p, bool train) -> Tensor");
  m.def("feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor");
}
// clang-format on
