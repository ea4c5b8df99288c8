#pragma once
/// @file
/// Dispatch keys and key sets.
///
/// Note [Dispatch key order]: a key set is a 64-bit mask; the highest set bit
/// is the key that handles a call. From high to low: Profiling, Tracing,
/// Autocast, Autograd, then the backend keys (CPU, then one key per device
/// type registered at run time), then Meta. A key with no kernel for an op and
/// no fallback is "fallthrough": it is masked out of that op's key set, so the
/// call goes to the next key without any per-call test.

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "loom/core/device.h"

namespace loom {

/// One dispatch key; its numeric value is its bit position (higher = earlier).
enum class DispatchKey : uint8_t {
  Undefined = 0,
  Meta = 1,  ///< shape-only backend (device "meta")
  CPU = 2,   ///< the CPU backend
  // 3 .. 32: backend keys for device types registered at run time (see backend_key()).
  FirstDynamicBackend = 3,
  LastBackend = 32,
  /// Alias key, never in a call's key set: a kernel registered here only calls other ops
  /// (PyTorch's CompositeImplicitAutograd), so it serves every backend key and the Autograd
  /// key of an op that has no kernel of its own there; its parts then record their gradients.
  CompositeImplicitAutograd = 40,
  Autograd = 48,   ///< derivative recording
  Autocast = 49,   ///< automatic mixed precision
  Tracing = 50,    ///< graph tracing
  Profiling = 51,  ///< profiler (usually a boxed fallback)
};

/// Number of key slots (bit positions) in a key set.
inline constexpr int kNumDispatchKeys = 64;

/// The backend key for a device type: cpu -> CPU, meta -> Meta, others get the
/// dynamic key allocated when the type was registered.
inline DispatchKey backend_key(DeviceType t) {
  return t.id == 0   ? DispatchKey::CPU
         : t.id == 1 ? DispatchKey::Meta
                     : static_cast<DispatchKey>(t.id + 1);
}
/// True for alias keys (registration only; never dispatched on).
inline bool is_alias_key(DispatchKey k) { return k == DispatchKey::CompositeImplicitAutograd; }
/// True for CPU, Meta and the dynamic backend keys.
inline bool is_backend_key(DispatchKey k) {
  return k >= DispatchKey::Meta && k <= DispatchKey::LastBackend;
}
/// "CPU", "Autograd", or the upper-cased device name for dynamic backends ("CUDA", "FAKE").
std::string dispatch_key_name(DispatchKey k);
/// Inverse of dispatch_key_name (case-insensitive); throws ValueError listing the known keys.
DispatchKey parse_dispatch_key(std::string_view name);

/// A set of dispatch keys (a 64-bit mask).
class DispatchKeySet {
 public:
  /// The empty set.
  constexpr DispatchKeySet() = default;
  /// A set with one key.
  constexpr explicit DispatchKeySet(DispatchKey k)
      : bits_(k == DispatchKey::Undefined ? 0 : uint64_t{1} << static_cast<uint8_t>(k)) {}
  /// A set from raw bits.
  static constexpr DispatchKeySet from_bits(uint64_t bits) {
    DispatchKeySet s;
    s.bits_ = bits;
    return s;
  }
  /// The raw mask.
  constexpr uint64_t bits() const { return bits_; }
  /// True if k is in the set.
  constexpr bool has(DispatchKey k) const { return (bits_ >> static_cast<uint8_t>(k)) & 1; }
  /// True if empty.
  constexpr bool empty() const { return bits_ == 0; }
  /// The set plus k.
  constexpr DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  /// The set minus k.
  constexpr DispatchKeySet remove(DispatchKey k) const {
    return from_bits(bits_ & ~DispatchKeySet(k).bits_);
  }
  /// The highest-priority key, Undefined if empty.
  constexpr DispatchKey highest() const {
    return bits_ == 0 ? DispatchKey::Undefined
                      : static_cast<DispatchKey>(63 - __builtin_clzll(bits_));
  }
  /// Union.
  friend constexpr DispatchKeySet operator|(DispatchKeySet a, DispatchKeySet b) {
    return from_bits(a.bits_ | b.bits_);
  }
  /// Intersection.
  friend constexpr DispatchKeySet operator&(DispatchKeySet a, DispatchKeySet b) {
    return from_bits(a.bits_ & b.bits_);
  }
  /// Complement.
  friend constexpr DispatchKeySet operator~(DispatchKeySet a) { return from_bits(~a.bits_); }
  /// Equality.
  friend constexpr bool operator==(DispatchKeySet a, DispatchKeySet b) {
    return a.bits_ == b.bits_;
  }
  /// "{Autograd, CPU}" (highest first).
  std::string str() const;

 private:
  uint64_t bits_ = 0;
};

/// Thread-local keys added to / removed from every call's key set.
struct LocalDispatchKeySet {
  DispatchKeySet included;  ///< keys forced on (e.g. Profiling while a profiler runs)
  DispatchKeySet excluded;  ///< keys forced off (e.g. Autograd under no_grad / below autograd)
};

/// This thread's include/exclude sets (mutable; prefer the guards below).
LocalDispatchKeySet& local_dispatch_key_set();

/// Note [Process-wide keys]: keys added to every call on every thread, as bits of a
/// DispatchKeySet: Profiling while a profiler records, so that events come from all threads
/// (DataLoader workers, the autograd engine's caller, the program's own) without each one
/// opting in. A thread's excluded set still removes them. Read with one relaxed load per call.
extern std::atomic<uint64_t> process_included_keys;

/// Excludes keys on this thread for the guard's lifetime (e.g. "below autograd").
class ExcludeDispatchKeyGuard {
 public:
  /// Adds keys to the thread's excluded set.
  explicit ExcludeDispatchKeyGuard(DispatchKeySet keys);
  /// Restores the previous excluded set.
  ~ExcludeDispatchKeyGuard();
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet* tls_;
  DispatchKeySet previous_;
};

/// Includes keys on this thread for the guard's lifetime (e.g. a profiler).
class IncludeDispatchKeyGuard {
 public:
  /// Adds keys to the thread's included set.
  explicit IncludeDispatchKeyGuard(DispatchKeySet keys);
  /// Restores the previous included set.
  ~IncludeDispatchKeyGuard();
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  LocalDispatchKeySet* tls_;
  DispatchKeySet previous_;
};

}  // namespace loom
