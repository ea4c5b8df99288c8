/* The types of the v1 header as DWARF, for abidiff (abidiff_test.sh). CMake builds this probe
 * against the current header (abi_probe_current) and against the frozen one (abi_probe_frozen,
 * what abi_probe.v1.abi.xml was made from).
 *
 * The probe's one exported function takes LoomAbiProbeV1, a struct with one member per v1
 * entry of LoomApi, of that entry's type: a changed signature of any v1 entry is a changed
 * member here. It does not take LoomApi itself, because later versions append entries to it,
 * and abidiff's suppressions cannot tell an appended member from a changed one (libabigail
 * 2.2 suppresses both); the slots' offsets are abi_layout_matches_v1's job. LoomValue, the
 * plugin manifest and the callback types are reached as they are.
 */
#include <loom/capi.h>

#include "v1_layout.h"

#if defined(__GNUC__)
#define LOOM_ABI_PROBE_EXPORT __attribute__((visibility("default")))
#else
#define LOOM_ABI_PROBE_EXPORT
#endif

/** The v1 entries of LoomApi, each with the type the header gives it. */
typedef struct LoomAbiProbeV1 {
  __typeof__(((LoomApi*)0)->struct_size) struct_size; /**< LoomApi.struct_size */
  __typeof__(((LoomApi*)0)->version) version;         /**< LoomApi.version */
#define LOOM_ABI_PROBE_ENTRY(name) __typeof__(((LoomApi*)0)->name) name;
  LOOM_V1_ENTRIES(LOOM_ABI_PROBE_ENTRY)
#undef LOOM_ABI_PROBE_ENTRY
} LoomAbiProbeV1;

/** Does nothing: only its signature matters. */
LOOM_ABI_PROBE_EXPORT void loom_abi_probe_v1(const LoomAbiProbeV1* api, LoomValue* value,
                                             const LoomPluginManifest* manifest,
                                             LoomKernelFn kernel, LoomBackwardFn backward,
                                             LoomReleaseFn release, LoomPluginEntryPoint entry,
                                             LoomErrorCode code, LoomValueKind kind) {
  (void)api;
  (void)value;
  (void)manifest;
  (void)kernel;
  (void)backward;
  (void)release;
  (void)entry;
  (void)code;
  (void)kind;
}
