// NodeContext, the op table, and the helpers every mapping family shares.
#include "onnx_ops.h"

#include "loom/core/str_cat.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/core.h"

namespace loom::onnx {

const Tensor& NodeContext::input(size_t i) const {
  if (!has_input(i)) {
    throw ValueError(str_cat(where(), ": input ", i, " is required but absent"));
  }
  return inputs_[i];
}

const AttributeProto* NodeContext::find_attr(std::string_view name) const {
  for (const AttributeProto& a : node_.attribute) {
    if (a.name == name) {
      read_.insert(a.name);
      if (!a.ref_attr_name.empty()) {
        throw NotSupported(str_cat(where(), ": attribute '", name, "' refers to a function's"));
      }
      return &a;
    }
  }
  return nullptr;
}

const AttributeProto* NodeContext::find_typed(std::string_view name, AttributeType type) const {
  const AttributeProto* a = find_attr(name);
  // IR version 1 models may leave `type` unset; then the field in use decides.
  if (a != nullptr && a->type != 0 && a->type != static_cast<int32_t>(type)) {
    throw ValueError(str_cat(where(), ": attribute '", name, "' has type ", a->type,
                             ", expected ", static_cast<int32_t>(type)));
  }
  return a;
}

bool NodeContext::has_attr(std::string_view name) const { return find_attr(name) != nullptr; }

int64_t NodeContext::attr_int(std::string_view name, int64_t def) const {
  const AttributeProto* a = find_typed(name, AttributeType::Int);
  return a ? a->i : def;
}

float NodeContext::attr_float(std::string_view name, float def) const {
  const AttributeProto* a = find_typed(name, AttributeType::Float);
  return a ? a->f : def;
}

std::string NodeContext::attr_string(std::string_view name, std::string_view def) const {
  const AttributeProto* a = find_typed(name, AttributeType::String);
  return a ? a->s : std::string(def);
}

std::optional<std::vector<int64_t>> NodeContext::attr_ints(std::string_view name) const {
  const AttributeProto* a = find_typed(name, AttributeType::Ints);
  if (a == nullptr) return std::nullopt;
  return a->ints;
}

std::optional<std::vector<float>> NodeContext::attr_floats(std::string_view name) const {
  const AttributeProto* a = find_typed(name, AttributeType::Floats);
  if (a == nullptr) return std::nullopt;
  return a->floats;
}

std::optional<std::vector<std::string>> NodeContext::attr_strings(std::string_view name) const {
  const AttributeProto* a = find_typed(name, AttributeType::Strings);
  if (a == nullptr) return std::nullopt;
  return a->strings;
}

const TensorProto* NodeContext::attr_tensor(std::string_view name) const {
  const AttributeProto* a = find_typed(name, AttributeType::Tensor);
  if (a == nullptr) return nullptr;
  if (a->t.empty()) throw ValueError(str_cat(where(), ": attribute '", name, "' holds no tensor"));
  return &a->t.front();
}

void NodeContext::check_all_attributes_read() const {
  for (const AttributeProto& a : node_.attribute) {
    if (!read_.contains(a.name)) {
      throw NotSupported(str_cat(where(), ": attribute '", a.name, "' is not handled"));
    }
  }
}

std::string NodeContext::where() const { return str_cat(node_.op_type, " (opset ", opset_, ")"); }

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_reduction_ops(t);
    add_shape_ops(t);
    add_nn_ops(t);
    add_norm_ops(t);
    add_quantize_ops(t);
    add_rnn_ops(t);
    add_training_ops(t);
    return t;
  }();
  return table;
}

bool has_op(std::string_view name) {
  const std::optional<OperatorHandle> op = Dispatcher::instance().find_op(name);
  if (!op || !op->has_schema()) return false;
  for (const KernelInfo& k : Dispatcher::instance().kernels(*op)) {
    if (k.key == DispatchKey::CPU) return true;
  }
  return false;
}

Stack call_optional_op(std::string_view name, Stack args) {
  if (!has_op(name)) throw NotSupported(str_cat(name, " is not registered"));
  Dispatcher::instance().find_op(name)->call_boxed(args);
  return args;
}

Tensor call_optional_tensor_op(std::string_view name, Stack args) {
  Stack results = call_optional_op(name, std::move(args));
  LOOM_CHECK(!results.empty(), name, " returned nothing");
  return results.front().to_tensor();
}

std::vector<int64_t> int_values(const Tensor& t) { return to_int64s(t); }

Scalar scalar_value(const Tensor& t) {
  LOOM_CHECK(t.numel() == 1, "expected a one-element tensor, got ", t.describe());
  if (is_floating_point(t.dtype())) return Scalar(to_doubles(t).front());
  if (t.dtype() == DType::Bool) return Scalar(to_int64s(t).front() != 0);
  return Scalar(to_int64s(t).front());
}

int64_t wrap_axis(const NodeContext& ctx, int64_t axis, int64_t rank) {
  const int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (axis < lo || axis > hi) {
    throw ValueError(str_cat(ctx.where(), ": axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + std::max<int64_t>(rank, 1) : axis;
}

std::vector<int64_t> wrap_axes(const NodeContext& ctx, const std::vector<int64_t>& axes,
                               int64_t rank) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) out.push_back(wrap_axis(ctx, a, rank));
  return out;
}

std::vector<int64_t> shape_of(const Tensor& t) {
  const IntArrayRef s = t.sizes();
  return std::vector<int64_t>(s.begin(), s.end());
}

Tensor cast_to(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : to(t, dtype); }

Tensor scalar_tensor_of(const Scalar& value, DType dtype) {
  return cast_to(full({}, value, std::nullopt), dtype);
}

}  // namespace loom::onnx
