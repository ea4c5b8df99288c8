// The CUDA plugin end to end: a few training steps of the Fashion-MNIST CNN on cuda:0 against
// the same steps on the CPU (losses, gradients, weights), with plain SGD and with Adam's fused
// update op; the optimizers' fused update ops (plugins/cuda/src/kernels/optim_steps.cpp)
// against their CPU kernels for every option; and pinned DataLoader batches copied
// asynchronously. Without a GPU every device test skips with the plugin's reason; the
// registration check runs everywhere.
//
// This suite links neither loom::optim nor loom::data. It loads the ops_optim plugin *after*
// the cuda plugin, so the CUDA kernels of the optim:: ops wait for their schemas (Note
// [Kernels wait for their def]), and calls those ops through the dispatcher; the DataLoader
// part compiles in only when the suite links loom::data (its header on the include path).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/core/device_hooks.h"
#include "loom/loom.h"
#include "ops_test_util.h"

#if __has_include("loom/data/dataloader.h")
#define LOOM_TEST_WITH_DATA 1
#include "loom/data/dataloader.h"
#endif

namespace loom {
namespace {

using testing::make_tensor;
using testing::random_values;
using testing::to_doubles;

/// Why the ops_optim plugin could not be loaded ("" when it was).
std::string& optim_missing() {
  static std::string why;
  return why;
}

/// Loads the packs, the cuda plugin and then ops_optim (once); "" when a CUDA device is
/// usable, else why not.
const std::string& cuda_unavailable() {
  static const std::string why = []() -> std::string {
    try {
      PluginLoader::instance().load("ops_core");
      PluginLoader::instance().load("ops_nn");
      PluginLoader::instance().load("cuda");
    } catch (const std::exception& e) {
      return std::string("the cuda plugin could not be loaded: ") + e.what();
    }
    // After cuda on purpose: the order of plugins must not matter (Note [CUDA optimizer
    // steps]).
    try {
      PluginLoader::instance().load("ops_optim");
    } catch (const std::exception& e) {
      optim_missing() = std::string("ops_optim could not be loaded: ") + e.what();
    }
    const DeviceHooks* hooks = find_device_hooks(DeviceType::from_name("cuda"));
    if (hooks == nullptr) return "the cuda plugin registered no device hooks";
    if (hooks->device_count() > 0) return "";
    return hooks->unavailable_reason().empty() ? "0 devices" : hooks->unavailable_reason();
  }();
  return why;
}

#define LOOM_REQUIRE_CUDA()                                     \
  do {                                                          \
    if (!cuda_unavailable().empty()) {                          \
      GTEST_SKIP() << "no CUDA device: " << cuda_unavailable(); \
    }                                                           \
  } while (0)

Device gpu() { return Device(DeviceType::from_name("cuda"), 0); }

/// Largest |a - b| relative to the largest |b| (both on any device).
double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = to_doubles(a.to(kCPU).contiguous());
  const std::vector<double> y = to_doubles(b.to(kCPU).contiguous());
  EXPECT_EQ(x.size(), y.size());
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    diff = std::max(diff, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return diff / scale;
}

/// The Fashion-MNIST CNN of loom train (tools/train/models.cpp) as plain ops on parameters.
struct Cnn {
  std::vector<Tensor> p;  // w1 b1 w2 b2 w3 b3 w4 b4
  static Cnn init() {
    auto param = [](IntArrayRef sizes, int64_t fan_in) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
      return ((rand(sizes) * 2 - 1) * bound).requires_grad_();
    };
    return {{param({32, 1, 3, 3}, 9), param({32}, 9), param({64, 32, 3, 3}, 288), param({64}, 288),
             param({128, 1600}, 1600), param({128}, 1600), param({10, 128}, 128),
             param({10}, 128)}};
  }
  Cnn on(Device d) const {
    Cnn c;
    for (const Tensor& t : p) c.p.push_back(t.detach().to(d).requires_grad_());
    return c;
  }
  Tensor forward(const Tensor& x) const {
    Tensor h = max_pool2d(relu(conv2d(x, p[0], p[1])), {2, 2});
    h = max_pool2d(relu(conv2d(h, p[2], p[3])), {2, 2});
    h = relu(linear(flatten(h, 1), p[4], p[5]));
    return linear(h, p[6], p[7]);
  }
};

// Plain SGD written with ops, so that this test needs no optimizer library: forward, cross
// entropy, backward and the update agree step by step (float32, TF32 off: cuDNN and cuBLAS
// against the reference kernels, so differences are rounding only).
TEST(CudaIntegration, CnnTrainingStepsMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  manual_seed(0);
  const Cnn cpu = Cnn::init();
  const Cnn dev = cpu.on(gpu());
  const Tensor x = randn({32, 1, 28, 28}), y = randint(0, 10, {32});
  const Tensor xd = x.to(gpu()), yd = y.to(gpu());
  for (int step = 0; step < 5; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Tensor lc = cross_entropy(cpu.forward(x), y);
    const Tensor ld = cross_entropy(dev.forward(xd), yd);
    lc.backward();
    ld.backward();
    const double want = lc.item<double>(), got = ld.detach().to(kCPU).item<double>();
    EXPECT_NEAR(got, want, 1e-4 * (1 + std::fabs(want)));
    for (size_t i = 0; i < cpu.p.size(); ++i) {
      ASSERT_TRUE(dev.p[i].grad().defined()) << "parameter " << i << " has no gradient on cuda";
      EXPECT_TRUE(dev.p[i].grad().device() == dev.p[i].device()) << dev.p[i].grad().describe();
      EXPECT_LT(relative_difference(dev.p[i].grad(), cpu.p[i].grad()), 2e-3)
          << "gradient of parameter " << i;
    }
    autograd::NoGradGuard no_grad;
    for (const Cnn* m : {&cpu, &dev}) {
      for (const Tensor& t : m->p) {
        t.sub_(t.grad(), 0.05);
        t.set_grad(Tensor());
      }
    }
  }
  for (size_t i = 0; i < cpu.p.size(); ++i) {
    EXPECT_LT(relative_difference(dev.p[i], cpu.p[i]), 1e-3) << "parameter " << i;
  }
}

/// The fused update ops through the dispatcher, with loom/optim/ops.h's signatures and
/// defaults (that header's functions would need loom::optim linked).
namespace step {
void sgd(const Tensor& p, const Tensor& g, const std::optional<Tensor>& buf, double lr,
         double momentum = 0, double dampening = 0, double weight_decay = 0, bool nesterov = false,
         bool maximize = false, bool first = false) {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("optim::sgd_step_")
                             .typed<void(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                         double, double, double, double, bool, bool, bool)>();
  op(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, first);
}
void adam(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
          const std::optional<Tensor>& vmax, int64_t t, double lr, double beta1 = 0.9,
          double beta2 = 0.999, double eps = 1e-8, double weight_decay = 0, bool amsgrad = false,
          bool maximize = false, bool decoupled = false) {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("optim::adam_step_")
                             .typed<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                         const std::optional<Tensor>&, int64_t, double, double,
                                         double, double, double, bool, bool, bool)>();
  op(p, g, m, v, vmax, t, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled);
}
void rmsprop(const Tensor& p, const Tensor& g, const Tensor& sq, const std::optional<Tensor>& ga,
             const std::optional<Tensor>& buf, double lr, double alpha = 0.99, double eps = 1e-8,
             double weight_decay = 0, double momentum = 0, bool centered = false,
             bool maximize = false) {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("optim::rmsprop_step_")
                             .typed<void(const Tensor&, const Tensor&, const Tensor&,
                                         const std::optional<Tensor>&, const std::optional<Tensor>&,
                                         double, double, double, double, double, bool, bool)>();
  op(p, g, sq, ga, buf, lr, alpha, eps, weight_decay, momentum, centered, maximize);
}
void adagrad(const Tensor& p, const Tensor& g, const Tensor& sum, int64_t t, double lr,
             double lr_decay = 0, double weight_decay = 0, double eps = 1e-10,
             bool maximize = false) {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("optim::adagrad_step_")
                             .typed<void(const Tensor&, const Tensor&, const Tensor&, int64_t,
                                         double, double, double, double, bool)>();
  op(p, g, sum, t, lr, lr_decay, weight_decay, eps, maximize);
}
}  // namespace step

#define LOOM_REQUIRE_OPTIM()                                       \
  do {                                                             \
    (void)cuda_unavailable(); /* loads ops_optim */                \
    if (!optim_missing().empty()) GTEST_SKIP() << optim_missing(); \
  } while (0)

// Runs without a GPU: the CUDA kernels of the optim:: ops, registered before ops_optim defined
// them, are there (Note [CUDA optimizer steps] in plugins/cuda/src/kernels/optim_steps.cpp).
TEST(CudaIntegration, OptimStepOpsHaveCudaKernels) {
  LOOM_REQUIRE_OPTIM();
  if (cuda_unavailable().rfind("the cuda plugin could not be loaded", 0) == 0) {
    GTEST_SKIP() << cuda_unavailable();
  }
  const DispatchKey key = backend_key(DeviceType::from_name("cuda"));
  for (const char* name :
       {"optim::sgd_step_", "optim::adam_step_", "optim::rmsprop_step_", "optim::adagrad_step_"}) {
    const auto op = Dispatcher::instance().find_op(name);
    ASSERT_TRUE(op.has_value()) << name;
    bool found = false;
    for (const KernelInfo& k : Dispatcher::instance().kernels(*op)) {
      found |= k.key == key && k.provider == "cuda";
    }
    EXPECT_TRUE(found) << name << " has no CUDA kernel from the cuda plugin";
  }
}

/// t's values on device, with t's layout when it is a transposed 2-d view (strided case).
Tensor on_device(const Tensor& t, Device device) {
  if (t.dim() == 2 && !t.is_contiguous()) {
    Tensor out = Tensor::empty({t.size(1), t.size(0)}, TensorOptions{}.with(t.dtype()).with(device))
                     .transpose(0, 1);
    copy_(out, t);
    return out;
  }
  Tensor out = Tensor::empty(t.sizes(), TensorOptions{}.with(t.dtype()).with(device));
  copy_(out, t);
  return out;
}

/// One configuration of an update op: how to call it on (param, grad, states...) at a step.
struct StepCase {
  std::string name;
  int states;  ///< state tensors after param and grad
  std::function<void(const std::vector<Tensor>& t, int64_t step)> run;
};

std::vector<StepCase> step_cases() {
  using T = const std::vector<Tensor>&;
  return {
      {"sgd", 0, [](T t, int64_t) { step::sgd(t[0], t[1], std::nullopt, 0.1); }},
      {"sgd momentum nesterov wd", 1,
       [](T t, int64_t s) {
         step::sgd(t[0], t[1], t[2], 0.1, 0.9, 0.0, 0.01, true, false, s == 1);
       }},
      {"sgd momentum dampening maximize", 1,
       [](T t, int64_t s) {
         step::sgd(t[0], t[1], t[2], 0.1, 0.9, 0.1, 0.0, false, true, s == 1);
       }},
      {"adam", 2,
       [](T t, int64_t s) { step::adam(t[0], t[1], t[2], t[3], std::nullopt, s, 1e-2); }},
      {"adam amsgrad wd", 3,
       [](T t, int64_t s) {
         step::adam(t[0], t[1], t[2], t[3], t[4], s, 1e-2, 0.9, 0.999, 1e-8, 0.01, true);
       }},
      {"adamw maximize", 2,
       [](T t, int64_t s) {
         step::adam(t[0], t[1], t[2], t[3], std::nullopt, s, 1e-2, 0.8, 0.99, 1e-8, 0.1, false,
                    true, true);
       }},
      {"rmsprop", 1,
       [](T t, int64_t) { step::rmsprop(t[0], t[1], t[2], std::nullopt, std::nullopt, 1e-2); }},
      {"rmsprop centered momentum wd", 3,
       [](T t, int64_t) {
         step::rmsprop(t[0], t[1], t[2], t[3], t[4], 1e-2, 0.9, 1e-8, 0.01, 0.9, true);
       }},
      {"adagrad", 1, [](T t, int64_t s) { step::adagrad(t[0], t[1], t[2], s, 0.1); }},
      {"adagrad decay wd maximize", 1,
       [](T t, int64_t s) { step::adagrad(t[0], t[1], t[2], s, 0.1, 0.01, 0.01, 1e-10, true); }},
  };
}

TEST(CudaIntegration, OptimStepOpsMatchTheCpuKernels) {
  LOOM_REQUIRE_OPTIM();
  LOOM_REQUIRE_CUDA();
  const std::vector<int64_t> shape = {5, 7};
  for (const StepCase& c : step_cases()) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      for (bool strided : {false, true}) {
        SCOPED_TRACE(c.name + " " + std::string(dtype_name(dtype)) + (strided ? " strided" : ""));
        // param, grad, then states: non-negative where they are averages of squares (the
        // second state of Adam, rmsprop's first), so every square root is real.
        std::vector<Tensor> cpu;
        for (int k = 0; k < 2 + c.states; ++k) {
          std::vector<double> v = random_values(35, 11 + k, -1, 1);
          const bool squares = (c.name.rfind("adam", 0) == 0 && k >= 3) ||
                               (c.name.rfind("rmsprop", 0) == 0 && k == 2) ||
                               (c.name.rfind("adagrad", 0) == 0 && k == 2);
          if (squares) {
            for (double& x : v) x = 1 + x * x;
          }
          cpu.push_back(make_tensor(v, shape, dtype, strided && k != 1));
        }
        std::vector<Tensor> dev;
        for (const Tensor& t : cpu) dev.push_back(on_device(t, gpu()));
        for (int64_t step = 1; step <= 3; ++step) {
          if (step > 1) {  // a fresh gradient each step
            const Tensor g = make_tensor(random_values(35, 100 + step, -1, 1), shape, dtype, false);
            cpu[1] = g;
            dev[1] = on_device(g, gpu());
          }
          c.run(cpu, step);
          c.run(dev, step);
        }
        const double tol = dtype == DType::Float64 ? 1e-12 : 2e-5;
        for (size_t k = 0; k < cpu.size(); ++k) {
          if (k == 1) continue;
          EXPECT_LT(relative_difference(dev[k], cpu[k]), tol) << "tensor " << k;
          EXPECT_EQ(dev[k].is_contiguous(), cpu[k].is_contiguous()) << "the layout stays";
        }
      }
    }
  }
}

TEST(CudaIntegration, OptimStepOpsRefuseMixedDevices) {
  LOOM_REQUIRE_OPTIM();
  LOOM_REQUIRE_CUDA();
  const Tensor p = zeros({3}).to(gpu()), g = zeros({3});
  const Tensor m = zeros({3}).to(gpu()), v = zeros({3}).to(gpu());
  try {
    step::adam(p, g, m, v, std::nullopt, 1, 1e-3);
    FAIL() << "a CPU gradient for a CUDA parameter was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("optim::adam_step_"), std::string::npos) << what;
    EXPECT_NE(what.find("grad"), std::string::npos) << what;
  }
}

// Adam over the CNN, as loom::optim::Adam runs it (one fused adam_step_ per parameter, state
// made with zeros_like on the parameter's device): several steps match the CPU run.
TEST(CudaIntegration, AdamTrainsTheCnnAsOnTheCpu) {
  LOOM_REQUIRE_OPTIM();
  LOOM_REQUIRE_CUDA();
  manual_seed(1);
  const Cnn cpu = Cnn::init();
  const Cnn dev = cpu.on(gpu());
  struct State {
    std::vector<Tensor> m, v;
  };
  auto state_of = [](const Cnn& c) {
    State s;
    for (const Tensor& p : c.p) {
      s.m.push_back(zeros_like(p));
      s.v.push_back(zeros_like(p));
    }
    return s;
  };
  const State sc = state_of(cpu), sd = state_of(dev);
  EXPECT_TRUE(sd.m[0].device().type() == gpu().type()) << sd.m[0].describe();
  const Tensor x = randn({32, 1, 28, 28}), y = randint(0, 10, {32});
  const Tensor xd = x.to(gpu()), yd = y.to(gpu());
  double first = 0, last = 0;
  for (int64_t t = 1; t <= 4; ++t) {
    const Tensor lc = cross_entropy(cpu.forward(x), y);
    const Tensor ld = cross_entropy(dev.forward(xd), yd);
    lc.backward();
    ld.backward();
    autograd::NoGradGuard no_grad;
    for (size_t i = 0; i < cpu.p.size(); ++i) {
      step::adam(cpu.p[i], cpu.p[i].grad(), sc.m[i], sc.v[i], std::nullopt, t, 1e-3);
      step::adam(dev.p[i], dev.p[i].grad(), sd.m[i], sd.v[i], std::nullopt, t, 1e-3);
      cpu.p[i].set_grad(Tensor());
      dev.p[i].set_grad(Tensor());
    }
    last = ld.detach().to(kCPU).item<double>();
    if (t == 1) first = last;
    EXPECT_NEAR(last, lc.item<double>(), 2e-4 * (1 + std::fabs(last))) << "step " << t;
  }
  EXPECT_LT(last, first) << "the loss goes down";
  for (size_t i = 0; i < cpu.p.size(); ++i) {
    // Adam moves every weight by about lr whatever its gradient's size, so a gradient near 0
    // whose sign differs by rounding moves the weights apart by up to 2 lr: the tolerance.
    EXPECT_LT(relative_difference(dev.p[i], cpu.p[i]), 1e-2) << "parameter " << i;
    EXPECT_LT(relative_difference(sd.v[i], sc.v[i]), 1e-3) << "exp_avg_sq of parameter " << i;
  }
}

#if LOOM_TEST_WITH_DATA

// pin_memory on a machine with a GPU: batches come from the plugin's pinned allocator and an
// asynchronous copy of one gives the batch's values once the stream has run.
TEST(CudaIntegration, PinnedBatchesCopyAsynchronously) {
  LOOM_REQUIRE_CUDA();
  const Tensor images = randn({40, 1, 4, 4});
  const Tensor labels = randint(0, 10, {40});
  auto ds = std::make_shared<data::TensorDataset>(std::vector<Tensor>{images, labels});
  data::DataLoaderOptions o;
  o.batch_size = 16;
  o.pin_memory = true;
  o.num_workers = 2;
  data::DataLoader loader(ds, o);
  ASSERT_NE(data::pinned_host_allocator(), nullptr);
  int64_t seen = 0;
  for (data::Batch& b : loader) {
    for (const Tensor& t : b) {
      EXPECT_TRUE(data::is_pinned(t)) << t.describe();
      Tensor d = Tensor::empty(t.sizes(), TensorOptions{}.with(t.dtype()).with(gpu()));
      copy_(d, t, /*non_blocking=*/true);
      find_device_hooks(gpu().type())->synchronize(0);  // before b (pinned) is released
      EXPECT_EQ(to_doubles(d.to(kCPU)), to_doubles(t));
    }
    seen += b[0].size(0);
  }
  EXPECT_EQ(seen, 40);
}

#endif  // LOOM_TEST_WITH_DATA

}  // namespace
}  // namespace loom
