// DataLoader (loom/data/dataloader.h): see Note [DataLoader order].

#include "loom/data/dataloader.h"

#include <cxxabi.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <typeinfo>

#include "loom/profiler/profiler.h"
#include "worker_context.h"

namespace loom::data {
namespace {

std::string type_name(const std::exception& e) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : typeid(e).name();
  std::free(demangled);
  return name;
}

std::string where(int worker_id) {
  return worker_id < 0 ? std::string("the DataLoader's thread")
                       : str_cat("DataLoader worker ", worker_id);
}

// Calls f, turning any exception into a DataLoaderError naming worker and sample.
template <typename F>
auto guarded(int worker_id, int64_t sample_index, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const DataLoaderError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string what =
        sample_index >= 0 ? str_cat(" while fetching sample ", sample_index) : " while collating";
    throw DataLoaderError(
        str_cat("Caught ", type_name(e), " in ", where(worker_id), what, ": ", e.what()), worker_id,
        sample_index, std::current_exception());
  } catch (...) {
    throw DataLoaderError(
        str_cat("Caught an unknown exception in ", where(worker_id),
                sample_index >= 0 ? str_cat(" while fetching sample ", sample_index)
                                  : std::string(" while collating")),
        worker_id, sample_index, std::current_exception());
  }
}

struct Result {
  Batch batch;
  std::exception_ptr error;
};

}  // namespace

struct DataLoaderIterator::State {
  // What the epoch runs.
  std::shared_ptr<const Dataset> dataset;
  std::shared_ptr<IterableDataset> iterable;
  DataLoaderOptions options;
  CollateFn collate;
  bool default_collation = false;  // collate is default_collate: Dataset::get_many may serve
  int64_t epoch = 0;
  std::vector<std::vector<int64_t>> batches;  // map-style only
  Allocator* pinned = nullptr;                // pin_memory's allocator (Note [Pinned batches])

  // Progress, shared with the workers under mu.
  std::mutex mu;
  std::condition_variable worker_cv, consumer_cv;
  bool stop = false;
  int64_t next_batch = 0;                  // map-style: the batch the consumer takes next
  std::map<int64_t, Result> ready;         // map-style: fetched batches by number
  std::vector<std::deque<Result>> queues;  // iterable: per worker, in order
  std::vector<bool> exhausted;             // iterable: per worker
  int next_worker = 0;                     // iterable: round robin
  std::vector<std::thread> workers;

  ~State() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    worker_cv.notify_all();
    for (std::thread& t : workers) t.join();
  }

  SampleContext context() const { return {options.seed, epoch}; }

  // The batch in pinned memory when pin_memory found an allocator (else unchanged).
  Batch pinned_batch(int worker_id, Batch b) const {
    if (pinned == nullptr) return b;
    return guarded(worker_id, -1, [&] {
      for (Tensor& t : b) t = pin_memory(t, pinned);
      return std::move(b);
    });
  }

  Batch fetch(int worker_id, const std::vector<int64_t>& indices) const {
    // A profiler range per batch, on the thread that loads it (a worker, or the caller).
    const profiler::Range range(profiler::is_recording() ? "DataLoader.fetch" : "");
    SampleContextGuard guard(context());
    if (default_collation) {  // a dataset that gathers a whole batch at once
      std::optional<Batch> b = guarded(worker_id, indices.empty() ? -1 : indices.front(),
                                       [&] { return dataset->get_many(indices); });
      if (b) return pinned_batch(worker_id, std::move(*b));
    }
    std::vector<Sample> samples;
    samples.reserve(indices.size());
    for (int64_t i : indices)
      samples.push_back(guarded(worker_id, i, [&] { return dataset->get(i); }));
    return pinned_batch(worker_id,
                        guarded(worker_id, -1, [&] { return collate(std::move(samples)); }));
  }

  // Up to batch_size samples of ds; nullopt at the end (or for a short tail with drop_last).
  std::optional<Batch> next_iterable(int worker_id, IterableDataset& ds) const {
    SampleContextGuard guard(context());
    std::vector<Sample> samples;
    while (static_cast<int64_t>(samples.size()) < options.batch_size) {
      std::optional<Sample> s = guarded(worker_id, -1, [&] { return ds.next(); });
      if (!s) break;
      samples.push_back(std::move(*s));
    }
    if (samples.empty()) return std::nullopt;
    if (options.drop_last && static_cast<int64_t>(samples.size()) < options.batch_size)
      return std::nullopt;
    return pinned_batch(worker_id,
                        guarded(worker_id, -1, [&] { return collate(std::move(samples)); }));
  }

  void start_worker(int id) {
    const int n = options.num_workers;
    detail::set_worker_info(WorkerInfo{id, n, mix_seed(options.seed, epoch, id)});
    if (options.worker_init_fn) options.worker_init_fn(id);
  }

  void map_worker(int id) {
    const int n = options.num_workers;
    const int64_t ahead = static_cast<int64_t>(n) * options.prefetch_factor;
    std::exception_ptr init_error;
    try {
      start_worker(id);
    } catch (...) {
      init_error = std::current_exception();
    }
    for (int64_t b = id; b < static_cast<int64_t>(batches.size()); b += n) {
      {
        std::unique_lock<std::mutex> lock(mu);
        worker_cv.wait(lock, [&] { return stop || b < next_batch + ahead; });
        if (stop) return;
      }
      Result r;
      if (init_error) {
        r.error = init_error;
      } else {
        try {
          r.batch = fetch(id, batches[b]);
        } catch (...) {
          r.error = std::current_exception();
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        ready.emplace(b, std::move(r));
      }
      consumer_cv.notify_all();
    }
  }

  void iterable_worker(int id) {
    std::shared_ptr<IterableDataset> ds;
    auto finish = [&](std::optional<Result> last) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (last) queues[id].push_back(std::move(*last));
        exhausted[id] = true;
      }
      consumer_cv.notify_all();
    };
    try {
      start_worker(id);
      ds = guarded(id, -1, [&] { return iterable->clone(); });
      guarded(id, -1, [&] { ds->reset(); });
    } catch (...) {
      return finish(Result{{}, std::current_exception()});
    }
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        worker_cv.wait(lock, [&] {
          return stop || static_cast<int64_t>(queues[id].size()) < options.prefetch_factor;
        });
        if (stop) return;
      }
      Result r;
      try {
        std::optional<Batch> b = next_iterable(id, *ds);
        if (!b) return finish(std::nullopt);
        r.batch = std::move(*b);
      } catch (...) {
        return finish(Result{{}, std::current_exception()});
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        queues[id].push_back(std::move(r));
      }
      consumer_cv.notify_all();
    }
  }

  // Starts worker w. The system may refuse a thread (a thread or memory limit, usually with a
  // num_workers far above the cores): that is the caller's setting to fix, so it is reported as
  // a loom::Error naming it. The workers already started see `stop` and are joined when the
  // state is destroyed, which begin() does as the error leaves it.
  template <typename Body>
  void start_thread(int w, Body body) {
    try {
      workers.emplace_back(std::move(body));
    } catch (const std::system_error& e) {
      throw Error(str_cat("DataLoader: cannot start worker ", w,
                          " (of num_workers=", options.num_workers, "): ", e.what(),
                          "; the system refused another thread, so lower num_workers"));
    }
  }

  void start() {
    const int n = options.num_workers;
    if (iterable) {
      if (n == 0) {
        iterable->reset();
        return;
      }
      queues.resize(n);
      exhausted.assign(n, false);
      for (int w = 0; w < n; ++w) start_thread(w, [this, w] { iterable_worker(w); });
    } else if (n > 0) {
      for (int w = 0; w < n; ++w) start_thread(w, [this, w] { map_worker(w); });
    }
  }

  // The next batch in order; nullopt at the end. Re-throws a worker's exception.
  std::optional<Batch> take() {
    const int n = options.num_workers;
    if (!iterable) {
      if (next_batch >= static_cast<int64_t>(batches.size())) return std::nullopt;
      if (n == 0) return fetch(-1, batches[next_batch++]);
      Result r;
      {
        std::unique_lock<std::mutex> lock(mu);
        consumer_cv.wait(lock, [&] { return ready.count(next_batch) > 0; });
        auto it = ready.find(next_batch);
        r = std::move(it->second);
        ready.erase(it);
        ++next_batch;
      }
      worker_cv.notify_all();
      if (r.error) std::rethrow_exception(r.error);
      return std::move(r.batch);
    }
    if (n == 0) return next_iterable(-1, *iterable);
    Result r;
    {
      std::unique_lock<std::mutex> lock(mu);
      for (;;) {
        // Round robin over the workers that still have batches, waiting for each in turn.
        bool any_left = false;
        for (int k = 0; k < n; ++k) any_left |= !(exhausted[k] && queues[k].empty());
        if (!any_left) return std::nullopt;
        const int w = next_worker;
        consumer_cv.wait(lock, [&] { return !queues[w].empty() || exhausted[w]; });
        next_worker = (w + 1) % n;
        if (queues[w].empty()) continue;  // worker w has finished
        r = std::move(queues[w].front());
        queues[w].pop_front();
        break;
      }
    }
    worker_cv.notify_all();
    if (r.error) std::rethrow_exception(r.error);
    return std::move(r.batch);
  }
};

DataLoaderIterator::DataLoaderIterator(std::shared_ptr<State> state) : state_(std::move(state)) {}

DataLoaderIterator::~DataLoaderIterator() = default;

void DataLoaderIterator::advance() {
  if (!state_) return;
  std::optional<Batch> b;
  try {
    b = state_->take();
  } catch (...) {
    // The batch is lost, the loop may go on (as a PyTorch iterator after a worker error).
    current_.clear();
    throw;
  }
  if (b) {
    current_ = std::move(*b);
  } else {
    current_.clear();
    state_.reset();  // joins the workers
  }
}

DataLoaderIterator& DataLoaderIterator::operator++() {
  advance();
  return *this;
}

bool DataLoaderIterator::operator==(const DataLoaderIterator& other) const {
  return state_ == other.state_;
}

namespace {
void check_common(const DataLoaderOptions& o) {
  LOOM_CHECK(o.batch_size >= 1,
             "DataLoader: batch_size should be a positive integer value, but got batch_size=",
             o.batch_size);
  LOOM_CHECK(o.num_workers >= 0,
             "DataLoader: num_workers option should be non-negative; use num_workers=0 to "
             "disable multiprocessing.");
  LOOM_CHECK(o.prefetch_factor >= 1, "DataLoader: prefetch_factor must be >= 1, got ",
             o.prefetch_factor);
}
}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  LOOM_CHECK(dataset_ != nullptr, "DataLoader: dataset must not be null");
  check_common(options_);
  const DataLoaderOptions& o = options_;
  if (o.batch_sampler) {
    LOOM_CHECK(o.batch_size == 1 && !o.shuffle && !o.sampler && !o.drop_last,
               "DataLoader: batch_sampler option is mutually exclusive with batch_size, "
               "shuffle, sampler, and drop_last");
    batch_sampler_ = o.batch_sampler;
  } else {
    LOOM_CHECK(!(o.sampler && o.shuffle),
               "DataLoader: sampler option is mutually exclusive with shuffle");
    std::shared_ptr<const Sampler> sampler = o.sampler;
    if (!sampler) {
      if (o.shuffle)
        sampler = std::make_shared<RandomSampler>(dataset_->size(), o.seed);
      else
        sampler = std::make_shared<SequentialSampler>(dataset_->size());
    }
    batch_sampler_ = std::make_shared<BatchSampler>(sampler, o.batch_size, o.drop_last);
  }
  if (!options_.collate_fn) options_.collate_fn = default_collate;
}

DataLoader::DataLoader(std::shared_ptr<IterableDataset> dataset, DataLoaderOptions options)
    : iterable_(std::move(dataset)), options_(std::move(options)) {
  LOOM_CHECK(iterable_ != nullptr, "DataLoader: dataset must not be null");
  check_common(options_);
  LOOM_CHECK(!options_.shuffle,
             "DataLoader with IterableDataset: expected unspecified shuffle option, but got "
             "shuffle=true");
  LOOM_CHECK(!options_.sampler,
             "DataLoader with IterableDataset: expected unspecified sampler option");
  LOOM_CHECK(!options_.batch_sampler,
             "DataLoader with IterableDataset: expected unspecified batch_sampler option");
  if (!options_.collate_fn) options_.collate_fn = default_collate;
}

DataLoader::~DataLoader() = default;

int64_t DataLoader::size() const {
  LOOM_CHECK(!iterable_, "DataLoader: the length of a loader over an IterableDataset is unknown");
  return batch_sampler_->size();
}

DataLoaderIterator DataLoader::begin() {
  auto state = std::make_shared<DataLoaderIterator::State>();
  state->dataset = dataset_;
  state->iterable = iterable_;
  state->options = options_;
  state->collate = options_.collate_fn;
  {
    using Fn = Batch (*)(std::vector<Sample>);
    const Fn* f = options_.collate_fn.target<Fn>();
    state->default_collation = f != nullptr && *f == &default_collate;
  }
  state->epoch = epoch_++;
  if (options_.pin_memory) state->pinned = pinned_host_allocator();
  if (!iterable_) state->batches = batch_sampler_->batches(state->epoch);
  state->start();
  DataLoaderIterator it(std::move(state));
  ++it;
  return it;
}

}  // namespace loom::data
