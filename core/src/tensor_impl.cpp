#include "loom/core/tensor_impl.h"

#include <atomic>

#include "loom/core/error.h"
#include "loom/autograd/grad_mode.h"
#include "loom/autograd/meta.h"
#include "loom/core/tensor.h"

namespace loom {
DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    // Even a tensor without elements needs strides that fit (size-0 dims count as 1).
    if (i > 0 && __builtin_mul_overflow(s, std::max<int64_t>(sizes[i], 1), &s)) {
      LOOM_THROW(ValueError, "sizes ", sizes_str(sizes),
                 " are too large: their contiguous strides overflow int64");
    }
  }
  return strides;
}

TensorImpl::TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      version_(new VersionCounter()),
      is_inference_(autograd::InferenceMode::is_enabled()) {
  // A DType made from an integer (DType(42)) would index past every per-dtype table.
  LOOM_CHECK_T(TypeError, static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < kNumDTypes,
               "invalid dtype value ", static_cast<int>(dtype), " (valid values are 0 to ",
               kNumDTypes - 1, ")");
  set_geometry(sizes, strides, storage_offset);
}

TensorImpl::~TensorImpl() = default;

autograd::AutogradMeta& TensorImpl::mutable_autograd_meta() {
  if (!autograd_meta_) autograd_meta_ = std::make_unique<autograd::AutogradMeta>();
  return *autograd_meta_;
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
  key_set_ = DispatchKeySet(backend_key(device().type()));
  refresh_autograd_key();
}

// Note [Autograd key]: a tensor carries the Autograd key only while it requires grad, so a
// call on plain tensors goes straight to its backend kernel and pays nothing for autograd
// (PyTorch always sets the key and tests requires_grad inside every VariableType kernel).
// The metadata changes through the engine, which calls this after each change.
void TensorImpl::refresh_autograd_key() {
  const bool rg = autograd_meta_ && (autograd_meta_->requires_grad || autograd_meta_->grad_fn);
  key_set_ = rg ? key_set_.add(DispatchKey::Autograd) : key_set_.remove(DispatchKey::Autograd);
}

void TensorImpl::set_requires_grad(bool value) {
  LOOM_CHECK_T(TypeError, !value || is_floating_point(dtype_),
               "only Tensors of floating point dtype can require gradients (got ",
               dtype_name(dtype_), ")");
  if (!autograd_meta_ && !value) return;
  autograd::AutogradMeta& meta = mutable_autograd_meta();
  LOOM_CHECK(!meta.grad_fn || value,
             "you can only change requires_grad flags of leaf variables. If you want to use a "
             "computed variable in a subgraph that doesn't require differentiation use "
             "var_no_grad = var.detach().");
  meta.requires_grad = value && !meta.grad_fn;
  refresh_autograd_key();
}

}  // namespace loom
