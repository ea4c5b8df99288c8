#pragma once
/// @file
/// Helpers of the boxed calling convention: argument checking against the
/// schema, defaults, key-set extraction, and call descriptions for messages.

#include <string>

#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/ivalue.h"

namespace loom {

/// The IValue a schema default stands for (None, numbers, lists, strings; identifiers such as
/// Mean, contiguous_format or long become their PyTorch integer code or dtype).
IValue default_to_ivalue(const DefaultValue& value, const Type& type);

/// Checks a boxed call's arguments against op's schema and brings them to the form kernels
/// expect: appends omitted trailing defaults, widens int to float for float arguments,
/// broadcasts a single int to a fixed-size int list. Throws TypeError naming the op, the
/// argument, the expected type and what was given.
void normalize_boxed_arguments(OperatorHandle op, Stack& stack);

/// OR of the key sets of every tensor and device on the stack; CPU for an op without tensor
/// arguments when no device is given (Note [Factory dispatch] in kernel_traits.h).
DispatchKeySet boxed_key_set(OperatorHandle op, const Stack& stack);

/// "add.Tensor(self: [2, 3] cpu float32, other: [3] cpu float32, alpha: 1)".
std::string describe_call(OperatorHandle op, const Stack& args);

}  // namespace loom
