// Tests for core/src/device.cpp: the run-time table of device types and device strings, why a
// device type is missing, and the built-in meta device (Note [Meta tensors] in allocator.cpp).

#include "loom/core/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "test_util.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

using ::loom::testing::message_of;

TEST(DeviceTest, CpuAndMetaAreBuiltIn) {
  EXPECT_EQ(DeviceType::cpu().id, 0);
  EXPECT_EQ(DeviceType::cpu().name(), "cpu");
  EXPECT_TRUE(DeviceType::is_registered("cpu"));
  EXPECT_TRUE(DeviceType::is_registered("meta"));
  EXPECT_EQ(DeviceType::from_name("cpu"), DeviceType::cpu());
  EXPECT_EQ(DeviceType::from_name("meta").id, 1);
  EXPECT_EQ(DeviceType::from_name("meta").name(), "meta");
  const auto all = DeviceType::all();
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[0], DeviceType::cpu());
  EXPECT_EQ(all[1].name(), "meta");
}

TEST(DeviceTest, DefaultDeviceIsCpuWithoutIndex) {
  Device d;
  EXPECT_TRUE(d.is_cpu());
  EXPECT_EQ(d.index(), -1);
  EXPECT_EQ(d.str(), "cpu");
  EXPECT_EQ(d, kCPU);
  EXPECT_EQ(Device(DeviceType::cpu(), 0).str(), "cpu:0");
  EXPECT_FALSE(Device(DeviceType::cpu(), 0) == kCPU);
}

TEST(DeviceTest, RegisterTypeIsIdempotent) {
  const DeviceType a = DeviceType::register_type("devtest_npu");
  const DeviceType b = DeviceType::register_type("devtest_npu");
  EXPECT_EQ(a, b);
  EXPECT_GE(a.id, 2);
  EXPECT_EQ(a.name(), "devtest_npu");
  EXPECT_TRUE(DeviceType::is_registered("devtest_npu"));
  EXPECT_EQ(DeviceType::from_name("devtest_npu"), a);
  // Registering a built-in name returns the built-in id.
  EXPECT_EQ(DeviceType::register_type("cpu"), DeviceType::cpu());
  EXPECT_EQ(DeviceType::register_type("meta").id, 1);
  const auto all = DeviceType::all();
  EXPECT_EQ(std::count(all.begin(), all.end(), a), 1);
}

TEST(DeviceTest, ParseTypeAndIndexAfterRegistering) {
  const DeviceType cuda = DeviceType::register_type("cuda");
  Device d("cuda:1");
  EXPECT_EQ(d.type(), cuda);
  EXPECT_EQ(d.index(), 1);
  EXPECT_FALSE(d.is_cpu());
  EXPECT_EQ(d.str(), "cuda:1");
  EXPECT_EQ(d, Device(cuda, 1));
  EXPECT_EQ(Device("cuda").index(), -1);
  EXPECT_EQ(Device("cuda").str(), "cuda");
  EXPECT_EQ(Device("cpu"), kCPU);
  EXPECT_EQ(Device("cpu:0"), Device(DeviceType::cpu(), 0));
  EXPECT_EQ(Device("meta:3").str(), "meta:3");
  EXPECT_EQ(Device("cuda:32767").index(), 32767);
  std::ostringstream os;
  os << d;
  EXPECT_EQ(os.str(), "cuda:1");
}

TEST(DeviceTest, BadIndexThrowsDeviceError) {
  DeviceType::register_type("cuda");
  for (const char* spec : {"cuda:x", "cpu:-1", "cuda:", "cuda:1x", "cuda:+1", "cuda:1:2", "cuda: 1",
                           "cuda:32768", "cuda:99999999999"}) {
    const std::string msg = message_of<DeviceError>([&] { Device d(spec); });
    EXPECT_THAT(msg, HasSubstr(std::string("'") + spec + "'")) << spec;
    EXPECT_THAT(msg, HasSubstr("expected 'type' or 'type:index'")) << spec;
  }
}

TEST(DeviceTest, UnknownTypeNamesTheKnownTypes) {
  DeviceType::register_type("devtest_npu");
  for (const char* spec : {"devtest_unknown", "devtest_unknown:0", "", ":0", "CPU", " cpu"}) {
    const std::string msg = message_of<DeviceError>([&] { Device d(spec); });
    EXPECT_THAT(msg, HasSubstr("unknown device type")) << spec;
    EXPECT_THAT(msg, HasSubstr("cpu, meta")) << spec;
    EXPECT_THAT(msg, HasSubstr("devtest_npu")) << spec;
  }
  const std::string msg = message_of<DeviceError>([] { DeviceType::from_name("devtest_unknown"); });
  EXPECT_THAT(msg, HasSubstr("'devtest_unknown'"));
  EXPECT_THAT(msg, HasSubstr("registered device types: cpu, meta"));
  EXPECT_FALSE(DeviceType::is_registered("devtest_unknown"));
}

TEST(DeviceTest, InvalidNamesAreRejected) {
  for (const char* name : {"", "CUDA", "cu-da", "cu da", "cuda:0", "npu.1", "\xc3\xa9"}) {
    const std::string msg = message_of<RegistrationError>([&] { DeviceType::register_type(name); });
    EXPECT_THAT(msg, HasSubstr("is not a valid device type name")) << name;
    EXPECT_FALSE(DeviceType::is_registered(name)) << name;
  }
  const std::string too_long(33, 'a');
  EXPECT_THROW(DeviceType::register_type(too_long), RegistrationError);
  EXPECT_FALSE(DeviceType::is_registered(too_long));
  // 32 characters is the limit, and digits and '_' are fine.
  const std::string longest = "devtest_" + std::string(24, 'z');
  EXPECT_EQ(DeviceType::register_type(longest).name(), longest);
  EXPECT_EQ(DeviceType::register_type("devtest_2_x").name(), "devtest_2_x");
}

TEST(DeviceTest, ConcurrentRegistrationGivesOneIdPerName) {
  std::vector<std::thread> threads;
  std::vector<std::vector<DeviceType>> got(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (const char* name : {"devtest_race_a", "devtest_race_b", "devtest_race_c"}) {
        got[t].push_back(DeviceType::register_type(name));
        EXPECT_TRUE(DeviceType::is_registered(name));
        EXPECT_EQ(DeviceType::from_name(name), got[t].back());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  EXPECT_NE(got[0][0], got[0][1]);
  EXPECT_NE(got[0][1], got[0][2]);
  EXPECT_EQ(got[0][2].name(), "devtest_race_c");
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(DeviceTest, IndexSpellingIsStrictAsInC10) {
  DeviceType::register_type("strictdev");
  EXPECT_EQ(Device("strictdev:10").index(), 10);
  for (const char* bad :
       {"strictdev:007", "strictdev:-0", "strictdev:+1", "strictdev:", "cpu:-0"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(message_of<DeviceError>([&] { Device d(bad); }),
                ::testing::HasSubstr("invalid device string"));
  }
}

TEST(DeviceTest, AMissingTypeSaysWhy) {
  // No reason recorded: no loaded plugin provides the type.
  const std::string plain = message_of<DeviceError>([] { Device d("devtest_gpu:7"); });
  EXPECT_THAT(plain, HasSubstr("unknown device type 'devtest_gpu': no loaded plugin provides it"));
  EXPECT_THAT(plain, HasSubstr("registered device types: cpu, meta"));
  // The program's init decided not to load the type's plugin, and said why.
  DeviceType::set_missing_reason("devtest_gpu", "no devtest driver is installed");
  EXPECT_EQ(DeviceType::missing_reason("devtest_gpu"), "no devtest driver is installed");
  const std::string why = message_of<DeviceError>([] { Device d("devtest_gpu:7"); });
  EXPECT_THAT(why, HasSubstr("device type 'devtest_gpu' is not available: no devtest driver is "
                             "installed; registered device types: cpu, meta"));
  EXPECT_THAT(why, ::testing::Not(HasSubstr("unknown device type")));
  // Forgotten with an empty reason; a registered type needs none.
  DeviceType::set_missing_reason("devtest_gpu", "");
  EXPECT_EQ(DeviceType::missing_reason("devtest_gpu"), "");
  EXPECT_THAT(message_of<DeviceError>([] { Device d("devtest_gpu"); }),
              HasSubstr("unknown device type 'devtest_gpu'"));
  DeviceType::set_missing_reason("devtest_gpu", "not loaded");
  DeviceType::register_type("devtest_gpu");
  EXPECT_EQ(Device("devtest_gpu:7").str(), "devtest_gpu:7");
}

TEST(DeviceTest, MetaTensorsHaveGeometryButNoData) {
  const Device meta("meta");
  EXPECT_TRUE(meta.is_meta());
  EXPECT_FALSE(meta.is_cpu());
  EXPECT_FALSE(Device().is_meta());
  EXPECT_EQ(meta.type(), DeviceType::meta());
  Tensor t = Tensor::empty({2, 3, 4}, TensorOptions{}.with(DType::Float64).with(meta));
  EXPECT_EQ(t.device(), meta);
  EXPECT_EQ(t.describe(), "[2, 3, 4] meta float64");
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.strides()[0], 12);
  EXPECT_EQ(t.data_ptr(), nullptr);
  EXPECT_EQ(t.storage().nbytes(), 24u * 8u) << "the storage knows its size";
  EXPECT_TRUE(t.key_set().has(DispatchKey::Meta));
  EXPECT_EQ(t.str(), "tensor(..., device='meta', size=(2, 3, 4), dtype=torch.float64)");
  // Views and resizes keep working without memory.
  Tensor v = t.as_strided_view({3, 4}, {4, 1}, 12);
  EXPECT_EQ(v.data_ptr(), nullptr);
  t.resize_({5, 10});
  EXPECT_EQ(t.storage().nbytes(), 50u * 8u);
  ASSERT_NE(find_allocator(DeviceType::meta()), nullptr);
  EXPECT_EQ(find_allocator(DeviceType::meta())->name(), "meta");
}

TEST(DeviceTest, CpuIndexMustBeMinusOneOrZero) {
  EXPECT_EQ(Device("cpu:0").index(), 0);
  EXPECT_THAT(message_of<DeviceError>([] { Device d("cpu:1"); }),
              ::testing::HasSubstr("CPU device index must be -1 or zero, got 1"));
  EXPECT_THAT(message_of<DeviceError>(
                  [] { Tensor::empty({2}, TensorOptions{}.with(Device(DeviceType::cpu(), 1))); }),
              ::testing::HasSubstr("CPU device index must be -1 or zero, got 1"));
}

}  // namespace
}  // namespace loom
