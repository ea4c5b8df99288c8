// Schemas of the view and shape ops, in PyTorch's spelling (native_functions.yaml).
// Views carry alias marks (Tensor(a) self -> Tensor(a)): the result shares self's storage.
#include "loom/dispatcher/library.h"

LOOM_LIBRARY_FRAGMENT(aten, m) {
  // views
  m.def("view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
  m.def("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)");
  m.def("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)");
  m.def("unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)");
  m.def("squeeze(Tensor(a) self) -> Tensor(a)");
  m.def("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)");
  m.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
  m.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)");
  m.def("t(Tensor(a) self) -> Tensor(a)");
  m.def("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)");
  m.def("expand_as(Tensor(a) self, Tensor other) -> Tensor(a)");
  m.def("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)");
  m.def(
      "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
      "SymInt step=1) -> Tensor(a)");
  m.def("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)");
  m.def(
      "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
      "-> Tensor(a)");
  m.def("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
  m.def("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]");
  m.def("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
  m.def("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]");
  m.def("view_as(Tensor(a) self, Tensor other) -> Tensor(a)");
  m.def("reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)");
  m.def("movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)");
  m.def("movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)");
  m.def("swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)");
  m.def("swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
  m.def("split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]");
  // in place
  m.def("unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)");
  m.def("squeeze_(Tensor(a!) self) -> Tensor(a!)");
  m.def("squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)");
  m.def("squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)");
  m.def("transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)");
  m.def("t_(Tensor(a!) self) -> Tensor(a!)");
  m.def("tril_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)");
  m.def("triu_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)");
  // copies
  m.def("cat(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("stack(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("concat(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("concatenate(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("tile(Tensor self, SymInt[] dims) -> Tensor");
  m.def("repeat(Tensor self, SymInt[] repeats) -> Tensor");
  m.def("flip(Tensor self, int[] dims) -> Tensor");
  m.def("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor");
  m.def("tril(Tensor self, int diagonal=0) -> Tensor");
  m.def("triu(Tensor self, int diagonal=0) -> Tensor");
}
