// The operator registry. See Note [Lock-free dispatch] in dispatcher.h.

#include "loom/dispatcher/dispatcher.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "loom/core/str_cat.h"
#include "loom/core/warning.h"
#include "loom/dispatcher/boxing.h"

namespace loom {
namespace {

struct KernelRecord {
  uint64_t id;
  DispatchKey key;
  std::string provider;
  int priority;
  KernelFunction fn;
  Origin origin;
  // The profiler's id of (provider, plugin) (Note [Kernel labels] in profiling.h).
  uint16_t label = profiler::detail::kernel_label(provider, origin.plugin);
};

using RecordList = std::vector<std::unique_ptr<KernelRecord>>;

// Note [Next provider], the chain: the runner-up slot cannot name "the provider after the
// caller" (it does not know who calls), so it holds a hand-off kernel that walks the op's
// chain of runners-up. A thread-local records how far along the chain
// the calls on this thread are: the first hand-off runs links[0]; if that kernel hands on in
// turn, the same hand-off kernel is entered again and runs links[1], and so on. (One slot
// holding links[0] made links[0] hand calls to itself until the stack overflowed.) A kernel
// that calls the same op again, normally, from inside a hand-off and is handed on there
// resumes after its own level: the result is the same, a provider may be skipped. The cost:
// a boxed call, ~30 ns more per hand-off, so a lone reference runner-up is still called
// directly (runner_up_kernel).
struct HandOffChain {
  int key = 0;
  std::vector<const KernelRecord*> links;  // runner-up first; records are never freed
  KernelFunction kernel;                   // boxed: typed callers box to reach it
};

struct HandOffState {
  const HandOffChain* chain = nullptr;
  size_t level = 0;
};
thread_local HandOffState t_hand_off;

KernelFunction hand_off_kernel(const HandOffChain* chain) {
  return KernelFunction::from_boxed([chain](const OperatorHandle& op, Stack& stack) {
    const HandOffState saved = t_hand_off;
    const size_t level = saved.chain == chain ? saved.level + 1 : 0;
    if (level >= chain->links.size()) {
      LOOM_THROW(NotImplementedError, op.name(), ": provider '", chain->links.back()->provider,
                 "' handed a call on at ", dispatch_key_name(static_cast<DispatchKey>(chain->key)),
                 " but no provider after it is registered there (load the op's reference pack)");
    }
    struct Restore {
      HandOffState saved;
      ~Restore() { t_hand_off = saved; }
    } restore{saved};
    t_hand_off = HandOffState{chain, level};
    if (profiler::detail::profiling_key_on()) {
      profiler::detail::note_hand_off(op.entry(), chain->links[level]->label);
    }
    chain->links[level]->fn.call_boxed(op, stack);
  });
}

struct OpState {
  std::unique_ptr<OperatorEntry> entry;
  std::array<RecordList, kNumDispatchKeys> kernels;
  absl::flat_hash_map<int, std::string> overrides;  // key -> provider
  std::vector<std::unique_ptr<HandOffChain>> chains;  // distinct hand-off chains, kept
};

/// The provider name of the reference packs, whose kernels take every call they are given.
constexpr std::string_view kReferenceProvider = "reference";

std::string normalize_name(std::string_view name) {
  return name.find("::") == std::string_view::npos ? loom::str_cat("aten::", name)
                                                   : std::string(name);
}

}  // namespace

class Dispatcher::Impl {
 public:
  mutable std::mutex mu;
  absl::flat_hash_map<std::string, std::unique_ptr<OpState>> ops;  // never erased
  std::array<RecordList, kNumDispatchKeys> fallbacks;
  std::array<std::string, kNumDispatchKeys> preferred;
  std::vector<std::unique_ptr<KernelRecord>> retired;
  absl::flat_hash_map<std::string, Origin> namespaces;  // owner of each LOOM_LIBRARY namespace
  uint64_t next_id = 1;

  // LOOM_<KEY>_PROVIDER (e.g. LOOM_CPU_PROVIDER=onednn) is read the first time a key's
  // preference matters and its name is known (backend keys of device types registered
  // later get their names late). set_preferred_provider() overrides it.
  mutable std::array<bool, kNumDispatchKeys> env_checked{};

  const std::string& preferred_for(int key) const {
    if (!env_checked[key]) {
      const std::string name = dispatch_key_name(static_cast<DispatchKey>(key));
      if (!name.starts_with("Backend") && !name.starts_with("Key")) {
        env_checked[key] = true;
        const std::string var = loom::str_cat("LOOM_", absl::AsciiStrToUpper(name), "_PROVIDER");
        if (const char* v = std::getenv(var.c_str()); v && preferred[key].empty()) {
          const_cast<std::string&>(preferred[key]) = v;
        }
      }
    }
    return preferred[key];
  }

  OpState& state_for(std::string_view name) {
    auto& slot = ops[std::string(name)];
    if (!slot) {
      slot = std::make_unique<OpState>();
      slot->entry = std::make_unique<OperatorEntry>();
      slot->entry->name_ = std::string(name);
    }
    return *slot;
  }

  // The kernel the policy selects from list; `without` names a provider to leave out (the
  // runner-up of Note [Next provider]).
  const KernelRecord* pick(const OpState& op, const RecordList& list, int key,
                           const std::vector<std::string>* without = nullptr) const {
    auto left_out = [&](const std::string& p) {
      return without && std::find(without->begin(), without->end(), p) != without->end();
    };
    auto by_provider = [&](const std::string& p) -> const KernelRecord* {
      if (left_out(p)) return nullptr;
      for (auto it = list.rbegin(); it != list.rend(); ++it) {
        if ((*it)->provider == p) return it->get();
      }
      return nullptr;
    };
    if (auto it = op.overrides.find(key); it != op.overrides.end()) {
      if (auto* r = by_provider(it->second)) return r;
    }
    if (const std::string& pref = preferred_for(key); !pref.empty()) {
      if (auto* r = by_provider(pref)) return r;
    }
    const KernelRecord* best = nullptr;
    for (const auto& r : list) {  // later registrations win ties
      if (left_out(r->provider)) continue;
      if (!best || r->priority >= best->priority) best = r.get();
    }
    return best;
  }

  // The providers a call at a backend key is handed on to, in order: what the policy would
  // select among the op's own kernels there if the active kernel's provider were absent, then
  // if that one were absent too, and so on (Note [Next provider]).
  std::vector<const KernelRecord*> runners_up(const OpState& op, int key,
                                              const KernelRecord* active) const {
    std::vector<const KernelRecord*> chain;
    if (!active || active->key != static_cast<DispatchKey>(key) || op.kernels[key].size() < 2) {
      return chain;
    }
    std::vector<std::string> without{active->provider};
    while (const KernelRecord* r = pick(op, op.kernels[key], key, &without)) {
      chain.push_back(r);
      without.push_back(r->provider);
    }
    return chain;
  }

  // The kernel published as key's runner-up: the op's hand-off chain for its runners-up (made
  // once per distinct chain and kept: a kernel may be running it while the policy changes).
  // Even one runner-up other than the reference goes through the chain, so that a runner-up
  // that hands on in turn gets an error rather than itself.
  const KernelFunction* runner_up_kernel(OpState& op, int key, const KernelRecord* active,
                                        uint16_t* label) {
    std::vector<const KernelRecord*> links = runners_up(op, key, active);
    if (links.empty()) return nullptr;
    *label = links.front()->label;
    // The common case, a provider over the reference kernels (which take every call and hand
    // nothing on), keeps the direct unboxed call: the boxed chain costs ~30 ns per hand-off
    // (a float64 1-element add under onednn: ~105 ns direct, ~150 ns boxed).
    if (links.size() == 1 && links.front()->provider == kReferenceProvider) {
      return &links.front()->fn;
    }
    for (const auto& c : op.chains) {
      if (c->key == key && c->links == links) return &c->kernel;
    }
    auto chain = std::make_unique<HandOffChain>();
    chain->key = key;
    chain->links = std::move(links);
    chain->kernel = hand_off_kernel(chain.get());
    op.chains.push_back(std::move(chain));
    return &op.chains.back()->kernel;
  }

  // The kernel for (op, key): its own, else its CompositeImplicitAutograd kernel (for backend
  // keys and Autograd), else the key's fallback.
  const KernelRecord* select(const OpState& op, int key) const {
    const auto k = static_cast<DispatchKey>(key);
    if (is_alias_key(k)) return nullptr;
    if (!op.kernels[key].empty()) return pick(op, op.kernels[key], key);
    constexpr int kComposite = static_cast<int>(DispatchKey::CompositeImplicitAutograd);
    if ((is_backend_key(k) || k == DispatchKey::Autograd) && !op.kernels[kComposite].empty()) {
      return pick(op, op.kernels[kComposite], kComposite);
    }
    const RecordList& fb = fallbacks[key];
    if (!fb.empty() && !fb.back()->fn.is_fallthrough()) return fb.back().get();
    return nullptr;
  }

  // Publishes op's table (Note [Lock-free dispatch]): set entries first, then the
  // mask, then clear the entries that went away.
  void publish(OpState& op) {
    OperatorEntry& e = *op.entry;
    std::array<const KernelFunction*, kNumDispatchKeys> next{};
    std::array<const KernelFunction*, kNumDispatchKeys> second{};
    std::array<uint16_t, kNumDispatchKeys> label{}, second_label{};
    uint64_t mask = 0;
    if (e.schema_) {
      for (int k = 0; k < kNumDispatchKeys; ++k) {
        if (const KernelRecord* r = select(op, k)) {
          next[k] = &r->fn;
          label[k] = r->label;
          mask |= uint64_t{1} << k;
          second[k] = runner_up_kernel(op, k, r, &second_label[k]);
        }
      }
    }
    // Labels are what the profiler reads of a call; a racing reader may name the previous
    // kernel's provider for a call made during the publication, nothing worse.
    for (int k = 0; k < kNumDispatchKeys; ++k) {
      e.label_[k].store(label[k], std::memory_order_relaxed);
      e.next_label_[k].store(second_label[k], std::memory_order_relaxed);
    }
    // Runner-ups first: a kernel that hands a call on reads its slot while it is active.
    for (int k = 0; k < kNumDispatchKeys; ++k) {
      if (second[k]) e.next_provider_[k].store(second[k], std::memory_order_release);
    }
    for (int k = 0; k < kNumDispatchKeys; ++k) {
      if (next[k]) e.table_[k].store(next[k], std::memory_order_release);
    }
    e.mask_.store(mask, std::memory_order_release);
    for (int k = 0; k < kNumDispatchKeys; ++k) {
      if (!next[k]) e.table_[k].store(nullptr, std::memory_order_release);
      if (!second[k]) e.next_provider_[k].store(nullptr, std::memory_order_release);
    }
  }

  void publish_all() {
    for (auto& [name, op] : ops) publish(*op);
  }

  void retire(RecordList& list, uint64_t id) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      if ((*it)->id == id) {
        retired.push_back(std::move(*it));
        list.erase(it);
        return;
      }
    }
  }
};

Dispatcher::Dispatcher() : impl_(std::make_unique<Impl>()) {}

Dispatcher& Dispatcher::instance() {
  static Dispatcher* d = new Dispatcher();  // leaked: see the header
  return *d;
}

RegistrationHandle Dispatcher::def(FunctionSchema schema, Origin origin) {
  if (schema.ns().empty()) schema.set_ns("aten");
  const std::string name = schema.qualified_name();
  std::lock_guard<std::mutex> lock(impl_->mu);
  OpState& op = impl_->state_for(name);
  OperatorEntry& e = *op.entry;
  LOOM_CHECK_T(RegistrationError, !e.schema_, "def(", name,
               "): the operator is already defined by ", e.schema_origin_.str(), " as '",
               e.schema_->str(), "'; this definition comes from ", origin.str());
  for (const auto& list : op.kernels) {
    for (const auto& r : list) {
      if (!r->fn.signature()) continue;
      const std::string why = signature_mismatch(schema, *r->fn.signature());
      LOOM_CHECK_T(RegistrationError, why.empty(), "def(", name, ") at ", origin.str(),
                   ": the kernel already registered for ", dispatch_key_name(r->key), " by ",
                   r->origin.str(), " does not fit the schema: ", why);
    }
  }
  e.schema_ = std::make_unique<FunctionSchema>(std::move(schema));
  e.schema_origin_ = std::move(origin);
  e.published_schema_.store(e.schema_.get(), std::memory_order_release);
  impl_->publish(op);
  return RegistrationHandle([this, entry = &e, opp = &op] {
    std::lock_guard<std::mutex> l(impl_->mu);
    entry->published_schema_.store(nullptr, std::memory_order_release);
    entry->retired_schemas_.push_back(std::move(entry->schema_));
    entry->schema_origin_ = Origin{};
    impl_->publish(*opp);
  });
}

RegistrationHandle Dispatcher::impl(std::string_view op_name, DispatchKey key,
                                    KernelFunction kernel, ImplOptions options, Origin origin) {
  const std::string name = normalize_name(op_name);
  LOOM_CHECK_T(RegistrationError, key != DispatchKey::Undefined, "impl(", name, ") at ",
               origin.str(), ": the dispatch key is Undefined");
  LOOM_CHECK_T(RegistrationError, !kernel.empty() && !kernel.is_fallthrough(), "impl(", name,
               ") at ", origin.str(), ": the kernel is empty or a fallthrough (use fallback())");
  if (options.provider.empty()) {
    options.provider = origin.plugin.empty() ? "default" : origin.plugin;
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  // Note [Kernels wait for their def]: as in PyTorch, a kernel may be registered before the
  // op's schema (a backend plugin loaded before the plugin that defines the op, in any
  // order). It is kept, invisible to calls, until def() checks it against the schema and
  // publishes it; undefining the op hides it again.
  OpState& op = impl_->state_for(name);
  if (const FunctionSchema* schema = op.entry->schema_.get(); schema && kernel.signature()) {
    const std::string why = signature_mismatch(*schema, *kernel.signature());
    LOOM_CHECK_T(RegistrationError, why.empty(), "impl(", name, ", ", dispatch_key_name(key),
                 ") at ", origin.str(), ": the kernel's C++ signature ", kernel.signature()->str(),
                 " does not match the schema '", schema->str(), "': ", why);
  }
  RecordList& list = op.kernels[static_cast<int>(key)];
  for (const auto& r : list) {
    LOOM_CHECK_T(RegistrationError, r->provider != options.provider, "impl(", name, ", ",
                 dispatch_key_name(key), ") at ", origin.str(), ": provider '", options.provider,
                 "' already has a kernel for this operator and key, registered by ",
                 r->origin.str());
  }
  const uint64_t id = impl_->next_id++;
  const int k = static_cast<int>(key);
  const KernelRecord* before = list.empty() ? nullptr : impl_->pick(op, list, k);
  list.push_back(std::make_unique<KernelRecord>(KernelRecord{
      id, key, options.provider, options.priority, std::move(kernel), std::move(origin)}));
  // Note [Overriding a kernel]: a kernel that takes over from another plugin's only because it
  // came later (same priority: load order decided) changes every call in the process behind
  // the user's back; PyTorch warns there, and so does Loom. A provider that declares a higher
  // priority (oneDNN over the reference kernels) made the choice explicitly and is not warned.
  if (before != nullptr && impl_->pick(op, list, k) == list.back().get() &&
      before->origin.plugin != list.back()->origin.plugin &&
      list.back()->priority <= before->priority) {
    warn(loom::str_cat("impl(", name, ", ", dispatch_key_name(key), ") at ",
                       list.back()->origin.str(), " (provider '", options.provider,
                       "') overrides the kernel of provider '", before->provider,
                       "' registered at ", before->origin.str(),
                       " for every call in this process; give it a higher priority, or choose "
                       "providers with set_preferred_provider / LOOM_",
                       absl::AsciiStrToUpper(dispatch_key_name(key)), "_PROVIDER"));
  }
  impl_->publish(op);
  return RegistrationHandle([this, opp = &op, key, id] {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->retire(opp->kernels[static_cast<int>(key)], id);
    impl_->publish(*opp);
  });
}

RegistrationHandle Dispatcher::claim_namespace(std::string_view ns, Origin origin) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto [it, inserted] = impl_->namespaces.try_emplace(std::string(ns), origin);
  LOOM_CHECK_T(RegistrationError, inserted, "LOOM_LIBRARY(", ns, ") at ", origin.str(),
               ": namespace '", ns, "' is already defined by the library at ", it->second.str(),
               "; only one LOOM_LIBRARY may define a namespace, use LOOM_LIBRARY_FRAGMENT(", ns,
               ", m) to add operators to it");
  return RegistrationHandle([this, name = std::string(ns)] {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->namespaces.erase(name);
  });
}

RegistrationHandle Dispatcher::fallback(DispatchKey key, KernelFunction kernel, Origin origin) {
  LOOM_CHECK_T(RegistrationError, !kernel.empty(), "fallback(", dispatch_key_name(key), ") at ",
               origin.str(), ": the kernel is empty");
  std::lock_guard<std::mutex> lock(impl_->mu);
  RecordList& list = impl_->fallbacks[static_cast<int>(key)];
  for (const auto& r : list) {
    LOOM_CHECK_T(RegistrationError, r->fn.is_fallthrough() || kernel.is_fallthrough(), "fallback(",
                 dispatch_key_name(key), ") at ", origin.str(),
                 ": a fallback for this key is already registered by ", r->origin.str());
  }
  const uint64_t id = impl_->next_id++;
  const std::string provider = origin.plugin.empty() ? "default" : origin.plugin;
  list.push_back(std::make_unique<KernelRecord>(
      KernelRecord{id, key, provider, 0, std::move(kernel), std::move(origin)}));
  impl_->publish_all();
  return RegistrationHandle([this, key, id] {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->retire(impl_->fallbacks[static_cast<int>(key)], id);
    impl_->publish_all();
  });
}

std::optional<OperatorHandle> Dispatcher::find_op(std::string_view name) const {
  const std::string full = normalize_name(name);
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->ops.find(full);
  if (it == impl_->ops.end() || !it->second->entry->schema_) return std::nullopt;
  return OperatorHandle(it->second->entry.get());
}

OperatorHandle Dispatcher::find_op_or_throw(std::string_view name) const {
  if (auto op = find_op(name)) return *op;
  const std::string full = normalize_name(name);
  std::vector<std::string> close;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    const std::string base = full.substr(0, full.find('.'));
    for (const auto& [n, op] : impl_->ops) {
      if (op->entry->schema_ && n.substr(0, n.find('.')) == base) close.push_back(n);
    }
  }
  std::sort(close.begin(), close.end());
  LOOM_THROW(NotImplementedError, "no operator named '", message_excerpt(full), "' is defined",
             close.empty()
                 ? std::string(" (is the plugin that defines it loaded?)")
                 : loom::str_cat("; overloads with that name: ", absl::StrJoin(close, ", ")));
}

std::vector<OperatorHandle> Dispatcher::ops() const {
  std::vector<OperatorHandle> out;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (const auto& [n, op] : impl_->ops) {
      if (op->entry->schema_) out.push_back(OperatorHandle(op->entry.get()));
    }
  }
  std::sort(out.begin(), out.end(),
            [](OperatorHandle a, OperatorHandle b) { return a.name() < b.name(); });
  return out;
}

std::vector<KernelInfo> Dispatcher::kernels(OperatorHandle op) const {
  std::vector<KernelInfo> out;
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->ops.find(op.name());
  if (it == impl_->ops.end()) return out;
  const OpState& st = *it->second;
  for (int k = kNumDispatchKeys - 1; k >= 0; --k) {
    const KernelRecord* active = is_alias_key(static_cast<DispatchKey>(k))
                                     ? impl_->pick(st, st.kernels[k], k)
                                     : impl_->select(st, k);
    for (const auto& r : st.kernels[k]) {
      out.push_back(KernelInfo{r->key, r->provider, r->priority, r->origin, r.get() == active,
                               !r->fn.has_unboxed()});
    }
  }
  return out;
}

std::vector<KernelInfo> Dispatcher::fallbacks() const {
  std::vector<KernelInfo> out;
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (int k = kNumDispatchKeys - 1; k >= 0; --k) {
    for (const auto& r : impl_->fallbacks[k]) {
      out.push_back(KernelInfo{r->key, r->fn.is_fallthrough() ? "fallthrough" : r->provider, 0,
                               r->origin, r.get() == impl_->fallbacks[k].back().get(), true});
    }
  }
  return out;
}

void Dispatcher::set_preferred_provider(DispatchKey key, std::string provider) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->env_checked[static_cast<int>(key)] = true;  // an explicit choice beats the environment
  impl_->preferred[static_cast<int>(key)] = std::move(provider);
  impl_->publish_all();
}

std::string Dispatcher::preferred_provider(DispatchKey key) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->preferred_for(static_cast<int>(key));
}

void Dispatcher::set_provider_override(std::string_view op_name, DispatchKey key,
                                       std::string provider) {
  const std::string name = normalize_name(op_name);
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->ops.find(name);
  LOOM_CHECK_T(NotImplementedError, it != impl_->ops.end() && it->second->entry->schema_,
               "set_provider_override: no operator named '", name, "' is defined");
  if (provider.empty()) {
    it->second->overrides.erase(static_cast<int>(key));
  } else {
    it->second->overrides[static_cast<int>(key)] = std::move(provider);
  }
  impl_->publish(*it->second);
}

std::vector<ProviderOverride> Dispatcher::provider_overrides() const {
  std::vector<ProviderOverride> out;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (const auto& [name, op] : impl_->ops) {
      for (const auto& [key, provider] : op->overrides) {
        out.push_back(ProviderOverride{name, static_cast<DispatchKey>(key), provider});
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ProviderOverride& a, const ProviderOverride& b) { return a.op < b.op; });
  return out;
}

void Dispatcher::release_retired(const std::string& plugin) {
  std::vector<std::unique_ptr<KernelRecord>> doomed;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto& r = impl_->retired;
    auto mid = std::stable_partition(r.begin(), r.end(),
                                     [&](const auto& rec) { return rec->origin.plugin != plugin; });
    std::move(mid, r.end(), std::back_inserter(doomed));
    r.erase(mid, r.end());
  }
  // Destroyed outside the lock: a functor's destructor runs plugin code.
}

void Dispatcher::report_no_next_provider(OperatorHandle op, DispatchKey key) const {
  std::string active;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (auto it = impl_->ops.find(op.name()); it != impl_->ops.end()) {
      if (const KernelRecord* r = impl_->select(*it->second, static_cast<int>(key))) {
        active = r->provider;
      }
    }
  }
  LOOM_THROW(NotImplementedError, op.name(), ": provider '", active, "' handed a call on at ",
             dispatch_key_name(key),
             " but no other provider is registered there (load the op's reference pack)");
}

void Dispatcher::check_meta_mix(OperatorHandle op, const Stack& args) const {
  // Note [Meta mixed with a device] (dispatcher.h). The key set also holds the backend of a
  // Device argument (zeros_like(cpu_tensor, device="meta") is a legitimate call): only
  // tensors on meta and on a device together are refused.
  if (op.name() == "aten::copy_") return;
  std::string device;
  bool meta = false;
  auto note = [&](const Tensor& t) {
    if (!t.defined()) return;
    if (t.device().is_meta()) {
      meta = true;
    } else if (device.empty()) {
      device = t.device().str();
    }
  };
  for (const IValue& v : args) {
    if (v.is_tensor()) note(v.to_tensor());
    if (v.tag() == IValue::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) note(t);
    }
    if (v.tag() == IValue::Tag::OptionalTensorList) {
      for (const auto& t : v.to_optional_tensor_list()) {
        if (t) note(*t);
      }
    }
  }
  if (!meta || device.empty()) return;
  LOOM_THROW(DeviceError,
             "Expected all tensors to be on the same device, but found at least two devices, ",
             device, " and meta! (in ", describe_call(op, args), ")");
}

void Dispatcher::report_missing_kernel(OperatorHandle op, DispatchKeySet ks,
                                       const Stack& args) const {
  const std::string call = describe_call(op, args);
  if (!op.has_schema()) {
    LOOM_THROW(NotImplementedError, "operator '", op.name(),
               "' has no schema any more (the plugin that defined it was unloaded); call: ", call);
  }
  // An undefined tensor where the schema wants one: say so, as PyTorch does.
  const auto& schema_args = op.schema().arguments();
  for (size_t i = 0; i < args.size() && i < schema_args.size(); ++i) {
    if (schema_args[i].type.kind == TypeKind::Tensor && args[i].is_tensor() &&
        !args[i].to_tensor().defined()) {
      LOOM_THROW(TypeError, op.name(), "(): expected a proper Tensor but got an undefined Tensor "
                 "for argument #", i, " '", schema_args[i].name, "'; call: ", call);
    }
  }
  std::vector<std::string> have;
  absl::flat_hash_map<int, std::vector<std::string>> by_key;
  for (const KernelInfo& k : kernels(op)) {
    by_key[static_cast<int>(k.key)].push_back(loom::str_cat(k.provider, " (", k.origin.str(), ")"));
  }
  for (int k = kNumDispatchKeys - 1; k >= 0; --k) {
    if (auto it = by_key.find(k); it != by_key.end()) {
      have.push_back(loom::str_cat(dispatch_key_name(static_cast<DispatchKey>(k)), ": ",
                                   absl::StrJoin(it->second, ", ")));
    }
  }
  const LocalDispatchKeySet& tls = local_dispatch_key_set();
  std::string tls_note;
  if (!tls.excluded.empty() || !tls.included.empty()) {
    tls_note = loom::str_cat(" (thread-local keys: included ", tls.included.str(), ", excluded ",
                             tls.excluded.str(), ")");
  }
  LOOM_THROW(NotImplementedError, "Could not run '", op.name(), "' with arguments from the ",
             ks.str(), " dispatch key set", tls_note, ": no kernel is registered for any of them. ",
             have.empty() ? std::string("No backend has a kernel for this operator.")
                          : loom::str_cat("Kernels exist for: ", absl::StrJoin(have, "; "), "."),
             " Call: ", call);
}

const KernelFunction* OperatorEntry::lookup_after_race(DispatchKeySet ks) const {
  // Each retry follows a writer's publication; give up (report missing) only if the key
  // set really has no kernel any more.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const uint64_t m = ks.bits() & mask_.load(std::memory_order_acquire);
    if (m == 0) return nullptr;
    if (const KernelFunction* k = table_[63 - __builtin_clzll(m)].load(std::memory_order_acquire)) {
      return k;
    }
  }
  return nullptr;
}

// ---- OperatorHandle ----

const std::string& OperatorHandle::name() const { return entry_->name_; }

bool OperatorHandle::has_schema() const {
  return entry_->published_schema_.load(std::memory_order_acquire) != nullptr;
}

const FunctionSchema& OperatorHandle::schema() const {
  // One load: checking and then loading again could race with an unregistration.
  const FunctionSchema* s = entry_->published_schema_.load(std::memory_order_acquire);
  LOOM_CHECK_T(NotImplementedError, s != nullptr, "operator '", name(),
               "' has no schema (the plugin that defined it is not loaded)");
  return *s;
}

void OperatorHandle::check_typed(const InferredSignature& sig) const {
  const std::string why = signature_mismatch(schema(), sig);
  LOOM_CHECK_T(TypeError, why.empty(), "typed<", sig.str(), ">() for '", schema().str(),
               "': ", why);
}

void OperatorHandle::call_boxed(Stack& stack) const {
  normalize_boxed_arguments(*this, stack);
  DispatchKeySet ks = apply_local_keys(boxed_key_set(*this, stack));
  if (__builtin_expect(detail::mixes_meta(ks), 0)) {
    const size_t n = std::min(stack.size(), schema().arguments().size());
    Dispatcher::instance().check_meta_mix(
        *this, Stack(stack.end() - static_cast<ptrdiff_t>(n), stack.end()));
  }
  // A profiled call (loom/dispatcher/profiling.h), as Typed::call_profiled.
  std::optional<profiler::detail::OpScope> scope;
  if (__builtin_expect(ks.has(DispatchKey::Profiling), 0)) {
    scope.emplace(entry_, ks);
    if (scope->active()) {
      ks = ks.remove(DispatchKey::Profiling);
      if (scope->wants_shapes()) {
        const size_t n = schema().arguments().size();
        for (size_t i = stack.size() >= n ? stack.size() - n : 0; i < stack.size(); ++i) {
          const IValue& v = stack[i];
          if (v.is_tensor()) {
            scope->add_input(v.to_tensor());
          } else if (v.tag() == IValue::Tag::TensorList) {
            const auto& list = v.to_tensor_list();
            scope->add_input_list(list.data(), list.size());
          } else {
            scope->add_other();
          }
        }
      }
    }
  }
  const KernelFunction* k = entry_->lookup(ks);
  if (k == nullptr) Dispatcher::instance().report_missing_kernel(*this, ks, stack);
  k->call_boxed(*this, stack);
}

}  // namespace loom
