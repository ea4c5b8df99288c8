// `loom info`: what this installation is and what it loaded.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "commands.h"
#include "loom/core/allocator.h"
#include "loom/core/backend_flags.h"
#include "loom/core/cpu_isa.h"
#include "loom/core/device.h"
#include "loom/core/device_hooks.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/library.h"
#include "loom/dispatcher/plugin_abi.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/tools/build_config.h"
#include "paths.h"
#include "table.h"

namespace loom::cli {
namespace {

void print_build() {
  namespace bc = build_config;
  std::cout << "Build\n";
  Table t;
  t.add({"compiler", str_cat(bc::kCompiler, " (", bc::kCompilerPath, ")")});
  t.add({"build type", bc::kBuildType});
  t.add({"flags", *bc::kCxxFlags ? bc::kCxxFlags : "(none)"});
  t.add({"C++ standard", str_cat("C++", bc::kCxxStandard, " (__cplusplus ", __cplusplus, ")")});
  t.add({"system", bc::kSystem});
  t.add({"plugin ABI", str_cat(LOOM_PLUGIN_ABI_MAJOR, ".", LOOM_PLUGIN_ABI_MINOR)});
  t.print(std::cout);
  std::cout << "  options\n";
  Table options;
  for (const auto* o = bc::kOptions; o->name; ++o) options.add({o->name, o->value});
  options.print(std::cout, 4);
  std::cout << "  libraries\n";
  Table libs;
  for (const auto* l = bc::kLibraries; l->name; ++l) libs.add({l->name, l->version, l->use});
  libs.print(std::cout, 4);
}

void print_devices() {
  std::cout << "\nDevices\n";
  Table t;
  t.add({"type", "dispatch key", "allocator"});
  for (DeviceType type : DeviceType::all()) {
    const Allocator* a = find_allocator(type);
    t.add({std::string(type.name()), dispatch_key_name(backend_key(type)),
           a ? std::string(a->name()) : "-"});
  }
  t.print(std::cout);
}

// One section per device type whose plugin registered hooks (Note [Device hooks]): how many
// devices, why none, and what the plugin reports (library versions, compiled architectures,
// one line per device, warnings). Generic: nothing here knows CUDA.
void print_device_hooks() {
  for (DeviceType type : DeviceType::all()) {
    const DeviceHooks* hooks = find_device_hooks(type);
    if (hooks == nullptr) continue;
    std::cout << "\nDevice type '" << type.name() << "'\n";
    Table t;
    const int count = hooks->device_count();
    t.add({"available", count > 0 ? str_cat("yes, ", count, " device", count == 1 ? "" : "s")
                                  : str_cat("no: ", hooks->unavailable_reason())});
    for (const auto& [key, value] : hooks->info()) t.add({key, value});
    t.print(std::cout);
  }
}

void print_backend_switches() {
  std::cout << "\nBackend switches\n";
  Table t;
  auto on_off = [](bool on) { return std::string(on ? "on" : "off"); };
  t.add({"deterministic", on_off(backends::deterministic()), "(LOOM_DETERMINISTIC)"});
  t.add({"benchmark", on_off(backends::benchmark()),
         backends::deterministic() ? "(LOOM_CUDNN_BENCHMARK; ignored: deterministic is on)"
                                   : "(LOOM_CUDNN_BENCHMARK)"});
  t.add({"allow TF32", on_off(backends::allow_tf32()), "(LOOM_ALLOW_TF32)"});
  t.add({"CPU kernels", cpu::isa_name(cpu::isa()),
         str_cat("(LOOM_CPU_ISA; this CPU supports ", cpu::isa_name(cpu::supported_isa()), ")")});
  t.print(std::cout);
}

void print_search_path(const PluginLoader& loader) {
  std::cout << "\nPlugin search path\n";
  const char* env = std::getenv("LOOM_PLUGIN_PATH");
  const std::string install_dir = PluginLoader::default_plugin_dir();
  Table t;
  for (const std::string& dir : loader.search_path()) {
    std::error_code ec;
    std::string note = dir == install_dir ? "install folder" : "LOOM_PLUGIN_PATH";
    if (!std::filesystem::is_directory(dir, ec)) note += ", missing";
    t.add({display_path(dir), "(" + note + ")"});
  }
  t.print(std::cout);
  if (env == nullptr || *env == '\0') std::cout << "  (LOOM_PLUGIN_PATH is not set)\n";
}

// The first-party C++ libraries beside libloom_core (Note in docs/design/training.md): a
// program links them; the ops they use come from plugins, listed below.
void print_libraries() {
  std::cout << "\nC++ libraries (linked by programs; their ops are plugins)\n";
  const std::filesystem::path lib_dir =
      std::filesystem::path(PluginLoader::default_plugin_dir()).parent_path().parent_path();
  struct Lib {
    const char* name;
    const char* what;
  };
  const Lib libs[] = {
      {"nn", "Module, layers, losses, init, save/load (ops: ops_core, ops_nn)"},
      {"optim", "optimizers, LR schedulers (ops: ops_optim)"},
      {"data", "datasets, transforms, samplers, DataLoader, safetensors (no ops)"},
  };
  Table t;
  for (const Lib& l : libs) {
    const std::filesystem::path file = lib_dir / str_cat("libloom_", l.name, ".so");
    std::error_code ec;
    const bool found = std::filesystem::exists(file, ec);
    t.add({l.name, found ? display_path(file.string()) : std::string("not installed"), l.what});
  }
  t.print(std::cout);
}

// Loaded plugins, then every file of the plugin folders that was refused (FAILED) or not tried
// (skipped), each with the loader's reason: nothing in a plugin folder goes unmentioned.
void print_plugins(const PluginLoader& loader, const std::vector<PluginFailure>& failures,
                   const std::vector<PluginFailure>& skipped) {
  const auto loaded = loader.loaded();
  std::cout << "\nPlugins (" << loaded.size() << " loaded";
  if (!failures.empty()) std::cout << ", " << failures.size() << " failed";
  if (!skipped.empty()) std::cout << ", " << skipped.size() << " skipped";
  std::cout << ")\n";
  if (loaded.empty()) std::cout << "  (none)\n";
  for (const PluginInfo& p : loaded) {
    std::cout << "  " << p.name << " " << p.version << "\n";
    Table t;
    t.add({"description", p.description.empty() ? "-" : p.description});
    t.add({"ABI", str_cat(p.abi_major, ".", p.abi_minor)});
    t.add({"path", display_path(p.path)});
    if (!p.dependencies.empty()) {
      std::string deps;
      for (const auto& d : p.dependencies) str_append(&deps, deps.empty() ? "" : ", ", d);
      t.add({"depends on", deps});
    }
    t.add({"registrations", str_cat(p.registrations.size())});
    t.print(std::cout, 6);
  }
  for (const PluginFailure& f : failures) {
    std::cout << "  FAILED " << display_path(f.path) << "\n      " << f.message << "\n";
  }
  for (const PluginFailure& s : skipped) {
    std::cout << "  skipped " << display_path(s.path) << "\n      " << s.message << "\n";
  }
}

void print_providers() {
  // Which providers exist per key, counted over every operator, next to the preference.
  std::map<DispatchKey, std::map<std::string, int>> providers;
  Dispatcher& d = Dispatcher::instance();
  for (OperatorHandle op : d.ops()) {
    for (const KernelInfo& k : d.kernels(op)) ++providers[k.key][k.provider];
  }
  std::set<DispatchKey> keys;
  for (DeviceType type : DeviceType::all()) keys.insert(backend_key(type));
  for (const auto& [key, _] : providers) keys.insert(key);

  std::cout << "\nPreferred providers\n";
  Table t;
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    const std::string preferred = d.preferred_provider(*it);
    std::string available;
    for (const auto& [name, count] : providers[*it]) {
      str_append(&available, available.empty() ? "" : ", ", name, " (", count, " op",
                 count == 1 ? "" : "s", ")");
    }
    std::string shown = preferred.empty() ? "(none: highest priority wins)" : preferred;
    if (!preferred.empty() && !providers[*it].count(preferred)) {
      shown += " (no kernel from such a provider: priorities decide)";
    }
    t.add({dispatch_key_name(*it), shown,
           available.empty() ? "no kernels" : "providers: " + available});
  }
  t.print(std::cout);
  const std::vector<ProviderOverride> overrides = d.provider_overrides();
  if (!overrides.empty()) {
    std::cout << "\nPer-op provider overrides\n";
    Table o;
    for (const ProviderOverride& po : overrides) {
      o.add({po.op, dispatch_key_name(po.key), po.provider});
    }
    o.print(std::cout);
  }
  for (const std::string& e : static_registration_errors()) std::cout << "\nWARNING " << e << "\n";
}

}  // namespace

int run_info(Args& args) {
  args.positionals(0, 0);
  PluginLoader& loader = PluginLoader::instance();
  std::vector<PluginFailure> skipped;
  const std::vector<PluginFailure> failures = loader.load_all(&skipped);

  std::cout << "Loom " << LOOM_VERSION_STRING << "\n\n";
  print_build();
  print_devices();
  print_device_hooks();
  print_backend_switches();
  print_search_path(loader);
  print_libraries();
  print_plugins(loader, failures, skipped);
  print_providers();
  return kExitOk;
}

}  // namespace loom::cli
