#pragma once
/// @file
/// Argument checks, parameter parsing and output shapes every backend of the padding ops
/// shares (the reference CPU kernels, the CUDA plugin's constant_pad_nd), so that error
/// messages are word for word the same on every device. Pad pairs (left, right) start at the
/// last dim; a negative pad crops.

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/core/error.h"
#include "loom/core/tensor.h"
#include "loom/ops/meta/result_size.h"
#include "loom/ops/meta/scalar_conversion.h"

namespace loom::ops::meta {

/// size + left + right, the size of dimension dim after padding, refusing int64 overflow with a
/// message that names op (Note [Result sizes that overflow]); a huge pad otherwise wraps and
/// reads as a negative one.
inline int64_t padded_size(std::string_view op, int64_t size, int64_t left, int64_t right,
                           int64_t dim) {
  int64_t r = 0;
  if (__builtin_add_overflow(size, left, &r) || __builtin_add_overflow(r, right, &r)) {
    throw_result_size_overflow(op, "the padded size of dimension ", dim, ": ", size, " + ", left,
                               " + ", right);
  }
  return r;
}

/// How much of a dim of the given size a pad crops: -pad for a negative pad, at most size
/// (and without negating INT64_MIN).
inline int64_t cropped_by(int64_t pad, int64_t size) {
  return pad >= 0 ? 0 : pad <= -size ? size : -pad;
}

/// The geometry of constant_pad_nd(self, pad): the output's sizes, the pads per dim, and the
/// block of self that is copied (what is left after cropping).
struct ConstantPad {
  std::vector<int64_t> out_sizes;   ///< the output's sizes
  std::vector<int64_t> copy_sizes;  ///< the sizes of the copied block
  std::vector<int64_t> left;        ///< the pad before each dim (negative: crop)
  std::vector<int64_t> right;       ///< the pad after each dim (negative: crop)
  bool grows = false;               ///< some pad is positive: the output has elements to fill
  bool empty_copy = false;          ///< nothing of self is copied: the output is all `value`
};

/// constant_pad_nd's checks of pad against self, with PyTorch's messages, and its geometry.
inline ConstantPad constant_pad_geometry(const Tensor& self, IntArrayRef pad) {
  const int64_t nd = self.dim();
  LOOM_CHECK(pad.size() % 2 == 0,
             "constant_pad_nd: Length of pad must be even but instead it equals ", pad.size());
  const auto k = static_cast<int64_t>(pad.size()) / 2;
  LOOM_CHECK(k <= nd,
             "constant_pad_nd: Length of pad should be no more than twice the number of dimensions "
             "of the input. "
             "Pad length is ",
             pad.size(), " while the input has ", nd, " dimensions.");
  ConstantPad g;
  g.out_sizes.assign(self.sizes().begin(), self.sizes().end());
  g.copy_sizes = g.out_sizes;
  g.left.assign(static_cast<size_t>(nd), 0);
  g.right.assign(static_cast<size_t>(nd), 0);
  g.empty_copy = self.numel() == 0;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = nd - 1 - i;
    const auto u = static_cast<size_t>(d);
    const int64_t pl = pad[static_cast<size_t>(2 * i)], pr = pad[static_cast<size_t>(2 * i + 1)];
    g.left[u] = pl;
    g.right[u] = pr;
    g.out_sizes[u] = padded_size("constant_pad_nd", self.size(d), pl, pr, d);
    LOOM_CHECK(g.out_sizes[u] >= 0, "constant_pad_nd: The input size ", self.size(d),
               ", plus negative padding ", pl, " and ", pr,
               " resulted in a negative output size, which is invalid. Check dimension ", d,
               " of your input.");
    g.copy_sizes[u] = self.size(d) - cropped_by(pl, self.size(d)) - cropped_by(pr, self.size(d));
    g.grows = g.grows || pl > 0 || pr > 0;
    g.empty_copy = g.empty_copy || g.copy_sizes[u] <= 0;
  }
  check_result_numel("constant_pad_nd", g.out_sizes, self.dtype());
  return g;
}

/// The element offsets of the copied block in self (from self's storage offset `base`) and
/// in an output of strides out_strides.
inline std::pair<int64_t, int64_t> constant_pad_offsets(const Tensor& self, const ConstantPad& g,
                                                        IntArrayRef out_strides, int64_t base) {
  int64_t src = base, dst = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const auto u = static_cast<size_t>(d);
    src += cropped_by(g.left[u], self.size(d)) * self.stride(d);
    dst += std::max<int64_t>(0, g.left[u]) * out_strides[u];
  }
  return {src, dst};
}

}  // namespace loom::ops::meta
