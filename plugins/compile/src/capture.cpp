// Capture at the Tracing key (loom/graph/capture.h): a boxed fallback that records each op the
// capturing thread calls and redispatches below Tracing.
#include "loom/graph/capture.h"

#include <cstdio>

#include "absl/container/flat_hash_map.h"
#include "decompose.h"
#include "logs.h"
#include "loom/autograd/grad_mode.h"
#include "loom/core/error.h"
#include "loom/core/generator.h"
#include "loom/core/registration.h"
#include "loom/core/str_cat.h"
#include "loom/core/value_reads.h"
#include "loom/dispatcher/dispatch_key.h"
#include "loom/dispatcher/schema.h"

namespace loom::graph {
namespace {

/// The capture in progress on one thread: the graph so far and which value each tensor is.
struct Recorder {
  Graph graph;
  bool decompose = false;  // record decomposable composites as their parts (decompose.h)
  absl::flat_hash_map<const TensorImpl*, int> ids;
  std::vector<Tensor> keep;  // every recorded tensor, so that no address is reused meanwhile
  uint64_t reads_seen = 0;   // host_value_reads() when the last op returned
  std::string first_read;    // where the function first read a value itself ("": nowhere yet)
  std::string not_replayable;  // why a replay could not redo what the function did ("": none)

  /// Whether the function read a value since the last op returned.
  bool read_since() const { return host_value_reads() != reads_seen; }
  /// Notes that it did, where: "before aten::mul.Scalar (op 3 of its trace)".
  void note_read(const std::string& where) {
    if (first_read.empty()) first_read = str_cat("with Tensor::item() ", where);
  }

  /// A new value for t (an input, or an op's result), which t now stands for.
  int bind(const Tensor& t) {
    const int v = graph.add_value(t);
    ids[t.impl()] = v;
    keep.push_back(t);
    return v;
  }
  /// The value t stands for; a tensor the function did not receive or make (a parameter, a
  /// tensor it closed over) becomes a captured value.
  int value_of(const Tensor& t) {
    if (auto it = ids.find(t.impl()); it != ids.end()) return it->second;
    if (const int v = alias_of(t); v >= 0) {
      if (!t.requires_grad() && value_requires_grad(v)) return detached(t, v);
      if (t.requires_grad() && t.grad_fn() == nullptr) {
        // x.detach().requires_grad_(): a new leaf over x's data, whose gradient is its own.
        // No op made it, so a replay could not make it either: the calls run eagerly.
        if (not_replayable.empty()) {
          not_replayable =
              "it made a new leaf tensor that requires grad over another value's "
              "data without an op (detach().requires_grad_()), which a replay "
              "cannot make";
        }
      }
      ids[t.impl()] = v;
      keep.push_back(t);
      return v;
    }
    const int v = bind(t);
    graph.add_captured(v, t);
    return v;
  }

  /// Whether value v's tensor requires grad now.
  bool value_requires_grad(int v) const {
    for (size_t i = keep.size(); i-- > 0;) {
      if (ids.at(keep[i].impl()) == v) return keep[i].requires_grad();
    }
    return false;
  }

  /// t is value v detached (Tensor::detach(), no op): recorded as a node that makes the same
  /// view of v with grad mode off, so that a replay cuts the gradient there too.
  int detached(const Tensor& t, int v) {
    static const OperatorHandle as_strided =
        Dispatcher::instance().find_op_or_throw("aten::as_strided");
    Node node{as_strided, {}, {}, false};
    node.grad_enabled = false;
    NodeArgument self;
    self.kind = NodeArgument::Kind::Value;
    self.value = v;
    node.arguments.push_back(self);
    // The offset is not a constant: alias_of matched t to v at v's offset, and a replay's
    // input may sit at another (None: self's own).
    for (IValue c : {IValue(t.sizes().vec()), IValue(t.strides().vec()), IValue(std::nullopt)}) {
      NodeArgument a;
      a.constant = std::move(c);
      node.arguments.push_back(std::move(a));
    }
    const int out = bind(t);
    node.outputs.push_back(out);
    graph.add_node(std::move(node));
    return out;
  }

  // Note [Aliases made outside ops]: detach(), autograd's saved tensors and the like make a
  // new TensorImpl over a value's storage without an op the tracer sees. A tensor with the
  // storage, offset, sizes, strides and dtype of a value (the latest such) is that value.
  int alias_of(const Tensor& t) const {
    for (size_t i = keep.size(); i-- > 0;) {
      const Tensor& k = keep[i];
      if (k.is_alias_of(t) && k.storage_offset() == t.storage_offset() && k.dtype() == t.dtype() &&
          k.sizes() == t.sizes() && k.strides() == t.strides()) {
        return ids.at(k.impl());
      }
    }
    return -1;
  }

  NodeArgument argument(const IValue& v) {
    NodeArgument a;
    if (v.is_tensor() && v.to_tensor().defined()) {
      a.kind = NodeArgument::Kind::Value;
      a.value = value_of(v.to_tensor());
    } else if (v.tag() == IValue::Tag::TensorList) {
      a.kind = NodeArgument::Kind::ValueList;
      for (const Tensor& t : v.to_tensor_list()) a.values.push_back(t.defined() ? value_of(t) : -1);
    } else if (v.tag() == IValue::Tag::OptionalTensorList) {
      a.kind = NodeArgument::Kind::OptionalValueList;
      for (const std::optional<Tensor>& t : v.to_optional_tensor_list()) {
        a.values.push_back(t && t->defined() ? value_of(*t) : -1);
      }
    } else {
      a.constant = v;  // scalars, strings, dtypes, None, an undefined tensor
    }
    return a;
  }
};

thread_local Recorder* t_recorder = nullptr;

// Note [The Tracing fallback]: it records, then redispatches below Tracing, so that the call
// runs as it would untraced and the ops its kernels call are not recorded (they run with
// Tracing excluded). A thread that is not capturing never reaches it: Tracing is only in a
// capturing thread's included set.
void trace(const OperatorHandle& op, Stack& stack) {
  Recorder* r = t_recorder;
  // Note [Decompositions] (decompose.cpp): the parts are called with Tracing still on, so
  // each is recorded (and runs through autograd) as if the function had called it.
  if (r != nullptr && r->decompose && detail::decompose_call(op, stack)) return;
  ExcludeDispatchKeyGuard below(DispatchKeySet(DispatchKey::Tracing));
  if (r == nullptr) {
    op.call_boxed(stack);
    return;
  }
  Node node{op, {}, {}, false};
  node.grad_enabled = autograd::GradMode::is_enabled();
  node.arguments.reserve(stack.size());
  for (const IValue& v : stack) node.arguments.push_back(r->argument(v));
  // Values a kernel reads (a fill value, an index bound) are part of the op, which the replay
  // runs again: only reads by the function itself, between ops, make the trace depend on them.
  if (r->read_since()) {
    r->note_read(
        str_cat("before ", op.name(), " (op ", r->graph.nodes().size() + 1, " of its trace)"));
  }
  // Note [Random ops in a trace]: a schema does not say whether an op draws random numbers
  // (rand_like and dropout take no Generator), so the capture looks: the CPU generator's state
  // across the call. Passes must not drop or merge a node that drew.
  Generator& rng = default_generator(Device());
  const std::string rng_before = rng.get_state();
  op.call_boxed(stack);
  node.draws = rng.get_state() != rng_before;
  r->reads_seen = host_value_reads();
  if (stack.size() == 1 && stack[0].tag() == IValue::Tag::TensorList) {
    node.list_output = true;
    for (const Tensor& t : stack[0].to_tensor_list()) node.outputs.push_back(r->bind(t));
  } else {
    for (const IValue& v : stack) {
      node.outputs.push_back(v.is_tensor() && v.to_tensor().defined() ? r->bind(v.to_tensor())
                                                                      : -1);
    }
  }
  r->graph.add_node(std::move(node));
}

void ensure_fallback() {
  static const RegistrationHandle handle = Dispatcher::instance().fallback(
      DispatchKey::Tracing, KernelFunction::from_boxed(&trace), Origin::here());
}

}  // namespace

bool is_capturing() { return t_recorder != nullptr; }

Graph capture(const TensorFunction& fn, const std::vector<Tensor>& inputs,
              std::vector<Tensor>* results, bool decompose) {
  LOOM_CHECK(t_recorder == nullptr,
             "loom::graph::capture: this thread is capturing already (a capture inside a "
             "capture)");
  ensure_fallback();
  Recorder r;
  r.decompose = decompose;
  for (size_t i = 0; i < inputs.size(); ++i) {
    LOOM_CHECK(inputs[i].defined(), "loom::graph::capture: input ", i, " is undefined");
    r.graph.add_input(r.bind(inputs[i]));
  }
  struct Stop {
    ~Stop() { t_recorder = nullptr; }
  } stop;
  t_recorder = &r;
  std::vector<Tensor> out;
  r.reads_seen = host_value_reads();
  {
    IncludeDispatchKeyGuard on(DispatchKeySet(DispatchKey::Tracing));
    out = fn(inputs);
  }
  // Note [Values read while capturing]: a value the function read between its ops (item())
  // may have chosen its later ops, or the values it returns, so the trace is not a program to
  // replay. Reads inside kernels are not counted: replaying the op reads again.
  if (r.read_since()) r.note_read("after its last op");
  if (!r.first_read.empty()) {
    r.graph.set_value_dependence(
        str_cat("it read a tensor value ", r.first_read,
                ": its ops may depend on that value, not only on its inputs' metadata"));
  } else if (!r.not_replayable.empty()) {
    r.graph.set_value_dependence(r.not_replayable);
  }
  std::vector<int> outputs;
  for (const Tensor& t : out) outputs.push_back(t.defined() ? r.value_of(t) : -1);
  r.graph.set_outputs(std::move(outputs));
  if (detail::logs_topic("graph"))
    std::fprintf(stderr, "[loom graph] captured:\n%s", r.graph.str().c_str());
  if (results != nullptr) *results = std::move(out);
  return std::move(r.graph);
}

}  // namespace loom::graph
