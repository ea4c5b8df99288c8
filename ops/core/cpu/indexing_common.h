#pragma once
// Helpers shared by the reference kernels of the indexing and sorting families
// (indexing.cpp, scatter.cpp, index_advanced.cpp, sorting.cpp): a strided walk over several
// operands at once, element copies by width, index tensors read as int64, out= handling, and
// PyTorch's spellings of dtypes in messages.

#include <absl/container/inlined_vector.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "cpu/elementwise.h"
#include "cpu/meta.h"
#include "cpu/strided_copy.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"

namespace loom::ops::cpu::indexing {

using Dims = absl::InlinedVector<int64_t, 6>;

inline Dims dims_of(IntArrayRef a) { return Dims(a.begin(), a.end()); }
inline IntArrayRef aref(const Dims& d) { return {d.data(), d.size()}; }

/// A new contiguous tensor (uninitialised) on the device of like (cpu, or meta: Note [Meta
/// kernels share the reference's setup] in cpu/meta.h).
inline Tensor new_empty(IntArrayRef sizes, DType dtype, const Tensor& like) {
  return Tensor::empty(sizes, options_like(like, dtype));
}

/// A new tensor of zeros on the device of like.
inline Tensor new_zeros(IntArrayRef sizes, DType dtype, const Tensor& like) {
  Tensor t = new_empty(sizes, dtype, like);
  if (t.numel() > 0 && !t.device().is_meta())
    std::memset(t.data_ptr(), 0, static_cast<size_t>(t.numel()) * t.element_size());
  return t;
}

/// Calls body(off) for every element of `sizes` in row-major order; off[k] is the element's
/// offset (in elements) in operand k, whose strides are strides[k] (one per dim of sizes).
/// A 0-dim walk visits one element; a walk with a zero size visits none.
template <size_t N, typename F>
void for_each_offset(IntArrayRef sizes, const std::array<IntArrayRef, N>& strides, F&& body) {
  const auto nd = static_cast<int64_t>(sizes.size());
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::array<int64_t, N> off{};
  if (nd == 0) {
    body(off);
    return;
  }
  const int64_t inner = sizes[nd - 1];
  std::array<int64_t, N> step;
  for (size_t k = 0; k < N; ++k) step[k] = strides[k][nd - 1];
  Dims idx(static_cast<size_t>(nd), 0);
  while (true) {
    std::array<int64_t, N> o = off;
    for (int64_t i = 0; i < inner; ++i) {
      body(o);
      for (size_t k = 0; k < N; ++k) o[k] += step[k];
    }
    int64_t d = nd - 2;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < sizes[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * sizes[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/// Calls f with a typed null pointer of the unsigned word as wide as one element: the copy
/// kernels move elements as words, so they serve every dtype without a type switch.
template <typename F>
decltype(auto) dispatch_word(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      return f(static_cast<uint8_t*>(nullptr));
    case 2:
      return f(static_cast<uint16_t*>(nullptr));
    case 4:
      return f(static_cast<uint32_t*>(nullptr));
    default:
      return f(static_cast<uint64_t*>(nullptr));
  }
}

/// The element pointer of t as T (storage bits for the 16-bit floats, a word for copies).
template <typename T>
inline T* data_as(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

/// The values of an int32 or int64 tensor (any strides) in row-major order.
inline std::vector<int64_t> index_values(const Tensor& index) {
  LOOM_CHECK_T(NotImplementedError, !index.device().is_meta(), "the values of the meta tensor ",
               index.describe(), " are unknown: this op's result depends on them");
  std::vector<int64_t> v;
  v.reserve(static_cast<size_t>(index.numel()));
  if (index.numel() == 0) return v;
  if (index.dtype() == DType::Int32) {
    const int32_t* p = data_as<int32_t>(index);
    for_each_offset<1>(index.sizes(), {index.strides()},
                       [&](const std::array<int64_t, 1>& o) { v.push_back(p[o[0]]); });
  } else {
    const int64_t* p = data_as<int64_t>(index);
    for_each_offset<1>(index.sizes(), {index.strides()},
                       [&](const std::array<int64_t, 1>& o) { v.push_back(p[o[0]]); });
  }
  return v;
}

/// Sizes and strides with a 0-dim tensor seen as one element of one dim, as PyTorch's
/// scatter/gather do (ensure_nonempty_dim / ensure_nonempty_size).
struct NonEmptyGeometry {
  Dims sizes, strides;
};
inline NonEmptyGeometry nonempty_geometry(const Tensor& t) {
  if (t.dim() == 0) return {{1}, {1}};
  return {dims_of(t.sizes()), dims_of(t.strides())};
}

/// Throws DeviceError unless every defined tensor is on the CPU, or every one on meta (these
/// kernels serve the CPU and the Meta key; an index tensor on another device would be read
/// through a host pointer).
inline void check_cpu(std::string_view op, std::initializer_list<TensorArg> args) {
  bool meta = false;
  for (const TensorArg& a : args) {
    if (a.tensor.defined()) {
      meta = a.tensor.device().is_meta();
      break;
    }
  }
  for (const TensorArg& a : args) {
    if (!a.tensor.defined()) continue;
    LOOM_CHECK_T(DeviceError, meta ? a.tensor.device().is_meta() : a.tensor.device().is_cpu(), op,
                 ": expected all tensors to be on the ", meta ? "meta" : "cpu", ", but got ",
                 a.name, " on ", a.tensor.device().str());
  }
}

/// Writes result into out (same dtype required): out takes result's sizes when they differ
/// and its storage is large enough (as resize_ does), then receives a copy; bumps its version.
inline void write_out(std::string_view op, const Tensor& out, const Tensor& result) {
  LOOM_CHECK_T(TypeError, out.dtype() == result.dtype(), op, ": expected out to have dtype ",
               dtype_name(result.dtype()), " but got ", dtype_name(out.dtype()));
  if (out.sizes() != result.sizes()) {
    const size_t need =
        static_cast<size_t>(out.storage_offset() + result.numel()) * out.element_size();
    LOOM_CHECK(need <= out.storage().nbytes(), op, ": out ", out.describe(),
               " cannot be resized to ", sizes_str(result.sizes()),
               " (its storage is too small; pass an out tensor of that size)");
    const DimVector strides = contiguous_strides(result.sizes());
    out.impl()->set_geometry(result.sizes(), {strides.data(), strides.size()},
                             out.storage_offset());
  }
  copy_same_dtype(out, result);
  out.bump_version();
}

/// PyTorch's floor division of integers (div with rounding_mode="floor").
template <typename T>
inline T floor_div(T a, T b) {
  T q = static_cast<T>(a / b);
  if ((a % b != 0) && ((a < 0) != (b < 0))) q = static_cast<T>(q - 1);
  return q;
}

}  // namespace loom::ops::cpu::indexing
