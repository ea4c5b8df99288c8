// dispatch.*: the cost of one call through the dispatcher to a kernel that does nothing,
// so what is measured is the dispatch itself (key set, table lookup, indirect call).
#include "harness.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/library.h"

namespace loom::bench {
namespace {

LOOM_LIBRARY(bench, m) { m.def("noop(Tensor self) -> Tensor"); }
LOOM_LIBRARY_IMPL(bench, CPU, m) {
  m.impl("noop", [](const Tensor& self) { return self; });
}

OperatorHandle noop_op() { return Dispatcher::instance().find_op_or_throw("bench::noop"); }

LOOM_BENCH("dispatch.noop.typed", unit::ns, .target = 25) {
  const auto noop = noop_op().typed<Tensor(const Tensor&)>();
  const Tensor x = Tensor::empty({1});
  return ns_per_call([=] { do_not_optimize(noop(x)); });
}

LOOM_BENCH("dispatch.noop.boxed", unit::ns) {
  const OperatorHandle op = noop_op();
  const Tensor x = Tensor::empty({1});
  Stack stack;
  stack.reserve(1);
  return ns_per_call([=]() mutable {
    stack.clear();
    stack.emplace_back(x);
    op.call_boxed(stack);
    do_not_optimize(stack.back());
  });
}

}  // namespace
}  // namespace loom::bench
