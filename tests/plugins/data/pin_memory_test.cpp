// DataLoader's pin_memory and data::pin_memory (plugins/data/src/pin_memory.cpp, Note [Pinned
// batches]): without a CUDA device batches stay in ordinary memory with the same values; with a
// device type "cuda" whose hooks offer a pinned allocator (a counting stand-in here, since this
// machine has no GPU), every CPU tensor of every batch comes from that allocator, for any number
// of workers and both dataset paths (get_many and per-sample collate).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>

#include "data_test_util.h"
#include "loom/core/device_hooks.h"
#include "loom/data/dataloader.h"

namespace loom::data {
namespace {

using testing::values;

/// Host memory from malloc, counted: stands in for cudaHostAlloc.
class CountingHostAllocator final : public Allocator {
 public:
  using Allocator::allocate;
  DataPtr allocate(size_t nbytes, int16_t /*device_index*/) override {
    allocs.fetch_add(1);
    counters_.on_alloc(static_cast<int64_t>(nbytes), false);
    void* p = nbytes ? std::malloc(nbytes) : nullptr;
    return DataPtr(p, this, &release, Device(DeviceType::cpu(), 0));
  }
  DeviceType device_type() const override { return DeviceType::cpu(); }
  std::string_view name() const override { return "test-pinned"; }
  AllocatorStats stats() const override { return counters_.snapshot(); }
  std::atomic<int> allocs{0};

 private:
  static void release(void* /*ctx*/, void* data) { std::free(data); }
  AllocatorCounters counters_;
};

/// Hooks of a stand-in "cuda" type: device_count devices, the counting allocator.
class FakeCudaHooks final : public DeviceHooks {
 public:
  FakeCudaHooks(int devices, Allocator* pinned) : devices_(devices), pinned_(pinned) {}
  int device_count() const override { return devices_; }
  std::string unavailable_reason() const override {
    return devices_ ? "" : "no CUDA driver (test)";
  }
  Allocator* pinned_host_allocator() const override { return pinned_; }

 private:
  int devices_;
  Allocator* pinned_;
};

class PinMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
};

std::shared_ptr<const Dataset> numbers(int64_t n) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(i) + 0.5f);
    y.push_back(i);
  }
  return std::make_shared<TensorDataset>(
      std::vector<Tensor>{Tensor::from_vector(x, {n, 2}), Tensor::from_vector(y, {n})});
}

/// A dataset without get_many: batches come from default_collate of single samples.
class PerSample final : public Dataset {
 public:
  explicit PerSample(std::shared_ptr<const Dataset> base) : base_(std::move(base)) {}
  int64_t size() const override { return base_->size(); }
  Sample get(int64_t i) const override { return base_->get(i); }

 private:
  std::shared_ptr<const Dataset> base_;
};

std::vector<std::vector<double>> fields_of(DataLoader& loader, Allocator* pinned,
                                           int* pinned_tensors, int* tensors) {
  std::vector<std::vector<double>> out;
  for (Batch& b : loader) {
    for (const Tensor& t : b) {
      ++*tensors;
      if (is_pinned(t, pinned)) ++*pinned_tensors;
      EXPECT_TRUE(t.device().is_cpu()) << t.describe();
      out.push_back(values(t));
    }
  }
  return out;
}

// First, before any test registers a "cuda" type: no CUDA plugin, so no pinned allocator and
// the flag changes nothing.
TEST_F(PinMemoryTest, WithoutCudaBatchesStayInOrdinaryMemory) {
  if (DeviceType::is_registered("cuda") &&
      find_device_hooks(DeviceType::from_name("cuda")) != nullptr) {
    GTEST_SKIP() << "a cuda device plugin is loaded in this process";
  }
  EXPECT_EQ(pinned_host_allocator(), nullptr);
  for (int workers : {0, 2}) {
    DataLoaderOptions plain;
    plain.batch_size = 3;
    plain.num_workers = workers;
    DataLoaderOptions pinned = plain;
    pinned.pin_memory = true;
    DataLoader a(numbers(10), plain), b(numbers(10), pinned);
    int np = 0, n = 0;
    const auto want = fields_of(a, nullptr, &np, &n);
    EXPECT_EQ(fields_of(b, nullptr, &np, &n), want) << workers << " workers";
    EXPECT_EQ(np, 0);
  }
  const Tensor t = Tensor::from_vector<float>({1, 2}, {2});
  EXPECT_TRUE(pin_memory(t).is_alias_of(t)) << "no allocator: the tensor itself";
  EXPECT_FALSE(is_pinned(t));
}

TEST_F(PinMemoryTest, HooksWithoutADeviceAreNotUsed) {
  CountingHostAllocator alloc;
  FakeCudaHooks hooks(0, &alloc);
  const RegistrationHandle h = register_device_hooks(DeviceType::register_type("cuda"), &hooks);
  EXPECT_EQ(pinned_host_allocator(), nullptr);
  DataLoaderOptions o;
  o.batch_size = 4;
  o.pin_memory = true;
  DataLoader loader(numbers(8), o);
  int np = 0, n = 0;
  fields_of(loader, &alloc, &np, &n);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(np, 0);
  EXPECT_EQ(alloc.allocs.load(), 0);
}

TEST_F(PinMemoryTest, BatchesComeFromThePinnedAllocator) {
  CountingHostAllocator alloc;
  FakeCudaHooks hooks(1, &alloc);
  const RegistrationHandle h = register_device_hooks(DeviceType::register_type("cuda"), &hooks);
  ASSERT_EQ(pinned_host_allocator(), &alloc);
  for (bool per_sample : {false, true}) {
    for (int workers : {0, 3}) {
      std::shared_ptr<const Dataset> ds = numbers(10);
      if (per_sample) ds = std::make_shared<PerSample>(ds);
      DataLoaderOptions plain;
      plain.batch_size = 4;
      plain.shuffle = true;
      plain.seed = 7;
      plain.num_workers = workers;
      DataLoaderOptions pinned = plain;
      pinned.pin_memory = true;
      DataLoader a(ds, plain), b(ds, pinned);
      int np = 0, n = 0;
      const auto want = fields_of(a, &alloc, &np, &n);
      EXPECT_EQ(np, 0) << "pin_memory off: ordinary memory";
      np = n = 0;
      const int before = alloc.allocs.load();
      EXPECT_EQ(fields_of(b, &alloc, &np, &n), want)
          << workers << " workers, per_sample " << per_sample;
      EXPECT_EQ(n, 6);  // 3 batches of 2 fields
      EXPECT_EQ(np, n) << "every tensor of every batch pinned";
      EXPECT_EQ(alloc.allocs.load() - before, n);
    }
  }
}

TEST_F(PinMemoryTest, PinMemoryCopiesToContiguousPinnedMemory) {
  CountingHostAllocator alloc;
  const Tensor base = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor t = base.transpose(0, 1);  // [3, 2], not contiguous
  const Tensor p = pin_memory(t, &alloc);
  EXPECT_TRUE(is_pinned(p, &alloc));
  EXPECT_FALSE(is_pinned(t, &alloc));
  EXPECT_TRUE(p.is_contiguous());
  EXPECT_TRUE(p.sizes() == t.sizes());
  EXPECT_EQ(values(p), values(t));
  EXPECT_FALSE(p.is_alias_of(t));
  EXPECT_TRUE(pin_memory(p, &alloc).is_alias_of(p)) << "already pinned: the tensor itself";
  EXPECT_EQ(alloc.allocs.load(), 1);
  const Tensor empty = Tensor::empty({0, 4});
  EXPECT_EQ(pin_memory(empty, &alloc).numel(), 0);
}

}  // namespace
}  // namespace loom::data
