// The nn operator pack: its manifest. Its schemas live in namespace aten, which ops_core
// owns; each family adds them from schemas/<family>.cpp with LOOM_LIBRARY_FRAGMENT.
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("ops_nn", LOOM_VERSION_STRING, "nn operators: reference CPU kernels", "ops_core");
