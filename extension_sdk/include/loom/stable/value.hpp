#pragma once
/// @file
/// Value (an owned boxed argument or return) and the boxing of C++ arguments into LoomValue.
/// Part of loom/stable.hpp (include that).

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/stable/tensor.hpp"

namespace loom::stable {

/// The kind of a Value (the LOOM_VALUE_* kinds).
enum class ValueKind : int32_t {
  None = LOOM_VALUE_NONE,               ///< None
  Tensor = LOOM_VALUE_TENSOR,           ///< a tensor
  Int = LOOM_VALUE_INT,                 ///< int64
  Float = LOOM_VALUE_FLOAT,             ///< double
  Bool = LOOM_VALUE_BOOL,               ///< bool
  String = LOOM_VALUE_STRING,           ///< a string
  IntList = LOOM_VALUE_INT_LIST,        ///< int64[]
  TensorList = LOOM_VALUE_TENSOR_LIST,  ///< Tensor[]
  FloatList = LOOM_VALUE_FLOAT_LIST,    ///< double[]
  DType = LOOM_VALUE_DTYPE,             ///< a dtype
};

/// The name of a kind ("Tensor", "int", ...), for messages.
inline const char* kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::None:
      return "None";
    case ValueKind::Tensor:
      return "Tensor";
    case ValueKind::Int:
      return "int";
    case ValueKind::Float:
      return "float";
    case ValueKind::Bool:
      return "bool";
    case ValueKind::String:
      return "str";
    case ValueKind::IntList:
      return "int[]";
    case ValueKind::TensorList:
      return "Tensor[]";
    case ValueKind::FloatList:
      return "float[]";
    case ValueKind::DType:
      return "ScalarType";
  }
  return "unknown";
}

/// An owned op argument or return: None, a Tensor, an int, a float, a bool, a string, an int
/// list, a float list, a tensor list or a dtype. What Op::call returns and what kernels
/// registered from C++ receive (copies of the borrowed C values).
class Value {
 public:
  /// None.
  Value() noexcept = default;
  /// None.
  Value(std::nullopt_t) noexcept {}  // NOLINT(google-explicit-constructor)
  /// A tensor (an undefined one boxes as a NULL tensor).
  Value(Tensor t) : kind_(ValueKind::Tensor), tensor_(std::move(t)) {}  // NOLINT
  /// A bool (exactly: a pointer does not convert).
  template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
  Value(T b) noexcept : kind_(ValueKind::Bool) {  // NOLINT(google-explicit-constructor)
    b_ = b;
  }
  /// An integer.
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                                         int> = 0>
  Value(T i) noexcept : kind_(ValueKind::Int) {  // NOLINT(google-explicit-constructor)
    i_ = static_cast<int64_t>(i);
  }
  /// A floating-point value.
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Value(T f) noexcept : kind_(ValueKind::Float) {  // NOLINT(google-explicit-constructor)
    f_ = static_cast<double>(f);
  }
  /// A Scalar (INT, FLOAT or BOOL).
  Value(const Scalar& s) noexcept  // NOLINT(google-explicit-constructor)
      : kind_(static_cast<ValueKind>(s.boxed().kind)) {
    const LoomValue& v = s.boxed();
    if (v.kind == LOOM_VALUE_INT) i_ = v.u.i;
    if (v.kind == LOOM_VALUE_FLOAT) f_ = v.u.f;
    if (v.kind == LOOM_VALUE_BOOL) b_ = v.u.b;
  }
  /// A string.
  Value(std::string s) : kind_(ValueKind::String), s_(std::move(s)) {}  // NOLINT
  /// A string.
  Value(const char* s) : kind_(ValueKind::String), s_(s) {}  // NOLINT
  /// An int list.
  Value(std::vector<int64_t> v) : kind_(ValueKind::IntList), ints_(std::move(v)) {}  // NOLINT
  /// A float list.
  Value(std::vector<double> v) : kind_(ValueKind::FloatList), floats_(std::move(v)) {}  // NOLINT
  /// A tensor list.
  Value(std::vector<Tensor> v)  // NOLINT(google-explicit-constructor)
      : kind_(ValueKind::TensorList), tensors_(std::move(v)) {}
  /// A dtype.
  Value(DType d) noexcept : kind_(ValueKind::DType) { i_ = d.token(); }  // NOLINT

  /// A copy of a C value (tensors retained, strings and lists copied); v stays the caller's.
  static Value from_borrowed(const LoomValue& v) {
    switch (v.kind) {
      case LOOM_VALUE_NONE:
        return Value();
      case LOOM_VALUE_TENSOR:
        return Value(Tensor::borrow(v.u.tensor));
      case LOOM_VALUE_INT:
        return Value(v.u.i);
      case LOOM_VALUE_FLOAT:
        return Value(v.u.f);
      case LOOM_VALUE_BOOL:
        return Value(v.u.b);
      case LOOM_VALUE_STRING:
        return Value(v.u.s != nullptr ? v.u.s : "");
      case LOOM_VALUE_INT_LIST:
        return Value(std::vector<int64_t>(v.u.ints.data, v.u.ints.data + v.u.ints.size));
      case LOOM_VALUE_FLOAT_LIST:
        return Value(std::vector<double>(v.u.floats.data, v.u.floats.data + v.u.floats.size));
      case LOOM_VALUE_TENSOR_LIST: {
        std::vector<Tensor> ts;
        ts.reserve(v.u.tensors.size);
        for (size_t i = 0; i < v.u.tensors.size; ++i) {
          ts.push_back(Tensor::borrow(v.u.tensors.data[i]));
        }
        return Value(std::move(ts));
      }
      case LOOM_VALUE_DTYPE:
        return Value(DType(static_cast<int32_t>(v.u.i)));
      default:
        throw TypeError("Value: unknown LoomValue kind " + std::to_string(v.kind) +
                        " (a newer library than this header?)");
    }
  }
  /// Takes over a value the library handed out: a tensor is adopted (v is left None); other
  /// kinds are copied and stay v's (release v with ValuesRelease as usual).
  static Value adopt(LoomValue& v) {
    if (v.kind == LOOM_VALUE_TENSOR) {
      Value r(Tensor::adopt(v.u.tensor));
      v.kind = LOOM_VALUE_NONE;
      v.u.tensor = nullptr;
      return r;
    }
    return from_borrowed(v);
  }

  /// The kind.
  ValueKind kind() const noexcept { return kind_; }
  /// True for None.
  bool is_none() const noexcept { return kind_ == ValueKind::None; }
  /// True for a tensor.
  bool is_tensor() const noexcept { return kind_ == ValueKind::Tensor; }
  /// True for an int.
  bool is_int() const noexcept { return kind_ == ValueKind::Int; }
  /// True for a float.
  bool is_double() const noexcept { return kind_ == ValueKind::Float; }
  /// True for a bool.
  bool is_bool() const noexcept { return kind_ == ValueKind::Bool; }
  /// True for a string.
  bool is_string() const noexcept { return kind_ == ValueKind::String; }

  /// The tensor; throws TypeError for another kind.
  const Tensor& to_tensor() const {
    expect(ValueKind::Tensor);
    return tensor_;
  }
  /// The int (a bool converts); throws TypeError for another kind.
  int64_t to_int() const {
    if (kind_ == ValueKind::Bool) return b_ ? 1 : 0;
    expect(ValueKind::Int);
    return i_;
  }
  /// The number as a double (an int or bool converts); throws TypeError for another kind.
  double to_double() const {
    if (kind_ == ValueKind::Int) return static_cast<double>(i_);
    if (kind_ == ValueKind::Bool) return b_ ? 1.0 : 0.0;
    expect(ValueKind::Float);
    return f_;
  }
  /// The bool; throws TypeError for another kind.
  bool to_bool() const {
    expect(ValueKind::Bool);
    return b_;
  }
  /// The string; throws TypeError for another kind.
  const std::string& to_string() const {
    expect(ValueKind::String);
    return s_;
  }
  /// The int list; throws TypeError for another kind.
  const std::vector<int64_t>& to_int_list() const {
    expect(ValueKind::IntList);
    return ints_;
  }
  /// The float list; throws TypeError for another kind.
  const std::vector<double>& to_double_list() const {
    expect(ValueKind::FloatList);
    return floats_;
  }
  /// The tensor list; throws TypeError for another kind.
  const std::vector<Tensor>& to_tensor_list() const {
    expect(ValueKind::TensorList);
    return tensors_;
  }
  /// The dtype; throws TypeError for another kind.
  DType to_dtype() const {
    expect(ValueKind::DType);
    return DType(static_cast<int32_t>(i_));
  }
  /// The number as a Scalar (INT, FLOAT or BOOL); throws TypeError for another kind.
  Scalar to_scalar() const {
    if (kind_ == ValueKind::Int) return Scalar(i_);
    if (kind_ == ValueKind::Bool) return Scalar(b_);
    expect(ValueKind::Float);
    return Scalar(f_);
  }

  /// Writes a borrowed C view of this value into out (valid while this Value lives).
  void box(LoomValue& out) const noexcept {
    out.kind = static_cast<LoomValueKind>(kind_);
    switch (kind_) {
      case ValueKind::None:
        break;
      case ValueKind::Tensor:
        out.u.tensor = tensor_.get();
        break;
      case ValueKind::Int:
      case ValueKind::DType:
        out.u.i = i_;
        break;
      case ValueKind::Float:
        out.u.f = f_;
        break;
      case ValueKind::Bool:
        out.u.b = b_;
        break;
      case ValueKind::String:
        out.u.s = s_.c_str();
        break;
      case ValueKind::IntList:
        out.u.ints.data = ints_.data();
        out.u.ints.size = ints_.size();
        break;
      case ValueKind::FloatList:
        out.u.floats.data = floats_.data();
        out.u.floats.size = floats_.size();
        break;
      case ValueKind::TensorList:
        out.u.tensors.data = reinterpret_cast<LoomTensor* const*>(tensors_.data());
        out.u.tensors.size = tensors_.size();
        break;
    }
  }

 private:
  /// Throws TypeError unless the kind is k.
  void expect(ValueKind k) const {
    if (kind_ != k) {
      throw TypeError(std::string("Value: expected ") + kind_name(k) + ", got " + kind_name(kind_));
    }
  }

  ValueKind kind_ = ValueKind::None;
  Tensor tensor_;
  int64_t i_ = 0;
  double f_ = 0;
  bool b_ = false;
  std::string s_;
  std::vector<int64_t> ints_;
  std::vector<double> floats_;
  std::vector<Tensor> tensors_;
};

/// @cond INTERNAL
namespace detail {
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};
template <typename T>
inline constexpr bool dependent_false = false;

/// A zeroed LoomValue with struct_size set.
inline void clear(LoomValue& v) noexcept {
  std::memset(&v, 0, sizeof(v));
  v.struct_size = sizeof(LoomValue);
}

/// Boxes one C++ argument into v (a borrowed view: x must outlive the call).
template <typename A>
void box(LoomValue& v, const A& x) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, Tensor>) {
    v.kind = LOOM_VALUE_TENSOR;
    v.u.tensor = x.get();
  } else if constexpr (std::is_same_v<D, bool>) {
    v.kind = LOOM_VALUE_BOOL;
    v.u.b = x;
  } else if constexpr (std::is_integral_v<D>) {
    v.kind = LOOM_VALUE_INT;
    v.u.i = static_cast<int64_t>(x);
  } else if constexpr (std::is_floating_point_v<D>) {
    v.kind = LOOM_VALUE_FLOAT;
    v.u.f = static_cast<double>(x);
  } else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>) {
    v.kind = LOOM_VALUE_STRING;
    v.u.s = x;
  } else if constexpr (std::is_same_v<D, std::string>) {
    v.kind = LOOM_VALUE_STRING;
    v.u.s = x.c_str();
  } else if constexpr (std::is_same_v<D, std::vector<int64_t>>) {
    v.kind = LOOM_VALUE_INT_LIST;
    v.u.ints.data = x.data();
    v.u.ints.size = x.size();
  } else if constexpr (std::is_same_v<D, std::vector<double>>) {
    v.kind = LOOM_VALUE_FLOAT_LIST;
    v.u.floats.data = x.data();
    v.u.floats.size = x.size();
  } else if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
    v.kind = LOOM_VALUE_TENSOR_LIST;
    v.u.tensors.data = reinterpret_cast<LoomTensor* const*>(x.data());
    v.u.tensors.size = x.size();
  } else if constexpr (std::is_same_v<D, std::nullopt_t>) {
    v.kind = LOOM_VALUE_NONE;
  } else if constexpr (is_optional<D>::value) {
    if (x.has_value()) {
      box(v, *x);
    } else {
      v.kind = LOOM_VALUE_NONE;
    }
  } else if constexpr (std::is_same_v<D, DType>) {
    v.kind = LOOM_VALUE_DTYPE;
    v.u.i = x.token();
  } else if constexpr (std::is_same_v<D, Scalar>) {
    v.kind = x.boxed().kind;
    v.u = x.boxed().u;
  } else if constexpr (std::is_same_v<D, Value>) {
    x.box(v);
  } else if constexpr (std::is_same_v<D, LoomValue>) {
    v = x;
    v.struct_size = sizeof(LoomValue);
  } else {
    static_assert(dependent_false<D>,
                  "Op::call: an argument must be a Tensor, bool, integer, floating-point, "
                  "const char*/std::string, std::vector<int64_t>/<double>/<Tensor>, "
                  "std::nullopt/std::optional, DType, Scalar or Value");
  }
}
}  // namespace detail
/// @endcond

}  // namespace loom::stable
