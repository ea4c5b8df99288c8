#pragma once
/// @file
/// Element types and PyTorch's type-promotion rules.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace loom {

/// The element type of a tensor. The order is part of the promotion lattice
/// (see promote_types) but carries no other meaning.
enum class DType : int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

/// Number of DType values.
inline constexpr int kNumDTypes = 10;

/// Size of one element in bytes.
size_t element_size(DType t);
/// PyTorch's short name: "float32", "int64", "bool", "bfloat16" ...
std::string_view dtype_name(DType t);
/// Parses "float32"/"float"/"torch.float32", "int64"/"long" ... ; nullopt if unknown.
std::optional<DType> parse_dtype(std::string_view name);
/// True for float16, bfloat16, float32, float64.
bool is_floating_point(DType t);
/// True for the integer types and bool.
inline bool is_integral(DType t, bool include_bool = true) {
  return include_bool ? !is_floating_point(t) : (!is_floating_point(t) && t != DType::Bool);
}
/// The result dtype of a binary op on tensors of dtypes a and b, as torch.promote_types:
/// bool < integers < floats; uint8 with int8 gives int16; float16 with bfloat16 gives float32.
DType promote_types(DType a, DType b);
/// The dtype a Python-style scalar category contributes when it participates in
/// promotion with a tensor (PyTorch's "wrapped number" rule): a float scalar with an
/// integral tensor gives the default float dtype; otherwise the tensor's dtype wins.
DType default_float_dtype();
/// Whether a value of dtype from can be cast to dtype to without changing category
/// in the direction PyTorch refuses for in-place ops (e.g. float result into an int tensor).
bool can_cast(DType from, DType to);

}  // namespace loom
