// Gradient clipping, checkpointing a module, parameters_to_vector, and a tiny model trained
// with a hand-written SGD loop.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/nn/nn.h"
#include "nn_test_util.h"

namespace loom::nn {
namespace {

using testing::contains;
using testing::expect_tensors_near;
using testing::message_of;
using testing::to_doubles;

using TrainingTest = testing::NnTest;

Tensor leaf_with_grad(const std::vector<float>& values, const std::vector<float>& grad) {
  Tensor p = Tensor::from_vector<float>(values, {static_cast<int64_t>(values.size())});
  p.set_requires_grad(true);
  p.set_grad(Tensor::from_vector<float>(grad, {static_cast<int64_t>(grad.size())}));
  return p;
}

TEST_F(TrainingTest, ClipGradNormScalesToMaxNormAndReturnsTheTotal) {
  const Tensor a = leaf_with_grad({0, 0}, {3, 4});
  const Tensor b = leaf_with_grad({0}, {12});
  const Tensor total = utils::clip_grad_norm_({a, b}, 6.5);
  EXPECT_NEAR(total.item<double>(), 13.0, 1e-5);  // sqrt(9 + 16 + 144)
  const double coef = 6.5 / (13.0 + 1e-6);
  const std::vector<double> ga = to_doubles(a.grad()), gb = to_doubles(b.grad());
  EXPECT_NEAR(ga[0], 3 * coef, 1e-5);
  EXPECT_NEAR(ga[1], 4 * coef, 1e-5);
  EXPECT_NEAR(gb[0], 12 * coef, 1e-5);
  // Under the bound nothing changes.
  const Tensor c = leaf_with_grad({0, 0}, {0.3f, 0.4f});
  EXPECT_NEAR(utils::clip_grad_norm_({c}, 1.0).item<double>(), 0.5, 1e-6);
  EXPECT_NEAR(to_doubles(c.grad())[1], 0.4, 1e-7);
  // Infinity norm and norm 1.
  const Tensor d = leaf_with_grad({0, 0, 0}, {1, -5, 2});
  EXPECT_NEAR(
      utils::clip_grad_norm_({d}, 100, std::numeric_limits<double>::infinity()).item<double>(), 5.0,
      1e-6);
  EXPECT_NEAR(utils::clip_grad_norm_({d}, 4, 1.0).item<double>(), 8.0, 1e-6);
  EXPECT_NEAR(to_doubles(d.grad())[1], -5 * 4 / (8 + 1e-6), 1e-5);
  // No gradients: 0.
  const Tensor e = Tensor::from_vector<float>({1}, {1});
  EXPECT_EQ(utils::clip_grad_norm_({e}, 1.0).item<double>(), 0.0);
}

TEST_F(TrainingTest, ClipGradNormNonFinite) {
  const Tensor a = leaf_with_grad({0, 0}, {std::numeric_limits<float>::infinity(), 1});
  EXPECT_TRUE(contains(message_of([&] { utils::clip_grad_norm_({a}, 1.0, 2.0, true); }),
                       "The total norm of order 2 for gradients from `parameters` is non-finite"));
  EXPECT_EQ(to_doubles(a.grad())[1], 1.0);
  EXPECT_TRUE(std::isinf(utils::clip_grad_norm_({a}, 1.0).item<double>()));
}

TEST_F(TrainingTest, ClipGradValue) {
  const Tensor a = leaf_with_grad({0, 0, 0}, {-3, 0.5f, 7});
  utils::clip_grad_value_({a}, 1.0);
  EXPECT_EQ(to_doubles(a.grad()), (std::vector<double>{-1, 0.5, 1}));
}

TEST_F(TrainingTest, CheckpointGivesTheSameGradientsToInputAndParameters) {
  auto block = std::make_shared<Sequential>(
      std::make_shared<Linear>(4, 8), std::make_shared<Tanh>(), std::make_shared<Linear>(8, 3));
  const Tensor x = loom::randn({5, 4}).requires_grad_();
  (*block)(x).pow(2).sum().backward();
  std::vector<Tensor> want;
  for (const Tensor& p : block->parameters()) want.push_back(p.grad().clone());
  const Tensor want_x = x.grad().clone();
  block->zero_grad();
  x.set_grad(Tensor());

  const Tensor y = utils::checkpoint(block, x);
  EXPECT_EQ(y.grad_fn()->name(), "CheckpointFunctionBackward");
  y.pow(2).sum().backward();
  const auto params = block->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(params[i].grad().defined()) << i;
    expect_tensors_near(params[i].grad(), want[i], 1e-5, 1e-6);
  }
  expect_tensors_near(x.grad(), want_x, 1e-5, 1e-6);
  // The module's own parameters are back in place.
  EXPECT_TRUE(block->at<Linear>(0)->weight.is_same(params[0]));
}

TEST_F(TrainingTest, ParametersToVectorAndBack) {
  auto fc = std::make_shared<Linear>(3, 2);
  const Tensor v = utils::parameters_to_vector(fc->parameters());
  EXPECT_EQ(v.numel(), 8);
  utils::vector_to_parameters(loom::arange(0, 8, 1, DType::Float32), fc->parameters());
  EXPECT_EQ(to_doubles(fc->bias), (std::vector<double>{6, 7}));
  EXPECT_TRUE(
      contains(message_of([&] { utils::vector_to_parameters(loom::zeros({3}), fc->parameters()); }),
               "expected a 1-D tensor of 8 elements"));
}

// Finite differences in float64 through a module, with respect to its input and every
// parameter (the parameters are swapped for gradcheck's inputs while fn runs).
void module_gradcheck(const std::shared_ptr<Module>& module, const Tensor& input,
                      const std::function<Tensor(const Tensor&)>& run = {}) {
  module->to(DType::Float64);
  std::vector<Module::Slot*> slots = module->parameter_slots();
  autograd::variable_list inputs{input.to(DType::Float64).detach().requires_grad_()};
  if (!is_floating_point(input.dtype())) inputs[0] = input;
  for (Module::Slot* s : slots) inputs.push_back(s->tensor.detach().requires_grad_());
  auto fn = [&](const autograd::variable_list& in) -> autograd::variable_list {
    std::vector<Tensor> saved;
    for (size_t i = 0; i < slots.size(); ++i) {
      saved.push_back(slots[i]->tensor);
      slots[i]->tensor = in[i + 1];
    }
    Tensor out = run ? run(in[0]) : (*module)(in[0]);
    for (size_t i = 0; i < slots.size(); ++i) slots[i]->tensor = saved[i];
    return {out};
  };
  EXPECT_TRUE(autograd::gradcheck(fn, inputs)) << module->str();
}

TEST_F(TrainingTest, GradientsThroughLayersMatchFiniteDifferences) {
  module_gradcheck(std::make_shared<Linear>(3, 2), loom::randn({4, 3}));
  auto bl = std::make_shared<Bilinear>(3, 2, 2);
  const Tensor x2 = loom::randn({4, 2}, DType::Float64);
  module_gradcheck(bl, loom::randn({4, 3}), [&](const Tensor& x) { return bl->forward(x, x2); });
  module_gradcheck(std::make_shared<Conv2d>(2, 3, 3, 1, 1), loom::randn({1, 2, 4, 4}));
  module_gradcheck(std::make_shared<BatchNorm1d>(3), loom::randn({5, 3}));
  module_gradcheck(std::make_shared<LayerNorm>(4), loom::randn({2, 4}));
  module_gradcheck(std::make_shared<GroupNorm>(2, 4), loom::randn({2, 4, 3}));
  // (No padding_idx here: its row deliberately gets no gradient.)
  module_gradcheck(std::make_shared<Embedding>(5, 3),
                   Tensor::from_vector<int64_t>({0, 3, 3, 1}, {4}));
  RNNOptions o;
  o.bidirectional = true;
  module_gradcheck(std::make_shared<LSTM>(2, 3, o), loom::randn({3, 2, 2}));
  module_gradcheck(std::make_shared<GRU>(2, 3), loom::randn({3, 1, 2}));
  auto mha = std::make_shared<MultiheadAttention>(4, 2);
  const Tensor mask = Tensor::from_vector<bool>({false, true, false, false, false, false}, {2, 3});
  module_gradcheck(mha, loom::randn({3, 2, 4}), [&](const Tensor& x) {
    return std::get<0>(mha->forward(x, x, x, mask, false));
  });
  TransformerEncoderLayerOptions eo;
  eo.dim_feedforward = 6;
  eo.norm_first = true;
  auto layer = std::make_shared<TransformerEncoderLayer>(4, 2, eo);
  layer->eval();
  module_gradcheck(layer, loom::randn({3, 1, 4}));
}

// Two Gaussian blobs, a two-layer MLP with batch norm and dropout, cross entropy, plain SGD.
TEST_F(TrainingTest, TinyModelLearnsAToyProblem) {
  loom::manual_seed(1);
  const int64_t n = 64;
  const Tensor labels = loom::remainder(loom::arange(0, n, 1), 2);
  const Tensor centers = labels.to(DType::Float32).mul(2.0).sub(1.0).unsqueeze(1);
  const Tensor inputs = loom::randn({n, 2}).mul(0.5).add(centers.expand({n, 2}));

  auto model = std::make_shared<Sequential>(
      std::make_shared<Linear>(2, 16), std::make_shared<BatchNorm1d>(16), std::make_shared<ReLU>(),
      std::make_shared<Dropout>(0.1), std::make_shared<Linear>(16, 2));
  auto loss_fn = std::make_shared<CrossEntropyLoss>();
  const double lr = 0.2;
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    model->zero_grad();
    const Tensor loss = (*loss_fn)((*model)(inputs), labels);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    loss.backward();
    utils::clip_grad_norm_(model->parameters(), 5.0);
    autograd::NoGradGuard no_grad;
    for (const Tensor& p : model->parameters()) p.sub_(p.grad(), lr);
  }
  EXPECT_LT(last, 0.5 * first) << "first " << first << " last " << last;
  model->eval();
  const Tensor predicted = std::get<1>((*model)(inputs).max(1));
  const double accuracy = predicted.eq(labels).to(DType::Float32).mean().item<double>();
  EXPECT_GT(accuracy, 0.9);
}

}  // namespace
}  // namespace loom::nn
