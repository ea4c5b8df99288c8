#include "loom/nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "loom/autograd/grad_mode.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom::nn {

// ---------------------------------------------------------------------------- IntList

std::vector<int64_t> IntList::expand(size_t n, std::string_view what) const {
  if (values_.size() == n) return values_;
  LOOM_CHECK(values_.size() == 1, what, " must have 1 or ", n, " values, got ", values_.size());
  return std::vector<int64_t>(n, values_[0]);
}

// ---------------------------------------------------------------------------- hooks

struct Module::Hooks {
  std::mutex mu;
  int next_id = 0;
  std::vector<std::pair<int, ForwardPreHook>> pre;
  std::vector<std::pair<int, ForwardHook>> post;
};

void RemovableHandle::remove() {
  std::shared_ptr<void> table = table_.lock();
  if (!table) return;
  auto* hooks = static_cast<Module::Hooks*>(table.get());
  std::lock_guard<std::mutex> lock(hooks->mu);
  if (pre_) {
    std::erase_if(hooks->pre, [&](const auto& h) { return h.first == id_; });
  } else {
    std::erase_if(hooks->post, [&](const auto& h) { return h.first == id_; });
  }
  table_.reset();
}

// ---------------------------------------------------------------------------- tracking

// Note [Unregistered children] (module.h): the open list holds the modules whose
// construction has not been seen to finish; a module is done once a shared_ptr owns it.
struct Module::Tracking {
  std::thread::id thread = std::this_thread::get_id();
  Module* creator = nullptr;
  std::vector<Module*> created;
  bool registered = false;
};

namespace {

std::mutex& tracking_mutex() {
  static std::mutex mu;
  return mu;
}

std::vector<Module*>& open_modules() {
  static std::vector<Module*> open;
  return open;
}

// "loom::nn::Linear" -> "Linear", "(anonymous namespace)::Net" -> "Net": the last
// component outside template brackets, as Python prints a class name.
std::string class_name_of(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string full = status == 0 && demangled != nullptr ? demangled : type.name();
  std::free(demangled);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ':' && i + 1 < full.size() && full[i + 1] == ':') start = i + 2;
  }
  return full.substr(start);
}

}  // namespace

// ---------------------------------------------------------------------------- lifetime

Module::Module(std::string name)
    : name_(std::move(name)),
      hooks_(std::make_shared<Hooks>()),
      tracking_(std::make_unique<Tracking>()) {
  std::lock_guard<std::mutex> lock(tracking_mutex());
  auto& open = open_modules();
  const auto me = std::this_thread::get_id();
  // Entries whose construction finished (a shared_ptr owns them now) close here.
  std::erase_if(open, [&](Module* m) {
    return m->tracking_->thread == me && !m->weak_from_this().expired();
  });
  for (auto it = open.rbegin(); it != open.rend(); ++it) {
    if ((*it)->tracking_->thread == me) {
      tracking_->creator = *it;
      (*it)->tracking_->created.push_back(this);
      break;
    }
  }
  open.push_back(this);
}

Module::~Module() {
  std::lock_guard<std::mutex> lock(tracking_mutex());
  std::erase(open_modules(), this);
  Module* creator = tracking_->creator;
  if (creator != nullptr) std::erase(creator->tracking_->created, this);
  // What this module saw made is handed to its own creator, which was under construction
  // at the same time.
  for (Module* c : tracking_->created) {
    c->tracking_->creator = creator;
    if (creator != nullptr) creator->tracking_->created.push_back(c);
  }
}

std::string Module::name() const { return name_.empty() ? class_name_of(typeid(*this)) : name_; }

void Module::check_registered_children() const {
  // Only modules a shared_ptr owns are checked: for one on the stack the end of its
  // construction is not known.
  if (weak_from_this().expired()) return;
  std::lock_guard<std::mutex> lock(tracking_mutex());
  for (const Module* c : tracking_->created) {
    if (!c->tracking_->registered) {
      LOOM_THROW(ValueError, name(), " holds a ", c->name(),
                 " that is not registered: its parameters are hidden from parameters() and "
                 "state_dict(); use register_module or a ModuleList");
    }
  }
}

// ---------------------------------------------------------------------------- registration

void Module::check_name(const std::string& name, const char* kind) const {
  LOOM_CHECK(!name.empty(), name_for_messages(), ": ", kind, " name can't be empty string \"\"");
  LOOM_CHECK(name.find('.') == std::string::npos, name_for_messages(), ": ", kind,
             " name can't contain \".\", got: ", name);
}

namespace {
Module::Slot* find_slot(std::vector<std::unique_ptr<Module::Slot>>& slots, std::string_view name) {
  for (auto& s : slots) {
    if (s->name == name) return s.get();
  }
  return nullptr;
}
}  // namespace

Tensor& Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_name(name, "parameter");
  LOOM_CHECK(find_slot(buffers_, name) == nullptr && find_child(name) == nullptr,
             name_for_messages(), ": attribute '", name, "' already exists");
  if (tensor.defined()) {
    if (!tensor.is_leaf()) tensor = tensor.detach();
    if (requires_grad) tensor.set_requires_grad(true);
  }
  Slot* slot = find_slot(parameters_, name);
  if (slot == nullptr) {
    parameters_.push_back(std::make_unique<Slot>());
    slot = parameters_.back().get();
    slot->name = name;
  }
  slot->tensor = std::move(tensor);
  return slot->tensor;
}

Tensor& Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_name(name, "buffer");
  LOOM_CHECK(find_slot(parameters_, name) == nullptr && find_child(name) == nullptr,
             name_for_messages(), ": attribute '", name, "' already exists");
  Slot* slot = find_slot(buffers_, name);
  if (slot == nullptr) {
    buffers_.push_back(std::make_unique<Slot>());
    slot = buffers_.back().get();
    slot->name = name;
  }
  slot->tensor = std::move(tensor);
  slot->persistent = persistent;
  return slot->tensor;
}

const std::shared_ptr<Module>* Module::find_child(std::string_view name) const {
  for (const auto& [n, m] : children_) {
    if (n == name) return &m;
  }
  return nullptr;
}

void Module::register_module_impl(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name, "module");
  LOOM_CHECK(module != nullptr, name_for_messages(), ".register_module: module \"", name,
             "\" is null");
  LOOM_CHECK(module.get() != this, name_for_messages(), ".register_module: a module can't be its ",
             "own child (\"", name, "\")");
  auto* mine = const_cast<Module*>(this);
  LOOM_CHECK(
      find_slot(mine->parameters_, name) == nullptr && find_slot(mine->buffers_, name) == nullptr,
      name_for_messages(), ": attribute '", name, "' already exists");
  {
    std::lock_guard<std::mutex> lock(tracking_mutex());
    module->tracking_->registered = true;
  }
  for (auto& [n, m] : children_) {
    if (n == name) {
      m = std::move(module);
      return;
    }
  }
  children_.emplace_back(name, std::move(module));
}

// ---------------------------------------------------------------------------- walks

void Module::walk(const std::string& prefix, bool recurse,
                  const std::function<void(const std::string&, const Module&)>& visit) const {
  std::unordered_set<const Module*> seen;
  std::function<void(const std::string&, const Module&)> go = [&](const std::string& p,
                                                                  const Module& m) {
    if (!seen.insert(&m).second) return;
    m.check_registered_children();
    visit(p, m);
    if (!recurse) return;
    for (const auto& [n, c] : m.children_) go(p.empty() ? n : p + "." + n, *c);
  };
  go(prefix, *this);
}

namespace {
std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}
}  // namespace

OrderedDict<Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<Tensor> out;
  std::unordered_set<const TensorImpl*> seen;
  walk("", recurse, [&](const std::string& p, const Module& m) {
    for (const auto& s : m.parameters_) {
      if (s->tensor.defined() && seen.insert(s->tensor.impl()).second) {
        out.insert(join(p, s->name), s->tensor);
      }
    }
  });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

OrderedDict<Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<Tensor> out;
  std::unordered_set<const TensorImpl*> seen;
  walk("", recurse, [&](const std::string& p, const Module& m) {
    for (const auto& s : m.buffers_) {
      if (s->tensor.defined() && seen.insert(s->tensor.impl()).second) {
        out.insert(join(p, s->name), s->tensor);
      }
    }
  });
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, m] : children_) out.push_back(m);
  return out;
}

OrderedDict<std::shared_ptr<Module>> Module::named_children() const {
  OrderedDict<std::shared_ptr<Module>> out;
  for (const auto& [n, m] : children_) out.insert(n, m);
  return out;
}

OrderedDict<std::shared_ptr<Module>> Module::named_modules() {
  OrderedDict<std::shared_ptr<Module>> out;
  std::shared_ptr<Module> self = weak_from_this().lock();
  LOOM_CHECK(self != nullptr, name(),
             ".named_modules: the module must be owned by a std::shared_ptr (std::make_shared)");
  std::unordered_set<const Module*> seen;
  std::function<void(const std::string&, const std::shared_ptr<Module>&)> go =
      [&](const std::string& p, const std::shared_ptr<Module>& m) {
        if (!seen.insert(m.get()).second) return;
        m->check_registered_children();
        out.insert(p, m);
        for (const auto& [n, c] : m->children_) go(join(p, n), c);
      };
  go("", self);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules() { return named_modules().values(); }

std::vector<Module::Slot*> Module::parameter_slots() {
  std::vector<Slot*> out;
  std::unordered_set<const TensorImpl*> seen;
  std::unordered_set<const Module*> seen_modules;
  std::function<void(Module&)> go = [&](Module& m) {
    if (!seen_modules.insert(&m).second) return;
    for (auto& s : m.parameters_) {
      if (s->tensor.defined() && seen.insert(s->tensor.impl()).second) out.push_back(s.get());
    }
    for (auto& [n, c] : m.children_) go(*c);
  };
  go(*this);
  return out;
}

// ---------------------------------------------------------------------------- state

StateDict Module::state_dict() const {
  StateDict out;
  std::function<void(const std::string&, const Module&)> go = [&](const std::string& p,
                                                                  const Module& m) {
    m.check_registered_children();
    for (const auto& s : m.parameters_) {
      if (s->tensor.defined()) out.insert(join(p, s->name), s->tensor.detach());
    }
    for (const auto& s : m.buffers_) {
      if (s->tensor.defined() && s->persistent) out.insert(join(p, s->name), s->tensor.detach());
    }
    for (const auto& [n, c] : m.children_) go(join(p, n), *c);
  };
  go("", *this);
  return out;
}

LoadStateDictResult Module::load_state_dict(const StateDict& dict, bool strict) {
  // The module's entries in state_dict order; a shared tensor appears under each name.
  std::vector<std::pair<std::string, Tensor>> own;
  for (const auto& [key, t] : state_dict()) own.emplace_back(key, t);

  LoadStateDictResult result;
  std::vector<std::string> size_errors;
  std::unordered_set<std::string> own_keys;
  for (const auto& [key, t] : own) {
    own_keys.insert(key);
    const Tensor* given = dict.find(key);
    if (given == nullptr) {
      result.missing_keys.push_back(key);
    } else if (!given->defined()) {
      size_errors.push_back(str_cat("undefined tensor for ", key, " in the checkpoint"));
    } else if (!std::equal(given->sizes().begin(), given->sizes().end(), t.sizes().begin(),
                           t.sizes().end())) {
      size_errors.push_back(str_cat(
          "size mismatch for ", key, ": copying a param with shape ", sizes_str(given->sizes()),
          " from checkpoint, the shape in current model is ", sizes_str(t.sizes()), "."));
    }
  }
  for (const auto& [key, t] : dict) {
    if (own_keys.count(key) == 0) result.unexpected_keys.push_back(key);
  }

  auto quoted = [](const std::vector<std::string>& keys) {
    std::string s;
    for (size_t i = 0; i < keys.size(); ++i)
      str_append(&s, i == 0 ? "" : ", ", "\"", keys[i], "\"");
    return s;
  };
  std::vector<std::string> errors;
  if (strict && !result.missing_keys.empty()) {
    errors.push_back(str_cat("Missing key(s) in state_dict: ", quoted(result.missing_keys), ". "));
  }
  if (strict && !result.unexpected_keys.empty()) {
    errors.push_back(
        str_cat("Unexpected key(s) in state_dict: ", quoted(result.unexpected_keys), ". "));
  }
  errors.insert(errors.end(), size_errors.begin(), size_errors.end());
  if (!errors.empty()) {
    std::string message = str_cat("Error(s) in loading state_dict for ", name(), ":");
    for (const std::string& e : errors) str_append(&message, "\n\t", e);
    LOOM_THROW(ValueError, message);
  }

  autograd::NoGradGuard no_grad;
  for (const auto& [key, t] : own) {
    if (const Tensor* given = dict.find(key)) t.copy_(given->to(t.device()));
  }
  return result;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  std::unordered_set<Module*> seen;
  std::function<void(Module&)> go = [&](Module& m) {
    if (!seen.insert(&m).second) return;
    for (auto& [n, c] : m.children_) go(*c);
    fn(m);
  };
  go(*this);
  return *this;
}

Module& Module::train(bool on) {
  std::unordered_set<Module*> seen;
  std::function<void(Module&)> go = [&](Module& m) {
    if (!seen.insert(&m).second) return;
    m.training_ = on;
    for (auto& [n, c] : m.children_) go(*c);
  };
  go(*this);
  return *this;
}

void Module::apply_to_tensors(const std::function<Tensor(const Tensor&)>& convert) {
  autograd::NoGradGuard no_grad;
  // Shared tensors stay shared: each is converted once.
  std::unordered_map<const TensorImpl*, Tensor> done;
  auto moved = [&](const Tensor& t, bool parameter) {
    auto it = done.find(t.impl());
    if (it != done.end()) return it->second;
    Tensor out = convert(t);
    if (!out.is_same(t)) {
      if (parameter) {
        out = out.detach();
        if (t.requires_grad()) out.set_requires_grad(true);
        const Tensor g = t.grad();
        if (g.defined()) out.set_grad(convert(g));
      }
    }
    done.emplace(t.impl(), out);
    return out;
  };
  std::unordered_set<Module*> seen;
  std::function<void(Module&)> go = [&](Module& m) {
    if (!seen.insert(&m).second) return;
    for (auto& s : m.parameters_) {
      if (s->tensor.defined()) s->tensor = moved(s->tensor, true);
    }
    for (auto& s : m.buffers_) {
      if (s->tensor.defined()) s->tensor = moved(s->tensor, false);
    }
    for (auto& [n, c] : m.children_) go(*c);
  };
  go(*this);
}

Module& Module::to(Device device) {
  apply_to_tensors([&](const Tensor& t) { return t.to(device); });
  return *this;
}

Module& Module::to(DType dtype) {
  LOOM_CHECK_T(
      TypeError, is_floating_point(dtype),
      "nn.Module.to only accepts floating point dtypes, but got desired dtype=", dtype_name(dtype));
  apply_to_tensors([&](const Tensor& t) { return is_floating_point(t.dtype()) ? t.to(dtype) : t; });
  return *this;
}

Module& Module::to(MemoryFormat memory_format) {
  apply_to_tensors([&](const Tensor& t) {
    if (memory_format == MemoryFormat::Preserve || (t.dim() != 4 && t.dim() != 5)) return t;
    return to_memory_format(t, memory_format);
  });
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  for (const Tensor& p : parameters()) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      autograd::NoGradGuard no_grad;
      p.set_grad(g.detach().zero_());
    }
  }
}

// ---------------------------------------------------------------------------- forward

Tensor Module::forward(const Tensor& /*input*/) {
  LOOM_THROW(NotImplementedError, "Module [", name(),
             "] is missing the required \"forward\" function");
}

Tensor Module::operator()(const Tensor& input) {
  std::vector<ForwardPreHook> pre;
  std::vector<ForwardHook> post;
  {
    std::lock_guard<std::mutex> lock(hooks_->mu);
    for (const auto& h : hooks_->pre) pre.push_back(h.second);
    for (const auto& h : hooks_->post) post.push_back(h.second);
  }
  Tensor x = input;
  for (const ForwardPreHook& h : pre) {
    if (std::optional<Tensor> r = h(*this, x)) x = std::move(*r);
  }
  Tensor out = forward(x);
  for (const ForwardHook& h : post) {
    if (std::optional<Tensor> r = h(*this, x, out)) out = std::move(*r);
  }
  return out;
}

RemovableHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  LOOM_CHECK(static_cast<bool>(hook), name(), ".register_forward_pre_hook: empty hook");
  std::lock_guard<std::mutex> lock(hooks_->mu);
  const int id = hooks_->next_id++;
  hooks_->pre.emplace_back(id, std::move(hook));
  return RemovableHandle(hooks_, id, true);
}

RemovableHandle Module::register_forward_hook(ForwardHook hook) {
  LOOM_CHECK(static_cast<bool>(hook), name(), ".register_forward_hook: empty hook");
  std::lock_guard<std::mutex> lock(hooks_->mu);
  const int id = hooks_->next_id++;
  hooks_->post.emplace_back(id, std::move(hook));
  return RemovableHandle(hooks_, id, false);
}

std::string Module::str() const {
  std::string s = name() + "(" + extra_repr();
  if (children_.empty()) return s + ")";
  for (const auto& [n, c] : children_) {
    std::string child = c->str();
    std::string indented;
    for (char ch : child) {
      indented += ch;
      if (ch == '\n') indented += "  ";
    }
    str_append(&s, "\n  (", n, "): ", indented);
  }
  return s + "\n)";
}

}  // namespace loom::nn
