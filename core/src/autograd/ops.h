// The few ops the engine itself needs (accumulating, summing to a shape, zeros), called
// through the dispatcher by schema name: the core knows no op, so these fail with the
// dispatcher's "no operator named" error if the core op pack is not loaded.
#pragma once

#include "loom/core/tensor.h"

namespace loom::autograd::ops {

Tensor add(const Tensor& a, const Tensor& b);
void add_(const Tensor& self, const Tensor& other);
Tensor zeros(IntArrayRef sizes, DType dtype, Device device);
Tensor ones_like(const Tensor& t);
Tensor sum_to(const Tensor& t, IntArrayRef sizes);
Tensor to_dtype(const Tensor& t, DType dtype);
Tensor clone(const Tensor& t);
Tensor contiguous(const Tensor& t);
Tensor as_strided(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device);
void copy_(const Tensor& self, const Tensor& src);
void zero_(const Tensor& self);
// True if t holds a NaN or an infinity (anomaly mode).
bool has_nonfinite(const Tensor& t);

}  // namespace loom::autograd::ops
