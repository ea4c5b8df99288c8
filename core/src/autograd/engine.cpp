// The backward engine: dependency counting over the graph reachable from the roots, then
// a ready queue that runs the newest node first (PyTorch's order), summing the gradients
// each node receives before it runs. Single-threaded: the calling thread runs everything.

#include "loom/autograd/engine.h"

#include <queue>

#include "absl/container/flat_hash_map.h"
#include "autograd/ops.h"
#include "loom/autograd/anomaly.h"
#include "loom/autograd/grad_mode.h"
#include "loom/autograd/meta.h"
#include "loom/core/error.h"
#include "profiler/recorder.h"

namespace loom::autograd {
namespace {

bool expandable_to(IntArrayRef shape, IntArrayRef desired) {
  if (shape.size() > desired.size()) return false;
  const size_t lead = desired.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != desired[lead + i] && shape[i] != 1) return false;
  }
  return true;
}

// Brings node's output gradients to the shape and dtype their targets expect (summing
// over broadcast dims as PyTorch's validate_outputs does) or fails naming the node.
void validate_outputs(const Node& node, variable_list& grads) {
  const auto& edges = node.next_edges();
  LOOM_CHECK_T(AutogradError, grads.size() <= edges.size(), "Function ", node.name(),
               " returned an incorrect number of gradients (expected ", edges.size(), ", got ",
               grads.size(), ")");
  grads.resize(edges.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    Tensor& g = grads[i];
    if (!edges[i].is_valid() || !g.defined()) continue;
    const InputMetadata& want = edges[i].fn->input_metadata(edges[i].input_nr);
    if (!want.differentiable) {
      g = Tensor();
      continue;
    }
    IntArrayRef want_sizes{want.sizes.data(), want.sizes.size()};
    if (g.sizes() != want_sizes) {
      LOOM_CHECK_T(AutogradError, expandable_to(want_sizes, g.sizes()), "Function ", node.name(),
                   " returned an invalid gradient at index ", i, " - got ", sizes_str(g.sizes()),
                   " but expected shape compatible with ", sizes_str(want_sizes));
      g = ops::sum_to(g, want_sizes);
    }
    if (g.dtype() != want.dtype) g = ops::to_dtype(g, want.dtype);
    LOOM_CHECK_T(AutogradError, g.device() == want.device, "Function ", node.name(),
                 " returned an invalid gradient at index ", i, " - expected device ",
                 want.device.str(), " but got ", g.device().str());
  }
}

void check_anomaly(const Node& node, const variable_list& grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined() || !ops::has_nonfinite(grads[i])) continue;
    LOOM_THROW(AutogradError, "Function '", node.name(), "' returned nan values in its ", i,
               "th output.",
               node.creation_trace().empty()
                   ? std::string()
                   : loom::str_cat("\nTraceback of forward call that produced it:\n",
                                   node.creation_trace()));
  }
}

void accumulate(Tensor& slot, Tensor g) {
  if (!g.defined()) return;
  slot = slot.defined() ? ops::add(slot, g) : std::move(g);
}

struct Capture {
  uint32_t input_nr;
  size_t index;
};

class GraphTask {
 public:
  GraphTask(bool keep_graph, bool capture_mode) : keep_graph_(keep_graph), capture_(capture_mode) {}

  void add_capture(const Edge& e, size_t index) {
    captures_[e.fn.get()].push_back(Capture{e.input_nr, index});
  }

  variable_list run(const std::vector<Edge>& roots, variable_list root_grads, size_t num_captures) {
    count_dependencies(roots);  // every reachable node has its state from here on
    if (capture_) mark_needed(roots);
    for (size_t i = 0; i < roots.size(); ++i) {
      accumulate(buffer(roots[i].fn.get())[roots[i].input_nr], std::move(root_grads[i]));
    }
    using Item = std::pair<uint64_t, Node*>;
    std::priority_queue<Item> ready;
    for (const Edge& r : roots) {
      State& st = states_[r.fn.get()];
      if (st.deps == 0 && !st.queued) {
        st.queued = true;
        ready.push({r.fn->sequence_nr(), r.fn.get()});
      }
    }
    variable_list captured(num_captures);
    const bool anomaly = AnomalyMode::is_enabled();
    while (!ready.empty()) {
      Node* node = ready.top().second;
      ready.pop();
      State& st = states_[node];
      variable_list inputs = std::move(st.buffer);
      inputs.resize(node->num_inputs());
      node->run_pre_hooks(inputs);
      if (!captures_.empty()) {
        if (auto it = captures_.find(node); it != captures_.end()) {
          for (const Capture& c : it->second) accumulate(captured[c.index], inputs[c.input_nr]);
        }
      }
      if (capture_ && !st.needed) continue;
      variable_list outputs = apply(*node, std::move(inputs), anomaly);
      if (!keep_graph_) node->release_variables();
      const auto& edges = node->next_edges();
      for (size_t i = 0; i < edges.size(); ++i) {
        Node* next = edges[i].fn.get();
        if (next == nullptr) continue;
        State& ns = states_[next];
        if (capture_ && !ns.needed && !captures_.contains(next)) continue;
        if (outputs[i].defined()) {
          if (ns.buffer.size() < next->num_inputs()) ns.buffer.resize(next->num_inputs());
          accumulate(ns.buffer[edges[i].input_nr], std::move(outputs[i]));
        }
        if (--ns.deps == 0) ready.push({next->sequence_nr(), next});
      }
    }
    return captured;
  }

 private:
  // What the engine knows of one node of this backward.
  struct State {
    int deps = 0;          // edges from nodes that have not run yet
    bool queued = false;   // a root already in the ready queue
    bool needed = false;   // capture mode: a captured gradient depends on it
    bool visited = false;  // mark_needed's DFS: done
    variable_list buffer;  // the gradients received so far, one per input
  };

  variable_list apply(Node& node, variable_list inputs, bool anomaly) {
    // One profiler event per node, linked to its forward op by the sequence number.
    profiler::detail::BackwardScope profiled(node);
    variable_list outputs;
    if (anomaly) {
      try {
        outputs = node.apply(std::move(inputs));
      } catch (const std::exception& e) {
        if (node.creation_trace().empty()) throw;
        LOOM_THROW(AutogradError, "Error detected in ", node.name(),
                   ". Traceback of forward call that caused the error:\n", node.creation_trace(),
                   "\n", e.what());
      }
    } else {
      outputs = node.apply(std::move(inputs));
    }
    validate_outputs(node, outputs);
    if (anomaly) check_anomaly(node, outputs);
    return outputs;
  }

  variable_list& buffer(Node* n) {
    variable_list& b = states_[n].buffer;
    if (b.size() < n->num_inputs()) b.resize(n->num_inputs());
    return b;
  }

  void count_dependencies(const std::vector<Edge>& roots) {
    std::vector<Node*> stack;
    for (const Edge& r : roots) {
      if (states_.try_emplace(r.fn.get()).second) stack.push_back(r.fn.get());
    }
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges()) {
        Node* next = e.fn.get();
        if (next == nullptr) continue;
        auto [it, inserted] = states_.try_emplace(next);
        ++it->second.deps;
        if (inserted) stack.push_back(next);
      }
    }
  }

  // A node runs in capture mode (autograd::grad) only if a captured gradient depends on it.
  // Post-order DFS; every node already has its state (count_dependencies ran).
  void mark_needed(const std::vector<Edge>& roots) {
    absl::flat_hash_map<Node*, bool> entered;
    std::vector<std::pair<Node*, size_t>> stack;
    for (const Edge& r : roots) {
      if (entered.try_emplace(r.fn.get(), true).second) stack.push_back({r.fn.get(), 0});
    }
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      const auto& edges = n->next_edges();
      if (i < edges.size()) {
        Node* next = edges[i++].fn.get();
        if (next != nullptr && entered.try_emplace(next, true).second) stack.push_back({next, 0});
        continue;
      }
      bool needed = false;
      for (const Edge& e : edges) {
        Node* next = e.fn.get();
        if (next != nullptr && (states_[next].needed || captures_.contains(next))) needed = true;
      }
      // AccumulateGrad never runs in capture mode: .grad is left alone.
      states_[n].needed = needed && n->sequence_nr() != UINT64_MAX;
      stack.pop_back();
    }
  }

  bool keep_graph_;
  bool capture_;
  absl::flat_hash_map<Node*, State> states_;
  absl::flat_hash_map<Node*, std::vector<Capture>> captures_;
};

// Root edges and their initial gradients, with PyTorch's checks.
void collect_roots(const variable_list& roots, const variable_list& grad_roots,
                   std::vector<Edge>& edges, variable_list& grads) {
  LOOM_CHECK_T(ValueError, grad_roots.empty() || grad_roots.size() == roots.size(),
               "backward: got ", roots.size(), " tensors and ", grad_roots.size(),
               " gradients; pass one gradient per tensor (or none)");
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& t = roots[i];
    LOOM_CHECK_T(ValueError, t.defined(), "backward: tensor ", i, " is undefined");
    Edge e = gradient_edge(t);
    LOOM_CHECK_T(AutogradError, e.is_valid(), "element ", i,
                 " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_roots.empty() ? Tensor() : grad_roots[i];
    if (!g.defined()) {
      LOOM_CHECK_T(AutogradError, t.numel() == 1,
                   "grad can be implicitly created only for scalar outputs (tensor ", i, " is ",
                   t.describe(), "; pass a gradient)");
      NoGradGuard no_grad;
      g = ops::ones_like(t);
    } else {
      LOOM_CHECK_T(AutogradError, g.sizes() == t.sizes(), "Mismatch in shape: grad_output[", i,
                   "] has a shape of ", sizes_str(g.sizes()), " and output[", i,
                   "] has a shape of ", sizes_str(t.sizes()), ".");
      // As PyTorch's engine does for the graph root (validate_outputs): a gradient of another
      // dtype (an integer seed for a float loss) is cast to the output's.
      if (g.dtype() != t.dtype()) g = ops::to_dtype(g, t.dtype());
    }
    edges.push_back(std::move(e));
    grads.push_back(std::move(g));
  }
}

}  // namespace

void backward(const variable_list& roots, const variable_list& grad_roots,
              std::optional<bool> retain_graph, bool create_graph) {
  std::vector<Edge> edges;
  variable_list grads;
  collect_roots(roots, grad_roots, edges, grads);
  AutoGradMode mode(create_graph);
  GraphTask task(retain_graph.value_or(create_graph), /*capture_mode=*/false);
  task.run(edges, std::move(grads), 0);
}

variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs, std::optional<bool> retain_graph,
                   bool create_graph, bool allow_unused) {
  std::vector<Edge> edges;
  variable_list grads;
  collect_roots(outputs, grad_outputs, edges, grads);
  AutoGradMode mode(create_graph);
  GraphTask task(retain_graph.value_or(create_graph), /*capture_mode=*/true);
  for (size_t i = 0; i < inputs.size(); ++i) {
    LOOM_CHECK_T(AutogradError, inputs[i].defined() && inputs[i].requires_grad(),
                 "One of the differentiated Tensors does not require grad (input ", i, ")");
    task.add_capture(gradient_edge(inputs[i]), i);
  }
  variable_list result = task.run(edges, std::move(grads), inputs.size());
  for (size_t i = 0; i < result.size(); ++i) {
    LOOM_CHECK_T(AutogradError, allow_unused || result[i].defined(),
                 "One of the differentiated Tensors appears to not have been used in the graph "
                 "(input ", i, "). Set allow_unused=True if this is the desired behavior.");
  }
  return result;
}

}  // namespace loom::autograd
