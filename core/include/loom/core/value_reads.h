#pragma once
/// @file
/// A per-thread count of tensor values read into the host (Tensor::item()). Graph capture
/// (loom/graph/capture.h) compares it before and after a function to tell a trace whose ops
/// may depend on a value the function read: such a trace is not replayed.

#include <cstdint>

namespace loom {

/// How many times this thread has read a tensor's value with Tensor::item() (or what calls
/// it: item<T>(), scalar reads of one-element tensors) so far.
uint64_t host_value_reads();

}  // namespace loom
