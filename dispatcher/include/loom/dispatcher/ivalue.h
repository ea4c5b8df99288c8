#pragma once
/// @file
/// IValue: one boxed argument or return value, and Stack, the boxed calling
/// convention (arguments pushed in schema order; returns replace them).

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/generator.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor.h"

namespace loom {

/// A boxed value of any type the schema language has. Scalars are stored as
/// Int / Double / Bool (their category is what matters); Layout and
/// MemoryFormat as Int; Generator? as a non-owning pointer.
class IValue {
 public:
  /// Which alternative is held.
  enum class Tag : uint8_t {
    None,
    Tensor,
    Int,
    Double,
    Bool,
    String,
    IntList,
    DoubleList,
    BoolList,
    TensorList,
    OptionalTensorList,
    DType,
    Device,
    Generator,
  };
  /// None.
  IValue() = default;
  /// Explicit None.
  IValue(std::nullopt_t) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(Tensor t) : v_(std::move(t)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(int64_t i) : v_(i) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(int i) : v_(int64_t{i}) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(double d) : v_(d) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(bool b) : v_(b) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(std::string s) : v_(std::move(s)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(const char* s) : v_(std::string(s)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(std::string_view s) : v_(std::string(s)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(IntArrayRef v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(std::vector<double> v) : v_(std::move(v)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(std::vector<bool> v) : v_(std::move(v)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(std::vector<std::optional<Tensor>> v) : v_(std::move(v)) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(DType d) : v_(d) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(Device d) : v_(d) {}  // NOLINT
  /// Holds the value (implicit, as c10::IValue).
  IValue(Generator* g) : v_(g) {}  // NOLINT
  /// A Scalar becomes Int, Double or Bool.
  IValue(const Scalar& s);  // NOLINT
  /// An optional becomes None or its value.
  template <typename T>
  IValue(const std::optional<T>& o) {  // NOLINT
    if (o) *this = IValue(*o);
  }

  /// The held alternative.
  Tag tag() const { return static_cast<Tag>(v_.index()); }
  /// Name of the held alternative ("Tensor", "int", ...), for messages.
  std::string_view type_name() const;
  /// True for None.
  bool is_none() const { return tag() == Tag::None; }
  /// True for a (possibly undefined) Tensor.
  bool is_tensor() const { return tag() == Tag::Tensor; }
  /// True for Int, Double or Bool.
  bool is_scalar() const { return tag() == Tag::Int || tag() == Tag::Double || tag() == Tag::Bool; }

  /// The Tensor; throws TypeError naming the held type otherwise.
  const Tensor& to_tensor() const { return get<Tensor>("Tensor"); }
  /// Moves the Tensor out (this IValue keeps an undefined one): a return popped off a stack
  /// without touching its reference count.
  Tensor take_tensor() { return std::move(const_cast<Tensor&>(get<Tensor>("Tensor"))); }
  /// The integer (a Bool converts).
  int64_t to_int() const;
  /// The float (an Int converts).
  double to_double() const;
  /// The bool.
  bool to_bool() const { return get<bool>("bool"); }
  /// Int, Double or Bool as a Scalar.
  Scalar to_scalar() const;
  /// The string.
  const std::string& to_string() const { return get<std::string>("str"); }
  /// The int list (a single Int is not accepted here: the schema decides that).
  const std::vector<int64_t>& to_int_list() const { return get<std::vector<int64_t>>("int[]"); }
  /// The float list.
  const std::vector<double>& to_double_list() const { return get<std::vector<double>>("float[]"); }
  /// The bool list.
  const std::vector<bool>& to_bool_list() const { return get<std::vector<bool>>("bool[]"); }
  /// The tensor list.
  const std::vector<Tensor>& to_tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  /// The optional-tensor list.
  const std::vector<std::optional<Tensor>>& to_optional_tensor_list() const {
    return get<std::vector<std::optional<Tensor>>>("Tensor?[]");
  }
  /// The dtype.
  DType to_dtype() const { return get<DType>("ScalarType"); }
  /// The device.
  Device to_device() const { return get<Device>("Device"); }
  /// The generator (may be null).
  Generator* to_generator() const { return get<Generator*>("Generator"); }

  /// Human-readable form for messages: tensors as Tensor::describe(), lists in brackets.
  std::string repr() const;

 private:
  template <typename T>
  const T& get(std::string_view expected) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    throw_type(expected);
  }
  [[noreturn]] void throw_type(std::string_view expected) const;
  std::variant<std::monostate, Tensor, int64_t, double, bool, std::string, std::vector<int64_t>,
               std::vector<double>, std::vector<bool>, std::vector<Tensor>,
               std::vector<std::optional<Tensor>>, DType, Device, Generator*>
      v_;
};

/// The boxed calling convention: arguments in schema order; a kernel pops them and
/// pushes its returns.
using Stack = std::vector<IValue>;

}  // namespace loom
