#include "loom/dispatcher/dispatch_key.h"

#include <cctype>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "loom/core/error.h"

namespace loom {

std::string dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::Undefined:
      return "Undefined";
    case DispatchKey::Meta:
      return "Meta";
    case DispatchKey::CPU:
      return "CPU";
    case DispatchKey::Autograd:
      return "Autograd";
    case DispatchKey::CompositeImplicitAutograd:
      return "CompositeImplicitAutograd";
    case DispatchKey::Autocast:
      return "Autocast";
    case DispatchKey::Tracing:
      return "Tracing";
    case DispatchKey::Profiling:
      return "Profiling";
    default:
      break;
  }
  if (is_backend_key(k)) {
    const int type_id = static_cast<int>(k) - 1;
    std::string name(DeviceType{static_cast<int8_t>(type_id)}.name());
    if (name.empty()) return loom::str_cat("Backend", static_cast<int>(k));
    return absl::AsciiStrToUpper(name);
  }
  return loom::str_cat("Key", static_cast<int>(k));
}

DispatchKey parse_dispatch_key(std::string_view name) {
  std::vector<std::string> known;
  for (int i = 1; i < kNumDispatchKeys; ++i) {
    const auto k = static_cast<DispatchKey>(i);
    const bool named =
        (is_backend_key(k) && (i <= 2 || !DeviceType{static_cast<int8_t>(i - 1)}.name().empty())) ||
        k == DispatchKey::Autograd || k == DispatchKey::CompositeImplicitAutograd ||
        k == DispatchKey::Autocast || k == DispatchKey::Tracing ||
        k == DispatchKey::Profiling;
    if (!named) continue;
    const std::string n = dispatch_key_name(k);
    if (absl::EqualsIgnoreCase(n, absl::string_view(name.data(), name.size()))) return k;
    known.push_back(n);
  }
  LOOM_THROW(ValueError, "unknown dispatch key '", name,
             "'; known keys: ", absl::StrJoin(known, ", "));
}

std::string DispatchKeySet::str() const {
  std::vector<std::string> names;
  for (int i = 63; i >= 0; --i) {
    if ((bits_ >> i) & 1) names.push_back(dispatch_key_name(static_cast<DispatchKey>(i)));
  }
  return loom::str_cat("{", absl::StrJoin(names, ", "), "}");
}

namespace {
// Note [Initial-exec TLS]: libloom_core is linked by the program (never dlopen'ed late), so
// its hot thread-locals use the initial-exec model: a fixed offset from the thread pointer
// instead of a __tls_get_addr call on every dispatch, grad-mode check and node creation.
__attribute__((tls_model("initial-exec"))) thread_local LocalDispatchKeySet tls_local_keys;
}

LocalDispatchKeySet& local_dispatch_key_set() { return tls_local_keys; }

std::atomic<uint64_t> process_included_keys{0};

ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet keys)
    : tls_(&tls_local_keys), previous_(tls_->excluded) {
  tls_->excluded = tls_->excluded | keys;
}
ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() { tls_->excluded = previous_; }

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet keys)
    : tls_(&tls_local_keys), previous_(tls_->included) {
  tls_->included = tls_->included | keys;
}
IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() { tls_->included = previous_; }

}  // namespace loom
