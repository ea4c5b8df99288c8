// cnn.step: one training step of the Fashion-MNIST CNN (conv 1->32 3x3, relu, max pool 2,
// conv 32->64 3x3, relu, max pool 2, flatten, linear 1600->128, relu, linear 128->10) on a
// batch of 64 random 1x28x28 images: cross entropy, backward, Adam (lr 1e-3; loom::optim's,
// one fused update op per parameter). Loom runs with
// the cpu_onednn plugin's kernels preferred; libtorch (bench/libtorch/onednn_cnn_peer.cpp)
// with torch::nn modules and torch::optim::Adam. 2 threads each.
#include <cmath>
#include <memory>
#include <vector>

#include "harness.h"
#include "loom/autograd/autograd.h"
#include "loom/core/generator.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"
#include "loom/optim/adam.h"

namespace loom::bench {
namespace {

/// A parameter of sizes, uniform in +-1/sqrt(fan_in) as torch.nn's default initialisation.
Tensor parameter(IntArrayRef sizes, int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return ((rand(sizes) * 2 - 1) * bound).requires_grad_();
}

struct Cnn {
  Tensor w1 = parameter({32, 1, 3, 3}, 9), b1 = parameter({32}, 9);
  Tensor w2 = parameter({64, 32, 3, 3}, 288), b2 = parameter({64}, 288);
  Tensor w3 = parameter({128, 1600}, 1600), b3 = parameter({128}, 1600);
  Tensor w4 = parameter({10, 128}, 128), b4 = parameter({10}, 128);
  std::vector<Tensor> params() const { return {w1, b1, w2, b2, w3, b3, w4, b4}; }
  Tensor forward(const Tensor& x) const {
    Tensor h = max_pool2d(relu(conv2d(x, w1, b1)), {2, 2});
    h = max_pool2d(relu(conv2d(h, w2, b2)), {2, 2});
    h = relu(linear(flatten(h, 1), w3, b3));
    return linear(h, w4, b4);
  }
};

LOOM_BENCH("cnn.step", unit::rate("steps/s"), .rounds = 9) {
  PluginLoader::instance().load("ops_nn");
  load_backend_plugin("cpu_onednn");
  manual_seed(0);
  auto model = std::make_shared<Cnn>();
  auto adam = std::make_shared<optim::Adam>(model->params(), optim::AdamOptions(1e-3));
  const Tensor x = randn({64, 1, 28, 28}), y = randint(0, 10, {64});
  auto side = ns_per_call([=] {
    adam->zero_grad();
    const Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    adam->step();
    do_not_optimize(loss);
  });
  return with_cpu_provider("onednn", [side]() { return 1e9 / side()[0]; });
}

}  // namespace
}  // namespace loom::bench
