#pragma once
/// @file
/// Everything a C++ program needs to use Loom like libtorch: the core (Tensor, dtypes,
/// devices, errors), the plugin loader, the op packs' free functions and operators,
/// Tensor's op methods and `x.index({...})`, and autograd (loom::autograd: backward, grad,
/// no_grad, custom functions, gradcheck).
///
/// Ops come from plugins: call loom::init() once (it loads ops_core and, when present,
/// ops_nn, ops_optim and the oneDNN CPU backend) or load plugins yourself with
/// loom::PluginLoader.

#include "loom/autograd/autograd.h"
#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_index.h"
#include "loom/ops/tensor_methods.h"
#if __has_include("loom/ops/nn.h")
#include "loom/ops/nn.h"
#endif

namespace loom {

/// Loads the first-party op packs (ops_core, then ops_nn and ops_optim if installed) and the oneDNN
/// CPU backend (cpu_onednn) if it is installed; idempotent.
/// Throws loom::Error if ops_core cannot be loaded.
inline void init() {
  PluginLoader::instance().load("ops_core");
  // Optional: programs that use only the core pack run without ops_nn, and without the
  // oneDNN CPU backend the reference kernels run (LOOM_CPU_PROVIDER picks between them).
  for (const char* optional : {"ops_nn", "ops_optim", "cpu_onednn"}) {
    try {
      PluginLoader::instance().load(optional);
    } catch (const Error&) {
    }
  }
  // Where an NVIDIA driver is installed; elsewhere "cuda:0" says that none is (Note [Device
  // plugins at init] in loom/dispatcher/plugin_loader.h).
  PluginLoader::instance().load_if_driver("cuda", "cuda", "libcuda.so.1", "NVIDIA driver");
}

}  // namespace loom
