#pragma once
/// @file
/// Library-wide state: init(), version(), manual_seed(), grad mode and NoGradGuard, devices,
/// plugins.
/// Part of loom/stable.hpp (include that).

#include <cstdint>
#include <string>
#include <vector>

#include "loom/stable/dtype.hpp"

namespace loom::stable {

/// Loads the default plugins (ops_core, and ops_nn / cpu_onednn / cuda when installed);
/// idempotent. Call once before using ops.
inline void init() { check(api()->Init()); }
/// Loom's version ("0.1.0").
inline std::string version() { return api()->VersionString(); }
/// Seeds every generator (CPU and loaded devices).
inline void manual_seed(uint64_t seed) { check(api()->ManualSeed(seed)); }
/// Whether this thread records gradients.
inline bool grad_enabled() { return api()->GradEnabled(); }
/// Turns grad mode on or off on this thread; returns the previous setting.
inline bool set_grad_enabled(bool enabled) { return api()->SetGradEnabled(enabled); }

/// Turns grad mode off for its scope (torch.no_grad()) and restores the previous mode.
class NoGradGuard {
 public:
  /// Turns grad mode off.
  NoGradGuard() : prev_(api()->SetGradEnabled(false)) {}
  /// Restores the previous mode.
  ~NoGradGuard() { api()->SetGradEnabled(prev_); }
  /// Not copyable.
  NoGradGuard(const NoGradGuard&) = delete;
  /// Not copyable.
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Devices.
namespace device {
/// The number of usable devices of a type ("cuda"); 0 with no plugin or no usable device.
inline int32_t count(const char* type) {
  int32_t n = 0;
  check(api()->DeviceCount(type, &n, nullptr));
  return n;
}
/// Why count(type) is 0 ("" when it is not), a sentence from the device plugin.
inline std::string unavailable_reason(const char* type) {
  int32_t n = 0;
  const char* reason = nullptr;
  check(api()->DeviceCount(type, &n, &reason));
  return reason != nullptr ? reason : "";
}
/// True if at least one device of the type is usable.
inline bool is_available(const char* type) { return count(type) > 0; }
/// The native current stream of a device ("cuda:0": a cudaStream_t); nullptr without streams.
inline void* current_stream(const Device& device) {
  void* s = nullptr;
  check(api()->DeviceCurrentStream(device.c_str(), &s));
  return s;
}
/// Waits until the device has finished its queued work.
inline void synchronize(const Device& device) { check(api()->DeviceSynchronize(device.c_str())); }
}  // namespace device

/// Plugins.
namespace plugins {
/// A loaded plugin's name and version.
struct PluginInfo {
  std::string name;     ///< e.g. "ops_core"
  std::string version;  ///< the plugin's own version
};
/// Loads a plugin by name ("cpu_onednn") or path to a .so; throws PluginError with the
/// loader's reason.
inline void load(const std::string& name_or_path) {
  check(api()->PluginLoad(name_or_path.c_str()));
}
/// Unloads a plugin by name (its registrations are undone).
inline void unload(const std::string& name) { check(api()->PluginUnload(name.c_str())); }
/// The loaded plugins.
inline std::vector<PluginInfo> list() {
  size_t n = 0;
  check(api()->PluginCount(&n));
  std::vector<PluginInfo> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    const char* ver = nullptr;
    check(api()->PluginInfo(i, &name, &ver));
    out.push_back({name != nullptr ? name : "", ver != nullptr ? ver : ""});
  }
  return out;
}
/// True if a plugin of that name is loaded.
inline bool is_loaded(const std::string& name) {
  for (const PluginInfo& p : list()) {
    if (p.name == name) return true;
  }
  return false;
}
}  // namespace plugins

}  // namespace loom::stable
