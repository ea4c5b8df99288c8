/* Test plugin `null_manifest`: has the entry point, but it returns no manifest. */
#include "loom/dispatcher/plugin_abi.h"

__attribute__((visibility("default"))) const LoomPluginManifest* loom_plugin_manifest(void) {
  return NULL;
}
