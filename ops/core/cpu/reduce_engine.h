#pragma once
// The strided reduction engine shared by the reduction, scan and softmax kernels of this
// pack (reduce*.cpp, scan.cpp, softmax.cpp).
//
// Note [Reduction geometry]: a reduction splits the input's dims into kept ("outer") dims,
// which index the output in row-major order, and reduced dims. Each group drops its size-1
// dims and merges neighbours whose strides chain (stride[i] == stride[i+1] * size[i+1]), so
// a contiguous full reduction is one row of numel elements and a reduction over the last
// dim of a contiguous tensor is `outer` rows of `inner` elements. The reduced dims keep
// their row-major order, so the flat index an arg-reduction reports is PyTorch's. Ops see
// rows (pointer, length, stride, flat index of the first element): a stride-1 row is a
// tight loop the compiler can vectorise. Outputs are parallel over OpenMP threads when
// there are many; a few large outputs are split into fixed chunks of kChunk elements
// (fixed, so results do not depend on the thread count) whose partial results merge in order.

#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cpu/elementwise.h"
#include "cpu/parallel.h"
#include "loom/core/half.h"
#include "loom/core/tensor.h"
#include "loom/core/tensor_checks.h"
#include "loom/ops/meta/reduction.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace loom::ops::cpu::reduction {

// Half and BFloat16 (the 16-bit storage structs), dispatch_all and dispatch_floats come
// from cpu/elementwise.h.

template <typename T>
inline constexpr bool is_float_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// What an element computes as: float for the 16-bit floats, the type itself for float and
/// double, int64 for integers and bool.
template <typename T>
using value_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float,
                                   std::conditional_t<std::is_floating_point_v<T>, T, int64_t>>;

/// The accumulator: double for floating types (PyTorch's CPU acc_type), int64 otherwise.
template <typename T>
using acc_t = std::conditional_t<is_float_v<T>, double, int64_t>;

template <typename T>
inline value_t<T> load(const T* p) {
  if constexpr (std::is_same_v<T, Half>) {
    return half_to_float(p->bits);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bfloat16_to_float(p->bits);
  } else if constexpr (std::is_floating_point_v<T>) {
    return *p;
  } else {
    return static_cast<int64_t>(*p);
  }
}

template <typename T, typename V>
inline void store(T* p, V v) {
  if constexpr (std::is_same_v<T, Half>) {
    p->bits = float_to_half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    p->bits = float_to_bfloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    *p = v != 0;
  } else {
    *p = static_cast<T>(v);
  }
}

/// The typed element pointer of t (storage bits for the 16-bit floats).
template <typename T>
inline T* data_of(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

using DimVec = absl::InlinedVector<int64_t, 6>;

/// Offset in elements of the row-major flat index i over (sizes, strides).
inline int64_t offset_of(int64_t i, const DimVec& sizes, const DimVec& strides) {
  int64_t off = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}

/// Drops size-1 dims and merges neighbours whose strides chain (Note [Reduction geometry]).
inline void coalesce(DimVec& sizes, DimVec& strides) {
  DimVec s, st;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    if (!s.empty() && st.back() == strides[i] * sizes[i]) {
      s.back() *= sizes[i];
      st.back() = strides[i];
    } else {
      s.push_back(sizes[i]);
      st.push_back(strides[i]);
    }
  }
  sizes = std::move(s);
  strides = std::move(st);
}

// Dim masks and the empty-dim check: the rules every backend shares (loom/ops/meta/reduction.h).
using meta::check_nonzero_reduced;
using meta::reduce_mask;
using meta::reduce_mask_one;

/// The geometry of a reduction (Note [Reduction geometry]).
struct ReducePlan {
  std::vector<int64_t> out_sizes;  ///< the output's sizes (keepdim applied)
  DimVec outer_sizes, outer_strides, red_sizes, red_strides;
  int64_t outer_numel = 1;  ///< number of outputs
  int64_t red_numel = 1;    ///< elements reduced into each output
  Device device;            ///< the input's device: meta runs no loop (Note [Meta kernels share
                            ///< the reference's setup] in cpu/meta.h)
};

inline ReducePlan make_plan(const Tensor& self, const std::vector<bool>& mask, bool keepdim) {
  ReducePlan p;
  p.device = self.device();
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (mask[d]) {
      p.red_sizes.push_back(self.size(d));
      p.red_strides.push_back(self.stride(d));
      p.red_numel *= self.size(d);
      if (keepdim) p.out_sizes.push_back(1);
    } else {
      p.outer_sizes.push_back(self.size(d));
      p.outer_strides.push_back(self.stride(d));
      p.outer_numel *= self.size(d);
      p.out_sizes.push_back(self.size(d));
    }
  }
  coalesce(p.outer_sizes, p.outer_strides);
  coalesce(p.red_sizes, p.red_strides);
  return p;
}

inline constexpr int64_t kChunk = int64_t{1} << 16;  ///< elements per partial result
inline constexpr int64_t kGrain = int64_t{1} << 15;  ///< below this much work, one thread

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// Feeds op the rows covering reduced flat indices [begin, end) of the output at base.
template <typename T, typename Op>
void reduce_range(const ReducePlan& p, const T* base, Op& op, typename Op::Acc& acc, int64_t begin,
                  int64_t end) {
  if (begin >= end) return;
  if (p.red_sizes.empty()) {
    op.row(acc, base, 1, 1, begin);
    return;
  }
  const int64_t n_in = p.red_sizes.back();
  const int64_t s_in = p.red_strides.back();
  const size_t nd = p.red_sizes.size();
  int64_t j = begin % n_in;
  int64_t q = begin / n_in;
  for (int64_t i = begin; i < end;) {
    const int64_t len = std::min(n_in - j, end - i);
    int64_t off = j * s_in;
    int64_t r = q;
    for (size_t d = nd - 1; d-- > 0;) {
      off += (r % p.red_sizes[d]) * p.red_strides[d];
      r /= p.red_sizes[d];
    }
    op.row(acc, base + off, len, s_in, i);
    i += len;
    j = 0;
    ++q;
  }
}

/// Ops that can also take one element at a time (op.step(acc, p)) can reduce a tile of
/// neighbouring outputs together.
template <typename Op, typename T>
concept SteppableOp = requires(const Op& op, typename Op::Acc& acc, const T* p) {
  op.step(acc, p);
};

/// Outputs that are neighbours in memory (the kept dims end with a stride-1 dim) while the
/// reduced dims are strided, as in a sum over dim 0 of a row-major matrix: a tile of kTile
/// outputs walks the reduced elements together, so every load is contiguous.
template <typename T, typename Op>
void run_reduce_tiled(const ReducePlan& p, const T* base, const Op& op, typename Op::Acc* out,
                      bool big) {
  using Acc = typename Op::Acc;
  constexpr int64_t kTile = 64;
  const int64_t cols = p.outer_sizes.back();
  const DimVec oo_sizes(p.outer_sizes.begin(), p.outer_sizes.end() - 1);
  const DimVec oo_strides(p.outer_strides.begin(), p.outer_strides.end() - 1);
  const int64_t n_oo = p.outer_numel / cols;
  const int64_t tiles = (cols + kTile - 1) / kTile;
  std::vector<int64_t> roff(static_cast<size_t>(p.red_numel));
  for (int64_t r = 0; r < p.red_numel; ++r) roff[r] = offset_of(r, p.red_sizes, p.red_strides);
  maybe_parallel_for(big && n_oo * tiles > 1, n_oo * tiles, [&](int64_t t) {
    const int64_t oo = t / tiles;
    const int64_t c0 = (t % tiles) * kTile;
    const int64_t nb = std::min(kTile, cols - c0);
    const T* b = base + offset_of(oo, oo_sizes, oo_strides) + c0;
    Acc acc[kTile];
    for (int64_t j = 0; j < nb; ++j) acc[j] = op.init();
    for (int64_t r = 0; r < p.red_numel; ++r) {
      const T* q = b + roff[r];
      for (int64_t j = 0; j < nb; ++j) op.step(acc[j], q + j);
    }
    for (int64_t j = 0; j < nb; ++j) out[oo * cols + c0 + j] = acc[j];
  });
}

/// Runs op over every output of plan; out[o] receives output o's accumulator.
template <typename T, typename Op>
void run_reduce(const ReducePlan& p, const T* base, Op op, typename Op::Acc* out) {
  using Acc = typename Op::Acc;
  const int64_t outer = p.outer_numel;
  const int64_t red = p.red_numel;
  if (outer == 0 || p.device.is_meta()) return;
  const bool big = outer * std::max<int64_t>(red, 1) >= kGrain;
  if constexpr (SteppableOp<Op, T>) {
    if (!p.outer_sizes.empty() && p.outer_strides.back() == 1 && !p.red_sizes.empty() &&
        p.red_strides.back() != 1 && red > 1 && red <= (int64_t{1} << 22)) {
      run_reduce_tiled(p, base, op, out, big);
      return;
    }
  }
  const int threads = max_threads();
  if (outer >= threads || red <= kChunk) {
    maybe_parallel_for(big && outer > 1, outer, [&](int64_t o) {
      Acc acc = op.init();
      reduce_range(p, base + offset_of(o, p.outer_sizes, p.outer_strides), op, acc, 0, red);
      out[o] = acc;
    });
    return;
  }
  const int64_t chunks = (red + kChunk - 1) / kChunk;
  std::vector<Acc> parts(static_cast<size_t>(chunks));
  for (int64_t o = 0; o < outer; ++o) {
    const T* b = base + offset_of(o, p.outer_sizes, p.outer_strides);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      Acc acc = op.init();
      reduce_range(p, b, op, acc, c * kChunk, std::min(red, (c + 1) * kChunk));
      parts[c] = acc;
    }
    Acc acc = parts[0];
    for (int64_t c = 1; c < chunks; ++c) acc = op.merge(acc, parts[c]);
    out[o] = acc;
  }
}

/// A contiguous tensor of sizes and dtype `to` on device, holding values[i] converted
/// (nothing to hold on meta).
template <typename V>
Tensor tensor_from_values(IntArrayRef sizes, DType to, Device device, const V* values) {
  Tensor out = Tensor::empty(sizes, TensorOptions{}.with(to).with(device));
  if (device.is_meta()) return out;
  const int64_t n = out.numel();
  dispatch_all(to, [&]<typename U>(U*) {
    U* o = data_of<U>(out);
    for (int64_t i = 0; i < n; ++i) store(o + i, values[i]);
  });
  return out;
}

/// tensor_from_values of plan's output sizes and device.
template <typename V>
Tensor tensor_from_values(const ReducePlan& plan, DType to, const V* values) {
  return tensor_from_values(plan.out_sizes, to, plan.device, values);
}

/// Geometry of ops that work along one dim (scans, softmax): "lines" of len elements.
struct LinePlan {
  DimVec sizes;  ///< the other dims
  DimVec strides[3];
  int64_t lines = 1;
  int64_t len = 1;
  int64_t stride[3] = {0, 0, 0};
};

/// Lines along dim of same-shaped tensors (up to 3, e.g. grad, output, result).
inline LinePlan make_lines(int64_t dim, std::initializer_list<const Tensor*> ts) {
  LinePlan p;
  const Tensor& t0 = **ts.begin();
  const int64_t nd = t0.dim();
  const int64_t w = nd == 0 ? -1 : wrap_dim(dim, nd);
  for (int64_t d = 0; d < nd; ++d) {
    if (d == w) {
      p.len = t0.size(d);
      int k = 0;
      for (const Tensor* t : ts) p.stride[k++] = t->stride(d);
      continue;
    }
    p.sizes.push_back(t0.size(d));
    p.lines *= t0.size(d);
    int k = 0;
    for (const Tensor* t : ts) p.strides[k++].push_back(t->stride(d));
  }
  return p;
}

/// Calls f(line, offsets[3]) for every line, in parallel when there is enough work.
template <typename F>
void for_each_line(const LinePlan& p, F&& f) {
  const bool big = p.lines * p.len >= kGrain && p.lines > 1;
  maybe_parallel_for(big, p.lines, [&](int64_t l) {
    int64_t off[3];
    for (int k = 0; k < 3; ++k)
      off[k] = p.strides[k].empty() ? 0 : offset_of(l, p.sizes, p.strides[k]);
    f(l, off);
  });
}

/// A contiguous copy of self converted to dtype `to` (self itself if nothing to do).
inline Tensor cast_contiguous(const Tensor& self, DType to) {
  if (self.dtype() == to && self.is_contiguous()) return self;
  Tensor out = Tensor::empty(self.sizes(), TensorOptions{}.with(to).with(self.device()));
  if (self.numel() == 0 || self.device().is_meta()) return out;
  const int64_t last = self.dim() == 0 ? 0 : self.dim() - 1;
  const LinePlan p = make_lines(last, {&self, &out});
  dispatch_all(self.dtype(), [&]<typename T>(T*) {
    dispatch_all(to, [&]<typename U>(U*) {
      const T* src = data_of<T>(self);
      U* dst = data_of<U>(out);
      for_each_line(p, [&](int64_t, const int64_t* off) {
        const T* s = src + off[0];
        U* d = dst + off[1];
        for (int64_t i = 0; i < p.len; ++i) {
          if constexpr (std::is_same_v<T, U>) {
            d[i * p.stride[1]] = s[i * p.stride[0]];
          } else {
            store(d + i * p.stride[1], load(s + i * p.stride[0]));
          }
        }
      });
    });
  });
  return out;
}

}  // namespace loom::ops::cpu::reduction
