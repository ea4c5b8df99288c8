#include "loom/core/device.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <map>
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
// Why a device type is missing (DeviceType::set_missing_reason); read only on the error path.
struct MissingReasons {
  std::mutex mu;
  std::map<std::string, std::string, std::less<>> reasons;
};
MissingReasons& missing() {
  static auto* m = new MissingReasons();  // never destroyed: errors may be raised during exit
  return *m;
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
  if (i < 0) {
    // Say which case this is, as PyTorch tells "no NVIDIA driver" from "not compiled with
    // CUDA": the program's init decided not to load the type's plugin (and recorded why), or
    // no loaded plugin provides the type (a plugin that is loaded but finds no device keeps
    // its type registered; its allocator and hooks then say why there is no device).
    const std::string reason = missing_reason(name);
    if (!reason.empty()) {
      LOOM_THROW(DeviceError, "device type '", name, "' is not available: ", reason,
                 "; registered device types: ", table().known());
    }
    LOOM_THROW(DeviceError, "unknown device type '", name,
               "': no loaded plugin provides it; registered device types: ", table().known(),
               " (every type but cpu and meta is registered by the plugin that provides it, "
               "when that plugin is loaded)");
  }
  return DeviceType{static_cast<int8_t>(i)};
}

void DeviceType::set_missing_reason(std::string_view name, std::string reason) {
  MissingReasons& m = missing();
  std::lock_guard<std::mutex> lock(m.mu);
  if (reason.empty()) {
    if (auto it = m.reasons.find(name); it != m.reasons.end()) m.reasons.erase(it);
  } else {
    m.reasons.insert_or_assign(std::string(name), std::move(reason));
  }
}

std::string DeviceType::missing_reason(std::string_view name) {
  MissingReasons& m = missing();
  std::lock_guard<std::mutex> lock(m.mu);
  const auto it = m.reasons.find(name);
  return it == m.reasons.end() ? std::string() : it->second;
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
    const bool digits =
        !idx.empty() && idx.size() <= 5 &&
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
