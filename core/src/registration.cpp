#include "loom/core/registration.h"

#include "loom/core/str_cat.h"

namespace loom {
namespace {
thread_local std::string tls_registering_plugin;
}

const std::string& current_registering_plugin() { return tls_registering_plugin; }

RegisteringPluginGuard::RegisteringPluginGuard(std::string plugin)
    : previous_(std::exchange(tls_registering_plugin, std::move(plugin))) {}

RegisteringPluginGuard::~RegisteringPluginGuard() {
  tls_registering_plugin = std::move(previous_);
}

Origin Origin::here(std::source_location loc) {
  std::string_view file = loc.file_name();
  // Keep paths short and machine-independent: from the leftmost top-level folder of the
  // source tree on ("tests/dispatcher/x.cpp", not "dispatcher/x.cpp").
  size_t best = std::string_view::npos;
  for (std::string_view root : {"/core/", "/dispatcher/", "/ops/", "/plugins/", "/tests/",
                                "/tools/", "/bench/", "/extension_sdk/"}) {
    if (auto pos = file.find(root); pos != std::string_view::npos && pos < best) best = pos;
  }
  if (best != std::string_view::npos) file.remove_prefix(best + 1);
  return Origin{tls_registering_plugin, std::string(file), static_cast<int>(loc.line())};
}

std::string Origin::str() const {
  const std::string where = loom::str_cat(file, ":", line);
  return plugin.empty() ? loom::str_cat("static registration at ", where)
                        : loom::str_cat("plugin '", plugin, "' at ", where);
}

}  // namespace loom
