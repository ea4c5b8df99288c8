#pragma once
// Decompositions at capture time (docs/design/compile.md, section 3): a composite op that the
// fusion pass can only fuse as its parts is recorded as its parts. Internal to
// libloom_compile.

#include "loom/dispatcher/dispatcher.h"

namespace loom::graph::detail {

/// If op is one that decomposes (softmax and log_softmax over the last dim, layer_norm over
/// the last dim) and its arguments on stack qualify (a contiguous float32 or float64 CPU
/// input with elements), computes it from its parts through the dispatcher (so a capture
/// records the parts), replaces the arguments with its results and returns true; otherwise
/// leaves stack alone and returns false.
bool decompose_call(const OperatorHandle& op, Stack& stack);

}  // namespace loom::graph::detail
