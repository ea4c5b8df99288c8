#pragma once
/// @file
/// DataLoader (torch.utils.data.DataLoader): batches of a dataset, in an order fixed by the
/// sampler and the epoch, fetched by worker threads, handed out in order. See Note
/// [DataLoader order].

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/core/allocator.h"
#include "loom/data/dataset.h"
#include "loom/data/sampler.h"

namespace loom::data {

/// An exception thrown while fetching or collating a batch, re-thrown in the loop's thread
/// (PyTorch's "Caught ValueError in DataLoader worker process 0"). The message names the
/// worker, the sample index and the original message; original() is the exception itself.
class DataLoaderError : public Error {
 public:
  /// @param message the full message
  /// @param worker_id the worker that caught it (-1: the caller's thread)
  /// @param sample_index the sample being fetched (-1: while collating)
  /// @param original the exception caught
  DataLoaderError(const std::string& message, int worker_id, int64_t sample_index,
                  std::exception_ptr original)
      : Error(message),
        worker_id_(worker_id),
        sample_index_(sample_index),
        original_(std::move(original)) {}
  /// The worker that caught it (-1: the caller's thread, num_workers = 0).
  int worker_id() const { return worker_id_; }
  /// The sample whose get() threw (-1: the collate function threw).
  int64_t sample_index() const { return sample_index_; }
  /// The exception the worker caught (std::rethrow_exception to inspect it).
  const std::exception_ptr& original() const { return original_; }

 private:
  int worker_id_;
  int64_t sample_index_;
  std::exception_ptr original_;
};

/// One batch: the collated fields (for the default collate, field k of every sample stacked
/// into one tensor with a new first dim).
using Batch = std::vector<Tensor>;

/// Makes a batch of samples.
using CollateFn = std::function<Batch(std::vector<Sample>)>;

/// PyTorch's default_collate for tensors: field k of the batch is stack(field k of every
/// sample). Throws ValueError for an empty list, samples with different field counts, or
/// a field whose shapes or dtypes differ across samples (naming the field and both shapes).
Batch default_collate(std::vector<Sample> samples);

/// A collate for variable-length sequences: every field listed in `fields` is padded along
/// its first dim with padding_value to the batch's longest (pad_sequence with
/// batch_first=True) and stacked; the other fields are stacked as default_collate does;
/// then one int64 tensor [batch] of the original lengths per padded field is appended, in
/// the order of `fields`.
CollateFn pad_collate(std::vector<int> fields = {0}, double padding_value = 0.0);

/// DataLoader options; the defaults are PyTorch's.
struct DataLoaderOptions {
  int64_t batch_size = 1;  ///< samples per batch (map-style and iterable datasets)
  bool shuffle = false;    ///< random order (RandomSampler with seed) instead of sequential
  uint64_t seed = 0;       ///< seeds the shuffle and every sample generator
  bool drop_last = false;  ///< drop the last batch when it is short
  /// The order of samples (map-style only); exclusive with shuffle.
  std::shared_ptr<const Sampler> sampler;
  /// The batches (map-style only); exclusive with batch_size != 1, shuffle, sampler, drop_last.
  std::shared_ptr<const BatchSampler> batch_sampler;
  /// Makes a batch; default_collate when empty.
  CollateFn collate_fn;
  /// Worker threads; 0 fetches in the caller's thread. begin() throws loom::Error naming
  /// num_workers and the worker when the system refuses a thread (a thread or memory limit).
  int num_workers = 0;
  /// Batches fetched ahead per worker (the queue holds num_workers * prefetch_factor);
  /// must be >= 1 and is ignored without workers.
  int prefetch_factor = 2;
  /// Runs first in every worker thread with its id (get_worker_info() is already set).
  std::function<void(int worker_id)> worker_init_fn;
  /// Put every CPU tensor of a batch in pinned (page-locked) host memory, from the "cuda"
  /// device plugin's pinned allocator, so that `copy_(gpu, batch, /*non_blocking=*/true)`
  /// is asynchronous (PyTorch's pin_memory). Without a usable CUDA device (plugin not
  /// loaded, no driver, no GPU) batches stay in ordinary memory, without an error, so
  /// training code written for a GPU runs unchanged on a CPU-only machine. See Note
  /// [Pinned batches].
  bool pin_memory = false;
};

// Note [Pinned batches]
// With pin_memory, each worker (or the caller's thread, without workers) copies the collated
// batch into pinned memory right after collating it, so pinning runs in parallel with the
// training step like fetching does (PyTorch uses one extra pinning thread instead). The pinned
// allocator is looked up once per epoch through loom::find_device_hooks: the core knows no
// CUDA, and the data library must not link the CUDA plugin. A pinned block released while an
// asynchronous copy still reads it is not reused before the copy is done: the cuda plugin's
// allocator records an event per copy (Note [Pinned blocks and asynchronous copies] in
// plugins/cuda/src/runtime/pinned.cpp).

/// The pinned host allocator of the "cuda" device plugin, or nullptr when the plugin is not
/// loaded, provides none, or has no usable device (the DataLoader's pin_memory fallback).
Allocator* pinned_host_allocator();

/// t's values in pinned host memory from allocator (PyTorch's Tensor.pin_memory()): a
/// contiguous copy, or t itself when t is already pinned by it, is undefined, or is not a
/// CPU tensor. With allocator null (the default: pinned_host_allocator()) and none available,
/// returns t unchanged.
Tensor pin_memory(const Tensor& t, Allocator* allocator = pinned_host_allocator());

/// True if t's memory comes from allocator (default: the CUDA plugin's pinned allocator);
/// false when there is none.
bool is_pinned(const Tensor& t, Allocator* allocator = pinned_host_allocator());

// Note [DataLoader order]
// The batch sampler runs in the caller's thread at the start of each epoch and fixes the
// list of batches. Batch b goes to worker b % num_workers (PyTorch's round robin); each
// worker fetches and collates its batches, at most prefetch_factor ahead of the consumer,
// into a slot of the bounded queue, and the iterator hands batches out strictly in order
// b = 0, 1, 2, ... With Note [Sample randomness] this makes order and content a function
// of (seed, epoch) alone, whatever num_workers. An exception in a worker is stored with
// its batch and re-thrown in the caller when that batch's turn comes; leaving the loop
// early (or destroying the iterator) stops and joins the workers.

class DataLoader;

/// The loader's input iterator (range-for); owns the epoch's workers.
class DataLoaderIterator {
 public:
  /// @cond INTERNAL
  struct State;
  explicit DataLoaderIterator(std::shared_ptr<State> state);
  /// @endcond
  /// The end sentinel.
  DataLoaderIterator() = default;
  /// Takes over other's epoch (other becomes the end sentinel).
  DataLoaderIterator(DataLoaderIterator&&) noexcept = default;
  /// Takes over other's epoch, stopping this one's workers.
  DataLoaderIterator& operator=(DataLoaderIterator&&) noexcept = default;
  /// Stops and joins the epoch's workers (a loop left early shuts down cleanly).
  ~DataLoaderIterator();
  /// The current batch.
  Batch& operator*() { return current_; }
  /// The current batch.
  Batch* operator->() { return &current_; }
  /// Fetches the next batch (waits for its worker); re-throws a worker's exception.
  DataLoaderIterator& operator++();
  /// True when both are at the end.
  bool operator==(const DataLoaderIterator& other) const;
  /// Negation of ==.
  bool operator!=(const DataLoaderIterator& other) const { return !(*this == other); }

 private:
  void advance();
  std::shared_ptr<State> state_;
  Batch current_;
};

/// Batches of a map-style or iterable dataset.
class DataLoader {
 public:
  /// A loader over a map-style dataset. Throws ValueError for inconsistent options
  /// (PyTorch's messages: "sampler option is mutually exclusive with shuffle", ...).
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  /// A loader over an iterable dataset (sampler, batch_sampler and shuffle are refused).
  DataLoader(std::shared_ptr<IterableDataset> dataset, DataLoaderOptions options = {});
  /// Destroys the loader (an iterator still running keeps the dataset alive).
  ~DataLoader();

  /// Starts an epoch: the current epoch (see set_epoch), after which the epoch advances by
  /// one, so consecutive loops reshuffle as in PyTorch. Only one iteration at a time.
  DataLoaderIterator begin();
  /// The end sentinel.
  DataLoaderIterator end() { return {}; }
  /// Makes the next begin() run epoch `epoch` (reshuffles deterministically; PyTorch's
  /// DistributedSampler.set_epoch, here for every sampler and the sample generators).
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  /// The epoch the next begin() runs.
  int64_t epoch() const { return epoch_; }
  /// Batches per epoch (PyTorch's len(loader)); throws ValueError for an iterable dataset.
  int64_t size() const;
  /// The options.
  const DataLoaderOptions& options() const { return options_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<IterableDataset> iterable_;
  std::shared_ptr<const BatchSampler> batch_sampler_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace loom::data
