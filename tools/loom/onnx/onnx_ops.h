#pragma once
/// @file
/// The mapping of ONNX operators onto Loom operators: one function per ONNX op type, which
/// reads the node's attributes and inputs and calls Loom ops through the dispatcher.
///
/// Note [ONNX op mappings]: ops that ops_core registers today are called through the typed
/// C++ API (loom/ops/*.h). Ops that may not be registered yet (the indexing ops, every ops_nn
/// op) are looked up by name when a node runs (call_optional_op): when one is missing the
/// node throws NotSupported and the test is SKIPPED, so the runner works before and after
/// they land. Where ONNX and PyTorch disagree (integer Div truncates, Mod's sign rules,
/// asymmetric pads, opset-dependent axis semantics) the mapping implements ONNX's meaning
/// explicitly, or throws NotSupported naming the combination it does not handle. A mapping
/// must read every attribute the node carries: one it never asked for makes the node
/// NotSupported (NodeContext::check_all_attributes_read), so an attribute is never
/// silently ignored.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/dispatcher/ivalue.h"
#include "onnx_proto.h"
#include "onnx_tensor.h"

namespace loom::onnx {

/// One node being run: its attributes, its input values and the opset it binds to.
class NodeContext {
 public:
  /// @param inputs one per node input; an undefined Tensor where the input is omitted ("")
  NodeContext(const NodeProto& node, int64_t opset, std::vector<Tensor> inputs)
      : node_(node), opset_(opset), inputs_(std::move(inputs)) {}

  /// The node.
  const NodeProto& node() const { return node_; }
  /// The version of the opset of the node's domain that the model imports.
  int64_t opset() const { return opset_; }
  /// Number of inputs the node lists (omitted optional ones included).
  size_t num_inputs() const { return inputs_.size(); }
  /// Number of outputs the node lists.
  size_t num_outputs() const { return node_.output.size(); }
  /// True if output i is listed and named (an optional output may be "").
  bool wants_output(size_t i) const { return i < node_.output.size() && !node_.output[i].empty(); }
  /// True if input i is present.
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  /// Input i. @throws ValueError naming the op if it is absent
  const Tensor& input(size_t i) const;
  /// Input i, or an undefined Tensor if it is absent.
  Tensor optional_input(size_t i) const { return has_input(i) ? inputs_[i] : Tensor(); }

  /// True if the node carries the attribute (it counts as read).
  bool has_attr(std::string_view name) const;
  /// An INT attribute, or def.
  int64_t attr_int(std::string_view name, int64_t def) const;
  /// A FLOAT attribute, or def.
  float attr_float(std::string_view name, float def) const;
  /// A STRING attribute, or def.
  std::string attr_string(std::string_view name, std::string_view def) const;
  /// An INTS attribute, or nullopt.
  std::optional<std::vector<int64_t>> attr_ints(std::string_view name) const;
  /// A FLOATS attribute, or nullopt.
  std::optional<std::vector<float>> attr_floats(std::string_view name) const;
  /// A STRINGS attribute, or nullopt.
  std::optional<std::vector<std::string>> attr_strings(std::string_view name) const;
  /// A TENSOR attribute, or nullptr.
  const TensorProto* attr_tensor(std::string_view name) const;
  /// Marks an attribute read without using it (one whose value makes no difference here).
  void ignore_attr(std::string_view name) const { (void)find_attr(name); }
  /// @throws NotSupported naming the first attribute the mapping never read
  void check_all_attributes_read() const;

  /// "Op (opset N)", for messages.
  std::string where() const;

 private:
  const AttributeProto* find_attr(std::string_view name) const;
  const AttributeProto* find_typed(std::string_view name, AttributeType type) const;
  const NodeProto& node_;
  int64_t opset_;
  std::vector<Tensor> inputs_;
  mutable std::set<std::string, std::less<>> read_;
};

/// Runs one node: returns its outputs in order (an undefined Tensor for one not produced).
using OpMapping = std::vector<Tensor> (*)(const NodeContext&);

/// Op key -> mapping: the op type for the default domain ("Add"), "domain.OpType" for
/// another ("ai.onnx.preview.training.Adam").
using OpTable = std::map<std::string, OpMapping, std::less<>>;

/// The domain of ONNX's optimizer ops.
inline constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";

/// True for the default ONNX domain ("" or "ai.onnx").
inline bool is_default_domain(std::string_view domain) {
  return domain.empty() || domain == "ai.onnx";
}

/// The node's key in the op table.
inline std::string op_key(const NodeProto& node) {
  return is_default_domain(node.domain) ? node.op_type : node.domain + "." + node.op_type;
}

/// Every mapped op type (built once).
const OpTable& op_table();

/// @cond INTERNAL: each family file fills in its part of the table.
void add_elementwise_ops(OpTable& table);
void add_reduction_ops(OpTable& table);
void add_shape_ops(OpTable& table);
void add_nn_ops(OpTable& table);
void add_norm_ops(OpTable& table);
void add_quantize_ops(OpTable& table);
void add_rnn_ops(OpTable& table);
void add_training_ops(OpTable& table);
/// @endcond

// ---- helpers the mappings share ----

/// Calls a Loom op by name through the boxed convention and returns its results.
/// @throws NotSupported if the op is not registered (a pack that has not landed yet)
Stack call_optional_op(std::string_view name, Stack args);
/// call_optional_op's first result, as a tensor.
Tensor call_optional_tensor_op(std::string_view name, Stack args);
/// True if the op is registered and has a kernel for the CPU.
bool has_op(std::string_view name);

/// The elements of an integral tensor (an ONNX shape, axes, pads ... input) as int64s.
std::vector<int64_t> int_values(const Tensor& t);
/// The single element of a one-element tensor, as a Scalar of its category.
Scalar scalar_value(const Tensor& t);
/// axis wrapped into [0, rank). @throws ValueError naming the node if out of range
int64_t wrap_axis(const NodeContext& ctx, int64_t axis, int64_t rank);
/// Every axis wrapped (see wrap_axis).
std::vector<int64_t> wrap_axes(const NodeContext& ctx, const std::vector<int64_t>& axes,
                               int64_t rank);
/// The sizes of t as a vector.
std::vector<int64_t> shape_of(const Tensor& t);
/// t converted to dtype unless it already has it.
Tensor cast_to(const Tensor& t, DType dtype);
/// A 0-dim tensor of the given dtype holding value.
Tensor scalar_tensor_of(const Scalar& value, DType dtype);
/// A one-output result.
inline std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

}  // namespace loom::onnx
