// The libtorch side of the conv3x3.* benchmarks (bench/onednn_conv_bench.cpp): at::conv2d and
// at::convolution_backward (the op libtorch's autograd calls for a convolution) on the same
// shapes and values, on inference tensors, 2 threads.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "../harness.h"

namespace loom::bench {
namespace {

constexpr int64_t kN = 32, kC = 64, kHW = 56;

/// Keeps c10::InferenceMode on for the process (as dispatch_peer.cpp does).
void inference_mode() {
  static c10::InferenceMode* guard = new c10::InferenceMode();
  (void)guard;
}

at::Tensor pattern(at::IntArrayRef sizes) {
  at::Tensor t = at::empty(sizes);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
  return t;
}

template <typename F>
Side ms_per_call(F body) {
  Side side = ns_per_call(std::move(body));
  return [side]() { return side()[0] / 1e6; };
}

LOOM_BENCH_LIBTORCH_PEER("conv3x3.fwd") {
  inference_mode();
  const at::Tensor x = pattern({kN, kC, kHW, kHW}), w = pattern({kC, kC, 3, 3});
  return ms_per_call([=] { do_not_optimize(at::conv2d(x, w, {}, 1, 1)); });
}

LOOM_BENCH_LIBTORCH_PEER("conv3x3.fwd.channels_last") {
  inference_mode();
  const at::Tensor x = pattern({kN, kC, kHW, kHW}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor w = pattern({kC, kC, 3, 3});
  return ms_per_call([=] { do_not_optimize(at::conv2d(x, w, {}, 1, 1)); });
}

LOOM_BENCH_LIBTORCH_PEER("conv3x3.fwdbwd") {
  inference_mode();
  const at::Tensor x = pattern({kN, kC, kHW, kHW}), w = pattern({kC, kC, 3, 3});
  const at::Tensor go = pattern({kN, kC, kHW, kHW});
  return ms_per_call([=] {
    do_not_optimize(at::conv2d(x, w, {}, 1, 1));
    const auto grads = at::convolution_backward(go, x, w, c10::nullopt, {1, 1}, {1, 1}, {1, 1},
                                                false, {0, 0}, 1, {true, true, false});
    do_not_optimize(grads);
  });
}

}  // namespace
}  // namespace loom::bench
