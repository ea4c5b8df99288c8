// Test plugin `fake_device`: brings a device type "fake" whose memory is plain host
// memory from malloc, with its allocator, a generator factory, and a FAKE kernel for
// testns::twice (hence the dependency on good_ops, which defines the op). Its use of
// std::to_string gives it a GNU unique symbol, so, like many real plugins, it stays
// mapped after dlclose (Note [Resident plugin files] in plugin_loader.cpp).

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "loom/core/generator.h"
#include "loom/core/tensor.h"
#include "loom/dispatcher/plugin.h"

LOOM_PLUGIN("fake_device", "0.0.1", "test plugin: a fake device backed by malloc", "good_ops");

namespace {

/// Host memory posing as device memory; counts what it hands out.
class FakeAllocator final : public loom::Allocator {
 public:
  using loom::Allocator::allocate;
  loom::DataPtr allocate(size_t nbytes, int16_t) override {
    void* p = nbytes == 0 ? nullptr : std::malloc(nbytes);
    LOOM_CHECK(nbytes == 0 || p != nullptr, "fake allocator: out of memory allocating ", nbytes,
               " bytes");
    counters_.on_reserve(static_cast<int64_t>(nbytes));
    counters_.on_alloc(static_cast<int64_t>(nbytes), false);
    // The size rides in the context; the allocator itself is a static of this plugin.
    auto* block = new Block{this, nbytes};
    return loom::DataPtr(p, block, &FakeAllocator::release, loom::Device(type_, 0));
  }
  loom::DeviceType device_type() const override { return type_; }
  std::string_view name() const override { return "fake-malloc"; }
  loom::AllocatorStats stats() const override { return counters_.snapshot(); }
  void set_type(loom::DeviceType t) { type_ = t; }

 private:
  struct Block {
    FakeAllocator* owner;
    size_t nbytes;
  };
  static void release(void* ctx, void* data) {
    auto* block = static_cast<Block*>(ctx);
    std::free(data);
    block->owner->counters_.on_free(static_cast<int64_t>(block->nbytes));
    block->owner->counters_.on_reserve(-static_cast<int64_t>(block->nbytes));
    delete block;
  }
  loom::DeviceType type_{};
  loom::AllocatorCounters counters_;
};

FakeAllocator fake_allocator;

/// splitmix64: small, deterministic, good enough for a test device.
class FakeGenerator final : public loom::Generator {
 public:
  explicit FakeGenerator(loom::Device d) : device_(d) {}
  void manual_seed(uint64_t seed) override {
    std::lock_guard<std::mutex> lock(mu_);
    seed_ = state_ = seed;
  }
  uint64_t initial_seed() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return seed_;
  }
  uint64_t next_u64() override {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::string get_state() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::to_string(seed_) + " " + std::to_string(state_);
  }
  void set_state(const std::string& state) override {
    const auto space = state.find(' ');
    LOOM_CHECK_T(loom::ValueError, space != std::string::npos,
                 "FakeGenerator.set_state: malformed state '", state, "'");
    std::lock_guard<std::mutex> lock(mu_);
    seed_ = std::stoull(state.substr(0, space));
    state_ = std::stoull(state.substr(space + 1));
  }
  loom::Device device() const override { return device_; }

 private:
  mutable std::mutex mu_;
  loom::Device device_;
  uint64_t seed_ = 0;
  uint64_t state_ = 0;
};

loom::Tensor twice_fake(const loom::Tensor& x) {
  loom::Tensor out = loom::Tensor::empty(x.sizes(), loom::TensorOptions{}.with(x.device()));
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = 2.f * in[i];
  return out;
}

}  // namespace

LOOM_PLUGIN_ON_LOAD(ctx) {
  const loom::DeviceType fake = ctx.register_device_type("fake");
  fake_allocator.set_type(fake);
  ctx.register_allocator(fake, &fake_allocator);
  ctx.keep(loom::register_generator_factory(
               fake, [](loom::Device d) { return std::make_unique<FakeGenerator>(d); }),
           "generator factory for device type 'fake'");
}

LOOM_LIBRARY_IMPL(testns, FAKE, m) { m.impl("twice", &twice_fake); }
