#pragma once
/// @file
/// Writing a plugin: LOOM_PLUGIN (the manifest), LOOM_PLUGIN_ON_LOAD (code
/// that runs before the plugin's LOOM_LIBRARY blocks), and PluginContext.
///
/// A minimal plugin:
/// @code
///   LOOM_PLUGIN("myops", "1.0", "my custom ops");
///   LOOM_LIBRARY(myops, m) { m.def("twice(Tensor x) -> Tensor"); }
///   LOOM_LIBRARY_IMPL(myops, CPU, m) { m.impl("twice", &twice_cpu); }
/// @endcode
/// built with `loom_add_plugin(myops SOURCES myops.cpp)`.

#include <string>
#include <vector>

#include "loom/core/allocator.h"
#include "loom/dispatcher/library.h"
#include "loom/dispatcher/plugin_abi.h"

namespace loom {

/// What a plugin registers while it loads; owns all of it. The loader destroys it
/// (newest first) on unload or when registration fails.
class PluginContext {
 public:
  /// A context for the named plugin.
  explicit PluginContext(std::string name) : name_(std::move(name)) {}
  PluginContext(const PluginContext&) = delete;
  PluginContext& operator=(const PluginContext&) = delete;
  /// Undoes everything, newest first.
  ~PluginContext() { clear(); }

  /// The plugin's name.
  const std::string& name() const { return name_; }
  /// Keeps a registration alive until the plugin unloads; what describes it for `loom plugin
  /// check`.
  void keep(RegistrationHandle handle, std::string what);
  /// Registers the allocator of a device type; unloading is refused while it has live blocks.
  void register_allocator(DeviceType type, Allocator* allocator);
  /// Registers (or finds) a device type.
  DeviceType register_device_type(std::string_view name);
  /// Runs one deferred LOOM_LIBRARY block and keeps its registrations.
  void add_library(Library library);
  /// One line per registration, in order.
  std::vector<std::string> log() const;
  /// Allocators registered through this context.
  const std::vector<Allocator*>& allocators() const { return allocators_; }
  /// Undoes everything, newest first.
  void clear();

  /// Blocks deferred while the plugin's .so was opened (Note [Deferred plugin registration]).
  std::vector<detail::LibraryBlock> pending_blocks;
  /// LOOM_PLUGIN_ON_LOAD hooks deferred likewise; they run before the blocks.
  std::vector<void (*)(PluginContext&)> pending_on_load;

 private:
  struct Item {
    // Exactly one of the two is set.
    RegistrationHandle handle;
    std::optional<Library> library;
  };
  std::string name_;
  std::vector<Item> items_;
  std::vector<std::string> log_;
  std::vector<Allocator*> allocators_;
};

namespace detail {
/// If a plugin is being opened on this thread, appends block to its pending list and returns true.
bool defer_library_block_to_opening_plugin(const LibraryBlock& block);
/// Same for an on-load hook; returns false (and does nothing) outside a plugin load.
bool defer_on_load_to_opening_plugin(void (*hook)(PluginContext&));
/// The default register function of LOOM_PLUGIN: runs the deferred hooks and blocks.
int run_plugin_registration(LoomPluginContext* ctx, char* error, size_t error_capacity);
/// Records an on-load hook at static-initialisation time.
struct OnLoadRegistrar {
  explicit OnLoadRegistrar(void (*hook)(PluginContext&));
};
}  // namespace detail

}  // namespace loom

#ifndef LOOM_BUILD_INFO
/// Build information stamped into a plugin's manifest.
#define LOOM_BUILD_INFO "gcc " __VERSION__ ", Loom " LOOM_VERSION_STRING
#endif

/// Declares the plugin (once per plugin): name, version, description, then the names of
/// plugins it depends on.
#define LOOM_PLUGIN(NAME, VERSION, DESCRIPTION, ...)                                      \
  extern "C" __attribute__((visibility("default"))) const LoomPluginManifest*             \
  loom_plugin_manifest(void) {                                                            \
    static const char* const deps[] = {__VA_ARGS__ __VA_OPT__(, ) nullptr};               \
    static const LoomPluginManifest manifest = {sizeof(LoomPluginManifest),               \
                                                LOOM_PLUGIN_ABI_MAJOR,                    \
                                                LOOM_PLUGIN_ABI_MINOR,                    \
                                                NAME,                                     \
                                                VERSION,                                  \
                                                DESCRIPTION,                              \
                                                deps,                                     \
                                                LOOM_BUILD_INFO,                          \
                                                &::loom::detail::run_plugin_registration, \
                                                nullptr};                                 \
    return &manifest;                                                                     \
  }

/// Code that runs when the plugin loads, before its LOOM_LIBRARY blocks (register a device
/// type, an allocator, a generator): `LOOM_PLUGIN_ON_LOAD(ctx) { ctx.register_allocator(...); }`
#define LOOM_PLUGIN_ON_LOAD(ctx) LOOM_PLUGIN_ON_LOAD_(ctx, LOOM_CONCAT(on_load_, __COUNTER__))
/// Implementation of LOOM_PLUGIN_ON_LOAD.
#define LOOM_PLUGIN_ON_LOAD_(ctx, uid)                                     \
  static void LOOM_CONCAT(loom_plugin_hook_, uid)(::loom::PluginContext&); \
  static const ::loom::detail::OnLoadRegistrar LOOM_CONCAT(                \
      loom_plugin_hook_reg_, uid)(&LOOM_CONCAT(loom_plugin_hook_, uid));   \
  void LOOM_CONCAT(loom_plugin_hook_, uid)(::loom::PluginContext & ctx)
