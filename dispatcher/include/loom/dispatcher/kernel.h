#pragma once
/// @file
/// KernelFunction: one registered kernel in both forms, unboxed (a typed
/// trampoline, the fast path) and boxed (operates on a Stack). Registering
/// either form gives both (Note [Canonical signatures]).

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "loom/dispatcher/kernel_traits.h"

namespace loom {

class OperatorHandle;

namespace detail {
/// A thread's spare stacks, so that a typed call reaching a boxed kernel (the autograd
/// kernels, C ABI kernels) does not allocate one per call.
inline std::vector<Stack>& stack_pool() {
  static thread_local std::vector<Stack> pool;
  return pool;
}
/// A stack taken from this thread's pool for one call and given back (emptied) after it.
struct PooledStack {
  Stack stack;
  PooledStack() {
    std::vector<Stack>& pool = stack_pool();
    if (!pool.empty()) {
      stack = std::move(pool.back());
      pool.pop_back();
    }
  }
  ~PooledStack() {
    stack.clear();
    std::vector<Stack>& pool = stack_pool();
    if (pool.size() < 16) pool.push_back(std::move(stack));
  }
  PooledStack(const PooledStack&) = delete;
  PooledStack& operator=(const PooledStack&) = delete;
};
}  // namespace detail

/// A kernel, callable boxed and (when made from C++ code) unboxed.
class KernelFunction {
 public:
  /// The boxed form: reads its arguments from the top of the stack, replaces them with returns.
  using BoxedFunction = std::function<void(const OperatorHandle& op, Stack& stack)>;

  /// An empty kernel.
  KernelFunction() = default;

  /// Wraps a C++ function pointer or functor (lambda); the signature is inferred and
  /// later checked against the schema.
  template <typename F>
  static KernelFunction from_functor(F f);

  /// Wraps a boxed function. Typed calls box their arguments to reach it.
  static KernelFunction from_boxed(BoxedFunction f);

  /// A marker meaning "this key has nothing to do for this op; go to the next key".
  static KernelFunction fallthrough();

  /// True if no kernel is held.
  bool empty() const { return !boxed_ && !fallthrough_; }
  /// True for the fallthrough marker.
  bool is_fallthrough() const { return fallthrough_; }
  /// True if a typed trampoline exists.
  bool has_unboxed() const { return unboxed_ != nullptr; }
  /// The C++ signature for kernels made from C++ code.
  const std::optional<InferredSignature>& signature() const { return signature_; }

  /// Calls the boxed form.
  void call_boxed(const OperatorHandle& op, Stack& stack) const {
    boxed_(functor_.get(), op, stack);
  }

  /// Calls with canonical argument types (the unboxed trampoline, or boxing as needed).
  template <typename R, typename... Args>
  R call(const OperatorHandle& op, Args... args) const {
    if (__builtin_expect(unboxed_ != nullptr, 1)) {
      return reinterpret_cast<R (*)(void*, Args...)>(unboxed_)(functor_.get(),
                                                               std::forward<Args>(args)...);
    }
    detail::PooledStack pooled;
    Stack& stack = pooled.stack;
    (stack.push_back(detail::Arg<Args>::to_ivalue(args)), ...);
    call_boxed(op, stack);
    if constexpr (!std::is_void_v<R>) return detail::Ret<R>::pop(stack);
  }

 private:
  using BoxedTrampoline = void (*)(void* functor, const OperatorHandle& op, Stack& stack);
  template <typename R, typename... A>
  struct Wrap;

  std::shared_ptr<void> functor_;
  void* unboxed_ = nullptr;
  BoxedTrampoline boxed_ = nullptr;
  bool fallthrough_ = false;
  std::optional<InferredSignature> signature_;
};

/// The trampolines that adapt a C++ functor of signature R(A...) to the canonical unboxed
/// signature and to the boxed convention.
template <typename R, typename... A>
struct KernelFunction::Wrap {
  /// Canonical unboxed entry: converts each canonical argument to the functor's type.
  template <typename F>
  static typename detail::Ret<R>::Canonical unboxed(void* functor,
                                                    detail::CanonicalArg<A>... args) {
    return (*static_cast<F*>(functor))(detail::Arg<A>::from_canonical(args)...);
  }
  /// Reads the arguments from the stack top, calls, replaces them with the returns.
  template <typename F, size_t... I>
  static void boxed_impl(void* functor, Stack& stack, std::index_sequence<I...>) {
    const size_t base = stack.size() - sizeof...(A);
    if constexpr (std::is_void_v<R>) {
      (*static_cast<F*>(functor))(detail::Arg<A>::from_ivalue(stack[base + I])...);
      stack.resize(base);
    } else {
      // The result may view argument storage (spans into the stack), so build it first.
      typename detail::Ret<R>::Canonical result =
          (*static_cast<F*>(functor))(detail::Arg<A>::from_ivalue(stack[base + I])...);
      stack.resize(base);
      detail::Ret<R>::push(stack, std::move(result));
    }
  }
  /// Boxed entry.
  template <typename F>
  static void boxed(void* functor, const OperatorHandle&, Stack& stack) {
    LOOM_CHECK(stack.size() >= sizeof...(A), "boxed kernel call: stack holds ", stack.size(),
               " values but the kernel takes ", sizeof...(A), " arguments");
    boxed_impl<F>(functor, stack, std::index_sequence_for<A...>{});
  }
};

template <typename F>
KernelFunction KernelFunction::from_functor(F f) {
  using Fn = std::decay_t<F>;
  using FT = detail::FunctionTraits<Fn>;
  KernelFunction k;
  k.functor_ =
      std::shared_ptr<void>(new Fn(std::move(f)), [](void* p) { delete static_cast<Fn*>(p); });
  k.signature_ = loom::infer_signature<Fn>();
  [&]<typename... A>(std::tuple<A...>*) {
    using W = Wrap<typename FT::Return, A...>;
    k.unboxed_ = reinterpret_cast<void*>(&W::template unboxed<Fn>);
    k.boxed_ = &W::template boxed<Fn>;
  }(static_cast<typename FT::Args*>(nullptr));
  return k;
}

}  // namespace loom
