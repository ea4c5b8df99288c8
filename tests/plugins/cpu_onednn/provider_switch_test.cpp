// Swapping CPU providers at run time, as a user does: the same small CNN trained with the
// reference kernels and with oneDNN agrees; switching by API call, per op, and by unloading
// the plugin in the middle of a run leaves the run going; LOOM_CPU_PROVIDER and
// `loom ops --backend CPU` show the choice.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/autograd/autograd.h"
#include "loom/core/generator.h"
#include "loom/ops/nn/convolution.h"
#include "loom/ops/nn/loss.h"
#include "loom/ops/nn/pooling.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

class ProviderSwitch : public ::testing::Test {
 protected:
  void SetUp() override {
    load_onednn();
    Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, "");
  }
};

/// A tiny CNN (conv 1->4 3x3, relu, max pool 2, linear 4*3*3 -> 3) with fixed weights.
struct TinyCnn {
  Tensor conv_w, conv_b, fc_w, fc_b;
  explicit TinyCnn(uint64_t seed) {
    manual_seed(seed);
    conv_w = (randn({4, 1, 3, 3}) * 0.3).requires_grad_();
    conv_b = (randn({4}) * 0.1).requires_grad_();
    fc_w = (randn({3, 36}) * 0.2).requires_grad_();
    fc_b = (randn({3}) * 0.1).requires_grad_();
  }
  std::vector<Tensor> params() const { return {conv_w, conv_b, fc_w, fc_b}; }
  Tensor forward(const Tensor& x) const {
    Tensor h = max_pool2d(relu(conv2d(x, conv_w, conv_b)), {2, 2});
    return linear(flatten(h, 1), fc_w, fc_b);
  }
  /// One SGD step on (x, y); returns the loss.
  double step(const Tensor& x, const Tensor& y, double lr = 0.1) {
    for (const Tensor& p : params()) p.set_grad(Tensor());
    Tensor loss = cross_entropy(forward(x), y);
    loss.backward();
    autograd::NoGradGuard no_grad;
    for (const Tensor& p : params()) p.sub_(p.grad() * lr);
    return loss.item<double>();
  }
};

struct Batch {
  Tensor x, y;
};

Batch batch(uint64_t seed) {
  manual_seed(seed);
  return {randn({8, 1, 8, 8}), randint(0, 3, {8})};
}

/// The losses of n steps, calling between(i) before step i.
std::vector<double> train(int n, const std::function<void(int)>& between = [](int) {}) {
  TinyCnn model(7);
  std::vector<double> losses;
  for (int i = 0; i < n; ++i) {
    between(i);
    const Batch b = batch(100 + static_cast<uint64_t>(i));
    losses.push_back(model.step(b.x, b.y));
  }
  return losses;
}

void expect_same_run(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "step " << i;
  }
}

bool active_is(std::string_view op, const std::string& provider) {
  for (const KernelInfo& k : Dispatcher::instance().kernels(Dispatcher::instance().find_op_or_throw(op))) {
    if (k.key == DispatchKey::CPU && k.active) return k.provider == provider;
  }
  return false;
}

TEST_F(ProviderSwitch, LoadingThePluginMakesOneDnnActive) {
  EXPECT_TRUE(active_is("aten::mm", "onednn"));
  EXPECT_TRUE(active_is("aten::convolution", "onednn"));
}

TEST_F(ProviderSwitch, TheSameModelTrainsAlikeWithEachProvider) {
  const auto reference = with_provider("reference", [] { return train(6); });
  const auto onednn = with_provider("onednn", [] { return train(6); });
  expect_same_run(onednn, reference);
  EXPECT_LT(reference.back(), reference.front()) << "the model learns";
}

TEST_F(ProviderSwitch, SwitchingByApiCallInTheMiddleOfARun) {
  const auto reference = with_provider("reference", [] { return train(6); });
  Dispatcher& d = Dispatcher::instance();
  const auto mixed = train(6, [&](int i) {
    d.set_preferred_provider(DispatchKey::CPU, i % 2 ? "reference" : "onednn");
    EXPECT_TRUE(active_is("aten::mm", i % 2 ? "reference" : "onednn"));
  });
  d.set_preferred_provider(DispatchKey::CPU, "");
  expect_same_run(mixed, reference);
}

TEST_F(ProviderSwitch, PerOpOverride) {
  const auto reference = with_provider("reference", [] { return train(4); });
  Dispatcher& d = Dispatcher::instance();
  d.set_provider_override("aten::convolution", DispatchKey::CPU, "reference");
  EXPECT_TRUE(active_is("aten::convolution", "reference"));
  EXPECT_TRUE(active_is("aten::mm", "onednn"));
  const auto mixed = train(4);
  d.set_provider_override("aten::convolution", DispatchKey::CPU, "");
  EXPECT_TRUE(active_is("aten::convolution", "onednn"));
  expect_same_run(mixed, reference);
}

TEST_F(ProviderSwitch, UnloadingThePluginInTheMiddleOfARunFallsBackToTheReference) {
  const auto reference = with_provider("reference", [] { return train(6); });
  PluginLoader& loader = PluginLoader::instance();
  const auto run = train(6, [&](int i) {
    if (i == 3) {
      loader.unload("cpu_onednn");
      EXPECT_FALSE(loader.is_loaded("cpu_onednn"));
      EXPECT_TRUE(active_is("aten::mm", "reference"));
    }
  });
  expect_same_run(run, reference);
  loader.load("cpu_onednn");  // and back again
  EXPECT_TRUE(active_is("aten::mm", "onednn"));
  expect_same_run(train(6), reference);
}

TEST_F(ProviderSwitch, Float64IsHandedToTheReference) {
  manual_seed(3);
  Tensor a = randn({16, 16}, DType::Float64), b = randn({16, 16}, DType::Float64);
  const Tensor ref = with_provider("reference", [&] { return a.matmul(b); });
  const Tensor dnn = with_provider("onednn", [&] { return a.matmul(b); });
  expect_allclose(dnn, ref, 0, 0, "float64 mm is the reference's, bit for bit");
}

TEST_F(ProviderSwitch, AMalformedCallGetsTheReferenceError) {
  Tensor a = Tensor::empty({2, 3}), b = Tensor::empty({4, 5});
  const std::string ref = with_provider("reference", [&] { return message_of([&] { a.mm(b); }); });
  const std::string dnn = with_provider("onednn", [&] { return message_of([&] { a.mm(b); }); });
  EXPECT_EQ(dnn, ref);
  EXPECT_TRUE(contains(dnn, "2x3 and 4x5")) << dnn;
}

/// Output of a shell command.
std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  pclose(p);
  return out;
}

/// The provider `loom ops --backend CPU` marks active for aten::mm, with env set.
std::string loom_ops_active_mm(const std::string& env) {
  const std::string out = run(env + " " + LOOM_TEST_BIN_DIR "/loom ops --backend CPU 2>&1");
  const size_t at = out.find("aten::mm(Tensor self, Tensor mat2)");
  if (at == std::string::npos) return "(aten::mm not listed)";
  const size_t end = out.find("\n\n", at);
  const std::string block = out.substr(at, end == std::string::npos ? std::string::npos : end - at);
  const size_t star = block.find("*  ");
  if (star == std::string::npos) return "(no active provider)";
  const size_t name = star + 3;
  return block.substr(name, block.find(' ', name) - name);
}

TEST_F(ProviderSwitch, LoomOpsShowsBothProvidersAndTheEnvironmentChoosesOne) {
  const std::string plugins = "LOOM_PLUGIN_PATH=" LOOM_TEST_PLUGIN_DIR_MAIN;
  EXPECT_EQ(loom_ops_active_mm(plugins), "onednn");
  EXPECT_EQ(loom_ops_active_mm(plugins + " LOOM_CPU_PROVIDER=reference"), "reference");
  EXPECT_EQ(loom_ops_active_mm(plugins + " LOOM_CPU_PROVIDER=onednn"), "onednn");
}

}  // namespace
}  // namespace loom::testing
