// Never finishes loading (sleeps in a static initialiser): `loom plugin check --timeout`
// must kill the checking process and say so.
#include <unistd.h>

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("tools_test_hang", "0.1", "sleeps while its file is being opened");

namespace {
const int hang_now = [] {
  for (int i = 0; i < 600; ++i) sleep(1);
  return 0;
}();
}  // namespace
