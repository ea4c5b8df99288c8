// DataLoader (plugins/data/src/dataloader.cpp, collate.cpp): order and content independent of
// num_workers, drop_last, samplers, collate, worker errors, early exit, iterable datasets.

#include "loom/data/dataloader.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "data_test_util.h"
#include "loom/data/transforms.h"

namespace loom::data {
namespace {

using testing::values;

class DataLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
};

// Sample i = {float [2] {i, i + 0.5}, int64 i}; optionally slow and random (a random
// crop of a small image so that sample randomness shows in the content).
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(int64_t n, bool random = false, int64_t throw_at = -1)
      : n_(n), random_(random), throw_at_(throw_at) {}
  int64_t size() const override { return n_; }
  Sample get(int64_t i) const override {
    LOOM_CHECK_T(IndexError, i >= 0 && i < n_, "index ", i, " out of range");
    if (i == throw_at_) throw ValueError("sample is broken");
    calls_++;
    Tensor x = Tensor::from_vector<float>({static_cast<float>(i), i + 0.5f}, {2});
    if (random_) {
      SampleRng rng = sample_generator(i);
      x = x + static_cast<float>(uniform_real(rng));
    }
    return {x, Tensor::scalar<int64_t>(i)};
  }
  mutable std::atomic<int64_t> calls_{0};

 private:
  int64_t n_;
  bool random_;
  int64_t throw_at_;
};

// All batches of an epoch as value lists.
std::vector<std::vector<std::vector<double>>> run(DataLoader& loader) {
  std::vector<std::vector<std::vector<double>>> out;
  for (Batch& b : loader) {
    std::vector<std::vector<double>> fields;
    for (const Tensor& t : b) fields.push_back(values(t));
    out.push_back(std::move(fields));
  }
  return out;
}

TEST_F(DataLoaderTest, SequentialBatchesAndLength) {
  auto ds = std::make_shared<CountingDataset>(10);
  DataLoaderOptions o;
  o.batch_size = 4;
  DataLoader loader(ds, o);
  EXPECT_EQ(loader.size(), 3);
  int64_t seen = 0, batches = 0;
  for (Batch& b : loader) {
    ASSERT_EQ(b.size(), 2u);
    const int64_t n = b[1].size(0);
    EXPECT_EQ(b[0].sizes().vec(), (std::vector<int64_t>{n, 2}));
    EXPECT_EQ(b[1].dtype(), DType::Int64);
    for (int64_t k = 0; k < n; ++k) EXPECT_EQ(values(b[1])[k], seen + k);
    seen += n;
    ++batches;
  }
  EXPECT_EQ(seen, 10);
  EXPECT_EQ(batches, 3);
}

TEST_F(DataLoaderTest, DropLast) {
  auto ds = std::make_shared<CountingDataset>(10);
  DataLoaderOptions o;
  o.batch_size = 4;
  o.drop_last = true;
  for (int workers : {0, 3}) {
    o.num_workers = workers;
    DataLoader loader(ds, o);
    EXPECT_EQ(loader.size(), 2);
    auto r = run(loader);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[1][1], (std::vector<double>{4, 5, 6, 7}));
  }
}

TEST_F(DataLoaderTest, SameOrderAndContentForAnyNumberOfWorkers) {
  auto ds = std::make_shared<CountingDataset>(53, /*random=*/true);
  std::vector<std::vector<std::vector<double>>> reference;
  for (int workers : {0, 1, 4}) {
    for (int prefetch : {1, 3}) {
      DataLoaderOptions o;
      o.batch_size = 5;
      o.shuffle = true;
      o.seed = 1234;
      o.num_workers = workers;
      o.prefetch_factor = prefetch;
      DataLoader loader(ds, o);
      loader.set_epoch(3);
      auto r = run(loader);
      if (reference.empty()) {
        reference = r;
        std::set<double> labels;
        for (auto& b : r) labels.insert(b[1].begin(), b[1].end());
        EXPECT_EQ(labels.size(), 53u);  // every sample once
      } else {
        EXPECT_EQ(r, reference) << workers << " workers, prefetch " << prefetch;
      }
    }
  }
  // Another epoch or seed gives another order and other random content.
  DataLoaderOptions o;
  o.batch_size = 5;
  o.shuffle = true;
  o.seed = 1234;
  DataLoader loader(ds, o);
  loader.set_epoch(4);
  EXPECT_NE(run(loader), reference);
}

TEST_F(DataLoaderTest, ConsecutiveLoopsReshuffleAndSetEpochReplays) {
  auto ds = std::make_shared<CountingDataset>(20);
  DataLoaderOptions o;
  o.batch_size = 20;
  o.shuffle = true;
  o.seed = 5;
  DataLoader loader(ds, o);
  auto e0 = run(loader);
  auto e1 = run(loader);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(loader.epoch(), 2);
  loader.set_epoch(0);
  EXPECT_EQ(run(loader), e0);
}

TEST_F(DataLoaderTest, SamplersAndBatchSampler) {
  auto ds = std::make_shared<CountingDataset>(10);
  DataLoaderOptions o;
  o.batch_size = 2;
  o.sampler = std::make_shared<DistributedSampler>(10, 2, 1, false);
  DataLoader loader(ds, o);
  auto r = run(loader);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0][1], (std::vector<double>{1, 3}));
  EXPECT_EQ(r[2][1], (std::vector<double>{9}));

  DataLoaderOptions b;
  b.batch_sampler =
      std::make_shared<BatchSampler>(std::make_shared<SequentialSampler>(10), 6, true);
  DataLoader by_batch(ds, b);
  EXPECT_EQ(by_batch.size(), 1);
  EXPECT_EQ(run(by_batch)[0][1], (std::vector<double>{0, 1, 2, 3, 4, 5}));

  DataLoaderOptions bad = o;
  bad.shuffle = true;
  EXPECT_THROW(DataLoader(ds, bad), ValueError);
  DataLoaderOptions bad2 = b;
  bad2.batch_size = 3;
  EXPECT_THROW(DataLoader(ds, bad2), ValueError);
  DataLoaderOptions bad3;
  bad3.num_workers = -1;
  EXPECT_THROW(DataLoader(ds, bad3), ValueError);
}

TEST_F(DataLoaderTest, WorkerInitAndWorkerInfo) {
  auto ds = std::make_shared<CountingDataset>(16);
  std::mutex mu;
  std::set<int> inits;
  DataLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 3;
  o.worker_init_fn = [&](int id) {
    auto info = get_worker_info();
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->id, id);
    EXPECT_EQ(info->num_workers, 3);
    std::lock_guard<std::mutex> lock(mu);
    inits.insert(id);
  };
  DataLoader loader(ds, o);
  run(loader);
  EXPECT_EQ(inits, (std::set<int>{0, 1, 2}));
  EXPECT_FALSE(get_worker_info().has_value());
}

TEST_F(DataLoaderTest, WorkerExceptionNamesTheSample) {
  auto ds = std::make_shared<CountingDataset>(20, false, /*throw_at=*/13);
  for (int workers : {0, 2}) {
    DataLoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    DataLoader loader(ds, o);
    int64_t good = 0;
    try {
      for (Batch& b : loader) good += b[1].size(0);
      FAIL() << "no exception";
    } catch (const DataLoaderError& e) {
      EXPECT_EQ(e.sample_index(), 13);
      EXPECT_EQ(e.worker_id(), workers == 0 ? -1 : 3 % workers);
      EXPECT_NE(std::string(e.what()).find("sample 13"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("sample is broken"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("ValueError"), std::string::npos) << e.what();
      EXPECT_THROW(std::rethrow_exception(e.original()), ValueError);
    }
    EXPECT_EQ(good, 12);  // batches before the broken one arrived in order
  }
}

TEST_F(DataLoaderTest, CollateErrorsAreReported) {
  // Samples of different lengths cannot be stacked by default_collate.
  class Ragged : public Dataset {
   public:
    int64_t size() const override { return 4; }
    Sample get(int64_t i) const override { return {loom::arange(i + 1, DType::Float32)}; }
  };
  auto ds = std::make_shared<Ragged>();
  DataLoaderOptions o;
  o.batch_size = 2;
  DataLoader loader(ds, o);
  try {
    run(loader);
    FAIL();
  } catch (const DataLoaderError& e) {
    EXPECT_EQ(e.sample_index(), -1);
    EXPECT_NE(std::string(e.what()).find("equal size"), std::string::npos) << e.what();
  }
  // pad_collate pads to the longest and appends the lengths.
  o.collate_fn = pad_collate({0}, -1.0);
  DataLoader padded(ds, o);
  auto r = run(padded);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1][0], (std::vector<double>{0, 1, 2, -1, 0, 1, 2, 3}));
  EXPECT_EQ(r[1][1], (std::vector<double>{3, 4}));
}

TEST_F(DataLoaderTest, PadCollateKeepsOtherFieldsStacked) {
  std::vector<Sample> samples = {
      {Tensor::from_vector<int64_t>({5, 6}, {2, 1}), Tensor::scalar<int64_t>(0)},
      {Tensor::from_vector<int64_t>({7}, {1, 1}), Tensor::scalar<int64_t>(1)}};
  Batch b = pad_collate()(samples);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].sizes().vec(), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(values(b[0]), (std::vector<double>{5, 6, 7, 0}));
  EXPECT_EQ(values(b[1]), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(b[2]), (std::vector<double>{2, 1}));
  EXPECT_THROW(pad_collate({2})(samples), ValueError);
  EXPECT_THROW(default_collate({}), ValueError);
}

TEST_F(DataLoaderTest, BreakingEarlyStopsTheWorkers) {
  auto ds = std::make_shared<CountingDataset>(10000);
  DataLoaderOptions o;
  o.batch_size = 10;
  o.num_workers = 4;
  o.prefetch_factor = 2;
  DataLoader loader(ds, o);
  int n = 0;
  for (Batch& b : loader) {
    (void)b;
    if (++n == 3) break;
  }
  // The queue bound: at most 3 consumed + num_workers * prefetch_factor fetched ahead.
  EXPECT_LE(ds->calls_.load(), (3 + 4 * 2) * 10);
  const int64_t after = ds->calls_.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ds->calls_.load(), after);  // the workers are gone
  n = 0;
  for (Batch& b : loader) n += b[0].size(0) > 0;  // a full epoch still works afterwards
  EXPECT_EQ(n, 1000);
}

// An iterable dataset of 0..n-1 that shards by worker (PyTorch's recipe).
class RangeStream : public IterableDataset {
 public:
  RangeStream(int64_t n, bool shard) : n_(n), shard_(shard) {}
  void reset() override {
    auto info = get_worker_info();
    step_ = shard_ && info ? info->num_workers : 1;
    next_ = shard_ && info ? info->id : 0;
  }
  std::optional<Sample> next() override {
    if (next_ >= n_) return std::nullopt;
    Sample s{Tensor::scalar<int64_t>(next_)};
    next_ += step_;
    return s;
  }
  std::shared_ptr<IterableDataset> clone() const override {
    return std::make_shared<RangeStream>(n_, shard_);
  }

 private:
  int64_t n_, next_ = 0, step_ = 1;
  bool shard_;
};

TEST_F(DataLoaderTest, IterableDatasetShardsByWorker) {
  std::vector<double> serial;
  for (int workers : {0, 1, 3}) {
    DataLoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    DataLoader loader(std::make_shared<RangeStream>(23, true), o);
    EXPECT_THROW(loader.size(), ValueError);
    std::vector<double> all;
    std::vector<std::vector<std::vector<double>>> r = run(loader);
    for (auto& b : r) all.insert(all.end(), b[0].begin(), b[0].end());
    std::vector<double> sorted_all = all;
    std::sort(sorted_all.begin(), sorted_all.end());
    ASSERT_EQ(sorted_all.size(), 23u) << workers;
    for (int i = 0; i < 23; ++i) EXPECT_EQ(sorted_all[i], i);
    if (workers == 3) {
      // Round robin over the workers: batch 0 from worker 0 holds 0, 3, 6, 9.
      EXPECT_EQ(r[0][0], (std::vector<double>{0, 3, 6, 9}));
      EXPECT_EQ(r[1][0], (std::vector<double>{1, 4, 7, 10}));
      // Deterministic: a second run is identical.
      DataLoader again(std::make_shared<RangeStream>(23, true), o);
      EXPECT_EQ(run(again), r);
    }
  }
  // Without sharding, every worker yields the whole stream (PyTorch's semantics).
  DataLoaderOptions o;
  o.batch_size = 5;
  o.num_workers = 2;
  DataLoader dup(std::make_shared<RangeStream>(10, false), o);
  EXPECT_EQ(run(dup).size(), 4u);
  // drop_last drops each worker's short tail.
  o.drop_last = true;
  o.batch_size = 4;
  DataLoader dropped(std::make_shared<RangeStream>(10, true), o);
  EXPECT_EQ(run(dropped).size(), 2u);  // each worker holds 5: one full batch each
}

TEST_F(DataLoaderTest, IterableWithoutCloneRefusesWorkers) {
  class NoClone : public IterableDataset {
   public:
    std::optional<Sample> next() override { return std::nullopt; }
  };
  DataLoaderOptions o;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<NoClone>(), o);
  EXPECT_THROW(run(loader), DataLoaderError);
  DataLoaderOptions s;
  s.shuffle = true;
  EXPECT_THROW(DataLoader(std::make_shared<NoClone>(), s), ValueError);
}

TEST_F(DataLoaderTest, PinMemoryIsAcceptedOnCpu) {
  auto ds = std::make_shared<CountingDataset>(4);
  DataLoaderOptions o;
  o.batch_size = 2;
  o.pin_memory = true;
  DataLoader loader(ds, o);
  EXPECT_EQ(run(loader).size(), 2u);
}

// The system refusing a worker thread is the caller's num_workers to fix: begin() throws a
// loom::Error naming num_workers and the worker, not a bare std::system_error ("Resource
// temporarily unavailable"), and joins the workers it had started. A low address-space limit
// makes the refusal certain: it leaves room for a few thread stacks, not for 4096. The limit
// is set in a death-test child, so it ends with that process.
TEST_F(DataLoaderTest, RefusedWorkerThreadIsAnErrorNamingNumWorkers) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers reserve more address space than the limit leaves";
#endif
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
  auto refused_start = [] {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t used = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
    rlimit limit{};
    ::getrlimit(RLIMIT_AS, &limit);
    limit.rlim_cur = used + (rlim_t{64} << 20);
    if (::setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(3);
    DataLoaderOptions o;
    o.num_workers = 4096;
    DataLoader loader(std::make_shared<CountingDataset>(8), o);
    try {
      run(loader);
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::_Exit(0);
    }
    std::_Exit(1);  // every thread started: the limit did not bite
  };
  EXPECT_EXIT(refused_start(), ::testing::ExitedWithCode(0),
              "DataLoader: cannot start worker [0-9]+ \\(of num_workers=4096\\): .*lower "
              "num_workers");
}

}  // namespace
}  // namespace loom::data
