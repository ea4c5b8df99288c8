// Reference CPU kernel: sum over all elements (pairwise, contiguous).
#include "cpu/elementwise.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {
namespace {

// Pairwise summation keeps the error O(log n) instead of O(n), as PyTorch does.
template <typename T>
double pairwise_sum(const T* p, int64_t n) {
  if (n <= 64) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += p[i];
    return s;
  }
  const int64_t half = n / 2;
  return pairwise_sum(p, half) + pairwise_sum(p + half, n - half);
}

Tensor sum(const Tensor& self, std::optional<DType> dtype) {
  LOOM_CHECK(self.is_contiguous(), "sum: the reference kernel needs a contiguous input, got ",
             self.describe(), " with strides ", sizes_str(self.strides()));
  const DType out_dtype = dtype.value_or(self.dtype());
  Tensor out = Tensor::empty({}, TensorOptions{}.with(out_dtype));
  const double total = dispatch_floating(
      "sum", self, [&]<typename T>(T*) { return pairwise_sum(self.data_ptr<T>(), self.numel()); });
  dispatch_floating("sum", out,
                    [&]<typename T>(T*) { *out.data_ptr<T>() = static_cast<T>(total); });
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("reference");
  m.impl("sum", &sum);
}

}  // namespace loom::ops::cpu
