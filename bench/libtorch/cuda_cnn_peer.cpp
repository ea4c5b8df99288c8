// The libtorch side of cuda.cnn.step (bench/cuda_cnn_bench.cpp): the same CNN as torch::nn
// modules on CUDA, cross entropy, backward, torch::optim::Adam (lr 1e-3), gradients set to
// none between steps; every sample synchronizes before and after its loop, as the Loom side.
// Only a libtorch built with CUDA has this side: a CPU-only one (Debian's libtorch) prints why
// its column is null.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include "../harness.h"

namespace loom::bench {
namespace {

struct CudaCnnImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  CudaCnnImpl() {
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
TORCH_MODULE(CudaCnn);

LOOM_BENCH_LIBTORCH_PEER("cuda.cnn.step") {
  if (!torch::cuda::is_available()) {
    std::printf(
        "  cuda.cnn.step: libtorch has no CUDA here (a CPU-only build or no device); "
        "its column is null\n");
    std::fflush(stdout);
    return {};
  }
  c10::InferenceMode off(false);
  torch::manual_seed(0);
  struct State {
    CudaCnn model;
    torch::optim::Adam adam;
    torch::Tensor x, y;
    State()
        : adam((model->to(torch::kCUDA), model->parameters()), torch::optim::AdamOptions(1e-3)),
          x(torch::randn({64, 1, 28, 28}).to(torch::kCUDA)),
          y(torch::randint(0, 10, {64}).to(torch::kCUDA)) {}
  };
  auto s = std::make_shared<State>();
  auto step = [s] {
    c10::InferenceMode normal(false);
    s->model->zero_grad(/*set_to_none=*/true);
    torch::Tensor loss = torch::nn::functional::cross_entropy(s->model->forward(s->x), s->y);
    loss.backward();
    s->adam.step();
    do_not_optimize(loss);
  };
  auto iterations = std::make_shared<int64_t>(0);
  return [step, iterations]() -> double {
    using clock = std::chrono::steady_clock;
    auto time = [&](int64_t n) {
      torch::cuda::synchronize();
      const auto t0 = clock::now();
      for (int64_t i = 0; i < n; ++i) step();
      torch::cuda::synchronize();
      return std::chrono::duration<double, std::nano>(clock::now() - t0).count();
    };
    if (*iterations == 0) {
      int64_t n = 1;
      double elapsed = time(n);
      while (elapsed < 1e6 && n < (int64_t{1} << 30)) {
        n *= 4;
        elapsed = time(n);
      }
      *iterations = std::max<int64_t>(1, static_cast<int64_t>(n * (sample_ms() * 1e6) / elapsed));
    }
    return 1e9 * static_cast<double>(*iterations) / time(*iterations);
  };
}

}  // namespace
}  // namespace loom::bench
