#include "loom/core/device.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <mutex>

#include "absl/strings/str_join.h"
#include "loom/core/error.h"

namespace loom {
namespace {
// Names are written once under the mutex and never change, so readers need no lock
// once they have seen the count.
struct DeviceTypeTable {
  std::mutex mu;
  std::array<std::string, kMaxDeviceTypes> names;
  std::atomic<int> count{0};
  DeviceTypeTable() {
    names[0] = "cpu";
    names[1] = "meta";
    count.store(2);
  }
  int find(std::string_view name) const {
    const int n = count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      if (names[i] == name) return i;
    }
    return -1;
  }
  std::string known() const {
    std::vector<std::string> v(names.begin(), names.begin() + count.load());
    return absl::StrJoin(v, ", ");
  }
};
DeviceTypeTable& table() {
  static DeviceTypeTable t;
  return t;
}
bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}
}  // namespace

DeviceType DeviceType::register_type(std::string_view name) {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (int i = t.find(name); i >= 0) return DeviceType{static_cast<int8_t>(i)};
  LOOM_CHECK_T(RegistrationError, valid_name(name), "register device type: '", name,
               "' is not a valid device type name (lower-case letters, digits, '_')");
  const int n = t.count.load();
  LOOM_CHECK_T(RegistrationError, n < kMaxDeviceTypes, "register device type '", name,
               "': the table of ", kMaxDeviceTypes, " device types is full (", t.known(), ")");
  t.names[n] = std::string(name);
  t.count.store(n + 1, std::memory_order_release);
  return DeviceType{static_cast<int8_t>(n)};
}

DeviceType DeviceType::from_name(std::string_view name) {
  const int i = table().find(name);
  LOOM_CHECK_T(DeviceError, i >= 0, "unknown device type '", name,
               "'; registered device types: ", table().known(),
               " (a device type is registered by the plugin that provides it)");
  return DeviceType{static_cast<int8_t>(i)};
}

bool DeviceType::is_registered(std::string_view name) { return table().find(name) >= 0; }

std::vector<DeviceType> DeviceType::all() {
  std::vector<DeviceType> out;
  const int n = table().count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) out.push_back(DeviceType{static_cast<int8_t>(i)});
  return out;
}

std::string_view DeviceType::name() const { return table().names[id]; }

Device::Device(std::string_view spec) {
  const auto colon = spec.find(':');
  type_ = DeviceType::from_name(spec.substr(0, colon));
  if (colon != std::string_view::npos) {
    // As c10::Device: a plain decimal index without sign or leading zeros.
    const auto idx = spec.substr(colon + 1);
    const bool digits = !idx.empty() && idx.size() <= 5 &&
                        std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                        (idx.size() == 1 || idx[0] != '0');
    int value = -1;
    if (digits) std::from_chars(idx.data(), idx.data() + idx.size(), value);
    LOOM_CHECK_T(DeviceError, digits && value < 32768, "invalid device string '", spec,
                 "': expected 'type' or 'type:index' with a non-negative index, e.g. 'cuda:0'");
    index_ = static_cast<int16_t>(value);
  }
  LOOM_CHECK_T(DeviceError, type_.id != 0 || index_ <= 0,
               "CPU device index must be -1 or zero, got ", index_);
}

std::string Device::str() const {
  std::string s(type_.name());
  if (index_ >= 0) loom::str_append(&s, ":", index_);
  return s;
}

std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

}  // namespace loom
