#include "loom/dispatcher/ivalue.h"

#include "absl/strings/str_join.h"
#include "loom/core/str_cat.h"

namespace loom {

IValue::IValue(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool:
      v_ = s.to<bool>();
      break;
    case Scalar::Kind::Int:
      v_ = s.to<int64_t>();
      break;
    case Scalar::Kind::Float:
      v_ = s.to<double>();
      break;
  }
}

std::string_view IValue::type_name() const {
  static constexpr std::string_view kNames[] = {
      "None",    "Tensor", "int",      "float",     "bool",       "str",    "int[]",
      "float[]", "bool[]", "Tensor[]", "Tensor?[]", "ScalarType", "Device", "Generator"};
  return kNames[v_.index()];
}

int64_t IValue::to_int() const {
  if (tag() == Tag::Bool) return std::get<bool>(v_);
  return get<int64_t>("int");
}

double IValue::to_double() const {
  if (tag() == Tag::Int) return static_cast<double>(std::get<int64_t>(v_));
  return get<double>("float");
}

Scalar IValue::to_scalar() const {
  switch (tag()) {
    case Tag::Int:
      return Scalar(std::get<int64_t>(v_));
    case Tag::Double:
      return Scalar(std::get<double>(v_));
    case Tag::Bool:
      return Scalar(std::get<bool>(v_));
    default:
      throw_type("Scalar");
  }
}

void IValue::throw_type(std::string_view expected) const {
  LOOM_THROW(TypeError, "expected a value of type ", expected, " but got ", type_name(), " (",
             repr(), ")");
}

std::string IValue::repr() const {
  switch (tag()) {
    case Tag::None:
      return "None";
    case Tag::Tensor:
      return std::get<Tensor>(v_).describe();
    case Tag::Int:
      return loom::str_cat(std::get<int64_t>(v_));
    case Tag::Double:
      return loom::str_cat(std::get<double>(v_));
    case Tag::Bool:
      return std::get<bool>(v_) ? "True" : "False";
    case Tag::String:
      return loom::str_cat("\"", std::get<std::string>(v_), "\"");
    case Tag::IntList:
      return loom::str_cat("[", absl::StrJoin(std::get<std::vector<int64_t>>(v_), ", "), "]");
    case Tag::DoubleList:
      return loom::str_cat("[", absl::StrJoin(std::get<std::vector<double>>(v_), ", "), "]");
    case Tag::BoolList: {
      std::vector<std::string> parts;
      for (bool b : std::get<std::vector<bool>>(v_)) parts.push_back(b ? "True" : "False");
      return loom::str_cat("[", absl::StrJoin(parts, ", "), "]");
    }
    case Tag::TensorList: {
      std::vector<std::string> parts;
      for (const auto& t : std::get<std::vector<Tensor>>(v_)) parts.push_back(t.describe());
      return loom::str_cat("[", absl::StrJoin(parts, ", "), "]");
    }
    case Tag::OptionalTensorList: {
      std::vector<std::string> parts;
      for (const auto& t : std::get<std::vector<std::optional<Tensor>>>(v_)) {
        parts.push_back(t ? t->describe() : "None");
      }
      return loom::str_cat("[", absl::StrJoin(parts, ", "), "]");
    }
    case Tag::DType:
      return std::string(dtype_name(std::get<DType>(v_)));
    case Tag::Device:
      return std::get<Device>(v_).str();
    case Tag::Generator:
      return std::get<Generator*>(v_) ? "<Generator>" : "None";
  }
  return "?";
}

}  // namespace loom
