#pragma once
/// @file
/// TensorImpl: sizes, strides and offset over a Storage, plus a version
/// counter (shared by views) and a slot for autograd metadata.

#include <atomic>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>
#include <cstdint>
#include <memory>

#include "absl/container/inlined_vector.h"
#include "loom/core/array_ref.h"
#include "loom/core/dtype.h"
#include "loom/core/storage.h"
#include "loom/dispatcher/dispatch_key.h"

namespace loom {

/// Small vector used for sizes and strides: up to 5 dims without allocation.
using DimVector = absl::InlinedVector<int64_t, 5>;
/// A read-only view of sizes, strides or any list of int64.
using IntArrayRef = ArrayRef<int64_t>;

/// The version counter shared by a tensor and all its views. In-place ops bump
/// it; autograd compares it with the version saved at forward time.
class VersionCounter : public boost::intrusive_ref_counter<VersionCounter> {
 public:
  /// Current version.
  uint32_t current() const { return version_.load(std::memory_order_relaxed); }
  /// Increments the version (an in-place write happened).
  void bump() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> version_{0};
};

namespace autograd {
struct AutogradMeta;
}  // namespace autograd

/// The state of one tensor. Use through loom::Tensor.
class TensorImpl : public boost::intrusive_ref_counter<TensorImpl> {
 public:
  /// A tensor over storage with the given geometry. Throws ValueError if the
  /// geometry reaches outside the storage.
  TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
             int64_t storage_offset);
  virtual ~TensorImpl();

  /// Sizes per dimension.
  IntArrayRef sizes() const { return {sizes_.data(), sizes_.size()}; }
  /// Strides per dimension, in elements.
  IntArrayRef strides() const { return {strides_.data(), strides_.size()}; }
  /// Number of dimensions.
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  /// Number of elements.
  int64_t numel() const { return numel_; }
  /// Offset of element 0 into the storage, in elements.
  int64_t storage_offset() const { return storage_offset_; }
  /// Element type.
  DType dtype() const { return dtype_; }
  /// Device of the storage.
  Device device() const { return storage_.device(); }
  /// The storage (shared with views).
  const Storage& storage() const { return storage_; }
  /// Address of element 0; nullptr for a tensor without elements (as PyTorch's data_ptr()).
  void* data() const {
    // An empty tensor's storage may have no memory, and offsetting a null pointer (or one
    // past the end of the storage) is undefined.
    char* base = static_cast<char*>(storage_.data());
    if (numel_ == 0 || base == nullptr) return nullptr;
    return base + storage_offset_ * static_cast<int64_t>(element_size(dtype_));
  }
  /// True if row-major contiguous (size-1 dims may have any stride).
  bool is_contiguous() const { return is_contiguous_; }
  /// Keys this tensor contributes to a call's key set: its backend key, plus Autograd while it
  /// requires grad (Note [Autograd key]).
  DispatchKeySet key_set() const { return key_set_; }

  /// The version counter (shared with views).
  const boost::intrusive_ptr<VersionCounter>& version_counter() const { return version_; }
  /// Current version.
  uint32_t version() const { return version_->current(); }
  /// Records an in-place write.
  void bump_version() { version_->bump(); }
  /// Makes this tensor share other's version counter (used when creating views).
  void share_version_counter(const TensorImpl& other) { version_ = other.version_; }

  /// The autograd metadata (loom/autograd/meta.h), or nullptr for a tensor that never took
  /// part in autograd.
  autograd::AutogradMeta* autograd_meta() const { return autograd_meta_.get(); }
  /// The autograd metadata, created on first use.
  autograd::AutogradMeta& mutable_autograd_meta();
  /// Whether gradients are recorded: a leaf with requires_grad set, or a tensor with a grad_fn.
  bool requires_grad() const { return key_set_.has(DispatchKey::Autograd); }
  /// Sets requires_grad on a leaf. Throws TypeError for a non-floating dtype, ValueError on a
  /// non-leaf (PyTorch: "you can only change requires_grad flags of leaf variables").
  void set_requires_grad(bool value);
  /// Recomputes the Autograd bit of key_set() after the metadata changed (Note [Autograd key]).
  void refresh_autograd_key();
  /// True for a tensor made under InferenceMode (it can never be saved for backward).
  bool is_inference() const { return is_inference_; }

  /// Replaces sizes/strides/offset (for in-place shape ops). Same checks as the constructor.
  void set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
  /// PyTorch's resize_: contiguous geometry of sizes at the same storage offset; the
  /// storage grows (keeping its bytes) when it is too small, and never shrinks.
  void resize_contiguous(IntArrayRef sizes);

 private:
  void refresh();
  Storage storage_;
  DimVector sizes_, strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 0;
  DType dtype_;
  bool is_contiguous_ = true;
  DispatchKeySet key_set_;
  boost::intrusive_ptr<VersionCounter> version_;
  std::unique_ptr<autograd::AutogradMeta> autograd_meta_;
  bool is_inference_ = false;
};

/// Row-major contiguous strides for sizes.
DimVector contiguous_strides(IntArrayRef sizes);

}  // namespace loom
