// Tests for core/src/device.cpp: the error when the table of device types is full. A binary
// of its own, because filling the process-wide table would break every other test.

#include <gtest/gtest.h>

#include <string>

#include "loom/core/device.h"
#include "loom/core/error.h"

namespace loom {
namespace {

TEST(DeviceTableFullTest, RegisteringPastTheLimitThrowsAndNamesTheTable) {
  const int before = static_cast<int>(DeviceType::all().size());
  for (int i = before; i < kMaxDeviceTypes; ++i) {
    const DeviceType t = DeviceType::register_type("full_" + std::to_string(i));
    EXPECT_EQ(t.id, i);
  }
  EXPECT_EQ(static_cast<int>(DeviceType::all().size()), kMaxDeviceTypes);
  try {
    DeviceType::register_type("one_too_many");
    FAIL() << "registering device type " << kMaxDeviceTypes + 1 << " did not throw";
  } catch (const RegistrationError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'one_too_many'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the table of 32 device types is full"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu, meta, "), std::string::npos) << msg;
  }
  EXPECT_FALSE(DeviceType::is_registered("one_too_many"));
  // Names already in the table still resolve: registration stays idempotent when full.
  EXPECT_EQ(DeviceType::register_type("cpu"), DeviceType::cpu());
  const std::string last = "full_" + std::to_string(kMaxDeviceTypes - 1);
  EXPECT_EQ(DeviceType::register_type(last).id, kMaxDeviceTypes - 1);
  EXPECT_EQ(Device(last + ":2").str(), last + ":2");
}

}  // namespace
}  // namespace loom
