// graph.*: the cost of loom::graph's replay (docs/design/compile.md). graph.replay.guarded calls
// a GuardedFunction whose guards hold (a one-element add): the guard checks and the
// interpreter on top of the op; its raw side calls the same function eagerly, so ratio_raw
// is replay / eager. The budget for calling a compiled graph whose guards hold is
// 5 us.
#include "harness.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/graph/guarded.h"
#include "loom/ops/pointwise.h"

namespace loom::bench {
namespace {

std::vector<Tensor> add_one(const std::vector<Tensor>& in) { return {add(in[0], in[1])}; }

LOOM_BENCH("graph.replay.guarded", unit::ns, .target = 5000) {
  PluginLoader::instance().load("ops_core");
  auto f = std::make_shared<graph::GuardedFunction>(&add_one);
  const std::vector<Tensor> in = {Tensor::empty({1}), Tensor::empty({1})};
  (*f)(in);  // the capture
  return ns_per_call([f, in] { do_not_optimize((*f)(in)[0]); });
}

LOOM_BENCH_PEER(raw, "graph.replay.guarded") {
  PluginLoader::instance().load("ops_core");
  const std::vector<Tensor> in = {Tensor::empty({1}), Tensor::empty({1})};
  return ns_per_call([in] { do_not_optimize(add_one(in)[0]); });
}

}  // namespace
}  // namespace loom::bench
