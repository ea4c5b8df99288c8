#include "loom/core/dtype.h"

#include <array>

#include "loom/core/error.h"

namespace loom {
namespace {
struct DTypeInfo {
  std::string_view name;
  size_t size;
  bool floating;
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", 1, false},
    {"uint8", 1, false},
    {"int8", 1, false},
    {"int16", 2, false},
    {"int32", 4, false},
    {"int64", 8, false},
    {"float16", 2, true},
    {"bfloat16", 2, true},
    {"float32", 4, true},
    {"float64", 8, true},
}};
const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }
// Rank among signed integers / floats for "the wider one wins".
int int_rank(DType t) {
  switch (t) {
    case DType::Int8:
      return 1;
    case DType::Int16:
      return 2;
    case DType::Int32:
      return 3;
    case DType::Int64:
      return 4;
    default:
      return 0;
  }
}
}  // namespace

size_t element_size(DType t) { return info(t).size; }
std::string_view dtype_name(DType t) { return info(t).name; }
bool is_floating_point(DType t) { return info(t).floating; }
DType default_float_dtype() { return DType::Float32; }

std::optional<DType> parse_dtype(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kInfo[i].name == name) return static_cast<DType>(i);
  }
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"float", DType::Float32}, {"double", DType::Float64}, {"half", DType::Float16},
      {"long", DType::Int64},    {"int", DType::Int32},      {"short", DType::Int16},
      {"byte", DType::UInt8},    {"char", DType::Int8},
  };
  for (const auto& a : kAliases) {
    if (a.name == name) return a.dtype;
  }
  return std::nullopt;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_floating_point(a), fb = is_floating_point(b);
  if (fa != fb) return fa ? a : b;
  if (fa) {
    // float16 and bfloat16 have no common 16-bit type.
    if ((a == DType::Float16 && b == DType::BFloat16) ||
        (a == DType::BFloat16 && b == DType::Float16)) {
      return DType::Float32;
    }
    return static_cast<int>(a) > static_cast<int>(b) ? a : b;
  }
  // Both integral, at least one signed unless both uint8 (handled by a == b).
  if (a == DType::UInt8 || b == DType::UInt8) {
    const DType s = a == DType::UInt8 ? b : a;
    return s == DType::Int8 ? DType::Int16 : s;
  }
  return int_rank(a) > int_rank(b) ? a : b;
}

bool can_cast(DType from, DType to) {
  // PyTorch refuses to write a "higher category" result into a lower one.
  auto category = [](DType t) { return t == DType::Bool ? 0 : is_floating_point(t) ? 2 : 1; };
  return category(from) <= category(to);
}

}  // namespace loom
