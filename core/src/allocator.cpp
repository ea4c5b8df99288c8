#include "loom/core/allocator.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/strings/str_format.h"
#include "loom/core/error.h"

namespace loom {

void AllocatorCounters::on_alloc(int64_t nbytes, bool from_cache) {
  const int64_t now = allocated_.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  int64_t peak = peak_allocated_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_allocated_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  allocs_.fetch_add(1, std::memory_order_relaxed);
  if (from_cache) hits_.fetch_add(1, std::memory_order_relaxed);
}

void AllocatorCounters::on_free(int64_t nbytes) {
  allocated_.fetch_sub(nbytes, std::memory_order_relaxed);
  frees_.fetch_add(1, std::memory_order_relaxed);
}

void AllocatorCounters::on_allocated_bytes(int64_t nbytes) {
  const int64_t now = allocated_.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  if (nbytes <= 0) return;
  int64_t peak = peak_allocated_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_allocated_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void AllocatorCounters::add_counts(int64_t allocs, int64_t frees, int64_t hits) {
  allocs_.fetch_add(allocs, std::memory_order_relaxed);
  frees_.fetch_add(frees, std::memory_order_relaxed);
  hits_.fetch_add(hits, std::memory_order_relaxed);
}

void AllocatorCounters::on_reserve(int64_t nbytes) {
  const int64_t now = reserved_.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  int64_t peak = peak_reserved_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_reserved_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

AllocatorStats AllocatorCounters::snapshot() const {
  AllocatorStats s;
  s.allocated_bytes = allocated_.load();
  s.reserved_bytes = reserved_.load();
  s.peak_allocated_bytes = peak_allocated_.load();
  s.peak_reserved_bytes = peak_reserved_.load();
  s.num_allocs = allocs_.load();
  s.num_frees = frees_.load();
  s.num_cache_hits = hits_.load();
  s.live_blocks = s.num_allocs - s.num_frees;
  return s;
}

void AllocatorCounters::reset_peaks() {
  peak_allocated_.store(allocated_.load());
  peak_reserved_.store(reserved_.load());
}

namespace {
std::string human_bytes(int64_t b) {
  const double v = static_cast<double>(b);
  if (b >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", v / (1 << 30));
  if (b >= (int64_t{1} << 20)) return absl::StrFormat("%.2f MiB", v / (1 << 20));
  if (b >= (int64_t{1} << 10)) return absl::StrFormat("%.2f KiB", v / (1 << 10));
  return absl::StrFormat("%d B", b);
}
}  // namespace

void Allocator::copy_data(void* dst, const void* src, size_t n) const { std::memcpy(dst, src, n); }

std::string Allocator::summary() const {
  const AllocatorStats s = stats();
  std::string out = absl::StrFormat("memory summary: %s allocator '%s'\n",
                                    DeviceType{device_type()}.name(), name());
  absl::StrAppendFormat(&out, "  allocated      %12s (peak %s)\n", human_bytes(s.allocated_bytes),
                        human_bytes(s.peak_allocated_bytes));
  absl::StrAppendFormat(&out, "  reserved       %12s (peak %s)\n", human_bytes(s.reserved_bytes),
                        human_bytes(s.peak_reserved_bytes));
  absl::StrAppendFormat(&out, "  live blocks    %12d\n", s.live_blocks);
  absl::StrAppendFormat(&out, "  allocations    %12d (%d from cache)\n", s.num_allocs,
                        s.num_cache_hits);
  absl::StrAppendFormat(&out, "  frees          %12d\n", s.num_frees);
  return out;
}

namespace {
// Per device type, a stack of registrations; the top one is active and published in
// `active` for lock-free lookups (every tensor allocation does one: a 1-element op on the
// autograd path allocates several tensors). Registration takes the lock.
struct AllocatorRegistry {
  std::mutex mu;
  std::array<std::vector<Allocator*>, kMaxDeviceTypes> stacks;
  std::array<std::atomic<Allocator*>, kMaxDeviceTypes> active{};
  void publish(int id) {  // with mu held
    active[id].store(stacks[id].empty() ? nullptr : stacks[id].back(), std::memory_order_release);
  }
};
AllocatorRegistry& registry() {
  static auto* r = new AllocatorRegistry();  // leaked: handles may be undone during exit
  return *r;
}
}  // namespace

RegistrationHandle register_allocator(DeviceType type, Allocator* allocator) {
  LOOM_CHECK_T(RegistrationError, allocator != nullptr, "register_allocator(", type.name(),
               "): allocator is null");
  auto& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.stacks[type.id].push_back(allocator);
    r.publish(type.id);
  }
  return RegistrationHandle([type, allocator] {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    auto& s = reg.stacks[type.id];
    for (auto it = s.rbegin(); it != s.rend(); ++it) {
      if (*it == allocator) {
        s.erase(std::next(it).base());
        break;
      }
    }
    reg.publish(type.id);
  });
}

namespace {
// Note [Meta tensors]: the meta device holds tensors with sizes, strides, dtype and a storage
// size but no memory, so that shapes can be computed without data (PyTorch's device="meta").
// Its allocator hands out null blocks; a meta tensor's data pointer is therefore null, and
// everything that reads elements refuses a meta tensor by its device (the CPU engine's device
// checks, item(), the C ABI's TensorItem / TensorCopyToHost / TensorDataPtr). Factories reach
// the meta device through the Meta dispatch key (ops/core/cpu/creation.cpp).
class MetaAllocator final : public Allocator {
 public:
  using Allocator::allocate;
  DataPtr allocate(size_t /*nbytes*/, int16_t /*device_index*/) override {
    return DataPtr(nullptr, nullptr, nullptr, Device(DeviceType::meta()));
  }
  DeviceType device_type() const override { return DeviceType::meta(); }
  std::string_view name() const override { return "meta"; }
  AllocatorStats stats() const override { return {}; }
  // A meta storage that grows has no bytes to keep.
  void copy_data(void* /*dst*/, const void* /*src*/, size_t /*n*/) const override {}
};
}  // namespace

Allocator* find_allocator(DeviceType type) {
  Allocator* a = registry().active[type.id].load(std::memory_order_acquire);
  if (a == nullptr && type.id == 0) return &cpu_allocator();
  if (a == nullptr && type == DeviceType::meta()) {
    static auto* meta = new MetaAllocator();  // leaked: storages may be freed during exit
    return meta;
  }
  return a;
}

Allocator& get_allocator(DeviceType type) {
  Allocator* a = find_allocator(type);
  LOOM_CHECK_T(DeviceError, a != nullptr, "no allocator is registered for device type '",
               type.name(), "' (is the plugin that provides this device loaded?)");
  return *a;
}

}  // namespace loom
