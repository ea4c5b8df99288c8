// Samplers (plugins/data/src/sampler.cpp): sizes, determinism per (seed, epoch), PyTorch's
// DistributedSampler splits and padding, weighted sampler statistics.

#include "loom/data/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "loom/core/error.h"

namespace loom::data {
namespace {

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(SamplerTest, Sequential) {
  SequentialSampler s(5);
  EXPECT_EQ(s.size(), 5);
  EXPECT_EQ(s.indices(3), iota(5));
  EXPECT_THROW(SequentialSampler(-1), ValueError);
}

TEST(SamplerTest, RandomIsAPermutationFixedBySeedAndEpoch) {
  RandomSampler s(100, 7);
  const auto e0 = s.indices(0), e1 = s.indices(1);
  EXPECT_EQ(sorted(e0), iota(100));
  EXPECT_EQ(sorted(e1), iota(100));
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, iota(100));
  EXPECT_EQ(e0, RandomSampler(100, 7).indices(0));
  EXPECT_NE(e0, RandomSampler(100, 8).indices(0));
}

TEST(SamplerTest, RandomNumSamplesAndReplacement) {
  RandomSampler more(10, 1, false, 25);
  const auto v = more.indices(0);
  ASSERT_EQ(v.size(), 25u);
  // Two whole permutations, then 5 distinct indices.
  EXPECT_EQ(sorted({v.begin(), v.begin() + 10}), iota(10));
  EXPECT_EQ(sorted({v.begin() + 10, v.begin() + 20}), iota(10));
  EXPECT_EQ(std::set<int64_t>(v.begin() + 20, v.end()).size(), 5u);
  RandomSampler with(3, 1, true, 3000);
  std::vector<int> counts(3);
  for (int64_t i : with.indices(0)) ++counts.at(i);
  for (int c : counts) EXPECT_NEAR(c, 1000, 100);
  EXPECT_THROW(RandomSampler(0, 0, true, 3), ValueError);
  EXPECT_THROW(RandomSampler(3, 0, false, -1), ValueError);
}

TEST(SamplerTest, WeightedWithReplacementFollowsWeights) {
  WeightedRandomSampler s({1, 0, 3, 6}, 100000, true, 5);
  std::vector<double> counts(4);
  for (int64_t i : s.indices(0)) counts.at(i) += 1;
  EXPECT_EQ(counts[1], 0);
  // Binomial standard deviation is at most ~160 here; 5 sigma.
  EXPECT_NEAR(counts[0], 10000, 800);
  EXPECT_NEAR(counts[2], 30000, 800);
  EXPECT_NEAR(counts[3], 60000, 800);
  EXPECT_EQ(s.indices(0), WeightedRandomSampler({1, 0, 3, 6}, 100000, true, 5).indices(0));
  EXPECT_NE(s.indices(0), s.indices(1));
}

TEST(SamplerTest, WeightedWithoutReplacement) {
  WeightedRandomSampler s({1, 0, 3, 6}, 3, false, 5);
  EXPECT_EQ(sorted(s.indices(0)), (std::vector<int64_t>{0, 2, 3}));
  // The heaviest index comes first most often: P = 0.6.
  int first = 0;
  for (int e = 0; e < 2000; ++e) first += s.indices(e)[0] == 3;
  EXPECT_NEAR(first / 2000.0, 0.6, 0.05);
  EXPECT_THROW(WeightedRandomSampler({1, 0}, 2, false), ValueError);
  EXPECT_THROW(WeightedRandomSampler({0, 0}, 1), ValueError);
  EXPECT_THROW(WeightedRandomSampler({1, -1}, 1), ValueError);
  EXPECT_THROW(WeightedRandomSampler({}, 1), ValueError);
}

TEST(SamplerTest, DistributedSplitsAndPadsAsPyTorch) {
  // 10 samples over 3 ranks, no shuffle: padded with the head to 12, strided by rank.
  EXPECT_EQ(DistributedSampler(10, 3, 0, false).indices(0), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(DistributedSampler(10, 3, 1, false).indices(0), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(DistributedSampler(10, 3, 2, false).indices(0), (std::vector<int64_t>{2, 5, 8, 1}));
  EXPECT_EQ(DistributedSampler(10, 3, 0, false).size(), 4);
  // drop_last: the tail is dropped instead (ceil((10 - 3) / 3) = 3 per rank).
  EXPECT_EQ(DistributedSampler(10, 3, 1, false, 0, true).indices(0),
            (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(DistributedSampler(10, 3, 1, false, 0, true).size(), 3);
  // More replicas than samples: the order repeats as often as needed.
  EXPECT_EQ(DistributedSampler(2, 5, 4, false).indices(0), (std::vector<int64_t>{0}));
  EXPECT_EQ(DistributedSampler(2, 5, 3, false).indices(0), (std::vector<int64_t>{1}));
  EXPECT_THROW(DistributedSampler(10, 3, 3), ValueError);
  EXPECT_THROW(DistributedSampler(10, 0, 0), ValueError);
}

TEST(SamplerTest, DistributedShuffledRanksPartitionTheEpoch) {
  for (int64_t n : {12, 13}) {
    std::vector<int64_t> all;
    for (int64_t r = 0; r < 4; ++r) {
      DistributedSampler s(n, 4, r, true, 9);
      const auto v = s.indices(2);
      EXPECT_EQ(static_cast<int64_t>(v.size()), s.size());
      EXPECT_EQ(v, DistributedSampler(n, 4, r, true, 9).indices(2));
      EXPECT_NE(v, s.indices(3));
      all.insert(all.end(), v.begin(), v.end());
    }
    std::set<int64_t> distinct(all.begin(), all.end());
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), n);  // every sample is someone's
    EXPECT_EQ(static_cast<int64_t>(all.size()), (n + 3) / 4 * 4);
  }
}

TEST(SamplerTest, BatchSampler) {
  auto seq = std::make_shared<SequentialSampler>(7);
  BatchSampler keep(seq, 3, false), drop(seq, 3, true);
  EXPECT_EQ(keep.size(), 3);
  EXPECT_EQ(drop.size(), 2);
  EXPECT_EQ(keep.batches(0), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(drop.batches(0), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_THROW(BatchSampler(seq, 0, false), ValueError);
  EXPECT_THROW(BatchSampler(nullptr, 1, false), ValueError);
}

}  // namespace
}  // namespace loom::data
