#pragma once
/// @file
/// Memory formats of 4-d activations (Note [Memory format]): channels-last detection with
/// PyTorch's rule, channels-last strides, and conversion. Header-only, shared by the reference
/// nn kernels, the oneDNN provider and the nn library (Module::to(MemoryFormat)).
///
/// Note [Memory format]: a channels-last tensor is an ordinary strided Loom tensor whose
/// strides put C innermost ([N, C, H, W] with strides {H*W*C, 1, W*C, C}). The convolution,
/// pooling and batch-norm kernels give a channels-last result, and channels-last gradients,
/// when their input (or a convolution's weight) *suggests* channels-last; every other input
/// gets a contiguous result. "Suggests" is PyTorch's stride rule (is_strides_like_channels_last
/// behind suggest_memory_format): walking C, W, H, N, each stride at least the extent of the
/// dims inside it, and N's stride not equal to C's. The rule looks at the strides themselves,
/// size-1 dims included, so a [N, 1, H, W] tensor made channels-last ({H*W, 1, W, 1}) suggests
/// channels-last while the contiguous one ({H*W, H*W, W, 1}) does not, although both are
/// contiguous: a model converted with Module::to(MemoryFormat::ChannelsLast) runs channels-last
/// from its first convolution on a 1-channel image. Pointwise ops keep the layout of their
/// first dense input (the TensorIterator), so relu and add keep channels-last between layers.
///
/// The int values are the dispatcher's (`channels_last` in a schema default is 2).
/// TODO(core): this enum and to_memory_format belong in the core (Tensor::contiguous(format));
/// they live here until the core has them.

#include <cstdint>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/ops/pointwise.h"
#include "loom/ops/tensor_methods.h"

namespace loom {

/// How a tensor's elements are laid out in memory (PyTorch's torch.memory_format).
enum class MemoryFormat : int64_t {
  Contiguous = 0,      ///< row-major, last dim innermost
  Preserve = 1,        ///< keep the source's layout (conversions only)
  ChannelsLast = 2,    ///< 4-d [N, C, H, W] stored N, H, W, C
  ChannelsLast3d = 3,  ///< 5-d [N, C, D, H, W] stored N, D, H, W, C
};

/// "torch.contiguous_format", "torch.channels_last", ... (for messages).
inline const char* memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return "torch.contiguous_format";
    case MemoryFormat::Preserve: return "torch.preserve_format";
    case MemoryFormat::ChannelsLast: return "torch.channels_last";
    case MemoryFormat::ChannelsLast3d: return "torch.channels_last_3d";
  }
  return "unknown memory format";
}

/// Channels-last strides of sizes ([N, C, spatial...], 3 dims or more): C innermost, then
/// the spatial dims from last to first, then N. Size-0 dims count as 1.
inline std::vector<int64_t> channels_last_strides(IntArrayRef sizes) {
  const size_t n = sizes.size();
  if (n < 3) return {};
  std::vector<int64_t> st(n, 1);
  int64_t run = 1;
  st[1] = run;
  run *= sizes[1] > 1 ? sizes[1] : 1;
  for (size_t d = n - 1; d >= 2; --d) {
    st[d] = run;
    run *= sizes[d] > 1 ? sizes[d] : 1;
  }
  st[0] = run;
  return st;
}

/// True when t (4-d or 5-d) suggests channels-last by PyTorch's stride rule (Note [Memory
/// format]); false for other ranks.
inline bool suggests_channels_last(const Tensor& t) {
  const int64_t n = t.dim();
  if (n != 4 && n != 5) return false;
  // The walk, innermost first: C, then the spatial dims last to first, then N.
  int64_t order[5] = {1, 0, 0, 0, 0};
  for (int64_t i = 1; i < n - 1; ++i) order[i] = n - i;
  order[n - 1] = 0;
  int64_t min = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = order[i];
    const int64_t s = t.stride(d);
    if (s == 0 || s < min) return false;
    // N's stride equal to C's: an ambiguous [N, 1, 1, 1]-like case that PyTorch leaves
    // contiguous.
    if (d == 0 && min == t.stride(1)) return false;
    min = s;
    if (t.size(d) > 1) min *= t.size(d);
  }
  return true;
}

/// True when t is laid out exactly channels-last (dense; size-1 dims may carry any stride).
inline bool is_channels_last_dense(const Tensor& t) {
  if (t.dim() != 4 && t.dim() != 5) return false;
  const std::vector<int64_t> want = channels_last_strides(t.sizes());
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) != want[static_cast<size_t>(d)]) return false;
  }
  return true;
}

/// A new uninitialised tensor of sizes, laid out channels-last, with options.
inline Tensor empty_channels_last(IntArrayRef sizes, TensorOptions options = {}) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return Tensor::empty({n}, options).as_strided_view(sizes, channels_last_strides(sizes), 0);
}

/// A new uninitialised tensor of sizes whose layout follows the memory format a kernel's
/// input suggests: channels-last when `channels_last`, else contiguous.
inline Tensor empty_in_format(IntArrayRef sizes, TensorOptions options, bool channels_last) {
  return channels_last && (sizes.size() == 4 || sizes.size() == 5)
             ? empty_channels_last(sizes, options)
             : Tensor::empty(sizes, options);
}

/// t laid out in format: t itself when it already is (exactly, for channels-last; is_contiguous
/// for Contiguous), else a copy. ChannelsLast needs a 4-d tensor and ChannelsLast3d a 5-d
/// one (PyTorch's "required rank 4 tensor to use channels_last format"). Preserve returns t.
/// The copy is made with copy_, so it is recorded by autograd like any copy.
inline Tensor to_memory_format(const Tensor& t, MemoryFormat format) {
  switch (format) {
    case MemoryFormat::Preserve: return t;
    case MemoryFormat::Contiguous: return t.is_contiguous() ? t : t.contiguous();
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d: {
      const int64_t rank = format == MemoryFormat::ChannelsLast ? 4 : 5;
      LOOM_CHECK(t.dim() == rank, "required rank ", rank, " tensor to use ",
                 format == MemoryFormat::ChannelsLast ? "channels_last" : "channels_last_3d",
                 " format");
      if (is_channels_last_dense(t) && suggests_channels_last(t)) return t;
      Tensor out = empty_channels_last(t.sizes(), TensorOptions{}.with(t.dtype()).with(t.device()));
      loom::copy_(out, t);
      return out;
    }
  }
  return t;
}

}  // namespace loom
