// The libtorch side of the autograd.* benchmarks (bench/autograd_bench.cpp): the same work
// with requires_grad tensors in normal mode (other peers leave InferenceMode on for the
// thread, so each sample turns it off), 2 threads.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/variable.h>

#include "../harness.h"

namespace loom::bench {
namespace {

// A side that runs with inference mode off.
Side normal_mode(Side inner) {
  return [inner]() {
    c10::InferenceMode off(false);
    return inner();
  };
}

at::Tensor pattern(at::IntArrayRef sizes, bool requires_grad = false) {
  c10::InferenceMode off(false);
  at::Tensor t = at::empty(sizes);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
  t.set_requires_grad(requires_grad);
  return t;
}

LOOM_BENCH_LIBTORCH_PEER("autograd.add.1elem") {
  c10::InferenceMode off(false);
  const at::Tensor a = at::full({1}, 1.5).set_requires_grad(true), b = at::full({1}, 2.5);
  return normal_mode(ns_per_call([=] { do_not_optimize(at::add(a, b)); }));
}

LOOM_BENCH_LIBTORCH_PEER("autograd.mlp_tiny.step") {
  const at::Tensor x = pattern({16, 4}), y = pattern({16, 1});
  const at::Tensor w1 = pattern({8, 4}, true), b1 = pattern({8}, true);
  const at::Tensor w2 = pattern({1, 8}, true), b2 = pattern({1}, true);
  Side side = normal_mode(ns_per_call([=] {
    for (const at::Tensor& p : {w1, b1, w2, b2}) p.mutable_grad().reset();
    const at::Tensor h = at::relu(at::linear(x, w1, b1));
    const at::Tensor loss = at::mse_loss(at::linear(h, w2, b2), y);
    torch::autograd::backward({loss});
    do_not_optimize(w1.grad());
  }));
  return [side]() { return side()[0] / 1000.0; };
}

}  // namespace
}  // namespace loom::bench
