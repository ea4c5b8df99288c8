#pragma once
/// @file
/// Argument checks for kernels, with PyTorch's wording and the whole call in
/// the message:
/// "Expected all tensors to be on the same device, but found cpu and cuda:0 in
/// add.Tensor(self: [32, 10] cpu float32, other: [10] cuda:0 float32)".

#include <initializer_list>
#include <string>
#include <string_view>

#include "loom/core/tensor.h"

namespace loom {

/// A named tensor argument of a call, for messages.
struct TensorArg {
  std::string_view name;  ///< the schema's argument name ("self", "other")
  const Tensor& tensor;   ///< the argument (may be undefined for an absent optional)
};

/// "add.Tensor(self: [32, 10] cpu float32, other: [10] cuda:0 float32)".
std::string describe_call(std::string_view op, std::initializer_list<TensorArg> args);

/// Throws TypeError naming the op and argument if a (non-optional) tensor is undefined:
/// "add.Tensor: expected a proper Tensor but got an undefined Tensor for argument 'other'".
void check_defined(std::string_view op, std::initializer_list<TensorArg> args);

/// Throws DeviceError unless every defined tensor is on the same device.
void check_same_device(std::string_view op, std::initializer_list<TensorArg> args);

/// Throws TypeError unless every defined tensor has the same dtype.
void check_same_dtype(std::string_view op, std::initializer_list<TensorArg> args);

/// Throws ValueError unless arg has exactly ndim dimensions.
void check_dim(std::string_view op, TensorArg arg, int64_t ndim);

/// PyTorch's resize_output for out= arguments: leaves out alone if it already has sizes,
/// else resizes it (contiguous; its storage grows if needed), so views of a shared storage
/// see the new memory. Returns true if out was resized.
bool resize_output(std::string_view op, const Tensor& out, IntArrayRef sizes);

}  // namespace loom
