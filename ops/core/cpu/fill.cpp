// Reference CPU kernel: fill_ (any layout, via strides).
#include "cpu/elementwise.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {
namespace {

template <typename T>
void fill_strided(const Tensor& t, int64_t dim, T* p, T v) {
  if (dim == t.dim()) {
    *p = v;
    return;
  }
  for (int64_t i = 0; i < t.size(dim); ++i) fill_strided(t, dim + 1, p + i * t.stride(dim), v);
}

Tensor& fill_(Tensor& self, const Scalar& value) {
  LOOM_CHECK_T(DeviceError, self.device().is_cpu(), "fill_.Scalar: self is on ",
               self.device().str(), " but this is the CPU kernel");
  dispatch_floating("fill_.Scalar", self, [&]<typename T>(T*) {
    if (self.numel() > 0) fill_strided(self, 0, self.data_ptr<T>(), value.to<T>());
  });
  self.bump_version();
  return self;
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CPU, m) {
  m.set_provider("reference");
  m.impl("fill_.Scalar", &fill_);
}

}  // namespace loom::ops::cpu
