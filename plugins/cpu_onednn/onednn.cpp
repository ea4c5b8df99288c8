// The shared parts of the oneDNN plugin (onednn.h): engine, streams, descriptors, caches.
#include "onednn.h"

#include <algorithm>
#include <cstdlib>
#include <list>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "loom/core/error.h"
#include "loom/ops/nn/memory_format.h"

namespace loom::onednn {
namespace {

using dnnl::memory;

std::atomic<int64_t> g_primitive_hits{0}, g_primitive_misses{0}, g_weight_hits{0},
    g_weight_reorders{0}, g_reorders{0};

size_t env_size(const char* name, size_t fallback) {
  if (const char* v = std::getenv(name); v && *v) {
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (end && *end == '\0' && n >= 0) return static_cast<size_t>(n);
  }
  return fallback;
}

/// A least-recently-used map from string keys to shared values, under one mutex.
template <typename V>
class Lru {
 public:
  explicit Lru(size_t capacity) : capacity_(capacity) {}
  std::shared_ptr<V> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  void put(const std::string& key, std::shared_ptr<V> value) {
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity_ == 0) return;
    if (auto it = index_.find(key); it != index_.end()) {
      it->second->second = std::move(value);
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    while (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    index_.clear();
    order_.clear();
  }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<V>>;
  std::mutex mu_;
  size_t capacity_;
  std::list<Entry> order_;
  absl::flat_hash_map<std::string, typename std::list<Entry>::iterator> index_;
};

Lru<const CachedPrimitive>& primitive_cache() {
  static auto* c = new Lru<const CachedPrimitive>(env_size("LOOM_ONEDNN_CACHE_CAPACITY", 1024));
  return *c;
}

struct WeightEntry {
  Tensor weight;  // keeps the identity alive (Note [Weight cache])
  uint32_t version;
  memory blocked;
};

Lru<WeightEntry>& weight_cache() {
  static auto* c = new Lru<WeightEntry>(env_size("LOOM_ONEDNN_WEIGHT_CACHE", 64));
  return *c;
}

}  // namespace

const dnnl::engine& engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

memory::data_type data_type(DType t) {
  switch (t) {
    case DType::Float32:
      return memory::data_type::f32;
    case DType::BFloat16:
      return memory::data_type::bf16;
    default:
      return memory::data_type::undef;
  }
}

bool takes(std::initializer_list<std::reference_wrapper<const Tensor>> tensors, bool allow_bf16) {
  std::optional<DType> dtype;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (t.device().type() != DeviceType::cpu() || t.numel() == 0) return false;
    const DType d = t.dtype();
    if (!(d == DType::Float32 || (allow_bf16 && d == DType::BFloat16))) return false;
    if (dtype && d != *dtype) return false;
    dtype = d;
    for (int64_t s : t.strides()) {
      if (s < 0) return false;
    }
  }
  return true;
}

memory::dims dims_of(const Tensor& t) {
  if (t.dim() == 0) return {1};
  return memory::dims(t.sizes().begin(), t.sizes().end());
}

memory::desc desc_of(const Tensor& t) {
  if (t.dim() == 0) return memory::desc({1}, data_type(t.dtype()), memory::dims{1});
  // oneDNN wants a stride for every dim; size-1 dims may carry any stride in Loom.
  memory::dims strides(t.strides().begin(), t.strides().end());
  return memory::desc(dims_of(t), data_type(t.dtype()), strides);
}

memory::desc desc_of(const Tensor& t, memory::format_tag tag) {
  return memory::desc(dims_of(t), data_type(t.dtype()), tag);
}

memory memory_of(const Tensor& t) { return memory(desc_of(t), engine(), t.data_ptr()); }

memory memory_of(const Tensor& t, const memory::desc& desc) {
  return memory(desc, engine(), t.data_ptr());
}

std::vector<int64_t> channels_last_strides(IntArrayRef sizes) {
  return loom::channels_last_strides(sizes);
}

bool is_channels_last(const Tensor& t) {
  if (t.dim() < 3) return false;
  const std::vector<int64_t> want = loom::channels_last_strides(t.sizes());
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) != want[static_cast<size_t>(d)]) return false;
  }
  return true;
}

bool is_dense(const Tensor& t) {
  if (t.is_contiguous()) return true;
  // Strides of the dims that are not 1, sorted innermost first, must be the running products.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1) dims.emplace_back(t.stride(d), t.size(d));
  }
  std::sort(dims.begin(), dims.end());
  int64_t run = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != run) return false;
    run *= size;
  }
  return true;
}

Tensor empty_channels_last(IntArrayRef sizes, DType dtype) {
  return loom::empty_channels_last(sizes, TensorOptions{}.with(dtype));
}

void reorder(const memory& src, const memory& dst) {
  // Reorder primitives are JIT-compiled like any other: cached by the two layouts.
  const memory::desc from = src.get_desc(), to = dst.get_desc();
  Key key("reorder");
  key.add_bytes(&from.data, sizeof from.data);
  key.add_bytes(&to.data, sizeof to.data);
  auto p = cached(key, [&] {
    auto pd = dnnl::reorder::primitive_desc(const_cast<memory&>(src), const_cast<memory&>(dst));
    return CachedPrimitive{dnnl::reorder(pd), pd, nullptr};
  });
  execute(p->primitive, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
}

memory as_layout(const Tensor& t, const memory::desc& desc) {
  if (desc_of(t) == desc) return memory_of(t, desc);
  memory dst(desc, engine());
  reorder(memory_of(t), dst);
  g_reorders.fetch_add(1, std::memory_order_relaxed);
  return dst;
}

std::shared_ptr<const CachedPrimitive> cached(const Key& key,
                                              const std::function<CachedPrimitive()>& make) {
  if (auto hit = primitive_cache().find(key.bytes())) {
    g_primitive_hits.fetch_add(1, std::memory_order_relaxed);
    return hit;
  }
  g_primitive_misses.fetch_add(1, std::memory_order_relaxed);
  auto made = std::make_shared<const CachedPrimitive>(make());
  primitive_cache().put(key.bytes(), made);
  return made;
}

memory cached_weight(const Tensor& w, const memory::desc& want) {
  if (desc_of(w) == want) return memory_of(w, want);
  Key key("weight");
  key.add(static_cast<int64_t>(reinterpret_cast<intptr_t>(w.impl())));
  key.add(static_cast<int64_t>(reinterpret_cast<intptr_t>(w.data_ptr())));
  key.add(w);
  key.add_bytes(&want.data, sizeof want.data);  // the wanted layout
  auto& cache = weight_cache();
  if (auto hit = cache.find(key.bytes()); hit && hit->version == w.version()) {
    g_weight_hits.fetch_add(1, std::memory_order_relaxed);
    return hit->blocked;
  }
  memory blocked(want, engine());
  reorder(memory_of(w), blocked);
  g_weight_reorders.fetch_add(1, std::memory_order_relaxed);
  cache.put(key.bytes(), std::make_shared<WeightEntry>(WeightEntry{w, w.version(), blocked}));
  return blocked;
}

Stats stats() {
  return Stats{g_primitive_hits.load(), g_primitive_misses.load(), g_weight_hits.load(),
               g_weight_reorders.load(), g_reorders.load()};
}

void clear_caches() {
  primitive_cache().clear();
  weight_cache().clear();
}

void execute(const dnnl::primitive& p, const Args& args) {
  p.execute(stream(), args);
  stream().wait();
}

}  // namespace loom::onednn
