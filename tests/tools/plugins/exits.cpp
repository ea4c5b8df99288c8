// Ends the process from a static initialiser: `loom plugin check` must report that the
// checking process ended before it could report, with the exit status.
#include <cstdlib>

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("tools_test_exits", "0.1", "calls exit(3) while its file is being opened");

namespace {
const int exit_now = [] {
  std::exit(3);
  return 0;
}();
}  // namespace
