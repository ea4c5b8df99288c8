#pragma once
/// @file
/// The C++ API of the core operator pack: typed calls through the dispatcher.
///
/// Each function looks its operator up once (a function-local static typed
/// handle) and then costs one dispatch. The ops_core plugin must be loaded
/// (e.g. `loom::PluginLoader::instance().load("ops_core")`).

#include <optional>

#include "loom/dispatcher/dispatcher.h"

namespace loom {

/// self + alpha * other (same shapes for now).
inline Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1) {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("aten::add.Tensor")
                             .typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  return op(self, other, alpha);
}

/// Elementwise product.
inline Tensor mul(const Tensor& self, const Tensor& other) {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("aten::mul.Tensor")
                             .typed<Tensor(const Tensor&, const Tensor&)>();
  return op(self, other);
}

/// Fills self with value in place; returns self.
inline Tensor fill_(const Tensor& self, const Scalar& value) {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("aten::fill_.Scalar")
                             .typed<Tensor(const Tensor&, const Scalar&)>();
  return op(self, value);
}

/// Sum of all elements as a 0-dim tensor (optionally in another dtype).
inline Tensor sum(const Tensor& self, std::optional<DType> dtype = std::nullopt) {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("aten::sum")
                             .typed<Tensor(const Tensor&, std::optional<DType>)>();
  return op(self, dtype);
}

/// operator+ as in PyTorch.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
/// operator* as in PyTorch.
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }

}  // namespace loom
