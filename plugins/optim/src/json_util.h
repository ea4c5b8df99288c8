#pragma once
// JSON reading for the state dicts of optimizers, their options and the schedulers: every
// missing or mistyped field is a ValueError naming the field and the caller.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>

#include "loom/core/error.h"

namespace loom::optim::detail {

/// Parses text; ValueError naming where on malformed JSON.
inline nlohmann::json parse_json(std::string_view text, std::string_view where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(ValueError, where, ": the state dict's JSON does not parse (", e.what(), ")");
  }
}

/// j[key]; ValueError if j is not an object holding key.
inline const nlohmann::json& member(const nlohmann::json& j, std::string_view key,
                                    std::string_view where) {
  if (!j.is_object()) LOOM_THROW(ValueError, where, ": expected a JSON object holding '", key, "'");
  auto it = j.find(key);
  if (it == j.end()) LOOM_THROW(ValueError, where, ": the state dict lacks '", key, "'");
  return *it;
}

/// j[key] as T; ValueError if missing or of another type.
template <typename T>
T get(const nlohmann::json& j, std::string_view key, std::string_view where) {
  const nlohmann::json& v = member(j, key, where);
  try {
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int64_t>) {
      if (!v.is_number()) throw std::invalid_argument("not a number");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) throw std::invalid_argument("not a bool");
    }
    return v.get<T>();
  } catch (const std::exception&) {
    LOOM_THROW(ValueError, where, ": '", key, "' has the wrong type (", v.dump(), ")");
  }
}

}  // namespace loom::optim::detail
