// CUDA kernel of constant_pad_nd over the plugin's fill_ and copy_ kernels
// (libs/pad_by_copy.h). The reflection / replication / circular paddings have no CUDA kernel
// yet.
#include "libs/common.h"
#include "libs/pad_by_copy.h"
#include "loom/dispatcher/library.h"

namespace loom::cuda::libs {
namespace {

Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  check_cuda_tensors("constant_pad_nd", {{"self", self}});
  OpGuard g("constant_pad_nd", self);
  return constant_pad_by_copy(self, pad, value);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("constant_pad_nd", &constant_pad_nd);
}

}  // namespace loom::cuda::libs
