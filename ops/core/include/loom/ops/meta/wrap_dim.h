#pragma once
/// @file
/// wrap_dim with the op's name: loom::wrap_dim (core) says PyTorch's "Dimension out of range
/// (expected to be in range of [-2, 1], but got 2)" without saying which call it refers to; the
/// ops' kernels call this one, so that the message starts with the op, as their other messages
/// do ("softmax: Dimension out of range ..."). Header-only, no state, no device-specific code.

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "loom/core/error.h"

namespace loom::ops::meta {

/// Normalises a possibly negative dim against ndim (a 0-dim tensor accepts -1 and 0); throws
/// IndexError "<op>: Dimension out of range (expected to be in range of [-n, n-1], but got d)".
inline int64_t wrap_dim(std::string_view op, int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  LOOM_CHECK_T(IndexError, dim >= -n && dim < n, op,
               ": Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
               "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

}  // namespace loom::ops::meta
