// Where a forward op was called, for anomaly mode.
#pragma once

#include <string>
#include <string_view>

namespace loom::autograd {

// "aten::mul.Tensor, called from:\n  #0 my_model(...)\n  ..." (demangled frames of the
// calling thread, innermost first, Loom's own frames left out).
std::string capture_trace(std::string_view op);

}  // namespace loom::autograd
