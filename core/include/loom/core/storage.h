#pragma once
/// @file
/// Storage: a refcounted block of device memory, owned through its allocator.

#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include "loom/core/allocator.h"

namespace loom {

/// The shared state behind a Storage handle. Several tensors (views) may share one.
class StorageImpl : public boost::intrusive_ref_counter<StorageImpl> {
 public:
  /// Allocates nbytes from allocator, on device device_index of its type.
  StorageImpl(size_t nbytes, Allocator& allocator, int16_t device_index = 0);
  /// Adopts existing memory (e.g. a user buffer with its own deleter); allocator may be null.
  StorageImpl(DataPtr data, size_t nbytes, Allocator* allocator);
  /// Releases the memory (through its DataPtr).
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  /// The memory.
  void* data() const { return data_.get(); }
  /// The size in bytes.
  size_t nbytes() const { return nbytes_; }
  /// The device the memory lives on.
  Device device() const { return data_.device(); }
  /// The allocator that made it (nullptr for adopted memory).
  Allocator* allocator() const { return allocator_; }
  /// Gives the storage nbytes of new memory from its allocator, keeping the first
  /// min(old, new) bytes; every tensor sharing it sees the new memory (PyTorch's storage
  /// resize). Throws loom::Error for adopted memory ("Trying to resize storage that is not
  /// resizable").
  void resize(size_t nbytes);

 private:
  DataPtr data_;
  size_t nbytes_;
  Allocator* allocator_;
};

/// A handle on a StorageImpl (intrusive refcount; copying shares the memory).
class Storage {
 public:
  /// No storage.
  Storage() = default;
  /// Wraps an impl.
  explicit Storage(boost::intrusive_ptr<StorageImpl> impl) : impl_(std::move(impl)) {}
  /// Allocates nbytes on the device type's registered allocator.
  static Storage allocate(size_t nbytes, Device device);
  /// True if a storage is held.
  bool defined() const { return static_cast<bool>(impl_); }
  /// The memory.
  void* data() const { return impl_ ? impl_->data() : nullptr; }
  /// Size in bytes.
  size_t nbytes() const { return impl_ ? impl_->nbytes() : 0; }
  /// Device of the memory.
  Device device() const { return impl_ ? impl_->device() : Device(); }
  /// Number of handles sharing the storage.
  long use_count() const { return impl_ ? static_cast<long>(impl_->use_count()) : 0; }
  /// The impl.
  StorageImpl* impl() const { return impl_.get(); }
  /// True if both handles share one StorageImpl.
  bool is_alias_of(const Storage& o) const { return impl_ == o.impl_; }

 private:
  boost::intrusive_ptr<StorageImpl> impl_;
};

}  // namespace loom
