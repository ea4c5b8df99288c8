// Reference CPU kernels: copy_, clone, contiguous, to.dtype (copies with dtype conversion and
// broadcasting, on the TensorIterator engine).
#include <optional>

#include "cpu/meta.h"
#include "cpu/tensor_iterator.h"
#include "loom/dispatcher/library.h"

namespace loom::ops::cpu {
namespace {

Tensor& copy_(Tensor& self, const Tensor& src, bool /*non_blocking*/) {
  LOOM_CHECK_T(TypeError, src.defined(),
               "copy_: expected a proper Tensor but got an undefined "
               "Tensor for argument 'src'");
  if (self.is_same(src)) return self;
  LOOM_CHECK_T(NotImplementedError, !src.device().is_meta() || self.device().is_meta(),
               "copy_: Cannot copy out of meta tensor; no data! (src ", src.describe(), ", self ",
               self.describe(), ")");
  if (self.device().is_meta()) {
    // x.to("meta"): a meta tensor holds no data, so there is nothing to copy; the shapes
    // must still broadcast, as they would for real data.
    meta::check_inplace_shape("copy_", self, src.sizes());
    self.bump_version();
    return self;
  }
  copy_into("copy_", self, src);
  self.bump_version();
  return self;
}

// Loom's clone is always contiguous (PyTorch's preserve_format keeps a dense input's strides).
Tensor clone(const Tensor& self, std::optional<int64_t> /*memory_format*/) {
  return cast_copy(self, self.dtype());
}

Tensor contiguous(const Tensor& self, int64_t /*memory_format*/) {
  return self.is_contiguous() ? self : cast_copy(self, self.dtype());
}

Tensor to_dtype(const Tensor& self, DType dtype, bool /*non_blocking*/, bool copy,
                std::optional<int64_t> /*memory_format*/) {
  if (dtype == self.dtype() && !copy) return self;
  return cast_copy(self, dtype);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("copy_", &copy_);
  m.impl("clone", &clone);
  m.impl("contiguous", &contiguous);
  m.impl("to.dtype", &to_dtype);
}

}  // namespace loom::ops::cpu
