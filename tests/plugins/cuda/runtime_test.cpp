// The CUDA plugin's runtime (plugins/cuda/src/runtime): loading without a GPU, the device
// type, the reason no device is available, clear errors instead of crashes, `loom info`; and,
// on a GPU, the caching allocator (statistics, reuse, the out-of-memory message), pinned
// memory, copies in every direction (synchronous and asynchronous), streams, events and the
// device guard, each compared with the CPU values it started from.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "loom/core/device_hooks.h"
#include "loom/core/generator.h"
#include "loom/cuda/cuda.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/loom.h"
#include "ops_test_util.h"
#include "runtime/diagnosis.h"  // header-only, no CUDA calls
#include "test_util.h"

namespace loom::testing {
namespace {

using ::testing::HasSubstr;

/// Loads ops_core, ops_nn and cuda once; returns how long loading the cuda plugin took.
double load_cuda_seconds() {
  static const double seconds = [] {
    load_ops_core();
    load_ops_nn();
    const auto start = std::chrono::steady_clock::now();
    PluginLoader::instance().load("cuda");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }();
  return seconds;
}

DeviceType cuda_type() {
  load_cuda_seconds();
  return DeviceType::from_name("cuda");
}

DeviceHooks& hooks() {
  DeviceHooks* h = find_device_hooks(cuda_type());
  if (h == nullptr) throw Error("the cuda plugin registered no device hooks");
  return *h;
}

#define SKIP_WITHOUT_GPU()                                                             \
  do {                                                                                 \
    if (hooks().device_count() == 0) {                                                 \
      GTEST_SKIP() << "no CUDA device is available: " << hooks().unavailable_reason(); \
    }                                                                                  \
  } while (0)

TensorOptions on(Device d, DType dtype = DType::Float32) {
  return TensorOptions{}.with(dtype).with(d);
}

Tensor cpu_values(IntArrayRef sizes, uint64_t seed, DType dtype = DType::Float32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return make_tensor(random_values(static_cast<size_t>(n), seed, -3, 3), sizes, dtype);
}

/// A CPU tensor in pinned memory from the plugin's pinned allocator.
Tensor pinned_empty(IntArrayRef sizes, DType dtype) {
  Allocator* a = hooks().pinned_host_allocator();
  if (a == nullptr) throw Error("no pinned host allocator");
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  const size_t nbytes = static_cast<size_t>(n) * element_size(dtype);
  Storage storage(boost::intrusive_ptr<StorageImpl>(new StorageImpl(nbytes, *a, 0)));
  const DimVector strides = contiguous_strides(sizes);
  return Tensor(boost::intrusive_ptr<TensorImpl>(new TensorImpl(
      std::move(storage), dtype, sizes, IntArrayRef(strides.data(), strides.size()), 0)));
}

// ---- what must work everywhere, GPU or not ----

TEST(CudaRuntime, PluginLoadsAndRegistersTheDeviceType) {
  const double seconds = load_cuda_seconds();
  RecordProperty("load_seconds", std::to_string(seconds));
  std::printf("loading the cuda plugin took %.3f s\n", seconds);
  EXPECT_TRUE(DeviceType::is_registered("cuda"));
  EXPECT_EQ(Device("cuda:1").type(), cuda_type());
  const Allocator* a = find_allocator(cuda_type());
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name(), "cuda-caching");
  EXPECT_EQ(a->device_type(), cuda_type());
}

TEST(CudaRuntime, DeviceCountAndReasonAgree) {
  DeviceHooks& h = hooks();
  const int n = h.device_count();
  EXPECT_GE(n, 0);
  EXPECT_EQ(n, cuda::device_count());
  if (n == 0) {
    // This machine: no driver (cudaErrorInsufficientDriver); elsewhere cudaErrorNoDevice.
    EXPECT_THAT(h.unavailable_reason(), HasSubstr("cudaError"));
    EXPECT_FALSE(cuda::is_available());
    EXPECT_EQ(cuda::unavailable_reason(), h.unavailable_reason());
    EXPECT_EQ(h.pinned_host_allocator(), nullptr);
  } else {
    EXPECT_EQ(h.unavailable_reason(), "");
    EXPECT_TRUE(cuda::is_available());
    EXPECT_NE(h.pinned_host_allocator(), nullptr);
  }
}

TEST(CudaRuntime, CreatingATensorWithoutADeviceIsADeviceError) {
  if (hooks().device_count() > 0) GTEST_SKIP() << "a CUDA device is available";
  const std::string reason = hooks().unavailable_reason();
  const std::string msg = message_of<DeviceError>([] {
    Tensor::empty({2, 3}, on(Device(cuda_type(), 0)));
  });
  EXPECT_THAT(msg, HasSubstr("no CUDA device is available"));
  EXPECT_THAT(msg, HasSubstr(reason));
  // Moving a CPU tensor there fails the same way, and so does a zero-size tensor.
  const Tensor x = cpu_values({4}, 1);
  EXPECT_THAT(message_of<DeviceError>([&] { x.to(Device(cuda_type(), 0)); }),
              HasSubstr("no CUDA device is available"));
  EXPECT_THAT(message_of<DeviceError>([] { Tensor::empty({0}, on(Device(cuda_type(), 0))); }),
              HasSubstr("no CUDA device is available"));
}

TEST(CudaRuntime, PublicApiWithoutADeviceThrowsClearly) {
  if (hooks().device_count() > 0) GTEST_SKIP() << "a CUDA device is available";
  EXPECT_THAT(message_of<DeviceError>([] { cuda::Stream::create(); }),
              HasSubstr("no CUDA device is available"));
  EXPECT_THAT(message_of<DeviceError>([] { cuda::synchronize(); }),
              HasSubstr("synchronize: no CUDA device is available"));
  EXPECT_THAT(message_of<DeviceError>([] { cuda::Event e(true); }),
              HasSubstr("Event: no CUDA device is available"));
  EXPECT_THAT(cuda::memory_summary(), HasSubstr("no CUDA device is available"));
  EXPECT_EQ(cuda::memory_allocated(), 0);
  EXPECT_NO_THROW(cuda::empty_cache());
  EXPECT_FALSE(hooks().is_pinned(&hooks()));
}

TEST(CudaRuntime, InfoNamesVersionsArchitecturesAndDevices) {
  std::vector<std::string> keys;
  std::string text;
  for (const auto& [k, v] : hooks().info()) {
    keys.push_back(k);
    text += k + ": " + v + "\n";
  }
  for (const char* k : {"CUDA runtime", "CUDA driver", "cuBLAS", "cuDNN", "compiled architectures",
                        "launch blocking"}) {
    EXPECT_THAT(keys, ::testing::Contains(std::string(k))) << text;
  }
  EXPECT_THAT(text, HasSubstr("sm_90 (SASS)")) << text;
  EXPECT_THAT(text, HasSubstr("compute_90 (PTX)")) << text;
  EXPECT_THAT(text, HasSubstr("cuDNN: 9.")) << text;
  if (hooks().device_count() == 0) {
    EXPECT_THAT(text, ::testing::Not(HasSubstr("cuda:0"))) << text;
    if (hooks().unavailable_reason().find("no CUDA driver") != std::string::npos) {
      // cudaDriverGetVersion works without a driver and says 0.
      EXPECT_THAT(text, HasSubstr("CUDA driver: none installed")) << text;
    }
  } else {
    EXPECT_THAT(text, HasSubstr("cuda:0: ")) << text;
  }
}

TEST(CudaRuntime, LoomInfoPrintsTheCudaSection) {
  load_cuda_seconds();
  const std::string cmd = std::string(LOOM_TEST_BIN_DIR) + "/loom info 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  ASSERT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  EXPECT_THAT(out, HasSubstr("Device type 'cuda'"));
  EXPECT_THAT(out, HasSubstr("CUDA runtime"));
  EXPECT_THAT(out, HasSubstr("compiled architectures"));
  EXPECT_THAT(out, HasSubstr("Backend switches"));
  EXPECT_THAT(out, HasSubstr("deterministic"));
  if (hooks().device_count() == 0) {
    EXPECT_THAT(out, HasSubstr("no: " + hooks().unavailable_reason())) << out;
  }
}

TEST(CudaRuntime, GeneratorKeepsPhiloxSeedAndOffset) {
  // The default generator needs no device: its state is host-side.
  Generator& g = default_generator(Device(cuda_type(), 0));
  EXPECT_EQ(g.device(), Device(cuda_type(), 0));
  g.manual_seed(42);
  EXPECT_EQ(g.initial_seed(), 42u);
  EXPECT_EQ(g.get_state(), "philox 42 0");
  const uint64_t a = g.next_u64();
  const std::string state = g.get_state();
  EXPECT_EQ(state, "philox 42 1");
  const uint64_t b = g.next_u64();
  EXPECT_NE(a, b);
  g.set_state(state);
  EXPECT_EQ(g.next_u64(), b);
  EXPECT_THAT(message_of<ValueError>([&] { g.set_state("mt 1 2"); }), HasSubstr("malformed"));
  manual_seed(7);
  EXPECT_EQ(g.get_state(), "philox 7 0");
}

TEST(CudaRuntime, UnloadsAndLoadsAgain) {
  load_cuda_seconds();
  PluginLoader::instance().unload("cuda");
  EXPECT_EQ(find_device_hooks(DeviceType::from_name("cuda")), nullptr);
  EXPECT_EQ(find_allocator(DeviceType::from_name("cuda")), nullptr);
  EXPECT_EQ(cuda::unavailable_reason(), "the CUDA plugin is not loaded");
  PluginLoader::instance().load("cuda");
  ASSERT_NE(find_device_hooks(cuda_type()), nullptr);
  EXPECT_EQ(hooks().device_count(), cuda::device_count());
  EXPECT_NE(find_allocator(cuda_type()), nullptr);
}

TEST(CudaDiagnosis, ReasonsSayWhatToDo) {
  EXPECT_EQ(cuda::unavailable_text("cudaErrorInsufficientDriver",
                                   "CUDA driver version is "
                                   "insufficient for CUDA runtime version",
                                   0, 13000, nullptr),
            "no CUDA driver is installed (cudaErrorInsufficientDriver: CUDA driver version is "
            "insufficient for CUDA runtime version)");
  EXPECT_THAT(cuda::unavailable_text("cudaErrorInsufficientDriver", "...", 12020, 13000, nullptr),
              HasSubstr("the CUDA driver (12.2) is older than the CUDA runtime Loom was built "
                        "with (13.0); update the NVIDIA driver"));
  EXPECT_EQ(cuda::unavailable_text("cudaErrorNoDevice", "no CUDA-capable device is detected", 13000,
                                   13000, ""),
            "no CUDA-capable GPU was found (CUDA_VISIBLE_DEVICES='') (cudaErrorNoDevice: no "
            "CUDA-capable device is detected)");
  EXPECT_EQ(cuda::unavailable_text("", "", 13000, 13000, nullptr), "no CUDA-capable GPU was found");
  EXPECT_THAT(cuda::unavailable_text("cudaErrorUnknown", "unknown error", 13000, 13000, nullptr),
              HasSubstr("cudaGetDeviceCount failed (cudaErrorUnknown: unknown error)"));
}

TEST(CudaDiagnosis, CompiledArchitecturesAgainstTheGpu) {
  const auto sm90_ptx = cuda::parse_architectures("90-real,90-virtual");
  EXPECT_EQ(cuda::architectures_text(sm90_ptx), "sm_90 (SASS), compute_90 (PTX)");
  EXPECT_TRUE(cuda::runs_on(sm90_ptx, 90));   // H100 / H200
  EXPECT_TRUE(cuda::runs_on(sm90_ptx, 100));  // newer: the PTX is JIT-compiled
  EXPECT_FALSE(cuda::runs_on(sm90_ptx, 80));  // A100: "no kernel image is available"
  EXPECT_FALSE(cuda::runs_on(sm90_ptx, 89));
  const auto sm80 = cuda::parse_architectures("80-real");
  EXPECT_TRUE(cuda::runs_on(sm80, 86));  // same major version, newer minor
  EXPECT_FALSE(cuda::runs_on(sm80, 90));
  const auto both = cuda::parse_architectures("80;90");  // no suffix: SASS and PTX
  EXPECT_EQ(cuda::architectures_text(both),
            "sm_80 (SASS), compute_80 (PTX), sm_90 (SASS), compute_90 (PTX)");
  EXPECT_TRUE(cuda::runs_on(both, 120));
  const auto sm90a = cuda::parse_architectures("90a-real");
  EXPECT_EQ(cuda::architectures_text(sm90a), "sm_90a (SASS)");
  EXPECT_TRUE(cuda::runs_on(sm90a, 90));
  EXPECT_FALSE(cuda::runs_on(sm90a, 100));
  EXPECT_EQ(cuda::architectures_text(cuda::parse_architectures("")), "(none)");
}

// ---- on a GPU ----

TEST(CudaRuntimeGpu, AllocatorCountsAndReusesBlocks) {
  SKIP_WITHOUT_GPU();
  Allocator& a = get_allocator(cuda_type());
  cuda::empty_cache();
  const AllocatorStats before = a.stats();
  {
    Tensor t = Tensor::empty({1000}, on(Device(cuda_type(), 0)));  // 4000 B -> 4096 B block
    const AllocatorStats s = a.stats();
    EXPECT_EQ(s.allocated_bytes - before.allocated_bytes, 4096);
    EXPECT_EQ(s.num_allocs - before.num_allocs, 1);
    EXPECT_EQ(cuda::memory_allocated(0), s.allocated_bytes);
  }
  const AllocatorStats freed = a.stats();
  EXPECT_EQ(freed.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(freed.reserved_bytes - before.reserved_bytes, 4096);  // cached, not returned
  {
    Tensor t = Tensor::empty({1024}, on(Device(cuda_type(), 0)));  // same rounded size
    const AllocatorStats s = a.stats();
    EXPECT_EQ(s.num_cache_hits - freed.num_cache_hits, 1);
    EXPECT_EQ(s.reserved_bytes, freed.reserved_bytes);
    EXPECT_GE(s.peak_allocated_bytes, s.allocated_bytes);
  }
  cuda::empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes, a.stats().allocated_bytes);
  EXPECT_THAT(cuda::memory_summary(0), HasSubstr("memory summary: cuda:0"));
}

TEST(CudaRuntimeGpu, OutOfMemorySaysWhatWasAskedAndWhatIsHeld) {
  SKIP_WITHOUT_GPU();
  Tensor keep = Tensor::empty({1 << 20}, on(Device(cuda_type(), 0)));  // something allocated
  const std::string msg = message_of<Error>(
      [] { Tensor::empty({int64_t{1} << 40}, on(Device(cuda_type(), 0))); });  // 4 TiB
  EXPECT_THAT(msg, HasSubstr("CUDA out of memory. Tried to allocate 4194304.00 MiB (GPU 0; "));
  EXPECT_THAT(msg, HasSubstr("GiB total capacity"));
  EXPECT_THAT(msg, HasSubstr("already allocated"));
  EXPECT_THAT(msg, HasSubstr("reserved in total by Loom"));
  EXPECT_THAT(msg, HasSubstr("memory summary: cuda:0"));
  // The failure left the device usable.
  EXPECT_NO_THROW(Tensor::empty({16}, on(Device(cuda_type(), 0))));
}

TEST(CudaRuntimeGpu, PinnedMemoryIsCpuMemoryTheHooksRecognise) {
  SKIP_WITHOUT_GPU();
  const Tensor p = pinned_empty({256}, DType::Float32);
  EXPECT_TRUE(p.device().is_cpu());
  EXPECT_TRUE(hooks().is_pinned(p.data_ptr()));
  EXPECT_TRUE(hooks().is_pinned(static_cast<char*>(p.data_ptr()) + 100));  // inside the block
  const Tensor ordinary = Tensor::empty({256});
  EXPECT_FALSE(hooks().is_pinned(ordinary.data_ptr()));
}

TEST(CudaRuntimeGpu, CopiesRoundTripInEveryDirection) {
  SKIP_WITHOUT_GPU();
  const Device gpu(cuda_type(), 0);
  const Tensor x = cpu_values({37, 19}, 3);
  const Tensor d = x.to(gpu);
  EXPECT_EQ(d.device(), gpu);
  expect_close(d.to(kCPU), x.sizes(), to_doubles(x), 0, 0);
  // Non-contiguous host source and destination.
  const Tensor xt = x.transpose(0, 1);
  const Tensor dt = xt.to(gpu);
  expect_close(dt.to(kCPU), xt.sizes(), to_doubles(xt), 0, 0);
  Tensor host_t = Tensor::empty({19, 37}).transpose(0, 1);
  host_t.copy_(d);
  expect_close(host_t, x.sizes(), to_doubles(x), 0, 0);
  // Device to device, same device, and with a dtype change on the way back.
  Tensor d2 = Tensor::empty({37, 19}, on(gpu));
  d2.copy_(d);
  expect_close(d2.to(kCPU), x.sizes(), to_doubles(x), 0, 0);
  Tensor back64 = Tensor::empty({37, 19}, on(kCPU, DType::Float64));
  back64.copy_(d);
  expect_close(back64, x.sizes(), to_doubles(x), 0, 0);
  // Broadcasting a row from the host.
  const Tensor row = cpu_values({19}, 4);
  Tensor rows = Tensor::empty({37, 19}, on(gpu));
  rows.copy_(row);
  std::vector<double> want;
  for (int i = 0; i < 37; ++i) {
    for (double v : to_doubles(row)) want.push_back(v);
  }
  expect_close(rows.to(kCPU), rows.sizes(), want, 0, 0);
  if (hooks().device_count() > 1) {
    const Tensor other = d.to(Device(cuda_type(), 1));
    expect_close(other.to(kCPU), x.sizes(), to_doubles(x), 0, 0);
  }
}

TEST(CudaRuntimeGpu, AsynchronousCopiesFromPinnedMemory) {
  SKIP_WITHOUT_GPU();
  const Device gpu(cuda_type(), 0);
  const int64_t n = 1 << 20;
  const Tensor x = cpu_values({n}, 5);
  Tensor src = pinned_empty({n}, DType::Float32);
  std::memcpy(src.data_ptr(), x.data_ptr(), n * sizeof(float));
  Tensor d = Tensor::empty({n}, on(gpu));
  loom::copy_(d, src, /*non_blocking=*/true);
  Tensor dst = pinned_empty({n}, DType::Float32);
  loom::copy_(dst, d, /*non_blocking=*/true);
  cuda::synchronize();
  EXPECT_EQ(std::memcmp(dst.data_ptr(), x.data_ptr(), n * sizeof(float)), 0);
}

TEST(CudaRuntimeGpu, StreamsEventsAndGuards) {
  SKIP_WITHOUT_GPU();
  const Device gpu(cuda_type(), 0);
  EXPECT_EQ(cuda::current_stream().handle(), nullptr);  // the legacy default stream
  cuda::Stream s = cuda::Stream::create(0);
  ASSERT_NE(s.handle(), nullptr);
  {
    cuda::StreamGuard guard(s);
    EXPECT_EQ(cuda::current_stream(), s);
    cuda::Event start(true), end(true);
    start.record();
    const Tensor x = cpu_values({1 << 16}, 6);
    const Tensor d = x.to(gpu);  // queued on s
    end.record();
    end.synchronize();
    EXPECT_TRUE(end.query());
    EXPECT_GE(start.elapsed_time(end), 0.0);
    s.synchronize();
    EXPECT_TRUE(s.query());
    expect_close(d.to(kCPU), x.sizes(), to_doubles(x), 0, 0);
  }
  EXPECT_EQ(cuda::current_stream().handle(), nullptr);
  {
    // A block used on a second stream is held back after its free until that stream's work
    // is done; it then serves the next request of its own stream again.
    Tensor t = Tensor::empty({4096}, on(gpu));
    cuda::record_stream(t, s);
    t = Tensor();
    s.synchronize();
    const int64_t hits = get_allocator(cuda_type()).stats().num_cache_hits;
    Tensor u = Tensor::empty({4096}, on(gpu));
    EXPECT_EQ(get_allocator(cuda_type()).stats().num_cache_hits, hits + 1);
  }
  {
    cuda::DeviceGuard guard(hooks().device_count() - 1);
    EXPECT_EQ(cuda::current_device(), hooks().device_count() - 1);
  }
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_THAT(message_of<DeviceError>([] { cuda::set_device(1000); }),
              HasSubstr("invalid device cuda:1000"));
}

}  // namespace
}  // namespace loom::testing
