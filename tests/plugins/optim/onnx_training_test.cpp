// The fused update ops against ONNX's own test data for its training-preview optimizers
// (ai.onnx.preview.training Adagrad, Adam, Momentum; Debian's libonnx-testdata folders
// test_adagrad, test_adam, test_momentum, test_nesterov_momentum and their *_multiple forms),
// read with the repo's protobuf reader. Each ONNX rule is mapped onto PyTorch's arguments:
//
//   Adagrad  r = R / (1 + T * decay_factor); g = norm_coefficient * X + G; H' = H + g^2;
//            X' = X - r * g / (sqrt(H') + epsilon)
//            = adagrad_step_(lr = R, lr_decay = decay_factor, weight_decay = norm_coefficient,
//              eps = epsilon, step = T + 1): ONNX's T counts the updates made before this one,
//              PyTorch's step counts this one too.
//   Momentum g = norm_coefficient * X + G; V' = alpha * V + beta' * g, beta' = beta (T > 0) or 1
//            (T == 0); X' = X - R * V' (standard) or X - R * (g + alpha * V') (nesterov)
//            = sgd_step_(lr = R, momentum = alpha, dampening = 1 - beta' , weight_decay =
//              norm_coefficient, nesterov = (mode == "nesterov"), is_first_step = false).
//              On the first update ONNX keeps alpha * V while PyTorch's first step replaces the
//              buffer by g (is_first_step); the two agree when V starts at zero, which ONNX's
//              data does not assume, so T == 0 maps to dampening 0 with the buffer kept.
//              (PyTorch's SGD class refuses Nesterov with dampening; the op computes it.)
//   Adam     g = norm_coefficient * X + G; V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta)
//            g^2; X' = X - R * sqrt(1 - beta^T) / (1 - alpha^T) * V' / (sqrt(H') + epsilon), then
//            X' *= 1 - norm_coefficient_post
//            = adam_step_(lr = R, beta1 = alpha, beta2 = beta, weight_decay = norm_coefficient,
//              step = T, eps = epsilon / sqrt(1 - beta^T)): PyTorch adds eps to the
//              bias-corrected root, ONNX to the raw one, so ONNX's epsilon is scaled to match.
//              ONNX's T == 0 means no bias correction, which PyTorch's step count cannot say
//              (step 0 would divide by zero): it maps to step = 2^40, where beta^step underflows
//              to 0 and both corrections are exactly 1. norm_coefficient_post (a decay after the
//              update) has no PyTorch counterpart; a folder that used it would be reported, not
//              mapped (Debian's do not).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "loom/optim/ops.h"
#include "onnx_proto.h"
#include "onnx_runner.h"
#include "onnx_tensor.h"
#include "ops_test_util.h"

namespace loom::optim {
namespace {

namespace fs = std::filesystem;
using onnx::AttributeProto;
using onnx::ModelProto;
using onnx::NodeProto;

/// One ONNX test folder: its node's attributes, inputs and expected outputs.
struct OnnxCase {
  NodeProto node;
  std::vector<Tensor> inputs, outputs;
  float attr(const std::string& name, float fallback) const {
    for (const AttributeProto& a : node.attribute) {
      if (a.name == name) return a.f;
    }
    return fallback;
  }
  std::string attr_string(const std::string& name, const std::string& fallback) const {
    for (const AttributeProto& a : node.attribute) {
      if (a.name == name) return a.s;
    }
    return fallback;
  }
};

/// Reads a folder; nullopt (and a skip) if libonnx-testdata is not installed.
std::optional<OnnxCase> read_case(const std::string& name) {
  const fs::path dir = fs::path(onnx::kDefaultNodeTestDir) / name;
  if (!fs::exists(dir / "model.onnx")) return std::nullopt;
  OnnxCase c;
  const ModelProto model = onnx::parse_model(onnx::read_file((dir / "model.onnx").string()));
  EXPECT_EQ(model.graph.node.size(), 1u);
  c.node = model.graph.node.at(0);
  const fs::path data = dir / "test_data_set_0";
  for (size_t i = 0; i < c.node.input.size(); ++i) {
    c.inputs.push_back(onnx::to_tensor(onnx::parse_tensor(
        onnx::read_file((data / ("input_" + std::to_string(i) + ".pb")).string()))));
  }
  for (size_t i = 0; i < c.node.output.size(); ++i) {
    c.outputs.push_back(onnx::to_tensor(onnx::parse_tensor(
        onnx::read_file((data / ("output_" + std::to_string(i) + ".pb")).string()))));
  }
  return c;
}

double scalar(const Tensor& t) { return loom::testing::to_doubles(t).at(0); }

/// A copy of t (which the op then updates in place), in its own dtype.
Tensor copy_of(const Tensor& t) {
  return loom::testing::make_tensor(loom::testing::to_doubles(t), t.sizes(), t.dtype());
}

void expect_matches(const Tensor& got, const Tensor& want, const std::string& what) {
  const std::vector<double> g = loom::testing::to_doubles(got), w = loom::testing::to_doubles(want);
  ASSERT_EQ(sizes_str(got.sizes()), sizes_str(want.sizes())) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], w[i], 1e-6 + 1e-5 * std::fabs(w[i])) << what << " element " << i;
  }
}

/// The number of tensors each group of an ONNX optimizer node updates.
size_t group_size(const OnnxCase& c, size_t groups) {
  EXPECT_EQ((c.inputs.size() - 2) % groups, 0u);
  return (c.inputs.size() - 2) / groups;
}

/// Checks one Adagrad folder; false if it is not installed.
bool check_adagrad(const std::string& name) {
  SCOPED_TRACE(name);
  const std::optional<OnnxCase> c = read_case(name);
  if (!c) return false;
  EXPECT_EQ(c->node.op_type, "Adagrad");
  const double r = scalar(c->inputs[0]);
  const auto t = static_cast<int64_t>(scalar(c->inputs[1]));
  const double decay = c->attr("decay_factor", 0), eps = c->attr("epsilon", 1e-6f),
               norm = c->attr("norm_coefficient", 0);
  const size_t n = group_size(*c, 3);
  for (size_t i = 0; i < n; ++i) {
    const Tensor x = copy_of(c->inputs[2 + i]), h = copy_of(c->inputs[2 + 2 * n + i]);
    adagrad_step_(x, c->inputs[2 + n + i], h, t + 1, r, decay, norm, eps);
    expect_matches(x, c->outputs[i], name + " X" + std::to_string(i));
    expect_matches(h, c->outputs[n + i], name + " H" + std::to_string(i));
  }
  return true;
}

/// Checks one Momentum folder; false if it is not installed.
bool check_momentum(const std::string& name) {
  SCOPED_TRACE(name);
  const std::optional<OnnxCase> c = read_case(name);
  if (!c) return false;
  EXPECT_EQ(c->node.op_type, "Momentum");
  const double r = scalar(c->inputs[0]);
  const auto t = static_cast<int64_t>(scalar(c->inputs[1]));
  const double alpha = c->attr("alpha", 0), beta = c->attr("beta", 0),
               norm = c->attr("norm_coefficient", 0);
  const std::string mode = c->attr_string("mode", "standard");
  EXPECT_TRUE(mode == "standard" || mode == "nesterov") << mode;
  const size_t n = group_size(*c, 3);
  for (size_t i = 0; i < n; ++i) {
    const Tensor x = copy_of(c->inputs[2 + i]), v = copy_of(c->inputs[2 + 2 * n + i]);
    const double beta_t = t > 0 ? beta : 1.0;
    sgd_step_(x, c->inputs[2 + n + i], v, r, alpha, 1 - beta_t, norm, mode == "nesterov", false,
              false);
    expect_matches(x, c->outputs[i], name + " X" + std::to_string(i));
    expect_matches(v, c->outputs[n + i], name + " V" + std::to_string(i));
  }
  return true;
}

/// Checks one Adam folder; false if it is not installed.
bool check_adam(const std::string& name, std::optional<double> epsilon = std::nullopt) {
  SCOPED_TRACE(name);
  const std::optional<OnnxCase> c = read_case(name);
  if (!c) return false;
  EXPECT_EQ(c->node.op_type, "Adam");
  const double r = scalar(c->inputs[0]);
  const auto t = static_cast<int64_t>(scalar(c->inputs[1]));
  double eps = c->attr("epsilon", 1e-6f);
  const double alpha = c->attr("alpha", 0.9f), beta = c->attr("beta", 0.999f),
               norm = c->attr("norm_coefficient", 0),
               norm_post = c->attr("norm_coefficient_post", 0);
  if (epsilon) eps = *epsilon;
  if (norm_post != 0) {
    ADD_FAILURE() << "norm_coefficient_post has no PyTorch counterpart (" << norm_post << ")";
    return true;
  }
  const int64_t step = t > 0 ? t : int64_t{1} << 40;
  const double bias_correction2 = 1 - std::pow(beta, static_cast<double>(step));
  if (t == 0) {
    EXPECT_EQ(bias_correction2, 1.0);
  }
  const double eps_torch = eps / std::sqrt(bias_correction2);
  const size_t n = group_size(*c, 4);
  for (size_t i = 0; i < n; ++i) {
    const Tensor x = copy_of(c->inputs[2 + i]), v = copy_of(c->inputs[2 + 2 * n + i]),
                 h = copy_of(c->inputs[2 + 3 * n + i]);
    adam_step_(x, c->inputs[2 + n + i], v, h, std::nullopt, step, r, alpha, beta, eps_torch, norm);
    expect_matches(x, c->outputs[i], name + " X" + std::to_string(i));
    expect_matches(v, c->outputs[n + i], name + " V" + std::to_string(i));
    expect_matches(h, c->outputs[2 * n + i], name + " H" + std::to_string(i));
  }
  return true;
}

TEST(OnnxTraining, AdagradMatchesOnnx) {
  for (const char* name : {"test_adagrad", "test_adagrad_multiple"}) {
    if (!check_adagrad(name)) GTEST_SKIP() << name << " is missing (libonnx-testdata)";
  }
}

TEST(OnnxTraining, MomentumMatchesOnnx) {
  for (const char* name : {"test_momentum", "test_momentum_multiple", "test_nesterov_momentum"}) {
    if (!check_momentum(name)) GTEST_SKIP() << name << " is missing (libonnx-testdata)";
  }
}

TEST(OnnxTraining, AdamMatchesOnnx) {
  if (!check_adam("test_adam")) GTEST_SKIP() << "test_adam is missing (libonnx-testdata)";
  // ONNX 1.12 computed test_adam_multiple's expected values with epsilon 1e-2 while its node
  // carries no epsilon attribute (the default is 1e-6; tools/loom/onnx lists it as known bad):
  // checked with the epsilon the values were made with.
  check_adam("test_adam_multiple", 1e-2);
}

}  // namespace
}  // namespace loom::optim
