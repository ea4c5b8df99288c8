#pragma once
/// @file
/// Devices: a device type (registered at run time) plus an index.
///
/// Note [Open device types]: there is no closed enum of devices. "cpu" is
/// built in with id 0; every other type ("cuda", "npu", a test's "fake") is
/// registered by the plugin that brings it, and gets its own backend dispatch
/// key at the same moment (see dispatch_key.h).

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

/// A small integer naming a registered device type. 0 is always "cpu".
struct DeviceType {
  /// Index in the device-type table (0 = cpu, 1 = meta, then in registration order).
  int8_t id = 0;
  /// The built-in CPU type.
  static constexpr DeviceType cpu() { return DeviceType{0}; }
  /// The built-in meta type: tensors with sizes, strides and dtype but no data (Note [Meta
  /// tensors] in allocator.cpp).
  static constexpr DeviceType meta() { return DeviceType{1}; }
  /// Registers a device type by name (idempotent: the same name returns the same id).
  /// Throws RegistrationError when the table (32 types) is full or the name is malformed.
  static DeviceType register_type(std::string_view name);
  /// Looks up a registered type; throws DeviceError if absent, saying why (the reason recorded
  /// by set_missing_reason, else that no loaded plugin provides it) and naming the known types.
  static DeviceType from_name(std::string_view name);
  /// Records why no loaded plugin provides device type `name` ("the cuda plugin was not loaded:
  /// no CUDA driver is installed"), for from_name's error; an empty reason forgets it. Whoever
  /// decides not to load a device plugin (an init function) says so here.
  static void set_missing_reason(std::string_view name, std::string reason);
  /// The reason recorded for `name` by set_missing_reason, or "".
  static std::string missing_reason(std::string_view name);
  /// True if a type with this name has been registered.
  static bool is_registered(std::string_view name);
  /// Every registered type, in registration order (cpu and meta first).
  static std::vector<DeviceType> all();
  /// The registered name ("cpu", "cuda", ...).
  std::string_view name() const;
  /// Equality.
  friend bool operator==(DeviceType a, DeviceType b) { return a.id == b.id; }
};

/// Maximum number of device types (including cpu).
inline constexpr int kMaxDeviceTypes = 32;

/// A device: type plus index (-1 means "the current device of that type").
class Device {
 public:
  /// The CPU.
  constexpr Device() = default;
  /// A device of the given type and index.
  constexpr Device(DeviceType type, int16_t index = -1) : type_(type), index_(index) {}
  /// Parses "cpu", "cuda", "cuda:1". Throws DeviceError on unknown types or bad syntax.
  explicit Device(std::string_view spec);
  /// The device type.
  DeviceType type() const { return type_; }
  /// The index, -1 if unspecified.
  int16_t index() const { return index_; }
  /// True for the CPU.
  bool is_cpu() const { return type_.id == 0; }
  /// True for the meta device (no data).
  bool is_meta() const { return type_ == DeviceType::meta(); }
  /// "cpu", "cuda:0".
  std::string str() const;
  /// Equality of type and index.
  friend bool operator==(Device a, Device b) { return a.type_ == b.type_ && a.index_ == b.index_; }

 private:
  DeviceType type_{};
  int16_t index_ = -1;
};

/// Streams Device::str().
std::ostream& operator<<(std::ostream& os, Device d);

/// The CPU device.
inline constexpr Device kCPU{};

}  // namespace loom
