#pragma once
/// @file
/// The graph IR of loom::compile (docs/design/compile.md, section 2): the ops a function ran,
/// as nodes of registered ops (any op with a schema: aten, an op pack's, a plugin's or an SDK
/// extension's), over values that carry their metadata as meta tensors.
///
/// A Graph is built by loom::graph::capture (loom/graph/capture.h) and runs through the
/// dispatcher node by node (Graph::run), the interpreter every later stage falls back to.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/ivalue.h"

namespace loom::graph {

/// A value of a graph (printed %id): a graph input, a captured tensor, or a node's output.
struct Value {
  int id = 0;  ///< its index in Graph::values()
  /// Its metadata: sizes, strides, dtype on the meta device (no data). The device the value
  /// lived on when captured is `device`.
  Tensor meta;
  Device device;               ///< where the captured tensor lived
  bool requires_grad = false;  ///< whether it required grad when captured
};

/// One argument of a node, in schema order: a value, a list of values (Tensor[], with -1 for
/// an absent optional), or a constant (any other IValue: ints, floats, strings, dtypes, None).
struct NodeArgument {
  /// Which of the fields below holds the argument.
  enum class Kind : uint8_t {
    Value,              ///< a tensor: `value` (-1: an undefined tensor)
    ValueList,          ///< a Tensor[]: `values`
    OptionalValueList,  ///< a Tensor?[] (index lists): `values`, -1 for None
    Constant,           ///< anything else: `constant`
  };
  Kind kind = Kind::Constant;  ///< which of the fields below holds it
  int value = -1;              ///< Kind::Value: the value's id
  std::vector<int> values;     ///< the list kinds: the values' ids (-1: an absent optional)
  IValue constant;             ///< Kind::Constant
};

/// One op call: the op, its arguments, and the values it returned (a Tensor[] return is one
/// value per element; `list_output` says so).
struct Node {
  OperatorHandle op;                    ///< the registered op (by schema)
  std::vector<NodeArgument> arguments;  ///< in schema order
  std::vector<int> outputs;             ///< the values it returned, in order
  bool list_output = false;             ///< the op returns one Tensor[] (outputs are its items)
  /// Whether the call drew from the CPU's default random generator when captured (its state
  /// changed across the call: dropout, rand_like, ... whatever the schema says), so it must
  /// run every time, in order.
  bool draws = false;
  /// The grad mode the call ran under when captured (a function may turn it off for some of
  /// its ops, or detach a value): replay runs the node under the same mode.
  bool grad_enabled = true;
};

/// A captured graph: inputs, captured tensors, nodes in execution order, outputs.
class Graph {
 public:
  /// The values, indexed by id.
  const std::vector<Value>& values() const { return values_; }
  /// The values that are the function's inputs, in order.
  const std::vector<int>& inputs() const { return inputs_; }
  /// The tensors the function used without making them or receiving them (parameters and
  /// other tensors it closed over), and the values they are.
  const std::vector<std::pair<int, Tensor>>& captured() const { return captured_; }
  /// The nodes in execution order.
  const std::vector<Node>& nodes() const { return nodes_; }
  /// The values the function returned, in order.
  const std::vector<int>& outputs() const { return outputs_; }
  /// Why the trace may depend on tensor values, not only metadata ("" when it does not): the
  /// function read a value into the host (Tensor::item()) between its ops, so its later ops
  /// may have been chosen by that value. Such a graph is a record of one call, not a program
  /// to replay: GuardedFunction and loom::compile run the function eagerly instead.
  const std::string& value_dependence() const { return value_dependence_; }

  /// The graph as text, one line per node:
  /// `%2 : f32[3, 4] = aten::add.Tensor(%0, %1, 1)`; inputs and captured tensors first,
  /// `return (...)` last. Stable: the same function on the same metadata prints the same.
  std::string str() const;

  /// Runs the graph node by node through the dispatcher on inputs (the function's inputs, in
  /// order) and returns its outputs: the same ops, so the same values and, for inputs that
  /// require grad, the same autograd graph as the function itself. Each input must match
  /// what was captured (sizes, strides, dtype, device, requires_grad): a mismatch throws
  /// ValueError naming the input and the guard that failed.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  /// "" when inputs pass the guards run checks (their number, and each one's sizes, strides,
  /// dtype, device and requires_grad against the capture) and the captured tensors (a
  /// module's parameters) still have the sizes, strides, dtype, device and requires_grad they
  /// had, else the first that fails: "input 0: sizes [3, 3], captured [2, 3]".
  std::string guard_failure(const std::vector<Tensor>& inputs) const;

  /// Propagates metadata without data: runs the nodes at the Meta key on meta tensors shaped
  /// like inputs (any sizes, strides and dtypes: no guards) and like the captured tensors, and
  /// returns the outputs' metadata as meta tensors. Throws what an op's Meta kernel throws for
  /// inputs it refuses (shapes that do not broadcast, a value-dependent op).
  std::vector<Tensor> propagate(const std::vector<Tensor>& inputs) const;

  /// The environment a run starts from: a tensor slot per value, with the inputs (checked as
  /// run() checks them; `who` names the caller in the error) and the captured tensors set.
  std::vector<Tensor> bind(const std::vector<Tensor>& inputs, std::string_view who) const;
  /// Calls node n through the dispatcher on env's tensors and stores its outputs in env.
  static void call_node(const Node& n, std::vector<Tensor>& env);
  /// The outputs' tensors from env (undefined for an output that is no tensor).
  std::vector<Tensor> outputs_of(const std::vector<Tensor>& env) const;

  /// @cond INTERNAL
  // Building (capture.cpp).
  int add_value(const Tensor& t);
  void add_input(int v) { inputs_.push_back(v); }
  void add_captured(int v, Tensor t) { captured_.emplace_back(v, std::move(t)); }
  void add_node(Node n) { nodes_.push_back(std::move(n)); }
  void set_outputs(std::vector<int> outputs) { outputs_ = std::move(outputs); }
  void set_value_dependence(std::string why) { value_dependence_ = std::move(why); }
  /// @endcond

 private:
  std::vector<Value> values_;
  std::vector<int> inputs_;
  std::vector<std::pair<int, Tensor>> captured_;
  std::vector<Node> nodes_;
  std::vector<int> outputs_;
  std::string value_dependence_;

  // Runs the nodes on env (a tensor per value, inputs and captured ones set).
  std::vector<Tensor> execute(std::vector<Tensor> env) const;
};

/// An uninitialised tensor on device with like's sizes, strides, storage offset and dtype
/// (a storage just large enough): a value's meta tensor, or a fused group's output laid out
/// as eager laid it out.
Tensor empty_with_layout(const Tensor& like, Device device);

/// "f32[3, 4]" (the dtype's short name and the sizes; " cuda:0" after a device that is not
/// the cpu; "!" for a value that required grad). The type column of Graph::str().
std::string value_type_str(const Value& v);

}  // namespace loom::graph
