#pragma once
/// @file
/// How C++ kernel signatures map to schema types, and how arguments are boxed
/// and unboxed.
///
/// Note [Canonical signatures]: a kernel may take `Tensor`, `const Tensor&` or
/// `Tensor&`; `IntArrayRef` or `std::vector<int64_t>`. Each kernel is wrapped
/// in a trampoline with one canonical C++ signature per schema (Tensor ->
/// const Tensor&, int[] -> IntArrayRef, Tensor[] -> TensorList (ArrayRef<Tensor>),
/// str -> std::string_view, ...), so a typed call made with the canonical
/// signature can reach any kernel of the op through one indirect call, and a
/// mismatch is caught once, when the kernel is registered or typed() is asked.

#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "loom/dispatcher/ivalue.h"
#include "loom/dispatcher/schema.h"

namespace loom {

/// A read-only list of tensors (canonical form of Tensor[]).
using TensorList = ArrayRef<Tensor>;

namespace detail {
template <typename T>
inline constexpr bool kAlwaysFalse = false;

/// Per C++ parameter type: canonical form, schema type, conversions.
template <typename T, typename = void>
struct ArgTraits {
  static_assert(kAlwaysFalse<T>,
                "this C++ type is not supported in a kernel signature; see "
                "Note [Canonical signatures] in kernel_traits.h for the supported types");
};

template <>
struct ArgTraits<Tensor> {
  using Canonical = const Tensor&;
  static Type schema_type() { return Type::tensor(); }
  static Tensor& from_canonical(const Tensor& t) { return const_cast<Tensor&>(t); }
  static Tensor& from_ivalue(const IValue& v) { return const_cast<Tensor&>(v.to_tensor()); }
  static IValue to_ivalue(const Tensor& t) { return t; }
  static DispatchKeySet keys(const Tensor& t) { return t.key_set(); }
};

/// Scalars passed by value (int, float, bool, ScalarType, Device).
template <typename T, TypeKind K>
struct ValueArgTraits {
  using Canonical = T;
  static Type schema_type() { return Type::of(K); }
  static T from_canonical(T v) { return v; }
  static IValue to_ivalue(T v) { return IValue(v); }
  static DispatchKeySet keys(T) { return {}; }
};
template <>
struct ArgTraits<int64_t> : ValueArgTraits<int64_t, TypeKind::Int> {
  static int64_t from_ivalue(const IValue& v) { return v.to_int(); }
};
template <>
struct ArgTraits<double> : ValueArgTraits<double, TypeKind::Float> {
  static double from_ivalue(const IValue& v) { return v.to_double(); }
};
template <>
struct ArgTraits<bool> : ValueArgTraits<bool, TypeKind::Bool> {
  static bool from_ivalue(const IValue& v) { return v.to_bool(); }
};
template <>
struct ArgTraits<DType> : ValueArgTraits<DType, TypeKind::ScalarType> {
  static DType from_ivalue(const IValue& v) { return v.to_dtype(); }
};
template <>
struct ArgTraits<Device> : ValueArgTraits<Device, TypeKind::Device> {
  static Device from_ivalue(const IValue& v) { return v.to_device(); }
  /// A device argument selects its backend, as PyTorch's BackendSelect does for factories.
  static DispatchKeySet keys(Device d) { return DispatchKeySet(backend_key(d.type())); }
};

template <>
struct ArgTraits<Scalar> {
  using Canonical = const Scalar&;
  static Type schema_type() { return Type::of(TypeKind::Scalar); }
  static const Scalar& from_canonical(const Scalar& s) { return s; }
  static Scalar from_ivalue(const IValue& v) { return v.to_scalar(); }
  static IValue to_ivalue(const Scalar& s) { return IValue(s); }
  static DispatchKeySet keys(const Scalar&) { return {}; }
};

struct StringArgTraits {
  using Canonical = std::string_view;
  static Type schema_type() { return Type::of(TypeKind::Str); }
  static std::string_view from_canonical(std::string_view s) { return s; }
  static std::string_view from_ivalue(const IValue& v) { return v.to_string(); }
  static IValue to_ivalue(std::string_view s) { return IValue(s); }
  static DispatchKeySet keys(std::string_view) { return {}; }
};
template <>
struct ArgTraits<std::string_view> : StringArgTraits {};
template <>
struct ArgTraits<std::string> : StringArgTraits {
  static std::string from_canonical(std::string_view s) { return std::string(s); }
  static const std::string& from_ivalue(const IValue& v) { return v.to_string(); }
};

struct IntListArgTraits {
  using Canonical = IntArrayRef;
  static Type schema_type() { return Type::list(Type::of(TypeKind::Int)); }
  static IntArrayRef from_canonical(IntArrayRef v) { return v; }
  static IntArrayRef from_ivalue(const IValue& v) { return v.to_int_list(); }
  static IValue to_ivalue(IntArrayRef v) { return IValue(v); }
  static DispatchKeySet keys(IntArrayRef) { return {}; }
};
template <>
struct ArgTraits<IntArrayRef> : IntListArgTraits {};
template <>
struct ArgTraits<std::vector<int64_t>> : IntListArgTraits {
  static std::vector<int64_t> from_canonical(IntArrayRef v) { return {v.begin(), v.end()}; }
  static std::vector<int64_t> from_ivalue(const IValue& v) { return v.to_int_list(); }
};

struct DoubleListArgTraits {
  using Canonical = ArrayRef<double>;
  static Type schema_type() { return Type::list(Type::of(TypeKind::Float)); }
  static ArrayRef<double> from_canonical(ArrayRef<double> v) { return v; }
  static ArrayRef<double> from_ivalue(const IValue& v) { return v.to_double_list(); }
  static IValue to_ivalue(ArrayRef<double> v) {
    return IValue(std::vector<double>(v.begin(), v.end()));
  }
  static DispatchKeySet keys(ArrayRef<double>) { return {}; }
};
template <>
struct ArgTraits<ArrayRef<double>> : DoubleListArgTraits {};
template <>
struct ArgTraits<std::vector<double>> : DoubleListArgTraits {
  static std::vector<double> from_canonical(ArrayRef<double> v) { return {v.begin(), v.end()}; }
  static std::vector<double> from_ivalue(const IValue& v) { return v.to_double_list(); }
};

template <>
struct ArgTraits<std::vector<bool>> {
  using Canonical = const std::vector<bool>&;
  static Type schema_type() { return Type::list(Type::of(TypeKind::Bool)); }
  static const std::vector<bool>& from_canonical(const std::vector<bool>& v) { return v; }
  static const std::vector<bool>& from_ivalue(const IValue& v) { return v.to_bool_list(); }
  static IValue to_ivalue(const std::vector<bool>& v) { return IValue(v); }
  static DispatchKeySet keys(const std::vector<bool>&) { return {}; }
};

struct TensorListArgTraits {
  using Canonical = TensorList;
  static Type schema_type() { return Type::list(Type::tensor()); }
  static TensorList from_canonical(TensorList v) { return v; }
  static TensorList from_ivalue(const IValue& v) { return v.to_tensor_list(); }
  static IValue to_ivalue(TensorList v) { return IValue(std::vector<Tensor>(v.begin(), v.end())); }
  static DispatchKeySet keys(TensorList v) {
    DispatchKeySet ks;
    for (const Tensor& t : v) ks = ks | t.key_set();
    return ks;
  }
};
template <>
struct ArgTraits<TensorList> : TensorListArgTraits {};
template <>
struct ArgTraits<std::vector<Tensor>> : TensorListArgTraits {
  static std::vector<Tensor> from_canonical(TensorList v) { return {v.begin(), v.end()}; }
  static std::vector<Tensor> from_ivalue(const IValue& v) { return v.to_tensor_list(); }
};

template <>
struct ArgTraits<std::vector<std::optional<Tensor>>> {
  using Canonical = const std::vector<std::optional<Tensor>>&;
  static Type schema_type() { return Type::list(Type::optional(Type::tensor())); }
  static Canonical from_canonical(Canonical v) { return v; }
  static Canonical from_ivalue(const IValue& v) { return v.to_optional_tensor_list(); }
  static IValue to_ivalue(Canonical v) { return IValue(v); }
  static DispatchKeySet keys(Canonical v) {
    DispatchKeySet ks;
    for (const auto& t : v) ks = ks | (t ? t->key_set() : DispatchKeySet());
    return ks;
  }
};

template <>
struct ArgTraits<std::optional<Tensor>> {
  using Canonical = const std::optional<Tensor>&;
  static Type schema_type() { return Type::optional(Type::tensor()); }
  static Canonical from_canonical(Canonical v) { return v; }
  static std::optional<Tensor> from_ivalue(const IValue& v) {
    if (v.is_none()) return std::nullopt;
    return v.to_tensor();
  }
  static IValue to_ivalue(Canonical v) { return IValue(v); }
  static DispatchKeySet keys(Canonical v) { return v ? v->key_set() : DispatchKeySet(); }
};

/// Optionals of by-value types: int?, float?, bool?, ScalarType?, Device?, Scalar?, int[]?, str?.
template <typename T>
struct OptionalValueArgTraits {
  using Canonical = std::optional<T>;
  static Type schema_type() { return Type::optional(ArgTraits<T>::schema_type()); }
  static std::optional<T> from_canonical(std::optional<T> v) { return v; }
  static std::optional<T> from_ivalue(const IValue& v) {
    if (v.is_none()) return std::nullopt;
    return T(ArgTraits<T>::from_ivalue(v));
  }
  static IValue to_ivalue(std::optional<T> v) { return v ? ArgTraits<T>::to_ivalue(*v) : IValue(); }
  static DispatchKeySet keys(const std::optional<T>&) { return {}; }
};
template <>
struct ArgTraits<std::optional<int64_t>> : OptionalValueArgTraits<int64_t> {};
template <>
struct ArgTraits<std::optional<double>> : OptionalValueArgTraits<double> {};
template <>
struct ArgTraits<std::optional<bool>> : OptionalValueArgTraits<bool> {};
template <>
struct ArgTraits<std::optional<DType>> : OptionalValueArgTraits<DType> {};
template <>
struct ArgTraits<std::optional<Device>> : OptionalValueArgTraits<Device> {
  /// A given device selects its backend (see ArgTraits<Device>).
  static DispatchKeySet keys(const std::optional<Device>& d) {
    return d ? DispatchKeySet(backend_key(d->type())) : DispatchKeySet();
  }
};
template <>
struct ArgTraits<std::optional<Scalar>> : OptionalValueArgTraits<Scalar> {};
template <>
struct ArgTraits<std::optional<IntArrayRef>> : OptionalValueArgTraits<IntArrayRef> {};
template <>
struct ArgTraits<std::optional<std::string_view>> : OptionalValueArgTraits<std::string_view> {};

template <>
struct ArgTraits<Generator*> {
  using Canonical = Generator*;
  static Type schema_type() { return Type::optional(Type::of(TypeKind::Generator)); }
  static Generator* from_canonical(Generator* g) { return g; }
  static Generator* from_ivalue(const IValue& v) {
    return v.is_none() ? nullptr : v.to_generator();
  }
  static IValue to_ivalue(Generator* g) { return g ? IValue(g) : IValue(); }
  static DispatchKeySet keys(Generator*) { return {}; }
};

/// Traits of a kernel parameter type as written (cv-ref stripped).
template <typename T>
using Arg = ArgTraits<std::remove_cvref_t<T>>;
/// The canonical parameter type for a written parameter type.
template <typename T>
using CanonicalArg = typename Arg<T>::Canonical;

// ---- returns ----
template <typename R, typename = void>
struct RetTraits {
  static_assert(kAlwaysFalse<R>, "this C++ type is not supported as a kernel return type");
};
template <>
struct RetTraits<void> {
  using Canonical = void;
  static std::vector<Type> schema_types() { return {}; }
};
template <>
struct RetTraits<Tensor> {
  using Canonical = Tensor;
  static std::vector<Type> schema_types() { return {Type::tensor()}; }
  static void push(Stack& s, Tensor t) { s.emplace_back(std::move(t)); }
  static Tensor pop(Stack& s) { return s.back().take_tensor(); }
};
template <typename T, TypeKind K>
struct ValueRetTraits {
  using Canonical = T;
  static std::vector<Type> schema_types() { return {Type::of(K)}; }
  static void push(Stack& s, T v) { s.emplace_back(v); }
};
template <>
struct RetTraits<int64_t> : ValueRetTraits<int64_t, TypeKind::Int> {
  static int64_t pop(Stack& s) { return s.back().to_int(); }
};
template <>
struct RetTraits<double> : ValueRetTraits<double, TypeKind::Float> {
  static double pop(Stack& s) { return s.back().to_double(); }
};
template <>
struct RetTraits<bool> : ValueRetTraits<bool, TypeKind::Bool> {
  static bool pop(Stack& s) { return s.back().to_bool(); }
};
template <>
struct RetTraits<Scalar> : ValueRetTraits<Scalar, TypeKind::Scalar> {
  static void push(Stack& s, const Scalar& v) { s.emplace_back(v); }
  static Scalar pop(Stack& s) { return s.back().to_scalar(); }
};
template <>
struct RetTraits<DType> : ValueRetTraits<DType, TypeKind::ScalarType> {
  static DType pop(Stack& s) { return s.back().to_dtype(); }
};
template <>
struct RetTraits<std::vector<Tensor>> {
  using Canonical = std::vector<Tensor>;
  static std::vector<Type> schema_types() { return {Type::list(Type::tensor())}; }
  static void push(Stack& s, std::vector<Tensor> v) { s.emplace_back(std::move(v)); }
  static std::vector<Tensor> pop(Stack& s) { return s.back().to_tensor_list(); }
};
template <typename... Ts>
struct RetTraits<std::tuple<Ts...>> {
  using Canonical = std::tuple<typename RetTraits<std::remove_cvref_t<Ts>>::Canonical...>;
  static std::vector<Type> schema_types() {
    std::vector<Type> out;
    (out.push_back(RetTraits<std::remove_cvref_t<Ts>>::schema_types().at(0)), ...);
    return out;
  }
  template <typename Tuple>
  static void push(Stack& s, Tuple&& t) {
    std::apply([&](auto&&... v) { (RetTraits<std::remove_cvref_t<Ts>>::push(s, v), ...); },
               std::forward<Tuple>(t));
  }
  static Canonical pop(Stack& s) {
    // Returns were pushed in order; the last sizeof...(Ts) stack slots hold them.
    const size_t base = s.size() - sizeof...(Ts);
    return pop_impl(s, base, std::index_sequence_for<Ts...>{});
  }

 private:
  template <size_t... I>
  static Canonical pop_impl(Stack& s, size_t base, std::index_sequence<I...>) {
    return Canonical{pop_one<std::remove_cvref_t<Ts>>(s, base + I)...};
  }
  template <typename T>
  static typename RetTraits<T>::Canonical pop_one(Stack& s, size_t i) {
    Stack one{s[i]};
    return RetTraits<T>::pop(one);
  }
};

/// Traits of a written return type (references stripped: Tensor& returns a handle).
template <typename R>
using Ret = RetTraits<std::remove_cvref_t<R>>;

/// @cond INTERNAL
/// Deduces Ret(Args...) from a function pointer or a functor's operator().
template <typename F>
struct FunctionTraits : FunctionTraits<decltype(&F::operator())> {};
template <typename R, typename... A>
struct FunctionTraits<R (*)(A...)> {
  using Return = R;
  using Args = std::tuple<A...>;
};
template <typename R, typename... A>
struct FunctionTraits<R(A...)> : FunctionTraits<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct FunctionTraits<R (C::*)(A...) const> : FunctionTraits<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct FunctionTraits<R (C::*)(A...)> : FunctionTraits<R (*)(A...)> {};
/// @endcond

/// True if T is already its own canonical parameter type.
template <typename T>
inline constexpr bool kIsCanonicalArg = std::is_same_v<T, CanonicalArg<T>>;
/// True if R is already its own canonical return type.
template <typename R>
inline constexpr bool kIsCanonicalRet = std::is_same_v<R, typename Ret<R>::Canonical>;

/// True if the written parameter type T carries tensors (Tensor, Tensor?, Tensor[], Tensor?[]).
template <typename T>
inline constexpr bool kIsTensorArg =
    std::is_same_v<CanonicalArg<T>, const Tensor&> || std::is_same_v<CanonicalArg<T>, TensorList> ||
    std::is_same_v<CanonicalArg<T>, const std::optional<Tensor>&> ||
    std::is_same_v<CanonicalArg<T>, const std::vector<std::optional<Tensor>>&>;

/// OR of the key sets of every tensor (and device) among args. Note [Factory dispatch]: a
/// call with no tensor and no device argument (zeros(size), arange(n)) goes to the CPU, as
/// in PyTorch; a call that has tensor parameters but only undefined tensors gets the empty
/// set, and so the missing-kernel path, which names the undefined argument.
template <typename... Args>
inline DispatchKeySet key_set_of(const Args&... args) {
  const DispatchKeySet ks = (DispatchKeySet() | ... | Arg<Args>::keys(args));
  if constexpr (!(kIsTensorArg<Args> || ...)) {
    if (ks.empty()) return DispatchKeySet(DispatchKey::CPU);
  }
  return ks;
}

}  // namespace detail

/// The schema types a C++ signature stands for (used to check a kernel against a schema).
struct InferredSignature {
  std::vector<Type> arguments;  ///< one per parameter
  std::vector<Type> returns;    ///< one per returned value
  /// "(Tensor, Scalar) -> Tensor".
  std::string str() const;
};

namespace detail {
template <typename R, typename... A>
InferredSignature infer_signature(std::tuple<A...>*) {
  return InferredSignature{{Arg<A>::schema_type()...}, Ret<R>::schema_types()};
}
}  // namespace detail

/// The InferredSignature of a function type Ret(Args...).
template <typename Sig>
InferredSignature infer_signature() {
  using FT = detail::FunctionTraits<Sig>;
  return detail::infer_signature<typename FT::Return>(static_cast<typename FT::Args*>(nullptr));
}

/// Why a C++ signature does not fit a schema, or "" if it does. Lists are matched
/// without their fixed size, SymInt as int, Layout/MemoryFormat as int.
std::string signature_mismatch(const FunctionSchema& schema, const InferredSignature& sig);

}  // namespace loom
