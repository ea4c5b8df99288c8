// The profiler on CUDA tensors (Note [Device time] in loom/profiler/profiler.h): op events of
// CUDA calls name the cuda plugin's provider and carry the device time the cuda plugin's timer
// measured with CUDA events. Skips without a GPU (tests/gpu/run.sh runs it on one).
#include <gtest/gtest.h>

#include "loom/cuda/cuda.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/loom.h"
#include "loom/profiler/profiler.h"

namespace loom::testing {
namespace {

TEST(CudaProfiler, OpEventsCarryDeviceTime) {
  init();
  PluginLoader::instance().load("cuda");
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  const Device gpu(DeviceType::from_name("cuda"), 0);
  const Tensor a = ones({512, 512}).to(gpu), b = ones({512, 512}).to(gpu);
  (void)a.matmul(b);  // the first call pays cuBLAS's start-up
  cuda::synchronize();
  profiler::start();
  const Tensor c = a.matmul(b);
  const profiler::Profile p = profiler::stop();
  bool timed = false;
  for (const profiler::Event& e : p.events()) {
    if (e.name != "aten::mm") continue;
    EXPECT_EQ(e.plugin, "cuda");
    EXPECT_GT(e.device_ns, 0) << "a 512x512 matmul takes device time";
    timed = true;
  }
  EXPECT_TRUE(timed) << p.table();
  EXPECT_NE(p.table().find("Device"), std::string::npos);
  EXPECT_EQ(c.to(Device()).sum().item<double>(), 512.0 * 512 * 512);
}

}  // namespace
}  // namespace loom::testing
