// Derivative kernels (Note [Derivative kernels] in loom/autograd/derivative.h) and the
// Autograd fallback for ops that have none.

#include "loom/autograd/derivative.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <shared_mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "autograd/functions.h"
#include "autograd/ops.h"
#include "autograd/trace.h"
#include "loom/autograd/anomaly.h"
#include "loom/autograd/grad_mode.h"
#include "loom/autograd/meta.h"
#include "loom/core/error.h"
#include "loom/core/registration.h"
#include "loom/dispatcher/boxing.h"

namespace loom::autograd {

enum class ArgKind : uint8_t { Other, Tensor, OptTensor, TensorList, OptTensorList };

// What a derivative kernel knows about its op, computed from the schema on first call.
struct Plan {
  std::string op_name;    // "aten::mul.Tensor"
  std::string node_name;  // "MulBackward0"
  const FunctionSchema* schema = nullptr;
  size_t nargs = 0;
  std::vector<ArgKind> arg_kind;
  std::vector<bool> arg_saved;
  std::vector<int> other_index;  // per argument: its place among the non-tensor ones, or -1
  size_t num_other = 0;
  std::vector<bool> ret_is_tensor, ret_is_list;
  std::vector<bool> ret_differentiable;  // false for DerivativeOptions::non_differentiable_outputs
  std::vector<int> ret_view_of;      // argument a return is a view of, or -1
  std::vector<size_t> saved_outputs;  // flat output indices
  bool inplace = false;               // arg 0 written and returned
  bool out_variant = false;           // writes into a returned argument other than self
  std::shared_ptr<const struct Spec> spec;  // the formula (nodes hold the plan only)
  mutable std::atomic<int64_t> live_nodes{0};  // Note [Graphs keep their plugin]
};

// Note [Graphs keep their plugin]: a node of a live graph runs its formula at backward(),
// and the formula's code and captured data (a stable-ABI backward function and its user
// data) belong to the plugin or library that registered the derivative. Nodes therefore own
// their plan (and through it the formula) by shared_ptr, so unregistering the kernel frees
// nothing a graph still needs (a C-ABI library's user data is released when the last node
// goes), and each plugin's live nodes are counted, so that PluginLoader::unload refuses,
// naming the nodes, while a graph of it is alive (live_graph_nodes_of).
struct PluginNodes {
  std::mutex mu;
  std::vector<std::weak_ptr<const Plan>> plans;  // the plugin's plans made so far
};

PluginNodes& nodes_of(const std::string& plugin) {
  static std::mutex mu;
  static auto* by_plugin = new absl::flat_hash_map<std::string, std::unique_ptr<PluginNodes>>();
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*by_plugin)[plugin];
  if (!slot) slot = std::make_unique<PluginNodes>();
  return *slot;
}

struct Spec {
  std::vector<std::string> saves;
  BackwardFormula formula;
  DerivativeOptions options;
  std::string plugin;  // who registered it ("" for the program itself)
};

namespace {

ArgKind kind_of(const Type& t) {
  if (t.kind == TypeKind::Tensor) return ArgKind::Tensor;
  if (t.kind == TypeKind::Optional && t.element().kind == TypeKind::Tensor) return ArgKind::OptTensor;
  if (t.kind == TypeKind::List) {
    const Type& e = t.element();
    if (e.kind == TypeKind::Tensor) return ArgKind::TensorList;
    if (e.kind == TypeKind::Optional && e.element().kind == TypeKind::Tensor) {
      return ArgKind::OptTensorList;
    }
  }
  return ArgKind::Other;
}

std::string node_name_for(const std::string& base) {
  std::string out;
  bool upper = true;
  for (char c : base) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Backward0";
}

bool same_alias_set(const std::optional<AliasInfo>& a, const std::optional<AliasInfo>& b) {
  return a && b && !a->before_set.empty() && !b->before_set.empty() &&
         a->before_set[0] == b->before_set[0];
}

std::shared_ptr<const Plan> make_plan(const OperatorHandle& op,
                                      const std::shared_ptr<const Spec>& spec_ptr) {
  const Spec& spec = *spec_ptr;
  auto p = std::make_shared<Plan>();
  p->spec = spec_ptr;
  if (!spec.plugin.empty()) {
    PluginNodes& n = nodes_of(spec.plugin);
    std::lock_guard<std::mutex> lock(n.mu);
    std::erase_if(n.plans, [](const auto& w) { return w.expired(); });
    n.plans.push_back(p);
  }
  const FunctionSchema& s = op.schema();
  p->schema = &s;
  p->op_name = op.name();
  p->node_name = node_name_for(s.name());
  p->nargs = s.arguments().size();
  p->arg_saved.assign(p->nargs, false);
  for (const Argument& a : s.arguments()) {
    p->arg_kind.push_back(kind_of(a.type));
    const bool other = p->arg_kind.back() == ArgKind::Other;
    p->other_index.push_back(other ? static_cast<int>(p->num_other++) : -1);
  }
  for (const std::string& name : spec.saves) {
    if (name.starts_with("result")) {
      const size_t i = name == "result" ? 0 : std::stoul(name.substr(6));
      LOOM_CHECK_T(RegistrationError, i < s.returns().size(), "derivative for ", op.name(),
                   ": saves '", name, "' but the op has ", s.returns().size(), " returns");
      p->saved_outputs.push_back(i);
      continue;
    }
    auto idx = s.argument_index(name);
    LOOM_CHECK_T(RegistrationError, idx && p->arg_kind[*idx] != ArgKind::Other,
                 "derivative for ", op.name(), ": saves '", name,
                 "', which is not a tensor argument of '", s.str(), "'");
    p->arg_saved[*idx] = true;
  }
  const auto& args = s.arguments();
  const auto& rets = s.returns();
  for (size_t i = 0; i < rets.size(); ++i) {
    const auto& nd = spec.options.non_differentiable_outputs;
    p->ret_differentiable.push_back(std::find(nd.begin(), nd.end(), i) == nd.end());
  }
  for (size_t i : spec.options.non_differentiable_outputs) {
    LOOM_CHECK_T(RegistrationError, i < rets.size(), "derivative for ", op.name(),
                 ": non-differentiable output ", i, " but the op has ", rets.size(), " returns");
  }
  for (const Argument& r : rets) {
    const ArgKind k = kind_of(r.type);
    p->ret_is_tensor.push_back(k == ArgKind::Tensor || k == ArgKind::OptTensor);
    p->ret_is_list.push_back(k == ArgKind::TensorList);
    int view_of = -1;
    if (r.alias && !r.alias->is_write) {
      for (size_t i = 0; i < args.size(); ++i) {
        if (same_alias_set(args[i].alias, r.alias)) view_of = static_cast<int>(i);
      }
    }
    p->ret_view_of.push_back(view_of);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].alias || !args[i].alias->is_write) continue;
    bool returned = false;
    for (const Argument& r : rets) returned |= same_alias_set(args[i].alias, r.alias);
    if (!returned) continue;  // written but not returned (batch norm's running stats)
    if (i == 0 && !rets.empty() && same_alias_set(args[0].alias, rets[0].alias) &&
        !args[0].kwarg_only) {
      p->inplace = true;
    } else {
      p->out_variant = true;
    }
  }
  return p;
}

}  // namespace

// ------------------------------------------------------------------------- the node

class DerivativeNode final : public Node {
 public:
  // Owns its plan, and so the formula: Note [Graphs keep their plugin].
  explicit DerivativeNode(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {
    plan_->live_nodes.fetch_add(1, std::memory_order_relaxed);
  }
  ~DerivativeNode() override { plan_->live_nodes.fetch_sub(1, std::memory_order_relaxed); }
  std::string name() const override { return plan_->node_name; }

  variable_list apply(variable_list&& grads) override {
    uint64_t arrived = 0;
    for (size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].defined()) arrived |= uint64_t{1} << std::min<size_t>(i, 63);
    }
    if (arrived == 0) return variable_list(num_outputs());
    for (size_t i = 0; i < grads.size(); ++i) {
      const InputMetadata& m = input_metadata(i);
      if (!grads[i].defined() && m.differentiable) {
        grads[i] = ops::zeros({m.sizes.data(), m.sizes.size()}, m.dtype, m.device);
      }
    }
    BackwardContext ctx(*this, grads, arrived);
    return plan_->spec->formula(ctx);
  }

  void release_variables() override {
    for (auto& [arg, t] : saved_inputs_) t.reset();
    for (auto& [out, t] : saved_outputs_) t.reset();
  }
  void take_references(NodeReferences& out) override {
    Node::take_references(out);
    for (auto& [arg, t] : saved_inputs_) t.take(out.tensors);
    for (auto& [o, t] : saved_outputs_) t.take(out.tensors);
  }

  std::shared_ptr<const Plan> plan_;     // Note [Graphs keep their plugin]
  std::shared_ptr<void> keep_alive_;     // DerivativeOptions::keep_alive, while it lives
  absl::InlinedVector<IValue, 2> args_;  // the non-tensor arguments, in schema order
  absl::InlinedVector<std::pair<uint32_t, SavedTensor>, 2> saved_inputs_;
  absl::InlinedVector<std::pair<uint32_t, SavedTensor>, 1> saved_outputs_;
  absl::InlinedVector<uint32_t, 4> slot_start_;  // per argument (+ one past the end)
  struct SlotMeta {
    DimVector sizes;
    DType dtype = DType::Float32;
  };
  absl::InlinedVector<SlotMeta, 3> slot_meta_;
};

// ------------------------------------------------------------------------- BackwardContext

namespace {
size_t arg_index(const DerivativeNode& n, std::string_view name) {
  auto idx = n.plan_->schema->argument_index(name);
  LOOM_CHECK(idx.has_value(), n.plan_->op_name, " backward: no argument named '", name, "'");
  return *idx;
}
}  // namespace

const Tensor& BackwardContext::grad(size_t output) const {
  LOOM_CHECK(output < grads_.size(), node_.plan_->op_name, " backward: no output ", output);
  return grads_[output];
}

bool BackwardContext::has_grad(size_t output) const {
  return output < grads_.size() && ((arrived_ >> std::min<size_t>(output, 63)) & 1);
}

bool BackwardContext::needs_grad(size_t slot) const {
  return slot < node_.next_edges().size() && node_.next_edges()[slot].is_valid();
}

bool BackwardContext::needs_grad(std::string_view arg) const { return needs_grad(slot(arg)); }

Tensor BackwardContext::saved(std::string_view arg) const {
  const size_t i = arg_index(node_, arg);
  for (const auto& [a, t] : node_.saved_inputs_) {
    if (a == i) return t.unpack();
  }
  LOOM_THROW(ValueError, node_.plan_->op_name, " backward: the formula reads '", arg,
             "' but does not list it in its saves");
}

std::vector<Tensor> BackwardContext::saved_list(std::string_view arg) const {
  const size_t i = arg_index(node_, arg);
  std::vector<Tensor> out;
  for (const auto& [a, t] : node_.saved_inputs_) {
    if (a == i) out.push_back(t.unpack());
  }
  return out;
}

Tensor BackwardContext::result(size_t output) const {
  for (const auto& [o, t] : node_.saved_outputs_) {
    if (o == output) return t.unpack(node_.shared_from_this());
  }
  LOOM_THROW(ValueError, node_.plan_->op_name, " backward: the formula reads result ", output,
             " but does not list it in its saves");
}

const IValue& BackwardContext::arg(std::string_view name) const {
  const size_t i = arg_index(node_, name);
  const int at = node_.plan_->other_index[i];
  LOOM_CHECK(at >= 0, node_.plan_->op_name, " backward: '", name,
             "' is a tensor argument; read it with saved()");
  return node_.args_[static_cast<size_t>(at)];
}

IntArrayRef BackwardContext::ints(std::string_view name) const {
  const IValue& v = arg(name);
  if (v.is_none()) return {};
  const auto& l = v.to_int_list();
  return {l.data(), l.size()};
}

IntArrayRef BackwardContext::input_sizes(size_t slot) const {
  LOOM_CHECK(slot < node_.slot_meta_.size(), node_.plan_->op_name, " backward: no slot ", slot);
  const auto& s = node_.slot_meta_[slot].sizes;
  return {s.data(), s.size()};
}

IntArrayRef BackwardContext::input_sizes(std::string_view arg) const {
  return input_sizes(slot(arg));
}

DType BackwardContext::input_dtype(size_t slot) const {
  LOOM_CHECK(slot < node_.slot_meta_.size(), node_.plan_->op_name, " backward: no slot ", slot);
  return node_.slot_meta_[slot].dtype;
}

size_t BackwardContext::slot(std::string_view arg) const {
  return node_.slot_start_[arg_index(node_, arg)];
}

size_t BackwardContext::num_slots() const { return node_.slot_meta_.size(); }

const std::string& BackwardContext::op_name() const { return node_.plan_->op_name; }

// ------------------------------------------------------------------------- the kernel

namespace {

void redispatch(const OperatorHandle& op, Stack& stack, size_t base) {
  // Below autograd (one thread-local lookup serves the guard and the key computation).
  struct Below {
    LocalDispatchKeySet& tls = local_dispatch_key_set();
    const DispatchKeySet previous = tls.excluded;
    Below() { tls.excluded = previous.add(DispatchKey::Autograd); }
    ~Below() { tls.excluded = previous; }
  } below;
  DispatchKeySet ks;
  for (size_t i = base; i < stack.size(); ++i) {
    const IValue& v = stack[i];
    if (v.is_tensor()) {
      ks = ks | v.to_tensor().key_set();
    } else if (v.tag() == IValue::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) ks = ks | t.key_set();
    } else if (v.tag() == IValue::Tag::OptionalTensorList) {
      for (const auto& t : v.to_optional_tensor_list()) {
        if (t) ks = ks | t->key_set();
      }
    }
  }
  ks = (ks | below.tls.included) & ~below.tls.excluded;
  const KernelFunction* k = op.entry()->lookup(ks);
  if (k == nullptr) {
    Stack args(stack.begin() + static_cast<std::ptrdiff_t>(base), stack.end());
    Dispatcher::instance().report_missing_kernel(op, ks, args);
  }
  k->call_boxed(op, stack);
}

bool requires_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }

// An undefined tensor to bind references to (`cond ? v.to_tensor() : Tensor()` would copy).
const Tensor kUndefined;

// Note [An input returned as the output]: a kernel may hand back one of its inputs itself (a
// custom C kernel returning TensorRetain(args[0]), an identity written in C++) for a return
// the schema does not declare an alias of it. That input cannot become the node's output (it
// would take the node as its own history, a leaf included), and leaving it out silently
// skipped the op's derivative: y = op(x) was x, and backward never ran the formula. As
// PyTorch does for custom Functions, such a return becomes a new tensor aliasing the input
// (same storage and version counter), whose history is the node. A return declared an alias
// (`Tensor(a)`, contiguous() of a contiguous tensor) stays the input: it is a view, and its
// derivative is the identity.
template <typename IsInput>
void own_returned_inputs(const Plan& p, Stack& stack, size_t base, const IsInput& is_input) {
  auto returned_input = [&](const Tensor& t) {
    return t.defined() && is_floating_point(t.dtype()) && is_input(t);
  };
  auto alias_of = [](const Tensor& t) {
    return t.as_strided_view(t.sizes(), t.strides(), t.storage_offset());
  };
  for (size_t r = 0; r < p.ret_is_tensor.size(); ++r) {
    if (p.ret_view_of[r] >= 0 || (p.inplace && r == 0) || !p.ret_differentiable[r]) continue;
    IValue& v = stack[base + r];
    if (p.ret_is_tensor[r] && v.is_tensor() && returned_input(v.to_tensor())) {
      v = IValue(alias_of(v.to_tensor()));
    } else if (p.ret_is_list[r] && v.tag() == IValue::Tag::TensorList) {
      const std::vector<Tensor>& list = v.to_tensor_list();
      if (std::none_of(list.begin(), list.end(), returned_input)) continue;
      std::vector<Tensor> owned = list;
      for (Tensor& t : owned) {
        if (returned_input(t)) t = alias_of(t);
      }
      v = IValue(std::move(owned));
    }
  }
}

// Runs op at the Autograd key for plan/spec (Note [Derivative kernels]).
void record(const OperatorHandle& op, Stack& stack, const std::shared_ptr<const Plan>& plan) {
  const Plan& p = *plan;
  const size_t base = stack.size() - p.nargs;
  bool any = false;
  for (size_t i = 0; i < p.nargs && !any; ++i) {
    const IValue& v = stack[base + i];
    switch (p.arg_kind[i]) {
      case ArgKind::Tensor:
      case ArgKind::OptTensor:
        any = v.is_tensor() && requires_grad(v.to_tensor());
        break;
      case ArgKind::TensorList:
        for (const Tensor& t : v.to_tensor_list()) any |= requires_grad(t);
        break;
      default:
        break;
    }
  }
  if (!any) return redispatch(op, stack, base);
  LOOM_CHECK_T(AutogradError, !p.out_variant, p.op_name,
               "(): functions with out=... arguments don't support automatic differentiation, "
               "but one of the arguments requires grad.");
  if (p.inplace) check_inplace(stack[base].to_tensor(), p.op_name);

  auto node = make_node<DerivativeNode>(plan);
  node->keep_alive_ = p.spec->options.keep_alive.lock();
  node->args_.reserve(p.num_other);
  auto& edges = node->mutable_next_edges();
  std::vector<Tensor> view_sources;  // arguments returns may be views of
  absl::InlinedVector<const TensorImpl*, 4> inputs;  // the tensor arguments
  for (size_t i = 0; i < p.nargs; ++i) {
    node->slot_start_.push_back(static_cast<uint32_t>(edges.size()));
    const IValue& v = stack[base + i];
    auto add_slot = [&](const Tensor& t) {
      DerivativeNode::SlotMeta m;
      if (t.defined()) {
        m.sizes.assign(t.sizes().begin(), t.sizes().end());
        m.dtype = t.dtype();
      }
      node->slot_meta_.push_back(std::move(m));
      edges.push_back(requires_grad(t) ? gradient_edge(t) : Edge{});
      if (t.defined()) inputs.push_back(t.impl());
      if (p.arg_saved[i]) {
        if (p.inplace && i == 0) {
          // self is about to be overwritten: the formula gets its value from before, a
          // clone that is recorded itself so that a double backward reaches self's history.
          node->saved_inputs_.emplace_back(i, SavedTensor(ops::clone(t), false));
        } else {
          node->saved_inputs_.emplace_back(i, SavedTensor(t, false));
        }
      }
    };
    switch (p.arg_kind[i]) {
      case ArgKind::Tensor:
      case ArgKind::OptTensor:
        add_slot(v.is_tensor() ? v.to_tensor() : kUndefined);  // no copy of the tensor
        break;
      case ArgKind::TensorList:
        for (const Tensor& t : v.to_tensor_list()) add_slot(t);
        break;
      case ArgKind::OptTensorList:
        for (const auto& t : v.to_optional_tensor_list()) add_slot(t ? *t : kUndefined);
        break;
      case ArgKind::Other:
        node->args_.push_back(v);
        break;
    }
  }
  node->slot_start_.push_back(static_cast<uint32_t>(edges.size()));
  for (int src : p.ret_view_of) {  // the stack holds the returns after the call
    if (src < 0) continue;
    view_sources.resize(p.nargs);
    view_sources[src] = stack[base + src].to_tensor();
  }

  redispatch(op, stack, base);

  // The returns now sit at stack[base ...]. Floating outputs become the node's outputs.
  bool differentiable = false;
  absl::InlinedVector<Tensor, 2> outputs;
  auto is_input = [&](const Tensor& t) {
    return std::find(inputs.begin(), inputs.end(), t.impl()) != inputs.end();
  };
  // After this only a return declared an alias can still be an input, and it is not attached.
  own_returned_inputs(p, stack, base, is_input);
  auto attach = [&](const Tensor& t, int view_of, bool is_self, bool has_gradient) {
    if (has_gradient && t.defined() && is_floating_point(t.dtype()) &&
        (is_self || !is_input(t))) {
      const uint32_t nr = node->add_input_metadata(t);
      if (is_self) {
        rebase_history(t, node);
      } else {
        set_history(t, node, nr);
        if (view_of >= 0) set_view_of(t, view_sources[view_of]);
      }
      differentiable = true;
    } else {
      node->add_input_metadata_undifferentiable();
    }
    if (!p.saved_outputs.empty()) outputs.push_back(t);
  };
  for (size_t r = 0; r < p.ret_is_tensor.size(); ++r) {
    const IValue& v = stack[base + r];
    if (p.ret_is_list[r]) {
      for (const Tensor& t : v.to_tensor_list()) {
        attach(t, p.ret_view_of[r], false, p.ret_differentiable[r]);
      }
    } else if (p.ret_is_tensor[r]) {
      attach(v.is_tensor() ? v.to_tensor() : kUndefined, p.ret_view_of[r], p.inplace && r == 0,
             p.ret_differentiable[r]);
    }
  }
  if (!differentiable) return;
  for (size_t o : p.saved_outputs) {
    if (o < outputs.size()) node->saved_outputs_.emplace_back(o, SavedTensor(outputs[o], true));
  }
  if (AnomalyMode::is_enabled()) node->set_creation_trace(capture_trace(p.op_name));
}

struct DerivativeKernel {
  std::shared_ptr<const Spec> spec;
  // The plan is made on the first call (the schema is needed); later calls only load a flag
  // (std::call_once would touch thread-local state on every call).
  mutable std::atomic<bool> ready{false};
  mutable std::mutex mu;
  mutable std::shared_ptr<const Plan> plan;

  void operator()(const OperatorHandle& op, Stack& stack) const {
    if (!ready.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mu);
      if (!plan) plan = make_plan(op, spec);
      ready.store(true, std::memory_order_release);
    }
    record(op, stack, plan);
  }
};

}  // namespace

KernelFunction derivative_kernel(std::vector<std::string> saves, BackwardFormula formula,
                                 DerivativeOptions options) {
  auto k = std::make_shared<DerivativeKernel>();
  k->spec = std::make_shared<Spec>(
      Spec{std::move(saves), std::move(formula), std::move(options), current_registering_plugin()});
  return KernelFunction::from_boxed(
      [k](const OperatorHandle& op, Stack& stack) { (*k)(op, stack); });
}

namespace {
std::string inplace_name(std::string_view op) {
  const size_t dot = op.find('.');
  std::string base(op.substr(0, dot));
  std::string rest(dot == std::string_view::npos ? "" : op.substr(dot));
  return base + "_" + rest;
}
std::string qualified(const Library& m, std::string_view op) {
  return op.find("::") == std::string_view::npos ? loom::str_cat(m.ns(), "::", op)
                                                 : std::string(op);
}

// True if inplace's schema is functional's with self written: the same arguments by name
// and type ("pow_.Scalar" is the in-place form of pow.Tensor_Scalar, not of pow.Scalar).
bool is_inplace_form(const FunctionSchema& functional, const FunctionSchema& inplace) {
  const auto& a = functional.arguments();
  const auto& b = inplace.arguments();
  if (a.size() != b.size() || b.empty() || !b[0].alias || !b[0].alias->is_write) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].type.str() != b[i].type.str()) return false;
  }
  return true;
}

}  // namespace

void derivative(Library& m, std::string_view op, std::vector<std::string> saves,
                BackwardFormula formula, DerivativeOptions options, std::source_location loc) {
  m.impl_kernel(op, std::nullopt, derivative_kernel(saves, formula, options), loc);
  const std::string inplace = inplace_name(op);
  const auto inplace_op = Dispatcher::instance().find_op(qualified(m, inplace));
  const auto functional_op = Dispatcher::instance().find_op(qualified(m, op));
  if (inplace_op && functional_op &&
      is_inplace_form(functional_op->schema(), inplace_op->schema())) {
    m.impl_kernel(inplace, std::nullopt,
                  derivative_kernel(std::move(saves), std::move(formula), std::move(options)), loc);
  }
}

void derivative_inplace_only(Library& m, std::string_view inplace_op,
                             std::vector<std::string> saves, BackwardFormula formula,
                             std::source_location loc) {
  m.impl_kernel(inplace_op, std::nullopt,
                derivative_kernel(std::move(saves), std::move(formula)), loc);
}

std::string live_graph_nodes_of(const std::string& plugin) {
  PluginNodes& n = nodes_of(plugin);
  std::lock_guard<std::mutex> lock(n.mu);
  int64_t total = 0;
  std::string names;
  for (const auto& w : n.plans) {
    const std::shared_ptr<const Plan> p = w.lock();
    const int64_t live = p ? p->live_nodes.load(std::memory_order_relaxed) : 0;
    if (live <= 0) continue;
    total += live;
    names += loom::str_cat(names.empty() ? "" : ", ", p->node_name, " x", live);
  }
  return total == 0 ? std::string()
                    : loom::str_cat(total, total == 1 ? " autograd node" : " autograd nodes",
                                    " of live graphs (", names, ")");
}

KernelFunction not_differentiable_kernel() {
  return KernelFunction::from_boxed([](const OperatorHandle& op, Stack& stack) {
    redispatch(op, stack, stack.size() - op.schema().arguments().size());
  });
}

// ------------------------------------------------------------------------- the fallback

namespace {

// Ops without an Autograd kernel: their outputs get a node that fails in backward naming
// the op; out= variants and in-place ops follow the same rules as ops with a formula.
class Fallback {
 public:
  void operator()(const OperatorHandle& op, Stack& stack) {
    std::shared_ptr<const Plan> entry;
    {
      std::shared_lock lock(mu_);
      if (auto it = plans_.find(op.entry()); it != plans_.end()) entry = it->second;
    }
    if (!entry) {
      auto spec = std::make_shared<Spec>();
      spec->formula = [name = op.name()](BackwardContext&) -> variable_list {
        LOOM_THROW(NotImplementedError, "the derivative for '", name,
                   "' is not implemented (no formula is registered for it at the Autograd key)");
      };
      auto plan = make_plan(op, spec);
      std::unique_lock lock(mu_);
      entry = plans_.try_emplace(op.entry(), std::move(plan)).first->second;
    }
    record(op, stack, entry);
  }

 private:
  std::shared_mutex mu_;
  absl::flat_hash_map<const OperatorEntry*, std::shared_ptr<const Plan>> plans_;
};

// Registered by the core itself: every op reached at the Autograd key has some kernel there.
// Registered once for the process; the handle is an object (not a leaked pointer, which
// LeakSanitizer reports once the optimiser drops the unused global).
const RegistrationHandle g_fallback = [] {
  auto fb = std::make_shared<Fallback>();
  return Dispatcher::instance().fallback(
      DispatchKey::Autograd,
      KernelFunction::from_boxed([fb](const OperatorHandle& op, Stack& stack) { (*fb)(op, stack); }),
      Origin::here());
}();

}  // namespace

}  // namespace loom::autograd
