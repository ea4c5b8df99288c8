/* Test plugin `abi_mismatch`: a manifest written by hand, as a plugin built for a
 * future major ABI would carry. The loader must refuse it before touching anything
 * else in the manifest. */
#include "loom/dispatcher/plugin_abi.h"

static int never_called(LoomPluginContext* ctx, char* error, size_t error_capacity) {
  (void)ctx;
  (void)error;
  (void)error_capacity;
  return 1;
}

static const char* const no_deps[] = {NULL};

static const LoomPluginManifest manifest = {sizeof(LoomPluginManifest),
                                            99,
                                            0,
                                            "abi_mismatch",
                                            "1.0",
                                            "test plugin: ABI 99.0",
                                            no_deps,
                                            "hand-written C manifest",
                                            &never_called,
                                            NULL};

__attribute__((visibility("default"))) const LoomPluginManifest* loom_plugin_manifest(void) {
  return &manifest;
}
