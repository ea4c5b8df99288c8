/* The plugin entry point: plain C, so that any toolchain can produce a plugin
 * the loader can at least inspect and refuse with a reason.
 *
 * Every plugin exports `const LoomPluginManifest* loom_plugin_manifest(void)`.
 * The loader reads the manifest before anything registers: an ABI mismatch,
 * a missing dependency or a duplicate name is refused with no side effects.
 */
#ifndef LOOM_DISPATCHER_PLUGIN_ABI_H_
#define LOOM_DISPATCHER_PLUGIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Major plugin ABI version: a plugin built for another major version is refused. */
#define LOOM_PLUGIN_ABI_MAJOR 1
/** Minor plugin ABI version: a plugin built for a newer minor version is refused. */
#define LOOM_PLUGIN_ABI_MINOR 0
/** The name of the entry point every plugin exports. */
#define LOOM_PLUGIN_ENTRY_POINT "loom_plugin_manifest"

/** Opaque handle the loader passes to a plugin's register/unregister functions. */
typedef struct LoomPluginContext LoomPluginContext;

/** What a plugin says about itself. Fields are append-only; struct_size comes first. */
typedef struct LoomPluginManifest {
  uint32_t struct_size;      /**< sizeof(LoomPluginManifest) as the plugin was built */
  uint32_t abi_major;        /**< LOOM_PLUGIN_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;        /**< LOOM_PLUGIN_ABI_MINOR the plugin was built with */
  const char* name;          /**< unique plugin name, e.g. "ops_core" */
  const char* version;       /**< the plugin's own version, e.g. "0.1.0" */
  const char* description;   /**< one line for `loom info` */
  const char* const* dependencies; /**< NULL-terminated names of plugins that must load first */
  const char* build_info;    /**< compiler, build type, Loom version built against */
  /** Registers everything; returns 0, or non-zero after writing a message into error. */
  int (*register_plugin)(LoomPluginContext* ctx, char* error, size_t error_capacity);
  /** Called before the loader undoes the plugin's registrations; may be NULL. */
  void (*unregister_plugin)(LoomPluginContext* ctx);
} LoomPluginManifest;
/* End of ABI version 1.0 - DO NOT MODIFY ABOVE, append only. */

/** The signature of the entry point. */
typedef const LoomPluginManifest* (*LoomPluginEntryPoint)(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_DISPATCHER_PLUGIN_ABI_H_ */
