// The derivative formulas of the nn pack (ops/nn/autograd/*.cpp) and its composites, checked
// by gradcheck on small float64 inputs. Each op is checked twice: its Jacobian element by
// element, and the gradient of the sum of its output, which reaches the formula as a
// stride-0 (expanded) gradient, as in a training loop's loss.sum().backward().
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/autograd/autograd.h"
#include "loom/autograd/gradcheck.h"
#include "loom/core/generator.h"
#include "loom/loom.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using autograd::variable_list;
using testing::make_tensor;
using testing::random_values;
using Fn = std::function<Tensor(const variable_list&)>;

constexpr Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

const char* name_of(Reduction r) {
  return r == Reduction::None ? "none" : r == Reduction::Mean ? "mean" : "sum";
}

class NnGradcheckTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }

  /// A float64 tensor of uniform values in [lo, hi) that requires grad.
  static Tensor leaf(std::vector<int64_t> sizes, uint64_t seed, double lo = -1, double hi = 1,
                     bool strided = false) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    Tensor t = make_tensor(random_values(static_cast<size_t>(n), seed, lo, hi), sizes,
                           DType::Float64, strided);
    t.set_requires_grad(true);
    return t;
  }
  /// The same without requires_grad (targets, running stats).
  static Tensor constant(std::vector<int64_t> sizes, uint64_t seed, double lo = -1, double hi = 1) {
    Tensor t = leaf(std::move(sizes), seed, lo, hi);
    t.set_requires_grad(false);
    return t;
  }
  static Tensor ints(const std::vector<double>& v, std::vector<int64_t> sizes) {
    return make_tensor(v, sizes, DType::Int64);
  }

  /// gradcheck of f's output and of its sum; failures name what.
  static void check(const std::string& what, const Fn& f, const variable_list& inputs) {
    const autograd::CheckedFunction full = [&](const variable_list& in) -> variable_list {
      return {f(in)};
    };
    const autograd::CheckedFunction summed = [&](const variable_list& in) -> variable_list {
      return {sum(f(in))};
    };
    try {
      autograd::gradcheck(full, inputs);
      autograd::gradcheck(summed, inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
  }

  /// gradgradcheck of f; failures name what.
  static void check_gradgrad(const std::string& what, const Fn& f, const variable_list& inputs) {
    try {
      autograd::gradgradcheck([&](const variable_list& in) -> variable_list { return {f(in)}; },
                              inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " (gradgradcheck): " << e.what();
    }
  }
};

// ---- convolution ----

TEST_F(NnGradcheckTest, Convolution) {
  const Tensor x = leaf({2, 4, 5, 6}, 1), w = leaf({6, 2, 3, 3}, 2), b = leaf({6}, 3);
  check("convolution groups=2 stride/padding/dilation",
        [](const variable_list& v) {
          return convolution(v[0], v[1], v[2], {2, 1}, {1, 2}, {1, 2}, false, {0, 0}, 2);
        },
        {x, w, b});
  const Tensor xt = leaf({2, 4, 3, 4}, 4), wt = leaf({4, 3, 3, 2}, 5), bt = leaf({6}, 6);
  check("convolution transposed groups=2 output_padding",
        [](const variable_list& v) {
          return convolution(v[0], v[1], v[2], {2, 2}, {1, 0}, {1, 1}, true, {1, 1}, 2);
        },
        {xt, wt, bt});
  check("convolution without bias",
        [](const variable_list& v) {
          return convolution(v[0], v[1], std::nullopt, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1);
        },
        {leaf({1, 2, 4, 4}, 7), leaf({3, 2, 2, 2}, 8)});
}

TEST_F(NnGradcheckTest, Conv2d) {
  check("conv2d stride/padding/dilation/groups/bias",
        [](const variable_list& v) {
          return conv2d(v[0], v[1], v[2], {2, 1}, {1, 1}, {2, 1}, 2);
        },
        {leaf({2, 4, 6, 5}, 11), leaf({4, 2, 2, 3}, 12), leaf({4}, 13)});
  check("conv2d unbatched", [](const variable_list& v) { return conv2d(v[0], v[1], v[2], 1, 1); },
        {leaf({2, 4, 4}, 14), leaf({3, 2, 3, 3}, 15), leaf({3}, 16)});
  check("conv2d strided input", [](const variable_list& v) { return conv2d(v[0], v[1]); },
        {leaf({1, 2, 4, 4}, 17, -1, 1, /*strided=*/true), leaf({2, 2, 3, 3}, 18)});
  // An even kernel: the total 'same' padding is odd (1 and 3 with dilation 1 and 1).
  check("conv2d padding=same (odd total)",
        [](const variable_list& v) { return conv2d(v[0], v[1], v[2], 1, "same"); },
        {leaf({2, 2, 5, 5}, 19), leaf({3, 2, 2, 4}, 20), leaf({3}, 21)});
  check("conv2d padding=same dilation",
        [](const variable_list& v) {
          return conv2d(v[0], v[1], std::nullopt, 1, "same", {2, 1});
        },
        {leaf({1, 2, 6, 5}, 22), leaf({2, 2, 3, 3}, 23)});
  check("conv2d padding=valid unbatched",
        [](const variable_list& v) { return conv2d(v[0], v[1], v[2], 2, "valid"); },
        {leaf({2, 5, 5}, 24), leaf({3, 2, 2, 2}, 25), leaf({3}, 26)});
}

TEST_F(NnGradcheckTest, Conv1d) {
  check("conv1d", [](const variable_list& v) { return conv1d(v[0], v[1], v[2], 2, 1, 1, 2); },
        {leaf({2, 4, 7}, 31), leaf({6, 2, 3}, 32), leaf({6}, 33)});
  check("conv1d unbatched dilation",
        [](const variable_list& v) { return conv1d(v[0], v[1], std::nullopt, 1, 0, 2); },
        {leaf({2, 7}, 34), leaf({3, 2, 2}, 35)});
  check("conv1d padding=same (odd total)",
        [](const variable_list& v) { return conv1d(v[0], v[1], v[2], 1, "same"); },
        {leaf({2, 2, 6}, 36), leaf({2, 2, 4}, 37), leaf({2}, 38)});
}

TEST_F(NnGradcheckTest, ConvTranspose) {
  check("conv_transpose2d stride/padding/output_padding/groups/dilation",
        [](const variable_list& v) {
          return conv_transpose2d(v[0], v[1], v[2], {2, 2}, {1, 0}, {1, 0}, 2, {1, 2});
        },
        {leaf({2, 4, 3, 3}, 41), leaf({4, 2, 3, 2}, 42), leaf({4}, 43)});
  check("conv_transpose2d unbatched",
        [](const variable_list& v) { return conv_transpose2d(v[0], v[1]); },
        {leaf({2, 3, 3}, 44), leaf({2, 3, 2, 2}, 45)});
  check("conv_transpose1d",
        [](const variable_list& v) { return conv_transpose1d(v[0], v[1], v[2], 2, 1, 1); },
        {leaf({2, 2, 4}, 46), leaf({2, 3, 3}, 47), leaf({3}, 48)});
}

// ---- pooling ----

TEST_F(NnGradcheckTest, MaxPool) {
  const Tensor x = leaf({2, 2, 6, 7}, 51);
  check("max_pool2d",
        [](const variable_list& v) {
          return max_pool2d(v[0], {3, 2}, {2, 2}, {1, 1}, {1, 2});
        },
        {x});
  check("max_pool2d ceil_mode",
        [](const variable_list& v) {
          return max_pool2d(v[0], {2, 2}, {}, 0, 1, true);
        },
        {x});
  check("max_pool2d_with_indices",
        [](const variable_list& v) {
          return std::get<0>(max_pool2d_with_indices(v[0], {3, 3}, {2, 1}, {1, 0}, 1, true));
        },
        {x});
  check("max_pool2d unbatched",
        [](const variable_list& v) {
          return max_pool2d(v[0], {2, 2});
        },
        {leaf({2, 4, 4}, 52)});
  const Tensor x1 = leaf({2, 3, 9}, 53);
  check("max_pool1d", [](const variable_list& v) { return max_pool1d(v[0], {3}, {2}, {1}, {2}); },
        {x1});
  check("max_pool1d_with_indices",
        [](const variable_list& v) {
          return std::get<0>(max_pool1d_with_indices(v[0], {2}, {}, {0}, {1}, true));
        },
        {x1});
  check("max_pool1d unbatched", [](const variable_list& v) { return max_pool1d(v[0], {2}); },
        {leaf({3, 6}, 54)});
}

TEST_F(NnGradcheckTest, AvgPool) {
  const Tensor x = leaf({2, 2, 5, 6}, 61);
  check("avg_pool2d",
        [](const variable_list& v) {
          return avg_pool2d(v[0], {3, 2}, {2, 2}, {1, 1});
        },
        {x});
  check("avg_pool2d ceil_mode count_include_pad=false",
        [](const variable_list& v) {
          return avg_pool2d(v[0], {2, 3}, {2, 2}, {1, 1}, true, false);
        },
        {x});
  check("avg_pool2d divisor_override",
        [](const variable_list& v) {
          return avg_pool2d(v[0], {2, 2}, {1, 1}, 0, false, true, 3);
        },
        {x});
  check("avg_pool1d",
        [](const variable_list& v) { return avg_pool1d(v[0], {3}, {2}, {1}, true, false); },
        {leaf({2, 3, 8}, 62)});
}

TEST_F(NnGradcheckTest, AdaptivePool) {
  const Tensor x = leaf({2, 3, 5, 7}, 71);
  check("adaptive_avg_pool2d",
        [](const variable_list& v) {
          return adaptive_avg_pool2d(v[0], {3, 4});
        },
        {x});
  check("_adaptive_avg_pool2d",
        [](const variable_list& v) {
          return _adaptive_avg_pool2d(v[0], {2, 3});
        },
        {x});
  check("adaptive_avg_pool2d unbatched",
        [](const variable_list& v) {
          return adaptive_avg_pool2d(v[0], {2, 2});
        },
        {leaf({2, 4, 5}, 72)});
  check("adaptive_avg_pool1d",
        [](const variable_list& v) { return adaptive_avg_pool1d(v[0], {3}); },
        {leaf({2, 3, 7}, 73)});
  check("adaptive_max_pool2d",
        [](const variable_list& v) {
          return std::get<0>(adaptive_max_pool2d(v[0], {3, 4}));
        },
        {x});
  check("adaptive_max_pool1d",
        [](const variable_list& v) { return std::get<0>(adaptive_max_pool1d(v[0], {4})); },
        {leaf({2, 3, 7}, 74)});
}

// ---- normalization ----

TEST_F(NnGradcheckTest, BatchNorm) {
  const Tensor x = leaf({3, 2, 4}, 81), w = leaf({2}, 82, 0.5, 1.5), b = leaf({2}, 83);
  for (bool training : {true, false}) {
    const std::string mode = training ? " training" : " eval";
    check("native_batch_norm" + mode,
          [training](const variable_list& v) {
            const Tensor rm = full({2}, 0.3, DType::Float64), rv = full({2}, 1.7, DType::Float64);
            return std::get<0>(native_batch_norm(v[0], v[1], v[2], rm, rv, training, 0.1, 1e-5));
          },
          {x, w, b});
    check("batch_norm" + mode,
          [training](const variable_list& v) {
            const Tensor rm = zeros({2}, DType::Float64), rv = full({2}, 0.8, DType::Float64);
            return batch_norm(v[0], v[1], v[2], rm, rv, training, 0.1, 1e-5);
          },
          {leaf({2, 2, 3, 2}, 84), w, b});
  }
  check("batch_norm training without running stats or affine",
        [](const variable_list& v) {
          return batch_norm(v[0], std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1,
                            1e-5);
        },
        {x});
}

TEST_F(NnGradcheckTest, BatchNormWritesRunningStatsAndStillDifferentiates) {
  const Tensor x = leaf({4, 3}, 85);
  const Tensor rm = zeros({3}, DType::Float64), rv = ones({3}, DType::Float64);
  const Tensor y = batch_norm(x, std::nullopt, std::nullopt, rm, rv, true, 0.5, 1e-5);
  EXPECT_NE(testing::to_doubles(rm), std::vector<double>(3, 0.0));
  sum(y * y).backward();
  EXPECT_TRUE(x.grad().defined());
}

TEST_F(NnGradcheckTest, LayerNorm) {
  const Tensor x = leaf({2, 3, 4}, 91), w = leaf({3, 4}, 92, 0.5, 1.5), b = leaf({3, 4}, 93);
  check("native_layer_norm",
        [](const variable_list& v) {
          return std::get<0>(native_layer_norm(v[0], {3, 4}, v[1], v[2], 1e-5));
        },
        {x, w, b});
  check("layer_norm", [](const variable_list& v) { return layer_norm(v[0], {4}, v[1], v[2]); },
        {x, leaf({4}, 94), leaf({4}, 95)});
  check("layer_norm without affine",
        [](const variable_list& v) {
          return layer_norm(v[0], {3, 4});
        },
        {x});
}

TEST_F(NnGradcheckTest, GroupNorm) {
  const Tensor x = leaf({2, 4, 3}, 101), w = leaf({4}, 102, 0.5, 1.5), b = leaf({4}, 103);
  check("native_group_norm",
        [](const variable_list& v) {
          return std::get<0>(native_group_norm(v[0], v[1], v[2], 2, 4, 3, 2, 1e-5));
        },
        {x, w, b});
  check("group_norm", [](const variable_list& v) { return group_norm(v[0], 2, v[1], v[2]); },
        {leaf({2, 4, 2, 2}, 104), w, b});
  check("group_norm without affine", [](const variable_list& v) { return group_norm(v[0], 4); },
        {x});
}

// ---- dropout, embedding ----

TEST_F(NnGradcheckTest, Dropout) {
  const Tensor x = leaf({3, 4, 2}, 111);
  // The same seed in every call, so finite differences see the same mask.
  check("native_dropout",
        [](const variable_list& v) {
          manual_seed(7);
          return std::get<0>(native_dropout(v[0], 0.4, true));
        },
        {x});
  check("native_dropout train=None",
        [](const variable_list& v) {
          manual_seed(7);
          return std::get<0>(native_dropout(v[0], 0.4, std::nullopt));
        },
        {x});
  check("native_dropout eval",
        [](const variable_list& v) { return std::get<0>(native_dropout(v[0], 0.4, false)); }, {x});
  for (const char* op : {"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"}) {
    const std::string name = op;
    check(name,
          [name](const variable_list& v) {
            manual_seed(9);
            if (name == "dropout") return dropout(v[0], 0.3, true);
            if (name == "feature_dropout") return feature_dropout(v[0], 0.3, true);
            if (name == "alpha_dropout") return alpha_dropout(v[0], 0.3, true);
            return feature_alpha_dropout(v[0], 0.3, true);
          },
          {x});
  }
  check("dropout eval", [](const variable_list& v) { return dropout(v[0], 0.3, false) * 2.0; },
        {x});
}

TEST_F(NnGradcheckTest, Embedding) {
  const Tensor w = leaf({5, 3}, 121);
  const Tensor idx = ints({0, 2, 2, 4, 1, 2}, {2, 3});
  check("embedding", [&](const variable_list& v) { return embedding(v[0], idx); }, {w});
}

// padding_idx and scale_grad_by_freq change the gradient on purpose (the padding row gets
// none, a row used k times gets the mean of its gradients), as in PyTorch: no gradcheck.
TEST_F(NnGradcheckTest, EmbeddingPaddingIdxAndScaleGradByFreq) {
  const Tensor idx = ints({0, 2, 2, 4, 1, 2}, {2, 3});
  std::vector<double> gv(18);
  for (size_t i = 0; i < gv.size(); ++i) gv[i] = static_cast<double>(i + 1);
  const Tensor g = make_tensor(gv, {2, 3, 3}, DType::Float64);
  const Tensor w = leaf({5, 3}, 122);
  sum(embedding(w, idx, 2) * g).backward();
  EXPECT_EQ(testing::to_doubles(w.grad()),
            (std::vector<double>{1, 2, 3, 13, 14, 15, 0, 0, 0, 0, 0, 0, 10, 11, 12}));
  const Tensor w2 = leaf({5, 3}, 123);
  sum(embedding(w2, idx, -1, true) * g).backward();
  EXPECT_EQ(testing::to_doubles(w2.grad()),
            (std::vector<double>{1, 2, 3, 13, 14, 15, 9, 10, 11, 0, 0, 0, 10, 11, 12}));
}

TEST_F(NnGradcheckTest, EmbeddingDoubleBackward) {
  const Tensor idx = ints({0, 2, 2, 4, 1, 2}, {2, 3});
  check("embedding_dense_backward",
        [&](const variable_list& v) { return embedding_dense_backward(v[0], idx, 5, -1, false); },
        {leaf({2, 3, 4}, 124)});
  check("embedding_dense_backward padding_idx scale_grad_by_freq",
        [&](const variable_list& v) { return embedding_dense_backward(v[0], idx, 5, 4, true); },
        {leaf({2, 3, 4}, 125)});
  try {
    autograd::gradgradcheck(
        [&](const variable_list& v) -> variable_list { return {embedding(v[0], idx, 1, true)}; },
        {leaf({5, 3}, 126)});
  } catch (const std::exception& e) {
    ADD_FAILURE() << "embedding gradgradcheck: " << e.what();
  }
}

// ---- losses ----

TEST_F(NnGradcheckTest, NllLoss) {
  const Tensor x = leaf({4, 3}, 131), wt = constant({3}, 132, 0.5, 2);
  const Tensor t = ints({0, 2, 1, 2}, {4});
  const Tensor x4 = leaf({2, 3, 2, 2}, 133);
  const Tensor t4 = ints({0, 1, 2, 1, 2, 2, 0, 1}, {2, 2, 2});
  const Tensor x3 = leaf({2, 3, 3}, 134);
  const Tensor t3 = ints({0, 1, 2, 2, 1, 0}, {2, 3});
  for (Reduction r : kReductions) {
    const std::string red = std::string(" reduction=") + name_of(r);
    check("nll_loss_forward" + red,
          [&](const variable_list& v) { return std::get<0>(nll_loss_forward(v[0], t, wt, r, 1)); },
          {x});
    check("nll_loss2d_forward" + red,
          [&](const variable_list& v) {
            return std::get<0>(nll_loss2d_forward(v[0], t4, std::nullopt, r, -100));
          },
          {x4});
    check("nll_loss weight ignore_index" + red,
          [&](const variable_list& v) { return nll_loss(v[0], t, wt, r, 2); }, {x});
    check("nll_loss unbatched" + red,
          [&](const variable_list& v) { return nll_loss(v[0], ints({1}, {}), std::nullopt, r); },
          {leaf({3}, 135)});
    check("nll_loss2d" + red,
          [&](const variable_list& v) { return nll_loss2d(v[0], t4, wt, r, 0); }, {x4});
    check("nll_loss_nd 3-d" + red,
          [&](const variable_list& v) { return nll_loss_nd(v[0], t3, wt, r, 1); }, {x3});
  }
}

TEST_F(NnGradcheckTest, CrossEntropy) {
  const Tensor x = leaf({4, 3}, 141), wt = constant({3}, 142, 0.5, 2);
  const Tensor t = ints({0, 2, 1, 2}, {4});
  const Tensor x4 = leaf({2, 3, 2, 2}, 143);
  const Tensor t4 = ints({0, 1, 2, 1, 2, 2, 0, 1}, {2, 2, 2});
  Tensor probs = softmax(constant({4, 3}, 144), 1);
  probs.set_requires_grad(true);
  for (Reduction r : kReductions) {
    const std::string red = std::string(" reduction=") + name_of(r);
    check("cross_entropy" + red,
          [&](const variable_list& v) { return cross_entropy(v[0], t, std::nullopt, r); }, {x});
    check("cross_entropy weight ignore_index" + red,
          [&](const variable_list& v) { return cross_entropy(v[0], t, wt, r, 1); }, {x});
    check("cross_entropy label_smoothing weight ignore_index" + red,
          [&](const variable_list& v) { return cross_entropy(v[0], t, wt, r, 2, 0.2); }, {x});
    check(
        "cross_entropy 4-d label_smoothing" + red,
        [&](const variable_list& v) { return cross_entropy(v[0], t4, std::nullopt, r, -100, 0.1); },
        {x4});
    check("cross_entropy probabilities label_smoothing weight" + red,
          [&](const variable_list& v) { return cross_entropy(v[0], v[1], wt, r, -100, 0.1); },
          {x, probs});
  }
}

TEST_F(NnGradcheckTest, PointwiseLosses) {
  const Tensor x = leaf({3, 4}, 151), y = leaf({3, 4}, 152);
  const Tensor row = leaf({4}, 153);
  for (Reduction r : kReductions) {
    const std::string red = std::string(" reduction=") + name_of(r);
    check("mse_loss" + red, [r](const variable_list& v) { return mse_loss(v[0], v[1], r); },
          {x, y});
    check("mse_loss broadcast target" + red,
          [r](const variable_list& v) { return mse_loss(v[0], v[1], r); }, {x, row});
    check("l1_loss" + red, [r](const variable_list& v) { return l1_loss(v[0], v[1], r); }, {x, y});
    check("smooth_l1_loss" + red,
          [r](const variable_list& v) { return smooth_l1_loss(v[0], v[1], r, 0.7); }, {x, y});
    check("smooth_l1_loss beta=0" + red,
          [r](const variable_list& v) { return smooth_l1_loss(v[0], v[1], r, 0.0); }, {x, y});
    check("huber_loss" + red,
          [r](const variable_list& v) { return huber_loss(v[0], v[1], r, 0.6); }, {x, y});
    check("soft_margin_loss" + red,
          [r](const variable_list& v) { return soft_margin_loss(v[0], v[1], r); }, {x, y});
    check("margin_ranking_loss" + red,
          [r](const variable_list& v) { return margin_ranking_loss(v[0], v[1], v[2], 0.1, r); },
          {leaf({5}, 154), leaf({5}, 155), leaf({5}, 156)});
  }
}

TEST_F(NnGradcheckTest, MseLossDoubleBackward) {
  const Tensor x = leaf({3, 4}, 157), y = leaf({3, 4}, 158), row = leaf({4}, 159);
  for (Reduction r : kReductions) {
    const std::string red = std::string(" reduction=") + name_of(r);
    check("mse_loss_backward" + red,
          [r](const variable_list& v) { return mse_loss_backward(v[0], v[1], v[2], r); },
          {r == Reduction::None ? leaf({3, 4}, 160) : leaf({}, 160), x, y});
    for (const Tensor& target : {y, row}) {
      try {
        autograd::gradgradcheck(
            [r](const variable_list& v) -> variable_list { return {mse_loss(v[0], v[1], r)}; },
            {x, target});
      } catch (const std::exception& e) {
        ADD_FAILURE() << "mse_loss gradgradcheck" << red << ": " << e.what();
      }
    }
  }
}

TEST_F(NnGradcheckTest, BinaryCrossEntropy) {
  const Tensor p = leaf({3, 4}, 161, 0.1, 0.9), y = leaf({3, 4}, 162, 0, 1);
  const Tensor w = leaf({4}, 163, 0.5, 2);
  const Tensor logits = leaf({3, 4}, 164, -3, 3), pw = leaf({4}, 165, 0.5, 2);
  for (Reduction r : kReductions) {
    const std::string red = std::string(" reduction=") + name_of(r);
    check("binary_cross_entropy" + red,
          [r](const variable_list& v) { return binary_cross_entropy(v[0], v[1], std::nullopt, r); },
          {p, y});
    check("binary_cross_entropy weight" + red,
          [r](const variable_list& v) { return binary_cross_entropy(v[0], v[1], v[2], r); },
          {p, y, w});
    check("binary_cross_entropy_with_logits" + red,
          [r](const variable_list& v) {
            return binary_cross_entropy_with_logits(v[0], v[1], std::nullopt, std::nullopt, r);
          },
          {logits, y});
    check("binary_cross_entropy_with_logits weight pos_weight" + red,
          [r](const variable_list& v) {
            return binary_cross_entropy_with_logits(v[0], v[1], v[2], v[3], r);
          },
          {logits, y, w, pw});
  }
}

TEST_F(NnGradcheckTest, KlDiv) {
  const Tensor x = leaf({3, 4}, 171), t = leaf({3, 4}, 172, 0.1, 1);
  for (Reduction r : kReductions) {
    const std::string red = std::string(" reduction=") + name_of(r);
    check("kl_div" + red, [r](const variable_list& v) { return kl_div(v[0], v[1], r); }, {x, t});
    check("kl_div log_target" + red,
          [r](const variable_list& v) { return kl_div(v[0], v[1], r, true); },
          {x, leaf({3, 4}, 173)});
  }
}

// ---- padding ----

TEST_F(NnGradcheckTest, Padding) {
  const Tensor x1 = leaf({2, 3, 5}, 181), x2 = leaf({2, 2, 4, 5}, 182);
  const Tensor x3 = leaf({1, 2, 3, 4, 4}, 183);
  check("constant_pad_nd",
        [](const variable_list& v) {
          return constant_pad_nd(v[0], {1, 2, 0, 1}, 0.5);
        },
        {x2});
  check("constant_pad_nd negative",
        [](const variable_list& v) {
          return constant_pad_nd(v[0], {-1, 2, 1, -2});
        },
        {x2});
  check("reflection_pad1d",
        [](const variable_list& v) {
          return reflection_pad1d(v[0], {2, 3});
        },
        {x1});
  check("reflection_pad2d",
        [](const variable_list& v) {
          return reflection_pad2d(v[0], {2, 1, 3, 0});
        },
        {x2});
  check("reflection_pad3d",
        [](const variable_list& v) {
          return reflection_pad3d(v[0], {1, 2, 2, 1, 1, 1});
        },
        {x3});
  check("replication_pad1d",
        [](const variable_list& v) {
          return replication_pad1d(v[0], {3, 1});
        },
        {x1});
  check("replication_pad2d",
        [](const variable_list& v) {
          return replication_pad2d(v[0], {1, 3, 2, 2});
        },
        {x2});
  check("replication_pad3d",
        [](const variable_list& v) {
          return replication_pad3d(v[0], {2, 1, 0, 2, 1, 3});
        },
        {x3});
  check("_pad_circular",
        [](const variable_list& v) {
          return pad_circular(v[0], {2, 3, 1, 4});
        },
        {x2});
  check("_pad_circular negative",
        [](const variable_list& v) {
          return pad_circular(v[0], {-1, 2, 2, -1});
        },
        {x2});
  check("_pad_circular 3-d",
        [](const variable_list& v) {
          return pad_circular(v[0], {1, 4});
        },
        {x1});
  for (const char* mode : {"constant", "reflect", "replicate", "circular"}) {
    check(std::string("pad ") + mode,
          [mode](const variable_list& v) {
            return pad(v[0], {1, 2, 2, 1}, mode);
          },
          {x2});
    check(std::string("pad 1-d ") + mode,
          [mode](const variable_list& v) {
            return pad(v[0], {2, 1}, mode);
          },
          {x1});
  }
  check("pad 3-d reflect",
        [](const variable_list& v) {
          return pad(v[0], {1, 1, 2, 0, 1, 2}, "reflect");
        },
        {x3});
}

// ---- upsampling ----

TEST_F(NnGradcheckTest, Upsample) {
  const Tensor x1 = leaf({2, 2, 4}, 191), x2 = leaf({1, 2, 3, 4}, 192);
  const Tensor x3 = leaf({1, 2, 2, 3, 3}, 193);
  check("upsample_nearest1d", [](const variable_list& v) { return upsample_nearest1d(v[0], {7}); },
        {x1});
  check("upsample_nearest1d scales",
        [](const variable_list& v) { return upsample_nearest1d(v[0], {6}, 1.7); }, {x1});
  check("upsample_nearest2d",
        [](const variable_list& v) {
          return upsample_nearest2d(v[0], {5, 7});
        },
        {x2});
  check("upsample_nearest2d downsample",
        [](const variable_list& v) {
          return upsample_nearest2d(v[0], {2, 3});
        },
        {x2});
  check("upsample_nearest3d",
        [](const variable_list& v) {
          return upsample_nearest3d(v[0], {3, 5, 4});
        },
        {x3});
  check("_upsample_nearest_exact1d",
        [](const variable_list& v) { return upsample_nearest_exact1d(v[0], {7}); }, {x1});
  check("_upsample_nearest_exact2d",
        [](const variable_list& v) {
          return upsample_nearest_exact2d(v[0], {5, 6}, 1.8, 1.6);
        },
        {x2});
  check("_upsample_nearest_exact3d",
        [](const variable_list& v) {
          return upsample_nearest_exact3d(v[0], {4, 4, 5});
        },
        {x3});
  for (bool ac : {false, true}) {
    const std::string tag = ac ? " align_corners" : "";
    check("upsample_linear1d" + tag,
          [ac](const variable_list& v) { return upsample_linear1d(v[0], {7}, ac); }, {x1});
    check("upsample_bilinear2d" + tag,
          [ac](const variable_list& v) {
            return upsample_bilinear2d(v[0], {5, 7}, ac);
          },
          {x2});
    check("upsample_trilinear3d" + tag,
          [ac](const variable_list& v) {
            return upsample_trilinear3d(v[0], {3, 4, 5}, ac);
          },
          {x3});
  }
  check("upsample_bilinear2d scales",
        [](const variable_list& v) {
          return upsample_bilinear2d(v[0], {6, 6}, false, 2.0, 1.5);
        },
        {x2});
}

TEST_F(NnGradcheckTest, Interpolate) {
  const Tensor x2 = leaf({1, 2, 3, 4}, 201);
  for (const char* mode : {"nearest", "nearest-exact", "bilinear"}) {
    check(std::string("interpolate size ") + mode,
          [mode](const variable_list& v) {
            return interpolate(v[0], {5, 6}, mode);
          },
          {x2});
    check(std::string("interpolate scale_factor ") + mode,
          [mode](const variable_list& v) {
            return interpolate(v[0],
                               InterpolateOptions().with_scale_factor({1.5, 2.0}).with_mode(mode));
          },
          {x2});
  }
  check("interpolate linear align_corners",
        [](const variable_list& v) {
          return interpolate(
              v[0],
              InterpolateOptions().with_size({7}).with_mode("linear").with_align_corners(true));
        },
        {leaf({2, 2, 4}, 202)});
  check("interpolate trilinear",
        [](const variable_list& v) {
          return interpolate(v[0], {3, 4, 4}, "trilinear");
        },
        {leaf({1, 1, 2, 3, 3}, 203)});
}

// ---- double backward (formulas of the backward ops) ----

TEST_F(NnGradcheckTest, DoubleBackward) {
  check_gradgrad("conv2d stride/padding/dilation/groups/bias",
                 [](const variable_list& v) {
                   return conv2d(v[0], v[1], v[2], {2, 1}, {1, 0}, {1, 2}, 2);
                 },
                 {leaf({1, 4, 4, 5}, 211), leaf({2, 2, 2, 2}, 212), leaf({2}, 213)});
  check_gradgrad("conv2d padding=same unbatched",
                 [](const variable_list& v) { return conv2d(v[0], v[1], std::nullopt, 1, "same"); },
                 {leaf({1, 3, 4}, 214), leaf({2, 1, 2, 2}, 215)});
  check_gradgrad("conv_transpose2d",
                 [](const variable_list& v) { return conv_transpose2d(v[0], v[1], v[2], 2, 1, 1); },
                 {leaf({1, 2, 2, 3}, 216), leaf({2, 2, 2, 2}, 217), leaf({2}, 218)});
  check_gradgrad("conv1d", [](const variable_list& v) { return conv1d(v[0], v[1], v[2], 2); },
                 {leaf({2, 2, 5}, 219), leaf({3, 2, 2}, 220), leaf({3}, 221)});
  const Tensor x = leaf({1, 2, 4, 5}, 222);
  check_gradgrad("max_pool2d",
                 [](const variable_list& v) {
                   return max_pool2d(v[0], {2, 2}, {1, 2}, {1, 0});
                 },
                 {x});
  check_gradgrad("max_pool2d_with_indices",
                 [](const variable_list& v) {
                   return std::get<0>(max_pool2d_with_indices(v[0], {3, 2}, {}, 0, 1, true));
                 },
                 {x});
  check_gradgrad("max_pool1d", [](const variable_list& v) { return max_pool1d(v[0], {2}); },
                 {leaf({2, 2, 5}, 223)});
  check_gradgrad("adaptive_max_pool2d",
                 [](const variable_list& v) {
                   return std::get<0>(adaptive_max_pool2d(v[0], {3, 2}));
                 },
                 {x});
  check_gradgrad("avg_pool2d",
                 [](const variable_list& v) {
                   return avg_pool2d(v[0], {2, 3}, {1, 2}, {1, 1}, true, false);
                 },
                 {x});
  check_gradgrad("adaptive_avg_pool2d",
                 [](const variable_list& v) {
                   return adaptive_avg_pool2d(v[0], {3, 3});
                 },
                 {x});
  check_gradgrad("reflection_pad2d",
                 [](const variable_list& v) {
                   return reflection_pad2d(v[0], {1, 2, 2, 1});
                 },
                 {x});
  check_gradgrad("replication_pad1d",
                 [](const variable_list& v) {
                   return replication_pad1d(v[0], {2, 1});
                 },
                 {leaf({2, 4}, 224)});
  check_gradgrad("reflection_pad3d",
                 [](const variable_list& v) {
                   return reflection_pad3d(v[0], {1, 0, 0, 1, 1, 1});
                 },
                 {leaf({1, 2, 2, 2, 3}, 225)});
  check_gradgrad("replication_pad3d",
                 [](const variable_list& v) {
                   return replication_pad3d(v[0], {1, 0, 0, 1, 1, 1});
                 },
                 {leaf({1, 2, 2, 2, 3}, 226)});
  check_gradgrad("upsample_nearest2d",
                 [](const variable_list& v) {
                   return upsample_nearest2d(v[0], {5, 7});
                 },
                 {x});
  check_gradgrad("_upsample_nearest_exact1d",
                 [](const variable_list& v) { return upsample_nearest_exact1d(v[0], {7}, 1.6); },
                 {leaf({1, 2, 4}, 227)});
  check_gradgrad("upsample_bilinear2d align_corners",
                 [](const variable_list& v) {
                   return upsample_bilinear2d(v[0], {5, 6}, true);
                 },
                 {x});
  check_gradgrad("upsample_linear1d",
                 [](const variable_list& v) { return upsample_linear1d(v[0], {7}, false); },
                 {leaf({1, 2, 4}, 228)});
  check_gradgrad("upsample_trilinear3d",
                 [](const variable_list& v) {
                   return upsample_trilinear3d(v[0], {3, 3, 4}, false);
                 },
                 {leaf({1, 1, 2, 2, 3}, 229)});
  check_gradgrad("upsample_nearest3d",
                 [](const variable_list& v) {
                   return upsample_nearest3d(v[0], {3, 3, 4});
                 },
                 {leaf({1, 1, 2, 2, 3}, 230)});
  check_gradgrad("native_dropout",
                 [](const variable_list& v) {
                   manual_seed(3);
                   return std::get<0>(native_dropout(v[0], 0.5, true));
                 },
                 {leaf({3, 4}, 231)});
  const Tensor t = ints({0, 2, 1, 2}, {4});
  const Tensor wt = constant({3}, 232, 0.5, 2);
  const Tensor t4 = ints({0, 1, 2, 1, 2, 2, 0, 1}, {2, 2, 2});
  for (Reduction r : kReductions) {
    const std::string red = std::string(" reduction=") + name_of(r);
    check_gradgrad("nll_loss" + red,
                   [&](const variable_list& v) { return nll_loss(v[0], t, wt, r, 1); },
                   {leaf({4, 3}, 233)});
    check_gradgrad("nll_loss2d" + red,
                   [&](const variable_list& v) { return nll_loss2d(v[0], t4, wt, r); },
                   {leaf({2, 3, 2, 2}, 234)});
  }
}

// With create_graph the normalization formulas compute from differentiable ops: the values
// must be those of the backward ops, and their derivatives pass gradgradcheck.
TEST_F(NnGradcheckTest, NormalizationDoubleBackward) {
  const Tensor x = leaf({3, 4, 2}, 241), w = leaf({4}, 242, 0.5, 1.5), b = leaf({4}, 243);
  const Tensor lw = leaf({2}, 244, 0.5, 1.5), lb = leaf({2}, 245);
  const Tensor rv = full({4}, 0.7, DType::Float64);
  const std::vector<std::pair<std::string, Fn>> cases = {
      {"batch_norm training",
       [](const variable_list& v) {
         return batch_norm(v[0], v[1], v[2], std::nullopt, std::nullopt, true, 0.1, 1e-5);
       }},
      {"batch_norm eval",
       [&rv](const variable_list& v) {
         return batch_norm(v[0], v[1], v[2], full({4}, 0.2, DType::Float64), rv, false, 0.1, 1e-5);
       }},
      {"group_norm", [](const variable_list& v) { return group_norm(v[0], 2, v[1], v[2]); }},
      {"layer_norm", [](const variable_list& v) { return layer_norm(v[0], {2}, v[3], v[4]); }},
      {"layer_norm 2 dims",
       [](const variable_list& v) {
         return layer_norm(v[0], {4, 2});
       }},
  };
  const Tensor seed = constant({3, 4, 2}, 246);
  for (const auto& [name, f] : cases) {
    const variable_list in{x, w, b, lw, lb};
    const variable_list plain = autograd::grad({f(in)}, in, {seed}, std::nullopt, false, true);
    const variable_list graph = autograd::grad({f(in)}, in, {seed}, std::nullopt, true, true);
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(plain[i].defined(), graph[i].defined()) << name << " input " << i;
      if (!plain[i].defined()) continue;
      testing::expect_close(graph[i], plain[i].sizes(), testing::to_doubles(plain[i]), 1e-9, 1e-10);
    }
    check_gradgrad(name, f, in);
  }
}

// smooth_l1, huber, soft_margin and binary_cross_entropy compute self's gradient from
// differentiable ops under create_graph: the same values, and a double backward.
TEST_F(NnGradcheckTest, PointwiseLossDoubleBackward) {
  const Tensor x = leaf({3, 4}, 251), y = leaf({3, 4}, 252), row = leaf({4}, 253);
  const Tensor p = leaf({3, 4}, 254, 0.1, 0.9), t = leaf({3, 4}, 255, 0, 1);
  const Tensor w = leaf({4}, 256, 0.5, 2);
  for (Reduction r : kReductions) {
    const std::string red = std::string(" reduction=") + name_of(r);
    const std::vector<std::tuple<std::string, Fn, variable_list>> cases = {
        {"smooth_l1_loss",
         [r](const variable_list& v) { return smooth_l1_loss(v[0], v[1], r, 0.7); },
         {x, y}},
        {"smooth_l1_loss beta=0 broadcast",
         [r](const variable_list& v) { return smooth_l1_loss(v[0], v[1], r, 0.0); },
         {x, row}},
        {"huber_loss",
         [r](const variable_list& v) { return huber_loss(v[0], v[1], r, 0.6); },
         {x, row}},
        {"soft_margin_loss",
         [r](const variable_list& v) { return soft_margin_loss(v[0], v[1], r); },
         {x, y}},
        {"binary_cross_entropy weight",
         [r](const variable_list& v) { return binary_cross_entropy(v[0], v[1], v[2], r); },
         {p, t, w}},
    };
    for (const auto& [name, f, in] : cases) {
      const Tensor seed = r == Reduction::None ? constant({3, 4}, 257) : constant({}, 257);
      const variable_list plain = autograd::grad({f(in)}, in, {seed}, std::nullopt, false);
      const variable_list graph = autograd::grad({f(in)}, in, {seed}, std::nullopt, true);
      for (size_t i = 0; i < in.size(); ++i) {
        testing::expect_close(graph[i], plain[i].sizes(), testing::to_doubles(plain[i]), 1e-9,
                              1e-10);
      }
      check_gradgrad(name + red, f, in);
    }
  }
}

// PyTorch's output_differentiability: the saved statistics and nll's total_weight are
// outputs without a gradient (DerivativeOptions::non_differentiable_outputs).
TEST_F(NnGradcheckTest, StatisticsOutputsDoNotRequireGrad) {
  Tensor x = make_tensor(random_values(2 * 3 * 4, 91), {2, 3, 4}, DType::Float64);
  x.set_requires_grad(true);
  auto [y, mean, rstd] = native_layer_norm(x, {4}, std::nullopt, std::nullopt, 1e-5);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(mean.requires_grad());
  EXPECT_FALSE(rstd.requires_grad());
  Tensor logits = make_tensor(random_values(2 * 3, 92), {2, 3}, DType::Float64);
  logits.set_requires_grad(true);
  auto [loss, total_weight] = nll_loss_forward(
      logits, make_tensor({0, 2}, {2}, DType::Int64), std::nullopt, Reduction::Mean, -100);
  EXPECT_TRUE(loss.requires_grad());
  EXPECT_FALSE(total_weight.requires_grad());
}

}  // namespace
}  // namespace loom
