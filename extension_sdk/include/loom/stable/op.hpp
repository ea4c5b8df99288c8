#pragma once
/// @file
/// Op: an operator found by name, called with a variadic of C++ arguments boxed on the stack;
/// list_ops(): every defined op with its schema.
/// Part of loom/stable.hpp (include that).

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "loom/stable/value.hpp"

namespace loom::stable {

/// A registered operator, found once by name and called with boxed arguments in schema order
/// (trailing defaults may be omitted). Cheap to copy (a pointer valid for the process).
class Op {
 public:
  /// The most returns Op::call collects.
  static constexpr size_t kMaxReturns = 8;

  /// No op.
  Op() noexcept = default;
  /// Wraps a handle from OpFind.
  explicit Op(const LoomOp* op) noexcept : op_(op) {}
  /// The op named name ("aten::mm", "add.Tensor", "myops::scale"); throws
  /// NotImplementedError naming close matches for an unknown name.
  static Op find(const char* name) {
    const LoomOp* op = nullptr;
    check(api()->OpFind(name, &op));
    return Op(op);
  }
  /// find for a std::string.
  static Op find(const std::string& name) { return find(name.c_str()); }
  /// The handle.
  const LoomOp* get() const noexcept { return op_; }
  /// True if an op is held.
  explicit operator bool() const noexcept { return op_ != nullptr; }
  /// The schema text.
  std::string schema() const {
    const char* s = api()->OpSchema(op_);
    return s != nullptr ? s : "";
  }
  /// The full name ("aten::add.Tensor").
  std::string name() const {
    const char* s = api()->OpName(op_);
    return s != nullptr ? s : "";
  }
  /// The names an enum argument takes in place of its integer code (Note [Enum arguments] in
  /// loom/capi.h: {"none", "mean", "sum"} for reduction), in code order; empty for an
  /// argument that is no enum. Throws ValueError for an argument the schema lacks.
  std::vector<std::string> enum_names(const std::string& argument) const {
    const char* const* names = nullptr;
    check(api()->OpArgumentEnumNames(op_, argument.c_str(), &names));
    std::vector<std::string> out;
    for (; names != nullptr && *names != nullptr; ++names) out.emplace_back(*names);
    return out;
  }

  /// Calls the op with already boxed arguments; returns every return.
  std::vector<Value> call_boxed(const LoomValue* args, size_t num_args) const {
    std::array<LoomValue, kMaxReturns> rets;
    for (LoomValue& r : rets) detail::clear(r);
    size_t n = 0;
    check(api()->OpCall(op_, args, num_args, rets.data(), rets.size(), &n));
    std::vector<Value> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(Value::adopt(rets[i]));
    api()->ValuesRelease(rets.data(), n);
    return out;
  }
  /// Calls the op with already boxed arguments; returns its first return, which must be a
  /// tensor (TypeError otherwise).
  Tensor call_boxed_tensor(const LoomValue* args, size_t num_args) const {
    std::array<LoomValue, 2> rets;
    detail::clear(rets[0]);
    detail::clear(rets[1]);
    size_t n = 0;
    check(api()->OpCall(op_, args, num_args, rets.data(), rets.size(), &n));
    if (n >= 1 && rets[0].kind == LOOM_VALUE_TENSOR) {
      Tensor t = Tensor::adopt(rets[0].u.tensor);
      rets[0].kind = LOOM_VALUE_NONE;
      if (n > 1) api()->ValuesRelease(rets.data() + 1, n - 1);
      return t;
    }
    api()->ValuesRelease(rets.data(), n);
    throw_not_a_tensor(n == 0 ? ValueKind::None : static_cast<ValueKind>(rets[0].kind));
  }

  /// Calls the op: each argument is boxed (Tensor, bool, integers, floats, strings,
  /// `std::vector` of int64_t, double or Tensor, std::nullopt, std::optional, DType, Scalar,
  /// Value) into a stack array; returns every return.
  template <typename... A>
  std::vector<Value> call(const A&... args) const {
    std::array<LoomValue, sizeof...(A) == 0 ? 1 : sizeof...(A)> boxed;
    box_all(boxed, args...);
    return call_boxed(boxed.data(), sizeof...(A));
  }
  /// Calls the op like call and returns its first return as a Tensor.
  template <typename... A>
  Tensor call_tensor(const A&... args) const {
    std::array<LoomValue, sizeof...(A) == 0 ? 1 : sizeof...(A)> boxed;
    box_all(boxed, args...);
    return call_boxed_tensor(boxed.data(), sizeof...(A));
  }

 private:
  /// Boxes args into boxed.
  template <size_t N, typename... A>
  static void box_all(std::array<LoomValue, N>& boxed, const A&... args) {
    for (LoomValue& v : boxed) detail::clear(v);
    size_t i = 0;
    (detail::box(boxed[i++], args), ...);
    (void)i;
  }
  /// The TypeError of call_tensor on an op whose first return is not a tensor.
  [[noreturn]] LOOM_STABLE_COLD void throw_not_a_tensor(ValueKind got) const {
    throw TypeError("Op::call_tensor: " + schema() + " returned " + kind_name(got) +
                    ", not a Tensor; use Op::call");
  }

  const LoomOp* op_ = nullptr;
};

/// A defined op as list_ops() reports it.
struct OpInfo {
  std::string name;    ///< full name, what Op::find takes ("aten::add.Tensor")
  std::string schema;  ///< schema text
};

/// Every op defined now (by the loaded plugins and libraries), sorted by name.
inline std::vector<OpInfo> list_ops() {
  LoomOpList* list = nullptr;
  check(api()->OpListCreate(&list));
  // Owns the list until the copies are made, exceptions included.
  struct Release {
    LoomOpList* list;
    ~Release() { api()->OpListRelease(list); }
  } release{list};
  std::vector<OpInfo> out(api()->OpListSize(list));
  for (size_t i = 0; i < out.size(); ++i) {
    const char* name = nullptr;
    const char* schema = nullptr;
    check(api()->OpListGet(list, i, &name, &schema));
    out[i] = {name, schema};
  }
  return out;
}

/// @cond INTERNAL
/// The op of a method, found on first use (a static local per call site).
#define LOOM_STABLE_OP(NAME)                                             \
  ([]() -> const ::loom::stable::Op& {                                   \
    static const ::loom::stable::Op op = ::loom::stable::Op::find(NAME); \
    return op;                                                           \
  }())
/// @endcond

}  // namespace loom::stable
