#pragma once
// What every oneDNN kernel of this plugin shares (docs/design/onednn.md): the engine and a
// stream per thread, Loom tensors as oneDNN memory, the primitive cache, the weight cache,
// and the hand-off of calls outside oneDNN's domain to the reference kernels.
//
// A kernel here is written in one shape:
//
//   Tensor mm(const Tensor& a, const Tensor& b) {
//     static const auto op = onednn::op<Tensor(const Tensor&, const Tensor&)>("aten::mm");
//     if (!onednn::takes({a, b}) || a.dim() != 2 || ...) return op.call_next_provider(kCPU, a, b);
//     ... build or find the primitive in the cache, execute it ...
//   }
//
// Only well-formed calls in oneDNN's domain (float32, and bfloat16 where the kernel says so,
// on the CPU, non-empty) are taken; every other call, including every malformed one, goes to
// the reference kernel (Note [Next provider] in dispatcher.h), so error messages are the
// reference's, word for word, and oneDNN never sees a shape it would reject.

#include <dnnl.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/dispatcher/dispatcher.h"

namespace loom::onednn {

inline constexpr DispatchKey kCPU = DispatchKey::CPU;

/// The typed handle of a registered op, found once (handles live for the process).
template <typename Sig>
OperatorHandle::Typed<Sig> op(std::string_view name) {
  return Dispatcher::instance().find_op_or_throw(name).template typed<Sig>();
}

/// The process's oneDNN CPU engine.
const dnnl::engine& engine();
/// This thread's stream on engine() (primitives execute synchronously on the CPU).
dnnl::stream& stream();

/// oneDNN's data type for t, or undef when oneDNN does not compute in it here.
dnnl::memory::data_type data_type(DType t);

/// True when every defined tensor is a non-empty CPU tensor of float32 (or bfloat16 when
/// allow_bf16), all of one dtype, with non-negative strides: the calls oneDNN takes.
/// Undefined tensors (an absent bias) are skipped.
bool takes(std::initializer_list<std::reference_wrapper<const Tensor>> tensors,
           bool allow_bf16 = false);

/// oneDNN dims of t's sizes (a 0-d tensor is {1}).
dnnl::memory::dims dims_of(const Tensor& t);
/// A memory descriptor with t's sizes and strides (its real layout, any strides).
dnnl::memory::desc desc_of(const Tensor& t);
/// A descriptor of t's sizes in a given format tag.
dnnl::memory::desc desc_of(const Tensor& t, dnnl::memory::format_tag tag);
/// A memory object over t's data (no copy) described by desc (default: desc_of(t)).
dnnl::memory memory_of(const Tensor& t);
dnnl::memory memory_of(const Tensor& t, const dnnl::memory::desc& desc);

/// Channels-last strides of a 3-D/4-D/5-D tensor's sizes (N, spatial..., C innermost).
std::vector<int64_t> channels_last_strides(IntArrayRef sizes);
/// True when t (3-D or more) is laid out channels-last (C has stride 1, then W, H, ..., N).
bool is_channels_last(const Tensor& t);
/// A new tensor of sizes and dtype laid out channels-last (the format oneDNN's convolution
/// and pooling run fastest in here); its strides say so, so it is an ordinary Loom tensor.
Tensor empty_channels_last(IntArrayRef sizes, DType dtype);

/// True when t's elements fill its memory exactly, in some order of its dims (contiguous,
/// channels-last, any permutation of a contiguous tensor): its numel() floats from data_ptr()
/// are its elements, so an elementwise kernel can run over them as one flat line.
bool is_dense(const Tensor& t);

/// Data in desc's layout, from t: t's own memory when it is already laid out so, else a
/// reordered copy (the memory object owns it). Counts the reorder (stats()).
dnnl::memory as_layout(const Tensor& t, const dnnl::memory::desc& desc);
/// Copies src (any layout) into dst's memory.
void reorder(const dnnl::memory& src, const dnnl::memory& dst);

/// A cache key: bytes appended field by field.
class Key {
 public:
  /// Starts a key for one kind of primitive ("conv.fwd").
  explicit Key(std::string_view kind) : bytes_(kind) { bytes_.push_back('\0'); }
  /// Appends an integer.
  Key& add(int64_t v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  /// Appends a double (bit pattern).
  Key& add(double v) {
    int64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
  }
  /// Appends raw bytes.
  Key& add_bytes(const void* p, size_t n) {
    bytes_.append(static_cast<const char*>(p), n);
    return *this;
  }
  /// Appends a list of integers (with its length).
  Key& add(IntArrayRef v) {
    add(static_cast<int64_t>(v.size()));
    for (int64_t x : v) add(x);
    return *this;
  }
  /// Appends a tensor's dtype, sizes and strides.
  Key& add(const Tensor& t) {
    if (!t.defined()) return add(int64_t{-1});
    add(static_cast<int64_t>(t.dtype()));
    add(t.sizes());
    return add(t.strides());
  }
  /// The bytes.
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

/// Note [Primitive cache]: primitive descriptors and primitives cost tens of microseconds to
/// create (oneDNN JIT-compiles them); a training step asks for the same few shapes every
/// time. The cache maps a Key (kind, shapes, strides, dtypes, attributes) to the primitive
/// and its descriptor, least recently used out beyond a capacity
/// (LOOM_ONEDNN_CACHE_CAPACITY, default 1024). Shared by all threads under a mutex:
/// oneDNN primitives may run on several threads at once.
struct CachedPrimitive {
  dnnl::primitive primitive;
  dnnl::primitive_desc_base pd;
  /// Kernel-specific extras (a workspace descriptor, a second primitive).
  std::shared_ptr<void> extra;
};
/// The entry for key, created by make() on a miss (outside the lock).
std::shared_ptr<const CachedPrimitive> cached(const Key& key,
                                              const std::function<CachedPrimitive()>& make);

/// Note [Weight cache]: a weight reordered to the blocked layout a primitive wants is kept
/// beside the tensor's identity and version, so inference and every step in which weights
/// did not change reuse it. The entry holds a reference to the weight, so its address cannot
/// be reused by another tensor while the entry lives; entries beyond
/// LOOM_ONEDNN_WEIGHT_CACHE (default 64) are dropped least recently used first.
dnnl::memory cached_weight(const Tensor& w, const dnnl::memory::desc& want);

/// What this plugin has done since load (shown by tests and benchmarks).
struct Stats {
  int64_t primitive_hits = 0;    ///< primitive cache hits
  int64_t primitive_misses = 0;  ///< primitives created
  int64_t weight_hits = 0;       ///< weight reorders skipped
  int64_t weight_reorders = 0;   ///< weights reordered
  int64_t reorders = 0;          ///< activation reorders (layout conversions)
};
/// A snapshot of the counters.
Stats stats();
/// Drops both caches (on unload; tests).
void clear_caches();

/// A oneDNN primitive's arguments.
using Args = std::unordered_map<int, dnnl::memory>;
/// Executes p on this thread's stream and waits.
void execute(const dnnl::primitive& p, const Args& args);

}  // namespace loom::onednn
