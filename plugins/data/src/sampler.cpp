// Samplers (loom/data/sampler.h): each epoch's order is a pure function of (seed, epoch).

#include "loom/data/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "loom/core/error.h"
#include "loom/data/dataset.h"
#include "loom/data/transforms.h"

namespace loom::data {
namespace {

// Distinct streams for distinct samplers given the same (seed, epoch).
constexpr uint64_t kRandomTag = 0x52414e44, kWeightedTag = 0x57454947, kDistTag = 0x44495354;

std::vector<int64_t> permutation(int64_t n, SampleRng& rng) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[uniform_int(rng, i + 1)]);
  return p;
}

SampleRng epoch_rng(uint64_t seed, int64_t epoch, uint64_t tag) {
  return SampleRng(mix_seed(seed, static_cast<uint64_t>(epoch), tag));
}

}  // namespace

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  LOOM_CHECK(n >= 0, "SequentialSampler: n must be >= 0, got ", n);
}

std::vector<int64_t> SequentialSampler::indices(int64_t) const {
  std::vector<int64_t> v(n_);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed, bool replacement,
                             std::optional<int64_t> num_samples)
    : n_(n), num_samples_(num_samples.value_or(n)), seed_(seed), replacement_(replacement) {
  LOOM_CHECK(n >= 0, "RandomSampler: n must be >= 0, got ", n);
  LOOM_CHECK(num_samples_ >= 0,
             "RandomSampler: num_samples should be a non-negative integer value, but got "
             "num_samples=",
             num_samples_);
  LOOM_CHECK(n > 0 || num_samples_ == 0, "RandomSampler: cannot draw ", num_samples_,
             " samples from an empty dataset");
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  SampleRng rng = epoch_rng(seed_, epoch, kRandomTag);
  std::vector<int64_t> out;
  out.reserve(num_samples_);
  if (replacement_) {
    for (int64_t i = 0; i < num_samples_; ++i) out.push_back(uniform_int(rng, n_));
    return out;
  }
  // As PyTorch: whole permutations while they fit, then the head of one more.
  while (static_cast<int64_t>(out.size()) < num_samples_) {
    std::vector<int64_t> p = permutation(n_, rng);
    const int64_t take = std::min<int64_t>(n_, num_samples_ - static_cast<int64_t>(out.size()));
    out.insert(out.end(), p.begin(), p.begin() + take);
  }
  return out;
}

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples,
                                             bool replacement, uint64_t seed)
    : weights_(std::move(weights)),
      num_samples_(num_samples),
      replacement_(replacement),
      seed_(seed) {
  LOOM_CHECK(!weights_.empty(), "WeightedRandomSampler: weights must not be empty");
  LOOM_CHECK(num_samples >= 0,
             "WeightedRandomSampler: num_samples should be a non-negative integer value, but "
             "got num_samples=",
             num_samples);
  int64_t positive = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    LOOM_CHECK(std::isfinite(weights_[i]) && weights_[i] >= 0, "WeightedRandomSampler: weight ", i,
               " is ", weights_[i], "; weights must be finite and non-negative");
    positive += weights_[i] > 0;
  }
  LOOM_CHECK(positive > 0,
             "WeightedRandomSampler: invalid multinomial distribution (sum of "
             "probabilities <= 0)");
  LOOM_CHECK(replacement || num_samples <= positive, "WeightedRandomSampler: cannot sample ",
             num_samples, " indices without replacement from ", positive,
             " indices of non-zero weight");
}

std::vector<int64_t> WeightedRandomSampler::indices(int64_t epoch) const {
  SampleRng rng = epoch_rng(seed_, epoch, kWeightedTag);
  std::vector<int64_t> out;
  out.reserve(num_samples_);
  const int64_t n = static_cast<int64_t>(weights_.size());
  if (replacement_) {
    std::vector<double> cdf(n);
    std::partial_sum(weights_.begin(), weights_.end(), cdf.begin());
    const double total = cdf.back();
    for (int64_t i = 0; i < num_samples_; ++i) {
      const double u = uniform_real(rng) * total;
      int64_t k = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
      k = std::min(k, n - 1);
      while (weights_[k] == 0) --k;  // u landed on a boundary after rounding
      out.push_back(k);
    }
    return out;
  }
  // Without replacement: each draw is proportional to the weights not yet drawn.
  std::vector<double> w = weights_;
  for (int64_t i = 0; i < num_samples_; ++i) {
    double total = 0;
    for (double x : w) total += x;
    double u = uniform_real(rng) * total;
    int64_t k = 0, last_positive = 0;
    for (; k < n; ++k) {
      if (w[k] <= 0) continue;
      last_positive = k;
      if (u < w[k]) break;
      u -= w[k];
    }
    if (k == n) k = last_positive;
    out.push_back(k);
    w[k] = 0;
  }
  return out;
}

DistributedSampler::DistributedSampler(int64_t n, int64_t num_replicas, int64_t rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : n_(n), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed) {
  LOOM_CHECK(n >= 0, "DistributedSampler: n must be >= 0, got ", n);
  LOOM_CHECK(num_replicas >= 1, "DistributedSampler: num_replicas must be >= 1, got ",
             num_replicas);
  LOOM_CHECK(rank >= 0 && rank < num_replicas, "DistributedSampler: Invalid rank ", rank,
             ", rank should be in the interval [0, ", num_replicas - 1, "]");
  if (drop_last && n % num_replicas != 0) {
    num_samples_ = (n - num_replicas + num_replicas - 1) / num_replicas;
    if (num_samples_ < 0) num_samples_ = 0;
  } else {
    num_samples_ = (n + num_replicas - 1) / num_replicas;
  }
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order;
  if (shuffle_) {
    SampleRng rng = epoch_rng(seed_, epoch, kDistTag);
    order = permutation(n_, rng);
  } else {
    order.resize(n_);
    std::iota(order.begin(), order.end(), 0);
  }
  const int64_t total = num_samples_ * num_replicas_;
  if (static_cast<int64_t>(order.size()) < total) {
    // Pad by repeating the order from its head (as often as needed).
    const int64_t n = static_cast<int64_t>(order.size());
    for (int64_t i = 0; static_cast<int64_t>(order.size()) < total; ++i)
      order.push_back(order[i % n]);
  } else {
    order.resize(total);
  }
  std::vector<int64_t> out;
  out.reserve(num_samples_);
  for (int64_t i = rank_; i < total; i += num_replicas_) out.push_back(order[i]);
  return out;
}

BatchSampler::BatchSampler(std::shared_ptr<const Sampler> sampler, int64_t batch_size,
                           bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  LOOM_CHECK(sampler_ != nullptr, "BatchSampler: sampler must not be null");
  LOOM_CHECK(batch_size >= 1,
             "BatchSampler: batch_size should be a positive integer value, but got batch_size=",
             batch_size);
}

int64_t BatchSampler::size() const {
  const int64_t n = sampler_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::vector<std::vector<int64_t>> BatchSampler::batches(int64_t epoch) const {
  const std::vector<int64_t> idx = sampler_->indices(epoch);
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < idx.size(); i += batch_size_) {
    const size_t end = std::min(idx.size(), i + static_cast<size_t>(batch_size_));
    if (drop_last_ && end - i < static_cast<size_t>(batch_size_)) break;
    out.emplace_back(idx.begin() + i, idx.begin() + end);
  }
  return out;
}

}  // namespace loom::data
