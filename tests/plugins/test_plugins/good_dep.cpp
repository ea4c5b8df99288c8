// Test plugin `good_dep`: depends on good_ops, adds a second CPU provider ("fast",
// priority 10) for testns::twice and defines testns::fast_calls, which reports how
// often that provider ran, so tests can see which kernel the dispatcher picked.

#include <atomic>

#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("good_dep", "0.4.0", "test plugin: a faster testns::twice", "good_ops");

namespace {

std::atomic<int64_t> fast_calls{0};

loom::Tensor twice_fast(const loom::Tensor& x) {
  fast_calls.fetch_add(1, std::memory_order_relaxed);
  loom::Tensor out = loom::Tensor::empty(x.sizes(), loom::TensorOptions{}.with(x.device()));
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + in[i];
  return out;
}

}  // namespace

// The tensor argument only routes the call to the CPU kernel.
LOOM_LIBRARY_FRAGMENT(testns, m) { m.def("fast_calls(Tensor like) -> int"); }

LOOM_LIBRARY_IMPL(testns, CPU, m) {
  m.set_provider("fast", 10);
  m.impl("twice", &twice_fast);
  m.impl("fast_calls", [](const loom::Tensor&) -> int64_t { return fast_calls.load(); });
}
