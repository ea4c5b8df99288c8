#include "loom/dispatcher/plugin.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace loom {
namespace {
thread_local PluginContext* tls_opening_plugin = nullptr;
}

namespace detail {

PluginContext* exchange_opening_plugin(PluginContext* ctx) {
  return std::exchange(tls_opening_plugin, ctx);
}

bool defer_library_block_to_opening_plugin(const LibraryBlock& block) {
  if (!tls_opening_plugin) return false;
  tls_opening_plugin->pending_blocks.push_back(block);
  return true;
}

bool defer_on_load_to_opening_plugin(void (*hook)(PluginContext&)) {
  if (!tls_opening_plugin) return false;
  tls_opening_plugin->pending_on_load.push_back(hook);
  return true;
}

OnLoadRegistrar::OnLoadRegistrar(void (*hook)(PluginContext&)) {
  // Outside a plugin load (a plugin source linked into a test binary) the hook has no
  // context to run in; such binaries register what they need themselves.
  defer_on_load_to_opening_plugin(hook);
}

int run_plugin_registration(LoomPluginContext* c, char* error, size_t error_capacity) {
  auto* ctx = reinterpret_cast<PluginContext*>(c);
  // A plugin's own code may throw anything; what it threw, and from where, goes back to the
  // loader as text, since nothing but a status may cross the C manifest's boundary.
  constexpr const char* kNonStandard = "a non-standard exception (not derived from std::exception)";
  try {
    RegisteringPluginGuard guard(ctx->name());
    for (auto* hook : ctx->pending_on_load) {
      try {
        hook(*ctx);
      } catch (const std::exception&) {
        throw;
      } catch (...) {
        throw Error(loom::str_cat("a LOOM_PLUGIN_ON_LOAD hook threw ", kNonStandard));
      }
    }
    // Definitions first, then kernels: the order of static initialisers across a plugin's
    // files is the link order, which must not decide whether an impl finds its schema.
    std::vector<LibraryBlock> blocks = ctx->pending_blocks;
    std::stable_partition(blocks.begin(), blocks.end(),
                          [](const LibraryBlock& b) { return b.kind != Library::Kind::Impl; });
    for (const LibraryBlock& block : blocks) {
      try {
        ctx->add_library(run_library_block(block));
      } catch (const std::exception& e) {
        throw Error(loom::str_cat("in the block at ", block.file, ":", block.line, ": ", e.what()));
      } catch (...) {
        throw Error(loom::str_cat("in the block at ", block.file, ":", block.line, ": it threw ",
                                  kNonStandard));
      }
    }
    return 0;
  } catch (const std::exception& e) {
    if (error && error_capacity > 0) std::snprintf(error, error_capacity, "%s", e.what());
    return 1;
  } catch (...) {
    if (error && error_capacity > 0) {
      std::snprintf(error, error_capacity, "registration threw %s", kNonStandard);
    }
    return 1;
  }
}

}  // namespace detail

void PluginContext::keep(RegistrationHandle handle, std::string what) {
  items_.push_back(Item{std::move(handle), std::nullopt});
  log_.push_back(std::move(what));
}

void PluginContext::register_allocator(DeviceType type, Allocator* allocator) {
  keep(loom::register_allocator(type, allocator),
       loom::str_cat("allocator '", allocator->name(), "' for device type '", type.name(), "'"));
  allocators_.push_back(allocator);
}

DeviceType PluginContext::register_device_type(std::string_view name) {
  const DeviceType t = DeviceType::register_type(name);
  log_.push_back(loom::str_cat("device type '", name, "' (dispatch key ",
                               dispatch_key_name(backend_key(t)), ")"));
  return t;
}

void PluginContext::add_library(Library library) {
  for (const auto& line : library.log()) log_.push_back(line);
  items_.push_back(Item{RegistrationHandle(), std::move(library)});
}

std::vector<std::string> PluginContext::log() const { return log_; }

void PluginContext::clear() {
  while (!items_.empty()) items_.pop_back();
  allocators_.clear();
}

}  // namespace loom
