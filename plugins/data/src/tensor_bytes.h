#pragma once
// Private helpers of loom_data: raw element copies that need no op pack.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom::data::detail {

/// Copies the elements of a strided array (sizes, strides in elements, element size
/// elem) starting at src into dst in C order.
inline void copy_strided(char* dst, const char* src, IntArrayRef sizes, IntArrayRef strides,
                         size_t elem) {
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return;
  if (ndim == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  std::vector<int64_t> idx(ndim, 0);
  const int64_t inner = sizes[ndim - 1], inner_stride = strides[ndim - 1];
  for (int64_t done = 0; done < numel; done += inner) {
    int64_t offset = 0;
    for (int64_t d = 0; d < ndim - 1; ++d) offset += idx[d] * strides[d];
    const char* row = src + offset * static_cast<int64_t>(elem);
    if (inner_stride == 1) {
      std::memcpy(dst, row, inner * elem);
      dst += inner * elem;
    } else {
      for (int64_t i = 0; i < inner; ++i, dst += elem)
        std::memcpy(dst, row + i * inner_stride * static_cast<int64_t>(elem), elem);
    }
    for (int64_t d = ndim - 2; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

/// t on the CPU and contiguous (t itself when it already is); a core-only copy otherwise.
inline Tensor cpu_contiguous(const Tensor& t) {
  Tensor cpu = t.device().is_cpu() ? t : t.to(Device());
  if (cpu.is_contiguous()) return cpu;
  Tensor out = Tensor::empty(cpu.sizes(), TensorOptions{}.with(cpu.dtype()));
  copy_strided(static_cast<char*>(out.data_ptr()),
               static_cast<const char*>(cpu.storage().data()) +
                   cpu.storage_offset() * static_cast<int64_t>(cpu.element_size()),
               cpu.sizes(), cpu.strides(), cpu.element_size());
  return out;
}

}  // namespace loom::data::detail
