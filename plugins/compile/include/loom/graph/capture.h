#pragma once
/// @file
/// Graph capture at the Tracing dispatch key (docs/design/compile.md, section 3).
///
/// capture(fn, inputs) runs fn once, eagerly, on this thread with the Tracing key on: every op
/// fn calls reaches the tracer's boxed fallback, which records a node and redispatches below
/// Tracing (so the call runs as usual: autograd, providers, profiler). Ops that a kernel calls
/// from inside (a composite's parts, autograd's formulas) run below Tracing and are not
/// recorded: the graph holds the ops the function asked for. Other threads are not traced.
///
/// This is the first stage: a trace of one call. A value the function reads with
/// Tensor::item() between its ops is seen (loom/core/value_reads.h): the graph's
/// value_dependence() says where, and GuardedFunction does not replay it. Reading data
/// through data_ptr() is not seen, so a function whose ops depend on such reads gives a graph
/// valid only for those values; Graph::run checks each input's metadata, not values. The
/// checked replay of the design (the function runs every call and the tracer matches its
/// ops) removes that limit in a later stage.

#include <functional>
#include <vector>

#include "loom/graph/graph.h"

namespace loom::graph {

/// A function of tensors to tensors, as capture takes it.
using TensorFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// Runs fn(inputs) once with the Tracing key on and returns the graph of the ops it ran. With
/// results, also fn's own return (the eager results of this call). LOOM_LOGS=graph prints the
/// graph to stderr. Throws what fn throws (nothing is kept then); a capture inside a capture
/// on the same thread, or an undefined input, throws ValueError.
///
/// With decompose, softmax and log_softmax over the last dim and layer_norm over the last dim
/// of a contiguous float32 or float64 CPU tensor are recorded as the reductions and pointwise
/// ops they are made of (and run as those in this call: values equal eager's up to float
/// rounding), so that fusion can join them with their neighbours (loom::compile does this).
Graph capture(const TensorFunction& fn, const std::vector<Tensor>& inputs,
              std::vector<Tensor>* results = nullptr, bool decompose = false);

/// Whether this thread is capturing now.
bool is_capturing();

}  // namespace loom::graph
