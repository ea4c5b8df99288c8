#pragma once
/// @file
/// Datasets: map-style (Dataset: size() and get(i)) and iterable (IterableDataset: next()),
/// TensorDataset, TransformDataset, and what a sample's code may ask about the thread it
/// runs in (worker info, the per-sample random generator of Note [Sample randomness]).

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "loom/core/tensor.h"

namespace loom::data {

/// One sample: its fields in order (image, label, ...), as a tuple of tensors in PyTorch.
using Sample = std::vector<Tensor>;

/// A map-style dataset (PyTorch's torch.utils.data.Dataset): size() samples, get(i) for
/// i in [0, size()). get must be safe to call from several threads at once (DataLoader
/// workers share one dataset object).
class Dataset {
 public:
  /// Destroys the dataset.
  virtual ~Dataset() = default;
  /// Number of samples.
  virtual int64_t size() const = 0;
  /// Sample index (0 <= index < size()); throws IndexError out of range.
  virtual Sample get(int64_t index) const = 0;
  /// The samples at indices already collated as default_collate would stack them, when the
  /// dataset has a faster way than one get() per sample (PyTorch's __getitems__: a tensor
  /// dataset gathers each field with one index_select); nullopt (the default) otherwise.
  /// The DataLoader uses it when its collate function is default_collate.
  virtual std::optional<std::vector<Tensor>> get_many(const std::vector<int64_t>& indices) const {
    return std::nullopt;
  }
};

/// An iterable dataset (PyTorch's IterableDataset): a stream of samples.
///
/// With workers (DataLoaderOptions::num_workers > 0) each worker thread iterates its own
/// copy, made by clone(), exactly as each PyTorch worker process holds its own copy of the
/// dataset: without sharding every worker yields the whole stream (so each sample arrives
/// num_workers times). A dataset shards itself in reset(), which runs in the worker's
/// thread, by reading get_worker_info() (id, num_workers) — PyTorch's recipe.
class IterableDataset {
 public:
  /// Destroys the dataset.
  virtual ~IterableDataset() = default;
  /// Starts (or restarts) the stream; called by the DataLoader at the start of every
  /// epoch in the thread that will call next(). The default does nothing.
  virtual void reset() {}
  /// The next sample, or nullopt at the end of the stream.
  virtual std::optional<Sample> next() = 0;
  /// An independent copy for one worker thread. The default throws ValueError: a dataset
  /// that does not override it can be used only with num_workers = 0.
  virtual std::shared_ptr<IterableDataset> clone() const;
};

/// Samples of several tensors that share their first dimension: sample i is
/// {t[i] for t in tensors} (views, PyTorch's TensorDataset). Needs no op pack.
class TensorDataset : public Dataset {
 public:
  /// Throws ValueError if tensors is empty, one is 0-dim, or their first sizes differ.
  explicit TensorDataset(std::vector<Tensor> tensors);
  /// The common first size.
  int64_t size() const override;
  /// {t[index] for t in tensors()}.
  Sample get(int64_t index) const override;
  /// {t.index_select(0, indices) for t in tensors()}: one gather per field.
  std::optional<std::vector<Tensor>> get_many(const std::vector<int64_t>& indices) const override;
  /// The tensors.
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
};

/// Row index of tensor t (a view of t[index]: its sizes and strides without the first);
/// throws IndexError out of range. Core-only, like TensorDataset.
Tensor select_row(const Tensor& t, int64_t index);

class Transform;

/// A dataset whose field `field` of every sample goes through a transform
/// (torchvision's `transform=` argument, for datasets that do not take one themselves).
class TransformDataset : public Dataset {
 public:
  /// Applies transform to field `field` of every sample of base. Throws ValueError for a
  /// null base or transform.
  TransformDataset(std::shared_ptr<const Dataset> base, std::shared_ptr<const Transform> transform,
                   int field = 0);
  /// base's size.
  int64_t size() const override;
  /// base's sample index with the field transformed (random transforms draw from
  /// sample_generator(index)).
  Sample get(int64_t index) const override;

 private:
  std::shared_ptr<const Dataset> base_;
  std::shared_ptr<const Transform> transform_;
  int field_;
};

/// What a worker thread knows about itself (PyTorch's torch.utils.data.get_worker_info()).
struct WorkerInfo {
  int id = 0;           ///< this worker, in [0, num_workers)
  int num_workers = 1;  ///< how many workers the loader runs
  uint64_t seed = 0;    ///< the loader's seed mixed with id (per-worker seed)
};

/// The WorkerInfo of the calling DataLoader worker thread; nullopt in any other thread
/// (including the caller's thread when num_workers = 0), as in PyTorch.
std::optional<WorkerInfo> get_worker_info();

// Note [Sample randomness]
// Random transforms draw from a generator made for each sample from (loader seed, epoch,
// sample index), never from a shared stream: which thread fetches a sample, and when,
// cannot change what it draws, so a seed gives the same batches for any num_workers. The
// loader sets seed and epoch for the thread (SampleContextGuard) around every fetch;
// outside a loader they are (0, 0).

/// The random engine a transform draws from: xoshiro256** (Blackman and Vigna), seeded
/// through splitmix64. A UniformRandomBitGenerator, so the standard distributions take it.
/// One is made per sample (Note [Sample randomness]): seeding costs four splitmix64 steps,
/// where a Mersenne Twister fills 312 words — a measurable part of an epoch of small images.
class SampleRng {
 public:
  /// The type of a draw.
  using result_type = uint64_t;
  /// The stream of seed.
  explicit SampleRng(uint64_t seed = 0) {
    for (uint64_t& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }
  /// The smallest draw.
  static constexpr result_type min() { return 0; }
  /// The largest draw.
  static constexpr result_type max() { return ~result_type{0}; }
  /// The next draw.
  result_type operator()() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

/// The (seed, epoch) that sample generators of this thread derive from.
struct SampleContext {
  uint64_t seed = 0;  ///< the loader's seed
  int64_t epoch = 0;  ///< the loader's epoch
};

/// Sets the calling thread's SampleContext for its lifetime, restoring the previous one.
class SampleContextGuard {
 public:
  /// Makes context this thread's context.
  explicit SampleContextGuard(SampleContext context);
  /// Restores the previous context.
  ~SampleContextGuard();
  /// Not copyable: a guard belongs to one scope of one thread.
  SampleContextGuard(const SampleContextGuard&) = delete;
  /// Not copyable.
  SampleContextGuard& operator=(const SampleContextGuard&) = delete;

 private:
  SampleContext previous_;
};

/// The calling thread's SampleContext.
SampleContext current_sample_context();

/// The generator of sample index under the calling thread's context (Note [Sample
/// randomness]): the same (seed, epoch, index) gives the same stream in any thread.
SampleRng sample_generator(int64_t index);

/// Mixes values into one 64-bit seed (splitmix64 rounds); the derivation every seed of the
/// library uses, public so a custom dataset can derive its own streams the same way.
uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0);

}  // namespace loom::data
