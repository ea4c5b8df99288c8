#pragma once
/// @file
/// The operator registry and the dispatch path.
///
/// Note [Lock-free dispatch]: each operator keeps, per dispatch key, an atomic
/// pointer to the selected kernel and an atomic mask of the keys that have
/// one. A call ORs its tensors' key sets with the thread's included keys,
/// removes the excluded ones, intersects with the mask and takes the highest
/// key: a few bit operations, one table load and an indirect call, no lock,
/// no string, no allocation. Registration takes one mutex, recomputes the
/// operator's table and publishes it with release stores. A replaced kernel
/// is retired, not freed, because another thread may still be calling it;
/// retired kernels of a plugin are freed when that plugin is unloaded (calls
/// into a plugin that is being unloaded are the caller's error, as in every
/// plugin system), the others at exit.

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/registration.h"
#include "loom/dispatcher/dispatch_key.h"
#include "loom/dispatcher/kernel.h"
#include "loom/dispatcher/profiling.h"
#include "loom/dispatcher/schema.h"

namespace loom {

class OperatorEntry;

/// How a kernel competes with other kernels for the same (op, key).
struct ImplOptions {
  /// Provider name ("reference", "onednn"); defaults to the registering plugin's name.
  std::string provider;
  /// Higher wins unless the user prefers another provider.
  int priority = 0;
};

/// One kernel registered for an (op, key), as reported by Dispatcher::kernels().
struct KernelInfo {
  DispatchKey key;       ///< the dispatch key
  std::string provider;  ///< provider name
  int priority;          ///< its priority
  Origin origin;         ///< who registered it
  bool active;           ///< selected by the current policy
  bool boxed_only;       ///< registered in boxed form only
};

/// A per-op provider override set with Dispatcher::set_provider_override.
struct ProviderOverride {
  std::string op;        ///< "aten::add.Tensor"
  DispatchKey key;       ///< the key it applies to
  std::string provider;  ///< the forced provider
};

/// A stable reference to a registered operator (valid for the process lifetime).
class OperatorHandle {
 public:
  /// An invalid handle.
  OperatorHandle() = default;
  /// True if this refers to an operator.
  explicit operator bool() const { return entry_ != nullptr; }
  /// "aten::add.Tensor".
  const std::string& name() const;
  /// The schema; throws NotImplementedError if the operator has impls but no def.
  const FunctionSchema& schema() const;
  /// True if a schema is defined.
  bool has_schema() const;
  /// Calls through the boxed convention: the stack holds the arguments (trailing defaults may
  /// be omitted; they are filled in) and receives the returns. Checks every argument's type.
  void call_boxed(Stack& stack) const;
  /// The entry (internal).
  OperatorEntry* entry() const { return entry_; }
  /// Same operator.
  friend bool operator==(OperatorHandle a, OperatorHandle b) { return a.entry_ == b.entry_; }

  template <typename Sig>
  class Typed;
  /// A typed handle; Sig must be the canonical C++ signature of the schema (Note [Canonical
  /// signatures]): e.g. Tensor(const Tensor&, const Tensor&, const Scalar&). Checked here.
  template <typename Sig>
  Typed<Sig> typed() const;

 private:
  friend class Dispatcher;
  explicit OperatorHandle(OperatorEntry* e) : entry_(e) {}
  void check_typed(const InferredSignature& sig) const;
  OperatorEntry* entry_ = nullptr;
};

/// Per-operator dispatch state that the hot path reads (see Note [Lock-free dispatch]).
///
/// Note [Next provider]: a provider may take only part of an op's domain (oneDNN computes
/// float32 and bfloat16, not float64). Its kernel hands the other calls to the runner-up, the
/// kernel the selection policy would pick at that key if the active provider were absent
/// (normally the reference kernel), with `Typed::call_next_provider`. Each publication
/// stores the runner-up beside the selected kernel, so handing on is one more atomic load.
class OperatorEntry {
 public:
  /// "aten::add.Tensor" (set once, when the entry is made).
  const std::string& name() const { return name_; }
  /// The profiler's label (an id of the provider and plugin, Note [Kernel labels] in
  /// dispatcher.cpp) of the kernel selected at key k; 0 if none.
  uint16_t kernel_label(DispatchKey k) const {
    return label_[static_cast<int>(k)].load(std::memory_order_relaxed);
  }
  /// The label of the runner-up kernel at backend key k; 0 if none.
  uint16_t next_provider_label(DispatchKey k) const {
    return next_label_[static_cast<int>(k)].load(std::memory_order_relaxed);
  }
  /// The runner-up kernel at backend key k (Note [Next provider]), or nullptr.
  const KernelFunction* next_provider(DispatchKey k) const {
    return next_provider_[static_cast<int>(k)].load(std::memory_order_acquire);
  }
  /// The kernel for a call with key set ks (already adjusted by TLS), or nullptr.
  const KernelFunction* lookup(DispatchKeySet ks) const {
    const uint64_t m = ks.bits() & mask_.load(std::memory_order_acquire);
    if (__builtin_expect(m == 0, 0)) return nullptr;
    const KernelFunction* k = table_[63 - __builtin_clzll(m)].load(std::memory_order_acquire);
    if (__builtin_expect(k != nullptr, 1)) return k;
    return lookup_after_race(ks);
  }

 private:
  // The slot of the key we picked was cleared by a concurrent unregistration after we read
  // the mask. The writer cleared the mask bit before the slot, so reading the mask again
  // sees the new state (Note [Lock-free dispatch]).
  const KernelFunction* lookup_after_race(DispatchKeySet ks) const;
  friend class Dispatcher;
  friend class DispatcherImpl;
  friend class OperatorHandle;
  std::atomic<uint64_t> mask_{0};
  std::array<std::atomic<const KernelFunction*>, kNumDispatchKeys> table_{};
  std::array<std::atomic<const KernelFunction*>, kNumDispatchKeys> next_provider_{};
  std::array<std::atomic<uint16_t>, kNumDispatchKeys> label_{};
  std::array<std::atomic<uint16_t>, kNumDispatchKeys> next_label_{};
  // Everything below is guarded by the dispatcher's registration mutex.
  std::string name_;
  std::unique_ptr<FunctionSchema> schema_;
  Origin schema_origin_;
  // Readers (boxed calls, messages) use the published pointer without the lock. A schema
  // that is undefined is retired, never freed, so a reference handed out stays valid.
  std::atomic<const FunctionSchema*> published_schema_{nullptr};
  std::vector<std::unique_ptr<FunctionSchema>> retired_schemas_;
};

/// Keys added to every call's key set and removed from it on this thread, applied to ks,
/// with the process-wide keys (Note [Process-wide keys]).
inline DispatchKeySet apply_local_keys(DispatchKeySet ks) {
  const LocalDispatchKeySet& tls = local_dispatch_key_set();
  const DispatchKeySet process =
      DispatchKeySet::from_bits(process_included_keys.load(std::memory_order_relaxed));
  return (ks | tls.included | process) & ~tls.excluded;
}

namespace detail {
/// Note [Meta mixed with a device]: a call with tensors on meta and on a device (cpu, cuda)
/// selects the device's kernel (the higher key), which would read the meta tensors' missing
/// data. Such a call is refused with PyTorch's "Expected all tensors to be on the same device"
/// before any kernel runs, except for the ops that move data between devices by design
/// (copy_: `x.to("meta")`). A typed call tests for it off its inline path (call_slow), which
/// any call with the Meta key takes (meta calls are shape propagation, never a hot loop).
inline bool mixes_meta(DispatchKeySet ks) {
  constexpr uint64_t meta = uint64_t{1} << static_cast<int>(DispatchKey::Meta);
  constexpr uint64_t backends =
      ((uint64_t{1} << (static_cast<int>(DispatchKey::LastBackend) + 1)) - 1) & ~((meta << 1) - 1);
  return (ks.bits() & meta) != 0 && (ks.bits() & backends) != 0;
}

/// The keys that take a typed call off its inline path: Profiling (an op event) and Meta (a
/// meta tensor may be mixed with a device's). One test on the hot path for both.
inline constexpr uint64_t kSlowPathKeys =
    (uint64_t{1} << static_cast<int>(DispatchKey::Profiling)) |
    (uint64_t{1} << static_cast<int>(DispatchKey::Meta));
}  // namespace detail

/// The process-wide operator registry.
class Dispatcher {
 public:
  /// The singleton (never destroyed, so static registrations may outlive main).
  static Dispatcher& instance();

  /// Defines an operator from its schema. Throws RegistrationError if the name is taken.
  RegistrationHandle def(FunctionSchema schema, Origin origin);
  /// Registers a kernel for (op, key). Checks its C++ signature against the schema; throws
  /// RegistrationError on a mismatch, an unknown op, or a provider registered twice.
  RegistrationHandle impl(std::string_view op_name, DispatchKey key, KernelFunction kernel,
                          ImplOptions options, Origin origin);
  /// Claims namespace ns for one LOOM_LIBRARY block (others add to it with
  /// LOOM_LIBRARY_FRAGMENT), as PyTorch allows one TORCH_LIBRARY per namespace. Throws
  /// RegistrationError naming the current owner.
  RegistrationHandle claim_namespace(std::string_view ns, Origin origin);
  /// Registers a boxed fallback for every op at key (or KernelFunction::fallthrough()).
  RegistrationHandle fallback(DispatchKey key, KernelFunction kernel, Origin origin);

  /// Finds "ns::name.overload" (or "name.overload", meaning namespace aten).
  std::optional<OperatorHandle> find_op(std::string_view name) const;
  /// As find_op; throws NotImplementedError with close matches if absent.
  OperatorHandle find_op_or_throw(std::string_view name) const;
  /// Every operator that has a schema, sorted by name.
  std::vector<OperatorHandle> ops() const;
  /// The kernels registered for op (all keys), highest key first.
  std::vector<KernelInfo> kernels(OperatorHandle op) const;
  /// The fallbacks registered per key.
  std::vector<KernelInfo> fallbacks() const;

  /// Prefers provider for every op at key (empty string: back to priorities).
  void set_preferred_provider(DispatchKey key, std::string provider);
  /// The preferred provider at key ("" if none).
  std::string preferred_provider(DispatchKey key) const;
  /// Forces provider for one op at key (empty string removes the override).
  void set_provider_override(std::string_view op_name, DispatchKey key, std::string provider);
  /// Every per-op override, sorted by op name.
  std::vector<ProviderOverride> provider_overrides() const;

  /// Frees retired kernels registered by plugin (call only once nothing can still run them).
  void release_retired(const std::string& plugin);

  /// Throws the error of call_next_provider when the op has one provider at key (cold path).
  [[noreturn]] void report_no_next_provider(OperatorHandle op, DispatchKey key) const;
  /// Throws the missing-kernel error for a call (cold path).
  [[noreturn]] void report_missing_kernel(OperatorHandle op, DispatchKeySet ks,
                                          const Stack& args) const;
  /// A call mixing meta and device tensors (Note [Meta mixed with a device]): throws
  /// DeviceError naming the devices and the call, unless op moves data between devices.
  void check_meta_mix(OperatorHandle op, const Stack& args) const;

 private:
  Dispatcher();
  friend class OperatorHandle;
  class Impl;
  std::unique_ptr<Impl> impl_;
};

/// A typed operator handle: the fast path. Obtain once, call many times.
template <typename R, typename... Args>
class OperatorHandle::Typed<R(Args...)> {
 public:
  /// Calls the operator.
  R call(Args... args) const {
    const DispatchKeySet ks = apply_local_keys(detail::key_set_of(args...));
    if (__builtin_expect((ks.bits() & detail::kSlowPathKeys) != 0, 0)) {
      return call_slow(ks, std::forward<Args>(args)...);
    }
    const KernelFunction* k = op_.entry()->lookup(ks);
    if (__builtin_expect(k == nullptr, 0)) missing(ks, args...);
    return k->template call<R, Args...>(op_, std::forward<Args>(args)...);
  }
  /// Calls the operator.
  R operator()(Args... args) const { return call(std::forward<Args>(args)...); }
  /// Calls the runner-up provider at backend key (Note [Next provider]): what a provider's
  /// kernel does with a call outside its domain. Throws NotImplementedError if there is none.
  R call_next_provider(DispatchKey key, Args... args) const {
    const KernelFunction* k = op_.entry()->next_provider(key);
    if (__builtin_expect(k == nullptr, 0)) Dispatcher::instance().report_no_next_provider(op_, key);
    if (__builtin_expect(profiler::detail::profiling_key_on(), 0)) {
      profiler::detail::note_hand_off(op_.entry(), op_.entry()->next_provider_label(key));
    }
    return k->template call<R, Args...>(op_, std::forward<Args>(args)...);
  }
  /// The untyped handle.
  OperatorHandle handle() const { return op_; }

 private:
  friend class OperatorHandle;
  explicit Typed(OperatorHandle op) : op_(op) {}
  // A call with a key of detail::kSlowPathKeys: a meta tensor beside a device's is refused
  // (Note [Meta mixed with a device]); with Profiling, call_profiled; else as call does.
  __attribute__((noinline)) R call_slow(DispatchKeySet ks, Args... args) const {
    if (detail::mixes_meta(ks)) meta_mix(args...);
    if (ks.has(DispatchKey::Profiling)) return call_profiled(ks, std::forward<Args>(args)...);
    const KernelFunction* k = op_.entry()->lookup(ks);
    if (__builtin_expect(k == nullptr, 0)) missing(ks, args...);
    return k->template call<R, Args...>(op_, std::forward<Args>(args)...);
  }
  // A call while a profiler records (loom/dispatcher/profiling.h): one op event around the
  // kernel the key set below Profiling selects. Not recording (Profiling came from a guard):
  // the key's own kernel or fallback runs, as for any key.
  R call_profiled(DispatchKeySet ks, Args... args) const {
    profiler::detail::OpScope scope(op_.entry(), ks);
    if (scope.active()) {
      ks = ks.remove(DispatchKey::Profiling);
      if (scope.wants_shapes()) profiler::detail::add_inputs(scope, args...);
    }
    const KernelFunction* k = op_.entry()->lookup(ks);
    if (__builtin_expect(k == nullptr, 0)) missing(ks, args...);
    return k->template call<R, Args...>(op_, std::forward<Args>(args)...);
  }
  __attribute__((noinline, cold)) void meta_mix(const Args&... args) const {
    Stack stack;
    (stack.push_back(detail::Arg<Args>::to_ivalue(args)), ...);
    Dispatcher::instance().check_meta_mix(op_, stack);
  }
  [[noreturn]] __attribute__((noinline, cold)) void missing(DispatchKeySet ks,
                                                            const Args&... args) const {
    Stack stack;
    (stack.push_back(detail::Arg<Args>::to_ivalue(args)), ...);
    Dispatcher::instance().report_missing_kernel(op_, ks, stack);
  }
  OperatorHandle op_;
};

template <typename Sig>
OperatorHandle::Typed<Sig> OperatorHandle::typed() const {
  using FT = detail::FunctionTraits<Sig>;
  [&]<typename... A>(std::tuple<A...>*) {
    static_assert((detail::kIsCanonicalArg<A> && ...),
                  "typed<Sig>(): every parameter must use its canonical type (const Tensor&, "
                  "IntArrayRef, TensorList, const Scalar&, std::string_view, ...)");
  }(static_cast<typename FT::Args*>(nullptr));
  static_assert(detail::kIsCanonicalRet<typename FT::Return>,
                "typed<Sig>(): the return type must be canonical (Tensor, not Tensor&)");
  check_typed(infer_signature<Sig>());
  return Typed<Sig>(*this);
}

}  // namespace loom
