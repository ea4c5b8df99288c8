// The device-hooks registry (Note [Device hooks] in device_hooks.h): one stack per device
// type, newest on top, guarded by a mutex; lookups are rare (not on the dispatch path).
#include "loom/core/device_hooks.h"

#include <array>
#include <mutex>

#include "loom/core/error.h"

namespace loom {
namespace {

struct HooksRegistry {
  std::mutex mu;
  std::array<std::vector<DeviceHooks*>, kMaxDeviceTypes> stacks;
};

HooksRegistry& registry() {
  static HooksRegistry* r = new HooksRegistry();  // never destroyed: plugins unload late
  return *r;
}

}  // namespace

RegistrationHandle register_device_hooks(DeviceType type, DeviceHooks* hooks) {
  LOOM_CHECK_T(RegistrationError, hooks != nullptr, "register_device_hooks(", type.name(),
               "): hooks is null");
  LOOM_CHECK_T(RegistrationError, type.id > 0 && type.id < kMaxDeviceTypes,
               "register_device_hooks: the CPU has no hooks (got device type '", type.name(),
               "')");
  auto& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.stacks[type.id].push_back(hooks);
  }
  return RegistrationHandle([type, hooks] {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    auto& s = reg.stacks[type.id];
    for (auto it = s.rbegin(); it != s.rend(); ++it) {
      if (*it == hooks) {
        s.erase(std::next(it).base());
        break;
      }
    }
  });
}

DeviceHooks* find_device_hooks(DeviceType type) {
  if (type.id <= 0 || type.id >= kMaxDeviceTypes) return nullptr;
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto& s = r.stacks[type.id];
  return s.empty() ? nullptr : s.back();
}

}  // namespace loom
