#pragma once
/// @file
/// The containers of torch.nn: Sequential (a chain of one-input modules), ModuleList and
/// ModuleDict. Each registers what it holds, so its children's parameters are the
/// container's (children named "0", "1", ... or by their keys).

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/nn/module.h"

namespace loom::nn {

/// Modules applied in order, each to the previous one's output (torch.nn.Sequential).
class Sequential : public Module {
 public:
  /// An empty chain (forward returns its input).
  Sequential() = default;
  /// A chain of the given modules, named "0", "1", ...
  template <typename... M>
  requires(sizeof...(M) > 0) explicit Sequential(std::shared_ptr<M>... modules) {
    (push_back(std::move(modules)), ...);
  }
  /// A chain of named modules (PyTorch's Sequential(OrderedDict(...))).
  explicit Sequential(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> named);

  /// Appends module under the name of its position; returns it.
  template <typename M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    return register_module(std::to_string(children().size()), std::move(module));
  }
  /// Appends module under name.
  void push_back(const std::string& name, std::shared_ptr<Module> module);
  /// The module at index (negative counts from the end); throws IndexError out of range.
  std::shared_ptr<Module> operator[](int64_t index) const;
  /// The module at index as an M; throws TypeError if it is not one.
  template <typename M>
  std::shared_ptr<M> at(int64_t index) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[index]);
    LOOM_CHECK_T(TypeError, m != nullptr, "Sequential: module ", index, " is a ",
                 (*this)[index]->name(), ", not the requested type");
    return m;
  }
  /// Number of modules.
  size_t size() const { return children().size(); }
  /// True when empty.
  bool empty() const { return size() == 0; }
  /// The modules in order.
  std::vector<std::shared_ptr<Module>> items() const { return children(); }
  /// Applies every module in order (through operator(), so their hooks run).
  Tensor forward(const Tensor& input) override;
};

/// A list of registered modules without a forward of its own (torch.nn.ModuleList): keep
/// per-layer modules here instead of a std::vector, which would hide them (Note
/// [Unregistered children]).
class ModuleList : public Module {
 public:
  /// An empty list.
  ModuleList() = default;
  /// A list of the given modules.
  template <typename... M>
  requires(sizeof...(M) > 0) explicit ModuleList(std::shared_ptr<M>... modules) {
    (push_back(std::move(modules)), ...);
  }
  /// Appends module (named by its position); returns it.
  template <typename M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    return register_module(std::to_string(children().size()), std::move(module));
  }
  /// PyTorch's append: push_back.
  template <typename M>
  std::shared_ptr<M> append(std::shared_ptr<M> module) {
    return push_back(std::move(module));
  }
  /// Appends every module of others.
  void extend(const std::vector<std::shared_ptr<Module>>& others);
  /// The module at index (negative counts from the end); throws IndexError out of range.
  std::shared_ptr<Module> operator[](int64_t index) const;
  /// The module at index as an M; throws TypeError if it is not one.
  template <typename M>
  std::shared_ptr<M> at(int64_t index) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[index]);
    LOOM_CHECK_T(TypeError, m != nullptr, "ModuleList: module ", index, " is a ",
                 (*this)[index]->name(), ", not the requested type");
    return m;
  }
  /// Number of modules.
  size_t size() const { return children().size(); }
  /// True when empty.
  bool empty() const { return size() == 0; }
  /// The modules in order.
  std::vector<std::shared_ptr<Module>> items() const { return children(); }
};

/// Registered modules by key, in insertion order (torch.nn.ModuleDict).
class ModuleDict : public Module {
 public:
  /// An empty dict.
  ModuleDict() = default;
  /// A dict of the given (key, module) pairs.
  explicit ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> items);
  /// Sets key to module (replacing an existing one); returns it.
  template <typename M>
  std::shared_ptr<M> insert(const std::string& key, std::shared_ptr<M> module) {
    return register_module(key, std::move(module));
  }
  /// The module of key; throws IndexError naming the key when it is absent.
  std::shared_ptr<Module> operator[](const std::string& key) const;
  /// The module of key as an M; throws TypeError if it is not one.
  template <typename M>
  std::shared_ptr<M> at(const std::string& key) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[key]);
    LOOM_CHECK_T(TypeError, m != nullptr, "ModuleDict: module \"", key, "\" is a ",
                 (*this)[key]->name(), ", not the requested type");
    return m;
  }
  /// True if key is present.
  bool contains(const std::string& key) const { return named_children().contains(key); }
  /// The keys, in insertion order.
  std::vector<std::string> keys() const { return named_children().keys(); }
  /// The modules, in insertion order.
  std::vector<std::shared_ptr<Module>> values() const { return children(); }
  /// Number of entries.
  size_t size() const { return children().size(); }
};

}  // namespace loom::nn
