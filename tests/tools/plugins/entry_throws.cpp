// An entry point that throws an int instead of returning its manifest: `loom info` must name
// this file with the reason and still load the other plugins.
#include "loom/dispatcher/plugin_abi.h"

extern "C" __attribute__((visibility("default"))) const LoomPluginManifest* loom_plugin_manifest() {
  throw 7;
}
