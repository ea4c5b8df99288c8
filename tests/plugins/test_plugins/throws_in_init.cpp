// Test plugin `throws_in_init`: a static initialiser of its own throws while the file is
// being opened, before the loader has seen its manifest.

#include <stdexcept>

#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("throws_in_init", "1.0", "test plugin: a throwing static initialiser");

namespace {
struct Boom {
  Boom() { throw std::runtime_error("boom in a static initialiser"); }
};
const Boom boom;
}  // namespace
