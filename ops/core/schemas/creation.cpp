// Schemas of the creation ops, in PyTorch's spelling (native_functions.yaml). Factories
// without a tensor argument run on the CPU unless `device` names another backend
// (Note [Factory dispatch] in kernel_traits.h).
#include "loom/dispatcher/library.h"

#define LOOM_TENSOR_OPTIONS \
  "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"
#define LOOM_LONG_OPTIONS \
  "ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None"
#define LOOM_LIKE_OPTIONS LOOM_TENSOR_OPTIONS ", MemoryFormat? memory_format=None"

LOOM_LIBRARY_FRAGMENT(aten, m) {
  m.def("empty.memory_format(SymInt[] size, *, " LOOM_LIKE_OPTIONS ") -> Tensor");
  m.def("zeros(SymInt[] size, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("ones(SymInt[] size, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("full(SymInt[] size, Scalar fill_value, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("arange(Scalar end, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("arange.start(Scalar start, Scalar end, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, " LOOM_TENSOR_OPTIONS
        ") -> Tensor");
  m.def("linspace(Scalar start, Scalar end, int steps, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("eye(SymInt n, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("eye.m(SymInt n, SymInt m, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("rand(SymInt[] size, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("rand.generator(SymInt[] size, *, Generator? generator, " LOOM_TENSOR_OPTIONS
        ") -> Tensor");
  m.def("randn(SymInt[] size, *, " LOOM_TENSOR_OPTIONS ") -> Tensor");
  m.def("randn.generator(SymInt[] size, *, Generator? generator, " LOOM_TENSOR_OPTIONS
        ") -> Tensor");
  m.def("randint(SymInt high, SymInt[] size, *, " LOOM_LONG_OPTIONS ") -> Tensor");
  m.def("randint.generator(SymInt high, SymInt[] size, *, Generator? generator, " LOOM_LONG_OPTIONS
        ") -> Tensor");
  m.def("randint.low(SymInt low, SymInt high, SymInt[] size, *, " LOOM_LONG_OPTIONS ") -> Tensor");
  m.def(
      "randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, "
      "Generator? generator, " LOOM_LONG_OPTIONS ") -> Tensor");
  m.def("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor");
  m.def("bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor");
  m.def("empty_like(Tensor self, *, " LOOM_LIKE_OPTIONS ") -> Tensor");
  m.def("zeros_like(Tensor self, *, " LOOM_LIKE_OPTIONS ") -> Tensor");
  m.def("ones_like(Tensor self, *, " LOOM_LIKE_OPTIONS ") -> Tensor");
  m.def("full_like(Tensor self, Scalar fill_value, *, " LOOM_LIKE_OPTIONS ") -> Tensor");
  m.def("rand_like(Tensor self, *, " LOOM_LIKE_OPTIONS ") -> Tensor");
  m.def("randn_like(Tensor self, *, " LOOM_LIKE_OPTIONS ") -> Tensor");
  m.def("randint_like(Tensor self, SymInt high, *, " LOOM_LIKE_OPTIONS ") -> Tensor");
  m.def("randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, " LOOM_LIKE_OPTIONS
        ") -> Tensor");
}

#undef LOOM_TENSOR_OPTIONS
#undef LOOM_LONG_OPTIONS
#undef LOOM_LIKE_OPTIONS
