// The backends the conformance harness checks, and the documented tolerances
// (docs/design/conformance.md). A backend joins with one line here.
#include <cstdio>
#include <list>
#include <set>

#include "conformance.h"
#include "loom/core/device_hooks.h"
#include "loom/dispatcher/plugin_loader.h"

namespace loom::conformance {

std::vector<Backend>& registry() {
  static auto* r = new std::vector<Backend>();
  return *r;
}

bool register_backend(Backend b) {
  registry().push_back(std::move(b));
  return true;
}

namespace {

/// The device type name of a backend's device ("cuda" for "cuda:1").
std::string type_name(const Backend& b) { return b.device.substr(0, b.device.find(':')); }

/// Whether to keep b, resolving a device backend's key once its plugin has registered the
/// device type: a device backend whose plugin is loaded but has no device (this machine has no
/// GPU) leaves the list, said once on stderr; one whose plugin is not loaded (yet) stays
/// unresolved, providing nothing, so load_plugins() can still load it.
bool resolve(Backend& b) {
  const std::string type = type_name(b);
  if (type == "cpu" || !DeviceType::is_registered(type)) return true;
  const DeviceType t = DeviceType::from_name(type);
  const DeviceHooks* hooks = find_device_hooks(t);
  if (hooks != nullptr && hooks->device_count() <= 0) {
    static std::set<std::string> reported;
    if (reported.insert(b.name).second) {
      std::fprintf(stderr, "conformance: backend %s skipped: no %s device is available: %s\n",
                   b.name.c_str(), type.c_str(), hooks->unavailable_reason().c_str());
    }
    return false;
  }
  b.key = backend_key(t);
  return true;
}

bool same(const std::vector<Backend>& a, const std::vector<Backend>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].key != b[i].key) return false;
  }
  return true;
}

}  // namespace

const std::vector<Backend>& backends() {
  // A device backend's dispatch key exists only once its plugin has loaded, so the list is
  // resolved on every call. Each distinct list is kept for the process's lifetime: a caller
  // still holding an earlier list (load_plugins() loops over it while loading) keeps it.
  static auto* lists = new std::list<std::vector<Backend>>();
  std::vector<Backend> now;
  for (Backend b : registry()) {
    if (resolve(b)) now.push_back(std::move(b));
  }
  if (lists->empty() || !same(lists->back(), now)) lists->push_back(std::move(now));
  return lists->back();
}

Tolerance tolerance_for(DType t) {
  switch (t) {
    case DType::Float64:
      return {1e-10, 1e-12};  // the same math in another order (strided loops, blocking)
    case DType::Float32:
      return {1e-4, 1e-5};  // vectorised exp/log (a few ulp) and float accumulation
    case DType::Float16:
      return {5e-3, 1e-3};  // one float16 rounding of the result, plus a little
    case DType::BFloat16:
      return {3e-2, 1e-2};  // bfloat16 keeps 8 bits of mantissa
    default:
      return {0, 0};
  }
}

// The reference CPU kernels themselves: every layout and dtype against float64.
LOOM_CONFORMANCE_BACKEND({.name = "reference", .plugin = "", .provider = "reference"});

#ifdef LOOM_WITH_ONEDNN
// The oneDNN kernels (plugins/cpu_onednn) on the ops they provide. Float32 only: other dtypes
// are handed to the reference and so match it exactly.
LOOM_CONFORMANCE_BACKEND({.name = "onednn", .plugin = "cpu_onednn", .provider = "onednn"});
#endif

// The CUDA plugin's kernels (plugins/cuda), run on cuda:0 from inputs copied there, against the
// reference kernels on the CPU. Registered in every build: where the plugin is not built it
// does not load and provides nothing; where it loads without a GPU it is skipped (resolve()
// says why). Its key, CUDA, is the one the plugin's device type gets when it registers. Float32
// products run without TF32 (the plugin's default), so the dtype tolerances hold.
LOOM_CONFORMANCE_BACKEND({.name = "cuda",
                          .plugin = "cuda",
                          .provider = "cuda",
                          .key = DispatchKey::CPU,
                          .device = "cuda:0"});

}  // namespace loom::conformance
