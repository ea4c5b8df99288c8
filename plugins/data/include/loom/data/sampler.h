#pragma once
/// @file
/// Samplers (torch.utils.data.Sampler and friends): the order in which a DataLoader visits
/// a map-style dataset. A sampler is a pure function of its options and the epoch —
/// indices(epoch) — so a seed fixes every epoch's order and set_epoch(e) reproduces it.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace loom::data {

/// Produces the dataset indices of one epoch.
class Sampler {
 public:
  /// Destroys the sampler.
  virtual ~Sampler() = default;
  /// Number of indices per epoch (PyTorch's len(sampler)).
  virtual int64_t size() const = 0;
  /// The indices of epoch `epoch`, size() of them.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
};

/// 0, 1, ..., n-1 every epoch.
class SequentialSampler final : public Sampler {
 public:
  /// Throws ValueError for n < 0.
  explicit SequentialSampler(int64_t n);
  /// n.
  int64_t size() const override { return n_; }
  /// 0 .. n-1.
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

/// Random indices of a dataset of n samples, from a generator seeded with (seed, epoch).
/// Without replacement: a permutation (num_samples > n takes further permutations, as
/// PyTorch does); with replacement: num_samples independent uniform draws.
class RandomSampler final : public Sampler {
 public:
  /// num_samples defaults to n. Throws ValueError for n < 0 or num_samples < 0, or
  /// num_samples > 0 with n = 0.
  explicit RandomSampler(int64_t n, uint64_t seed = 0, bool replacement = false,
                         std::optional<int64_t> num_samples = std::nullopt);
  /// num_samples.
  int64_t size() const override { return num_samples_; }
  /// The epoch's draw.
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_, num_samples_;
  uint64_t seed_;
  bool replacement_;
};

/// num_samples indices drawn with probability proportional to weights (PyTorch's
/// WeightedRandomSampler; without replacement every index appears at most once).
class WeightedRandomSampler final : public Sampler {
 public:
  /// Throws ValueError for an empty list, a negative or non-finite weight, all weights
  /// zero, num_samples < 0, or num_samples above the positive weights without replacement.
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true,
                        uint64_t seed = 0);
  /// num_samples.
  int64_t size() const override { return num_samples_; }
  /// The epoch's draw.
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  std::vector<double> weights_;
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

/// The share of rank `rank` among num_replicas processes (PyTorch's DistributedSampler):
/// the epoch's order (shuffled with (seed, epoch) or sequential) is padded by repeating
/// its head until it divides evenly (or, with drop_last, cut to a multiple of
/// num_replicas), then rank takes every num_replicas-th index starting at rank.
class DistributedSampler final : public Sampler {
 public:
  /// Throws ValueError for n < 0, num_replicas < 1, rank outside [0, num_replicas).
  DistributedSampler(int64_t n, int64_t num_replicas, int64_t rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  /// Indices per rank: ceil(n / num_replicas), or with drop_last and an uneven split
  /// ceil((n - num_replicas) / num_replicas).
  int64_t size() const override { return num_samples_; }
  /// This rank's indices of the epoch.
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_, num_replicas_, rank_, num_samples_;
  bool shuffle_;
  uint64_t seed_;
};

/// Groups a sampler's indices into batches of batch_size (the last one shorter unless
/// drop_last), PyTorch's BatchSampler.
class BatchSampler {
 public:
  /// Throws ValueError for a null sampler or batch_size < 1.
  BatchSampler(std::shared_ptr<const Sampler> sampler, int64_t batch_size, bool drop_last);
  /// Destroys the batch sampler.
  virtual ~BatchSampler() = default;
  /// Number of batches per epoch.
  virtual int64_t size() const;
  /// The batches of epoch `epoch`.
  virtual std::vector<std::vector<int64_t>> batches(int64_t epoch) const;
  /// The sampler.
  const std::shared_ptr<const Sampler>& sampler() const { return sampler_; }

 private:
  std::shared_ptr<const Sampler> sampler_;
  int64_t batch_size_;
  bool drop_last_;
};

}  // namespace loom::data
