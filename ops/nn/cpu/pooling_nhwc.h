#pragma once
// Channels-last loops of the reference pooling kernels (pooling.cpp): max pooling forward
// (with or without indices), its backward (by indices, or by recomputing each window's
// maximum), and average pooling forward and backward, over a dense [N, H, W, C] input.
// Each window is walked once for a run of channels at a time, the channel loop innermost and
// unit-stride, so it vectorises; work is parallel over (n, output row) in the forwards and over
// n in the backwards (windows may overlap, so one image's gradient is written by one thread).
// Results are dense [N, oH, oW, C] (a channels-last tensor's memory). Same window rule, NaN rule,
// tie rule and index encoding (h * W + w within a plane) as the plane loops, and the same sums
// in float32 and float64 (16-bit gradients are summed in place, in their own type).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/elementwise.h"
#include "loom/ops/nn/meta/pooling.h"

namespace loom::ops::cpu::pool {

/// The window of output (oh, ow) of an average pooling clipped to the input, and its divisor
/// (the plane loops of pooling.cpp and the channels-last loops below share it).
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

inline AvgWindow avg_window(const meta::Pool2d& p, int64_t H, int64_t W, int64_t oh, int64_t ow,
                            bool count_include_pad, std::optional<int64_t> divisor_override) {
  int64_t h0 = oh * p.sH - p.pH, w0 = ow * p.sW - p.pW;
  int64_t h1 = std::min(h0 + p.kH, H + p.pH), w1 = std::min(w0 + p.kW, W + p.pW);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, H);
  w1 = std::min(w1, W);
  const int64_t divisor = divisor_override    ? *divisor_override
                          : count_include_pad ? pool_size
                                              : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

namespace nhwc {

/// Channels handled per pass over a window (accumulators on the stack).
inline constexpr int64_t kRun = 64;

/// The geometry of a dense channels-last [N, C, H, W] input.
struct Geometry {
  int64_t N, C, H, W;
};

template <typename A>
constexpr A lowest_value() {
  if constexpr (std::is_floating_point_v<A>) {
    return -std::numeric_limits<A>::infinity();
  } else {
    return std::numeric_limits<A>::lowest();
  }
}

/// v is taken over the running maximum m: larger, or NaN (NaN propagates, as in PyTorch).
template <typename A>
inline bool takes_max(A v, A m) {
  if constexpr (std::is_floating_point_v<A>) {
    return (v > m) | (v != v);  // bitwise: no branch, so the channel loops vectorise
  } else {
    return v > m;
  }
}

/// The first row/column of a dilated window inside the input, and one past its last.
inline void window_rows(int64_t o, int64_t s, int64_t pad, int64_t k, int64_t d, int64_t in,
                        int64_t& first, int64_t& end) {
  first = o * s - pad;
  end = std::min(first + (k - 1) * d + 1, in);
  if (first < 0) first += (-first + d - 1) / d * d;
}

/// For channels [c0, c0 + n) of the window at (oh, ow) of image `img`: the maxima into m and,
/// unless ix is null, their flat indices (the first maximum in row-major order) into ix.
template <typename S, typename A = compute_t<S>>
inline void window_max(const S* img, const Geometry& g, const meta::Pool2d& p, int64_t oh,
                       int64_t ow, int64_t c0, int64_t n, A* m, int64_t* ix) {
  int64_t h0, h1, w0, w1;
  window_rows(oh, p.sH, p.pH, p.kH, p.dH, g.H, h0, h1);
  window_rows(ow, p.sW, p.pW, p.kW, p.dW, g.W, w0, w1);
  for (int64_t c = 0; c < n; ++c) {
    m[c] = lowest_value<A>();
    if (ix) ix[c] = h0 * g.W + w0;
  }
  for (int64_t ih = h0; ih < h1; ih += p.dH) {
    for (int64_t iw = w0; iw < w1; iw += p.dW) {
      const S* x = img + (ih * g.W + iw) * g.C + c0;
      if (ix == nullptr) {
        // Values only: the maximum (NaN winning) does not depend on the order, so the loop
        // is a plain vector max.
#pragma omp simd
        for (int64_t c = 0; c < n; ++c) {
          const A v = convert<A>(x[c]);
          m[c] = takes_max(v, m[c]) ? v : m[c];
        }
        continue;
      }
      const int64_t flat = ih * g.W + iw;
#pragma omp simd
      for (int64_t c = 0; c < n; ++c) {
        const A v = convert<A>(x[c]);
        const bool take = takes_max(v, m[c]);
        m[c] = take ? v : m[c];
        ix[c] = take ? flat : ix[c];
      }
    }
  }
}

/// Max pooling forward: out (dense [N, oH, oW, C]) and, if idx, the index of each maximum.
template <typename S>
void max_forward(const S* in, const Geometry& g, const meta::Pool2d& p, int64_t oH, int64_t oW,
                 S* out, int64_t* idx) {
  using A = compute_t<S>;
  const int64_t rows = g.N * oH;
  const bool parallel = rows > 1 && rows * oW * g.C * p.kH * p.kW >= 32768;
#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / oH, oh = r % oH;
    const S* img = in + n * g.H * g.W * g.C;
    A m[kRun];
    int64_t ix[kRun];
    for (int64_t ow = 0; ow < oW; ++ow) {
      const int64_t o = (r * oW + ow) * g.C;
      for (int64_t c0 = 0; c0 < g.C; c0 += kRun) {
        const int64_t len = std::min(kRun, g.C - c0);
        window_max<S>(img, g, p, oh, ow, c0, len, m, idx ? ix : nullptr);
        for (int64_t c = 0; c < len; ++c) out[o + c0 + c] = convert<S>(m[c]);
        if (idx) std::memcpy(idx + o + c0, ix, static_cast<size_t>(len) * sizeof(int64_t));
      }
    }
  }
}

/// Max pooling backward without saved indices: each window's maximum is found again (values
/// only, a vector max) and grad_output (dense [N, oH, oW, C]) added at the first window position
/// holding it in row-major order (the forward's index), into gi (dense [N, H, W, C], written
/// whole). The position test is a vector compare too, so the channel loops vectorise.
template <typename S>
void max_backward_recompute(const S* go, const S* in, const Geometry& g, const meta::Pool2d& p,
                            int64_t oH, int64_t oW, S* gi) {
  using A = compute_t<S>;
  const int64_t image = g.H * g.W * g.C;
  const bool parallel = g.N > 1 && g.N * oH * oW * g.C * p.kH * p.kW >= 32768;
#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t n = 0; n < g.N; ++n) {
    S* gimg = gi + n * image;
    std::fill(gimg, gimg + image, convert<S>(A(0)));
    const S* img = in + n * image;
    A m[kRun];
    int32_t done[kRun];
    for (int64_t oh = 0; oh < oH; ++oh) {
      int64_t h0, h1;
      window_rows(oh, p.sH, p.pH, p.kH, p.dH, g.H, h0, h1);
      for (int64_t ow = 0; ow < oW; ++ow) {
        int64_t w0, w1;
        window_rows(ow, p.sW, p.pW, p.kW, p.dW, g.W, w0, w1);
        const S* gout = go + ((n * oH + oh) * oW + ow) * g.C;
        for (int64_t c0 = 0; c0 < g.C; c0 += kRun) {
          const int64_t len = std::min(kRun, g.C - c0);
          window_max<S>(img, g, p, oh, ow, c0, len, m, nullptr);
          for (int64_t c = 0; c < len; ++c) done[c] = 0;
          for (int64_t ih = h0; ih < h1; ih += p.dH) {
            for (int64_t iw = w0; iw < w1; iw += p.dW) {
              const int64_t at = (ih * g.W + iw) * g.C + c0;
              const S* x = img + at;
              S* dst = gimg + at;
#pragma omp simd
              for (int64_t c = 0; c < len; ++c) {
                const A v = convert<A>(x[c]);
                // The maximum, or a NaN where the maximum is NaN (the first NaN wins); bitwise
                // logic, no branch.
                const int32_t hit =
                    (static_cast<int32_t>(v == m[c]) | (static_cast<int32_t>(v != v) &
                                                        static_cast<int32_t>(m[c] != m[c]))) &
                    ~done[c];
                const A gv = convert<A>(gout[c0 + c]);  // loaded always: no branch
                const A add = hit ? gv : A(0);
                dst[c] = convert<S>(static_cast<A>(convert<A>(dst[c]) + add));
                done[c] |= hit;
              }
            }
          }
        }
      }
    }
  }
}

/// Max pooling backward by indices (dense [N, oH, oW, C], as grad_output): false if an index
/// is outside its plane (gi then holds the others' sums).
template <typename S>
bool max_backward_indices(const S* go, const int64_t* idx, const Geometry& g, int64_t oH,
                          int64_t oW, S* gi) {
  using A = compute_t<S>;
  const int64_t image = g.H * g.W * g.C, HW = g.H * g.W, L = oH * oW;
  bool ok = true;
#pragma omp parallel for if (g.N > 1 && g.N * (image + L * g.C) >= 32768) schedule(static) \
    reduction(&& : ok)
  for (int64_t n = 0; n < g.N; ++n) {
    S* gimg = gi + n * image;
    std::fill(gimg, gimg + image, convert<S>(A(0)));
    const S* gout = go + n * L * g.C;
    const int64_t* x = idx + n * L * g.C;
    for (int64_t l = 0; l < L; ++l) {
      for (int64_t c = 0; c < g.C; ++c) {
        const int64_t i = x[l * g.C + c];
        if (i == -1) continue;
        if (i < 0 || i >= HW) {
          ok = false;
          continue;
        }
        S& dst = gimg[i * g.C + c];
        dst = convert<S>(static_cast<A>(convert<A>(dst) + convert<A>(gout[l * g.C + c])));
      }
    }
  }
  return ok;
}

/// Average pooling forward into out (dense [N, oH, oW, C]).
template <typename S>
void avg_forward(const S* in, const Geometry& g, const meta::Pool2d& p, int64_t oH, int64_t oW,
                 bool count_include_pad, std::optional<int64_t> divisor_override, S* out) {
  using A = compute_t<S>;
  const int64_t rows = g.N * oH;
  const bool parallel = rows > 1 && rows * oW * g.C * p.kH * p.kW >= 32768;
#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / oH, oh = r % oH;
    const S* img = in + n * g.H * g.W * g.C;
    A sum[kRun];
    for (int64_t ow = 0; ow < oW; ++ow) {
      S* o = out + (r * oW + ow) * g.C;
      const AvgWindow b = avg_window(p, g.H, g.W, oh, ow, count_include_pad, divisor_override);
      const bool empty = b.h0 >= b.h1 || b.w0 >= b.w1;
      for (int64_t c0 = 0; c0 < g.C; c0 += kRun) {
        const int64_t len = std::min(kRun, g.C - c0);
        for (int64_t c = 0; c < len; ++c) sum[c] = A(0);
        for (int64_t ih = b.h0; ih < b.h1; ++ih)
          for (int64_t iw = b.w0; iw < b.w1; ++iw) {
            const S* x = img + (ih * g.W + iw) * g.C + c0;
#pragma omp simd
            for (int64_t c = 0; c < len; ++c) sum[c] += convert<A>(x[c]);
          }
        for (int64_t c = 0; c < len; ++c) {
          o[c0 + c] = empty ? convert<S>(A(0))
                            : convert<S>(static_cast<A>(sum[c] / static_cast<A>(b.divisor)));
        }
      }
    }
  }
}

/// Average pooling backward into gi (dense [N, H, W, C], written whole).
template <typename S>
void avg_backward(const S* go, const Geometry& g, const meta::Pool2d& p, int64_t oH, int64_t oW,
                  bool count_include_pad, std::optional<int64_t> divisor_override, S* gi) {
  using A = compute_t<S>;
  const int64_t image = g.H * g.W * g.C;
  const bool parallel = g.N > 1 && g.N * oH * oW * g.C * p.kH * p.kW >= 32768;
#pragma omp parallel for if (parallel) schedule(static)
  for (int64_t n = 0; n < g.N; ++n) {
    S* gimg = gi + n * image;
    std::fill(gimg, gimg + image, convert<S>(A(0)));
    A delta[kRun];
    for (int64_t oh = 0; oh < oH; ++oh)
      for (int64_t ow = 0; ow < oW; ++ow) {
        const AvgWindow b = avg_window(p, g.H, g.W, oh, ow, count_include_pad, divisor_override);
        if (b.h0 >= b.h1 || b.w0 >= b.w1) continue;
        const S* gout = go + ((n * oH + oh) * oW + ow) * g.C;
        for (int64_t c0 = 0; c0 < g.C; c0 += kRun) {
          const int64_t len = std::min(kRun, g.C - c0);
          for (int64_t c = 0; c < len; ++c)
            delta[c] = static_cast<A>(convert<A>(gout[c0 + c]) / static_cast<A>(b.divisor));
          for (int64_t ih = b.h0; ih < b.h1; ++ih)
            for (int64_t iw = b.w0; iw < b.w1; ++iw) {
              S* dst = gimg + (ih * g.W + iw) * g.C + c0;
#pragma omp simd
              for (int64_t c = 0; c < len; ++c)
                dst[c] = convert<S>(static_cast<A>(convert<A>(dst[c]) + delta[c]));
            }
        }
      }
  }
}

}  // namespace nhwc
}  // namespace loom::ops::cpu::pool
