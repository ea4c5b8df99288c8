#pragma once
/// @file
/// The autograd graph: Node (one backward function), Edge (where a gradient goes) and
/// SavedTensor (a tensor kept for backward, with its version checked when it is used).
///
/// Note [Graph direction]: as in PyTorch, a Node's *inputs* are the gradients of its forward
/// op's outputs and its *outputs* are the gradients of the forward op's inputs, one per
/// next edge. Nodes own their next edges (shared_ptr), tensors own their grad_fn, so the
/// graph lives exactly as long as some tensor that can reach it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "loom/core/tensor.h"

namespace loom::autograd {

class Node;
struct AutogradMeta;

/// Gradients, one per position (undefined = zero / not needed).
using variable_list = std::vector<Tensor>;

/// A tensor hook: gets the gradient, returns a replacement or an undefined tensor to keep it.
using Hook = std::function<Tensor(const Tensor& grad)>;

/// Runs a tensor hook on grad and returns its result, or grad if the hook returned an
/// undefined tensor. A replacement must keep grad's dtype, device and size, as PyTorch
/// requires ("hook '3' has changed the size of value (was [2, 3] got [3])"); else AutogradError.
Tensor run_tensor_hook(const Hook& hook, int id, const Tensor& grad);

/// Where a gradient flows: input `input_nr` of node `fn`. Invalid when fn is null.
struct Edge {
  std::shared_ptr<Node> fn;  ///< the node, or null
  uint32_t input_nr = 0;     ///< which of its inputs
  /// True if the edge leads somewhere.
  bool is_valid() const { return fn != nullptr; }
};

/// A node's next edges (most ops have one or two inputs: no allocation).
using edge_list = absl::InlinedVector<Edge, 2>;

/// Shape, dtype and device of one gradient a node takes (its forward op's output), used to
/// make zeros for a missing gradient and to check the gradients other nodes send it.
struct InputMetadata {
  DimVector sizes;                 ///< sizes of the forward output
  DType dtype = DType::Float32;    ///< its dtype
  Device device;                   ///< its device
  bool differentiable = true;      ///< false for integer outputs (sort indices, ...)
};

/// What a node holds that may keep other nodes alive: the nodes of its edges, and saved
/// tensors (whose grad_fn is a node). Note [Iterative graph teardown].
struct NodeReferences {
  std::vector<std::shared_ptr<Node>> nodes;  ///< nodes it referred to
  std::vector<Tensor> tensors;               ///< tensors it saved
};

/// One backward function of the graph (Note [Graph direction]).
class Node : public std::enable_shared_from_this<Node> {
 public:
  /// A node with a fresh sequence number (later nodes run first in backward).
  Node();
  /// A node with an explicit sequence number.
  explicit Node(uint64_t sequence_nr) : sequence_nr_(sequence_nr) {}
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// "MulBackward0", as PyTorch names grad_fn classes.
  virtual std::string name() const = 0;
  /// Computes the gradients of the forward inputs (one per next edge) from the gradients of
  /// the forward outputs (one per input; undefined where none arrived).
  virtual variable_list apply(variable_list&& grads) = 0;
  /// Frees saved tensors (after backward without retain_graph).
  virtual void release_variables() {}
  /// Moves into out everything this node holds that may keep other nodes alive (its edges;
  /// subclasses add their saved tensors and inner nodes), just before it is destroyed, so that
  /// its destruction destroys no chain of nodes inside it (Note [Iterative graph teardown]).
  virtual void take_references(NodeReferences& out);

  /// Where each output gradient goes (one edge per forward input).
  const edge_list& next_edges() const { return next_edges_; }
  /// Mutable edges (graph construction).
  edge_list& mutable_next_edges() { return next_edges_; }
  /// Number of gradients produced.
  size_t num_outputs() const { return next_edges_.size(); }

  /// Records a forward output; returns its input number.
  uint32_t add_input_metadata(const Tensor& t);
  /// Records a non-differentiable forward output (an integer tensor, a None).
  uint32_t add_input_metadata_undifferentiable();
  /// Number of gradients taken.
  size_t num_inputs() const { return input_metadata_.size(); }
  /// Metadata of input i.
  const InputMetadata& input_metadata(size_t i) const { return input_metadata_[i]; }
  /// Mutable metadata (used when a tensor's history is rebased).
  InputMetadata& mutable_input_metadata(size_t i) { return input_metadata_[i]; }

  /// Order of creation; backward runs the newest ready node first.
  uint64_t sequence_nr() const { return sequence_nr_; }

  /// Registers a hook on the gradient arriving at input input_nr (a non-leaf tensor's hook).
  void add_tensor_pre_hook(uint32_t input_nr, int id, Hook hook);
  /// Removes the hook registered with id; false if none.
  bool remove_tensor_pre_hook(int id);
  /// Makes the gradient arriving at input_nr be stored in meta->grad (retain_grad()).
  void set_retains_grad(uint32_t input_nr, AutogradMeta* meta);
  /// Runs hooks and retain_grad on the incoming gradients (the engine calls this).
  void run_pre_hooks(variable_list& grads);

  /// Where the forward op was called (anomaly mode), or "".
  const std::string& creation_trace() const { return creation_trace_; }
  /// Sets the anomaly-mode trace.
  void set_creation_trace(std::string trace) { creation_trace_ = std::move(trace); }

 protected:
  edge_list next_edges_;                                    ///< one per forward input
  absl::InlinedVector<InputMetadata, 1> input_metadata_;  ///< one per forward output

 private:
  struct PreHook {
    uint32_t input_nr;
    int id;
    Hook fn;
  };
  uint64_t sequence_nr_;
  std::vector<PreHook> pre_hooks_;
  std::vector<std::pair<uint32_t, AutogradMeta*>> retains_grad_;
  std::string creation_trace_;
};

/// A tensor saved for backward. Inputs are kept as they are; an output is kept without its
/// grad_fn (that would be a cycle) and re-attached to its node on unpack. The version at
/// save time is checked on unpack (PyTorch's "modified by an inplace operation" error).
class SavedTensor {
 public:
  /// Nothing saved.
  SavedTensor() = default;
  /// Saves t (an undefined t is saved as undefined). is_output: t is an output of the node
  /// that saves it.
  SavedTensor(const Tensor& t, bool is_output);
  /// The tensor; throws the freed-graph error after reset(), the in-place error if its
  /// version moved. owner: the node unpacking it (needed to re-attach a saved output when
  /// the backward itself is being recorded, create_graph).
  Tensor unpack(const std::shared_ptr<Node>& owner = nullptr) const;
  /// Frees the tensor (after backward without retain_graph).
  void reset();
  /// True if freed.
  bool was_freed() const { return freed_; }
  /// Moves the saved tensor into out (its node is being destroyed: Note [Iterative graph
  /// teardown]).
  void take(std::vector<Tensor>& out) {
    if (data_.defined()) out.push_back(std::move(data_));
  }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool defined_ = false;
  bool is_output_ = false;
  bool is_leaf_ = false;
  bool freed_ = false;
  std::weak_ptr<Node> producer_fn_;  // grad_fn at save time, named by the version error
};

/// Sequence number counter used by Node().
uint64_t next_sequence_nr();
/// The number the next Node made on this thread gets (the profiler reads it around an op to
/// link the op to the node it records).
uint64_t peek_sequence_nr();

/// Note [Iterative graph teardown]: a graph is a chain of nodes, each owning the next ones
/// (edges) and tensors whose grad_fn is an earlier node (saved inputs). Destroying the last
/// node of a 50,000-op chain (an RNN unrolled over a long sequence, a loop of in-place ops)
/// would destroy the whole chain recursively, one stack frame set per node, and overflow the
/// stack. Nodes made by make_node() are destroyed by detail::teardown_node instead: it moves
/// what the node holds (take_references) to a per-thread list before destroying it, and the
/// outermost teardown on the thread releases that list in a loop, so the depth stays bounded
/// whatever the length of the graph (PyTorch's deleteNode does the same for edges).
namespace detail {
/// Destroys n (with destroy, which runs its destructor) as Note [Iterative graph teardown] says.
void teardown_node(Node* n, void (*destroy)(Node*)) noexcept;

/// The allocator make_node() gives std::allocate_shared: its destroy() is teardown_node.
template <class T>
struct NodeAllocator {
  using value_type = T;  ///< what it allocates
  NodeAllocator() = default;
  /// Rebinding copy (the control block allocates with a rebound copy).
  template <class U>
  NodeAllocator(const NodeAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  /// Memory for n objects.
  T* allocate(size_t n) { return std::allocator<T>().allocate(n); }
  /// Frees memory from allocate.
  void deallocate(T* p, size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  /// Destroys a node through teardown_node (anything else directly).
  template <class U>
  void destroy(U* p) noexcept {
    if constexpr (std::is_base_of_v<Node, U>) {
      teardown_node(p, [](Node* q) { static_cast<U*>(q)->~U(); });
    } else {
      p->~U();
    }
  }
  /// All NodeAllocators are interchangeable.
  template <class U>
  bool operator==(const NodeAllocator<U>&) const noexcept {
    return true;
  }
};
}  // namespace detail

/// Makes a node whose destruction never recurses down its graph (Note [Iterative graph
/// teardown]). Every node of a graph should be made with it.
template <class T, class... Args>
std::shared_ptr<T> make_node(Args&&... args) {
  return std::allocate_shared<T>(detail::NodeAllocator<T>(), std::forward<Args>(args)...);
}

}  // namespace loom::autograd
