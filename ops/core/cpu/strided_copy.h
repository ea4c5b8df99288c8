#pragma once
// A same-dtype strided element copy for the reference CPU kernels: the copies that
// reshape, flatten, cat, stack, repeat, flip, roll, tril and triu make. It moves bytes
// (1, 2, 4 or 8 per element), so it serves every dtype without a type switch, and works on
// raw (pointer, strides) pairs, so a source may run backwards (negative strides, as flip
// needs) or repeat itself (zero strides, as repeat and expand do).

#include <cstdint>
#include <cstring>
#include <vector>

#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"

namespace loom::ops::cpu {

namespace detail {

template <typename Word>
void copy_strided_words(char* dst, const int64_t* dst_strides, const char* src,
                        const int64_t* src_strides, const int64_t* sizes, int64_t ndim) {
  // The innermost dimension is a tight loop; the outer ones are walked with an index
  // vector, so there is no recursion and no per-element index arithmetic.
  const int64_t n_inner = ndim == 0 ? 1 : sizes[ndim - 1];
  const int64_t ds = ndim == 0 ? 0 : dst_strides[ndim - 1];
  const int64_t ss = ndim == 0 ? 0 : src_strides[ndim - 1];
  const int64_t outer_dims = ndim == 0 ? 0 : ndim - 1;
  std::vector<int64_t> idx(static_cast<size_t>(outer_dims), 0);
  while (true) {
    Word* d = reinterpret_cast<Word*>(dst);
    const Word* s = reinterpret_cast<const Word*>(src);
    if (ds == 1 && ss == 1) {
      std::memcpy(d, s, static_cast<size_t>(n_inner) * sizeof(Word));
    } else {
      for (int64_t i = 0; i < n_inner; ++i) d[i * ds] = s[i * ss];
    }
    int64_t k = outer_dims - 1;
    for (; k >= 0; --k) {
      dst += dst_strides[k] * static_cast<int64_t>(sizeof(Word));
      src += src_strides[k] * static_cast<int64_t>(sizeof(Word));
      if (++idx[k] < sizes[k]) break;
      dst -= dst_strides[k] * sizes[k] * static_cast<int64_t>(sizeof(Word));
      src -= src_strides[k] * sizes[k] * static_cast<int64_t>(sizeof(Word));
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

}  // namespace detail

/// Copies the elements of a (src, src_strides) layout into (dst, dst_strides), both of the
/// given sizes, element_size bytes each (1, 2, 4 or 8); strides are in elements and may be
/// negative or zero in the source. Nothing happens when any size is 0.
///
/// Dimensions of size 1 are dropped and neighbours that are contiguous in both layouts are
/// merged first, so a contiguous-to-contiguous copy is one memcpy; large copies split their
/// outermost dimension across OpenMP threads.
inline void copy_strided(void* dst, IntArrayRef dst_strides, const void* src,
                         IntArrayRef src_strides, IntArrayRef sizes, size_t element_size) {
  std::vector<int64_t> sz, ds, ss;
  int64_t numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return;
    numel *= sizes[i];
    if (sizes[i] == 1) continue;
    if (!sz.empty() && ds.back() == dst_strides[i] * sizes[i] &&
        ss.back() == src_strides[i] * sizes[i]) {
      sz.back() *= sizes[i];
      ds.back() = dst_strides[i];
      ss.back() = src_strides[i];
      continue;
    }
    sz.push_back(sizes[i]);
    ds.push_back(dst_strides[i]);
    ss.push_back(src_strides[i]);
  }
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const auto nd = static_cast<int64_t>(sz.size());
  auto run = [&](char* d0, const char* s0, const int64_t* sizes0, const int64_t* ds0,
                 const int64_t* ss0, int64_t n) {
    switch (element_size) {
      case 1:
        return detail::copy_strided_words<uint8_t>(d0, ds0, s0, ss0, sizes0, n);
      case 2:
        return detail::copy_strided_words<uint16_t>(d0, ds0, s0, ss0, sizes0, n);
      case 4:
        return detail::copy_strided_words<uint32_t>(d0, ds0, s0, ss0, sizes0, n);
      case 8:
        return detail::copy_strided_words<uint64_t>(d0, ds0, s0, ss0, sizes0, n);
    }
  };
  LOOM_CHECK_T(TypeError,
               element_size == 1 || element_size == 2 || element_size == 4 || element_size == 8,
               "copy_strided: unsupported element size ", element_size);
  // Below ~1 MiB a copy is faster on one thread than the cost of waking others.
  constexpr int64_t kParallelBytes = int64_t{1} << 20;
  if (nd >= 2 && numel * static_cast<int64_t>(element_size) >= kParallelBytes) {
    const auto es = static_cast<int64_t>(element_size);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < sz[0]; ++i) {
      run(d + i * ds[0] * es, s + i * ss[0] * es, sz.data() + 1, ds.data() + 1, ss.data() + 1,
          nd - 1);
    }
    return;
  }
  run(d, s, sz.data(), ds.data(), ss.data(), nd);
}

/// Copies src into dst element by element: same sizes, same dtype, any strides (dst must
/// not overlap itself or src).
inline void copy_same_dtype(const Tensor& dst, const Tensor& src) {
  LOOM_CHECK(dst.sizes() == src.sizes(), "copy_same_dtype: destination sizes ",
             sizes_str(dst.sizes()), " differ from source sizes ", sizes_str(src.sizes()));
  LOOM_CHECK_T(TypeError, dst.dtype() == src.dtype(), "copy_same_dtype: destination dtype ",
               dtype_name(dst.dtype()), " differs from source dtype ", dtype_name(src.dtype()));
  if (dst.numel() == 0 || dst.device().is_meta()) return;  // meta: no data to copy
  copy_strided(dst.data_ptr(), dst.strides(), src.data_ptr(), src.strides(), src.sizes(),
               src.element_size());
}

/// A new contiguous tensor holding a copy of src (same dtype and device).
inline Tensor contiguous_copy(const Tensor& src) {
  Tensor out = Tensor::empty(src.sizes(), TensorOptions{}.with(src.dtype()).with(src.device()));
  copy_same_dtype(out, src);
  return out;
}

}  // namespace loom::ops::cpu
