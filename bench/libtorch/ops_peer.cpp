// The libtorch side of the ops.* benchmarks (bench/ops_bench.cpp): the same shapes through
// at::add / at::add_out / at::sum / at::softmax on inference tensors, 2 threads.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "../harness.h"

namespace loom::bench {
namespace {

constexpr int64_t k16M = int64_t{16} << 20;

/// Keeps c10::InferenceMode on for the process (as dispatch_peer.cpp does).
void inference_mode() {
  static c10::InferenceMode* guard = new c10::InferenceMode();
  (void)guard;
}

double add_gbps(double ns, int64_t n) { return 3.0 * 4.0 * static_cast<double>(n) / ns; }

LOOM_BENCH_PEER(libtorch, "add.1elem") {
  inference_mode();
  const at::Tensor a = at::full({1}, 1.5), b = at::full({1}, 2.5);
  return ns_per_call([=] { do_not_optimize(at::add(a, b)); });
}

LOOM_BENCH_PEER(libtorch, "add.16M.out") {
  inference_mode();
  const at::Tensor a = at::full({k16M}, 1.5), b = at::full({k16M}, 2.5);
  at::Tensor out = at::zeros({k16M});
  auto side = ns_per_call([=]() mutable { do_not_optimize(at::add_out(out, a, b)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH_PEER(libtorch, "add.16M.alloc") {
  inference_mode();
  const at::Tensor a = at::full({k16M}, 1.5), b = at::full({k16M}, 2.5);
  auto side = ns_per_call([=] { do_not_optimize(at::add(a, b)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH_PEER(libtorch, "sum.16M") {
  inference_mode();
  const at::Tensor a = at::full({k16M}, 0.5);
  auto side = ns_per_call([=] { do_not_optimize(at::sum(a)); });
  return [side]() { return 4.0 * static_cast<double>(k16M) / side()[0]; };
}

LOOM_BENCH_PEER(libtorch, "softmax.4096x1024") {
  inference_mode();
  at::Tensor x = at::empty({4096, 1024});
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < 4096 * 1024; ++i) p[i] = static_cast<float>((i * 7919) % 1000) / 250.0f;
  auto side = ns_per_call([=] { do_not_optimize(at::softmax(x, 1)); });
  return [side]() { return side()[0] / 1000.0; };
}

}  // namespace
}  // namespace loom::bench
