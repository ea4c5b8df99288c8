// Test plugin `adopt_memory`: adoptns::make returns a tensor over malloc'ed memory whose
// deleter is code in this plugin. Such a tensor may outlive the plugin's unload, which is
// why unloading keeps the file mapped (Note [Unload keeps code mapped]).

#include <cstdlib>

#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("adopt_memory", "1.0", "test plugin: tensors whose deleter lives in the plugin");

namespace {

void free_adopted(void*, void* data) { std::free(data); }

loom::Tensor make(int64_t n) {
  void* p = std::malloc(static_cast<size_t>(n) * sizeof(float));
  auto* f = static_cast<float*>(p);
  for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(i);
  const size_t nbytes = static_cast<size_t>(n) * sizeof(float);
  loom::Storage storage(boost::intrusive_ptr<loom::StorageImpl>(new loom::StorageImpl(
      loom::DataPtr(p, nullptr, &free_adopted, loom::Device()), nbytes, nullptr)));
  const std::vector<int64_t> sizes{n}, strides{1};
  return loom::Tensor(boost::intrusive_ptr<loom::TensorImpl>(
      new loom::TensorImpl(std::move(storage), loom::DType::Float32, sizes, strides, 0)));
}

}  // namespace

LOOM_LIBRARY(adoptns, m) { m.def("make(int n) -> Tensor"); }
LOOM_LIBRARY_IMPL(adoptns, CPU, m) { m.impl("make", &make); }
