// Test plugin `resident_ops`: linked with -z nodelete, so dlclose never unmaps it and a
// reload finds the file already in memory (Note [Resident plugin files] in
// plugin_loader.cpp). It must still register everything, every time it is loaded.

#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("resident_ops", "1.0", "test plugin: stays in memory after unload");

namespace {
int on_load_runs = 0;  // survives unloads: the file stays
}

LOOM_PLUGIN_ON_LOAD(ctx) {
  ++on_load_runs;
  ctx.keep(loom::RegistrationHandle(), loom::str_cat("on-load hook run ", on_load_runs));
}

LOOM_LIBRARY(residentns, m) { m.def("negate(Tensor x) -> Tensor"); }

LOOM_LIBRARY_IMPL(residentns, CPU, m) {
  m.impl("negate", [](const loom::Tensor& x) {
    loom::Tensor out = loom::Tensor::empty(x.sizes());
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = -x.data_ptr<float>()[i];
    return out;
  });
}
