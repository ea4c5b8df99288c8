#pragma once
// LOOM_LOGS: a comma-separated list of topics the compile library prints to stderr
// (docs/design/compile.md: graph, recompiles, ...).

#include <cstdlib>
#include <string_view>

namespace loom::graph::detail {

/// Whether LOOM_LOGS names topic (a whole item of its comma-separated list).
inline bool logs_topic(std::string_view topic) {
  const char* env = std::getenv("LOOM_LOGS");
  std::string_view rest = env != nullptr ? env : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (rest.substr(0, comma) == topic) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace loom::graph::detail
