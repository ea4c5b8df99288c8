/* Prints the layout of version 1 of the stable C ABI: one line per LoomApi v1 entry with its
 * offset, the v1 structs' sizes and member offsets, and the frozen numbers. CMake compiles it
 * twice, against the frozen header (tests/abi/frozen/v1) and against the current one; the ctest
 * abi_layout_matches_v1 requires the two outputs to be identical, so a v1 entry that moved,
 * changed its name or vanished, or a frozen number that changed, fails it (an appended entry
 * does not: the list names the v1 entries only).
 */
#include <loom/capi.h>
#include <stdio.h>

#include "v1_layout.h"

#define PRINT_ENTRY(name) printf("LoomApi.%s %zu\n", #name, offsetof(LoomApi, name));
#define PRINT_MEMBER(type, member) printf(#type "." #member " %zu\n", offsetof(type, member));
#define PRINT_NUMBER(macro) printf(#macro " %ld\n", (long)(macro));

int main(void) {
  printf("LOOM_API_VERSION >= 1: %d\n", LOOM_API_VERSION >= 1);
  PRINT_MEMBER(LoomApi, struct_size)
  PRINT_MEMBER(LoomApi, version)
  LOOM_V1_ENTRIES(PRINT_ENTRY)

  printf("sizeof(LoomValue) %zu\n", sizeof(LoomValue));
  PRINT_MEMBER(LoomValue, struct_size)
  PRINT_MEMBER(LoomValue, kind)
  PRINT_MEMBER(LoomValue, u.tensor)
  PRINT_MEMBER(LoomValue, u.i)
  PRINT_MEMBER(LoomValue, u.f)
  PRINT_MEMBER(LoomValue, u.b)
  PRINT_MEMBER(LoomValue, u.s)
  PRINT_MEMBER(LoomValue, u.ints.data)
  PRINT_MEMBER(LoomValue, u.ints.size)
  PRINT_MEMBER(LoomValue, u.tensors.data)
  PRINT_MEMBER(LoomValue, u.tensors.size)
  PRINT_MEMBER(LoomValue, u.floats.data)
  PRINT_MEMBER(LoomValue, u.floats.size)

  PRINT_MEMBER(LoomPluginManifest, struct_size)
  PRINT_MEMBER(LoomPluginManifest, abi_major)
  PRINT_MEMBER(LoomPluginManifest, abi_minor)
  PRINT_MEMBER(LoomPluginManifest, name)
  PRINT_MEMBER(LoomPluginManifest, version)
  PRINT_MEMBER(LoomPluginManifest, description)
  PRINT_MEMBER(LoomPluginManifest, dependencies)
  PRINT_MEMBER(LoomPluginManifest, build_info)
  PRINT_MEMBER(LoomPluginManifest, register_plugin)
  PRINT_MEMBER(LoomPluginManifest, unregister_plugin)
  PRINT_NUMBER(LOOM_PLUGIN_ABI_MAJOR)
  printf("LOOM_PLUGIN_ENTRY_POINT %s\n", LOOM_PLUGIN_ENTRY_POINT);

  PRINT_NUMBER(LOOM_OK)
  PRINT_NUMBER(LOOM_ERROR)
  PRINT_NUMBER(LOOM_VALUE_ERROR)
  PRINT_NUMBER(LOOM_TYPE_ERROR)
  PRINT_NUMBER(LOOM_INDEX_ERROR)
  PRINT_NUMBER(LOOM_DEVICE_ERROR)
  PRINT_NUMBER(LOOM_NOT_IMPLEMENTED)
  PRINT_NUMBER(LOOM_REGISTRATION_ERROR)
  PRINT_NUMBER(LOOM_PLUGIN_ERROR)
  PRINT_NUMBER(LOOM_AUTOGRAD_ERROR)
  PRINT_NUMBER(LOOM_INVALID_ARGUMENT)
  PRINT_NUMBER(LOOM_OUT_OF_MEMORY)
  PRINT_NUMBER(LOOM_VALUE_NONE)
  PRINT_NUMBER(LOOM_VALUE_TENSOR)
  PRINT_NUMBER(LOOM_VALUE_INT)
  PRINT_NUMBER(LOOM_VALUE_FLOAT)
  PRINT_NUMBER(LOOM_VALUE_BOOL)
  PRINT_NUMBER(LOOM_VALUE_STRING)
  PRINT_NUMBER(LOOM_VALUE_INT_LIST)
  PRINT_NUMBER(LOOM_VALUE_TENSOR_LIST)
  PRINT_NUMBER(LOOM_VALUE_FLOAT_LIST)
  PRINT_NUMBER(LOOM_VALUE_DTYPE)
  return 0;
}
