#pragma once
/// @file
/// Reductions of the core pack.

#include <optional>

#include "loom/ops/op_handle.h"

namespace loom {

/// Sum of all elements as a 0-dim tensor (optionally in another dtype).
inline Tensor sum(const Tensor& self, std::optional<DType> dtype = std::nullopt) {
  LOOM_TYPED_OP(op, "aten::sum", Tensor(const Tensor&, std::optional<DType>));
  return op(self, dtype);
}

}  // namespace loom
