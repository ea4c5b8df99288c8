// A hand-written manifest whose register function throws an int, which is no std::exception:
// `loom info` must name this file with the reason and still load the other plugins.
#include "loom/dispatcher/plugin_abi.h"

namespace {
int register_plugin(LoomPluginContext*, char*, size_t) { throw 42; }

const char* const no_dependencies[] = {nullptr};
const LoomPluginManifest manifest = {sizeof(LoomPluginManifest),
                                     LOOM_PLUGIN_ABI_MAJOR,
                                     LOOM_PLUGIN_ABI_MINOR,
                                     "tools_test_throws_int",
                                     "0.1",
                                     "its register function throws an int",
                                     no_dependencies,
                                     "hand-written manifest",
                                     &register_plugin,
                                     nullptr};
}  // namespace

extern "C" __attribute__((visibility("default"))) const LoomPluginManifest* loom_plugin_manifest() {
  return &manifest;
}
