#pragma once
/// @file
/// constant_pad_nd written over other ops (fill_, copy_ into a view), so it runs on any device
/// that has those: the CUDA plugin registers it as its constant_pad_nd kernel (autograd needs
/// it for conv1d/conv2d with padding='same' and an odd total padding). Only Loom's public
/// headers, so tests/plugins/cuda/libs_test.cpp also runs it on CPU tensors against the
/// reference kernel. Checks, messages and semantics are the reference's (ops/nn/cpu/padding.cpp),
/// shared through loom/ops/nn/meta/padding.h: pad pairs (left, right) start at the last dim; a
/// negative pad crops.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"
#include "loom/ops/nn/meta/padding.h"
#include "loom/ops/pointwise.h"

namespace loom::cuda::libs {

/// constant_pad_nd(self, pad, value) over fill_ and copy_ (see the file comment).
inline Tensor constant_pad_by_copy(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  check_defined("constant_pad_nd", {{"self", self}});
  const ops::meta::ConstantPad g = ops::meta::constant_pad_geometry(self, pad);
  // Note [Checked scalar conversion]: the value is written into self's dtype.
  ops::meta::check_scalar_fits("constant_pad_nd", value, self.dtype());
  Tensor out = Tensor::empty(g.out_sizes, TensorOptions{}.with(self.dtype()).with(self.device()));
  if (out.numel() == 0) return out;
  if (g.grows || g.empty_copy) loom::fill_(out, value);
  if (g.empty_copy) return out;
  const auto [src_off, dst_off] =
      ops::meta::constant_pad_offsets(self, g, out.strides(), self.storage_offset());
  loom::copy_(out.as_strided_view(g.copy_sizes, out.strides(), dst_off),
              self.as_strided_view(g.copy_sizes, self.strides(), src_off));
  return out;
}

}  // namespace loom::cuda::libs
