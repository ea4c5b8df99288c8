// The oneDNN CPU backend: its manifest. Its kernels (one family per file) register at the CPU
// key as provider "onednn", priority 10, above the reference kernels of ops_core and ops_nn,
// which they hand every call outside oneDNN's domain to (onednn.h).
#include "loom/dispatcher/plugin.h"
#include "onednn.h"

LOOM_PLUGIN("cpu_onednn", LOOM_VERSION_STRING, "CPU kernels from oneDNN (provider onednn)",
            "ops_core", "ops_nn");

LOOM_PLUGIN_ON_LOAD(ctx) {
  // Unloading drops what the caches hold (primitives, reordered weights) with the kernels.
  ctx.keep(loom::RegistrationHandle([] { loom::onednn::clear_caches(); }),
           "oneDNN primitive and weight caches");
}
