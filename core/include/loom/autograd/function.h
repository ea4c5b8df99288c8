#pragma once
/// @file
/// Custom autograd functions (torch.autograd.Function / libtorch's
/// torch::autograd::Function): forward and backward written in C++.
///
///     struct Square : loom::autograd::Function<Square> {
///       static Tensor forward(AutogradContext* ctx, const Tensor& x) {
///         ctx->save_for_backward({x});
///         return x * x;
///       }
///       static variable_list backward(AutogradContext* ctx, variable_list grads) {
///         Tensor x = ctx->get_saved_variables()[0];
///         return {grads[0] * 2 * x};
///       }
///     };
///     Tensor y = Square::apply(x);
///
/// forward runs with grad mode off; its tensor arguments (Tensor parameters, in order)
/// are the inputs backward returns one gradient for (extra entries for non-tensor
/// arguments are ignored). Saved tensors are version-checked like built-in ones.

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/autograd/grad_mode.h"
#include "loom/autograd/meta.h"
#include "loom/dispatcher/ivalue.h"

namespace loom::autograd {

class CustomFunctionNode;

/// What forward leaves for backward.
class AutogradContext {
 public:
  /// Saves tensors for backward (inputs or outputs of forward).
  void save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }
  /// The saved tensors; throws the in-place or freed-graph error as built-in ops do.
  variable_list get_saved_variables() const;
  /// Declares inputs that forward modified in place (their history is rebased).
  void mark_dirty(const variable_list& inputs);
  /// Declares outputs that have no gradient.
  void mark_non_differentiable(const variable_list& outputs);
  /// Whether backward gets undefined gradients as zeros (default true).
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  /// Whether input i (counting tensor arguments) needs a gradient.
  bool needs_input_grad(size_t i) const;
  /// Arbitrary values for backward (ctx->saved_data["n"] = 3).
  std::map<std::string, IValue> saved_data;

 private:
  template <class T>
  friend struct Function;
  friend struct FunctionSupport;
  friend class CustomFunctionNode;
  variable_list to_save_;
  std::vector<SavedTensor> saved_;
  std::vector<const TensorImpl*> dirty_, non_differentiable_;
  std::vector<bool> needs_input_grad_;
  std::vector<bool> input_defined_;  // per forward input: a defined tensor (may get a gradient)
  bool materialize_grads_ = true;
  bool has_freed_ = false;
};

/// The node of a custom function (internal).
class CustomFunctionNode : public Node {
 public:
  /// Backward of the user's function.
  using BackwardFn = variable_list (*)(AutogradContext*, variable_list);
  /// A node calling backward, named name.
  CustomFunctionNode(std::string name, BackwardFn backward)
      : name_(std::move(name)), backward_(backward) {}
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override;
  void release_variables() override;
  void take_references(NodeReferences& out) override;
  /// The context.
  AutogradContext ctx;

 private:
  std::string name_;
  BackwardFn backward_;
};

/// The non-template work of Function<T>::apply (internal).
struct FunctionSupport {
  /// Makes the node and its edges for the tensor inputs (null if nothing needs a gradient).
  static std::shared_ptr<CustomFunctionNode> make_node(std::string name,
                                                       CustomFunctionNode::BackwardFn backward,
                                                       const variable_list& inputs);
  /// Attaches outputs to node (null: just returns them) and converts saved tensors.
  static variable_list finish(const std::shared_ptr<CustomFunctionNode>& node,
                              const variable_list& inputs, variable_list outputs);
};

/// CRTP base of a custom function T with static forward(AutogradContext*, args...) returning
/// Tensor or variable_list, and static backward(AutogradContext*, variable_list).
template <class T>
struct Function {
  /// Runs T::forward and records T::backward for its outputs.
  template <typename... Args>
  static auto apply(Args&&... args) {
    variable_list inputs;
    (collect(inputs, args), ...);
    auto node = FunctionSupport::make_node(demangled_name(), &T::backward, inputs);
    AutogradContext local;
    AutogradContext* ctx = node ? &node->ctx : &local;
    using R = decltype(T::forward(ctx, std::forward<Args>(args)...));
    variable_list outputs;
    {
      AutoGradMode off(false);
      if constexpr (std::is_same_v<std::decay_t<R>, Tensor>) {
        outputs.push_back(T::forward(ctx, std::forward<Args>(args)...));
      } else {
        outputs = T::forward(ctx, std::forward<Args>(args)...);
      }
    }
    outputs = FunctionSupport::finish(node, inputs, std::move(outputs));
    if constexpr (std::is_same_v<std::decay_t<R>, Tensor>) {
      return outputs[0];
    } else {
      return outputs;
    }
  }

 private:
  template <typename A>
  static void collect(variable_list& inputs, const A& a) {
    if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) inputs.push_back(a);
  }
  static std::string demangled_name();
};

/// "Square" for struct Square (the node's name, as PyTorch names SquareBackward).
std::string function_name_of(const char* mangled);

template <class T>
std::string Function<T>::demangled_name() {
  return function_name_of(typeid(T).name());
}

/// Gradient checkpointing (torch.utils.checkpoint): runs fn on inputs without recording,
/// and recomputes it with recording during backward, so its intermediate tensors are not
/// kept. The random state of the default CPU generator is restored for the recomputation,
/// so dropout inside fn draws the same mask.
variable_list checkpoint(const std::function<variable_list(const variable_list&)>& fn,
                         const variable_list& inputs);

}  // namespace loom::autograd
