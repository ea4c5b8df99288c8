#pragma once
/// @file
/// Finding, loading, checking and unloading plugins (Boost.DLL).
///
/// Search order for a plugin given by name: the folders of LOOM_PLUGIN_PATH
/// (':'-separated), then the install's plugin folder (`<dir of
/// libloom_core>/loom/plugins`). A name containing '/' or ending in ".so" is
/// an explicit path. A plugin named N lives in `libloom_N.so`. A plugin's dependencies are
/// looked up in the plugin's own folder first, then along the search path.

#include <string>
#include <string_view>
#include <vector>

namespace loom {

/// What the loader knows about one plugin.
struct PluginInfo {
  std::string name;                        ///< from the manifest
  std::string version;                     ///< from the manifest
  std::string description;                 ///< from the manifest
  std::string path;                        ///< the file it was loaded from
  std::string build_info;                  ///< from the manifest
  unsigned abi_major = 0;                  ///< ABI it was built for
  unsigned abi_minor = 0;                  ///< ABI it was built for
  std::vector<std::string> dependencies;   ///< plugins that load before it
  std::vector<std::string> registrations;  ///< one line per registration it made
};

/// A plugin file that load_all() could not load, or a folder entry it did not try, and why.
struct PluginFailure {
  std::string path;     ///< the file (or folder entry)
  std::string message;  ///< the reason
};

/// Loads and unloads plugins. Thread-safe.
class PluginLoader {
 public:
  /// The process-wide loader.
  static PluginLoader& instance();

  /// Loads a plugin by name (searched) or path (explicit), loading missing dependencies from
  /// the search path first. Throws PluginError with the file and the reason, whatever the
  /// plugin's own code throws; on failure nothing stays registered, dependencies loaded for it
  /// included. The file is checked before it is opened (a directory, a dangling link, an
  /// unreadable, empty or non-ELF file, a library for another machine, a truncated one: see
  /// Note [Checking a plugin file before dlopen] in plugin_loader.cpp). Loading an already
  /// loaded plugin (by name, or by any path to its file) returns its info. A search for N
  /// passes over folders and other machines' libraries named libloom_N.so, and refuses a
  /// libloom_N.so that holds another plugin.
  PluginInfo load(std::string_view name_or_path);
  /// Loads every libloom_*.so in the search path (the first file of each name wins; a folder
  /// or another machine's library leaves the name to later folders), dependencies first.
  /// Returns the files that failed, each with its reason; one failure never stops the others,
  /// and the successful ones stay loaded. Unless skipped is null, it receives the folder
  /// entries that were not tried, each with the reason: other file names, folders, libraries
  /// for another machine, a name already taken by an earlier file.
  std::vector<PluginFailure> load_all(std::vector<PluginFailure>* skipped);
  /// load_all(nullptr); a function of its own, so that programs built before skipped existed
  /// keep linking against libloom_core.
  std::vector<PluginFailure> load_all();
  /// Note [Device plugins at init]: loads device plugin `plugin` only where its driver
  /// library (`driver_library`, e.g. "libcuda.so.1") can be opened. Elsewhere no device of its
  /// type can exist, and loading the backend would map its libraries for nothing (cuBLAS and
  /// cuDNN: ~55 ms, ~220 MB), so it records why instead (DeviceType::set_missing_reason): a
  /// device string of that type then says that no driver is there, as PyTorch's "Found no
  /// NVIDIA driver on your system", rather than "unknown device type". A load that fails is
  /// recorded the same way. Never throws; load(plugin) still loads it anywhere.
  void load_if_driver(std::string_view plugin, std::string_view device_type,
                      const char* driver_library, std::string_view driver_name) noexcept;
  /// Unloads a plugin: undoes exactly its registrations (its file stays mapped until exit:
  /// Note [Unload keeps code mapped] in plugin_loader.cpp). Throws
  /// PluginError (and changes nothing) while another loaded plugin depends on it or while
  /// tensors from its allocators are alive.
  void unload(std::string_view name);
  /// Loaded plugins, in load order.
  std::vector<PluginInfo> loaded() const;
  /// True if a plugin of that name is loaded.
  bool is_loaded(std::string_view name) const;
  /// The folders searched, in order.
  std::vector<std::string> search_path() const;
  /// The install's plugin folder (next to libloom_core).
  static std::string default_plugin_dir();

 private:
  PluginLoader();
  ~PluginLoader();
  struct Impl;
  Impl* impl_;
};

}  // namespace loom
