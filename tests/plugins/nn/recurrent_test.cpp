// RNN, LSTM, GRU, MultiheadAttention and TransformerEncoderLayer: shapes, parameter names,
// and one step (or one head) against a hand computation from the layer's own weights.
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

using RecurrentTest = testing::NnTest;

Tensor lin(const Tensor& x, const Tensor& w, const Tensor& b) { return x.matmul(w.t()).add(b); }

TEST_F(RecurrentTest, LstmOneStepMatchesHandComputation) {
  auto lstm = std::make_shared<LSTM>(3, 2);
  EXPECT_EQ(lstm->named_parameters().keys(),
            (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"}));
  EXPECT_EQ(sizes_str(lstm->layer_weights(0)[0].sizes()), "[8, 3]");
  const double bound = 1.0 / std::sqrt(2.0);
  for (const Tensor& p : lstm->parameters()) {
    EXPECT_LE(p.abs().max().item<double>(), bound);
  }
  const Tensor x = loom::randn({1, 4, 3});  // T=1, N=4
  const Tensor h0 = loom::randn({1, 4, 2});
  const Tensor c0 = loom::randn({1, 4, 2});
  auto [out, state] = lstm->forward(x, std::make_tuple(h0, c0));
  auto [hn, cn] = state;
  const auto w = lstm->layer_weights(0);
  const Tensor gates = lin(x.select(0, 0), w[0], w[2]).add(lin(h0.select(0, 0), w[1], w[3]));
  const auto g = gates.chunk(4, 1);
  const Tensor c = g[1].sigmoid().mul(c0.select(0, 0)).add(g[0].sigmoid().mul(g[2].tanh()));
  const Tensor h = g[3].sigmoid().mul(c.tanh());
  expect_tensors_near(out.select(0, 0), h);
  expect_tensors_near(hn.select(0, 0), h);
  expect_tensors_near(cn.select(0, 0), c);
}

TEST_F(RecurrentTest, GruOneStepMatchesHandComputation) {
  auto gru = std::make_shared<GRU>(3, 5);
  const Tensor x = loom::randn({1, 2, 3});
  const Tensor h0 = loom::randn({1, 2, 5});
  auto [out, hn] = gru->forward(x, h0);
  const auto w = gru->layer_weights(0);
  const auto xi = lin(x.select(0, 0), w[0], w[2]).chunk(3, 1);
  const auto hh = lin(h0.select(0, 0), w[1], w[3]).chunk(3, 1);
  const Tensor r = xi[0].add(hh[0]).sigmoid();
  const Tensor z = xi[1].add(hh[1]).sigmoid();
  const Tensor n = xi[2].add(r.mul(hh[2])).tanh();
  const Tensor h = z.mul(-1.0).add(1.0).mul(n).add(z.mul(h0.select(0, 0)));
  expect_tensors_near(out.select(0, 0), h);
  expect_tensors_near(hn.select(0, 0), h);
}

TEST_F(RecurrentTest, RnnTwoStepsByHand) {
  auto rnn = std::make_shared<RNN>(2, 3, RNNOptions{}, "relu");
  const Tensor x = loom::randn({2, 1, 2});
  auto [out, hn] = rnn->forward(x, std::nullopt);
  const auto w = rnn->layer_weights(0);
  Tensor h = loom::zeros({1, 3});
  for (int t = 0; t < 2; ++t) h = lin(x.select(0, t), w[0], w[2]).add(lin(h, w[1], w[3])).relu();
  expect_tensors_near(hn.select(0, 0), h);
  expect_tensors_near(out.select(0, 1), h);
}

TEST_F(RecurrentTest, MultiLayerBidirectionalBatchFirstShapes) {
  RNNOptions o;
  o.num_layers = 2;
  o.bidirectional = true;
  o.batch_first = true;
  o.dropout = 0.2;
  auto lstm = std::make_shared<LSTM>(3, 4, o);
  EXPECT_EQ(lstm->parameters().size(), 16u);
  EXPECT_TRUE(lstm->named_parameters().contains("weight_ih_l1_reverse"));
  EXPECT_EQ(sizes_str(lstm->named_parameters()["weight_ih_l1"].sizes()), "[16, 8]");
  const Tensor x = loom::randn({5, 7, 3});  // N=5, T=7
  auto [out, state] = lstm->forward(x, std::nullopt);
  EXPECT_EQ(sizes_str(out.sizes()), "[5, 7, 8]");
  EXPECT_EQ(sizes_str(std::get<0>(state).sizes()), "[4, 5, 4]");
  EXPECT_EQ(sizes_str(std::get<1>(state).sizes()), "[4, 5, 4]");
  // The reverse direction's output at t = 0 is its final state (layer 1 reverse = index 3).
  lstm->eval();
  auto [o2, s2] = lstm->forward(x, std::nullopt);
  expect_tensors_near(o2.select(1, 0).narrow(1, 4, 4), std::get<0>(s2).select(0, 3));
  expect_tensors_near(o2.select(1, 6).narrow(1, 0, 4), std::get<0>(s2).select(0, 2));
  // Unbatched input [T, in].
  auto gru = std::make_shared<GRU>(3, 4);
  auto [ou, hu] = gru->forward(loom::randn({6, 3}), std::nullopt);
  EXPECT_EQ(sizes_str(ou.sizes()), "[6, 4]");
  EXPECT_EQ(sizes_str(hu.sizes()), "[1, 4]");
  EXPECT_TRUE(contains(message_of([&] {
                         gru->forward(loom::randn({6, 2, 5}), std::nullopt);
                       }),
                       "input.size(-1) must be equal to input_size. Expected 3, got 5"));
  EXPECT_TRUE(contains(message_of([&] {
                         gru->forward(loom::randn({6, 2, 3}), loom::zeros({2, 2, 4}));
                       }),
                       "Expected hidden size [1, 2, 4], got [2, 2, 4]"));
}

TEST_F(RecurrentTest, LstmLearnsThroughBackward) {
  auto lstm = std::make_shared<LSTM>(2, 3);
  auto [out, st] = lstm->forward(loom::randn({4, 2, 2}), std::nullopt);
  out.sum().backward();
  for (const auto& [name, p] : lstm->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0.0) << name;
  }
}

TEST_F(RecurrentTest, MultiheadAttentionMatchesHandComputation) {
  const int64_t E = 4, H = 2, L = 3, S = 5, N = 2;
  auto mha = std::make_shared<MultiheadAttention>(E, H);
  EXPECT_EQ(mha->named_parameters().keys(),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                      "out_proj.bias"}));
  EXPECT_EQ(to_doubles(mha->in_proj_bias), std::vector<double>(12, 0.0));
  EXPECT_LE(mha->in_proj_weight.abs().max().item<double>(), std::sqrt(6.0 / 16.0));
  {
    autograd::NoGradGuard g;
    mha->in_proj_bias.copy_(loom::randn({12}));
    mha->out_proj->bias.copy_(loom::randn({4}));
  }
  const Tensor q = loom::randn({L, N, E});
  const Tensor k = loom::randn({S, N, E});
  const Tensor v = loom::randn({S, N, E});
  // Mask the last key of batch 1, and key 0 for query 2 everywhere.
  const Tensor kpm = Tensor::from_vector<bool>(
      {false, false, false, false, false, false, false, false, false, true}, {N, S});
  const Tensor am = loom::zeros({L, S}, DType::Bool);
  am.index_put_({2, 0}, Scalar(true));
  auto [out, weights] = mha->forward(q, k, v, kpm, true, am);
  ASSERT_EQ(sizes_str(out.sizes()), "[3, 2, 4]");
  ASSERT_EQ(sizes_str(weights.sizes()), "[2, 3, 5]");

  autograd::NoGradGuard no_grad;
  const auto w = mha->in_proj_weight.chunk(3, 0);
  const auto b = mha->in_proj_bias.chunk(3, 0);
  const int64_t hd = E / H;
  const std::vector<double> kpm_v = to_doubles(kpm), am_v = to_doubles(am);
  for (int64_t n = 0; n < N; ++n) {
    const Tensor qp = lin(q.select(1, n), w[0], b[0]);  // [L, E]
    const Tensor kp = lin(k.select(1, n), w[1], b[1]);  // [S, E]
    const Tensor vp = lin(v.select(1, n), w[2], b[2]);
    std::vector<Tensor> head_outs;
    Tensor avg = loom::zeros({L, S});
    for (int64_t h = 0; h < H; ++h) {
      Tensor scores =
          qp.narrow(1, h * hd, hd).matmul(kp.narrow(1, h * hd, hd).t()).div(std::sqrt(hd));
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t j = 0; j < S; ++j) {
          if (kpm_v[n * S + j] != 0 || am_v[i * S + j] != 0) {
            scores.index_put_({i, j}, Scalar(-INFINITY));
          }
        }
      }
      const Tensor a = scores.softmax(-1);
      avg = avg.add(a.div(static_cast<double>(H)));
      head_outs.push_back(a.matmul(vp.narrow(1, h * hd, hd)));
    }
    const Tensor o = lin(loom::cat(head_outs, 1), mha->out_proj->weight, mha->out_proj->bias);
    expect_tensors_near(out.select(1, n), o, 1e-4, 1e-5);
    expect_tensors_near(weights.select(0, n), avg, 1e-4, 1e-5);
  }
  // need_weights = false returns no weights; per-head weights when not averaged.
  EXPECT_FALSE(std::get<1>(mha->forward(q, k, v, std::nullopt, false)).defined());
  EXPECT_EQ(
      sizes_str(
          std::get<1>(mha->forward(q, k, v, std::nullopt, true, std::nullopt, false)).sizes()),
      "[2, 2, 3, 5]");
  EXPECT_TRUE(contains(message_of([&] {
                         mha->forward(q, k, v, std::nullopt, true, loom::zeros({2, 2}));
                       }),
                       "The shape of the 2D attn_mask is [2, 2], but should be [3, 5]."));
  EXPECT_EQ(message_of([] { MultiheadAttention(5, 2); }),
            "embed_dim must be divisible by num_heads");
}

TEST_F(RecurrentTest, MultiheadAttentionBatchFirstAndCausal) {
  auto mha = std::make_shared<MultiheadAttention>(4, 1, 0.0, true, /*batch_first=*/true);
  const Tensor x = loom::randn({2, 3, 4});
  auto [out, w] = mha->forward(x, x, x, std::nullopt, true, std::nullopt, true, /*is_causal=*/true);
  EXPECT_EQ(sizes_str(out.sizes()), "[2, 3, 4]");
  // Causal: query 0 sees only key 0.
  EXPECT_NEAR(w.select(0, 0).select(0, 0).select(0, 0).item<double>(), 1.0, 1e-6);
  EXPECT_EQ(w.select(0, 1).select(0, 0).select(0, 2).item<double>(), 0.0);
  // batch_first gives the time-major result transposed.
  auto tm = std::make_shared<MultiheadAttention>(4, 1);
  tm->load_state_dict(mha->state_dict());
  const Tensor xt = x.transpose(0, 1);
  expect_tensors_near(
      std::get<0>(tm->forward(xt, xt, xt, std::nullopt, false, std::nullopt, true, true))
          .transpose(0, 1),
      out, 1e-5, 1e-6);
}

TEST_F(RecurrentTest, TransformerEncoderLayerMatchesItsBlocks) {
  for (bool norm_first : {false, true}) {
    TransformerEncoderLayerOptions o;
    o.dim_feedforward = 16;
    o.norm_first = norm_first;
    o.activation = "gelu";
    auto layer = std::make_shared<TransformerEncoderLayer>(8, 2, o);
    EXPECT_EQ(layer->named_children().keys(),
              (std::vector<std::string>{"self_attn", "linear1", "dropout", "linear2", "norm1",
                                        "norm2", "dropout1", "dropout2"}));
    layer->eval();  // dropout off
    const Tensor x = loom::randn({5, 3, 8});
    const Tensor y = (*layer)(x);
    ASSERT_EQ(sizes_str(y.sizes()), "[5, 3, 8]");
    auto sa = [&](const Tensor& t) { return (*layer->self_attn)(t); };
    auto ff = [&](const Tensor& t) {
      return layer->linear2->forward(layer->linear1->forward(t).gelu());
    };
    Tensor want = x;
    if (norm_first) {
      want = want.add(sa(layer->norm1->forward(want)));
      want = want.add(ff(layer->norm2->forward(want)));
    } else {
      want = layer->norm1->forward(want.add(sa(want)));
      want = layer->norm2->forward(want.add(ff(want)));
    }
    expect_tensors_near(y, want, 1e-4, 1e-5);
  }
  EXPECT_EQ(message_of([] {
              TransformerEncoderLayerOptions o;
              o.activation = "tanh";
              TransformerEncoderLayer(8, 2, o);
            }),
            "activation should be relu/gelu, not tanh");
}

TEST_F(RecurrentTest, TransformerEncoderStacksCopiesOfTheLayer) {
  TransformerEncoderLayerOptions o;
  o.dim_feedforward = 16;
  auto layer = std::make_shared<TransformerEncoderLayer>(8, 2, o);
  auto enc = std::make_shared<TransformerEncoder>(layer, 3, std::make_shared<LayerNorm>(8));
  const auto names = enc->named_parameters().keys();
  EXPECT_EQ(names.front(), "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(names.back(), "norm.bias");
  // Every copy starts from the given layer's weights, as PyTorch's deep copies do.
  EXPECT_EQ(to_doubles(enc->layers->at<TransformerEncoderLayer>(2)->linear1->weight),
            to_doubles(layer->linear1->weight));
  enc->eval();
  layer->eval();
  const Tensor x = loom::randn({4, 2, 8});
  Tensor want = x;
  for (int i = 0; i < 3; ++i) want = (*layer)(want);
  expect_tensors_near((*enc)(x), enc->norm->forward(want), 1e-4, 1e-5);
}

}  // namespace
}  // namespace loom::nn
