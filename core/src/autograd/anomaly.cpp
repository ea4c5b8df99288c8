#include <cxxabi.h>
#include <execinfo.h>

#include <atomic>
#include <cstdlib>
#include <memory>

#include "autograd/trace.h"
#include "loom/autograd/anomaly.h"
#include "loom/autograd/grad_mode.h"
#include "loom/core/str_cat.h"

namespace loom::autograd {
namespace {
std::atomic<bool> g_anomaly{false};
// Note [Initial-exec TLS] in dispatcher/src/dispatch_key.cpp.
__attribute__((tls_model("initial-exec"))) thread_local bool tls_inference = false;

// "libfoo.so(_ZN4loom3addEv+0x1c) [0x...]" -> "loom::add()"; the raw text if it has no symbol.
std::string demangle_frame(const char* frame) {
  std::string s(frame);
  const size_t open = s.find('('), plus = s.find('+', open);
  if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return s;
  const std::string mangled = s.substr(open + 1, plus - open - 1);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}
}  // namespace

bool AnomalyMode::is_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly.store(enabled); }

DetectAnomalyGuard::DetectAnomalyGuard() : previous_(AnomalyMode::is_enabled()) {
  AnomalyMode::set_enabled(true);
}
DetectAnomalyGuard::~DetectAnomalyGuard() { AnomalyMode::set_enabled(previous_); }

std::string capture_trace(std::string_view op) {
  void* frames[48];
  const int n = backtrace(frames, 48);
  std::unique_ptr<char*, void (*)(void*)> symbols(backtrace_symbols(frames, n), std::free);
  std::string out = loom::str_cat("  ", op, " called from:");
  int shown = 0;
  for (int i = 1; i < n && symbols && shown < 16; ++i) {
    const std::string f = demangle_frame(symbols.get()[i]);
    // The engine, the dispatcher and the op-pack trampolines are not where the user is.
    if (f.find("loom::autograd::") != std::string::npos ||
        f.find("loom::KernelFunction") != std::string::npos ||
        f.find("loom::OperatorHandle") != std::string::npos ||
        f.find("std::") == 0 || f.find("void std::") == 0) {
      continue;
    }
    out += loom::str_cat("\n    #", shown++, " ", f);
  }
  return out;
}

InferenceMode::InferenceMode(bool enabled) : previous_(tls_inference), grad_(!enabled && GradMode::is_enabled()) {
  tls_inference = enabled;
}
InferenceMode::~InferenceMode() { tls_inference = previous_; }
bool InferenceMode::is_enabled() { return tls_inference; }

}  // namespace loom::autograd
