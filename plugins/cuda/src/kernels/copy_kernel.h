#pragma once
/// @file
/// The device-to-device copy of the CUDA plugin: any strides, dtype conversion with the CPU's
/// rules, src broadcast to dst's shape. H1's copy_ (runtime/copy.cpp) calls it for
/// cuda -> cuda copies on one device; the CUDA kernels use it for casts and contiguous copies.

#include <string_view>

#include "loom/core/tensor.h"

namespace loom::cuda {

/// Copies src into dst (both CUDA tensors on the same device), broadcasting src to dst's
/// shape and converting its dtype. Does not bump dst's version (the caller decides).
/// Throws ValueError when the shapes do not broadcast and DeviceError on a device mismatch.
void copy_kernel(const Tensor& dst, const Tensor& src);

/// copy_kernel with op naming the call in errors.
void copy_kernel(std::string_view op, const Tensor& dst, const Tensor& src);

/// A new contiguous CUDA tensor holding t converted to dtype.
Tensor cast_copy(const Tensor& t, DType dtype);

/// t if contiguous, else a contiguous copy.
Tensor contiguous_cuda(const Tensor& t);

}  // namespace loom::cuda
