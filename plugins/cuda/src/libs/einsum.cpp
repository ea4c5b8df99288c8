// CUDA kernel of einsum: the reference's equation rules over views, sums and batched products
// (libs/einsum_by_bmm.h), so the products run on cuBLAS (matmul.cpp) and the sums on the
// plugin's reduction kernels. `path` (the contraction order opt_einsum would pick) is ignored,
// as the reference ignores it: operands are contracted left to right.
#include <optional>
#include <string_view>

#include "libs/common.h"
#include "libs/einsum_by_bmm.h"
#include "loom/dispatcher/library.h"

namespace loom::cuda::libs {
namespace {

Tensor einsum(std::string_view equation, TensorList tensors,
              std::optional<IntArrayRef> /*path*/) {
  return einsum_by_bmm(equation, tensors);
}

}  // namespace

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("einsum", &einsum);
}

}  // namespace loom::cuda::libs
