// `loom ops [--backend KEY]`: every operator, its schema, and who implements it where.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_loader.h"
#include "table.h"

namespace loom::cli {
namespace {

std::string who(const KernelInfo& k) {
  return k.origin.plugin.empty() ? str_cat("linked in, at ", k.origin.file, ":", k.origin.line)
                                 : k.origin.str();
}

// One row per kernel; the key is written on its first row only. `*` marks the active kernel.
void add_kernel_rows(Table& t, const std::vector<KernelInfo>& kernels) {
  std::optional<DispatchKey> previous;
  for (const KernelInfo& k : kernels) {
    std::string key = previous == k.key ? "" : dispatch_key_name(k.key);
    previous = k.key;
    std::string flags = str_cat("priority ", k.priority);
    if (k.boxed_only) flags += ", boxed only";
    t.add({key, k.active ? "*" : " ", k.provider, flags, who(k)});
  }
}

}  // namespace

int run_ops(Args& args) {
  const std::optional<std::string> backend = args.take_option("--backend");
  args.positionals(0, 0);

  // Load first: plugins register the device types whose keys --backend may name.
  for (const PluginFailure& f : PluginLoader::instance().load_all()) {
    std::cerr << "loom: warning: plugin " << f.path << " was not loaded: " << f.message << "\n";
  }
  std::optional<DispatchKey> only;
  if (backend) {
    try {
      only = parse_dispatch_key(*backend);
    } catch (const Error& e) {
      throw InvalidInput(e.what());
    }
  }

  Dispatcher& d = Dispatcher::instance();
  size_t shown = 0, kernel_count = 0;
  std::cout << "(* marks the provider that calls go to)\n";
  for (OperatorHandle op : d.ops()) {
    std::vector<KernelInfo> kernels = d.kernels(op);
    if (only) {
      std::erase_if(kernels, [&](const KernelInfo& k) { return k.key != *only; });
      if (kernels.empty()) continue;
    }
    ++shown;
    kernel_count += kernels.size();
    std::cout << "\n" << op.schema().str() << "\n";
    if (kernels.empty()) {
      std::cout << "    (no kernels)\n";
      continue;
    }
    Table t;
    add_kernel_rows(t, kernels);
    t.print(std::cout, 4);
  }

  std::vector<KernelInfo> fallbacks = d.fallbacks();
  if (only) std::erase_if(fallbacks, [&](const KernelInfo& k) { return k.key != *only; });
  if (!fallbacks.empty()) {
    std::cout << "\nFallbacks (every operator, boxed)\n";
    Table t;
    add_kernel_rows(t, fallbacks);
    t.print(std::cout, 4);
  }
  std::cout << "\n"
            << shown << " operator" << (shown == 1 ? "" : "s") << ", " << kernel_count << " kernel"
            << (kernel_count == 1 ? "" : "s");
  if (only) std::cout << " for " << dispatch_key_name(*only);
  std::cout << ", " << fallbacks.size() << " fallback" << (fallbacks.size() == 1 ? "" : "s")
            << "\n";
  return kExitOk;
}

}  // namespace loom::cli
