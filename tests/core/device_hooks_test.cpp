// Tests for core/src/device_hooks.cpp: the per-device-type hooks registry (register, find,
// the newest registration wins, unregistering restores the previous one) and the harmless
// defaults every hook has.
#include "loom/core/device_hooks.h"

#include <gtest/gtest.h>

#include <string>

#include "loom/core/error.h"

namespace loom {
namespace {

/// Hooks of a test device type: n devices, one info line naming itself.
class FakeHooks final : public DeviceHooks {
 public:
  FakeHooks(int n, std::string tag) : n_(n), tag_(std::move(tag)) {}
  int device_count() const override { return n_; }
  std::string unavailable_reason() const override { return n_ ? "" : "no fake hardware"; }
  std::vector<std::pair<std::string, std::string>> info() const override { return {{"tag", tag_}}; }

 private:
  int n_;
  std::string tag_;
};

TEST(DeviceHooks, UnregisteredTypeHasNone) {
  const DeviceType t = DeviceType::register_type("hooks_test_none");
  EXPECT_EQ(find_device_hooks(t), nullptr);
  EXPECT_EQ(find_device_hooks(DeviceType::cpu()), nullptr);
}

TEST(DeviceHooks, RegisterFindUnregister) {
  const DeviceType t = DeviceType::register_type("hooks_test_a");
  FakeHooks first(2, "first"), second(0, "second");
  {
    RegistrationHandle h1 = register_device_hooks(t, &first);
    ASSERT_EQ(find_device_hooks(t), &first);
    EXPECT_EQ(find_device_hooks(t)->device_count(), 2);
    {
      RegistrationHandle h2 = register_device_hooks(t, &second);
      ASSERT_EQ(find_device_hooks(t), &second);  // the newest wins
      EXPECT_EQ(find_device_hooks(t)->unavailable_reason(), "no fake hardware");
      EXPECT_EQ(find_device_hooks(t)->info().at(0).second, "second");
    }
    EXPECT_EQ(find_device_hooks(t), &first);  // restored
  }
  EXPECT_EQ(find_device_hooks(t), nullptr);
}

TEST(DeviceHooks, UnregisteringAnOlderRegistrationKeepsTheNewest) {
  const DeviceType t = DeviceType::register_type("hooks_test_b");
  FakeHooks first(1, "first"), second(1, "second");
  RegistrationHandle h1 = register_device_hooks(t, &first);
  RegistrationHandle h2 = register_device_hooks(t, &second);
  h1.reset();
  EXPECT_EQ(find_device_hooks(t), &second);
  h2.reset();
  EXPECT_EQ(find_device_hooks(t), nullptr);
}

TEST(DeviceHooks, MalformedRegistrationsAreRefused) {
  const DeviceType t = DeviceType::register_type("hooks_test_c");
  EXPECT_THROW(register_device_hooks(t, nullptr), RegistrationError);
  FakeHooks h(1, "cpu");
  EXPECT_THROW(register_device_hooks(DeviceType::cpu(), &h), RegistrationError);
}

TEST(DeviceHooks, DefaultsAreHarmless) {
  FakeHooks h(1, "defaults");
  const DeviceHooks& d = h;
  EXPECT_EQ(d.current_device(), 0);
  EXPECT_NO_THROW(d.set_current_device(0));
  EXPECT_EQ(d.current_stream(0), nullptr);
  EXPECT_NO_THROW(d.synchronize(-1));
  EXPECT_EQ(d.pinned_host_allocator(), nullptr);
  EXPECT_EQ(d.create_stream(0), nullptr);
  EXPECT_NO_THROW(d.destroy_stream(0, nullptr));
  EXPECT_TRUE(d.query_stream(nullptr));
  EXPECT_EQ(d.create_event(0, true), nullptr);
  EXPECT_TRUE(d.query_event(nullptr));
  EXPECT_EQ(d.event_elapsed_ms(nullptr, nullptr), 0.0);
  EXPECT_FALSE(d.is_pinned(&h));
  EXPECT_EQ(d.memory_stats(0).allocated_bytes, 0);
  EXPECT_EQ(d.memory_summary(0), "");
  EXPECT_NO_THROW(d.record_stream(&h, nullptr));
}

}  // namespace
}  // namespace loom
