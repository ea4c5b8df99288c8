#pragma once
/// @file
/// Argument checks, parameter parsing and output shapes every backend of embedding and
/// embedding_dense_backward shares, so that error messages are word for word the same on
/// every device. Each kernel checks its own devices and the index dtype (PyTorch's message
/// names the device's tensor type) first, then calls these.

#include <cstdint>
#include <string_view>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"

namespace loom::ops::meta {

/// Throws unless weight is a 2-D [num_weights, D] table.
inline void check_embedding_weight(const Tensor& weight) {
  LOOM_CHECK(weight.dim() == 2, "'weight' must be 2-D, but got weight of shape ",
             sizes_str(weight.sizes()));
}

/// embedding's result sizes: indices' sizes followed by D = weight.size(1).
inline std::vector<int64_t> embedding_output_sizes(const Tensor& weight, const Tensor& indices) {
  std::vector<int64_t> sizes(indices.sizes().begin(), indices.sizes().end());
  sizes.push_back(weight.size(1));
  return sizes;
}

/// embedding_dense_backward's shape checks: grad_output is indices' shape followed by the
/// embedding dim, and num_weights is not negative.
inline void check_embedding_backward(std::string_view op, const Tensor& grad_output,
                                     const Tensor& indices, int64_t num_weights) {
  const int64_t n = indices.numel();
  LOOM_CHECK(grad_output.dim() >= 1 && grad_output.numel() == n * grad_output.size(-1), op,
             ": grad_output of shape ", sizes_str(grad_output.sizes()),
             " does not fit indices of shape ", sizes_str(indices.sizes()),
             " (expected the indices' shape followed by the embedding dim)");
  LOOM_CHECK(num_weights >= 0, op, ": num_weights must be non-negative, got ", num_weights);
}

}  // namespace loom::ops::meta
