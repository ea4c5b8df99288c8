#pragma once
/// @file
/// The dispatcher's side of the profiler (docs/design/profiler.md): what a call does when its
/// key set holds DispatchKey::Profiling. The profiler (loom/profiler/profiler.h) turns the key
/// on for every thread while it records (process_included_keys); the typed and boxed call paths
/// then open an OpScope around the call, which writes one op event: the op, the provider and
/// plugin whose kernel serves it, start and end, nesting, the autograd sequence number, and
/// the input shapes when asked. With the profiler off the cost is one bit test per call.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <type_traits>

#include "loom/core/tensor.h"
#include "loom/dispatcher/dispatch_key.h"

namespace loom {

class OperatorEntry;

namespace profiler::detail {

/// One op event in the making: opened by the constructor, closed by the destructor (also when
/// the kernel throws). Inactive (no event, no cost but a load) when the profiler is not
/// recording: a key set may hold Profiling through IncludeDispatchKeyGuard alone.
class OpScope {
 public:
  /// Opens an event for a call of op with key set ks (Profiling still in it).
  OpScope(const OperatorEntry* op, DispatchKeySet ks);
  /// Closes it.
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

  /// True if an event is being recorded.
  bool active() const { return buffer_ != nullptr; }
  /// True if the profile records input shapes.
  bool wants_shapes() const { return wants_shapes_; }
  /// Appends an input's shape and dtype to the event ("[2, 3] float32"; undefined: "[]").
  void add_input(const Tensor& t);
  /// Appends a list of tensors as one input.
  void add_input_list(const Tensor* data, size_t n);
  /// Marks a non-tensor input (written as "-").
  void add_other();

 private:
  void* buffer_ = nullptr;
  uint64_t session_ = 0;
  uint64_t serial_ = 0;
  bool wants_shapes_ = false;
  bool tracked_ = false;  // on the thread's op stack for the memory history only
};

/// A provider kernel handed the current call of op on to the runner-up whose kernel label is
/// `label` (Note [Next provider]): the open event of op, if any, names that provider instead.
void note_hand_off(const OperatorEntry* op, uint16_t label);

/// True while a profiler records.
bool recording();

/// True while the Profiling key is on for every thread (a profiler records, or the memory
/// history keeps its op stack): one relaxed load, inline, for the hand-off path to test before
/// calling into the profiler.
inline bool profiling_key_on() {
  return (process_included_keys.load(std::memory_order_relaxed) >>
          static_cast<int>(DispatchKey::Profiling)) &
         1;
}

/// Note [Kernel labels]: the provider and plugin of a kernel, as one small id that an op event
/// carries (the dispatcher publishes each selected kernel's label beside it). Interned once per
/// distinct pair, at registration; never freed, so an event outlives an unloaded plugin. 0 is
/// "unknown".
uint16_t kernel_label(std::string_view provider, std::string_view plugin);
/// The provider and plugin of a label ("", "" for 0 or an unknown id).
std::pair<std::string, std::string> kernel_label_names(uint16_t label);

/// A contiguous list of tensors (TensorList, std::vector<Tensor>).
template <typename T>
concept TensorSpan = requires(const T& a) {
  a.data();
  a.size();
} && std::is_same_v<std::decay_t<decltype(*std::declval<const T&>().data())>, Tensor>;

/// Records the inputs of a typed call (only when the profile asks for shapes).
template <typename... Args>
void add_inputs(OpScope& scope, const Args&... args) {
  auto one = [&scope]<typename A>(const A& a) {
    using T = std::decay_t<A>;
    if constexpr (std::is_same_v<T, Tensor>) {
      scope.add_input(a);
    } else if constexpr (std::is_same_v<T, std::optional<Tensor>>) {
      if (a) {
        scope.add_input(*a);
      } else {
        scope.add_other();
      }
    } else if constexpr (TensorSpan<T>) {
      scope.add_input_list(a.data(), a.size());
    } else {
      scope.add_other();
    }
  };
  (one(args), ...);
}

}  // namespace profiler::detail
}  // namespace loom
