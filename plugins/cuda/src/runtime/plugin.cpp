// The CUDA backend plugin: its manifest and what it registers when it loads. Loading needs no
// GPU and no driver (Note [CUDA availability] in context.h): nothing here calls the device.
#include "loom/dispatcher/plugin.h"

#include <memory>

#include "loom/core/generator.h"
#include "runtime/allocator.h"
#include "runtime/context.h"
#include "runtime/generator.h"
#include "runtime/hooks.h"
#include "runtime/profiler_timer.h"

LOOM_PLUGIN("cuda", LOOM_VERSION_STRING,
            "CUDA backend: caching allocator, streams, pinned memory, own kernels, cuBLAS, cuDNN",
            "ops_core", "ops_nn");

LOOM_PLUGIN_ON_LOAD(ctx) {
  const loom::DeviceType cuda = ctx.register_device_type("cuda");
  ctx.register_allocator(cuda, &loom::cuda::caching_allocator());
  ctx.keep(loom::register_generator_factory(
               cuda,
               [](loom::Device d) {
                 return std::make_unique<loom::cuda::PhiloxGenerator>(
                     loom::Device(d.type(), d.index() < 0 ? int16_t{0} : d.index()));
               }),
           "Philox generator factory for device type 'cuda'");
  ctx.keep(loom::register_device_hooks(cuda, &loom::cuda::hooks()), "device hooks for 'cuda'");
  ctx.keep(loom::profiler::register_device_timer(cuda, &loom::cuda::profiler_timer()),
           "profiler timer for 'cuda'");
  // Undone first on unload: the cached blocks go back to the driver while it is still there.
  ctx.keep(loom::RegistrationHandle([] {
             try {
               loom::cuda::caching_allocator().empty_cache();
               loom::cuda::empty_pinned_cache();
             } catch (const std::exception&) {
               // Unloading must not fail over memory the process is about to lose anyway.
             }
           }),
           "CUDA and pinned memory caches");
}
