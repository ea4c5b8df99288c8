#include "loom/dispatcher/plugin_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "loom/dispatcher/plugin.h"

namespace loom {
namespace detail {
PluginContext* exchange_opening_plugin(PluginContext* ctx);
}

namespace fs = std::filesystem;

namespace {
struct LoadedPlugin {
  PluginInfo info;
  const LoomPluginManifest* manifest = nullptr;
  boost::dll::shared_library lib;
  std::unique_ptr<PluginContext> ctx;  // declared after lib, so destroyed before it: its
                                       // registrations hold code that lives in lib
};

bool valid_plugin_name(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

bool is_explicit_path(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.ends_with(".so");
}

// Note [Resident plugin files]: dlclose does not always unmap a file. A plugin that
// defines a GNU unique symbol (g++ emits them for function-local statics of inline
// std:: templates; std::to_string is enough) or was linked with -z nodelete stays in
// memory after its last dlclose, and the next dlopen of it returns the resident copy
// without running its static initialisers again. Those initialisers are what queue the
// plugin's LOOM_LIBRARY blocks and on-load hooks (Note [Deferred plugin registration]),
// so a reload would register nothing and still report success. The loader therefore
// remembers, per file, what its initialisers queued when they did run, and replays that
// when it opens a file that was already resident. The block and hook pointers stay valid
// because the file never left memory. A file resident without such a record was loaded
// outside the loader (its blocks ran as static registrations), and is refused.

// True if the file is mapped into the process right now (dlopen would not initialise it).
bool is_resident(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

// What a file's static initialisers queued (Note [Resident plugin files]).
struct DeferredRegistrations {
  std::vector<detail::LibraryBlock> blocks;
  std::vector<void (*)(PluginContext&)> on_load;
};
using DeferredByFile = std::map<std::string, DeferredRegistrations>;

// Drops a plugin (unloaded, or whose load failed): registrations first, then its retired
// kernels, then the file. Forgets what the file queued once it has really left memory, as
// its block pointers would dangle and a later dlopen runs its initialisers afresh.
// Note [Unload keeps code mapped]: unloading a plugin that loaded successfully undoes its
// registrations but keeps its file mapped until exit. Objects it made may outlive its
// registrations (a tensor whose memory has a deleter in the plugin, a generator, autograd
// metadata), and closing the file would turn them into dangling code pointers: a crash in
// the host, which a plugin must never cause. A refused load, which registered nothing that
// survived, is closed at once. Reloading a parked file replays its queued registrations
// (Note [Resident plugin files]).
void discard(std::unique_ptr<PluginContext>& ctx, boost::dll::shared_library& lib,
             const std::string& name, const std::string& path, DeferredByFile& deferred,
             std::vector<boost::dll::shared_library>* park = nullptr) {
  if (ctx) ctx->clear();
  if (!name.empty()) Dispatcher::instance().release_retired(name);
  ctx.reset();
  if (park) {
    park->push_back(std::move(lib));
    return;
  }
  lib.unload();
  if (!is_resident(path)) deferred.erase(path);
}
}  // namespace

// Boost.DLL reports a failed dlopen with a generic system error ("Bad file descriptor");
// the dynamic linker's own words say what is wrong (not ELF, wrong class, a missing symbol).
std::string why_not_loadable(const std::string& path, const std::exception& boost_error) {
  {
    std::ifstream f(path, std::ios::binary);
    char magic[4] = {};
    f.read(magic, 4);
    if (f.gcount() < 4 || std::memcmp(magic,
                                      "\x7f"
                                      "ELF",
                                      4) != 0) {
      return "it is not a shared library (no ELF header)";
    }
  }
  if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(h);  // loadable after all: keep Boost's reason
    return boost_error.what();
  }
  const char* err = ::dlerror();
  return err ? std::string(err) : std::string(boost_error.what());
}

struct PluginLoader::Impl {
  mutable std::recursive_mutex mu;
  std::vector<std::unique_ptr<LoadedPlugin>> plugins;  // load order
  std::set<std::string> loading;                       // cycle detection
  DeferredByFile deferred_by_file;                     // Note [Resident plugin files]
  std::vector<boost::dll::shared_library> parked;      // Note [Unload keeps code mapped]
  std::map<std::string, std::string> failed_init;      // files whose initialisers threw
  std::vector<std::string> dependent_dirs;             // folders of plugins loading their deps

  LoadedPlugin* find(std::string_view name) {
    for (auto& p : plugins) {
      if (p->info.name == name) return p.get();
    }
    return nullptr;
  }
};

PluginLoader::PluginLoader() : impl_(new Impl()) {}
PluginLoader::~PluginLoader() = default;  // leaked singleton; never runs

PluginLoader& PluginLoader::instance() {
  static auto* loader = new PluginLoader();  // leaked: plugins stay loaded until exit
  return *loader;
}

std::string PluginLoader::default_plugin_dir() {
  const fs::path core = boost::dll::this_line_location().string();
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(core.parent_path() / "loom" / "plugins", ec);
  return ec ? (core.parent_path() / "loom" / "plugins").string() : dir.string();
}

std::vector<std::string> PluginLoader::search_path() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  // While a plugin's dependencies load, its own folder comes first: a set of plugins
  // shipped together in one folder finds its members without LOOM_PLUGIN_PATH.
  std::vector<std::string> dirs(impl_->dependent_dirs.rbegin(), impl_->dependent_dirs.rend());
  if (const char* env = std::getenv("LOOM_PLUGIN_PATH")) {
    for (absl::string_view d : absl::StrSplit(env, ':', absl::SkipEmpty())) dirs.emplace_back(d);
  }
  dirs.push_back(default_plugin_dir());
  return dirs;
}

PluginInfo PluginLoader::load(std::string_view name_or_path) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  fs::path path;
  const bool by_name = !is_explicit_path(name_or_path);
  // A search for plugin N that finds libloom_N.so holding another plugin found nothing.
  auto wrong_plugin = [&](const std::string& file, const std::string& actual) {
    return loom::str_cat("cannot load plugin '", name_or_path, "': the file found for it, '", file,
                         "', is plugin '", actual, "'");
  };
  if (!by_name) {
    path = fs::path(name_or_path);
    std::error_code ec;
    LOOM_CHECK_T(PluginError, fs::is_regular_file(path, ec), "cannot load plugin '", name_or_path,
                 "': no such file");
  } else {
    if (LoadedPlugin* p = impl_->find(name_or_path)) return p->info;
    const std::string file = loom::str_cat("libloom_", name_or_path, ".so");
    const auto dirs = search_path();
    for (const auto& d : dirs) {
      std::error_code ec;
      if (fs::is_regular_file(fs::path(d) / file, ec)) {
        path = fs::path(d) / file;
        break;
      }
    }
    LOOM_CHECK_T(PluginError, !path.empty(), "cannot find plugin '", name_or_path, "': no ", file,
                 " in the plugin search path (", absl::StrJoin(dirs, ":"),
                 "); set LOOM_PLUGIN_PATH or give a path");
  }
  // One file, one identity: "dir/./libloom_x.so", "../d/libloom_x.so" and a symlink all name
  // the file dlopen would hand back again without running its initialisers, so they must
  // find the plugin already loaded from it rather than open it a second time.
  {
    std::error_code ec;
    fs::path canonical = fs::canonical(path, ec);
    path = ec ? fs::absolute(path).lexically_normal() : std::move(canonical);
  }
  const std::string where = path.string();
  for (auto& p : impl_->plugins) {
    if (p->info.path != where) continue;
    LOOM_CHECK_T(PluginError, !by_name || p->info.name == name_or_path,
                 wrong_plugin(where, p->info.name));
    return p->info;
  }

  auto ctx = std::make_unique<PluginContext>("");
  boost::dll::shared_library lib;
  const bool was_resident = is_resident(where);
  {
    // Static initialisers of the plugin run inside this call and only queue their blocks
    // (Note [Deferred plugin registration]).
    PluginContext* previous = detail::exchange_opening_plugin(ctx.get());
    if (auto f = impl_->failed_init.find(where); f != impl_->failed_init.end()) {
      detail::exchange_opening_plugin(previous);
      LOOM_THROW(PluginError, "cannot load plugin file '", where,
                 "': its static initialisers threw when it was first opened (", f->second,
                 "), which leaves a half-initialised copy in this process; restart the "
                 "process to load it again");
    }
    try {
      lib.load(where, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::system_error& e) {
      detail::exchange_opening_plugin(previous);
      LOOM_THROW(PluginError, "cannot load plugin file '", where,
                 "': ", why_not_loadable(where, e));
    } catch (const std::exception& e) {
      // Not the dynamic linker: one of the plugin's own static initialisers threw.
      detail::exchange_opening_plugin(previous);
      impl_->failed_init[where] = e.what();
      LOOM_THROW(PluginError, "cannot load plugin file '", where,
                 "': one of its static initialisers threw: ", e.what());
    } catch (...) {
      detail::exchange_opening_plugin(previous);
      impl_->failed_init[where] = "a non-standard exception";
      LOOM_THROW(PluginError, "cannot load plugin file '", where,
                 "': one of its static initialisers threw a non-standard exception");
    }
    detail::exchange_opening_plugin(previous);
  }
  // A parked copy of this file (unloaded earlier) is superseded by the new handle.
  std::erase_if(impl_->parked, [&](const boost::dll::shared_library& l) {
    return l.is_loaded() && l.location().string() == where;
  });
  // A failure leaves no trace: the plugin's own registrations and file go first, then the
  // dependencies this call loaded for it (newest first), which nothing else asked for.
  const size_t loaded_before = impl_->plugins.size();
  auto fail = [&](const std::string& name, std::string why) -> PluginError {
    discard(ctx, lib, name, where, impl_->deferred_by_file);
    while (impl_->plugins.size() > loaded_before) {
      const std::string dep = impl_->plugins.back()->info.name;
      try {
        unload(dep);
      } catch (const std::exception& e) {
        loom::str_append(&why, "; plugin '", dep, "', loaded for it, stays loaded: ", e.what());
        break;
      }
    }
    return PluginError(why);
  };
  // Note [Resident plugin files]: record what the initialisers queued, or replay it.
  bool loaded_elsewhere = false;
  if (!was_resident) {
    impl_->deferred_by_file[where] =
        DeferredRegistrations{ctx->pending_blocks, ctx->pending_on_load};
  } else if (auto it = impl_->deferred_by_file.find(where); it != impl_->deferred_by_file.end()) {
    ctx->pending_blocks = it->second.blocks;
    ctx->pending_on_load = it->second.on_load;
  } else {
    loaded_elsewhere = true;
  }

  if (!lib.has(LOOM_PLUGIN_ENTRY_POINT)) {
    throw fail("", loom::str_cat("'", where,
                                 "' is not a Loom plugin: it does not export the entry "
                                 "point '",
                                 LOOM_PLUGIN_ENTRY_POINT, "'"));
  }
  const LoomPluginManifest* m = nullptr;
  try {
    m = lib.get<const LoomPluginManifest*()>(LOOM_PLUGIN_ENTRY_POINT)();
  } catch (const std::exception& e) {
    throw fail("", loom::str_cat("plugin '", where, "': its entry point threw: ", e.what()));
  }
  if (m == nullptr) {
    throw fail("", loom::str_cat("plugin '", where, "': its entry point returned no manifest"));
  }
  if (m->struct_size < offsetof(LoomPluginManifest, abi_minor) + sizeof(uint32_t)) {
    throw fail("", loom::str_cat("plugin '", where, "': its manifest is truncated (struct_size ",
                                 m->struct_size, ")"));
  }
  if (m->abi_major != LOOM_PLUGIN_ABI_MAJOR || m->abi_minor > LOOM_PLUGIN_ABI_MINOR) {
    throw fail("", loom::str_cat("plugin '", where,
                                 "': incompatible plugin ABI version (plugin: ", m->abi_major, ".",
                                 m->abi_minor, ", current: ", LOOM_PLUGIN_ABI_MAJOR, ".",
                                 LOOM_PLUGIN_ABI_MINOR, ")"));
  }
  if (m->struct_size < sizeof(LoomPluginManifest)) {
    throw fail("", loom::str_cat("plugin '", where, "': its manifest is truncated (struct_size ",
                                 m->struct_size, ", expected ", sizeof(LoomPluginManifest), ")"));
  }
  const std::string name = m->name ? m->name : "";
  if (!valid_plugin_name(name)) {
    throw fail("", loom::str_cat("plugin '", where, "': invalid plugin name '", name,
                                 "' in its manifest (letters, digits, '_', '-', '.')"));
  }
  if (by_name && name != name_or_path) throw fail("", wrong_plugin(where, name));
  if (LoadedPlugin* other = impl_->find(name)) {
    throw fail("", loom::str_cat("plugin '", where, "': a plugin named '", name,
                                 "' is already loaded from '", other->info.path, "'"));
  }
  if (loaded_elsewhere) {
    throw fail("", loom::str_cat("plugin '", name, "' (", where,
                                 "): the file is already in the "
                                 "process without having been loaded as a plugin (linked in, or "
                                 "opened with dlopen directly), so its registrations ran at "
                                 "start-up and cannot be managed by the plugin loader"));
  }
  if (m->register_plugin == nullptr) {
    throw fail("", loom::str_cat("plugin '", name, "' (", where,
                                 "): its manifest has no register function"));
  }

  PluginInfo info;
  info.name = name;
  info.version = m->version ? m->version : "";
  info.description = m->description ? m->description : "";
  info.path = where;
  info.build_info = m->build_info ? m->build_info : "";
  info.abi_major = m->abi_major;
  info.abi_minor = m->abi_minor;
  for (const char* const* d = m->dependencies; d && *d; ++d) {
    // A dependency is a plugin name: a path here would load a file whose name nobody checks,
    // and unload() could not see that the dependency is still needed.
    if (!valid_plugin_name(*d) || is_explicit_path(*d)) {
      throw fail("", loom::str_cat("plugin '", name, "' (", where, "): invalid dependency '", *d,
                                   "' in its manifest (a plugin name, not a file: letters, "
                                   "digits, '_', '-', '.')"));
    }
    info.dependencies.emplace_back(*d);
  }

  if (impl_->loading.count(name)) {
    throw fail("", loom::str_cat("plugin '", name, "': circular dependency"));
  }
  {
    impl_->loading.insert(name);
    struct Done {
      std::set<std::string>& loading;
      const std::string& name;
      ~Done() { loading.erase(name); }
    } done{impl_->loading, name};
    for (const std::string& dep : info.dependencies) {
      if (impl_->find(dep)) continue;
      impl_->dependent_dirs.push_back(path.parent_path().string());
      try {
        load(dep);  // by name: what it loads is named dep
        impl_->dependent_dirs.pop_back();
      } catch (const std::exception& e) {
        impl_->dependent_dirs.pop_back();
        throw fail("", loom::str_cat("plugin '", name, "' (", where, ") requires plugin '", dep,
                                     "', which is not loaded and could not be loaded: ", e.what()));
      }
    }
  }

  // Register; a failure rolls everything back.
  ctx = [&] {
    auto named = std::make_unique<PluginContext>(name);
    named->pending_blocks = std::move(ctx->pending_blocks);
    named->pending_on_load = std::move(ctx->pending_on_load);
    return named;
  }();
  char error[4096] = {0};
  int rc = 0;
  try {
    rc = m->register_plugin(reinterpret_cast<LoomPluginContext*>(ctx.get()), error, sizeof(error));
  } catch (const std::exception& e) {
    rc = 1;
    std::snprintf(error, sizeof(error), "%s", e.what());
  }
  error[sizeof(error) - 1] = '\0';  // a C plugin may fill the buffer without terminating it
  if (rc != 0) {
    throw fail(name, loom::str_cat("plugin '", name, "' (", where,
                                   ") failed to register, and everything it registered was "
                                   "rolled back: ",
                                   error[0] ? error : "no reason given"));
  }
  info.registrations = ctx->log();
  auto rec = std::make_unique<LoadedPlugin>();
  rec->info = info;
  rec->manifest = m;
  rec->ctx = std::move(ctx);
  rec->lib = std::move(lib);
  impl_->plugins.push_back(std::move(rec));
  return info;
}

std::vector<PluginFailure> PluginLoader::load_all() {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  std::vector<PluginFailure> failures;
  std::set<std::string> seen;
  for (const auto& dir : search_path()) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string f = entry.path().filename().string();
      if (f.starts_with("libloom_") && f.ends_with(".so")) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string file = f.filename().string();
      const std::string name = file.substr(8, file.size() - 11);
      if (!seen.insert(name).second) continue;
      if (impl_->find(name)) continue;
      try {
        load(f.string());
      } catch (const Error& e) {
        failures.push_back(PluginFailure{f.string(), e.what()});
      }
    }
  }
  return failures;
}

void PluginLoader::unload(std::string_view name) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  auto it = std::find_if(impl_->plugins.begin(), impl_->plugins.end(),
                         [&](const auto& p) { return p->info.name == name; });
  LOOM_CHECK_T(PluginError, it != impl_->plugins.end(), "cannot unload plugin '", name,
               "': it is not loaded");
  LoadedPlugin& p = **it;
  for (const auto& other : impl_->plugins) {
    const auto& deps = other->info.dependencies;
    LOOM_CHECK_T(PluginError, std::find(deps.begin(), deps.end(), name) == deps.end(),
                 "cannot unload plugin '", name, "': plugin '", other->info.name,
                 "' depends on it; unload '", other->info.name, "' first");
  }
  for (Allocator* a : p.ctx->allocators()) {
    const AllocatorStats s = a->stats();
    LOOM_CHECK_T(PluginError, s.live_blocks == 0, "cannot unload plugin '", name,
                 "': ", s.live_blocks, s.live_blocks == 1 ? " memory block (" : " memory blocks (",
                 s.allocated_bytes, " bytes) of its allocator '", a->name(), "' for device type '",
                 DeviceType{a->device_type()}.name(),
                 "' are still held by live tensors; release them first");
  }
  if (p.manifest->unregister_plugin) {
    try {
      p.manifest->unregister_plugin(reinterpret_cast<LoomPluginContext*>(p.ctx.get()));
    } catch (...) {
      // The plugin's own hook failed; its registrations are still undone below.
    }
  }
  const std::string plugin_name = p.info.name;
  std::unique_ptr<LoadedPlugin> doomed = std::move(*it);
  impl_->plugins.erase(it);
  discard(doomed->ctx, doomed->lib, plugin_name, doomed->info.path, impl_->deferred_by_file,
          &impl_->parked);
}

std::vector<PluginInfo> PluginLoader::loaded() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  std::vector<PluginInfo> out;
  for (const auto& p : impl_->plugins) out.push_back(p->info);
  return out;
}

bool PluginLoader::is_loaded(std::string_view name) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  return impl_->find(name) != nullptr;
}

}  // namespace loom
