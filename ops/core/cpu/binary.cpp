// Reference CPU kernels: add, mul (same-shape, contiguous).
#include "cpu/elementwise.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {
namespace {

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  check_same_layout("add.Tensor", self, other);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  dispatch_floating("add.Tensor", self, [&]<typename T>(T*) {
    const T* a = self.data_ptr<T>();
    const T* b = other.data_ptr<T>();
    T* o = out.data_ptr<T>();
    const T s = alpha.to<T>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = a[i] + s * b[i];
  });
  return out;
}

Tensor mul(const Tensor& self, const Tensor& other) {
  check_same_layout("mul.Tensor", self, other);
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(self.dtype()));
  dispatch_floating("mul.Tensor", self, [&]<typename T>(T*) {
    const T* a = self.data_ptr<T>();
    const T* b = other.data_ptr<T>();
    T* o = out.data_ptr<T>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = a[i] * b[i];
  });
  return out;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("reference");
  m.impl("add.Tensor", &add);
  m.impl("mul.Tensor", &mul);
}

}  // namespace loom::ops::cpu
