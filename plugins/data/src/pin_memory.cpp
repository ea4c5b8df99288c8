// Pinned host memory for batches (loom/data/dataloader.h, Note [Pinned batches]).
#include <cstring>

#include "loom/core/device_hooks.h"
#include "loom/data/dataloader.h"
#include "loom/ops/tensor_methods.h"

namespace loom::data {

Allocator* pinned_host_allocator() {
  // The device type exists only once its plugin is loaded; without a device, cudaHostAlloc
  // would fail, so the allocator is not offered then (PyTorch's DataLoader warns and does
  // not pin in that case; here the flag is documented as a no-op without a GPU).
  if (!DeviceType::is_registered("cuda")) return nullptr;
  const DeviceHooks* hooks = find_device_hooks(DeviceType::from_name("cuda"));
  if (hooks == nullptr || hooks->device_count() <= 0) return nullptr;
  return hooks->pinned_host_allocator();
}

bool is_pinned(const Tensor& t, Allocator* allocator) {
  return allocator != nullptr && t.defined() && t.storage().impl() != nullptr &&
         t.storage().impl()->allocator() == allocator;
}

Tensor pin_memory(const Tensor& t, Allocator* allocator) {
  if (allocator == nullptr || !t.defined() || !t.device().is_cpu() || is_pinned(t, allocator)) {
    return t;
  }
  const Tensor src = t.contiguous();
  const size_t nbytes = static_cast<size_t>(src.numel()) * src.element_size();
  Storage storage(boost::intrusive_ptr<StorageImpl>(new StorageImpl(nbytes, *allocator, 0)));
  // The block is host memory: a tensor over it is a CPU tensor whatever the allocator's type.
  LOOM_CHECK_T(DeviceError, storage.device().is_cpu(), "pin_memory: the pinned allocator '",
               allocator->name(), "' returned memory on ", storage.device().str(),
               ", expected host memory (cpu)");
  const DimVector strides = contiguous_strides(src.sizes());
  Tensor out(boost::intrusive_ptr<TensorImpl>(
      new TensorImpl(std::move(storage), src.dtype(), src.sizes(),
                     IntArrayRef(strides.data(), strides.size()), 0)));
  if (nbytes > 0) std::memcpy(out.data_ptr(), src.data_ptr(), nbytes);
  return out;
}

}  // namespace loom::data
