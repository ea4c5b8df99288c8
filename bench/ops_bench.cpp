// ops.*: the reference CPU kernels of ops_core on the shapes of the operator issue, beside
// libtorch (bench/libtorch/ops_peer.cpp) and, for add.16M.out, a plain loop over the same
// buffers (the "raw" peer: what the memory system allows). Both sides use 2 threads.
#include <omp.h>

#include <vector>

#include "harness.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"

namespace loom::bench {
namespace {

constexpr int64_t k16M = int64_t{16} << 20;

void load_ops() { PluginLoader::instance().load("ops_core"); }

Tensor filled(IntArrayRef sizes, double v) {
  Tensor t = Tensor::empty(sizes);
  fill_(t, v);
  return t;
}

/// GB/s moved by an add of n float32 (two reads, one write).
double add_gbps(double ns, int64_t n) { return 3.0 * 4.0 * static_cast<double>(n) / ns; }

LOOM_BENCH("add.1elem", unit::ns) {
  load_ops();
  const Tensor a = filled({1}, 1.5), b = filled({1}, 2.5);
  return ns_per_call([=] { do_not_optimize(add(a, b)); });
}

LOOM_BENCH("add.16M.out", unit::rate("GB/s"), .rounds = 9) {
  load_ops();
  const Tensor a = filled({k16M}, 1.5), b = filled({k16M}, 2.5), out = filled({k16M}, 0);
  auto side = ns_per_call([=] { do_not_optimize(add_out(out, a, b)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH_PEER(raw, "add.16M.out") {
  // The same buffers' worth of work as a plain OpenMP loop, 2 threads, static schedule.
  auto a = std::make_shared<std::vector<float>>(k16M, 1.5f);
  auto b = std::make_shared<std::vector<float>>(k16M, 2.5f);
  auto out = std::make_shared<std::vector<float>>(k16M, 0.0f);
  auto side = ns_per_call([=] {
    const float* pa = a->data();
    const float* pb = b->data();
    float* po = out->data();
#pragma omp parallel for simd schedule(static) num_threads(2)
    for (int64_t i = 0; i < k16M; ++i) po[i] = pa[i] + pb[i];
    do_not_optimize(po[0]);
  });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH("add.16M.alloc", unit::rate("GB/s"), .rounds = 9) {
  load_ops();
  const Tensor a = filled({k16M}, 1.5), b = filled({k16M}, 2.5);
  auto side = ns_per_call([=] { do_not_optimize(add(a, b)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH("sum.16M", unit::rate("GB/s"), .rounds = 9) {
  load_ops();
  const Tensor a = filled({k16M}, 0.5);
  auto side = ns_per_call([=] { do_not_optimize(sum(a)); });
  return [side]() { return 4.0 * static_cast<double>(k16M) / side()[0]; };
}

LOOM_BENCH("softmax.4096x1024", unit::us, .rounds = 9) {
  load_ops();
  Tensor x = Tensor::empty({4096, 1024});
  std::vector<float> v(4096 * 1024);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919) % 1000) / 250.0f;
  std::copy(v.begin(), v.end(), x.data_ptr<float>());
  auto side = ns_per_call([=] { do_not_optimize(softmax(x, 1)); });
  return [side]() { return side()[0] / 1000.0; };
}

}  // namespace
}  // namespace loom::bench
