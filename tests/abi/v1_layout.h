/* The layout of version 1 of the stable C ABI, as the ABI tests check it.
 *
 * Included after <loom/capi.h>, which is the frozen copy (frozen/v1) for v1_client.c and,
 * for abi_layout.c, either copy. LOOM_V1_ENTRIES lists the v1 entries of LoomApi in table
 * order: entry k sits at 8 + k * sizeof(void*) (after struct_size and version), for ever
 * (Note [Stable ABI rules] in capi.h). Never edit this list: version 2 gets its own.
 */
#ifndef LOOM_TESTS_ABI_V1_LAYOUT_H_
#define LOOM_TESTS_ABI_V1_LAYOUT_H_

#include <stddef.h>

/* clang-format off */
#define LOOM_V1_ENTRIES(X) \
  X(StatusCode) \
  X(StatusMessage) \
  X(StatusRelease) \
  X(StatusCreate) \
  X(VersionString) \
  X(Init) \
  X(DTypeFromName) \
  X(DTypeName) \
  X(DTypeItemSize) \
  X(DeviceCount) \
  X(DeviceCurrentStream) \
  X(DeviceSynchronize) \
  X(ManualSeed) \
  X(TensorFromData) \
  X(TensorEmpty) \
  X(TensorZeros) \
  X(TensorRetain) \
  X(TensorRelease) \
  X(TensorDim) \
  X(TensorNumel) \
  X(TensorSizes) \
  X(TensorStrides) \
  X(TensorDType) \
  X(TensorDevice) \
  X(TensorDataPtr) \
  X(TensorCopyToHost) \
  X(TensorItem) \
  X(TensorDescribe) \
  X(TensorRequiresGrad) \
  X(TensorSetRequiresGrad) \
  X(TensorGrad) \
  X(TensorSetGrad) \
  X(TensorDetach) \
  X(Backward) \
  X(GradEnabled) \
  X(SetGradEnabled) \
  X(OpFind) \
  X(OpSchema) \
  X(OpCall) \
  X(ValuesRelease) \
  X(PluginLoad) \
  X(PluginUnload) \
  X(PluginCount) \
  X(PluginInfo) \
  X(LibraryCreate) \
  X(PluginLibrary) \
  X(LibraryRelease) \
  X(LibraryDef) \
  X(LibraryImpl) \
  X(LibraryImplBackward) \
  X(BackwardNumInputs) \
  X(BackwardNumOutputs) \
  X(BackwardInput) \
  X(BackwardOutput) \
  X(BackwardGradOutput) \
  X(BackwardNeedsInputGrad) \
  X(BackwardSetGradInput) \
  X(BackwardArgument) \
/* end of LOOM_V1_ENTRIES */
/* clang-format on */

/* clang-format off */
/** The index of each v1 entry in the table. */
enum LoomV1EntryIndex {
#define LOOM_V1_INDEX(name) loom_v1_index_##name,
  LOOM_V1_ENTRIES(LOOM_V1_INDEX)
#undef LOOM_V1_INDEX
  loom_v1_entry_count
};
/* clang-format on */

/* Every v1 slot where version 1 put it, and nothing between them. */
#define LOOM_V1_ASSERT_OFFSET(name)                                                   \
  _Static_assert(offsetof(LoomApi, name) == 8 + loom_v1_index_##name * sizeof(void*), \
                 "LoomApi." #name " moved: the table is append-only (Note [Stable ABI rules])");
LOOM_V1_ENTRIES(LOOM_V1_ASSERT_OFFSET)
#undef LOOM_V1_ASSERT_OFFSET
_Static_assert(loom_v1_entry_count == 58, "version 1 has 58 entries");
_Static_assert(offsetof(LoomApi, struct_size) == 0 && offsetof(LoomApi, version) == 4,
               "LoomApi starts with struct_size and version");
_Static_assert(sizeof(LoomApi) >= 8 + loom_v1_entry_count * sizeof(void*),
               "LoomApi holds at least the v1 entries");

/* The frozen numbers: error codes and value kinds never change (they are append-only). */
_Static_assert(LOOM_OK == 0 && LOOM_ERROR == 1 && LOOM_VALUE_ERROR == 2 && LOOM_TYPE_ERROR == 3 &&
                   LOOM_INDEX_ERROR == 4 && LOOM_DEVICE_ERROR == 5 && LOOM_NOT_IMPLEMENTED == 6 &&
                   LOOM_REGISTRATION_ERROR == 7 && LOOM_PLUGIN_ERROR == 8 &&
                   LOOM_AUTOGRAD_ERROR == 9 && LOOM_INVALID_ARGUMENT == 10 &&
                   LOOM_OUT_OF_MEMORY == 11,
               "the v1 error codes");
_Static_assert(LOOM_VALUE_NONE == 0 && LOOM_VALUE_TENSOR == 1 && LOOM_VALUE_INT == 2 &&
                   LOOM_VALUE_FLOAT == 3 && LOOM_VALUE_BOOL == 4 && LOOM_VALUE_STRING == 5 &&
                   LOOM_VALUE_INT_LIST == 6 && LOOM_VALUE_TENSOR_LIST == 7 &&
                   LOOM_VALUE_FLOAT_LIST == 8 && LOOM_VALUE_DTYPE == 9,
               "the v1 value kinds");
/* LoomValue and the plugin manifest: struct_size first, members where v1 put them. */
_Static_assert(offsetof(LoomValue, struct_size) == 0 && offsetof(LoomValue, kind) == 4 &&
                   offsetof(LoomValue, u) == 8,
               "LoomValue's v1 layout");
_Static_assert(offsetof(LoomPluginManifest, struct_size) == 0 &&
                   offsetof(LoomPluginManifest, abi_major) == 4 &&
                   offsetof(LoomPluginManifest, abi_minor) == 8,
               "LoomPluginManifest's v1 layout");

#endif /* LOOM_TESTS_ABI_V1_LAYOUT_H_ */
