/* abi_v1_plugin: a stable-ABI extension built against the frozen v1 header (like v1_client.c)
 * and loaded by it through PluginLoad: it defines abi_v1_plugin::twice(Tensor x) -> Tensor
 * (x * 2, by calling mul.Scalar) in a library owned by the plugin (PluginLibrary), which the
 * loader undoes when the client unloads it. It links libloom.so only.
 */
#include <loom/capi.h> /* the frozen v1 copy */
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define ABI_V1_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define ABI_V1_PLUGIN_EXPORT
#endif

static const LoomApi* api;

static LoomStatus* twice(void* user_data, const LoomValue* args, size_t num_args,
                         LoomValue* returns, size_t num_returns) {
  (void)user_data;
  if (num_args != 1 || num_returns != 1 || args[0].kind != LOOM_VALUE_TENSOR) {
    return api->StatusCreate(LOOM_TYPE_ERROR, "abi_v1_plugin::twice: expected (Tensor) -> Tensor");
  }
  const LoomOp* mul = NULL;
  LoomStatus* st = api->OpFind("mul.Scalar", &mul);
  if (st) return st;
  LoomValue margs[2];
  memset(margs, 0, sizeof margs);
  margs[0] = args[0];
  margs[1].struct_size = sizeof margs[1];
  margs[1].kind = LOOM_VALUE_FLOAT;
  margs[1].u.f = 2.0;
  size_t nret = 0;
  return api->OpCall(mul, margs, 2, returns, 1, &nret);
}

/* Registers twice; on failure writes the library's message into error. */
static int register_plugin(LoomPluginContext* ctx, char* error, size_t error_capacity) {
  api = loom_get_api(1);
  if (!api) {
    snprintf(error, error_capacity, "libloom does not implement ABI version 1");
    return 1;
  }
  LoomLibrary* lib = NULL;
  LoomStatus* st = api->PluginLibrary(ctx, "abi_v1_plugin", &lib);
  if (!st) st = api->LibraryDef(lib, "twice(Tensor x) -> Tensor");
  if (!st) st = api->LibraryImpl(lib, "twice", "CPU", twice, NULL, NULL);
  if (st) {
    snprintf(error, error_capacity, "%s", api->StatusMessage(st));
    api->StatusRelease(st);
    return 1;
  }
  return 0;
}

static const char* const dependencies[] = {"ops_core", NULL};

static const LoomPluginManifest manifest = {
    sizeof(LoomPluginManifest),
    LOOM_PLUGIN_ABI_MAJOR,
    LOOM_PLUGIN_ABI_MINOR,
    "abi_v1_plugin",
    "1.0.0",
    "the ABI test's v1 plugin (tests/abi/v1_plugin.c)",
    dependencies,
    "built against the frozen v1 header",
    register_plugin,
    NULL,
};

ABI_V1_PLUGIN_EXPORT const LoomPluginManifest* loom_plugin_manifest(void) { return &manifest; }
