#pragma once
/// @file
/// Pointwise fusion and its C++ code (docs/design/compile.md, sections 5 and 6).
///
/// plan_fusion() cuts a graph into steps: runs of pointwise nodes that become one generated
/// loop (a FusedGroup), and every other node, run through the dispatcher as captured. A group
/// reads its inputs once and writes only the values used after it: `gelu(x * w + b) + r` is
/// one pass over memory instead of four. generate_cpp() writes the groups as one C++ file,
/// a function `loom_group_<i>` per group, with the captured sizes and strides as constants.
///
/// What fuses (each node's tensors all float32, or all float64, on the CPU; every node of a
/// group has the group's sizes; its inputs broadcast to them): add, sub (Tensor and Scalar),
/// mul, div (without rounding mode), maximum, minimum, neg, abs, exp, log, sqrt, rsqrt,
/// reciprocal, sin, cos, tanh, sigmoid, relu, silu, gelu (both forms), pow with a scalar
/// exponent.
///
/// Row groups: sum, mean (no dtype argument) and amax over the last dim join a group too, with
/// the pointwise ops before them, on their results (the row values: keepdim sizes) and after
/// them over the full shape, reading the row values broadcast along the last dim. So softmax,
/// layer norm and RMS norm written out of such ops become one loop over rows with a pass per
/// reduction level (Note [Row groups] in src/fusion.cpp). Not over an empty tensor.
///
/// Autograd: a group captured with grad mode on, with an input that requires grad, also gets a
/// backward loop, `loom_group_<i>_backward`, generated from the ops' derivative formulas. It
/// recomputes the group's values from its inputs (so forward keeps only the inputs, not the
/// intermediate values) and writes the gradient of each input that requires grad at the
/// group's sizes (a row group's backward is a row loop too: a row value read by full-size ops
/// gets the sum over its row of their derivatives); autograd's engine sums a broadcast input's
/// gradient to its shape, as for eager ops.

#include <string>
#include <vector>

#include "loom/graph/graph.h"

namespace loom::graph {

/// Pointwise nodes computed by one generated loop.
struct FusedGroup {
  std::vector<int> nodes;        ///< indices into Graph::nodes(), in order
  std::vector<int> inputs;       ///< values read from outside the group, in first-use order
  std::vector<int> outputs;      ///< values the group makes that are used after it, in order
  std::vector<int64_t> sizes;    ///< the iteration space: every node's output sizes
  DType dtype = DType::Float32;  ///< of every tensor the group touches
  /// Whether the group holds reductions over the last dim of `sizes` (a row group: see the
  /// file comment).
  bool reduces = false;
  /// Whether the group has a backward loop (autograd records it: see the file comment).
  bool backward = false;
  /// Per input: whether the backward loop computes its gradient (it required grad).
  std::vector<bool> input_grads;
  /// The layout of the input gradients the backward loop writes (each at `sizes`): the first
  /// output of those sizes, else contiguous (a meta tensor).
  Tensor grad_layout;
  /// Per input: whether the backward loop writes its gradient summed over the rows, laid out
  /// as the input (it broadcasts over every dim but the last, which it has: a bias), instead
  /// of at `sizes`.
  std::vector<bool> column_grads;
  /// The group's dropout nodes (indices into Graph::nodes(), in order). Each run draws one
  /// seed per node from the CPU generator, in this order, as eager's native_dropout draws one
  /// per call, and passes them to the loops (after the operands' pointers) and to the
  /// backward loop, which recomputes the masks from them: the same masks as eager's.
  std::vector<int> dropouts;
};

/// One step of a lowered graph: a node or a group.
struct FusionStep {
  int node = -1;     ///< a node run through the dispatcher, or -1
  int group = -1;    ///< a FusedGroup, or -1
  int same_as = -1;  ///< with node: an earlier node with the same op and arguments whose
                     ///< results `node`'s are (common-subexpression elimination), or -1
  /// With node: a constant (constant folding): its results depend on no input and no captured
  /// tensor, so they are computed on the graph's first run and kept for the later ones.
  bool folded = false;
};

/// A graph's steps in execution order, and its groups.
struct FusionPlan {
  std::vector<FusedGroup> groups;  ///< the groups, each used by one step
  std::vector<FusionStep> steps;   ///< every live node of the graph in one step, in order
  int removed = 0;                 ///< nodes dropped as dead, or merged with an equal one (same_as)
  int folded = 0;                  ///< nodes folded into constants (FusionStep::folded)
};

/// Cuts g into steps. Groups have two nodes at least (one pointwise op alone runs its eager
/// kernel, which is as fast). A group's nodes were all captured under one grad mode
/// (Node::grad_enabled); autograd records a group captured with grad on whose inputs require
/// grad (see the file comment), and nothing else.
///
/// Then, for the nodes outside groups that are pure (an aten op on the CPU that writes no
/// argument, returns tensors only and did not draw random numbers when captured:
/// Node::draws): one whose results nobody reads is
/// dropped (dead-code elimination), and, in a graph without in-place ops, one with the same
/// op and arguments as an earlier one (and no view or returned value among its results)
/// takes that one's results (common-subexpression elimination). Ops of other namespaces are left
/// alone. In a graph without in-place ops, a pure node that reads no input and no captured
/// tensor, only other such nodes' results (`full`, `arange`, a mask built from them), is
/// folded into a constant (FusionStep::folded), unless one of its results is returned or read
/// by a view: the caller could then write to the kept tensor. Captured tensors are never
/// folded: a module's parameters change in place between calls.
FusionPlan plan_fusion(const Graph& g);

/// The C++ source of plan's groups: for group i, `extern "C" void loom_group_<i>(char* const*
/// p, int threads)` where p holds the outputs' data pointers and then the inputs', in the
/// group's order, and `threads` is the OpenMP thread count to use. A group with `backward`
/// also gets `extern "C" void loom_group_<i>_backward(char* const* p, int threads)`, where p
/// holds the input gradients it computes (those with `input_grads`, each at the group's sizes
/// laid out as `grad_layout`, or summed over the rows laid out as the input for
/// `column_grads`), then the inputs, then the outputs' gradients (each laid
/// out as its output's meta tensor). The text depends on the
/// graph's ops, constants, sizes and strides only, so equal graphs give equal files.
std::string generate_cpp(const Graph& g, const FusionPlan& plan);

}  // namespace loom::graph
