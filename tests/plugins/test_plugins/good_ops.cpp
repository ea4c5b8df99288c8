// Test plugin `good_ops`: defines testns::twice with a CPU kernel for float32.
// Everything the loader tests need from a well-behaved plugin, and nothing else.

#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin.h"

#ifndef GOOD_OPS_VERSION
#define GOOD_OPS_VERSION "1.2.3"
#endif

LOOM_PLUGIN("good_ops", GOOD_OPS_VERSION, "test plugin: testns::twice on CPU");

namespace {

loom::Tensor twice_cpu(const loom::Tensor& x) {
  LOOM_CHECK_T(loom::TypeError, x.dtype() == loom::DType::Float32,
               "testns::twice (good_ops): expected a float32 tensor, got ", x.describe());
  loom::Tensor out = loom::Tensor::empty(x.sizes(), loom::TensorOptions{}.with(x.device()));
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = 2.f * in[i];
  return out;
}

}  // namespace

LOOM_LIBRARY(testns, m) { m.def("twice(Tensor x) -> Tensor"); }

LOOM_LIBRARY_IMPL(testns, CPU, m) { m.impl("twice", &twice_cpu); }
