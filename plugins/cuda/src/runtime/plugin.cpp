// The CUDA backend plugin: its manifest and what it registers when it loads.
#include "loom/dispatcher/plugin.h"
#include "runtime/context.h"

LOOM_PLUGIN("cuda", LOOM_VERSION_STRING,
            "CUDA backend: caching allocator, streams, pinned memory, own kernels, cuBLAS, cuDNN",
            "ops_core", "ops_nn");

LOOM_PLUGIN_ON_LOAD(ctx) { ctx.register_device_type("cuda"); }
