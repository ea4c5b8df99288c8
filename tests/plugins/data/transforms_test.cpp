// Datasets and transforms (plugins/data/src/dataset.cpp, transforms.cpp): values against
// hand-computed expectations, and the per-sample generator's independence from threads.

#include "loom/data/transforms.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "data_test_util.h"
#include "loom/data/dataset.h"

namespace loom::data {
namespace {

using testing::values;

class TransformsTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
};

Tensor u8(const std::vector<uint8_t>& v, IntArrayRef sizes) {
  return Tensor::from_vector<uint8_t>(v, sizes);
}

TEST_F(TransformsTest, TensorDatasetRowsAreViews) {
  Tensor x = loom::arange(12, DType::Float32).reshape({4, 3});
  Tensor y = loom::arange(4, DType::Int64);
  TensorDataset ds({x, y});
  EXPECT_EQ(ds.size(), 4);
  Sample s = ds.get(2);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(values(s[0]), (std::vector<double>{6, 7, 8}));
  EXPECT_EQ(s[1].dim(), 0);
  EXPECT_EQ(s[1].item<int64_t>(), 2);
  EXPECT_THROW(ds.get(4), IndexError);
  EXPECT_THROW(ds.get(-1), IndexError);
  EXPECT_THROW(TensorDataset({x, loom::arange(5)}), ValueError);
  EXPECT_THROW(TensorDataset({}), ValueError);
}

TEST_F(TransformsTest, ToTensorHwcToChwInUnitRange) {
  // 2x2 RGB: pixel (y, x) has channels {10y+x, 100, 255}.
  Tensor img = u8({0, 100, 255, 1, 100, 255, 10, 100, 255, 11, 100, 255}, {2, 2, 3});
  Tensor t = ToTensor()(img);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(t.dtype(), DType::Float32);
  std::vector<double> v = values(t);
  const std::vector<double> expect = {0, 1, 10, 11, 100, 100, 100, 100, 255, 255, 255, 255};
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expect[i] / 255.0, 1e-7) << i;
  Tensor gray = ToTensor()(u8({0, 51, 102, 255}, {2, 2}));
  EXPECT_EQ(gray.sizes().vec(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_NEAR(values(gray)[1], 0.2, 1e-7);
  EXPECT_THROW(ToTensor()(loom::zeros({2, 2})), TypeError);
  EXPECT_THROW(ToTensor()(u8({1, 2}, {2})), ValueError);
}

TEST_F(TransformsTest, NormalizePerChannel) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  Tensor y = Normalize({1.0, 5.0}, {2.0, 0.5})(x);
  std::vector<double> v = values(y);
  const std::vector<double> expect = {0, 0.5, 1, 1.5, 0, 2, 4, 6};
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expect[i], 1e-6) << i;
  EXPECT_THROW(Normalize({0, 0, 0}, {1, 1, 1})(x), ValueError);
  EXPECT_THROW(Normalize({0}, {0}), ValueError);
  EXPECT_THROW(Normalize({0, 1}, {1}), ValueError);
  // float64 input is computed in float32 like torchvision's output dtype for float32 input.
  EXPECT_EQ(Normalize({0.5}, {0.5})(x.to(DType::Float64)).dtype(), DType::Float32);
}

TEST_F(TransformsTest, RandomCropWithPaddingMatchesManualWindow) {
  // 1x3x3 image 1..9, padding 1 -> 5x5 padded; crop 3x3.
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3});
  std::set<std::pair<int64_t, int64_t>> windows;
  for (int s = 0; s < 200; ++s) {
    SampleRng rng(s), replay(s);
    Tensor y = RandomCrop(3, 1).apply(x, rng);
    const int64_t top = uniform_int(replay, 3), left = uniform_int(replay, 3);
    windows.insert({top, left});
    std::vector<double> v = values(y);
    ASSERT_EQ(v.size(), 9u);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 3; ++c) {
        const int64_t sy = top + r - 1, sx = left + c - 1;
        const double want = (sy < 0 || sy > 2 || sx < 0 || sx > 2) ? 0 : 1 + sy * 3 + sx;
        ASSERT_EQ(v[r * 3 + c], want) << "seed " << s << " at " << r << "," << c;
      }
  }
  EXPECT_EQ(windows.size(), 9u);  // every window position occurs
  SampleRng rng(0);
  EXPECT_THROW(RandomCrop(4).apply(x, rng), ValueError);
  EXPECT_EQ(values(RandomCrop(3).apply(x, rng)), values(x));  // the whole image: no draw
  EXPECT_THROW(RandomCrop(0), ValueError);
}

TEST_F(TransformsTest, RandomHorizontalFlip) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  SampleRng rng(1);
  EXPECT_EQ(values(RandomHorizontalFlip(1.0).apply(x, rng)),
            (std::vector<double>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(values(RandomHorizontalFlip(0.0).apply(x, rng)), values(x));
  int flipped = 0;
  for (int s = 0; s < 2000; ++s) {
    SampleRng r(s);
    flipped += values(RandomHorizontalFlip(0.3).apply(x, r))[0] == 3;
  }
  EXPECT_NEAR(flipped / 2000.0, 0.3, 0.04);
  EXPECT_THROW(RandomHorizontalFlip(1.5), ValueError);
}

TEST_F(TransformsTest, ComposeRunsInOrder) {
  Tensor img = u8({0, 255, 51, 102}, {2, 2});
  Compose c({std::make_shared<ToTensor>(), std::make_shared<RandomHorizontalFlip>(1.0),
             std::make_shared<Normalize>(std::vector<double>{0.5}, std::vector<double>{0.5})});
  std::vector<double> v = values(c(img));
  const std::vector<double> expect = {1, -1, -0.2, -0.6};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(v[i], expect[i], 1e-6);
}

TEST_F(TransformsTest, SampleGeneratorDependsOnSeedEpochIndexOnly) {
  auto draw = [](uint64_t seed, int64_t epoch, int64_t index) {
    SampleContextGuard g({seed, epoch});
    return sample_generator(index)();
  };
  EXPECT_EQ(draw(1, 2, 3), draw(1, 2, 3));
  EXPECT_NE(draw(1, 2, 3), draw(1, 2, 4));
  EXPECT_NE(draw(1, 2, 3), draw(1, 3, 3));
  EXPECT_NE(draw(1, 2, 3), draw(2, 2, 3));
  uint64_t in_thread = 0;
  std::thread([&] { in_thread = draw(1, 2, 3); }).join();
  EXPECT_EQ(in_thread, draw(1, 2, 3));
  {
    SampleContextGuard outer({7, 1});
    { SampleContextGuard inner({8, 2}); }
    EXPECT_EQ(current_sample_context().seed, 7u);
  }
  EXPECT_EQ(current_sample_context().seed, 0u);
}

TEST_F(TransformsTest, TransformDatasetDrawsPerSample) {
  Tensor x = loom::arange(2 * 4 * 4, DType::Float32).reshape({2, 1, 4, 4});
  auto base = std::make_shared<TensorDataset>(std::vector<Tensor>{x});
  TransformDataset ds(base, std::make_shared<RandomCrop>(2, 0));
  SampleContextGuard g({42, 0});
  EXPECT_EQ(values(ds.get(1)[0]), values(ds.get(1)[0]));
  EXPECT_EQ(ds.get(1)[0].sizes().vec(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_THROW(TransformDataset(base, nullptr), ValueError);
}

TEST_F(TransformsTest, UniformIntIsUniform) {
  SampleRng rng(3);
  std::vector<int> counts(5);
  for (int i = 0; i < 50000; ++i) ++counts[uniform_int(rng, 5)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
  for (int i = 0; i < 1000; ++i) {
    const double u = uniform_real(rng);
    ASSERT_TRUE(u >= 0 && u < 1);
  }
}

}  // namespace
}  // namespace loom::data
