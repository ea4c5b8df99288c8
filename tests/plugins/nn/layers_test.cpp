// Every layer against the functional op it wraps (or a hand computation), its output shape,
// its default init (bounds), and the loss modules against the loss functions.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/nn/nn.h"
#include "nn_test_util.h"

namespace loom::nn {
namespace {

using testing::contains;
using testing::expect_tensors_near;
using testing::message_of;
using testing::to_doubles;

using LayersTest = testing::NnTest;

std::pair<double, double> min_max(const Tensor& t) {
  const std::vector<double> v = to_doubles(t);
  return {*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

Tensor var_over_batch(const Tensor& x, int64_t correction) {
  const std::vector<int64_t> dims{0};
  return loom::var(x, std::optional<IntArrayRef>(IntArrayRef(dims)), Scalar(correction), false);
}

// Values lie in [-bound, bound] and reach at least 80% of it (so the bound is not smaller).
void expect_uniform_bound(const Tensor& t, double bound) {
  const auto [lo, hi] = min_max(t);
  EXPECT_GE(lo, -bound);
  EXPECT_LE(hi, bound);
  EXPECT_GT(hi, 0.8 * bound);
  EXPECT_LT(lo, -0.8 * bound);
}

TEST_F(LayersTest, LinearMatchesFunctionalAndDefaultInit) {
  auto fc = std::make_shared<Linear>(64, 32);
  EXPECT_EQ(sizes_str(fc->weight.sizes()), "[32, 64]");
  // kaiming_uniform_(a = sqrt(5)) is U(-1/sqrt(in), 1/sqrt(in)); so is the bias.
  expect_uniform_bound(fc->weight, 1.0 / 8.0);
  const auto [lo, hi] = min_max(fc->bias);
  EXPECT_GE(lo, -1.0 / 8.0);
  EXPECT_LE(hi, 1.0 / 8.0);
  const Tensor x = loom::randn({2, 5, 64});
  const Tensor y = (*fc)(x);
  EXPECT_EQ(sizes_str(y.sizes()), "[2, 5, 32]");
  expect_tensors_near(y, loom::linear(x, fc->weight, fc->bias));
  EXPECT_EQ(fc->extra_repr(), "in_features=64, out_features=32, bias=true");
}

TEST_F(LayersTest, InitIsReproducibleUnderManualSeed) {
  loom::manual_seed(42);
  auto a = std::make_shared<Linear>(5, 5);
  loom::manual_seed(42);
  auto b = std::make_shared<Linear>(5, 5);
  EXPECT_EQ(to_doubles(a->weight), to_doubles(b->weight));
  EXPECT_EQ(to_doubles(a->bias), to_doubles(b->bias));
}

TEST_F(LayersTest, BilinearMatchesHandComputation) {
  auto bl = std::make_shared<Bilinear>(3, 4, 2);
  expect_uniform_bound(bl->weight, 1.0 / std::sqrt(3.0));
  const Tensor x1 = loom::randn({5, 3});
  const Tensor x2 = loom::randn({5, 4});
  const Tensor y = bl->forward(x1, x2);
  ASSERT_EQ(sizes_str(y.sizes()), "[5, 2]");
  const std::vector<double> a = to_doubles(x1), b = to_doubles(x2), w = to_doubles(bl->weight),
                            bias = to_doubles(bl->bias), got = to_doubles(y);
  for (int n = 0; n < 5; ++n) {
    for (int o = 0; o < 2; ++o) {
      double s = bias[o];
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 4; ++j) s += a[n * 3 + i] * w[(o * 3 + i) * 4 + j] * b[n * 4 + j];
      }
      EXPECT_NEAR(got[n * 2 + o], s, 1e-5);
    }
  }
}

TEST_F(LayersTest, ConvolutionsMatchFunctional) {
  auto c1 = std::make_shared<Conv1d>(3, 4, 3, 2, 1);
  const Tensor x1 = loom::randn({2, 3, 9});
  const Tensor y1 = (*c1)(x1);
  EXPECT_EQ(sizes_str(y1.sizes()), "[2, 4, 5]");
  expect_tensors_near(y1, loom::conv1d(x1, c1->weight, c1->bias, 2, 1));

  auto c2 = std::make_shared<Conv2d>(4, 6, IntList{3, 5}, 1, IntList{1, 2}, 1, 2);
  EXPECT_EQ(sizes_str(c2->weight.sizes()), "[6, 2, 3, 5]");
  // fan_in = 2 * 3 * 5 = 30: weight and bias within 1/sqrt(30).
  expect_uniform_bound(c2->weight, 1.0 / std::sqrt(30.0));
  const Tensor x2 = loom::randn({2, 4, 7, 8});
  const Tensor y2 = (*c2)(x2);
  EXPECT_EQ(sizes_str(y2.sizes()), "[2, 6, 7, 8]");
  expect_tensors_near(y2, loom::conv2d(x2, c2->weight, c2->bias, 1, {1, 2}, 1, 2), 1e-4, 1e-5);

  auto same = std::make_shared<Conv2d>(4, 2, 3, 1, "same", 1, 1, false);
  EXPECT_EQ(sizes_str((*same)(x2).sizes()), "[2, 2, 7, 8]");
  EXPECT_TRUE(contains(message_of([] { Conv2d(4, 2, 3, 2, "same"); }),
                       "padding='same' is not supported for strided convolutions"));
  EXPECT_TRUE(contains(message_of([] { Conv2d(3, 2, 3, 1, 0, 1, 2); }),
                       "in_channels must be divisible by groups"));

  auto ct = std::make_shared<ConvTranspose2d>(4, 3, 3, 2, 1, 1);
  EXPECT_EQ(sizes_str(ct->weight.sizes()), "[4, 3, 3, 3]");
  const Tensor y3 = (*ct)(x2);
  EXPECT_EQ(sizes_str(y3.sizes()), "[2, 3, 14, 16]");
  expect_tensors_near(y3, loom::conv_transpose2d(x2, ct->weight, ct->bias, 2, 1, 1), 1e-4, 1e-5);
}

TEST_F(LayersTest, BatchNormTrainingUpdatesRunningStatsAndEvalUsesThem) {
  auto bn = std::make_shared<BatchNorm1d>(3);
  EXPECT_EQ(to_doubles(bn->weight), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(to_doubles(bn->running_var), (std::vector<double>{1, 1, 1}));
  const Tensor x = loom::randn({16, 3}).mul(2.0).add(5.0);
  const Tensor y = (*bn)(x);
  // Training: batch statistics (biased variance) normalise.
  const Tensor mean = x.mean({0});
  const Tensor var = var_over_batch(x, 0);
  expect_tensors_near(y, x.sub(mean).div(var.add(1e-5).sqrt()), 1e-4, 1e-5);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  // running = 0.9 * running + 0.1 * batch (unbiased variance).
  const Tensor uvar = var_over_batch(x, 1);
  expect_tensors_near(bn->running_mean, mean.mul(0.1), 1e-5, 1e-6);
  expect_tensors_near(bn->running_var, uvar.mul(0.1).add(0.9), 1e-5, 1e-6);
  // Eval: the running statistics normalise and stay put.
  bn->eval();
  const Tensor rm = bn->running_mean.clone(), rv = bn->running_var.clone();
  const Tensor ye = (*bn)(x);
  expect_tensors_near(ye, x.sub(rm).div(rv.add(1e-5).sqrt()), 1e-4, 1e-5);
  EXPECT_EQ(to_doubles(bn->running_mean), to_doubles(rm));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_EQ(message_of([&] {
              (*bn)(loom::ones({2, 3, 4, 5}));
            }),
            "expected 2D or 3D input (got 4D input)");
}

TEST_F(LayersTest, BatchNorm2dCumulativeAverageAndNoTracking) {
  auto bn = std::make_shared<BatchNorm2d>(2, 1e-5, std::nullopt);
  const Tensor a = loom::randn({4, 2, 3, 3});
  const Tensor b = loom::randn({4, 2, 3, 3}).add(1.0);
  (*bn)(a);
  (*bn)(b);
  // momentum None: the running mean is the plain average of the batch means.
  const Tensor want = a.mean({0, 2, 3}).add(b.mean({0, 2, 3})).mul(0.5);
  expect_tensors_near(bn->running_mean, want, 1e-5, 1e-6);
  EXPECT_EQ(message_of([&] { (*bn)(loom::ones({2, 3})); }), "expected 4D input (got 2D input)");

  auto untracked = std::make_shared<BatchNorm2d>(2, 1e-5, 0.1, false, false);
  EXPECT_TRUE(untracked->state_dict().empty());
  untracked->eval();
  // Without running statistics eval normalises with the batch's.
  const Tensor y = (*untracked)(a);
  expect_tensors_near(y.mean({0, 2, 3}), loom::zeros({2}), 1e-4, 1e-5);
}

// A training batch of one value per channel is refused (PyTorch's message) and leaves every
// buffer as it was, num_batches_tracked included: the next batch's cumulative average
// (momentum None) is its own statistics, not half of them.
TEST_F(LayersTest, BatchNormRefusesOneValuePerChannelAndKeepsItsBuffers) {
  auto bn = std::make_shared<BatchNorm1d>(3, 1e-5, std::nullopt);
  EXPECT_EQ(message_of([&] {
              (*bn)(loom::ones({1, 3}));
            }),
            "batch_norm: Expected more than 1 value per channel when training, got input size "
            "[1, 3]");
  EXPECT_TRUE(contains(message_of([&] {
                         (*bn)(loom::ones({1, 3, 1}));
                       }),
                       "got input size [1, 3, 1]"));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 0);
  EXPECT_EQ(to_doubles(bn->running_mean), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(to_doubles(bn->running_var), (std::vector<double>{1, 1, 1}));
  const Tensor x = loom::randn({8, 3}).add(2.0);
  (*bn)(x);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  expect_tensors_near(bn->running_mean, x.mean({0}), 1e-5, 1e-6);
  expect_tensors_near(bn->running_var, var_over_batch(x, 1), 1e-5, 1e-6);
  // Evaluation normalises a single sample by the running statistics.
  bn->eval();
  const Tensor one = x.narrow(0, 0, 1);
  expect_tensors_near((*bn)(one), one.sub(bn->running_mean).div(bn->running_var.add(1e-5).sqrt()),
                      1e-4, 1e-5);
}

TEST_F(LayersTest, LayerNormAndGroupNormMatchFunctional) {
  auto ln = std::make_shared<LayerNorm>(std::vector<int64_t>{4, 5});
  const Tensor x = loom::randn({3, 4, 5});
  {
    autograd::NoGradGuard g;
    ln->weight.copy_(loom::randn({4, 5}));
    ln->bias.copy_(loom::randn({4, 5}));
  }
  expect_tensors_near((*ln)(x), loom::layer_norm(x, {4, 5}, ln->weight, ln->bias));
  EXPECT_FALSE(std::make_shared<LayerNorm>(5, 1e-5, false)->weight.defined());

  auto gn = std::make_shared<GroupNorm>(2, 6);
  const Tensor xg = loom::randn({2, 6, 3, 3});
  expect_tensors_near((*gn)(xg), loom::group_norm(xg, 2, gn->weight, gn->bias));
  EXPECT_EQ(message_of([] { GroupNorm(4, 6); }), "num_channels must be divisible by num_groups");
}

TEST_F(LayersTest, EmbeddingLooksUpRowsAndZeroesThePaddingRow) {
  auto emb = std::make_shared<Embedding>(10, 3, -1);
  EXPECT_EQ(*emb->padding_idx, 9);
  EXPECT_EQ(to_doubles(emb->weight.select(0, 9)), (std::vector<double>{0, 0, 0}));
  const Tensor idx = Tensor::from_vector<int64_t>({1, 9, 1, 4}, {2, 2});
  const Tensor y = (*emb)(idx);
  ASSERT_EQ(sizes_str(y.sizes()), "[2, 2, 3]");
  EXPECT_EQ(to_doubles(y.select(0, 0).select(0, 0)), to_doubles(emb->weight.select(0, 1)));
  y.sum().backward();
  // The padding row gets no gradient; row 1 was used twice.
  EXPECT_EQ(to_doubles(emb->weight.grad().select(0, 9)), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(to_doubles(emb->weight.grad().select(0, 1)), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(message_of([] { Embedding(3, 2, 3); }), "Padding_idx must be within num_embeddings");
}

TEST_F(LayersTest, MoreLayersMatchFunctional) {
  auto ct1 = std::make_shared<ConvTranspose1d>(3, 2, 4, 2, 1);
  const Tensor x1 = loom::randn({2, 3, 6});
  const Tensor y1 = (*ct1)(x1);
  EXPECT_EQ(sizes_str(y1.sizes()), "[2, 2, 12]");
  expect_tensors_near(y1, loom::conv_transpose1d(x1, ct1->weight, ct1->bias, 2, 1), 1e-5, 1e-6);
  EXPECT_EQ(ct1->extra_repr(), "3, 2, kernel_size=(4,), stride=(2,), padding=(1,)");
  EXPECT_EQ(Conv2d(4, 6, 3, 1, 0, 2, 2, false).extra_repr(),
            "4, 6, kernel_size=(3, 3), stride=(1, 1), dilation=(2, 2), groups=2, bias=false");

  auto prelu = std::make_shared<PReLU>(3, 0.1);
  EXPECT_EQ(to_doubles(prelu->weight), (std::vector<double>(3, static_cast<double>(0.1f))));
  {
    autograd::NoGradGuard g;
    prelu->weight.copy_(Tensor::from_vector<float>({0.1f, 0.2f, 0.3f}, {3}));
  }
  const Tensor xp = Tensor::from_vector<float>({-1, 2, -1, 3, -2, -4}, {1, 3, 2});
  expect_tensors_near((*prelu)(xp),
                      Tensor::from_vector<float>({-0.1f, 2, -0.2f, 3, -0.6f, -1.2f}, {1, 3, 2}));
  EXPECT_TRUE(contains(message_of([&] {
                         (*prelu)(loom::ones({1, 2, 2}));
                       }),
                       "Found parameter numbers = 3 and channel size = 2."));

  const Tensor x2 = loom::randn({2, 3, 7, 5});
  expect_tensors_near((*std::make_shared<AdaptiveAvgPool1d>(3))(x1),
                      loom::adaptive_avg_pool1d(x1, {3}));
  auto amp = std::make_shared<AdaptiveMaxPool2d>(IntList{3, 2});
  expect_tensors_near((*amp)(x2), std::get<0>(loom::adaptive_max_pool2d(x2, {3, 2})));
  auto up = std::make_shared<Upsample>(std::vector<int64_t>{}, std::vector<double>{2.0}, "bilinear",
                                       false);
  expect_tensors_near((*up)(x2), loom::interpolate(x2, {14, 10}, "bilinear", false), 1e-5, 1e-6);
  EXPECT_EQ(up->extra_repr(), "scale_factor=2, mode='bilinear'");
  EXPECT_EQ(KLDivLoss(KlDivReduction::BatchMean).extra_repr(), "reduction='batchmean'");
}

TEST_F(LayersTest, EmbeddingInitIsStandardNormal) {
  auto emb = std::make_shared<Embedding>(200, 100);
  EXPECT_NEAR(emb->weight.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(loom::std(emb->weight, false).item<double>(), 1.0, 0.02);
}

TEST_F(LayersTest, Dropout2dDropsWholeChannels) {
  auto drop = std::make_shared<Dropout2d>(0.5);
  const Tensor y = (*drop)(loom::ones({4, 8, 3, 3}));
  const std::vector<double> v = to_doubles(y);
  int dropped = 0;
  for (int c = 0; c < 32; ++c) {
    for (int k = 1; k < 9; ++k) EXPECT_EQ(v[c * 9 + k], v[c * 9]);
    EXPECT_TRUE(v[c * 9] == 0.0 || v[c * 9] == 2.0);
    dropped += v[c * 9] == 0.0;
  }
  EXPECT_GT(dropped, 4);
  EXPECT_LT(dropped, 28);
  drop->eval();
  EXPECT_EQ(to_doubles((*drop)(loom::ones({1, 2, 2, 2}))), std::vector<double>(8, 1.0));
  EXPECT_TRUE(contains(message_of([] { Dropout(1.5); }),
                       "dropout probability has to be between 0 and 1, but got 1.5"));
}

TEST_F(LayersTest, ShapeModulesAndActivationsMatchFunctional) {
  const Tensor x = loom::randn({2, 3, 4, 5});
  EXPECT_TRUE((*std::make_shared<Identity>())(x).is_same(x));
  EXPECT_EQ(sizes_str((*std::make_shared<Flatten>())(x).sizes()), "[2, 60]");
  EXPECT_EQ(sizes_str((*std::make_shared<Flatten>(0, 1))(x).sizes()), "[6, 4, 5]");
  EXPECT_EQ(sizes_str((*std::make_shared<Unflatten>(1, std::vector<int64_t>{1, 3}))(x).sizes()),
            "[2, 1, 3, 4, 5]");
  const std::vector<std::pair<std::shared_ptr<Module>, Tensor>> cases = {
      {std::make_shared<ReLU>(), loom::relu(x)},
      {std::make_shared<ReLU6>(), loom::relu6(x)},
      {std::make_shared<LeakyReLU>(0.2), loom::leaky_relu(x, 0.2)},
      {std::make_shared<ELU>(0.5), loom::elu(x, 0.5)},
      {std::make_shared<SELU>(), loom::selu(x)},
      {std::make_shared<GELU>(), loom::gelu(x)},
      {std::make_shared<GELU>("tanh"), loom::gelu(x, "tanh")},
      {std::make_shared<Sigmoid>(), loom::sigmoid(x)},
      {std::make_shared<Tanh>(), loom::tanh(x)},
      {std::make_shared<SiLU>(), loom::silu(x)},
      {std::make_shared<Mish>(), loom::mish(x)},
      {std::make_shared<Softplus>(2.0), loom::softplus(x, 2.0)},
      {std::make_shared<Hardtanh>(-0.5, 0.5), loom::hardtanh(x, -0.5, 0.5)},
      {std::make_shared<Hardsigmoid>(), loom::hardsigmoid(x)},
      {std::make_shared<Hardswish>(), loom::hardswish(x)},
      {std::make_shared<Softmax>(1), loom::softmax(x, 1)},
      {std::make_shared<LogSoftmax>(-1), loom::log_softmax(x, -1)},
  };
  for (const auto& [m, want] : cases) {
    SCOPED_TRACE(m->str());
    expect_tensors_near((*m)(x), want);
  }
  // A spot value by hand: LeakyReLU(0.2)(-2) = -0.4.
  EXPECT_NEAR((*std::make_shared<LeakyReLU>(0.2))(loom::full({1}, -2.0)).item<double>(), -0.4,
              1e-7);
}

TEST_F(LayersTest, PoolingMatchesFunctional) {
  const Tensor x = loom::randn({2, 3, 8, 9});
  auto mp = std::make_shared<MaxPool2d>(3, 2, 1);
  EXPECT_EQ(mp->stride, (std::vector<int64_t>{2, 2}));
  expect_tensors_near((*mp)(x), loom::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}));
  auto mp_default = std::make_shared<MaxPool2d>(2);
  EXPECT_EQ(sizes_str((*mp_default)(x).sizes()), "[2, 3, 4, 4]");
  auto ap = std::make_shared<AvgPool2d>(IntList{2, 3}, std::nullopt, 0, true, false);
  expect_tensors_near((*ap)(x), loom::avg_pool2d(x, {2, 3}, {2, 3}, 0, true, false));
  auto aap = std::make_shared<AdaptiveAvgPool2d>(IntList{1, 1});
  expect_tensors_near((*aap)(x), x.mean({2, 3}, true), 1e-5, 1e-6);
  const Tensor x1 = loom::randn({2, 3, 10});
  expect_tensors_near((*std::make_shared<MaxPool1d>(3))(x1), loom::max_pool1d(x1, {3}, {3}));
  expect_tensors_near((*std::make_shared<AvgPool1d>(2))(x1), loom::avg_pool1d(x1, {2}, {2}));
}

TEST_F(LayersTest, LossModulesMatchFunctional) {
  const Tensor logits = loom::randn({6, 4});
  const Tensor target = Tensor::from_vector<int64_t>({0, 3, 1, 1, 2, 0}, {6});
  const Tensor w = Tensor::from_vector<float>({1, 2, 0.5, 1}, {4});
  auto ce = std::make_shared<CrossEntropyLoss>(w, -100, Reduction::Mean, 0.1);
  expect_tensors_near((*ce)(logits, target),
                      loom::cross_entropy(logits, target, w, Reduction::Mean, -100, 0.1));
  EXPECT_EQ(ce->named_buffers().keys(), (std::vector<std::string>{"weight"}));
  auto nll = std::make_shared<NLLLoss>(std::nullopt, 1, Reduction::Sum);
  const Tensor lp = logits.log_softmax(1);
  expect_tensors_near((*nll)(lp, target),
                      loom::nll_loss(lp, target, std::nullopt, Reduction::Sum, 1));
  // By hand: CrossEntropyLoss() equals the mean of -log_softmax at the targets.
  const std::vector<double> lpv = to_doubles(lp);
  const std::vector<int64_t> t = {0, 3, 1, 1, 2, 0};
  double s = 0;
  for (int i = 0; i < 6; ++i) s -= lpv[i * 4 + t[i]];
  EXPECT_NEAR((*std::make_shared<CrossEntropyLoss>())(logits, target).item<double>(), s / 6, 1e-5);

  const Tensor a = loom::randn({3, 5});
  const Tensor b = loom::randn({3, 5});
  expect_tensors_near((*std::make_shared<MSELoss>())(a, b), loom::mse_loss(a, b));
  expect_tensors_near((*std::make_shared<L1Loss>(Reduction::None))(a, b),
                      loom::l1_loss(a, b, Reduction::None));
  expect_tensors_near((*std::make_shared<SmoothL1Loss>(Reduction::Mean, 0.5))(a, b),
                      loom::smooth_l1_loss(a, b, Reduction::Mean, 0.5));
  expect_tensors_near((*std::make_shared<HuberLoss>(Reduction::Sum, 2.0))(a, b),
                      loom::huber_loss(a, b, Reduction::Sum, 2.0));
  const Tensor p = a.sigmoid();
  const Tensor y = loom::rand({3, 5}).gt(0.5).to(DType::Float32);
  expect_tensors_near((*std::make_shared<BCELoss>())(p, y), loom::binary_cross_entropy(p, y));
  const Tensor pw = loom::full({5}, 2.0);
  expect_tensors_near(
      (*std::make_shared<BCEWithLogitsLoss>(std::nullopt, Reduction::Mean, pw))(a, y),
      loom::binary_cross_entropy_with_logits(a, y, std::nullopt, pw));
  const Tensor q = b.softmax(1);
  expect_tensors_near(
      (*std::make_shared<KLDivLoss>(KlDivReduction::BatchMean))(a.log_softmax(1), q),
      loom::kl_div(a.log_softmax(1), q, KlDivReduction::BatchMean));
  EXPECT_TRUE(
      contains(message_of([&] { std::make_shared<MSELoss>()->forward(a); }), "takes two inputs"));
}

TEST_F(LayersTest, InitFunctions) {
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(init::calculate_gain("conv2d"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  EXPECT_EQ(message_of([] { init::calculate_gain("swish"); }), "Unsupported nonlinearity swish");
  const Tensor w = loom::empty({200, 100, 3});
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(w), (std::pair<int64_t, int64_t>{300, 600}));
  EXPECT_TRUE(contains(message_of([] { init::calculate_fan_in_and_fan_out(loom::empty({3})); }),
                       "fewer than 2 dimensions"));

  init::kaiming_uniform_(w, 0.0, init::FanMode::FanIn, "relu");
  expect_uniform_bound(w, std::sqrt(2.0) * std::sqrt(3.0 / 300.0));
  init::xavier_uniform_(w, 2.0);
  expect_uniform_bound(w, 2.0 * std::sqrt(6.0 / 900.0));
  auto stddev = [](const Tensor& t) { return loom::std(t, false).item<double>(); };
  init::kaiming_normal_(w, 0.0, init::FanMode::FanOut, "relu");
  EXPECT_NEAR(stddev(w), std::sqrt(2.0 / 600.0), 0.02 * std::sqrt(2.0 / 600.0));
  init::xavier_normal_(w);
  EXPECT_NEAR(stddev(w), std::sqrt(2.0 / 900.0), 0.02 * std::sqrt(2.0 / 900.0));
  init::normal_(w, 3.0, 0.5);
  EXPECT_NEAR(w.mean().item<double>(), 3.0, 0.01);
  EXPECT_NEAR(stddev(w), 0.5, 0.01);
  init::uniform_(w, 2.0, 4.0);
  const auto [lo, hi] = min_max(w);
  EXPECT_GE(lo, 2.0);
  EXPECT_LT(hi, 4.0);
  init::constant_(w, 0.25);
  EXPECT_EQ(w.sum().item<double>(), 0.25 * 60000);
  init::ones_(w);
  init::zeros_(w);
  EXPECT_EQ(w.abs().sum().item<double>(), 0.0);
  // In place on a parameter that requires grad, recording nothing.
  auto fc = std::make_shared<Linear>(3, 3);
  init::ones_(fc->weight);
  EXPECT_TRUE(fc->weight.is_leaf());
  // Reproducible from a generator.
  CPUGenerator g1(7), g2(7);
  const Tensor a = loom::empty({10}), b = loom::empty({10});
  init::normal_(a, 0, 1, &g1);
  init::normal_(b, 0, 1, &g2);
  EXPECT_EQ(to_doubles(a), to_doubles(b));
}

}  // namespace
}  // namespace loom::nn
