// The libtorch side of the sgemm.* benchmarks (bench/onednn_matmul_bench.cpp): torch::mm on
// the same square float32 matrices, inference tensors, 2 threads (LOOM_BENCH_CONFIGURE in
// dispatch_peer.cpp).
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "../harness.h"

namespace loom::bench {
namespace {

/// Keeps c10::InferenceMode on for the process (as dispatch_peer.cpp does).
void inference_mode() {
  static c10::InferenceMode* guard = new c10::InferenceMode();
  (void)guard;
}

/// n x n values in [-0.5, 0.5), the pattern of the Loom side.
at::Tensor pattern(int64_t n, int seed) {
  at::Tensor t = at::empty({n, n});
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < n * n; ++i) {
    p[i] = static_cast<float>((static_cast<size_t>(i) * 7919 + static_cast<size_t>(seed) * 104729) %
                              1000) /
               1000.0f -
           0.5f;
  }
  return t;
}

Side torch_side(int64_t n) {
  inference_mode();
  const at::Tensor a = pattern(n, 1), b = pattern(n, 2);
  auto side = ns_per_call([=] { do_not_optimize(at::mm(a, b)); });
  return [side, n]() { return 2.0 * static_cast<double>(n * n * n) / side()[0]; };
}

LOOM_BENCH_LIBTORCH_PEER("sgemm.256") { return torch_side(256); }
LOOM_BENCH_LIBTORCH_PEER("sgemm.1024") { return torch_side(1024); }
LOOM_BENCH_LIBTORCH_PEER("sgemm.2048") { return torch_side(2048); }

}  // namespace
}  // namespace loom::bench
