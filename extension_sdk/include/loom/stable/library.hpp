#pragma once
/// @file
/// Registering ops, kernels and derivatives from C++ callables: Library, BackwardContext,
/// PluginRegistrar. No exception crosses the C boundary: every callback's becomes a status.
/// Part of loom/stable.hpp (include that).

#include <cstring>
#include <functional>
#include <list>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/stable/tensor_ops.hpp"

namespace loom::stable {

/// What a custom op's backward sees: saved tensor inputs and outputs, the gradients of the
/// outputs; it sets one gradient per tensor input that needs one.
class BackwardContext {
 public:
  /// Wraps the library's context (valid during the backward call).
  explicit BackwardContext(LoomBackwardContext* ctx) noexcept : ctx_(ctx) {}
  /// Number of tensor inputs (the op's tensor arguments, in schema order).
  size_t num_inputs() const { return api()->BackwardNumInputs(ctx_); }
  /// Number of outputs.
  size_t num_outputs() const { return api()->BackwardNumOutputs(ctx_); }
  /// Saved tensor input i.
  Tensor input(size_t i) const {
    const LoomTensor* t = nullptr;
    check(api()->BackwardInput(ctx_, i, &t));
    return Tensor::borrow(t);
  }
  /// Saved output i.
  Tensor output(size_t i) const {
    const LoomTensor* t = nullptr;
    check(api()->BackwardOutput(ctx_, i, &t));
    return Tensor::borrow(t);
  }
  /// The gradient of output i (zeros if none arrived).
  Tensor grad_output(size_t i) const {
    const LoomTensor* t = nullptr;
    check(api()->BackwardGradOutput(ctx_, i, &t));
    return Tensor::borrow(t);
  }
  /// Whether tensor input i needs a gradient.
  bool needs_input_grad(size_t i) const { return api()->BackwardNeedsInputGrad(ctx_, i); }
  /// Sets the gradient of tensor input i.
  void set_grad_input(size_t i, const Tensor& grad) {
    check(api()->BackwardSetGradInput(ctx_, i, grad.get()));
  }
  /// The non-tensor argument at schema position `position` (copied).
  Value argument(size_t position) const {
    LoomValue v;
    detail::clear(v);
    check(api()->BackwardArgument(ctx_, position, &v));
    return Value::from_borrowed(v);
  }
  /// The C context.
  LoomBackwardContext* get() const noexcept { return ctx_; }

 private:
  LoomBackwardContext* ctx_;
};

/// @cond INTERNAL
namespace detail {
/// The status for the exception being handled (call only inside a catch block); never lets
/// an exception out.
inline LoomStatus* status_from_current_exception() noexcept {
  try {
    try {
      throw;
    } catch (const Error& e) {
      return api()->StatusCreate(e.code(), e.what());
    } catch (const std::bad_alloc& e) {
      return api()->StatusCreate(LOOM_OUT_OF_MEMORY, e.what());
    } catch (const std::invalid_argument& e) {
      return api()->StatusCreate(LOOM_VALUE_ERROR, e.what());
    } catch (const std::out_of_range& e) {
      return api()->StatusCreate(LOOM_INDEX_ERROR, e.what());
    } catch (const std::exception& e) {
      return api()->StatusCreate(LOOM_ERROR, e.what());
    } catch (...) {
      return api()->StatusCreate(LOOM_ERROR, "a C++ exception of unknown type");
    }
  } catch (...) {
    return api()->StatusCreate(LOOM_OUT_OF_MEMORY, "out of memory while reporting an error");
  }
}

/// The last user_data a release function of this header freed on this thread
/// (Note [Who frees user_data on a failed registration]).
inline void*& last_released() {
  thread_local void* p = nullptr;  // trivially destructible: no thread-exit hook in a plugin
  return p;
}

/// Deletes a heap-allocated F (the release function of a registration).
template <typename F>
void delete_callable(void* p) {
  last_released() = p;
  delete static_cast<F*>(p);
}

/// Registers holder through reg(holder, release) (a LibraryImpl-like call); on failure frees
/// holder unless the library already did, and throws the status.
template <typename H, typename Reg>
void register_callable(H* holder, Reg&& reg) {
  last_released() = nullptr;
  LoomStatus* st = reg(static_cast<void*>(holder), &delete_callable<H>);
  if (st != nullptr) {
    if (last_released() != holder) delete holder;
    throw_status(st);
  }
}

/// A kernel callable with the name of the op it serves (for messages).
template <typename F>
struct Kernel {
  F fn;            ///< the callable
  std::string op;  ///< "myops::scale"
};

/// The parameter and result types of a function, function pointer or lambda.
template <typename T>
struct function_traits : function_traits<decltype(&T::operator())> {};
/// A function type.
template <typename R, typename... A>
struct function_traits<R(A...)> {
  using result = R;               ///< the result type
  using args = std::tuple<A...>;  ///< the parameter types
};
/// A function pointer.
template <typename R, typename... A>
struct function_traits<R (*)(A...)> : function_traits<R(A...)> {};
/// A const call operator (a lambda).
template <typename C, typename R, typename... A>
struct function_traits<R (C::*)(A...) const> : function_traits<R(A...)> {};
/// A mutable call operator.
template <typename C, typename R, typename... A>
struct function_traits<R (C::*)(A...)> : function_traits<R(A...)> {};

template <typename T>
struct is_tuple : std::false_type {};
template <typename... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};

/// Argument i of a typed kernel as T; a TypeError naming op and i for another kind.
template <typename T>
T unbox(const Value& v, const std::string& op, size_t i) {
  try {
    if constexpr (std::is_same_v<T, Value>) {
      return v;
    } else if constexpr (std::is_same_v<T, Tensor>) {
      return v.is_none() ? Tensor() : v.to_tensor();  // Tensor? arguments: None is undefined
    } else if constexpr (std::is_same_v<T, bool>) {
      return v.to_bool();
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(v.to_int());
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(v.to_double());
    } else if constexpr (std::is_same_v<T, Scalar>) {
      return v.to_scalar();
    } else if constexpr (std::is_same_v<T, std::string>) {
      return v.to_string();
    } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
      return v.to_int_list();
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      return v.to_double_list();
    } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
      return v.to_tensor_list();
    } else if constexpr (std::is_same_v<T, DType>) {
      return v.to_dtype();
    } else if constexpr (is_optional<T>::value) {
      if (v.is_none()) return T();
      return T(unbox<typename T::value_type>(v, op, i));
    } else {
      static_assert(dependent_false<T>,
                    "a typed kernel's parameters must be Tensor, bool, integers, floating-point, "
                    "Scalar, std::string, std::vector<int64_t>/<double>/<Tensor>, DType, "
                    "std::optional of those, or Value");
    }
  } catch (const TypeError& e) {
    throw TypeError(op + ": argument " + std::to_string(i) + ": " + e.what());
  }
}

/// A kernel whose parameters are C++ types (`Tensor f(const Tensor& x, double k)`): unboxes
/// the arguments by position and boxes the result (Tensor, Value, std::vector<Value> or a
/// std::tuple of those, one per return).
template <typename F>
struct TypedKernel {
  F fn;            ///< the callable
  std::string op;  ///< the op, for messages
  /// Calls fn with the unboxed arguments.
  auto operator()(const std::vector<Value>& args) {
    using Args = typename function_traits<F>::args;
    constexpr size_t n = std::tuple_size_v<Args>;
    if (args.size() != n) {
      throw TypeError(op + ": the kernel takes " + std::to_string(n) + " arguments but the op " +
                      "passed " + std::to_string(args.size()));
    }
    return call(args, std::make_index_sequence<n>{});
  }

 private:
  /// The call with the arguments unboxed.
  template <size_t... I>
  auto call(const std::vector<Value>& args, std::index_sequence<I...>) {
    using Args = typename function_traits<F>::args;
    using R = std::decay_t<typename function_traits<F>::result>;
    if constexpr (is_tuple<R>::value) {
      R r = fn(unbox<std::decay_t<std::tuple_element_t<I, Args>>>(args[I], op, I)...);
      return std::apply([](auto&&... v) { return std::vector<Value>{Value(std::move(v))...}; },
                        std::move(r));
    } else {
      (void)args;
      return fn(unbox<std::decay_t<std::tuple_element_t<I, Args>>>(args[I], op, I)...);
    }
  }
};

/// The values a kernel returned whose arrays or strings the library reads after the kernel
/// returns (capi.h: valid until the next kernel call on the thread). Only list and string
/// returns are kept, so a tensor-returning kernel never touches it. (Once touched, glibc keeps
/// an extension's .so mapped until the thread exits, for this thread_local's destructor; the
/// extension's registrations are still undone at unload.)
inline std::vector<Value>& kept_returns() {
  thread_local std::vector<Value> kept;
  return kept;
}

/// Copies a C value into a library-provided return slot, stepping by the slot's own
/// struct_size (the library may be newer than this header).
inline void write_slot(LoomValue* rets, size_t i, const LoomValue& v) {
  const size_t stride = rets[0].struct_size != 0 ? rets[0].struct_size : sizeof(LoomValue);
  auto* dst = reinterpret_cast<LoomValue*>(reinterpret_cast<char*>(rets) + i * stride);
  const uint32_t size = dst->struct_size;
  std::memcpy(dst, &v, sizeof(LoomValue) < stride ? sizeof(LoomValue) : stride);
  dst->struct_size = size != 0 ? size : static_cast<uint32_t>(sizeof(LoomValue));
}

/// The LoomKernelFn of a C++ callable F(const std::vector<Value>&) returning Tensor, Value or
/// std::vector<Value> (one per return of the schema).
template <typename F>
LoomStatus* kernel_trampoline(void* user_data, const LoomValue* args, size_t num_args,
                              LoomValue* rets, size_t num_returns) noexcept {
  try {
    auto& k = *static_cast<Kernel<F>*>(user_data);
    std::vector<Value> in;
    in.reserve(num_args);
    const size_t stride = num_args > 0 ? args[0].struct_size : sizeof(LoomValue);
    for (size_t i = 0; i < num_args; ++i) {
      const auto* v =
          reinterpret_cast<const LoomValue*>(reinterpret_cast<const char*>(args) + i * stride);
      in.push_back(Value::from_borrowed(*v));
    }
    using R = std::decay_t<decltype(k.fn(in))>;
    std::vector<Value> out;
    if constexpr (std::is_same_v<R, std::vector<Value>>) {
      out = k.fn(in);
    } else {
      static_assert(std::is_convertible_v<R, Value>,
                    "a kernel must return Tensor, Value or std::vector<Value>");
      out.emplace_back(k.fn(in));
    }
    if (out.size() != num_returns) {
      throw ValueError(k.op + ": the kernel returned " + std::to_string(out.size()) +
                       " values but the schema has " + std::to_string(num_returns) + " returns");
    }
    bool keep = false;
    for (const Value& v : out) {
      keep = keep || (v.kind() != ValueKind::Tensor && v.kind() != ValueKind::None &&
                      v.kind() != ValueKind::Int && v.kind() != ValueKind::Float &&
                      v.kind() != ValueKind::Bool && v.kind() != ValueKind::DType);
    }
    if (keep) {
      kept_returns() = std::move(out);
    }
    const std::vector<Value>& src = keep ? kept_returns() : out;
    // Nothing below can fail: tensors (and tensor-list elements) become new references.
    for (size_t i = 0; i < num_returns; ++i) {
      LoomValue v;
      clear(v);
      src[i].box(v);
      if (v.kind == LOOM_VALUE_TENSOR && v.u.tensor != nullptr) {
        api()->TensorRetain(v.u.tensor);
      } else if (v.kind == LOOM_VALUE_TENSOR_LIST) {
        for (size_t j = 0; j < v.u.tensors.size; ++j) {
          if (v.u.tensors.data[j] != nullptr) api()->TensorRetain(v.u.tensors.data[j]);
        }
      }
      write_slot(rets, i, v);
    }
    return nullptr;
  } catch (...) {
    return status_from_current_exception();
  }
}

/// The LoomKernelFn of a raw boxed C++ callable F(const LoomValue*, size_t, LoomValue*,
/// size_t).
template <typename F>
LoomStatus* boxed_trampoline(void* user_data, const LoomValue* args, size_t num_args,
                             LoomValue* rets, size_t num_returns) noexcept {
  try {
    (*static_cast<F*>(user_data))(args, num_args, rets, num_returns);
    return nullptr;
  } catch (...) {
    return status_from_current_exception();
  }
}

/// The LoomBackwardFn of a C++ callable F(BackwardContext&).
template <typename F>
LoomStatus* backward_trampoline(void* user_data, LoomBackwardContext* ctx) noexcept {
  try {
    BackwardContext c(ctx);
    (*static_cast<F*>(user_data))(c);
    return nullptr;
  } catch (...) {
    return status_from_current_exception();
  }
}
}  // namespace detail
/// @endcond

// Note [Who frees user_data on a failed registration]: a registration hands the library a heap
// copy of the callable and a release function that deletes it when the registration is undone.
// When LibraryImpl / LibraryImplBackward fail, capi.h v1 does not say whether release runs, so
// the release functions record what they freed (detail::last_released, per thread: the
// library calls release synchronously inside the failing call, if at all) and the wrapper
// deletes the copy only if the library did not. Neither a leak nor a double free either way.

/// A set of registrations (op definitions, kernels, derivatives) for one namespace.
///
/// Made by Library::create (owned by the caller: destroying it undoes every registration)
/// or, inside a stable extension, by PluginRegistrar::library (owned by the plugin: undone
/// when it unloads). Move-only. Callables are kept on the heap until the registration is
/// undone; their exceptions become statuses (no exception crosses the C boundary).
class Library {
 public:
  /// A library for namespace ns owned by the caller. ns = nullptr owns no namespace: use it
  /// for kernels of ops defined elsewhere, with qualified names ("aten::add.Tensor").
  static Library create(const char* ns) {
    LoomLibrary* lib = nullptr;
    check(api()->LibraryCreate(ns, &lib));
    return Library(lib, /*owned=*/true);
  }
  /// create for a std::string.
  static Library create(const std::string& ns) { return create(ns.c_str()); }
  /// Wraps a C library; owned: release it in the destructor.
  Library(LoomLibrary* lib, bool owned) noexcept : lib_(lib), owned_(owned) {}
  /// Takes o's library.
  Library(Library&& o) noexcept : lib_(o.lib_), owned_(o.owned_) { o.lib_ = nullptr; }
  /// Takes o's library (undoing this one's first).
  Library& operator=(Library&& o) noexcept {
    std::swap(lib_, o.lib_);
    std::swap(owned_, o.owned_);
    return *this;
  }
  /// Not copyable.
  Library(const Library&) = delete;
  /// Not copyable.
  Library& operator=(const Library&) = delete;
  /// Undoes the registrations of an owned library.
  ~Library() {
    if (owned_ && lib_ != nullptr) api()->LibraryRelease(lib_);
  }

  /// The C handle.
  LoomLibrary* get() const noexcept { return lib_; }
  /// Undoes an owned library's registrations now (the Library is empty afterwards).
  void reset() noexcept {
    if (owned_ && lib_ != nullptr) api()->LibraryRelease(lib_);
    lib_ = nullptr;
  }

  /// Defines an op from a schema ("scale(Tensor x, float k) -> Tensor").
  Library& def(const char* schema) {
    check(api()->LibraryDef(lib_, schema));
    return *this;
  }
  /// def for a std::string.
  Library& def(const std::string& schema) { return def(schema.c_str()); }

  /// Registers a kernel of op for dispatch_key ("CPU", "CUDA"). f is either
  ///  - boxed: f(const std::vector<Value>& args), or
  ///  - typed: f's parameters are the schema's arguments as C++ types, in order
  ///    (`[](const Tensor& x, double k) { return x * k; }`; Tensor, bool, integers, floats,
  ///    Scalar, std::string, int/float/Tensor vectors, DType, std::optional of those, Value),
  /// returning a Tensor or Value (one return), std::vector<Value> or a std::tuple (one per
  /// return). Its exceptions become statuses with their code (Error) and message.
  template <typename F>
  Library& impl(const char* op, const char* dispatch_key, F f) {
    using Fn = std::decay_t<F>;
    if constexpr (std::is_invocable_v<Fn&, const std::vector<Value>&>) {
      return impl_values(op, dispatch_key, std::move(f));
    } else {
      return impl_values(op, dispatch_key, detail::TypedKernel<Fn>{std::move(f), op});
    }
  }
  /// impl for a boxed f(const std::vector<Value>&) (what impl does for such an f).
  template <typename F>
  Library& impl_values(const char* op, const char* dispatch_key, F f) {
    using Fn = std::decay_t<F>;
    using Holder = detail::Kernel<Fn>;
    // Note [Who frees user_data on a failed registration].
    detail::register_callable(new Holder{std::move(f), op}, [&](void* ud, LoomReleaseFn rel) {
      return api()->LibraryImpl(lib_, op, dispatch_key, &detail::kernel_trampoline<Fn>, ud, rel);
    });
    return *this;
  }
  /// impl with a std::function returning the op's single tensor.
  Library& impl_tensor_fn(const char* op, const char* dispatch_key,
                          std::function<Tensor(const std::vector<Value>&)> f) {
    return impl(op, dispatch_key, std::move(f));
  }
  /// Registers a raw boxed kernel f(const LoomValue* args, size_t num_args, LoomValue*
  /// returns, size_t num_returns) that writes the C returns itself (tensors as new references,
  /// e.g. Tensor::release()); no copies of the arguments are made. Exceptions become statuses.
  template <typename F>
  Library& impl_boxed(const char* op, const char* dispatch_key, F f) {
    using Fn = std::decay_t<F>;
    detail::register_callable(new Fn(std::move(f)), [&](void* ud, LoomReleaseFn rel) {
      return api()->LibraryImpl(lib_, op, dispatch_key, &detail::boxed_trampoline<Fn>, ud, rel);
    });
    return *this;
  }
  /// Gives op a derivative f(BackwardContext&), which sets a gradient for each tensor input
  /// that needs one. Its exceptions become statuses.
  template <typename F>
  Library& impl_backward(const char* op, F f) {
    using Fn = std::decay_t<F>;
    detail::register_callable(new Fn(std::move(f)), [&](void* ud, LoomReleaseFn rel) {
      return api()->LibraryImplBackward(lib_, op, &detail::backward_trampoline<Fn>, ud, rel);
    });
    return *this;
  }

 private:
  LoomLibrary* lib_ = nullptr;
  bool owned_ = false;
};

/// What a stable extension's register function receives (LOOM_STABLE_EXTENSION): gives
/// Libraries owned by the loading plugin, undone when it unloads.
class PluginRegistrar {
 public:
  /// Wraps the loader's context (valid during register_plugin).
  explicit PluginRegistrar(LoomPluginContext* ctx) noexcept : ctx_(ctx) {}
  /// A library for namespace ns (nullptr: none, for kernels of ops defined elsewhere) owned
  /// by the plugin; the reference stays valid during registration.
  Library& library(const char* ns) {
    LoomLibrary* lib = nullptr;
    check(api()->PluginLibrary(ctx_, ns, &lib));
    libraries_.emplace_back(lib, /*owned=*/false);
    return libraries_.back();
  }
  /// library for a std::string.
  Library& library(const std::string& ns) { return library(ns.c_str()); }
  /// The loader's context.
  LoomPluginContext* context() const noexcept { return ctx_; }

 private:
  LoomPluginContext* ctx_;
  std::list<Library> libraries_;
};

/// @cond INTERNAL
namespace detail {
/// Runs a stable extension's register function: 0, or non-zero with the message of its
/// exception in error.
template <typename F>
int run_register(LoomPluginContext* ctx, char* error, size_t capacity, F&& register_fn) noexcept {
  std::string message;
  try {
    PluginRegistrar registrar(ctx);
    register_fn(registrar);
    return 0;
  } catch (const std::exception& e) {
    try {
      message = e.what();
    } catch (...) {
    }
  } catch (...) {
    message = "a C++ exception of unknown type";
  }
  if (error != nullptr && capacity > 0) {
    const size_t n = message.size() < capacity - 1 ? message.size() : capacity - 1;
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return 1;
}
}  // namespace detail
/// @endcond

}  // namespace loom::stable
