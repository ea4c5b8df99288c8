#include "loom/core/storage.h"

#include <algorithm>

#include "loom/core/error.h"
#include "loom/core/memory.h"

namespace loom {

// Storages made by an allocator report to the memory diagnostics while someone listens
// (loom/core/memory.h: the profiler's memory events, the history); adopted memory does not.
StorageImpl::StorageImpl(size_t nbytes, Allocator& allocator, int16_t device_index)
    : data_(allocator.allocate(nbytes, device_index)), nbytes_(nbytes), allocator_(&allocator) {
  if (memory::detail::tracking()) memory::detail::on_alloc(this, device(), nbytes_, data_.get());
}

StorageImpl::~StorageImpl() {
  if (allocator_ != nullptr && memory::detail::tracking()) {
    memory::detail::on_free(this, device(), nbytes_);
  }
}

StorageImpl::StorageImpl(DataPtr data, size_t nbytes, Allocator* allocator)
    : data_(std::move(data)), nbytes_(nbytes), allocator_(allocator) {}

void StorageImpl::resize(size_t nbytes) {
  LOOM_CHECK(allocator_ != nullptr, "Trying to resize storage that is not resizable (its memory ",
             "was adopted from outside Loom, e.g. by from_blob)");
  if (nbytes == nbytes_) return;
  DataPtr fresh = allocator_->allocate(nbytes, data_.device().index() < 0 ? 0 : data_.device().index());
  const size_t keep = std::min(nbytes, nbytes_);
  if (keep > 0) allocator_->copy_data(fresh.get(), data_.get(), keep);
  if (memory::detail::tracking()) memory::detail::on_free(this, device(), nbytes_);
  data_ = std::move(fresh);
  nbytes_ = nbytes;
  if (memory::detail::tracking()) memory::detail::on_alloc(this, device(), nbytes_, data_.get());
}

Storage Storage::allocate(size_t nbytes, Device device) {
  LOOM_CHECK_T(DeviceError, !device.is_cpu() || device.index() <= 0,
               "CPU device index must be -1 or zero, got ", device.index());
  Allocator& a = get_allocator(device.type());
  const int16_t index = device.index() < 0 ? 0 : device.index();
  return Storage(boost::intrusive_ptr<StorageImpl>(new StorageImpl(nbytes, a, index)));
}

}  // namespace loom
