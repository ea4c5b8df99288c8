// profiler.*: what the profiler costs per op (docs/design/profiler.md). The op is a kernel
// that does nothing (as dispatch.noop.typed), so the difference between the sides is the
// profiler's own work (ratio_raw: on / off). Its cost when off is the Profiling bit test
// inside every dispatch, which no side here can leave out: measured by building the commit
// before the profiler, dispatch.noop.typed went from about 4.6 to 6.2 ns on the 2-core test
// machine. An event is 56 bytes in memory (static_assert in core/src/profiler/recorder.h).
#include "harness.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/library.h"
#include "loom/profiler/profiler.h"

namespace loom::bench {
namespace {

LOOM_LIBRARY(bench_prof, m) { m.def("noop(Tensor self) -> Tensor"); }
LOOM_LIBRARY_IMPL(bench_prof, CPU, m) {
  m.impl("noop", [](const Tensor& self) { return self; });
}

Side noop_side() {
  const auto noop = Dispatcher::instance()
                        .find_op_or_throw("bench_prof::noop")
                        .typed<Tensor(const Tensor&)>();
  const Tensor x = Tensor::empty({1});
  return ns_per_call([=] { do_not_optimize(noop(x)); });
}

// A profiler recording only while this side samples (the other side runs with it off).
Side profiled(Side side, profiler::ProfilerOptions options) {
  return [side, options]() {
    profiler::start(options);
    std::vector<double> r = side();
    profiler::stop();
    return r;
  };
}

LOOM_BENCH("profiler.op.on", unit::ns, .target = 150) {
  // A ring of 64K events: the steady state of a long run (the oldest overwritten).
  return profiled(noop_side(), {.max_events = 1 << 16});
}

LOOM_BENCH_PEER(raw, "profiler.op.on") { return noop_side(); }

LOOM_BENCH("profiler.op.on.shapes", unit::ns) {
  return profiled(noop_side(), {.record_shapes = true, .max_events = 1 << 16});
}

LOOM_BENCH_PEER(raw, "profiler.op.on.shapes") { return noop_side(); }

}  // namespace
}  // namespace loom::bench
