#include "loom/core/scalar.h"

#include "loom/core/str_cat.h"

namespace loom {

DType Scalar::dtype() const {
  switch (kind_) {
    case Kind::Bool:
      return DType::Bool;
    case Kind::Int:
      return DType::Int64;
    case Kind::Float:
      return default_float_dtype();
  }
  return DType::Int64;
}

std::string Scalar::str() const {
  switch (kind_) {
    case Kind::Bool:
      return i_ ? "True" : "False";
    case Kind::Int:
      return loom::str_cat(i_);
    case Kind::Float:
      return loom::str_cat(d_);
  }
  return "";
}

bool operator==(const Scalar& a, const Scalar& b) {
  if (a.kind_ != b.kind_) return false;
  return a.kind_ == Scalar::Kind::Float ? a.d_ == b.d_ : a.i_ == b.i_;
}

}  // namespace loom
