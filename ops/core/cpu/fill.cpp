// Reference CPU kernels: fill_ (Scalar and 0-d Tensor value) and zero_, any layout.
#include <cstdint>
#include <cstring>

#include "cpu/meta.h"
#include "cpu/tensor_iterator.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/creation.h"
#include "loom/ops/meta/scalar_conversion.h"

namespace loom::ops::cpu {
namespace {

void fill_impl(std::string_view op, const Tensor& self, const Scalar& value) {
  meta::check_scalar_fits(op, value, self.dtype());  // Note [Checked scalar conversion]
  TensorIterator it(op);
  it.set_output(self, OutputKind::Copy);
  it.build();
  dispatch_all(self.dtype(), [&]<typename T>(T*) {
    // Converted once to the storage type; the loop only stores.
    const T v = convert<T>(value.to<compute_t<T>>());
    if (it.flat(self.dtype())) {
      // Contiguous: the per-ISA store loop on the value's bits (Note [Per-ISA fast path]).
      uint64_t bits = 0;
      std::memcpy(&bits, &v, sizeof(T));
      const auto loop = LOOM_ISA_CALL(fill_bits);
      char* out = it.data<char>(0);
      const bool stream = it.stream_output();
      it.parallel_ranges([&](int64_t begin, int64_t end) {
        loop(out + begin * int64_t{sizeof(T)}, bits, sizeof(T), end - begin, stream);
      });
      return;
    }
    it.for_each<T>([v]() { return v; });
  });
  self.bump_version();
}

Tensor& fill_(Tensor& self, const Scalar& value) {
  fill_impl("fill_.Scalar", self, value);
  return self;
}

Tensor& fill_tensor_(Tensor& self, const Tensor& value) {
  meta::check_fill_value(value);
  // A meta value has no element to read; its checks above are what meta can do.
  fill_impl("fill_.Tensor", self, is_meta(value) ? Scalar(0) : value.item());
  return self;
}

Tensor& zero_(Tensor& self) {
  fill_impl("zero_", self, 0);
  return self;
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("fill_.Scalar", &fill_);
  m.impl("fill_.Tensor", &fill_tensor_);
  m.impl("zero_", &zero_);
}

}  // namespace loom::ops::cpu
