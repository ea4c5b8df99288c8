#pragma once
/// @file
/// AutogradMeta (the per-tensor autograd state) and the functions that read and change it:
/// the gradient edge of a tensor, setting history, views and in-place rebasing.

#include <memory>
#include <vector>

#include "loom/autograd/node.h"

namespace loom::autograd {

/// The autograd state of one tensor (held by its TensorImpl).
struct AutogradMeta {
  Tensor grad;                              ///< accumulated gradient (leaves, retain_grad)
  std::shared_ptr<Node> grad_fn;            ///< the node that made it (null for leaves)
  /// A leaf's AccumulateGrad (Note [Strong grad accumulator]).
  std::shared_ptr<Node> grad_accumulator;
  uint32_t output_nr = 0;                   ///< which output of grad_fn it is
  bool requires_grad = false;               ///< a leaf's flag (non-leaves: grad_fn != null)
  bool retains_grad = false;                ///< retain_grad() was called
  bool is_view = false;                     ///< made by a view op from a tensor that required grad
  Tensor base;                              ///< the root base of a view
  uint32_t attr_version = 0;                ///< version when a view's grad_fn was made
  std::vector<std::pair<int, Hook>> hooks;  ///< a leaf's hooks, in registration order
  ~AutogradMeta();
};

/// The tensor's meta, or nullptr.
inline AutogradMeta* meta_of(const Tensor& t) {
  return t.defined() ? t.impl()->autograd_meta() : nullptr;
}

/// The grad_fn of t, regenerating a view's after an in-place change of its base; null for
/// leaves and tensors outside autograd.
std::shared_ptr<Node> grad_fn(const Tensor& t);
/// Where a gradient for t goes: (grad_fn, output_nr) or (AccumulateGrad, 0) for a leaf that
/// requires grad; invalid otherwise.
Edge gradient_edge(const Tensor& t);
/// The leaf's AccumulateGrad node (created on first use; the tensor must require grad).
std::shared_ptr<Node> grad_accumulator(const Tensor& t);
/// Makes t output output_nr of fn (t becomes a non-leaf that requires grad).
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr);
/// Marks out (made by a view op from self) as a view, so that in-place ops on it are
/// tracked through its base (PyTorch's view + CopySlices semantics).
void set_view_of(const Tensor& out, const Tensor& self);
/// After an in-place op on self recorded as fn's output 0: makes fn self's history, and if
/// self is a view, rewrites its base's history through CopySlices.
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn);
/// Throws PyTorch's errors for an in-place op on a leaf (or a view of a leaf) that requires
/// grad. op names the call for the message.
void check_inplace(const Tensor& self, std::string_view op);

}  // namespace loom::autograd
