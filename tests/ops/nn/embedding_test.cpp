// Embedding of ops_nn against a float64 oracle written here: int32 and int64 indices of
// any shape (0-dim too), strided and transposed weights and indices, 16-bit and integer
// weights, the backward op against finite differences of the oracle and closed forms
// (padding_idx, scale_grad_by_freq), and PyTorch's error messages.
#include "loom/ops/nn/embedding.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <vector>

#include "loom/ops/shape.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::expect_close;
using testing::make_tensor;
using testing::message_of;
using testing::random_values;
using testing::to_doubles;
using Vec = std::vector<double>;

class EmbeddingTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_nn(); }
};

/// The rows of weight [V, D] picked by idx, concatenated.
Vec embedding_ref(const Vec& weight, int64_t D, const std::vector<int64_t>& idx) {
  Vec out;
  for (int64_t i : idx) {
    for (int64_t j = 0; j < D; ++j) out.push_back(weight[i * D + j]);
  }
  return out;
}

Vec as_doubles(const std::vector<int64_t>& v) { return Vec(v.begin(), v.end()); }

TEST_F(EmbeddingTest, ForwardMatchesOracle) {
  const int64_t V = 7, D = 3;
  const Vec w = random_values(V * D, 1);
  const std::vector<int64_t> idx{3, 0, 6, 3, 1, 2};
  for (DType index_dtype : {DType::Int64, DType::Int32}) {
    for (DType wt : {DType::Float32, DType::Float64}) {
      for (bool strided : {false, true}) {
        const Tensor weight = make_tensor(w, {V, D}, wt, strided);
        const Tensor ind = make_tensor(as_doubles(idx), {2, 3}, index_dtype, strided);
        const Tensor out = embedding(weight, ind);
        EXPECT_EQ(out.dtype(), wt);
        expect_close(out, {2, 3, D}, embedding_ref(to_doubles(weight), D, idx), 0, 0);
      }
    }
  }
  // A 0-dim index gives one row; a transposed weight (row stride 1) works too.
  const Tensor weight = make_tensor(w, {V, D}, DType::Float64);
  expect_close(embedding(weight, make_tensor({4}, {}, DType::Int64)), {D}, embedding_ref(w, D, {4}),
               0, 0);
  const Tensor wT = transpose(make_tensor(w, {D, V}, DType::Float64), 0, 1);
  expect_close(embedding(wT, make_tensor({5, 1}, {2}, DType::Int64)), {2, D},
               embedding_ref(to_doubles(wT), D, {5, 1}), 0, 0);
  expect_close(embedding(weight, make_tensor({}, {0}, DType::Int64)), {0, D}, {}, 0, 0);
  // padding_idx does not change the forward.
  expect_close(embedding(weight, make_tensor({2, 2}, {2}, DType::Int64), 2), {2, D},
               embedding_ref(w, D, {2, 2}), 0, 0);
}

TEST_F(EmbeddingTest, OtherWeightDtypes) {
  const Vec w{1, 2, 3, 4, 5, 6};
  for (DType t : {DType::Float16, DType::BFloat16, DType::Int64, DType::UInt8, DType::Bool}) {
    const Tensor weight = make_tensor(w, {3, 2}, t);
    const Tensor out = embedding(weight, make_tensor({2, 0}, {2}, DType::Int32));
    EXPECT_EQ(out.dtype(), t);
    expect_close(out, {2, 2}, embedding_ref(to_doubles(weight), 2, {2, 0}), 0, 0);
  }
}

TEST_F(EmbeddingTest, Errors) {
  const Tensor weight = make_tensor(random_values(15, 2), {5, 3});
  for (double bad : {5.0, -1.0}) {
    EXPECT_EQ(message_of<IndexError>([&] {
                embedding(weight, make_tensor({1, bad}, {2}, DType::Int64));
              }),
              "embedding: index out of range in self");
  }
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         embedding(weight, make_tensor({1, 2}, {2}, DType::Float32));
                       }),
                       "Expected tensor for argument #1 'indices' to have one of the following "
                       "scalar types: Long, Int; but got CPUFloatType instead (while checking "
                       "arguments for embedding)"));
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         embedding(weight, make_tensor({1, 2}, {2}, DType::Int16));
                       }),
                       "but got CPUShortType instead"));
  EXPECT_TRUE(
      contains(message_of([&] {
                 embedding(make_tensor({1, 2, 3}, {3}), make_tensor({1}, {1}, DType::Int64));
               }),
               "'weight' must be 2-D"));
}

/// The dense gradient by its definition: grad rows summed per index, none for padding_idx,
/// divided by the index's count with scale_grad_by_freq.
Vec embedding_backward_ref(const Vec& g, int64_t D, const std::vector<int64_t>& idx, int64_t V,
                           int64_t padding_idx, bool scale) {
  std::map<int64_t, int> count;
  for (int64_t i : idx) ++count[i];
  Vec out(V * D, 0.0);
  for (size_t k = 0; k < idx.size(); ++k) {
    if (idx[k] == padding_idx) continue;
    for (int64_t j = 0; j < D; ++j) {
      out[idx[k] * D + j] += g[k * D + j] / (scale ? count[idx[k]] : 1);
    }
  }
  return out;
}

TEST_F(EmbeddingTest, DenseBackwardMatchesFiniteDifferencesAndClosedForm) {
  const int64_t V = 6, D = 4;
  const std::vector<int64_t> idx{1, 4, 1, 5, 0, 4, 1, 2};
  const Vec w = random_values(V * D, 3), g = random_values(idx.size() * D, 4);
  // Finite differences of the oracle (the lookup is linear in weight).
  Vec fd(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    auto loss = [&](double delta) {
      Vec wv = w;
      wv[i] += delta;
      const Vec y = embedding_ref(wv, D, idx);
      double s = 0;
      for (size_t k = 0; k < y.size(); ++k) s += y[k] * g[k];
      return s;
    };
    fd[i] = (loss(1e-6) - loss(-1e-6)) / 2e-6;
  }
  const Tensor ind = make_tensor(as_doubles(idx), {2, 4}, DType::Int64);
  const Tensor gt = make_tensor(g, {2, 4, D}, DType::Float64, /*strided=*/true);
  expect_close(embedding_dense_backward(gt, ind, V, -1, false), {V, D}, fd, 1e-8, 1e-8);
  expect_close(embedding_backward(gt, ind, V, -1, false, false), {V, D}, fd, 1e-8, 1e-8);
  for (int64_t padding_idx : {-1, 1, 3}) {
    for (bool scale : {false, true}) {
      for (DType t : {DType::Float32, DType::Float64}) {
        SCOPED_TRACE(padding_idx);
        const Tensor out = embedding_dense_backward(make_tensor(g, {8, D}, t),
                                                    make_tensor(as_doubles(idx), {8}, DType::Int32),
                                                    V, padding_idx, scale);
        EXPECT_EQ(out.dtype(), t);
        expect_close(out, {V, D}, embedding_backward_ref(g, D, idx, V, padding_idx, scale), 1e-6,
                     1e-6);
      }
    }
  }
  // PyTorch's own numbers: rows 1 and 2 once each after scaling, row 3 is padding.
  expect_close(embedding_dense_backward(make_tensor(Vec(8, 1.0), {4, 2}),
                                        make_tensor({1, 1, 2, 3}, {4}, DType::Int64), 5, 3, true),
               {5, 2}, {0, 0, 1, 1, 1, 1, 0, 0, 0, 0}, 0, 0);
}

TEST_F(EmbeddingTest, BackwardErrors) {
  const Tensor g = make_tensor(random_values(6, 5), {2, 3});
  EXPECT_TRUE(contains(message_of<TypeError>([&] {
                         embedding_dense_backward(g, make_tensor({1, 2}, {2}), 5, -1, false);
                       }),
                       "Expected tensor for argument #2 'indices' to have one of the following "
                       "scalar types: Long, Int; but got CPUFloatType instead (while checking "
                       "arguments for embedding_backward)"));
  EXPECT_TRUE(
      contains(message_of<IndexError>([&] {
                 embedding_dense_backward(g, make_tensor({1, 7}, {2}, DType::Int64), 5, -1, false);
               }),
               "embedding_dense_backward: index 7 is out of range for num_weights 5"));
  EXPECT_TRUE(contains(
      message_of([&] {
        embedding_dense_backward(g, make_tensor({1, 2, 3}, {3}, DType::Int64), 5, -1, false);
      }),
      "grad_output of shape [2, 3] does not fit indices of shape [3]"));
  EXPECT_TRUE(
      contains(message_of<NotImplementedError>([&] {
                 embedding_backward(g, make_tensor({1, 2}, {2}, DType::Int64), 5, -1, false, true);
               }),
               "sparse gradients are not supported"));
}

}  // namespace
}  // namespace loom
