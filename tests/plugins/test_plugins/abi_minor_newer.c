/* Test plugin `abi_minor_newer`: built for a newer minor ABI than the host's; it may
 * rely on additions the host lacks, so the loader must refuse it. */
#include "loom/dispatcher/plugin_abi.h"

static int never_called(LoomPluginContext* ctx, char* error, size_t error_capacity) {
  (void)ctx;
  (void)error;
  (void)error_capacity;
  return 1;
}

static const char* const no_deps[] = {NULL};

static const LoomPluginManifest manifest = {sizeof(LoomPluginManifest),
                                            LOOM_PLUGIN_ABI_MAJOR,
                                            LOOM_PLUGIN_ABI_MINOR + 1,
                                            "abi_minor_newer",
                                            "1.0",
                                            "test plugin: a newer minor ABI",
                                            no_deps,
                                            "hand-written C manifest",
                                            &never_called,
                                            NULL};

__attribute__((visibility("default"))) const LoomPluginManifest* loom_plugin_manifest(void) {
  return &manifest;
}
