#include "loom/autograd/node.h"

#include <atomic>

#include "loom/autograd/grad_mode.h"
#include "loom/autograd/meta.h"
#include "loom/core/error.h"
#include "autograd/ops.h"

namespace loom::autograd {

// Per thread, as PyTorch's: graphs are recorded by one thread, and the order only ranks
// the nodes of one graph.
namespace {
// Note [Initial-exec TLS] in dispatcher/src/dispatch_key.cpp.
__attribute__((tls_model("initial-exec"))) thread_local uint64_t t_sequence_counter = 0;
}  // namespace

uint64_t next_sequence_nr() { return t_sequence_counter++; }

uint64_t peek_sequence_nr() { return t_sequence_counter; }

Node::Node() : sequence_nr_(next_sequence_nr()) {}

Node::~Node() = default;

void Node::take_references(NodeReferences& out) {
  for (Edge& e : next_edges_) {
    if (e.fn) out.nodes.push_back(std::move(e.fn));
  }
}

namespace detail {
namespace {
// Note [Initial-exec TLS] in dispatcher/src/dispatch_key.cpp.
struct Teardown {
  bool draining = false;
  NodeReferences pending;
};
__attribute__((tls_model("initial-exec"))) thread_local Teardown t_teardown;
}  // namespace

void teardown_node(Node* n, void (*destroy)(Node*)) noexcept {
  Teardown& t = t_teardown;
  n->take_references(t.pending);
  destroy(n);              // holds nothing that could destroy another node any more
  if (t.draining) return;  // an outer teardown on this thread releases what n held
  t.draining = true;
  for (;;) {
    // Each release may destroy nodes, whose references land in pending again.
    if (!t.pending.tensors.empty()) {
      Tensor x = std::move(t.pending.tensors.back());
      t.pending.tensors.pop_back();
      continue;
    }
    if (!t.pending.nodes.empty()) {
      std::shared_ptr<Node> x = std::move(t.pending.nodes.back());
      t.pending.nodes.pop_back();
      continue;
    }
    break;
  }
  t.draining = false;
}
}  // namespace detail

uint32_t Node::add_input_metadata(const Tensor& t) {
  InputMetadata m;
  m.sizes.assign(t.sizes().begin(), t.sizes().end());
  m.dtype = t.dtype();
  m.device = t.device();
  input_metadata_.push_back(std::move(m));
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

uint32_t Node::add_input_metadata_undifferentiable() {
  InputMetadata m;
  m.differentiable = false;
  input_metadata_.push_back(std::move(m));
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

void Node::add_tensor_pre_hook(uint32_t input_nr, int id, Hook hook) {
  pre_hooks_.push_back(PreHook{input_nr, id, std::move(hook)});
}

bool Node::remove_tensor_pre_hook(int id) {
  for (auto it = pre_hooks_.begin(); it != pre_hooks_.end(); ++it) {
    if (it->id == id) {
      pre_hooks_.erase(it);
      return true;
    }
  }
  return false;
}

void Node::set_retains_grad(uint32_t input_nr, AutogradMeta* meta) {
  for (auto it = retains_grad_.begin(); it != retains_grad_.end(); ++it) {
    if (it->second == meta || it->first == input_nr) {
      retains_grad_.erase(it);
      break;
    }
  }
  if (meta != nullptr) retains_grad_.emplace_back(input_nr, meta);
}

Tensor run_tensor_hook(const Hook& hook, int id, const Tensor& grad) {
  Tensor r = hook(grad);
  if (!r.defined()) return grad;
  // What the hook hands back replaces the gradient the engine checked: hold it to the same
  // rules, or a wrong shape reaches .grad or the next formula unnoticed.
  LOOM_CHECK_T(AutogradError, r.dtype() == grad.dtype() && r.device() == grad.device(), "hook '",
               id, "' has changed the type of value (was ", grad.device().str(), " ",
               dtype_name(grad.dtype()), " got ", r.device().str(), " ", dtype_name(r.dtype()),
               ")");
  LOOM_CHECK_T(AutogradError, r.sizes() == grad.sizes(), "hook '", id,
               "' has changed the size of value (was ", sizes_str(grad.sizes()), " got ",
               sizes_str(r.sizes()), ")");
  return r;
}

void Node::run_pre_hooks(variable_list& grads) {
  for (const PreHook& h : pre_hooks_) {
    if (h.input_nr >= grads.size() || !grads[h.input_nr].defined()) continue;
    grads[h.input_nr] = run_tensor_hook(h.fn, h.id, grads[h.input_nr]);
  }
  for (auto& [nr, meta] : retains_grad_) {
    if (nr >= grads.size() || !grads[nr].defined()) continue;
    const Tensor& g = grads[nr];
    if (!meta->grad.defined()) {
      meta->grad = GradMode::is_enabled() ? g : ops::clone(g);
    } else {
      meta->grad = ops::add(meta->grad, g);
    }
  }
}

// ------------------------------------------------------------------------- SavedTensor

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  LOOM_CHECK_T(AutogradError, !t.impl()->is_inference(),
               "Inference tensors cannot be saved for backward. To work around you can make a "
               "clone to get a normal tensor and use it in autograd.");
  defined_ = true;
  version_ = t.version();
  const AutogradMeta* meta = meta_of(t);
  is_leaf_ = meta == nullptr || !meta->grad_fn;
  if (!is_leaf_) {
    producer_fn_ = meta->grad_fn;
    output_nr_ = meta->output_nr;
  }
  // An output would own its own grad_fn (a cycle): keep an alias without autograd state.
  data_ = is_output ? t.as_strided_view(t.sizes(), t.strides(), t.storage_offset()) : t;
}

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner) const {
  LOOM_CHECK_T(AutogradError, !freed_,
               "Trying to backward through the graph a second time (or directly access saved "
               "tensors after they have already been freed). Saved intermediate values of the "
               "graph are freed when you call .backward() or autograd.grad(). Specify "
               "retain_graph=True if you need to backward through the graph a second time or if "
               "you need to access saved tensors after calling backward.");
  if (!defined_) return Tensor();
  if (data_.version() != version_) {
    std::string which;
    if (!is_leaf_) {
      const auto fn = producer_fn_.lock();
      which = loom::str_cat(", which is output ", output_nr_, " of ", fn ? fn->name() : "a freed node");
    }
    LOOM_THROW(AutogradError,
               "one of the variables needed for gradient computation has been modified by an "
               "inplace operation: [",
               data_.device().str(), " ", dtype_name(data_.dtype()), " ", sizes_str(data_.sizes()),
               "]", which, ", is at version ", data_.version(), "; expected version ", version_,
               " instead. Hint: enable anomaly detection to find the operation that failed to "
               "compute its gradient, with loom::autograd::set_detect_anomaly(true).");
  }
  if (is_output_ && !is_leaf_ && owner && GradMode::is_enabled()) {
    // Recording the backward (create_graph): the output must be part of the graph again.
    Tensor t = data_.as_strided_view(data_.sizes(), data_.strides(), data_.storage_offset());
    set_history(t, owner, output_nr_);
    return t;
  }
  return data_;
}

void SavedTensor::reset() {
  data_ = Tensor();
  producer_fn_.reset();
  freed_ = true;
}

}  // namespace loom::autograd
