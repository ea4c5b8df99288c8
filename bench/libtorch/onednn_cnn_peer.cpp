// The libtorch side of cnn.step (bench/onednn_cnn_bench.cpp): the same CNN as torch::nn
// modules, cross entropy, backward, torch::optim::Adam (lr 1e-3), gradients set to none
// between steps (as the Loom side does); normal mode (other peers leave InferenceMode on for
// the thread, so each sample turns it off), 2 threads.
#include <torch/torch.h>

#include "../harness.h"

namespace loom::bench {
namespace {

struct CnnImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  CnnImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)));
    fc1 = register_module("fc1", torch::nn::Linear(1600, 128));
    fc2 = register_module("fc2", torch::nn::Linear(128, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    x = torch::relu(fc1->forward(x.flatten(1)));
    return fc2->forward(x);
  }
};
TORCH_MODULE(Cnn);

LOOM_BENCH_LIBTORCH_PEER("cnn.step") {
  c10::InferenceMode off(false);
  torch::manual_seed(0);
  struct State {
    Cnn model;
    torch::optim::Adam adam;
    torch::Tensor x, y;
    State()
        : adam(model->parameters(), torch::optim::AdamOptions(1e-3)),
          x(torch::randn({64, 1, 28, 28})),
          y(torch::randint(0, 10, {64})) {}
  };
  auto s = std::make_shared<State>();
  Side side = ns_per_call([s] {
    c10::InferenceMode normal(false);
    s->model->zero_grad(/*set_to_none=*/true);
    torch::Tensor loss = torch::nn::functional::cross_entropy(s->model->forward(s->x), s->y);
    loss.backward();
    s->adam.step();
    do_not_optimize(loss);
  });
  return [side]() { return 1e9 / side()[0]; };
}

}  // namespace
}  // namespace loom::bench
