#pragma once
/// @file
/// loom::nn::Module, the base of every layer and model (torch.nn.Module): named parameters,
/// buffers and submodules, their dotted names, state dicts with PyTorch's load errors,
/// train/eval, dtype and device moves, and forward hooks.
///
/// Note [Parameter slots]: a module keeps each parameter and buffer in a slot whose address
/// never changes, and register_parameter / register_buffer return a reference to it. Layers
/// keep those references as their public members (`Tensor& weight`), so `linear->weight` is
/// always what parameters(), state_dict() and to() see: to(dtype) puts the converted tensor in
/// the slot and the member shows it, and assigning the member replaces the registered
/// parameter. (libtorch gets the same effect with Tensor::set_data, which Loom does not have.)
///
/// Note [Unregistered children]: PyTorch registers a submodule by attribute assignment, so a
/// child kept in a plain list is silently invisible to parameters() and state_dict(). Here
/// registration is always explicit, which makes that trap easy to fall into; so every module
/// records the modules created on its thread while it is being constructed (from the start
/// of Module's constructor until a std::shared_ptr owns it, i.e. until make_shared returns),
/// and parameters(), named_parameters(), state_dict() and the other walks throw a
/// loom::ValueError naming the first of them that is still alive and was never registered
/// anywhere. Modules that are never owned by a shared_ptr (made on the stack) are not
/// checked; the design prescribes std::make_shared.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/core/device.h"
#include "loom/core/dtype.h"
#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/ops/nn/memory_format.h"

namespace loom::nn {

/// An insertion-ordered map from names to values (PyTorch's OrderedDict), as state_dict()
/// returns. Lookups are linear, which is what the sizes of module registries need.
template <typename V>
class OrderedDict {
 public:
  /// One entry.
  using Item = std::pair<std::string, V>;
  OrderedDict() = default;
  /// Builds from (key, value) pairs; a repeated key keeps its first position, last value.
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& i : items) insert(i.first, i.second);
  }
  /// Sets key to value: replaces it in place if present, else appends.
  void insert(const std::string& key, V value) {
    if (V* v = find(key)) {
      *v = std::move(value);
    } else {
      items_.emplace_back(key, std::move(value));
    }
  }
  /// The value of key, or nullptr.
  V* find(std::string_view key) {
    for (Item& i : items_) {
      if (i.first == key) return &i.second;
    }
    return nullptr;
  }
  /// The value of key, or nullptr.
  const V* find(std::string_view key) const {
    for (const Item& i : items_) {
      if (i.first == key) return &i.second;
    }
    return nullptr;
  }
  /// True if key is present.
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  /// The value of key; throws IndexError naming the key when it is absent.
  const V& at(std::string_view key) const {
    const V* v = find(key);
    LOOM_CHECK_T(IndexError, v != nullptr, "OrderedDict: key \"", key, "\" not found");
    return *v;
  }
  /// The value of key; throws IndexError naming the key when it is absent.
  const V& operator[](std::string_view key) const { return at(key); }
  /// Removes key; false if it was absent.
  bool erase(std::string_view key) {
    for (auto it = items_.begin(); it != items_.end(); ++it) {
      if (it->first == key) {
        items_.erase(it);
        return true;
      }
    }
    return false;
  }
  /// The keys, in order.
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const Item& i : items_) k.push_back(i.first);
    return k;
  }
  /// The values, in order.
  std::vector<V> values() const {
    std::vector<V> v;
    for (const Item& i : items_) v.push_back(i.second);
    return v;
  }
  /// Number of entries.
  size_t size() const { return items_.size(); }
  /// True if there are no entries.
  bool empty() const { return items_.empty(); }
  /// Iteration over (key, value) in order.
  auto begin() { return items_.begin(); }
  /// End of iteration.
  auto end() { return items_.end(); }
  /// Iteration over (key, value) in order.
  auto begin() const { return items_.begin(); }
  /// End of iteration.
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
};

/// A module's state: parameters then persistent buffers, dotted names ("features.0.weight").
using StateDict = OrderedDict<Tensor>;

/// What a non-strict load_state_dict left out (PyTorch's _IncompatibleKeys).
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;     ///< the module's keys the dict lacked
  std::vector<std::string> unexpected_keys;  ///< the dict's keys the module does not have
};

/// A kernel size, stride, padding or output size: one value for every spatial dim (`3`) or
/// one per dim (`{3, 5}`), as torch.nn's int-or-tuple arguments.
class IntList {
 public:
  /// One value, repeated for every dim.
  IntList(int64_t v) : values_{v} {}  // NOLINT(google-explicit-constructor)
  /// One value per dim.
  IntList(std::initializer_list<int64_t> v) : values_(v) {}
  /// One value per dim.
  IntList(std::vector<int64_t> v) : values_(std::move(v)) {}  // NOLINT
  /// The values expanded to n dims (a single value repeated); throws ValueError naming what
  /// for any other count.
  std::vector<int64_t> expand(size_t n, std::string_view what) const;
  /// The values as given.
  const std::vector<int64_t>& values() const { return values_; }

 private:
  std::vector<int64_t> values_;
};

class Module;

/// The handle a hook registration returns: remove() takes the hook out. As in PyTorch, the
/// hook stays registered when the handle is dropped (hooks are often installed for the
/// life of the model), so this is not an RAII guard.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  /// Removes the hook; a no-op when it is gone already or its module was destroyed.
  void remove();

 private:
  friend class Module;
  RemovableHandle(std::weak_ptr<void> table, int id, bool pre)
      : table_(std::move(table)), id_(id), pre_(pre) {}
  std::weak_ptr<void> table_;
  int id_ = -1;
  bool pre_ = false;
};

/// A forward pre-hook: sees the module and its input before forward, and may return a
/// replacement input (std::nullopt keeps it).
using ForwardPreHook = std::function<std::optional<Tensor>(Module&, const Tensor& input)>;
/// A forward hook: sees the module, its input and its output after forward, and may return a
/// replacement output (std::nullopt keeps it).
using ForwardHook =
    std::function<std::optional<Tensor>(Module&, const Tensor& input, const Tensor& output)>;

/// The base class of layers and models (torch.nn.Module). Hold modules by std::shared_ptr
/// (std::make_shared), register children with register_module.
class Module : public std::enable_shared_from_this<Module> {
 public:
  /// A module whose name() is its class name (or name, when given).
  explicit Module(std::string name = "");
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The name used in messages: the class name without namespaces ("Linear", "Net"),
  /// unless the constructor was given one.
  std::string name() const;

  // ---- registration -----------------------------------------------------------------------

  /// Registers (or replaces) parameter name: a leaf of tensor, requiring grad when
  /// requires_grad. An undefined tensor registers the name without a value (PyTorch's
  /// `register_parameter("bias", None)`): it is in neither parameters() nor state_dict().
  /// Returns the slot (Note [Parameter slots]). Throws ValueError for an empty name, one
  /// with a dot, or one already used by a buffer or child.
  Tensor& register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  /// Registers (or replaces) buffer name. A persistent buffer is in state_dict(), a
  /// non-persistent one only in buffers(). Returns the slot. Same name rules.
  Tensor& register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  /// Registers (or replaces) child name and returns it with its own type, so
  /// `fc1 = register_module("fc1", std::make_shared<Linear>(784, 256));`. Throws ValueError
  /// for a null module, an empty name, one with a dot, or one used by a parameter/buffer.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module_impl(name, module);
    return module;
  }
  /// Replaces the registered child name (which must exist) by module; returns it.
  template <typename M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    LOOM_CHECK(find_child(name) != nullptr, name_for_messages(), ".replace_module: no child \"",
               name, "\"");
    register_module_impl(name, module);
    return module;
  }

  // ---- walks ------------------------------------------------------------------------------

  /// The parameters (this module's, then its descendants' when recurse), each once.
  std::vector<Tensor> parameters(bool recurse = true) const;
  /// The parameters with dotted names ("0.weight", "encoder.fc.bias"), each tensor once.
  OrderedDict<Tensor> named_parameters(bool recurse = true) const;
  /// The buffers (persistent or not), each once.
  std::vector<Tensor> buffers(bool recurse = true) const;
  /// The buffers with dotted names.
  OrderedDict<Tensor> named_buffers(bool recurse = true) const;
  /// The direct children, in registration order.
  std::vector<std::shared_ptr<Module>> children() const;
  /// The direct children with their names.
  OrderedDict<std::shared_ptr<Module>> named_children() const;
  /// This module and all descendants, depth first, each once (this module first).
  std::vector<std::shared_ptr<Module>> modules();
  /// modules() with dotted names; this module's name is "".
  OrderedDict<std::shared_ptr<Module>> named_modules();

  // ---- state ------------------------------------------------------------------------------

  /// Parameters then persistent buffers of each module, depth first in registration
  /// order, as detached tensors sharing memory with the module's (torch's state_dict()).
  StateDict state_dict() const;
  /// Copies dict's tensors into the matching parameters and buffers (without recording
  /// autograd). With strict, a missing or unexpected key is an error; a size mismatch always
  /// is. Every problem is collected first and nothing is copied when there is one; the
  /// Error reads as PyTorch's RuntimeError: "Error(s) in loading state_dict for Net:\n\t
  /// Missing key(s) in state_dict: \"fc.bias\". \n\tUnexpected key(s) ...\n\tsize mismatch
  /// for fc.weight: copying a param with shape [10, 5] from checkpoint, the shape in
  /// current model is [10, 4]." Returns the keys a non-strict load skipped.
  LoadStateDictResult load_state_dict(const StateDict& dict, bool strict = true);

  /// Calls fn on every descendant and then on this module, each once (PyTorch's apply, as
  /// used for custom init: `net->apply([](Module& m) { ... })`); returns *this.
  Module& apply(const std::function<void(Module&)>& fn);

  /// Sets training mode on this module and its descendants; returns *this.
  Module& train(bool on = true);
  /// train(false).
  Module& eval() { return train(false); }
  /// True in training mode (the default).
  bool is_training() const { return training_; }

  /// Moves every parameter and buffer to device (parameters stay leaves with their
  /// requires_grad, gradients move too); returns *this.
  Module& to(Device device);
  /// Converts the floating-point parameters and buffers (and gradients) to dtype, a
  /// floating dtype; integer buffers (num_batches_tracked) keep theirs. Returns *this.
  Module& to(DType dtype);
  /// Lays out every 4-d parameter and buffer (and its gradient) channels-last for
  /// MemoryFormat::ChannelsLast (5-d ones for ChannelsLast3d), or contiguous for Contiguous,
  /// as PyTorch's `module.to(memory_format=...)`: tensors of other ranks are left as they
  /// are, except that ChannelsLast given a 5-d tensor (ChannelsLast3d a 4-d one) throws
  /// PyTorch's "required rank 4 tensor to use channels_last format". Parameters stay leaves
  /// with their requires_grad. A convolution whose weight is channels-last gives
  /// channels-last results (Note [Memory format] in loom/ops/nn/memory_format.h), so
  /// `model->to(MemoryFormat::ChannelsLast)` runs a CNN channels-last from its first layer.
  /// Returns *this.
  Module& to(MemoryFormat memory_format);
  /// Clears the gradients of every parameter: to undefined (set_to_none, the default), or
  /// to zeros.
  void zero_grad(bool set_to_none = true);

  // ---- forward ----------------------------------------------------------------------------

  /// The computation of a one-input module; the base throws NotImplementedError
  /// ("Module [Name] is missing the required \"forward\" function").
  virtual Tensor forward(const Tensor& input);
  /// Runs the forward pre-hooks, forward, then the forward hooks.
  Tensor operator()(const Tensor& input);
  /// Adds a hook that runs before forward (in registration order).
  RemovableHandle register_forward_pre_hook(ForwardPreHook hook);
  /// Adds a hook that runs after forward (in registration order).
  RemovableHandle register_forward_hook(ForwardHook hook);

  /// "Linear(in_features=4, out_features=3, bias=true)": name() and extra_repr(), children
  /// indented below, as print(module) in PyTorch.
  std::string str() const;
  /// The layer's settings for str() ("in_features=4, out_features=3, bias=true").
  virtual std::string extra_repr() const { return ""; }

  /// @cond INTERNAL
  struct Slot {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  /// The parameter slots, for helpers that swap parameters (utils.h's checkpoint).
  std::vector<Slot*> parameter_slots();
  /// @endcond

 protected:
  /// The module name for messages ("Net", or "Net (fc)"); name() by default.
  std::string name_for_messages() const { return name(); }

 private:
  friend class RemovableHandle;
  struct Hooks;
  struct Tracking;

  void register_module_impl(const std::string& name, std::shared_ptr<Module> module);
  void check_name(const std::string& name, const char* kind) const;
  const std::shared_ptr<Module>* find_child(std::string_view name) const;
  void check_registered_children() const;
  void walk(const std::string& prefix, bool recurse,
            const std::function<void(const std::string&, const Module&)>& visit) const;
  void apply_to_tensors(const std::function<Tensor(const Tensor&)>& convert);

  std::string name_;
  bool training_ = true;
  // Slots live in blocks that never move (Note [Parameter slots]).
  std::vector<std::unique_ptr<Slot>> parameters_;
  std::vector<std::unique_ptr<Slot>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::shared_ptr<Hooks> hooks_;
  std::unique_ptr<Tracking> tracking_;
};

}  // namespace loom::nn
