// The graph IR: printing and the node-by-node interpreter (loom/graph/graph.h).
#include "loom/graph/graph.h"

#include "loom/autograd/grad_mode.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/schema.h"

namespace loom::graph {
namespace {

std::string_view short_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
    case DType::Float16:
      return "f16";
    case DType::BFloat16:
      return "bf16";
    case DType::Int64:
      return "i64";
    case DType::Int32:
      return "i32";
    case DType::Int16:
      return "i16";
    case DType::Int8:
      return "i8";
    case DType::UInt8:
      return "u8";
    case DType::Bool:
      return "b8";
    default:
      return dtype_name(t);
  }
}

/// A meta tensor with t's sizes, strides, storage offset and dtype.
Tensor meta_of(const Tensor& t) { return empty_with_layout(t, Device(DeviceType::meta())); }

std::string value_list_str(const std::vector<int>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ", ";
    s += ids[i] < 0 ? std::string("None") : str_cat("%", ids[i]);
  }
  return s + "]";
}

std::string argument_str(const NodeArgument& a) {
  switch (a.kind) {
    case NodeArgument::Kind::Value:
      return a.value < 0 ? "None" : str_cat("%", a.value);
    case NodeArgument::Kind::ValueList:
    case NodeArgument::Kind::OptionalValueList:
      return value_list_str(a.values);
    case NodeArgument::Kind::Constant:
      if (a.constant.tag() == IValue::Tag::String)
        return str_cat("\"", a.constant.to_string(), "\"");
      return a.constant.repr();
  }
  return "?";
}

/// "" when t matches v (the guards of Graph::run), else what differs.
std::string input_guard_failure(const Value& v, const Tensor& t) {
  if (!t.defined()) return "the tensor is undefined";
  if (t.sizes() != v.meta.sizes()) {
    return str_cat("sizes ", sizes_str(t.sizes()), ", captured ", sizes_str(v.meta.sizes()));
  }
  if (t.dtype() != v.meta.dtype()) {
    return str_cat("dtype ", dtype_name(t.dtype()), ", captured ", dtype_name(v.meta.dtype()));
  }
  if (t.device() != v.device) {
    return str_cat("device ", t.device().str(), ", captured ", v.device.str());
  }
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) > 1 && t.stride(d) != v.meta.stride(d)) {
      return str_cat("strides ", sizes_str(t.strides()), ", captured ",
                     sizes_str(v.meta.strides()));
    }
  }
  if (t.requires_grad() != v.requires_grad) {
    return str_cat("requires_grad ", t.requires_grad() ? "true" : "false", ", captured ",
                   v.requires_grad ? "true" : "false");
  }
  return "";
}

}  // namespace

Tensor empty_with_layout(const Tensor& like, Device device) {
  int64_t extent = like.numel() == 0 ? 0 : like.storage_offset() + 1;
  for (int64_t d = 0; d < like.dim(); ++d) {
    if (like.numel() > 0) extent += (like.size(d) - 1) * like.stride(d);
  }
  return Tensor::empty({extent}, TensorOptions{}.with(like.dtype()).with(device))
      .as_strided_view(like.sizes(), like.strides(), like.storage_offset());
}

std::string value_type_str(const Value& v) {
  std::string s = str_cat(short_dtype(v.meta.dtype()), sizes_str(v.meta.sizes()));
  if (!v.device.is_cpu()) s += str_cat(" ", v.device.str());
  if (v.requires_grad) s += "!";
  return s;
}

int Graph::add_value(const Tensor& t) {
  Value v;
  v.id = static_cast<int>(values_.size());
  v.meta = meta_of(t);
  v.device = t.device();
  v.requires_grad = t.requires_grad();
  values_.push_back(std::move(v));
  return values_.back().id;
}

std::string Graph::str() const {
  std::string s = "graph(";
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Value& v = values_[inputs_[i]];
    s += str_cat(i ? ", " : "", "%", v.id, " : ", value_type_str(v));
  }
  s += "):\n";
  for (const auto& [id, t] : captured_) {
    s += str_cat("  %", id, " : ", value_type_str(values_[id]), " = captured\n");
  }
  for (const Node& n : nodes_) {
    std::string outs;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i] < 0) continue;
      const Value& v = values_[n.outputs[i]];
      outs += str_cat(outs.empty() ? "" : ", ", "%", v.id, " : ", value_type_str(v));
    }
    std::string args;
    for (size_t i = 0; i < n.arguments.size(); ++i) {
      args += str_cat(i ? ", " : "", argument_str(n.arguments[i]));
    }
    s += str_cat("  ", outs.empty() ? "" : outs + " = ", n.op.name(), "(", args, ")\n");
  }
  s += str_cat("  return ", value_list_str(outputs_), "\n");
  return s;
}

std::string Graph::guard_failure(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != inputs_.size()) {
    return str_cat(inputs.size(), " inputs, captured ", inputs_.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string why = input_guard_failure(values_[inputs_[i]], inputs[i]);
    if (!why.empty()) return str_cat("input ", i, ": ", why);
  }
  // A parameter frozen or unfrozen since (requires_grad_), or changed in place to other
  // metadata: the graph's gradients and fused groups were planned for what it was.
  for (const auto& [v, t] : captured_) {
    const std::string why = input_guard_failure(values_[v], t);
    if (!why.empty()) return str_cat("captured tensor %", v, ": ", why);
  }
  return "";
}

std::vector<Tensor> Graph::bind(const std::vector<Tensor>& inputs, std::string_view who) const {
  LOOM_CHECK(inputs.size() == inputs_.size(), who, ": expected ", inputs_.size(),
             " inputs, as captured, but got ", inputs.size());
  std::vector<Tensor> env(values_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string why = input_guard_failure(values_[inputs_[i]], inputs[i]);
    LOOM_CHECK(why.empty(), who, ": input ", i, " does not match the capture: ", why,
               " (the graph is valid for the captured metadata only; capture again)");
    env[inputs_[i]] = inputs[i];
  }
  for (const auto& [id, t] : captured_) env[id] = t;
  return env;
}

std::vector<Tensor> Graph::run(const std::vector<Tensor>& inputs) const {
  return execute(bind(inputs, "graph.run"));
}

std::vector<Tensor> Graph::propagate(const std::vector<Tensor>& inputs) const {
  LOOM_CHECK(inputs.size() == inputs_.size(), "graph.propagate: expected ", inputs_.size(),
             " inputs, as captured, but got ", inputs.size());
  std::vector<Tensor> env(values_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    LOOM_CHECK(inputs[i].defined(), "graph.propagate: input ", i, " is undefined");
    env[inputs_[i]] = meta_of(inputs[i]);
  }
  for (const auto& [id, t] : captured_) env[id] = values_[id].meta;
  return execute(std::move(env));
}

void Graph::call_node(const Node& n, std::vector<Tensor>& env) {
  auto tensor_of = [&](int id) { return id < 0 ? Tensor() : env[id]; };
  Stack stack;
  stack.reserve(n.arguments.size());
  for (const NodeArgument& a : n.arguments) {
    switch (a.kind) {
      case NodeArgument::Kind::Value:
        if (a.value < 0) {
          stack.emplace_back(std::nullopt);
        } else {
          stack.emplace_back(tensor_of(a.value));
        }
        break;
      case NodeArgument::Kind::ValueList: {
        std::vector<Tensor> list;
        for (int id : a.values) list.push_back(tensor_of(id));
        stack.emplace_back(std::move(list));
        break;
      }
      case NodeArgument::Kind::OptionalValueList: {
        std::vector<std::optional<Tensor>> list;
        for (int id : a.values) {
          list.push_back(id < 0 ? std::nullopt : std::optional<Tensor>(tensor_of(id)));
        }
        stack.emplace_back(std::move(list));
        break;
      }
      case NodeArgument::Kind::Constant:
        stack.push_back(a.constant);
        break;
    }
  }
  if (n.grad_enabled == autograd::GradMode::is_enabled()) {
    n.op.call_boxed(stack);
  } else {
    autograd::AutoGradMode mode(n.grad_enabled);  // as when captured
    n.op.call_boxed(stack);
  }
  if (n.list_output) {
    const std::vector<Tensor>& items = stack.at(0).to_tensor_list();
    for (size_t i = 0; i < n.outputs.size() && i < items.size(); ++i) env[n.outputs[i]] = items[i];
    return;
  }
  for (size_t i = 0; i < n.outputs.size() && i < stack.size(); ++i) {
    if (n.outputs[i] >= 0 && stack[i].is_tensor()) env[n.outputs[i]] = stack[i].to_tensor();
  }
}

std::vector<Tensor> Graph::outputs_of(const std::vector<Tensor>& env) const {
  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (int id : outputs_) out.push_back(id < 0 ? Tensor() : env[id]);
  return out;
}

std::vector<Tensor> Graph::execute(std::vector<Tensor> env) const {
  for (const Node& n : nodes_) call_node(n, env);
  return outputs_of(env);
}

}  // namespace loom::graph
