#include "loom/core/registration.h"

#include <algorithm>

#include "loom/core/str_cat.h"

namespace loom {
namespace {
thread_local std::string tls_registering_plugin;
}

const std::string& current_registering_plugin() { return tls_registering_plugin; }

RegisteringPluginGuard::RegisteringPluginGuard(std::string plugin)
    : previous_(std::exchange(tls_registering_plugin, std::move(plugin))) {}

RegisteringPluginGuard::~RegisteringPluginGuard() { tls_registering_plugin = std::move(previous_); }

namespace {
// The repository root, taken from where this file was compiled: "<root>/core/src/registration.cpp".
std::string_view source_root() {
  constexpr std::string_view self = __FILE__;
  constexpr std::string_view tail = "core/src/registration.cpp";
  return self.ends_with(tail) ? self.substr(0, self.size() - tail.size()) : std::string_view();
}
}  // namespace

std::string Origin::relative_path(std::string_view file) {
  // Keep paths short and machine-independent. Inside the repository, strip the root: looking
  // for a top-level folder's name instead would cut "ops/core/cpu/x.cpp" to "core/cpu/x.cpp".
  if (const std::string_view root = source_root();
      root.size() > 1 && root.back() == '/' && file.starts_with(root)) {
    return std::string(file.substr(root.size()));
  }
  // Otherwise (a relative path, or another checkout): from the first top-level folder.
  size_t best = std::string_view::npos;
  for (std::string_view folder : {"core/", "dispatcher/", "ops/", "plugins/", "tests/", "tools/",
                                  "bench/", "extension_sdk/"}) {
    for (size_t pos = file.find(folder); pos != std::string_view::npos;
         pos = file.find(folder, pos + 1)) {
      if (pos == 0 || file[pos - 1] == '/') {
        best = std::min(best, pos);
        break;
      }
    }
  }
  return std::string(best == std::string_view::npos ? file : file.substr(best));
}

Origin Origin::here(std::source_location loc) {
  return Origin{tls_registering_plugin, relative_path(loc.file_name()),
                static_cast<int>(loc.line())};
}

std::string Origin::str() const {
  const std::string where = loom::str_cat(file, ":", line);
  return plugin.empty() ? loom::str_cat("static registration at ", where)
                        : loom::str_cat("plugin '", plugin, "' at ", where);
}

}  // namespace loom
