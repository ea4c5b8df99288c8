#pragma once
/// @file
/// Derivative formulas: how an op (built in or custom) gets autograd. A formula is a
/// kernel registered at the Autograd key through the ordinary registration API:
///
///     LOOM_LIBRARY_IMPL(aten, Autograd, m) {
///       loom::autograd::derivative(m, "mul.Tensor", {"self", "other"},
///           [](loom::autograd::BackwardContext& c) -> loom::autograd::variable_list {
///             return {c.grad() * c.saved("other"), c.grad() * c.saved("self")};
///           });
///     }
///
/// Note [Derivative kernels]: the kernel is boxed and generic. When no tensor argument
/// requires grad it only calls the backend ("below autograd"). Otherwise it makes a node
/// whose edges are the gradient edges of the tensor arguments, saves what the formula
/// declared (argument names, "result" / "result1" for outputs; non-tensor arguments are
/// always kept), runs the backend, and makes the floating-point outputs the node's outputs.
/// Views (returns annotated `Tensor(a)`) are marked so that in-place changes through them
/// are tracked; in-place ops (`Tensor(a!) self` returned) rebase self's history, checking
/// PyTorch's leaf rules. The engine sums a gradient to its input's shape when the forward
/// op broadcast, and casts it to the input's dtype, so formulas are written for the
/// broadcast shape.
///
/// The formula returns one gradient per tensor *slot*: each Tensor or Tensor? argument is
/// one slot, each element of a Tensor[] argument one slot, in schema order. Entries may be
/// undefined (no gradient) and trailing ones omitted.

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/autograd/node.h"
#include "loom/dispatcher/ivalue.h"
#include "loom/dispatcher/library.h"

namespace loom::autograd {

class DerivativeNode;

/// What a formula sees during backward.
class BackwardContext {
 public:
  /// Gradient of output i of the forward op (zeros if none arrived).
  const Tensor& grad(size_t output = 0) const;
  /// Whether a gradient arrived for output i (grad(i) is zeros otherwise).
  bool has_grad(size_t output) const;
  /// Whether slot `slot` needs a gradient (skip the work otherwise).
  bool needs_grad(size_t slot) const;
  /// Whether the tensor argument called arg needs a gradient.
  bool needs_grad(std::string_view arg) const;
  /// The saved tensor argument arg (declared in the formula's saves).
  Tensor saved(std::string_view arg) const;
  /// The saved Tensor[] argument arg.
  std::vector<Tensor> saved_list(std::string_view arg) const;
  /// Saved output i ("result" is 0, "result1" is 1, ...).
  Tensor result(size_t output = 0) const;
  /// Any non-tensor argument.
  const IValue& arg(std::string_view name) const;
  /// A Scalar argument.
  Scalar scalar(std::string_view name) const { return arg(name).to_scalar(); }
  /// An int argument.
  int64_t integer(std::string_view name) const { return arg(name).to_int(); }
  /// A float argument.
  double real(std::string_view name) const { return arg(name).to_double(); }
  /// A bool argument.
  bool flag(std::string_view name) const { return arg(name).to_bool(); }
  /// An int[] argument (an empty list for None).
  IntArrayRef ints(std::string_view name) const;
  /// True if the argument is None.
  bool is_none(std::string_view name) const { return arg(name).is_none(); }
  /// Sizes of the tensor in slot `slot` at forward time.
  IntArrayRef input_sizes(size_t slot) const;
  /// Sizes of the tensor argument arg at forward time.
  IntArrayRef input_sizes(std::string_view arg) const;
  /// Dtype of the tensor in slot `slot`.
  DType input_dtype(size_t slot) const;
  /// The first slot of argument arg.
  size_t slot(std::string_view arg) const;
  /// Number of slots.
  size_t num_slots() const;
  /// "aten::mul.Tensor".
  const std::string& op_name() const;

 private:
  friend class DerivativeNode;
  BackwardContext(DerivativeNode& node, variable_list& grads, uint64_t arrived)
      : node_(node), grads_(grads), arrived_(arrived) {}
  DerivativeNode& node_;
  variable_list& grads_;
  uint64_t arrived_;  // bit i: a gradient arrived for output i
};

/// A backward formula.
using BackwardFormula = std::function<variable_list(BackwardContext&)>;

/// Options of a derivative registration.
struct DerivativeOptions {
  /// Returns (by position) that have no gradient, as PyTorch's output_differentiability: the
  /// saved statistics of batch/layer norm, nll_loss's total_weight. They never require grad
  /// and the formula never gets a gradient for them (it sees zeros).
  std::vector<size_t> non_differentiable_outputs;
  /// Held (as a shared_ptr) by every node made while it is alive: what the formula's captured
  /// data needs kept until the last graph that may run the formula is gone, although the
  /// registration itself is undone earlier (a stable-ABI library's user data, released when
  /// the library is released and no such graph is left). Note [Graphs keep their plugin].
  std::weak_ptr<void> keep_alive;
};

/// The Autograd-key kernel for one op from its formula (Note [Derivative kernels]). saves:
/// tensor argument names and "result", "result1", ... for outputs.
KernelFunction derivative_kernel(std::vector<std::string> saves, BackwardFormula formula,
                                 DerivativeOptions options = {});

/// Registers formula for op at m's key (Autograd) and, when the dispatcher knows it, for
/// op's in-place form ("mul.Tensor" -> "mul_.Tensor"), which records the same derivative.
void derivative(Library& m, std::string_view op, std::vector<std::string> saves,
                BackwardFormula formula, DerivativeOptions options = {},
                std::source_location loc = std::source_location::current());

/// Registers op's in-place form only (for ops whose functional form is a composite).
void derivative_inplace_only(Library& m, std::string_view inplace_op,
                             std::vector<std::string> saves, BackwardFormula formula,
                             std::source_location loc = std::source_location::current());

/// What of plugin's derivative formulas live autograd graphs still hold: "" when nothing, else
/// "3 autograd nodes of live graphs (MyOpBackward0 x3)" (Note [Graphs keep their plugin] in
/// derivative.cpp). PluginLoader::unload refuses while it is not empty.
std::string live_graph_nodes_of(const std::string& plugin);

/// An Autograd-key kernel for an op that is not differentiable (integer results,
/// random sampling, creation): its outputs never require grad.
KernelFunction not_differentiable_kernel();

}  // namespace loom::autograd
