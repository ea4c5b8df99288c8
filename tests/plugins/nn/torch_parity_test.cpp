// The nn library against libtorch's torch::nn: each layer gets the libtorch module's
// parameters and buffers through load_state_dict (strict, so the names must be PyTorch's),
// then both run the same input. Built only where libtorch is installed.
#include <gtest/gtest.h>
#include <torch/nn.h>

#include <cstring>

#include "loom/nn/nn.h"
#include "nn_test_util.h"

namespace loom::nn {
namespace {

using testing::to_doubles;

at::Tensor to_torch(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<int64_t> sizes(c.sizes().begin(), c.sizes().end());
  at::ScalarType st = c.dtype() == DType::Int64  ? at::kLong
                      : c.dtype() == DType::Bool ? at::kBool
                                                 : at::kFloat;
  at::Tensor out = at::empty(sizes, at::TensorOptions().dtype(st));
  if (c.numel() > 0) std::memcpy(out.data_ptr(), c.data_ptr(), c.numel() * c.element_size());
  return out;
}

Tensor from_torch(const at::Tensor& t) {
  const at::Tensor c = t.detach().contiguous();
  std::vector<int64_t> sizes(c.sizes().begin(), c.sizes().end());
  if (c.scalar_type() == at::kLong) {
    return Tensor::from_vector(
        std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()), sizes);
  }
  const at::Tensor f = c.to(at::kFloat);
  return Tensor::from_vector(
      std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel()), sizes);
}

// The libtorch module's state, by PyTorch's names, loaded strictly into the Loom module.
void copy_state(const torch::nn::Module& from, Module& to) {
  StateDict sd;
  for (const auto& p : from.named_parameters()) {
    if (p.value().defined()) sd.insert(p.key(), from_torch(p.value()));
  }
  for (const auto& b : from.named_buffers()) {
    if (b.value().defined()) sd.insert(b.key(), from_torch(b.value()));
  }
  to.load_state_dict(sd, /*strict=*/true);
}

void expect_same(const Tensor& got, const at::Tensor& want, double tol = 1e-5) {
  testing::expect_tensors_near(got, from_torch(want), tol, tol);
}

class TorchParityTest : public testing::NnTest {
 protected:
  void SetUp() override {
    NnTest::SetUp();
    torch::manual_seed(0);
  }
};

TEST_F(TorchParityTest, LinearAndConvolutions) {
  torch::nn::Linear tl(5, 3);
  auto ll = std::make_shared<Linear>(5, 3);
  copy_state(*tl, *ll);
  const Tensor x = loom::randn({4, 5});
  expect_same((*ll)(x), tl(to_torch(x)));

  torch::nn::Conv2d tc(torch::nn::Conv2dOptions(4, 6, 3).stride(2).padding(1).groups(2));
  auto lc = std::make_shared<Conv2d>(4, 6, 3, 2, 1, 1, 2);
  copy_state(*tc, *lc);
  const Tensor xi = loom::randn({2, 4, 9, 8});
  expect_same((*lc)(xi), tc(to_torch(xi)), 1e-4);

  torch::nn::ConvTranspose2d tt(
      torch::nn::ConvTranspose2dOptions(4, 3, 3).stride(2).padding(1).output_padding(1));
  auto lt = std::make_shared<ConvTranspose2d>(4, 3, 3, 2, 1, 1);
  copy_state(*tt, *lt);
  expect_same((*lt)(xi), tt(to_torch(xi)), 1e-4);
}

TEST_F(TorchParityTest, NormalizationTrainingAndEval) {
  torch::nn::BatchNorm2d tb(3);
  auto lb = std::make_shared<BatchNorm2d>(3);
  copy_state(*tb, *lb);
  const Tensor x = loom::randn({4, 3, 5, 5}).mul(3.0).add(1.0);
  expect_same((*lb)(x), tb(to_torch(x)), 1e-4);
  expect_same(lb->running_mean, tb->running_mean, 1e-5);
  expect_same(lb->running_var, tb->running_var, 1e-5);
  lb->eval();
  tb->eval();
  expect_same((*lb)(x), tb(to_torch(x)), 1e-4);

  torch::nn::LayerNorm tln(torch::nn::LayerNormOptions({5}));
  auto lln = std::make_shared<LayerNorm>(5);
  copy_state(*tln, *lln);
  expect_same((*lln)(x), tln(to_torch(x)), 1e-4);

  torch::nn::GroupNorm tg(torch::nn::GroupNormOptions(1, 3));
  auto lg = std::make_shared<GroupNorm>(1, 3);
  copy_state(*tg, *lg);
  expect_same((*lg)(x), tg(to_torch(x)), 1e-4);
}

TEST_F(TorchParityTest, Recurrent) {
  torch::nn::LSTM tl(
      torch::nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  RNNOptions o;
  o.num_layers = 2;
  o.bidirectional = true;
  o.batch_first = true;
  auto ll = std::make_shared<LSTM>(3, 4, o);
  copy_state(*tl, *ll);
  const Tensor x = loom::randn({2, 6, 3});
  const Tensor h0 = loom::randn({4, 2, 4});
  const Tensor c0 = loom::randn({4, 2, 4});
  auto [lo, ls] = ll->forward(x, std::make_tuple(h0, c0));
  auto [to, ts] = tl->forward(to_torch(x), std::make_tuple(to_torch(h0), to_torch(c0)));
  expect_same(lo, to, 1e-5);
  expect_same(std::get<0>(ls), std::get<0>(ts), 1e-5);
  expect_same(std::get<1>(ls), std::get<1>(ts), 1e-5);

  torch::nn::GRU tg(torch::nn::GRUOptions(3, 5).num_layers(2));
  RNNOptions og;
  og.num_layers = 2;
  auto lg = std::make_shared<GRU>(3, 5, og);
  copy_state(*tg, *lg);
  const Tensor xt = loom::randn({7, 2, 3});
  auto [go, gh] = lg->forward(xt, std::nullopt);
  auto [tgo, tgh] = tg->forward(to_torch(xt));
  expect_same(go, tgo, 1e-5);
  expect_same(gh, tgh, 1e-5);
}

TEST_F(TorchParityTest, AttentionWithMasksAndEncoderLayer) {
  torch::nn::MultiheadAttention tm(torch::nn::MultiheadAttentionOptions(8, 2));
  auto lm = std::make_shared<MultiheadAttention>(8, 2);
  copy_state(*tm, *lm);
  const Tensor q = loom::randn({4, 3, 8});
  const Tensor kv = loom::randn({6, 3, 8});
  const Tensor kpm = loom::rand({3, 6}).gt(0.8);
  const Tensor am = loom::randn({4, 6});
  auto [lo, lw] = lm->forward(q, kv, kv, kpm, true, am);
  auto [to, tw] =
      tm->forward(to_torch(q), to_torch(kv), to_torch(kv), to_torch(kpm), true, to_torch(am));
  expect_same(lo, to, 1e-5);
  expect_same(lw, tw, 1e-5);

  torch::nn::TransformerEncoderLayer te(
      torch::nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.1));
  TransformerEncoderLayerOptions eo;
  eo.dim_feedforward = 16;
  auto le = std::make_shared<TransformerEncoderLayer>(8, 2, eo);
  copy_state(*te, *le);
  te->eval();
  le->eval();
  expect_same((*le)(q), te(to_torch(q)), 1e-4);
}

TEST_F(TorchParityTest, PReLUUpsampleAndTransposedConv1d) {
  torch::nn::PReLU tp(torch::nn::PReLUOptions().num_parameters(3));
  auto lp = std::make_shared<PReLU>(3);
  copy_state(*tp, *lp);
  const Tensor x = loom::randn({2, 3, 5});
  expect_same((*lp)(x), tp(to_torch(x)));

  torch::nn::ConvTranspose1d tc(
      torch::nn::ConvTranspose1dOptions(3, 4, 3).stride(2).padding(1).output_padding(1));
  auto lc = std::make_shared<ConvTranspose1d>(3, 4, 3, 2, 1, 1);
  copy_state(*tc, *lc);
  expect_same((*lc)(x), tc(to_torch(x)), 1e-5);

  const Tensor img = loom::randn({1, 2, 4, 5});
  torch::nn::Upsample tu(torch::nn::UpsampleOptions()
                             .scale_factor(std::vector<double>{2.0, 1.5})
                             .mode(torch::kBilinear)
                             .align_corners(true));
  Upsample lu({}, {2.0, 1.5}, "bilinear", true);
  expect_same(lu.forward(img), tu(to_torch(img)), 1e-5);
}

TEST_F(TorchParityTest, EmbeddingAndLosses) {
  torch::nn::Embedding te(torch::nn::EmbeddingOptions(10, 4).padding_idx(2));
  auto le = std::make_shared<Embedding>(10, 4, 2);
  copy_state(*te, *le);
  const Tensor idx = Tensor::from_vector<int64_t>({1, 2, 9, 0}, {2, 2});
  expect_same((*le)(idx), te(to_torch(idx)));

  const Tensor logits = loom::randn({5, 4});
  const Tensor target = Tensor::from_vector<int64_t>({0, 3, 1, 2, 2}, {5});
  torch::nn::CrossEntropyLoss tce(torch::nn::CrossEntropyLossOptions().label_smoothing(0.2));
  expect_same((*std::make_shared<CrossEntropyLoss>(std::nullopt, -100, Reduction::Mean, 0.2))(
                  logits, target),
              tce(to_torch(logits), to_torch(target)));
  const Tensor a = loom::randn({3, 4}), b = loom::randn({3, 4});
  torch::nn::SmoothL1Loss ts(torch::nn::SmoothL1LossOptions().beta(0.5));
  expect_same((*std::make_shared<SmoothL1Loss>(Reduction::Mean, 0.5))(a, b),
              ts(to_torch(a), to_torch(b)));
}

}  // namespace
}  // namespace loom::nn
