#pragma once
/// @file
/// String concatenation for messages: absl::StrCat that also takes std::string_view.
///
/// Debian's Abseil is built with its own absl::string_view (not std::string_view),
/// so absl::StrCat rejects std::string_view arguments. These wrappers convert them.

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace loom {
namespace detail {
/// Passes a message piece through, turning std::string_view into absl::string_view.
template <typename T>
decltype(auto) alpha(const T& v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return absl::string_view(v.data(), v.size());
  } else {
    return (v);
  }
}
}  // namespace detail

/// Concatenates numbers and strings (any of std::string, std::string_view, const char*).
template <typename... Args>
std::string str_cat(const Args&... args) {
  return absl::StrCat(detail::alpha(args)...);
}

/// Appends numbers and strings to *out.
template <typename... Args>
void str_append(std::string* out, const Args&... args) {
  absl::StrAppend(out, detail::alpha(args)...);
}

}  // namespace loom
