#pragma once
/// @file
/// Paths as `loom` prints them.

#include <filesystem>
#include <string>
#include <string_view>

namespace loom::cli {

/// The path without "." and ".." steps: the loader finds the install folder through
/// libloom_core's location, which the run-time linker reports as "bin/../lib/...".
inline std::string display_path(std::string_view path) {
  return std::filesystem::path(path).lexically_normal().string();
}

}  // namespace loom::cli
