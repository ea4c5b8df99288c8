/* Test plugin `c_plugin`: a valid plugin written in plain C against plugin_abi.h alone.
 * It registers nothing (C plugins have no registration API yet); the loader must accept
 * it, call its register and unregister functions, and pass error text back. */
#include <stdio.h>

#include "loom/dispatcher/plugin_abi.h"

static int registered = 0;

static int register_plugin(LoomPluginContext* ctx, char* error, size_t error_capacity) {
  (void)ctx;
  (void)error;
  (void)error_capacity;
  ++registered;
  return 0;
}

static void unregister_plugin(LoomPluginContext* ctx) {
  (void)ctx;
  --registered;
}

static const char* const no_deps[] = {NULL};

static const LoomPluginManifest manifest = {sizeof(LoomPluginManifest),
                                            LOOM_PLUGIN_ABI_MAJOR,
                                            LOOM_PLUGIN_ABI_MINOR,
                                            "c_plugin",
                                            "0.1",
                                            "test plugin: plain C",
                                            no_deps,
                                            "hand-written C manifest",
                                            &register_plugin,
                                            &unregister_plugin};

__attribute__((visibility("default"))) const LoomPluginManifest* loom_plugin_manifest(void) {
  return &manifest;
}
