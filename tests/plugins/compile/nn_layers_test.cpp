// Every nn layer and loss, the transformer encoder layer and the two `loom train` models,
// compiled with loom::compile against eager: the values of a capture and of two replays, and
// with grad mode on the gradients of the input and of every parameter.
//
// A layer is compiled on one copy and run eagerly on a twin with the same state, both called
// in the same pattern: so layers that change their buffers on every call (batch norm's
// running statistics) are compared call by call, buffers included. Random layers draw the
// same values on both sides from manual_seed right before each call.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "compile_test_util.h"
#include "loom/autograd/grad_mode.h"
#include "loom/compile/compile.h"
#include "loom/core/warning.h"
#include "loom/loom.h"
#include "loom/nn/nn.h"
#include "models.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using graph::testing::CaughtWarnings;

using loom::testing::expect_close;
using loom::testing::to_doubles;
using Factory = std::function<std::shared_ptr<nn::Module>()>;

// One LOOM_CACHE_DIR for the process: graphs that several cases share (the same activation on
// the same shape) are built once.
::testing::Environment* const cache_dir =
    ::testing::AddGlobalTestEnvironment(new graph::testing::ProcessCacheDir("nn-layers-test"));

class NnCompiledTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
};

/// got equals want within float32 rounding (both undefined is equal too). A gradient is a sum
/// over the batch (and time) whose terms may cancel, so its rounding scales with its largest
/// element, not with each element: `gradient` widens atol to 1e-6 of that.
void expect_same(const Tensor& got, const Tensor& want, const std::string& what,
                 bool gradient = false) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.defined(), want.defined());
  if (!want.defined()) return;
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> w = to_doubles(want);
  double largest = 1.0;
  for (double v : w) largest = std::max(largest, std::fabs(v));
  expect_close(got, want.sizes(), w, 1e-5, gradient ? 1e-6 * largest : 1e-6);
}

/// The gradients of a's parameters equal those of b's (twins: the same parameters in order).
void expect_same_grads(const nn::Module& a, const nn::Module& b) {
  const nn::OrderedDict<Tensor> pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.keys(), pb.keys());
  auto ib = pb.begin();
  for (const auto& [name, p] : pa)
    expect_same(p.grad(), (ib++)->second.grad(), name + ".grad", true);
}

/// a's buffers equal b's (running statistics, the batch count).
void expect_same_buffers(const nn::Module& a, const nn::Module& b) {
  const nn::OrderedDict<Tensor> ba = a.named_buffers(), bb = b.named_buffers();
  ASSERT_EQ(ba.keys(), bb.keys());
  auto ib = bb.begin();
  for (const auto& [name, t] : ba) expect_same(t, (ib++)->second, name);
}

/// sum(out * w) with w fixed per test, made on first use (out's shape): a backward seed that
/// weighs each element differently, so a gradient routed to the wrong element shows.
Tensor weighted_sum(const Tensor& out, Tensor& w) {
  if (!w.defined()) {
    manual_seed(3);
    w = randn(out.sizes());
  }
  return sum(mul(out, w));
}

// ---- one-input layers ---------------------------------------------------------------------------

/// A layer called with one tensor.
struct LayerCase {
  /// name (letters, digits, '_') names the test; make gives a fresh layer (the same one after
  /// the same seed); input is the input's sizes.
  LayerCase(std::string name, Factory make, std::vector<int64_t> input)
      : name(std::move(name)), make(std::move(make)), input(std::move(input)) {}
  /// An int64 input of indices in [0, n) instead of a float one.
  LayerCase& indices_below(int64_t n) {
    indices = n;
    return *this;
  }
  /// Float inputs are randn * s.
  LayerCase& scaled(double s) {
    scale = s;
    return *this;
  }
  /// In training the layer reads a tensor value (item()): compile keeps its graph but runs it
  /// eagerly (a graph break, with one warning), so calls after the capture are eager ones.
  LayerCase& breaks_graph() {
    graph_break = true;
    return *this;
  }
  /// The graph has fused groups (generated loops) in every mode.
  LayerCase& fuses() {
    fused = true;
    return *this;
  }
  /// The input is a transposed view (its last two dims swapped): strides the captured graph and
  /// a fused loop must honour.
  LayerCase& transposed() {
    transposed_input = true;
    return *this;
  }
  /// A known compile bug: the case is skipped with this reason.
  LayerCase& known_bug(std::string why) {
    bug = std::move(why);
    return *this;
  }

  std::string name;
  Factory make;
  std::vector<int64_t> input;
  int64_t indices = 0;            ///< > 0: an int64 input of indices in [0, indices)
  double scale = 3.0;             ///< float inputs are randn * scale (reaching clamps and kinks)
  bool graph_break = false;       ///< in training, runs eagerly after its capture
  bool fused = false;             ///< has fused groups
  bool transposed_input = false;  ///< the input is a non-contiguous view
  std::string bug;                ///< non-empty: skipped with this reason
};

void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.name; }

/// make_shared<M>(args...) as a Factory.
template <class M, class... A>
Factory layer(A... args) {
  return [=] { return std::make_shared<M>(args...); };
}

enum class Mode {
  Train,      ///< train(), grad mode on: values and gradients
  Eval,       ///< eval(), grad mode on: values and gradients
  Inference,  ///< eval() under NoGradGuard: values
};

void check_layer(const LayerCase& c, Mode mode) {
  if (!c.bug.empty()) GTEST_SKIP() << c.bug;
  const bool grad = mode != Mode::Inference;
  std::optional<autograd::NoGradGuard> no_grad;
  if (!grad) no_grad.emplace();
  manual_seed(1);
  const std::shared_ptr<nn::Module> compiled_layer = c.make(), eager = c.make();
  eager->load_state_dict(compiled_layer->state_dict());
  compiled_layer->train(mode == Mode::Train);
  eager->train(mode == Mode::Train);
  CompiledModule compiled = compile(compiled_layer);
  const CaughtWarnings warnings;

  const bool input_grad = grad && c.indices == 0;
  Tensor w;
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(call == 0 ? std::string("capture") : "replay " + std::to_string(call));
    manual_seed(20 + call);  // new values each call: a replay must read its input
    const Tensor x = c.indices > 0 ? randint(0, c.indices, c.input) : mul(randn(c.input), c.scale);
    Tensor xc = x.clone(), xe = x.clone();
    if (c.transposed_input) {
      xc = xc.transpose(-2, -1);
      xe = xe.transpose(-2, -1);
      ASSERT_FALSE(xc.is_contiguous());
    }
    if (input_grad) {
      xc.requires_grad_();
      xe.requires_grad_();
    }
    manual_seed(10 + call);  // the same dropout mask on both sides
    const Tensor yc = compiled(xc);
    manual_seed(10 + call);
    const Tensor ye = (*eager)(xe);
    expect_same(yc, ye, "output");
    expect_same_buffers(*compiled_layer, *eager);
    if (!grad || !ye.requires_grad()) continue;
    ASSERT_TRUE(yc.requires_grad());
    weighted_sum(yc, w).backward();
    weighted_sum(ye, w).backward();
    if (input_grad) expect_same(xc.grad(), xe.grad(), "input.grad", true);
    expect_same_grads(*compiled_layer, *eager);
    compiled_layer->zero_grad();
    eager->zero_grad();
  }
  const CompileStats s = compiled.stats();
  EXPECT_EQ(s.captures, 1);
  if (c.fused) {
    EXPECT_GT(s.fused_groups, 0);
  }
  if (c.graph_break && mode == Mode::Train) {
    EXPECT_EQ(s.eager, 2);
    ASSERT_EQ(warnings.messages.size(), 1u);
    EXPECT_TRUE(loom::testing::contains(warnings.messages[0], "graph break"))
        << warnings.messages[0];
  } else {
    EXPECT_EQ(s.replays, 2);
    EXPECT_EQ(warnings.messages, std::vector<std::string>{})
        << "a compiler fallback or a graph break: the calls ran no compiled code";
  }
}

std::vector<LayerCase> activation_cases() {
  const std::vector<int64_t> x = {4, 6};
  return {
      {"ReLU", layer<nn::ReLU>(), x},
      {"ReLU6", layer<nn::ReLU6>(), x},
      {"LeakyReLU", layer<nn::LeakyReLU>(0.2), x},
      {"ELU", layer<nn::ELU>(), x},
      {"ELU_alpha", layer<nn::ELU>(0.5), x},
      {"SELU", layer<nn::SELU>(), x},
      {"GELU", layer<nn::GELU>(), x},
      {"GELU_tanh", layer<nn::GELU>(std::string("tanh")), x},
      {"Sigmoid", layer<nn::Sigmoid>(), x},
      {"Tanh", layer<nn::Tanh>(), x},
      {"SiLU", layer<nn::SiLU>(), x},
      {"Mish", layer<nn::Mish>(), x},
      {"Softplus", layer<nn::Softplus>(), x},
      {"Softplus_beta_threshold", layer<nn::Softplus>(2.0, 1.0), x},
      {"Hardtanh", layer<nn::Hardtanh>(), x},
      {"Hardtanh_bounds", layer<nn::Hardtanh>(-0.5, 2.0), x},
      {"Hardsigmoid", layer<nn::Hardsigmoid>(), x},
      {"Hardswish", layer<nn::Hardswish>(), x},
      {"PReLU", layer<nn::PReLU>(), x},
      {"PReLU_channels", layer<nn::PReLU>(int64_t{3}, 0.1), {2, 3, 5}},
      {"Softmax_dim1", layer<nn::Softmax>(int64_t{1}), {3, 4, 5}},
      {"Softmax_last", layer<nn::Softmax>(int64_t{-1}), {3, 4, 5}},
      LayerCase("Softmax_last_transposed_input", layer<nn::Softmax>(int64_t{-1}), {3, 4, 5})
          .transposed(),
      {"LogSoftmax_dim1", layer<nn::LogSoftmax>(int64_t{1}), {3, 4, 5}},
      {"LogSoftmax_last", layer<nn::LogSoftmax>(int64_t{-1}), {3, 4, 5}},
  };
}

std::vector<LayerCase> linear_cases() {
  return {
      {"Linear", layer<nn::Linear>(6, 5), {4, 6}},
      LayerCase("Linear_transposed_input", layer<nn::Linear>(4, 5), {4, 6}).transposed(),
      {"Linear_no_bias_3d", layer<nn::Linear>(6, 5, false), {2, 3, 6}},
      {"Identity", layer<nn::Identity>(), {4, 6}},
      {"Flatten", layer<nn::Flatten>(), {2, 3, 4}},
      {"Flatten_0_1", layer<nn::Flatten>(0, 1), {2, 3, 4}},
      {"Unflatten",
       [] {
         return std::make_shared<nn::Unflatten>(1, std::vector<int64_t>{2, 3});
       },
       {4, 6}},
  };
}

std::vector<LayerCase> conv_cases() {
  return {
      {"Conv1d", layer<nn::Conv1d>(3, 4, 3), {2, 3, 8}},
      {"Conv1d_stride_padding", layer<nn::Conv1d>(3, 4, 3, 2, 1), {2, 3, 8}},
      {"Conv1d_same_dilation_groups",
       [] { return std::make_shared<nn::Conv1d>(4, 4, 3, 1, "same", 2, 2); },
       {2, 4, 9}},
      {"Conv2d", layer<nn::Conv2d>(3, 4, 3), {2, 3, 6, 6}},
      {"Conv2d_rect_stride_padding",
       [] {
         return std::make_shared<nn::Conv2d>(3, 4, nn::IntList{3, 2}, nn::IntList{2, 1},
                                             nn::IntList{1, 0});
       },
       {2, 3, 7, 6}},
      {"Conv2d_dilation_groups_no_bias",
       layer<nn::Conv2d>(4, 6, 3, 1, 1, 2, 2, false),
       {2, 4, 7, 7}},
      {"ConvTranspose1d", layer<nn::ConvTranspose1d>(3, 4, 3, 2, 1, 1), {2, 3, 5}},
      {"ConvTranspose2d", layer<nn::ConvTranspose2d>(3, 4, 3, 2, 1, 1), {2, 3, 4, 4}},
      {"ConvTranspose2d_groups", layer<nn::ConvTranspose2d>(4, 6, 3, 1, 0, 0, 2), {2, 4, 3, 3}},
  };
}

std::vector<LayerCase> dropout_embedding_cases() {
  return {
      {"Dropout", layer<nn::Dropout>(0.5), {4, 6}},
      {"Dropout_4d", layer<nn::Dropout>(0.2), {2, 3, 4, 4}},
      {"Dropout2d", layer<nn::Dropout2d>(0.5), {2, 4, 3, 3}},
      LayerCase("Embedding", layer<nn::Embedding>(10, 4), {3, 5}).indices_below(10),
      LayerCase("Embedding_padding_idx", layer<nn::Embedding>(10, 4, int64_t{0}), {3, 5})
          .indices_below(10),
      LayerCase("Embedding_scale_grad_by_freq", layer<nn::Embedding>(10, 4, std::nullopt, true),
                {3, 5})
          .indices_below(10),
  };
}

std::vector<LayerCase> normalization_cases() {
  return {
      {"BatchNorm1d", layer<nn::BatchNorm1d>(3), {4, 3}},
      {"BatchNorm1d_3d", layer<nn::BatchNorm1d>(3), {4, 3, 5}},
      {"BatchNorm2d", layer<nn::BatchNorm2d>(3), {2, 3, 4, 4}},
      // In training, momentum None reads the batch count (item()) for the average's factor.
      LayerCase("BatchNorm2d_cumulative_average", layer<nn::BatchNorm2d>(3, 1e-5, std::nullopt),
                {2, 3, 4, 4})
          .breaks_graph(),
      {"BatchNorm2d_no_affine", layer<nn::BatchNorm2d>(3, 1e-5, 0.1, false), {2, 3, 4, 4}},
      {"BatchNorm2d_no_running_stats",
       layer<nn::BatchNorm2d>(3, 1e-5, 0.1, true, false),
       {2, 3, 4, 4}},
      {"LayerNorm", layer<nn::LayerNorm>(6), {3, 4, 6}},
      LayerCase("LayerNorm_transposed_input", layer<nn::LayerNorm>(4), {3, 4, 6}).transposed(),
      {"LayerNorm_2d_shape",
       [] {
         return std::make_shared<nn::LayerNorm>(std::vector<int64_t>{4, 6});
       },
       {3, 4, 6}},
      {"LayerNorm_no_affine", layer<nn::LayerNorm>(6, 1e-5, false), {3, 4, 6}},
      {"LayerNorm_no_bias", layer<nn::LayerNorm>(6, 1e-5, true, false), {3, 4, 6}},
      {"GroupNorm", layer<nn::GroupNorm>(2, 4), {2, 4, 3, 3}},
      {"GroupNorm_no_affine_3d", layer<nn::GroupNorm>(4, 4, 1e-5, false), {2, 4, 5}},
  };
}

Factory upsample(std::vector<int64_t> size, std::vector<double> scale, std::string mode,
                 std::optional<bool> align_corners = std::nullopt) {
  return [=] { return std::make_shared<nn::Upsample>(size, scale, mode, align_corners); };
}

std::vector<LayerCase> pooling_cases() {
  using nn::IntList;
  return {
      {"MaxPool1d", layer<nn::MaxPool1d>(2), {2, 3, 8}},
      {"MaxPool1d_stride_padding_ceil",
       [] { return std::make_shared<nn::MaxPool1d>(3, IntList(2), 1, 1, true); },
       {2, 3, 9}},
      {"MaxPool2d", layer<nn::MaxPool2d>(2), {2, 3, 6, 6}},
      {"MaxPool2d_dilation_ceil",
       [] { return std::make_shared<nn::MaxPool2d>(3, IntList(2), 1, 2, true); },
       {2, 3, 8, 8}},
      {"AvgPool1d", layer<nn::AvgPool1d>(2), {2, 3, 8}},
      {"AvgPool1d_padding_excluded",
       [] { return std::make_shared<nn::AvgPool1d>(3, IntList(2), 1, false, false); },
       {2, 3, 8}},
      {"AvgPool2d", layer<nn::AvgPool2d>(2), {2, 3, 6, 6}},
      {"AvgPool2d_ceil_padding_excluded",
       [] { return std::make_shared<nn::AvgPool2d>(3, IntList(2), 1, true, false); },
       {2, 3, 6, 6}},
      {"AvgPool2d_divisor_override",
       [] { return std::make_shared<nn::AvgPool2d>(2, std::nullopt, 0, false, true, int64_t{3}); },
       {2, 3, 6, 6}},
      {"AdaptiveAvgPool1d", layer<nn::AdaptiveAvgPool1d>(3), {2, 3, 7}},
      {"AdaptiveAvgPool2d",
       [] {
         return std::make_shared<nn::AdaptiveAvgPool2d>(IntList{2, 3});
       },
       {2, 3, 7, 5}},
      {"AdaptiveMaxPool2d",
       [] {
         return std::make_shared<nn::AdaptiveMaxPool2d>(IntList{2, 2});
       },
       {2, 3, 5, 5}},
      {"Upsample_nearest", upsample({}, {2.0, 2.0}, "nearest"), {2, 3, 3, 4}},
      {"Upsample_nearest_size", upsample({5, 7}, {}, "nearest"), {2, 3, 3, 4}},
      {"Upsample_nearest_exact", upsample({5, 7}, {}, "nearest-exact"), {2, 3, 3, 4}},
      {"Upsample_linear", upsample({}, {2.0}, "linear"), {2, 3, 5}},
      {"Upsample_bilinear", upsample({}, {2.0, 1.5}, "bilinear", false), {2, 3, 3, 4}},
      {"Upsample_bilinear_align_corners", upsample({5, 7}, {}, "bilinear", true), {2, 3, 3, 4}},
  };
}

std::vector<LayerCase> recurrent_cases() {
  const std::vector<int64_t> x = {6, 3, 4};  // [T, N, features]
  const nn::RNNOptions deep{.num_layers = 2, .dropout = 0.3, .bidirectional = true};
  const nn::RNNOptions batch_first{.batch_first = true, .bidirectional = true};
  return {
      LayerCase("RNN", layer<nn::RNN>(4, 5), x).fuses(),
      LayerCase("RNN_deep_bidirectional_dropout", layer<nn::RNN>(4, 5, deep), x).fuses(),
      LayerCase("LSTM", layer<nn::LSTM>(4, 5), x).fuses(),
      LayerCase("LSTM_deep_bidirectional_dropout", layer<nn::LSTM>(4, 5, deep), x).fuses(),
      LayerCase("GRU", layer<nn::GRU>(4, 5), x).fuses(),
      LayerCase("GRU_deep_bidirectional_dropout", layer<nn::GRU>(4, 5, deep), x).fuses(),
      LayerCase("GRU_batch_first", layer<nn::GRU>(4, 5, batch_first), {3, 6, 4}).fuses(),
  };
}

std::vector<LayerCase> attention_cases() {
  std::vector<LayerCase> out = {
      {"MultiheadAttention", layer<nn::MultiheadAttention>(8, 2), {5, 3, 8}},
      {"MultiheadAttention_dropout", layer<nn::MultiheadAttention>(8, 2, 0.1), {5, 3, 8}},
      {"MultiheadAttention_no_bias_batch_first",
       layer<nn::MultiheadAttention>(8, 2, 0.0, false, true),
       {3, 5, 8}},
  };
  // The encoder layer of the brief: d_model 16, 4 heads, feed-forward 32, in each activation,
  // norm placement and dropout.
  for (const std::string activation : {"relu", "gelu"}) {
    for (const bool norm_first : {false, true}) {
      for (const double dropout : {0.0, 0.1}) {
        const nn::TransformerEncoderLayerOptions o{.dim_feedforward = 32,
                                                   .dropout = dropout,
                                                   .activation = activation,
                                                   .norm_first = norm_first};
        out.push_back(LayerCase("TransformerEncoderLayer_" + activation +
                                    (norm_first ? "_norm_first" : "_norm_after") +
                                    (dropout > 0 ? "_dropout" : "_no_dropout"),
                                layer<nn::TransformerEncoderLayer>(16, 4, o), {5, 2, 16})
                          .scaled(1.0));
      }
    }
  }
  out.push_back(LayerCase("TransformerEncoder_two_layers_final_norm",
                          [] {
                            auto l = std::make_shared<nn::TransformerEncoderLayer>(
                                16, 4,
                                nn::TransformerEncoderLayerOptions{
                                    .dim_feedforward = 32, .dropout = 0.1, .batch_first = true});
                            return std::make_shared<nn::TransformerEncoder>(
                                l, 2, std::make_shared<nn::LayerNorm>(16));
                          },
                          {2, 5, 16})
                    .scaled(1.0));
  return out;
}

/// A Sequential of the layers factories make.
template <class... F>
Factory chain(F... factories) {
  return [=] { return std::make_shared<nn::Sequential>(factories()...); };
}

/// Alone, a pointwise activation runs its eager kernel (a fused group has two nodes at least);
/// next to another, both become one generated loop, forward and backward.
std::vector<LayerCase> fused_chain_cases() {
  const std::vector<int64_t> x = {4, 6};
  const Factory tanh = layer<nn::Tanh>();
  return {
      LayerCase("Fused_ReLU_Tanh", chain(layer<nn::ReLU>(), tanh), x).fuses(),
      LayerCase("Fused_SiLU_Tanh", chain(layer<nn::SiLU>(), tanh), x).fuses(),
      LayerCase("Fused_GELU_Tanh", chain(layer<nn::GELU>(), tanh), x).fuses(),
      LayerCase("Fused_GELU_tanh_Tanh", chain(layer<nn::GELU>(std::string("tanh")), tanh), x)
          .fuses(),
      LayerCase("Fused_Sigmoid_Tanh", chain(layer<nn::Sigmoid>(), tanh), x).fuses(),
      LayerCase("Fused_Tanh_Sigmoid", chain(tanh, layer<nn::Sigmoid>()), x).fuses(),
      LayerCase("Fused_GELU_Tanh_transposed_input", chain(layer<nn::GELU>(), tanh), {3, 4, 6})
          .fuses()
          .transposed(),
      // Linear layers around the chain: its input and output are other kernels' tensors.
      LayerCase("Fused_Linear_chain_Linear",
                chain(layer<nn::Linear>(6, 8), layer<nn::GELU>(), layer<nn::Sigmoid>(),
                      layer<nn::SiLU>(), layer<nn::ReLU>(), tanh,
                      layer<nn::GELU>(std::string("tanh")), layer<nn::Linear>(8, 3)),
                x)
          .fuses(),
  };
}

std::vector<LayerCase> all_layer_cases() {
  std::vector<LayerCase> out;
  for (auto cases : {activation_cases(), linear_cases(), conv_cases(), dropout_embedding_cases(),
                     normalization_cases(), pooling_cases(), recurrent_cases(), attention_cases(),
                     fused_chain_cases()}) {
    for (LayerCase& c : cases) out.push_back(std::move(c));
  }
  return out;
}

class LayerTest : public NnCompiledTest, public ::testing::WithParamInterface<LayerCase> {};

TEST_P(LayerTest, Train) {
  SCOPED_TRACE(GetParam().name + " in training");
  check_layer(GetParam(), Mode::Train);
}

TEST_P(LayerTest, Eval) {
  SCOPED_TRACE(GetParam().name + " in eval");
  check_layer(GetParam(), Mode::Eval);
}

TEST_P(LayerTest, Inference) {
  SCOPED_TRACE(GetParam().name + " in eval without grad");
  check_layer(GetParam(), Mode::Inference);
}

INSTANTIATE_TEST_SUITE_P(NnLayers, LayerTest, ::testing::ValuesIn(all_layer_cases()),
                         [](const ::testing::TestParamInfo<LayerCase>& info) {
                           return info.param.name;
                         });

// ---- two-input modules: the losses and Bilinear -------------------------------------------------

/// A module called with two tensors, compiled as a function of both.
struct PairCase {
  using Call = std::function<Tensor(nn::Module&, const Tensor&, const Tensor&)>;
  using Inputs = std::function<std::vector<Tensor>()>;
  /// name names the test, make gives the module, call(module, a, b) calls it, inputs gives
  /// {a, b} (drawn after a fixed seed); a gets a gradient, b too with second_grad.
  PairCase(std::string name, Factory make, Call call, Inputs inputs, bool second_grad = false)
      : name(std::move(name)),
        make(std::move(make)),
        call(std::move(call)),
        inputs(std::move(inputs)),
        second_grad(second_grad) {}

  /// A known compile bug: the case is skipped with this reason.
  PairCase& known_bug(std::string why) {
    bug = std::move(why);
    return *this;
  }

  std::string name;
  Factory make;
  Call call;
  Inputs inputs;
  bool second_grad;
  std::string bug;  ///< non-empty: a known compile bug, skipped with this reason
};

void PrintTo(const PairCase& c, std::ostream* os) { *os << c.name; }

Tensor call_loss(nn::Module& m, const Tensor& a, const Tensor& b) {
  return static_cast<nn::Loss&>(m)(a, b);
}

Tensor call_bilinear(nn::Module& m, const Tensor& a, const Tensor& b) {
  return static_cast<nn::Bilinear&>(m).forward(a, b);
}

void check_pair(const PairCase& c) {
  if (!c.bug.empty()) GTEST_SKIP() << c.bug;
  manual_seed(1);
  const std::shared_ptr<nn::Module> m = c.make();
  CompiledFunction compiled = compile(
      [m, call = c.call](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{call(*m, in[0], in[1])};
      },
      CompileOptions{.name = c.name});
  const CaughtWarnings warnings;
  Tensor w;
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(call == 0 ? std::string("capture") : "replay " + std::to_string(call));
    manual_seed(20 + call);  // new values each call: a replay must read its inputs
    const std::vector<Tensor> in = c.inputs();
    const Tensor ac = in[0].clone().requires_grad_(), ae = in[0].clone().requires_grad_();
    const Tensor bc = in[1].clone(), be = in[1].clone();
    if (c.second_grad) {
      bc.requires_grad_();
      be.requires_grad_();
    }
    const Tensor yc = compiled({ac, bc})[0];
    std::vector<Tensor> compiled_grads;
    weighted_sum(yc, w).backward();
    for (const Tensor& p : m->parameters()) compiled_grads.push_back(p.grad());
    m->zero_grad();
    const Tensor ye = c.call(*m, ae, be);
    expect_same(yc, ye, "output");
    weighted_sum(ye, w).backward();
    expect_same(ac.grad(), ae.grad(), "input.grad", true);
    if (c.second_grad) expect_same(bc.grad(), be.grad(), "second input.grad", true);
    const std::vector<Tensor> params = m->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      expect_same(compiled_grads[i], params[i].grad(), "parameter " + std::to_string(i), true);
    }
    m->zero_grad();
  }
  const CompileStats s = compiled.stats();
  EXPECT_EQ(s.captures, 1);
  EXPECT_EQ(s.replays, 2);
  EXPECT_EQ(warnings.messages, std::vector<std::string>{});
}

/// The name of r for test names.
std::string reduction_name(Reduction r) {
  return r == Reduction::None ? "none" : r == Reduction::Mean ? "mean" : "sum";
}

/// {input, target} makers.
std::function<std::vector<Tensor>()> regression_inputs() {
  return [] { return std::vector<Tensor>{randn({4, 5}), randn({4, 5})}; };
}
std::function<std::vector<Tensor>()> class_index_inputs(std::vector<int64_t> input,
                                                        std::vector<int64_t> target) {
  return [=] { return std::vector<Tensor>{mul(randn(input), 2.0), randint(0, input[1], target)}; };
}
std::function<std::vector<Tensor>()> log_probability_inputs() {
  return [] { return std::vector<Tensor>{log_softmax(randn({4, 5}), 1), randint(0, 5, {4})}; };
}
std::function<std::vector<Tensor>()> probability_inputs() {
  return [] { return std::vector<Tensor>{sigmoid(randn({4, 5})), rand({4, 5})}; };
}

std::vector<PairCase> loss_cases() {
  std::vector<PairCase> out;
  for (const Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    const std::string s = "_" + reduction_name(r);
    auto push = [&](const std::string& name, Factory make,
                    std::function<std::vector<Tensor>()> inputs) {
      out.push_back({name + s, std::move(make), call_loss, std::move(inputs)});
    };
    push("CrossEntropyLoss", layer<nn::CrossEntropyLoss>(std::nullopt, -100, r),
         class_index_inputs({4, 5}, {4}));
    push(
        "CrossEntropyLoss_weight_ignore_smoothing",
        [r] { return std::make_shared<nn::CrossEntropyLoss>(rand({5}), 2, r, 0.1); },
        class_index_inputs({6, 5}, {6}));
    push("CrossEntropyLoss_spatial", layer<nn::CrossEntropyLoss>(std::nullopt, -100, r),
         class_index_inputs({2, 3, 2, 2}, {2, 2, 2}));
    push("CrossEntropyLoss_probabilities", layer<nn::CrossEntropyLoss>(std::nullopt, -100, r, 0.2),
         [] {
           return std::vector<Tensor>{randn({4, 5}), softmax(randn({4, 5}), 1)};
         });
    push("NLLLoss", layer<nn::NLLLoss>(std::nullopt, -100, r), log_probability_inputs());
    push(
        "NLLLoss_weight_ignore", [r] { return std::make_shared<nn::NLLLoss>(rand({5}), 1, r); },
        log_probability_inputs());
    push("MSELoss", layer<nn::MSELoss>(r), regression_inputs());
    push("L1Loss", layer<nn::L1Loss>(r), regression_inputs());
    push("SmoothL1Loss", layer<nn::SmoothL1Loss>(r, 0.5), regression_inputs());
    push("HuberLoss", layer<nn::HuberLoss>(r, 0.5), regression_inputs());
    push("BCELoss", layer<nn::BCELoss>(std::nullopt, r), probability_inputs());
    push(
        "BCELoss_weight", [r] { return std::make_shared<nn::BCELoss>(rand({5}), r); },
        probability_inputs());
    push("BCEWithLogitsLoss", layer<nn::BCEWithLogitsLoss>(std::nullopt, r), regression_inputs());
    push(
        "BCEWithLogitsLoss_weight_pos_weight",
        [r] { return std::make_shared<nn::BCEWithLogitsLoss>(rand({5}), r, add(rand({5}), 0.5)); },
        [] {
          return std::vector<Tensor>{randn({4, 5}), rand({4, 5})};
        });
  }
  for (const KlDivReduction r : {KlDivReduction::None, KlDivReduction::Mean, KlDivReduction::Sum,
                                 KlDivReduction::BatchMean}) {
    const std::string s = r == KlDivReduction::None   ? "none"
                          : r == KlDivReduction::Mean ? "mean"
                          : r == KlDivReduction::Sum  ? "sum"
                                                      : "batchmean";
    for (const bool log_target : {false, true}) {
      out.push_back(
          {"KLDivLoss_" + s + (log_target ? "_log_target" : ""),
           layer<nn::KLDivLoss>(r, log_target), call_loss, [log_target] {
             const Tensor p = softmax(randn({4, 5}), 1);
             return std::vector<Tensor>{log_softmax(randn({4, 5}), 1), log_target ? log(p) : p};
           }});
    }
  }
  return out;
}

std::vector<PairCase> all_pair_cases() {
  std::vector<PairCase> out = loss_cases();
  out.push_back({"Bilinear", layer<nn::Bilinear>(3, 4, 5), call_bilinear,
                 [] {
                   return std::vector<Tensor>{randn({6, 3}), randn({6, 4})};
                 },
                 true});
  out.push_back({"Bilinear_no_bias", layer<nn::Bilinear>(3, 4, 5, false), call_bilinear,
                 [] {
                   return std::vector<Tensor>{randn({2, 6, 3}), randn({2, 6, 4})};
                 },
                 true});
  return out;
}

class PairTest : public NnCompiledTest, public ::testing::WithParamInterface<PairCase> {};

TEST_P(PairTest, MatchesEager) {
  SCOPED_TRACE(GetParam().name);
  check_pair(GetParam());
}

INSTANTIATE_TEST_SUITE_P(NnLosses, PairTest, ::testing::ValuesIn(all_pair_cases()),
                         [](const ::testing::TestParamInfo<PairCase>& info) {
                           return info.param.name;
                         });

// ---- the `loom train` models ------------------------------------------------------------------

/// Three SGD steps of cross entropy on a compiled model and on an eager twin: the same losses,
/// gradients and parameters after each step (the first step captures, the others replay and
/// read the parameters the previous step changed in place). whole_loss: the loss function
/// (model and cross entropy) is compiled with compile(fn), else the model with
/// compile(module).
void check_training(const std::string& model, bool whole_loss) {
  SCOPED_TRACE(model + (whole_loss ? ", the loss function compiled" : ", the model compiled"));
  manual_seed(1);
  const std::shared_ptr<nn::Sequential> compiled_model = train::make_model(model),
                                        eager = train::make_model(model);
  eager->load_state_dict(compiled_model->state_dict());
  const CompiledModule compiled_module = compile(compiled_model);
  const CompiledFunction compiled_loss = compile([compiled_model](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{cross_entropy((*compiled_model)(in[0]), in[1])};
  });
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    manual_seed(20 + step);  // a new batch each step
    const Tensor x = randn({4, 1, 28, 28});
    const Tensor target = randint(0, 10, {4});
    const Tensor loss_c =
        whole_loss ? compiled_loss({x, target})[0] : cross_entropy(compiled_module(x), target);
    const Tensor loss_e = cross_entropy((*eager)(x), target);
    expect_same(loss_c, loss_e, "loss");
    loss_c.backward();
    loss_e.backward();
    expect_same_grads(*compiled_model, *eager);
    {
      autograd::NoGradGuard no_grad;
      for (const auto& m : {compiled_model, eager}) {
        for (const Tensor& p : m->parameters()) p.sub_(mul(p.grad(), 0.1));
        m->zero_grad();
      }
    }
    const nn::OrderedDict<Tensor> pc = compiled_model->named_parameters(),
                                  pe = eager->named_parameters();
    auto ie = pe.begin();
    for (const auto& [name, p] : pc) expect_same(p, (ie++)->second, name);
  }
  const CompileStats s = whole_loss ? compiled_loss.stats() : compiled_module.stats();
  EXPECT_EQ(s.captures, 1) << "an in-place update needs no recompile";
  EXPECT_EQ(s.replays, 2);
}

TEST_F(NnCompiledTest, MlpTrainsAsEager) {
  check_training("mlp", false);
  check_training("mlp", true);
}

TEST_F(NnCompiledTest, CnnTrainsAsEager) {
  check_training("cnn", false);
  check_training("cnn", true);
}

}  // namespace
}  // namespace loom
