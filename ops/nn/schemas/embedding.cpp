// Schemas of the embedding lookup and its backward ops, in PyTorch's spelling
// (native_functions.yaml).
#include "loom/dispatcher/library.h"

// One schema a line, exactly as PyTorch spells it, so each op greps.
// clang-format off
LOOM_LIBRARY_FRAGMENT(aten, m) {
  m.def("embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor");
  m.def("embedding_backward(Tensor grad, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq, bool sparse) -> Tensor");
  m.def("embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor");
}
// clang-format on
