// autograd.*: recording and backward, beside libtorch (bench/libtorch/autograd_peer.cpp) in
// normal (not inference) mode. add.1elem is the cost autograd adds to one tiny op (node,
// edges, output metadata, freeing the graph); mlp_tiny.step is one training step of a
// 4 -> 8 -> 1 MLP on a batch of 16: zero_grad (set to none), forward, MSE loss, backward.
#include <vector>

#include "harness.h"
#include "loom/autograd/autograd.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom::bench {
namespace {

void load_ops() {
  PluginLoader::instance().load("ops_core");
  PluginLoader::instance().load("ops_nn");
}

Tensor filled(IntArrayRef sizes, double v, bool requires_grad = false) {
  Tensor t = Tensor::empty(sizes);
  fill_(t, v);
  t.set_requires_grad(requires_grad);
  return t;
}

Tensor pattern(IntArrayRef sizes, bool requires_grad = false) {
  Tensor t = Tensor::empty(sizes);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
  t.set_requires_grad(requires_grad);
  return t;
}

LOOM_BENCH("autograd.add.1elem", unit::ns, .max_ratio = 0.4) {
  load_ops();
  const Tensor a = filled({1}, 1.5, /*requires_grad=*/true), b = filled({1}, 2.5);
  return ns_per_call([=] { do_not_optimize(add(a, b)); });
}

LOOM_BENCH("autograd.mlp_tiny.step", unit::us, .max_ratio = 0.4) {
  load_ops();
  const Tensor x = pattern({16, 4}), y = pattern({16, 1});
  const Tensor w1 = pattern({8, 4}, true), b1 = pattern({8}, true);
  const Tensor w2 = pattern({1, 8}, true), b2 = pattern({1}, true);
  auto side = ns_per_call([=] {
    for (const Tensor& p : {w1, b1, w2, b2}) p.set_grad(Tensor());
    const Tensor h = relu(linear(x, w1, b1));
    const Tensor loss = mse_loss(linear(h, w2, b2), y);
    loss.backward();
    do_not_optimize(w1.grad());
  });
  return [side]() { return side()[0] / 1000.0; };
}

}  // namespace
}  // namespace loom::bench
