#pragma once
/// @file
/// RAII registration handles and the origin every registration remembers.
///
/// Note [Registration origin]: every def/impl/fallback/allocator/device type
/// records where it came from (plugin name, file:line). The plugin loader
/// collects the handles a plugin creates while it registers, so unloading (or a
/// failed load) destroys exactly those, and error messages can say who
/// registered what.

#include <functional>
#include <source_location>
#include <string>
#include <string_view>

namespace loom {

/// Where a registration came from.
struct Origin {
  /// Plugin name, or "" for code linked into the process (static registration).
  std::string plugin;
  /// Source file of the registration call.
  std::string file;
  /// Source line of the registration call.
  int line = 0;
  /// "plugin 'nn' at nn/linear.cpp:12", or "static registration at demo.cpp:7".
  std::string str() const;
  /// The origin of a call made at loc, attributed to the plugin currently registering (if any).
  static Origin here(std::source_location loc = std::source_location::current());
  /// A source path as Origin records it: relative to the Loom repository root
  /// ("ops/core/cpu/binary.cpp", even though "core" is a top-level folder too). A relative
  /// path or one from another checkout starts at its first top-level folder; a path with
  /// none ("/home/me/myplugin/kernel.cpp") is kept whole.
  static std::string relative_path(std::string_view file);
};

/// The plugin on whose behalf this thread is registering right now ("" if none).
/// Set by the plugin loader around a plugin's register function.
const std::string& current_registering_plugin();

/// Sets current_registering_plugin() for the lifetime of the guard (used by the loader).
class RegisteringPluginGuard {
 public:
  /// Attributes registrations on this thread to plugin until destroyed.
  explicit RegisteringPluginGuard(std::string plugin);
  /// Restores the previous attribution.
  ~RegisteringPluginGuard();
  RegisteringPluginGuard(const RegisteringPluginGuard&) = delete;
  RegisteringPluginGuard& operator=(const RegisteringPluginGuard&) = delete;

 private:
  std::string previous_;
};

/// Owns one registration: destroying (or reset()ting) it undoes the registration.
/// Move-only, like PyTorch's RegistrationHandleRAII.
class RegistrationHandle {
 public:
  /// An empty handle.
  RegistrationHandle() = default;
  /// A handle whose destruction runs undo.
  explicit RegistrationHandle(std::function<void()> undo) : undo_(std::move(undo)) {}
  /// Takes over other's registration.
  RegistrationHandle(RegistrationHandle&& other) noexcept : undo_(std::move(other.undo_)) {
    other.undo_ = nullptr;
  }
  /// Undoes the current registration and takes over other's.
  RegistrationHandle& operator=(RegistrationHandle&& other) noexcept {
    if (this != &other) {
      reset();
      undo_ = std::move(other.undo_);
      other.undo_ = nullptr;
    }
    return *this;
  }
  RegistrationHandle(const RegistrationHandle&) = delete;
  RegistrationHandle& operator=(const RegistrationHandle&) = delete;
  /// Undoes the registration now (idempotent).
  void reset() {
    if (undo_) {
      auto undo = std::move(undo_);
      undo_ = nullptr;
      undo();
    }
  }
  /// True while the registration is held.
  explicit operator bool() const { return static_cast<bool>(undo_); }
  /// Undoes the registration.
  ~RegistrationHandle() { reset(); }

 private:
  std::function<void()> undo_;
};

}  // namespace loom
