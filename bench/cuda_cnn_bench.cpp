// cuda.cnn.step: bench/onednn_cnn_bench.cpp's cnn.step on cuda:0: one training step of the
// Fashion-MNIST CNN (conv 1->32 3x3, relu, max pool 2, conv 32->64 3x3, relu, max pool 2,
// flatten, linear 1600->128, relu, linear 128->10) on a batch of 64 random 1x28x28 images
// already on the device: cross entropy, backward, loom::optim::Adam (lr 1e-3; the cuda
// plugin's fused adam_step_ kernel, one launch per parameter). The libtorch peer
// (bench/libtorch/cuda_cnn_peer.cpp) runs the same model with torch::nn and torch::optim::Adam
// on CUDA when libtorch was built with CUDA; a CPU-only libtorch (Debian's) says so and is null.
#include <cmath>
#include <memory>
#include <vector>

#include "cuda_bench.h"
#include "loom/autograd/autograd.h"
#include "loom/core/generator.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"
#include "loom/optim/adam.h"

namespace loom::bench {
namespace {

/// A parameter of sizes on device, uniform in +-1/sqrt(fan_in) as torch.nn's default
/// initialisation (drawn on the CPU, so every device starts from the same weights).
Tensor parameter(IntArrayRef sizes, int64_t fan_in, Device device) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return ((rand(sizes) * 2 - 1) * bound).to(device).requires_grad_();
}

struct Cnn {
  explicit Cnn(Device d)
      : w1(parameter({32, 1, 3, 3}, 9, d)),
        b1(parameter({32}, 9, d)),
        w2(parameter({64, 32, 3, 3}, 288, d)),
        b2(parameter({64}, 288, d)),
        w3(parameter({128, 1600}, 1600, d)),
        b3(parameter({128}, 1600, d)),
        w4(parameter({10, 128}, 128, d)),
        b4(parameter({10}, 128, d)) {}
  Tensor w1, b1, w2, b2, w3, b3, w4, b4;
  std::vector<Tensor> params() const { return {w1, b1, w2, b2, w3, b3, w4, b4}; }
  Tensor forward(const Tensor& x) const {
    Tensor h = max_pool2d(relu(conv2d(x, w1, b1)), {2, 2});
    h = max_pool2d(relu(conv2d(h, w2, b2)), {2, 2});
    h = relu(linear(flatten(h, 1), w3, b3));
    return linear(h, w4, b4);
  }
};

LOOM_BENCH("cuda.cnn.step", unit::rate("steps/s"), .rounds = 9) {
  if (!cuda::unavailable_reason().empty()) return cuda::skipped("cuda.cnn.step");
  manual_seed(0);
  const Device d = cuda::device();
  auto model = std::make_shared<Cnn>(d);
  auto adam = std::make_shared<optim::Adam>(model->params(), optim::AdamOptions(1e-3));
  const Tensor x = randn({64, 1, 28, 28}).to(d), y = randint(0, 10, {64}).to(d);
  auto step = [=] {
    adam->zero_grad();
    const Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    adam->step();
    do_not_optimize(loss);
  };
  step();  // cuDNN and cuBLAS handles, the optimizer's state
  cuda::sync();
  auto side = cuda::gpu_ns_per_call(step);
  return [side]() { return 1e9 / side()[0]; };
}

}  // namespace
}  // namespace loom::bench
