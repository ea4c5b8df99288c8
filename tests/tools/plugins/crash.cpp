// Crashes in a static initialiser, that is while the loader is still inside dlopen:
// `loom plugin check` must survive it and name the signal.
#include <csignal>

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("tools_test_crash", "0.1", "raises SIGSEGV while its file is being opened");

namespace {
const int crash_now = [] {
  std::raise(SIGSEGV);
  return 0;
}();
}  // namespace
