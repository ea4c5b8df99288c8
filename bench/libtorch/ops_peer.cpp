// The libtorch side of the ops.* benchmarks (bench/ops_bench.cpp): the same shapes through the
// same ATen ops on inference tensors, 2 threads; adam.10M through the fastest Adam this
// libtorch has on the CPU (at::_fused_adam_, else torch::optim::Adam).
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/optim/adam.h>

#include <cstdio>
#include <memory>

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

// compile.pointwise.4M (bench/compile_bench.cpp): the chain gelu(x * w + b) + r, eagerly.
LOOM_BENCH_LIBTORCH_PEER("compile.pointwise.4M") {
  inference_mode();
  const at::Tensor x = at::rand({2048, 2048}), w = at::rand({2048}), b = at::rand({2048}),
                   r = at::rand({2048, 2048});
  auto side =
      ns_per_call([=] { do_not_optimize(at::add(at::gelu(at::add(at::mul(x, w), b)), r)); });
  return [side]() { return side()[0] / 1e6; };
}

// compile.pointwise_train.4M: the same chain with x, w, b requiring grad, forward and
// backward with a dense output gradient, eagerly (autograd on: inference mode off here).
LOOM_BENCH_LIBTORCH_PEER("compile.pointwise_train.4M") {
  c10::InferenceMode off(false);
  const at::Tensor x = at::rand({2048, 2048}).requires_grad_(),
                   w = at::rand({2048}).requires_grad_(), b = at::rand({2048}).requires_grad_(),
                   r = at::rand({2048, 2048}), gout = at::rand({2048, 2048});
  auto side = ns_per_call([=] {
    c10::InferenceMode off_here(false);
    at::Tensor out = at::add(at::gelu(at::add(at::mul(x, w), b)), r);
    out.backward(gout);
    for (const at::Tensor& t : {x, w, b}) t.mutable_grad().reset();
  });
  return [side]() { return side()[0] / 1e6; };
}

// compile.softmax.4096x1024 and compile.layer_norm.4096x1024: libtorch's fused softmax and
// layer_norm ops (what a PyTorch user calls), against Loom's compiled written-out forms.
LOOM_BENCH_LIBTORCH_PEER("compile.softmax.4096x1024") {
  inference_mode();
  const at::Tensor x = at::randn({4096, 1024});
  auto side = ns_per_call([=] { do_not_optimize(at::softmax(x, -1)); });
  return [side]() { return side()[0] / 1e6; };
}

LOOM_BENCH_LIBTORCH_PEER("compile.layer_norm.4096x1024") {
  inference_mode();
  const at::Tensor x = at::randn({4096, 1024}), w = at::rand({1024}), b = at::rand({1024});
  auto side = ns_per_call([=] { do_not_optimize(at::layer_norm(x, {1024}, w, b, 1e-5)); });
  return [side]() { return side()[0] / 1e6; };
}

// The same with autograd (inference mode off here): forward, then backward with a dense
// output gradient, gradients reset.
template <typename F>
Side row_train_peer(F fn) {
  c10::InferenceMode off(false);
  const at::Tensor x = at::randn({4096, 1024}).requires_grad_(),
                   w = at::rand({1024}).requires_grad_(), b = at::rand({1024}).requires_grad_(),
                   gout = at::randn({4096, 1024});
  auto side = ns_per_call([=] {
    c10::InferenceMode off_here(false);
    fn(x, w, b).backward(gout);
    for (const at::Tensor& t : {x, w, b}) t.mutable_grad().reset();
  });
  return [side]() { return side()[0] / 1e6; };
}

LOOM_BENCH_LIBTORCH_PEER("compile.softmax_train.4096x1024") {
  return row_train_peer(
      [](const at::Tensor& x, const at::Tensor&, const at::Tensor&) { return at::softmax(x, -1); });
}

LOOM_BENCH_LIBTORCH_PEER("compile.layer_norm_train.4096x1024") {
  return row_train_peer([](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    return at::layer_norm(x, {1024}, w, b, 1e-5);
  });
}

LOOM_BENCH_LIBTORCH_PEER("add.1elem") {
  inference_mode();
  const at::Tensor a = at::full({1}, 1.5), b = at::full({1}, 2.5);
  return ns_per_call([=] { do_not_optimize(at::add(a, b)); });
}

LOOM_BENCH_LIBTORCH_PEER("add.16M.out") {
  inference_mode();
  const at::Tensor a = at::full({k16M}, 1.5), b = at::full({k16M}, 2.5);
  at::Tensor out = at::zeros({k16M});
  auto side = ns_per_call([=]() mutable { do_not_optimize(at::add_out(out, a, b)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH_LIBTORCH_PEER("add.16M.alloc") {
  inference_mode();
  const at::Tensor a = at::full({k16M}, 1.5), b = at::full({k16M}, 2.5);
  auto side = ns_per_call([=] { do_not_optimize(at::add(a, b)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH_LIBTORCH_PEER("sum.16M") {
  inference_mode();
  const at::Tensor a = at::full({k16M}, 0.5);
  auto side = ns_per_call([=] { do_not_optimize(at::sum(a)); });
  return [side]() { return 4.0 * static_cast<double>(k16M) / side()[0]; };
}

LOOM_BENCH_LIBTORCH_PEER("memcpy.16M") {
  inference_mode();
  const at::Tensor src = at::full({k16M}, 1.5);
  at::Tensor dst = at::zeros({k16M});
  auto side = ns_per_call([=]() mutable { do_not_optimize(dst.copy_(src)); });
  return [side]() { return 2.0 * 4.0 * static_cast<double>(k16M) / side()[0]; };
}

/// Deterministic values in [-0.5, 0.5), the pattern of the Loom side.
at::Tensor pattern(at::IntArrayRef sizes) {
  at::Tensor t = at::empty(sizes);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
  return t;
}

at::Tensor softmax_input() {
  at::Tensor x = at::empty({4096, 1024});
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < 4096 * 1024; ++i) p[i] = static_cast<float>((i * 7919) % 1000) / 250.0f;
  return x;
}

template <typename F>
Side us_per_call(F body) {
  auto side = ns_per_call(std::move(body));
  return [side]() { return side()[0] / 1000.0; };
}

LOOM_BENCH_LIBTORCH_PEER("softmax.4096x1024") {
  inference_mode();
  const at::Tensor x = softmax_input();
  return us_per_call([=] { do_not_optimize(at::softmax(x, 1)); });
}

LOOM_BENCH_LIBTORCH_PEER("log_softmax.4096x1024") {
  inference_mode();
  const at::Tensor x = softmax_input();
  return us_per_call([=] { do_not_optimize(at::log_softmax(x, 1)); });
}

LOOM_BENCH_LIBTORCH_PEER("softmax.bwd.4096x1024") {
  inference_mode();
  const at::Tensor y = at::softmax(softmax_input(), 1), g = pattern({4096, 1024});
  return us_per_call(
      [=] { do_not_optimize(at::_softmax_backward_data(g, y, 1, at::ScalarType::Float)); });
}

LOOM_BENCH_LIBTORCH_PEER("relu.bwd.16M") {
  inference_mode();
  const at::Tensor g = at::full({k16M}, 1.5), x = pattern({k16M});
  auto side = ns_per_call([=] { do_not_optimize(at::threshold_backward(g, x, 0)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

constexpr int64_t kPoolN = 32, kPoolC = 64, kPoolHW = 56;

LOOM_BENCH_LIBTORCH_PEER("maxpool2d.fwd") {
  inference_mode();
  const at::Tensor x = pattern({kPoolN, kPoolC, kPoolHW, kPoolHW});
  return us_per_call([=] { do_not_optimize(at::max_pool2d(x, {2, 2}, {2, 2})); });
}

LOOM_BENCH_LIBTORCH_PEER("maxpool2d.bwd") {
  // What libtorch's autograd runs for max_pool2d: the indices saved by the forward.
  inference_mode();
  const at::Tensor x = pattern({kPoolN, kPoolC, kPoolHW, kPoolHW});
  const at::Tensor g = pattern({kPoolN, kPoolC, kPoolHW / 2, kPoolHW / 2});
  const at::Tensor indices = std::get<1>(at::max_pool2d_with_indices(x, {2, 2}, {2, 2}));
  return us_per_call([=] {
    do_not_optimize(at::max_pool2d_with_indices_backward(g, x, {2, 2}, {2, 2}, {0, 0}, {1, 1},
                                                         false, indices));
  });
}

constexpr int64_t k10M = 10'000'000;
double adam_gbps(double ns) { return 28.0 * static_cast<double>(k10M) / ns; }

LOOM_BENCH_LIBTORCH_PEER("adam.10M") {
  inference_mode();
  const at::Tensor p = pattern({k10M}), g = pattern({k10M}), m = at::zeros({k10M}),
                   v = at::zeros({k10M}), step = at::ones({}, at::kFloat);
  auto fused = [=] {
    at::_fused_adam_({p}, {g}, {m}, {v}, {}, {step}, 1e-3, 0.9, 0.999, 0.0, 1e-8, false, false);
    do_not_optimize(p);
  };
  try {
    fused();  // a libtorch without a CPU kernel for it (1.13: CUDA only) throws here
    std::printf("  adam.10M %s: at::_fused_adam_ (one fused CPU kernel)\n",
                LOOM_BENCH_LIBTORCH_NAME);
    auto side = ns_per_call(fused);
    return [side]() { return adam_gbps(side()[0]); };
  } catch (const c10::Error&) {
  }
  // torch::optim::Adam needs a leaf tensor with a gradient: normal mode, not inference.
  std::printf("  adam.10M %s: torch::optim::Adam (no CPU _fused_adam_ in this version)\n",
              LOOM_BENCH_LIBTORCH_NAME);
  struct State {
    at::Tensor param;
    std::unique_ptr<torch::optim::Adam> adam;
  };
  auto s = std::make_shared<State>();
  {
    c10::InferenceMode off(false);
    s->param = pattern({k10M}).clone().set_requires_grad(true);
    s->param.mutable_grad() = pattern({k10M}).clone();
    s->adam = std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{s->param},
                                                   torch::optim::AdamOptions(1e-3));
  }
  auto side = ns_per_call([s] {
    c10::InferenceMode off(false);
    s->adam->step();
    do_not_optimize(s->param);
  });
  return [side]() { return adam_gbps(side()[0]); };
}

}  // namespace
}  // namespace loom::bench
