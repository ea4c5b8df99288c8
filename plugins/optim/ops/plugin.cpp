// The optimizers' update-op pack: its manifest. The optim:: schemas (schemas.cpp) and their
// CPU kernels (cpu_steps.cpp) live in this plugin, not in libloom_optim, so that they are
// registered under a plugin of their own (listed by `loom info`, unloadable) whatever the
// order in which a program links libraries and loads backends; libloom_optim loads it on
// first use (loom::optim::detail::require_optim_ops).
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("ops_optim", LOOM_VERSION_STRING,
            "optimizer update ops (optim::sgd_step_, adam_step_, ...): fused CPU kernels",
            "ops_core");
