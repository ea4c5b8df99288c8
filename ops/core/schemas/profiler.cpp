// Schemas of the profiler's ranges as ops (PyTorch's profiler::_record_function_enter /
// _exit), so that any caller that calls ops by name opens and closes a profiler range: the
// stable C ABI (OpFind + OpCall), the C++ wrapper loom/stable.hpp, other languages' bindings.
#include "loom/dispatcher/library.h"

// clang-format off
LOOM_LIBRARY(profiler, m) {
  m.def("record_function_enter(str name) -> int");
  m.def("record_function_exit(int handle) -> ()");
}
// clang-format on
