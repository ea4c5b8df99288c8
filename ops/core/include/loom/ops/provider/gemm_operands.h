#pragma once
/// @file
/// What every CPU provider of the matmul family (cpu_mkl's sgemm, cpu_onednn's matmul
/// primitive) decides the same way before it calls its library: which calls are big enough
/// to take, whether an out= tensor may be written, whether an added input broadcasts to the
/// result, and the copy of that input into the result that a GEMM's beta * C then reads.
/// A provider hands every other call on to the next one (Note [Next provider] in
/// dispatcher.h), so these rules only ever choose between taking a call and handing it on;
/// the checks and their messages are the reference's (loom/ops/meta/linalg.h).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "loom/core/device.h"
#include "loom/core/dtype.h"
#include "loom/core/tensor.h"

namespace loom::provider {

/// The multiply-adds of a product whose result has out_sizes and whose inner size is k,
/// saturating at INT64_MAX (expanded views can name products no int64 holds).
inline int64_t multiply_adds(IntArrayRef out_sizes, int64_t k) {
  int64_t n = k;
  for (int64_t s : out_sizes) {
    if (__builtin_mul_overflow(n, s, &n)) return INT64_MAX;
  }
  return n;
}

/// True when self @ mat2 is an mm (two matrices whose inner sizes agree) of more than
/// max_handed_on multiply-adds: smaller ones are cheaper in the reference's unpacked loop
/// than a library call's fixed cost.
inline bool mm_shapes(const Tensor& self, const Tensor& mat2, int64_t max_handed_on) {
  return self.dim() == 2 && mat2.dim() == 2 && self.size(1) == mat2.size(0) &&
         multiply_adds({self.size(0), mat2.size(1)}, self.size(1)) > max_handed_on;
}

/// True when self @ mat2 is a bmm (two batches of one count whose inner sizes agree) of more
/// than max_handed_on multiply-adds, all batches together.
inline bool bmm_shapes(const Tensor& self, const Tensor& mat2, int64_t max_handed_on) {
  return self.dim() == 3 && mat2.dim() == 3 && self.size(0) == mat2.size(0) &&
         self.size(2) == mat2.size(1) &&
         multiply_adds({self.size(0), self.size(1), mat2.size(2)}, self.size(2)) > max_handed_on;
}

/// True when out shares memory with a non-empty t (the reference then computes into a
/// temporary; a provider hands such calls on).
inline bool overlaps(const Tensor& out, const Tensor& t) {
  return t.defined() && t.numel() > 0 && out.is_alias_of(t);
}

/// True when an out= tensor may take the product of a and b before it is resized: defined,
/// of a's dtype, on the CPU, and sharing no memory with a or b.
inline bool out_takes(const Tensor& out, const Tensor& a, const Tensor& b) {
  return out.defined() && out.dtype() == a.dtype() && out.device().type() == DeviceType::cpu() &&
         !overlaps(out, a) && !overlaps(out, b);
}

/// True when out is self, seen through the same view (addmm_ spelled as out=), and already
/// has the result's sizes: a GEMM's beta * C then reads self in place.
inline bool out_is_self(const Tensor& out, const Tensor& self, IntArrayRef sizes) {
  return out.sizes() == sizes &&
         (self.is_same(out) ||
          (self.is_alias_of(out) && self.sizes() == out.sizes() &&
           self.strides() == out.strides() && self.storage_offset() == out.storage_offset()));
}

/// True when self broadcasts to sizes (right-aligned, each dim equal or 1).
inline bool broadcasts_to(const Tensor& self, IntArrayRef sizes) {
  const auto n = static_cast<int64_t>(sizes.size());
  if (self.dim() > n) return false;
  for (int64_t e = self.dim() - 1, d = n - 1; e >= 0; --e, --d) {
    if (self.size(e) != sizes[d] && self.size(e) != 1) return false;
  }
  return true;
}

/// out = self broadcast to out's sizes (out is 2-D or 3-D, float32, any strides; self
/// broadcasts to it, checked by the caller).
inline void copy_broadcast(const Tensor& self, const Tensor& out) {
  const int64_t r = out.dim();
  int64_t size[3] = {1, 1, 1}, os[3] = {0, 0, 0}, ss[3] = {0, 0, 0};
  for (int64_t d = 0; d < r; ++d) {
    const int64_t i = 3 - r + d, e = self.dim() - r + d;
    size[i] = out.size(d);
    os[i] = out.stride(d);
    ss[i] = e >= 0 && self.size(e) != 1 ? self.stride(e) : 0;
  }
  const float* s = self.data_ptr<float>();
  float* o = out.data_ptr<float>();
#pragma omp parallel for collapse(2) if (out.numel() >= 65536)
  for (int64_t i = 0; i < size[0]; ++i) {
    for (int64_t j = 0; j < size[1]; ++j) {
      const float* srow = s + i * ss[0] + j * ss[1];
      float* orow = o + i * os[0] + j * os[1];
      for (int64_t k = 0; k < size[2]; ++k) orow[k * os[2]] = srow[k * ss[2]];
    }
  }
}

/// matmul's batch dims: self's and other's dims before their last two (both at least 2-D),
/// broadcast against each other, into *batch. False, with *batch unspecified, when they do
/// not broadcast (the reference's error then).
inline bool matmul_batch_sizes(const Tensor& self, const Tensor& other,
                               std::vector<int64_t>* batch) {
  const int64_t da = self.dim(), db = other.dim(), nb = std::max(da, db) - 2;
  batch->assign(static_cast<size_t>(nb), 1);
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t ea = i - (nb - (da - 2)), eb = i - (nb - (db - 2));
    const int64_t sa = ea >= 0 ? self.size(ea) : 1, sb = eb >= 0 ? other.size(eb) : 1;
    if (sa != sb && sa != 1 && sb != 1) return false;
    (*batch)[static_cast<size_t>(i)] = sa == 1 ? sb : sa;
  }
  return true;
}

/// A new contiguous float32 CPU tensor of sizes (a product's result).
inline Tensor new_float_empty(IntArrayRef sizes) {
  return Tensor::empty(sizes, TensorOptions{}.with(DType::Float32));
}

}  // namespace loom::provider
