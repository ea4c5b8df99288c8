#pragma once
/// @file
/// constant_pad_nd written over other ops (fill_, copy_ into a view), so it runs on any device
/// that has those: the CUDA plugin registers it as its constant_pad_nd kernel (autograd needs
/// it for conv1d/conv2d with padding='same' and an odd total padding). Only Loom's public
/// headers, so tests/plugins/cuda/libs_test.cpp also runs it on CPU tensors against the
/// reference kernel. Checks, messages and semantics are the reference's
/// (ops/nn/cpu/padding.cpp): pad pairs (left, right) start at the last dim; a negative pad
/// crops.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"
#include "loom/ops/pointwise.h"

namespace loom::cuda::libs {

/// constant_pad_nd(self, pad, value) over fill_ and copy_ (see the file comment).
inline Tensor constant_pad_by_copy(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  check_defined("constant_pad_nd", {{"self", self}});
  const int64_t nd = self.dim();
  LOOM_CHECK(pad.size() % 2 == 0, "Length of pad must be even but instead it equals ", pad.size());
  const auto k = static_cast<int64_t>(pad.size()) / 2;
  LOOM_CHECK(k <= nd,
             "Length of pad should be no more than twice the number of dimensions of the input. "
             "Pad length is ",
             pad.size(), " while the input has ", nd, " dimensions.");
  std::vector<int64_t> out_sizes(self.sizes().begin(), self.sizes().end());
  std::vector<int64_t> copy_sizes = out_sizes;
  std::vector<int64_t> pl(static_cast<size_t>(nd), 0), pr(static_cast<size_t>(nd), 0);
  bool grows = false, empty_copy = self.numel() == 0;
  for (int64_t i = 0; i < k; ++i) {
    const auto d = static_cast<size_t>(nd - 1 - i);
    pl[d] = pad[static_cast<size_t>(2 * i)];
    pr[d] = pad[static_cast<size_t>(2 * i + 1)];
    out_sizes[d] = self.size(static_cast<int64_t>(d)) + pl[d] + pr[d];
    LOOM_CHECK(out_sizes[d] >= 0, "The input size ", self.size(static_cast<int64_t>(d)),
               ", plus negative padding ", pl[d], " and ", pr[d],
               " resulted in a negative output size, which is invalid. Check dimension ", d,
               " of your input.");
    copy_sizes[d] = self.size(static_cast<int64_t>(d)) - std::max<int64_t>(0, -pl[d]) -
                    std::max<int64_t>(0, -pr[d]);
    grows = grows || pl[d] > 0 || pr[d] > 0;
    empty_copy = empty_copy || copy_sizes[d] <= 0;
  }
  Tensor out = Tensor::empty(out_sizes, TensorOptions{}.with(self.dtype()).with(self.device()));
  if (out.numel() == 0) return out;
  if (grows || empty_copy) loom::fill_(out, value);
  if (empty_copy) return out;
  int64_t src_off = self.storage_offset(), dst_off = 0;
  for (int64_t d = 0; d < nd; ++d) {
    const auto u = static_cast<size_t>(d);
    src_off += std::max<int64_t>(0, -pl[u]) * self.stride(d);
    dst_off += std::max<int64_t>(0, pl[u]) * out.stride(d);
  }
  loom::copy_(out.as_strided_view(copy_sizes, out.strides(), dst_off),
              self.as_strided_view(copy_sizes, self.strides(), src_off));
  return out;
}

}  // namespace loom::cuda::libs
