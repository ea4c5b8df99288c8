#pragma once
// Small helpers the core pack's derivative formulas share.
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom::formulas {

/// g * s, skipping the multiply when s is 1 (alpha, beta).
inline Tensor scaled(const Tensor& g, const Scalar& s) { return s.to<double>() == 1.0 ? g : g * s; }

/// A bool mask as the dtype of like, to multiply a gradient with.
inline Tensor as_dtype_of(const Tensor& mask, const Tensor& like) { return mask.to(like.dtype()); }

}  // namespace loom::formulas
