#pragma once
// Private to cpu/convolution.cpp: the geometry of a 2-D convolution and its im2col/col2im
// copies, over strided images.
//
// Note [Convolution as big and small]: every convolution product, forward or backward,
// plain or transposed, relates a "big" image B [N, G*Cb, H, W] and a "small" one
// S [N, G*Cs, oH, oW] through a weight matrix Wm [G*Cs, Cb*kH*kW] (the weight tensor's
// rows, contiguous) as S[n, g] = Wm[g] @ im2col(B[n, g]), where column l = (oh, ow) of
// im2col reads B at (oh*sH - pH + kh*dH, ow*sW - pW + kw*dW) (zero outside B).
//   conv forward:        B = input,       S = output       (im2col, GEMM)
//   conv grad_input:     B = grad_input,  S = grad_output  (GEMM with Wm^T, col2im)
//   conv grad_weight:    B = input,       S = grad_output  (S @ im2col(B)^T)
//   transposed forward:  B = output,      S = input        (as conv grad_input)
//   transposed grad_in:  B = grad_output, S = grad_input   (as conv forward)
//   transposed grad_w:   B = grad_output, S = input        (as conv grad_weight)
// So three routines (cpu/convolution.cpp) cover all six, each on column chunks of one
// image at a time so that a chunk of im2col stays in cache between its copy and the GEMM.
// They drive the micro-kernel of ops/core/cpu/gemm.h themselves: the weights are packed
// once per call, im2col is written straight in the packed-B (forward) or packed-A (weight
// gradient) layout, and tiles are written back with unit stride.

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace loom::ops::cpu::conv {

/// Spatial geometry: big image H x W, small image oH x oW, kernel, stride, left/top padding
/// and dilation (the right/bottom padding is implied by oH, oW).
struct Geometry {
  int64_t H, W, oH, oW;
  int64_t kH, kW, sH, sW, pH, pW, dH, dW;
  int64_t kernel() const { return kH * kW; }
  int64_t small_numel() const { return oH * oW; }
  /// True if im2col is the identity (1x1 kernel, unit stride, no padding, same size).
  bool is_pointwise() const {
    return kH == 1 && kW == 1 && sH == 1 && sW == 1 && pH == 0 && pW == 0 && oH == H && oW == W;
  }
};

/// The range [lo, hi) of small columns ow whose big column ow*s + off lies in [0, size).
inline void valid_range(int64_t off, int64_t s, int64_t size, int64_t o_size, int64_t* lo,
                        int64_t* hi) {
  // Ceiling division without n + s - 1, which overflows for a stride near INT64_MAX.
  const auto ceil_div = [](int64_t n, int64_t d) { return n / d + (n % d != 0 ? 1 : 0); };
  int64_t a = off >= 0 ? 0 : ceil_div(-off, s);
  int64_t b = size - off <= 0 ? 0 : ceil_div(size - off, s);
  a = std::min(a, o_size);
  b = std::clamp(b, a, o_size);
  *lo = a;
  *hi = b;
}

/// Row (c, kh, kw) of im2col for small columns l in [l0, l1): dst[l - l0] = B[c, ih, iw]
/// (zero where (ih, iw) falls in the padding). plane points at channel c of the image, with
/// element strides (sh, sw).
template <typename T>
void im2col_row(const T* plane, int64_t sh, int64_t sw, const Geometry& g, int64_t kh, int64_t kw,
                int64_t l0, int64_t l1, T* dst) {
  const int64_t hoff = kh * g.dH - g.pH, woff = kw * g.dW - g.pW;
  int64_t ow_lo, ow_hi;
  valid_range(woff, g.sW, g.W, g.oW, &ow_lo, &ow_hi);
  int64_t l = l0;
  int64_t oh = l0 / g.oW, ow = l0 % g.oW;
  while (l < l1) {
    const int64_t end = std::min(g.oW, ow + (l1 - l));
    T* d = dst + (l - l0);  // d[j - ow] is column (oh, j)
    const int64_t ih = oh * g.sH + hoff;
    if (ih < 0 || ih >= g.H) {
      std::fill(d, d + (end - ow), T(0));
    } else {
      const T* src = plane + ih * sh;
      const int64_t a = std::clamp(ow_lo, ow, end), b = std::clamp(ow_hi, a, end);
      std::fill(d, d + (a - ow), T(0));
      if (g.sW == 1 && sw == 1) {
        if (b > a) {
          std::memcpy(d + (a - ow), src + (a + woff), static_cast<size_t>(b - a) * sizeof(T));
        }
      } else {
        for (int64_t j = a; j < b; ++j) d[j - ow] = src[(j * g.sW + woff) * sw];
      }
      std::fill(d + (b - ow), d + (end - ow), T(0));
    }
    l += end - ow;
    ow = 0;
    ++oh;
  }
}

/// col[(c - c0)*kH*kW + kh*kW + kw, l - l0] = B[c, ih, iw] for channels [c0, c1) and small
/// columns l in [l0, l1). img points at channel 0 of one image with element strides
/// (sc, sh, sw); col has leading dimension l1 - l0.
template <typename T>
void im2col(const T* img, int64_t sc, int64_t sh, int64_t sw, const Geometry& g, int64_t c0,
            int64_t c1, int64_t l0, int64_t l1, T* col) {
  const int64_t lc = l1 - l0;
  T* row = col;
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t kh = 0; kh < g.kH; ++kh)
      for (int64_t kw = 0; kw < g.kW; ++kw, row += lc) {
        im2col_row(img + c * sc, sh, sw, g, kh, kw, l0, l1, row);
      }
}

/// Rows [r0, r1) of im2col (row r = (c*kH + kh)*kW + kw) for columns [l0, l1), written
/// straight in the GEMM's packed-B layout (Note [Reference GEMM] in ops/core/cpu/gemm.h):
/// slivers of NR columns, each (r1 - r0) x NR row-major, the last zero-padded. rowbuf holds
/// l1 - l0 elements.
template <int NR, typename T>
void im2col_packed(const T* img, int64_t sc, int64_t sh, int64_t sw, const Geometry& g, int64_t r0,
                   int64_t r1, int64_t l0, int64_t l1, T* rowbuf, T* pb) {
  const int64_t lc = l1 - l0, kc = r1 - r0, K = g.kernel();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / K, kk = r % K;
    im2col_row(img + c * sc, sh, sw, g, kk / g.kW, kk % g.kW, l0, l1, rowbuf);
    T* dst = pb + (r - r0) * NR;
    for (int64_t j0 = 0; j0 < lc; j0 += NR, dst += kc * NR) {
      const int64_t n = std::min<int64_t>(NR, lc - j0);
      std::memcpy(dst, rowbuf + j0, static_cast<size_t>(n) * sizeof(T));
      if (n < NR) std::fill(dst + n, dst + NR, T(0));
    }
  }
}

/// Rows [r0, r1) of im2col for columns [l0, l1), written in the GEMM's packed-A layout
/// (the rows as the product's left operand): slivers of MR rows, each (l1 - l0) x MR
/// column-major, the last zero-padded. rowbuf holds l1 - l0 elements.
template <int MR, typename T>
void im2col_packed_a(const T* img, int64_t sc, int64_t sh, int64_t sw, const Geometry& g,
                     int64_t r0, int64_t r1, int64_t l0, int64_t l1, T* rowbuf, T* pa) {
  const int64_t lc = l1 - l0, K = g.kernel();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / K, kk = r % K;
    im2col_row(img + c * sc, sh, sw, g, kk / g.kW, kk % g.kW, l0, l1, rowbuf);
    T* dst = pa + (r - r0) / MR * MR * lc + (r - r0) % MR;
    for (int64_t p = 0; p < lc; ++p) dst[p * MR] = rowbuf[p];
  }
  const int64_t rows = r1 - r0;
  if (rows % MR != 0) {
    T* last = pa + rows / MR * MR * lc;
    for (int64_t p = 0; p < lc; ++p)
      for (int64_t i = rows % MR; i < MR; ++i) last[p * MR + i] = T(0);
  }
}

/// The adjoint of im2col: B[c, ih, iw] += col[...] for the same rows and columns; img is a
/// contiguous [C, H, W] image at channel 0.
template <typename T>
void col2im(const T* col, const Geometry& g, int64_t c0, int64_t c1, int64_t l0, int64_t l1,
            T* img) {
  const int64_t lc = l1 - l0;
  const T* row = col;
  for (int64_t c = c0; c < c1; ++c) {
    T* plane = img + c * g.H * g.W;
    for (int64_t kh = 0; kh < g.kH; ++kh) {
      const int64_t hoff = kh * g.dH - g.pH;
      for (int64_t kw = 0; kw < g.kW; ++kw, row += lc) {
        const int64_t woff = kw * g.dW - g.pW;
        int64_t ow_lo, ow_hi;
        valid_range(woff, g.sW, g.W, g.oW, &ow_lo, &ow_hi);
        int64_t l = l0;
        int64_t oh = l0 / g.oW, ow = l0 % g.oW;
        while (l < l1) {
          const int64_t end = std::min(g.oW, ow + (l1 - l));
          const T* s = row + (l - l0);  // s[j - ow] is column (oh, j)
          const int64_t ih = oh * g.sH + hoff;
          if (ih >= 0 && ih < g.H) {
            T* dst = plane + ih * g.W;
            const int64_t a = std::clamp(ow_lo, ow, end), b = std::clamp(ow_hi, a, end);
            if (g.sW == 1) {
#pragma omp simd
              for (int64_t j = a; j < b; ++j) dst[j + woff] += s[j - ow];
            } else {
              for (int64_t j = a; j < b; ++j) dst[j * g.sW + woff] += s[j - ow];
            }
          }
          l += end - ow;
          ow = 0;
          ++oh;
        }
      }
    }
  }
}

}  // namespace loom::ops::cpu::conv
