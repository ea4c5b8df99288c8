#include "loom/core/tensor_impl.h"

#include <atomic>

#include "loom/core/error.h"
#include "loom/core/tensor.h"

namespace loom {
namespace {
class DefaultAutogradMeta final : public AutogradMetaInterface {
 public:
  bool requires_grad() const override { return requires_grad_; }
  void set_requires_grad(bool value) override { requires_grad_ = value; }

 private:
  bool requires_grad_ = false;
};
std::unique_ptr<AutogradMetaInterface> make_default_meta() {
  return std::make_unique<DefaultAutogradMeta>();
}
std::atomic<AutogradMetaFactory> g_meta_factory{&make_default_meta};
}  // namespace

AutogradMetaFactory set_autograd_meta_factory(AutogradMetaFactory factory) {
  return g_meta_factory.exchange(factory ? factory : &make_default_meta);
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

TensorImpl::TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)), dtype_(dtype), version_(new VersionCounter()) {
  set_geometry(sizes, strides, storage_offset);
}

void TensorImpl::resize_contiguous(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t numel = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    LOOM_CHECK(sizes[i] >= 0, "Trying to create tensor with negative dimension ", sizes[i], ": ",
               sizes_str(sizes));
    strides[i] = numel;
    numel *= std::max<int64_t>(sizes[i], 1);
  }
  bool empty = false;
  for (int64_t s : sizes) empty |= s == 0;
  const size_t need =
      empty ? 0 : static_cast<size_t>(storage_offset_ + numel) * element_size(dtype_);
  if (need > storage_.nbytes()) {
    LOOM_CHECK(storage_.defined(), "resize_: the tensor has no storage");
    storage_.impl()->resize(need);
  }
  set_geometry(sizes, {strides.data(), strides.size()}, storage_offset_);
}

void TensorImpl::set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  LOOM_CHECK(sizes.size() == strides.size(), "tensor geometry: sizes ", sizes_str(sizes),
             " and strides ", sizes_str(strides), " have different lengths");
  LOOM_CHECK(storage_offset >= 0, "tensor geometry: negative storage offset ", storage_offset);
  // Checked arithmetic: as_strided lets a caller pass any sizes and strides, and a wrapped
  // product would let a view reach outside its storage.
  int64_t numel = 1, max_offset = storage_offset;
  bool empty = false, overflow = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    LOOM_CHECK(sizes[i] >= 0, "tensor geometry: negative size ", sizes[i], " in dimension ", i,
               " of sizes ", sizes_str(sizes));
    LOOM_CHECK(strides[i] >= 0, "tensor geometry: negative stride ", strides[i], " in dimension ",
               i, " (strides ", sizes_str(strides), ")");
    if (sizes[i] == 0) empty = true;
    overflow |= __builtin_mul_overflow(numel, sizes[i], &numel);
    int64_t span = 0;
    overflow |= __builtin_mul_overflow(std::max<int64_t>(sizes[i] - 1, 0), strides[i], &span);
    overflow |= __builtin_add_overflow(max_offset, span, &max_offset);
  }
  int64_t needed = 0;
  if (empty) {
    numel = 0;  // no element is ever addressed, whatever the other sizes and strides
  } else {
    overflow |= __builtin_add_overflow(max_offset, 1, &needed);
    overflow |= __builtin_mul_overflow(needed, static_cast<int64_t>(element_size(dtype_)), &needed);
    LOOM_CHECK(!overflow, "tensor geometry: sizes ", sizes_str(sizes), ", strides ",
               sizes_str(strides), " and offset ", storage_offset,
               " overflow the addressable range (the storage holds ", storage_.nbytes(), " bytes)");
  }
  LOOM_CHECK(needed <= static_cast<int64_t>(storage_.nbytes()), "tensor geometry: sizes ",
             sizes_str(sizes), ", strides ", sizes_str(strides), " and offset ", storage_offset,
             " need ", needed, " bytes but the storage holds ", storage_.nbytes());
  sizes_.assign(sizes.begin(), sizes.end());
  strides_.assign(strides.begin(), strides.end());
  storage_offset_ = storage_offset;
  numel_ = numel;
  refresh();
}

void TensorImpl::refresh() {
  is_contiguous_ = true;
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) {
      is_contiguous_ = numel_ == 0;
      break;
    }
    expected *= sizes_[i];
  }
  key_set_ = DispatchKeySet(backend_key(device().type())).add(DispatchKey::Autograd);
}

void TensorImpl::set_requires_grad(bool value) {
  LOOM_CHECK_T(TypeError, !value || is_floating_point(dtype_),
               "only Tensors of floating point dtype can require gradients (got ",
               dtype_name(dtype_), ")");
  if (!autograd_meta_) {
    if (!value) return;
    autograd_meta_ = g_meta_factory.load()();
  }
  autograd_meta_->set_requires_grad(value);
}

}  // namespace loom
