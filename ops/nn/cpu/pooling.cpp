// Reference CPU kernels of the pooling family: max_pool2d (with indices, with dilation),
// avg_pool2d (ceil_mode, count_include_pad, divisor_override), adaptive average and max
// pooling, their backward ops, and the 1-d forms, which run as 2-d with a unit height.
// Inputs are [N, C, H, W] or unbatched [C, H, W], any strides; work is parallel over the
// N*C planes. A 4-d input that suggests channels-last (Note [Memory format] in
// loom/ops/nn/memory_format.h) runs the channels-last loops of pooling_nhwc.h instead and gets
// channels-last results and gradients, as in PyTorch. max_pool2d_backward (the gradient of
// max_pool2d, which saves no indices) finds each window's maximum again while it adds the
// gradient: one pass, no index tensor. Window geometry, the ceil_mode rule (the last window must start inside the
// input or its left padding), NaN propagation, index encoding (h * W + w within a plane),
// checks and messages follow PyTorch's (aten/src/ATen/native/Pool.h, DilatedMaxPool2d.cpp,
// AveragePool2d.cpp, AdaptiveAveragePooling.cpp, AdaptiveMaxPooling2d.cpp). 16-bit floats
// compute in float.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "cpu/elementwise.h"
#include "cpu/meta.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/memory_format.h"
#include "loom/ops/nn/meta/pooling.h"
#include "pooling_nhwc.h"

namespace loom::ops::cpu::pool {
namespace {

using meta::lift_1d;
using meta::Pool2d;
using meta::pooled_sizes;
using meta::pooling_output_shape;
using meta::squeeze_h;
using meta::unsqueeze_h;

// ---- geometry ----

/// The planes of a [N, C, H, W] or [C, H, W] tensor (N = 1 for the latter).
struct Planes {
  int64_t N, C, H, W;
  int64_t sn, sc, sh, sw;
  int64_t count() const { return N * C; }
  /// Element offset of plane p = n*C + c.
  int64_t offset(int64_t p) const { return p / C * sn + p % C * sc; }
};

Planes planes_of(const Tensor& t) {
  if (t.dim() == 3)
    return {1, t.size(0), t.size(1), t.size(2), 0, t.stride(0), t.stride(1), t.stride(2)};
  return {t.size(0),   t.size(1),   t.size(2),   t.size(3),
          t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

/// A new contiguous tensor of sizes and dtype d on like's device.
Tensor new_tensor(IntArrayRef sizes, const Tensor& like, DType d) {
  return Tensor::empty(sizes, options_like(like, d));
}

/// True when a pooling of t runs channels-last (t is 4-d and suggests it).
bool runs_nhwc(const Tensor& t) { return t.dim() == 4 && suggests_channels_last(t); }

/// t (4-d) as dense channels-last memory: itself, or a channels-last copy.
Tensor dense_nhwc(const Tensor& t) {
  return is_channels_last_dense(t) ? t : to_memory_format(t, MemoryFormat::ChannelsLast);
}

nhwc::Geometry geometry_of(const Tensor& t) {
  return {t.size(0), t.size(1), t.size(2), t.size(3)};
}

// ---- dtype dispatch ----

/// Calls f for dtype d among the floating types and, if `ints`, the integer types (not bool);
/// otherwise throws PyTorch's "not implemented for" naming kernel. The dtype check runs for a
/// meta output too, f (the element loop) does not (Note [Meta kernels share the reference's
/// setup] in cpu/meta.h).
template <typename F>
void dispatch_pool(std::string_view kernel, DType d, bool ints, bool long_only, const Tensor& out,
                   F&& f) {
  const bool ok =
      d != DType::Bool && (is_floating_point(d) || (ints && (!long_only || d == DType::Int64)));
  if (!ok) throw_dtype_unsupported(kernel, d);
  if (is_meta(out)) return;
  dispatch_all(d, [&]<typename S>(S*) {
    if constexpr (!std::is_same_v<S, bool>) f(static_cast<S*>(nullptr));
  });
}

template <typename A>
constexpr A lowest() {
  if constexpr (std::is_floating_point_v<A>) {
    return -std::numeric_limits<A>::infinity();
  } else {
    return std::numeric_limits<A>::lowest();
  }
}

template <typename A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

bool worth_parallel(int64_t planes, int64_t work) { return planes > 1 && work >= 32768; }

// ---- max pooling ----

/// out (contiguous [.., oH, oW]) and, if idx, the flat index h*W + w of each maximum.
/// The maximum of the window at (oh, ow) of a plane and its flat index h * W + w (the first
/// maximum in row-major order; a NaN wins and propagates).
template <typename S, typename A = compute_t<S>>
inline int64_t plane_argmax(const S* plane, const Planes& ip, const Pool2d& p, int64_t oh,
                            int64_t ow, A& maxval) {
  int64_t ih0, ih1, iw0, iw1;
  nhwc::window_rows(oh, p.sH, p.pH, p.kH, p.dH, ip.H, ih0, ih1);
  nhwc::window_rows(ow, p.sW, p.pW, p.kW, p.dW, ip.W, iw0, iw1);
  int64_t best = ih0 * ip.W + iw0;
  maxval = lowest<A>();
  for (int64_t ih = ih0; ih < ih1; ih += p.dH) {
    const S* row = plane + ih * ip.sh;
    for (int64_t iw = iw0; iw < iw1; iw += p.dW) {
      const A v = convert<A>(row[iw * ip.sw]);
      if (v > maxval || is_nan(v)) {
        maxval = v;
        best = ih * ip.W + iw;
      }
    }
  }
  return best;
}

/// Max pooling values (no indices) of planes whose rows are contiguous, without dilation along
/// W: for each output row, the element-wise maximum of its window's input rows (a vector loop
/// over W), then each output the maximum of its kW columns of that. The maximum does not depend
/// on the order (a NaN wins wherever it is), so this gives the window loop's values.
template <typename S>
void max_pool_forward_rows(const S* in, const Planes& ip, const Pool2d& p, int64_t oH, int64_t oW,
                           S* out) {
  using A = compute_t<S>;
  const int64_t P = ip.count(), L = oH * oW;
#pragma omp parallel if (worth_parallel(P, P * L * p.kH * p.kW))
  {
    std::vector<A> rowmax(static_cast<size_t>(ip.W));
    A* t = rowmax.data();
#pragma omp for schedule(static)
    for (int64_t pl = 0; pl < P; ++pl) {
      const S* plane = in + ip.offset(pl);
      S* o = out + pl * L;
      for (int64_t oh = 0; oh < oH; ++oh) {
        int64_t h0, h1;
        nhwc::window_rows(oh, p.sH, p.pH, p.kH, p.dH, ip.H, h0, h1);
        for (int64_t iw = 0; iw < ip.W; ++iw) t[iw] = lowest<A>();
        for (int64_t ih = h0; ih < h1; ih += p.dH) {
          const S* row = plane + ih * ip.sh;
#pragma omp simd
          for (int64_t iw = 0; iw < ip.W; ++iw) {
            const A v = convert<A>(row[iw]);
            t[iw] = nhwc::takes_max(v, t[iw]) ? v : t[iw];
          }
        }
        for (int64_t ow = 0; ow < oW; ++ow) {
          int64_t w0, w1;
          nhwc::window_rows(ow, p.sW, p.pW, p.kW, 1, ip.W, w0, w1);
          A m = lowest<A>();
          for (int64_t iw = w0; iw < w1; ++iw) m = nhwc::takes_max(t[iw], m) ? t[iw] : m;
          o[oh * oW + ow] = convert<S>(m);
        }
      }
    }
  }
}

template <typename S>
void max_pool_forward(const S* in, const Planes& ip, const Pool2d& p, int64_t oH, int64_t oW,
                      S* out, int64_t* idx) {
  using A = compute_t<S>;
  const int64_t P = ip.count(), L = oH * oW;
  if (idx == nullptr && ip.sw == 1 && p.dW == 1) {
    max_pool_forward_rows<S>(in, ip, p, oH, oW, out);
    return;
  }
#pragma omp parallel for if (worth_parallel(P, P * L * p.kH * p.kW)) schedule(static)
  for (int64_t pl = 0; pl < P; ++pl) {
    const S* plane = in + ip.offset(pl);
    S* o = out + pl * L;
    int64_t* ix = idx ? idx + pl * L : nullptr;
    for (int64_t oh = 0; oh < oH; ++oh) {
      for (int64_t ow = 0; ow < oW; ++ow) {
        A maxval;
        const int64_t best = plane_argmax<S>(plane, ip, p, oh, ow, maxval);
        o[oh * oW + ow] = convert<S>(maxval);
        if (ix) ix[oh * oW + ow] = best;
      }
    }
  }
}

/// max_pool_backward_recompute for 2x2 windows with stride 2, no padding or dilation and
/// contiguous input rows (a CNN's pooling), every window inside the plane: each output row
/// writes its two input rows of grad_input in full with plane_argmax's rule (the first maximum
/// in row-major order; a later NaN wins), so each element is written once, in order, by a
/// loop that vectorises. About 5x the general loop on N32 C64 56x56.
template <typename S>
void max_pool_backward_2x2(const S* go, const Planes& gp, const S* in, const Planes& ip, S* gi) {
  const int64_t P = ip.count(), H = ip.H, W = ip.W, oH = gp.H, oW = gp.W;
#pragma omp parallel for schedule(static) if (worth_parallel(P, P * H * W))
  for (int64_t pl = 0; pl < P; ++pl) {
    const S* plane = in + ip.offset(pl);
    const S* g = go + gp.offset(pl);
    S* o = gi + pl * H * W;
    for (int64_t oh = 0; oh < oH; ++oh) {
      const S* r0 = plane + 2 * oh * ip.sh;
      const S* r1 = r0 + ip.sh;
      const S* grow = g + oh * gp.sh;
      S* o0 = o + 2 * oh * W;
      S* o1 = o0 + W;
      const int64_t gsw = gp.sw;
#pragma omp simd
      for (int64_t ow = 0; ow < oW; ++ow) {
        const S a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
        S m = a;
        int k = 0;
        if (b > m || b != b) { m = b; k = 1; }
        if (c > m || c != c) { m = c; k = 2; }
        if (d > m || d != d) k = 3;
        const S v = grow[ow * gsw];
        o0[2 * ow] = k == 0 ? v : S(0);
        o0[2 * ow + 1] = k == 1 ? v : S(0);
        o1[2 * ow] = k == 2 ? v : S(0);
        o1[2 * ow + 1] = k == 3 ? v : S(0);
      }
      for (int64_t w = 2 * oW; w < W; ++w) o0[w] = o1[w] = S(0);  // columns no window covers
    }
    std::fill(o + 2 * oH * W, o + H * W, S(0));  // rows no window covers
  }
}

/// grad_input (contiguous, written) of a max pooling without saved indices: each window's
/// maximum is found again and its grad_output element added there.
template <typename S>
void max_pool_backward_recompute(const S* go, const Planes& gp, const S* in, const Planes& ip,
                                 const Pool2d& p, S* gi) {
  using A = compute_t<S>;
  if constexpr (std::is_floating_point_v<S> && std::is_same_v<S, A>) {
    if (p.kH == 2 && p.kW == 2 && p.sH == 2 && p.sW == 2 && p.pH == 0 && p.pW == 0 &&
        p.dH == 1 && p.dW == 1 && ip.sw == 1 && 2 * gp.H <= ip.H && 2 * gp.W <= ip.W) {
      max_pool_backward_2x2(go, gp, in, ip, gi);
      return;
    }
  }
  const int64_t P = ip.count(), HW = ip.H * ip.W;
#pragma omp parallel if (worth_parallel(P, P * gp.H * gp.W * p.kH * p.kW))
  {
    std::vector<A> acc(static_cast<size_t>(HW));
#pragma omp for schedule(static)
    for (int64_t pl = 0; pl < P; ++pl) {
      std::fill(acc.begin(), acc.end(), A(0));
      const S* plane = in + ip.offset(pl);
      const S* g = go + gp.offset(pl);
      for (int64_t oh = 0; oh < gp.H; ++oh)
        for (int64_t ow = 0; ow < gp.W; ++ow) {
          A maxval;
          const int64_t i = plane_argmax<S>(plane, ip, p, oh, ow, maxval);
          acc[static_cast<size_t>(i)] += convert<A>(g[oh * gp.sh + ow * gp.sw]);
        }
      S* o = gi + pl * HW;
      for (int64_t i = 0; i < HW; ++i) o[i] = convert<S>(acc[static_cast<size_t>(i)]);
    }
  }
}

/// grad_input (contiguous, written) from grad_output and indices (any strides): each
/// output's gradient is added at its index. Returns false if an index is out of its plane.
template <typename S>
bool max_pool_backward(const S* go, const Planes& gp, const int64_t* idx, const Planes& xp,
                       const Planes& ip, S* gi) {
  using A = compute_t<S>;
  const int64_t P = ip.count(), HW = ip.H * ip.W;
  std::atomic<bool> ok{true};
#pragma omp parallel if (worth_parallel(P, P * (HW + gp.H * gp.W)))
  {
    std::vector<A> acc(static_cast<size_t>(HW));
#pragma omp for schedule(static)
    for (int64_t pl = 0; pl < P; ++pl) {
      std::fill(acc.begin(), acc.end(), A(0));
      const S* g = go + gp.offset(pl);
      const int64_t* x = idx + xp.offset(pl);
      for (int64_t oh = 0; oh < gp.H; ++oh)
        for (int64_t ow = 0; ow < gp.W; ++ow) {
          const int64_t i = x[oh * xp.sh + ow * xp.sw];
          if (i == -1) continue;
          if (i < 0 || i >= HW) {
            ok.store(false, std::memory_order_relaxed);
            continue;
          }
          acc[static_cast<size_t>(i)] += convert<A>(g[oh * gp.sh + ow * gp.sw]);
        }
      S* o = gi + pl * HW;
      for (int64_t i = 0; i < HW; ++i) o[i] = convert<S>(acc[static_cast<size_t>(i)]);
    }
  }
  return ok.load();
}

/// grad_input of a max pooling: each grad_output element added at the input position its
/// index names (shared by max_pool2d and adaptive_max_pool2d backward).
Tensor scatter_max_grad(std::string_view op, std::string_view kernel, const Tensor& grad_output,
                        const Tensor& indices, const Tensor& self) {
  const bool cl = runs_nhwc(self);
  Tensor gi = empty_in_format(self.sizes(), options_like(self, self.dtype()), cl);
  if (gi.numel() == 0) return gi;
  bool ok = true;
  dispatch_pool(kernel, self.dtype(), false, false, gi, [&]<typename S>(S*) {
    if (cl) {
      const Tensor g = dense_nhwc(grad_output), x = dense_nhwc(indices);
      ok = nhwc::max_backward_indices<S>(static_cast<const S*>(g.data_ptr()),
                                         static_cast<const int64_t*>(x.data_ptr()),
                                         geometry_of(self), g.size(2), g.size(3),
                                         static_cast<S*>(gi.data_ptr()));
      return;
    }
    ok = max_pool_backward<S>(static_cast<const S*>(grad_output.data_ptr()), planes_of(grad_output),
                              static_cast<const int64_t*>(indices.data_ptr()), planes_of(indices),
                              planes_of(self), static_cast<S*>(gi.data_ptr()));
  });
  LOOM_CHECK_T(IndexError, ok, op, ": an index in indices ", indices.describe(),
               " is outside its input plane of ", self.size(-2), " x ", self.size(-1), " elements");
  return gi;
}

std::tuple<Tensor, Tensor> max_pool2d_impl(std::string_view op, const Tensor& self, const Pool2d& p,
                                           bool with_indices) {
  check_defined(op, {{"self", self}});
  const auto [oH, oW] = meta::check_max_pool2d(op, self, p);
  const std::vector<int64_t> sizes = pooled_sizes(self, oH, oW);
  const bool cl = runs_nhwc(self);
  Tensor out = empty_in_format(sizes, options_like(self, self.dtype()), cl);
  Tensor idx =
      with_indices ? empty_in_format(sizes, options_like(self, DType::Int64), cl) : Tensor();
  if (out.numel() == 0) return {out, idx};
  dispatch_pool("max_pool2d", self.dtype(), /*ints=*/true, false, out, [&]<typename S>(S*) {
    if (cl) {
      const Tensor x = dense_nhwc(self);
      nhwc::max_forward<S>(static_cast<const S*>(x.data_ptr()), geometry_of(x), p, oH, oW,
                           static_cast<S*>(out.data_ptr()),
                           with_indices ? static_cast<int64_t*>(idx.data_ptr()) : nullptr);
      return;
    }
    max_pool_forward<S>(static_cast<const S*>(self.data_ptr()), planes_of(self), p, oH, oW,
                        static_cast<S*>(out.data_ptr()),
                        with_indices ? static_cast<int64_t*>(idx.data_ptr()) : nullptr);
  });
  return {out, idx};
}

Tensor max_pool2d_backward_impl(std::string_view op, const Tensor& grad_output, const Tensor& self,
                                const Pool2d& p, const Tensor& indices) {
  check_defined(op, {{"grad_output", grad_output}, {"self", self}, {"indices", indices}});
  check_same_device(op, {{"grad_output", grad_output}, {"self", self}, {"indices", indices}});
  meta::check_grad_dtype(op, self, grad_output, "gradOutput");
  meta::check_indices_dtype(op, indices);
  const auto [oH, oW] = meta::check_max_pool2d(op, self, p);
  meta::check_pool2d_grad_shapes(op, grad_output, indices, self, oH, oW);
  return scatter_max_grad(op, "max_pool2d_backward", grad_output, indices, self);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const Pool2d p =
      meta::parse_pool2d("max_pool2d", kernel_size, stride, padding, &dilation, ceil_mode);
  return max_pool2d_impl("max_pool2d_with_indices", self, p, true);
}

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const Pool2d p =
      meta::parse_pool2d("max_pool2d", kernel_size, stride, padding, &dilation, ceil_mode);
  return std::get<0>(max_pool2d_impl("max_pool2d", self, p, false));
}

Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices) {
  constexpr std::string_view op = "max_pool2d_with_indices_backward";
  const Pool2d p = meta::parse_pool2d(op, kernel_size, stride, padding, &dilation, ceil_mode);
  return max_pool2d_backward_impl(op, grad_output, self, p, indices);
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           bool ceil_mode) {
  constexpr std::string_view op = "max_pool2d_backward";
  const Pool2d p = meta::parse_pool2d(op, kernel_size, stride, padding, &dilation, ceil_mode);
  // The checks in the order of the former path (the forward's, then the backward's).
  check_defined(op, {{"self", self}});
  const auto [oH, oW] = meta::check_max_pool2d(op, self, p);
  check_defined(op, {{"grad_output", grad_output}, {"self", self}});
  check_same_device(op, {{"grad_output", grad_output}, {"self", self}});
  meta::check_grad_dtype(op, self, grad_output, "gradOutput");
  meta::check_pool2d_grad_shapes(op, grad_output, Tensor(), self, oH, oW);
  const bool cl = runs_nhwc(self);
  Tensor gi = empty_in_format(self.sizes(), options_like(self, self.dtype()), cl);
  if (gi.numel() == 0) return gi;
  dispatch_pool("max_pool2d_backward", self.dtype(), false, false, gi, [&]<typename S>(S*) {
    if (cl) {
      const Tensor x = dense_nhwc(self), g = dense_nhwc(grad_output);
      nhwc::max_backward_recompute<S>(static_cast<const S*>(g.data_ptr()),
                                      static_cast<const S*>(x.data_ptr()), geometry_of(x), p, oH,
                                      oW, static_cast<S*>(gi.data_ptr()));
      return;
    }
    max_pool_backward_recompute<S>(static_cast<const S*>(grad_output.data_ptr()),
                                   planes_of(grad_output), static_cast<const S*>(self.data_ptr()),
                                   planes_of(self), p, static_cast<S*>(gi.data_ptr()));
  });
  return gi;
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  constexpr std::string_view op = "max_pool1d";
  check_defined(op, {{"self", self}});
  const Pool2d p =
      meta::parse_max_pool1d(op, self, kernel_size, stride, padding, dilation, ceil_mode);
  auto [out, idx] = max_pool2d_impl("max_pool1d_with_indices", unsqueeze_h(self), p, true);
  return {squeeze_h(out), squeeze_h(idx)};
}

/// PyTorch's check_max_pool1d (its path without indices).
Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  check_defined("max_pool1d", {{"self", self}});
  LOOM_CHECK(self.dim() == 2 || self.dim() == 3,
             "max_pool1d() Expected 2D or 3D input tensor, but got ", sizes_str(self.sizes()));
  LOOM_CHECK(kernel_size.size() == 1,
             "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but "
             "got size ",
             kernel_size.size());
  LOOM_CHECK(stride.empty() || stride.size() == 1,
             "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 "
             "but got size ",
             stride.size());
  LOOM_CHECK(padding.size() == 1,
             "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but "
             "got size ",
             padding.size());
  LOOM_CHECK(dilation.size() == 1,
             "max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but "
             "got size ",
             dilation.size());
  if (stride.empty()) stride = kernel_size;
  LOOM_CHECK(kernel_size[0] > 0, "max_pool1d() kernel_size must be greater than zero, but got ",
             kernel_size[0]);
  LOOM_CHECK(stride[0] > 0, "max_pool1d() stride must be greater than zero, but got ", stride[0]);
  LOOM_CHECK(padding[0] >= 0, "max_pool1d() padding must be non-negative, but got ", padding[0]);
  LOOM_CHECK(padding[0] <= kernel_size[0] / 2,
             "max_pool1d() padding should be at most half of kernel size, but got padding=",
             padding[0], " and kernel_size=", kernel_size[0]);
  LOOM_CHECK(dilation[0] > 0, "max_pool1d() dilation must be greater than zero, but got ",
             dilation[0]);
  const int64_t OW = pooling_output_shape("max_pool1d", self.size(-1), kernel_size[0], padding[0],
                                          stride[0], dilation[0], ceil_mode);
  LOOM_CHECK(OW > 0, "max_pool1d() Invalid computed output size: ", OW);
  const Pool2d p = lift_1d(kernel_size, stride, padding, dilation[0], ceil_mode);
  return squeeze_h(std::get<0>(max_pool2d_impl("max_pool1d", unsqueeze_h(self), p, false)));
}

// ---- average pooling ----

template <typename S>
void avg_pool_forward(const S* in, const Planes& ip, const Pool2d& p, int64_t oH, int64_t oW,
                      bool count_include_pad, std::optional<int64_t> divisor_override, S* out) {
  using A = compute_t<S>;
  const int64_t P = ip.count(), L = oH * oW;
#pragma omp parallel for if (worth_parallel(P, P * L * p.kH * p.kW)) schedule(static)
  for (int64_t pl = 0; pl < P; ++pl) {
    const S* plane = in + ip.offset(pl);
    S* o = out + pl * L;
    for (int64_t oh = 0; oh < oH; ++oh)
      for (int64_t ow = 0; ow < oW; ++ow) {
        const AvgWindow w = avg_window(p, ip.H, ip.W, oh, ow, count_include_pad, divisor_override);
        if (w.h0 >= w.h1 || w.w0 >= w.w1) {
          o[oh * oW + ow] = convert<S>(A(0));
          continue;
        }
        A sum = 0;
        for (int64_t ih = w.h0; ih < w.h1; ++ih)
          for (int64_t iw = w.w0; iw < w.w1; ++iw)
            sum += convert<A>(plane[ih * ip.sh + iw * ip.sw]);
        o[oh * oW + ow] = convert<S>(static_cast<A>(sum / static_cast<A>(w.divisor)));
      }
  }
}

template <typename S>
void avg_pool_backward(const S* go, const Planes& gp, const Planes& ip, const Pool2d& p,
                       bool count_include_pad, std::optional<int64_t> divisor_override, S* gi) {
  using A = compute_t<S>;
  const int64_t P = ip.count(), HW = ip.H * ip.W;
#pragma omp parallel if (worth_parallel(P, P * gp.H * gp.W * p.kH * p.kW))
  {
    std::vector<A> acc(static_cast<size_t>(HW));
#pragma omp for schedule(static)
    for (int64_t pl = 0; pl < P; ++pl) {
      std::fill(acc.begin(), acc.end(), A(0));
      const S* g = go + gp.offset(pl);
      for (int64_t oh = 0; oh < gp.H; ++oh)
        for (int64_t ow = 0; ow < gp.W; ++ow) {
          const AvgWindow w =
              avg_window(p, ip.H, ip.W, oh, ow, count_include_pad, divisor_override);
          if (w.h0 >= w.h1 || w.w0 >= w.w1) continue;
          const A delta =
              static_cast<A>(convert<A>(g[oh * gp.sh + ow * gp.sw]) / static_cast<A>(w.divisor));
          for (int64_t ih = w.h0; ih < w.h1; ++ih)
            for (int64_t iw = w.w0; iw < w.w1; ++iw)
              acc[static_cast<size_t>(ih * ip.W + iw)] += delta;
        }
      S* o = gi + pl * HW;
      for (int64_t i = 0; i < HW; ++i) o[i] = convert<S>(acc[static_cast<size_t>(i)]);
    }
  }
}

Tensor avg_pool2d_impl(std::string_view op, const Tensor& self, const Pool2d& p,
                       bool count_include_pad, std::optional<int64_t> divisor_override) {
  check_defined(op, {{"self", self}});
  const auto [oH, oW] = meta::check_avg_pool2d(op, self, p, divisor_override);
  const bool cl = runs_nhwc(self);
  Tensor out = empty_in_format(pooled_sizes(self, oH, oW), options_like(self, self.dtype()), cl);
  if (out.numel() == 0) return out;
  dispatch_pool("avg_pool2d", self.dtype(), true, /*long_only=*/true, out, [&]<typename S>(S*) {
    if (cl) {
      const Tensor x = dense_nhwc(self);
      nhwc::avg_forward<S>(static_cast<const S*>(x.data_ptr()), geometry_of(x), p, oH, oW,
                           count_include_pad, divisor_override, static_cast<S*>(out.data_ptr()));
      return;
    }
    avg_pool_forward<S>(static_cast<const S*>(self.data_ptr()), planes_of(self), p, oH, oW,
                        count_include_pad, divisor_override, static_cast<S*>(out.data_ptr()));
  });
  return out;
}

Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const Pool2d p =
      meta::parse_pool2d("avg_pool2d", kernel_size, stride, padding, nullptr, ceil_mode);
  return avg_pool2d_impl("avg_pool2d", self, p, count_include_pad, divisor_override);
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr std::string_view op = "avg_pool2d_backward";
  check_defined(op, {{"grad_output", grad_output}, {"self", self}});
  check_same_device(op, {{"grad_output", grad_output}, {"self", self}});
  const Pool2d p = meta::parse_pool2d(op, kernel_size, stride, padding, nullptr, ceil_mode);
  const auto [oH, oW] = meta::check_avg_pool2d(op, self, p, divisor_override);
  meta::check_grad_dtype(op, self, grad_output, "gradOutput");
  meta::check_pool2d_grad_shapes(op, grad_output, Tensor(), self, oH, oW);
  const bool cl = runs_nhwc(self);
  Tensor gi = empty_in_format(self.sizes(), options_like(self, self.dtype()), cl);
  if (gi.numel() == 0) return gi;
  dispatch_pool("avg_pool2d_backward", self.dtype(), true, true, gi, [&]<typename S>(S*) {
    if (cl) {
      const Tensor g = dense_nhwc(grad_output);
      nhwc::avg_backward<S>(static_cast<const S*>(g.data_ptr()), geometry_of(self), p, oH, oW,
                            count_include_pad, divisor_override, static_cast<S*>(gi.data_ptr()));
      return;
    }
    avg_pool_backward<S>(static_cast<const S*>(grad_output.data_ptr()), planes_of(grad_output),
                         planes_of(self), p, count_include_pad, divisor_override,
                         static_cast<S*>(gi.data_ptr()));
  });
  return gi;
}

Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  constexpr std::string_view op = "avg_pool1d";
  check_defined(op, {{"self", self}});
  const Pool2d p = meta::parse_avg_pool1d(op, self, kernel_size, stride, padding, ceil_mode);
  return squeeze_h(avg_pool2d_impl(op, unsqueeze_h(self), p, count_include_pad, std::nullopt));
}

// ---- adaptive pooling ----

/// The first and one-past-last input index of adaptive bin a of b over c inputs.
inline int64_t start_index(int64_t a, int64_t b, int64_t c) {
  return (a / b) * c + ((a % b) * c) / b;
}
inline int64_t end_index(int64_t a, int64_t b, int64_t c) { return 1 + ((a + 1) * c - 1) / b; }

template <typename S>
void adaptive_avg_forward(const S* in, const Planes& ip, int64_t oH, int64_t oW, S* out) {
  using A = compute_t<S>;
  const int64_t P = ip.count(), L = oH * oW;
#pragma omp parallel for if (worth_parallel(P, P * ip.H * ip.W)) schedule(static)
  for (int64_t pl = 0; pl < P; ++pl) {
    const S* plane = in + ip.offset(pl);
    S* o = out + pl * L;
    for (int64_t oh = 0; oh < oH; ++oh) {
      const int64_t h0 = start_index(oh, oH, ip.H), h1 = end_index(oh, oH, ip.H);
      for (int64_t ow = 0; ow < oW; ++ow) {
        const int64_t w0 = start_index(ow, oW, ip.W), w1 = end_index(ow, oW, ip.W);
        A sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += convert<A>(plane[ih * ip.sh + iw * ip.sw]);
        o[oh * oW + ow] = convert<S>(sum / static_cast<A>(h1 - h0) / static_cast<A>(w1 - w0));
      }
    }
  }
}

template <typename S>
void adaptive_avg_backward(const S* go, const Planes& gp, const Planes& ip, S* gi) {
  using A = compute_t<S>;
  const int64_t P = ip.count(), HW = ip.H * ip.W;
#pragma omp parallel if (worth_parallel(P, P * (HW + gp.H * gp.W)))
  {
    std::vector<A> acc(static_cast<size_t>(HW));
#pragma omp for schedule(static)
    for (int64_t pl = 0; pl < P; ++pl) {
      std::fill(acc.begin(), acc.end(), A(0));
      const S* g = go + gp.offset(pl);
      for (int64_t oh = 0; oh < gp.H; ++oh) {
        const int64_t h0 = start_index(oh, gp.H, ip.H), h1 = end_index(oh, gp.H, ip.H);
        for (int64_t ow = 0; ow < gp.W; ++ow) {
          const int64_t w0 = start_index(ow, gp.W, ip.W), w1 = end_index(ow, gp.W, ip.W);
          const A delta = convert<A>(g[oh * gp.sh + ow * gp.sw]) / static_cast<A>(h1 - h0) /
                          static_cast<A>(w1 - w0);
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) acc[static_cast<size_t>(ih * ip.W + iw)] += delta;
        }
      }
      S* o = gi + pl * HW;
      for (int64_t i = 0; i < HW; ++i) o[i] = convert<S>(acc[static_cast<size_t>(i)]);
    }
  }
}

template <typename S>
void adaptive_max_forward(const S* in, const Planes& ip, int64_t oH, int64_t oW, S* out,
                          int64_t* idx) {
  using A = compute_t<S>;
  const int64_t P = ip.count(), L = oH * oW;
#pragma omp parallel for if (worth_parallel(P, P * ip.H * ip.W)) schedule(static)
  for (int64_t pl = 0; pl < P; ++pl) {
    const S* plane = in + ip.offset(pl);
    S* o = out + pl * L;
    int64_t* ix = idx + pl * L;
    for (int64_t oh = 0; oh < oH; ++oh) {
      const int64_t h0 = start_index(oh, oH, ip.H), h1 = end_index(oh, oH, ip.H);
      for (int64_t ow = 0; ow < oW; ++ow) {
        const int64_t w0 = start_index(ow, oW, ip.W), w1 = end_index(ow, oW, ip.W);
        int64_t best = h0 * ip.W + w0;
        A maxval = lowest<A>();
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) {
            const A v = convert<A>(plane[ih * ip.sh + iw * ip.sw]);
            if (v > maxval || is_nan(v)) {
              maxval = v;
              best = ih * ip.W + iw;
            }
          }
        o[oh * oW + ow] = convert<S>(maxval);
        ix[oh * oW + ow] = best;
      }
    }
  }
}

Tensor adaptive_avg_impl(std::string_view op, const Tensor& self, IntArrayRef output_size) {
  check_defined(op, {{"self", self}});
  meta::check_adaptive_avg_pool2d(self, output_size);
  const int64_t oH = output_size[0], oW = output_size[1];
  Tensor out = new_tensor(pooled_sizes(self, oH, oW), self, self.dtype());
  if (out.numel() == 0) return out;
  dispatch_pool("adaptive_avg_pool2d", self.dtype(), false, false, out, [&]<typename S>(S*) {
    adaptive_avg_forward<S>(static_cast<const S*>(self.data_ptr()), planes_of(self), oH, oW,
                            static_cast<S*>(out.data_ptr()));
  });
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  return adaptive_avg_impl("adaptive_avg_pool2d", self, output_size);
}

Tensor adaptive_avg_pool2d_internal(const Tensor& self, IntArrayRef output_size) {
  return adaptive_avg_impl("_adaptive_avg_pool2d", self, output_size);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  constexpr std::string_view op = "_adaptive_avg_pool2d_backward";
  check_defined(op, {{"grad_output", grad_output}, {"self", self}});
  check_same_device(op, {{"grad_output", grad_output}, {"self", self}});
  meta::check_adaptive_avg_pool2d_backward(op, grad_output, self);
  Tensor gi = new_tensor(self.sizes(), self, self.dtype());
  if (gi.numel() == 0) return gi;
  dispatch_pool("adaptive_avg_pool2d_backward_cpu", self.dtype(), false, false, gi,
                [&]<typename S>(S*) {
                  adaptive_avg_backward<S>(static_cast<const S*>(grad_output.data_ptr()),
                                           planes_of(grad_output), planes_of(self),
                                           static_cast<S*>(gi.data_ptr()));
                });
  return gi;
}

Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size) {
  constexpr std::string_view op = "adaptive_avg_pool1d";
  check_defined(op, {{"self", self}});
  meta::check_adaptive_pool1d(op, self, output_size, /*is_max=*/false);
  const int64_t out2[2] = {1, output_size[0]};
  return squeeze_h(adaptive_avg_pool2d(unsqueeze_h(self), IntArrayRef(out2, 2)));
}

std::tuple<Tensor, Tensor> adaptive_max_impl(std::string_view op, const Tensor& self,
                                             IntArrayRef output_size) {
  check_defined(op, {{"self", self}});
  meta::check_adaptive_max_pool2d(op, self, output_size);
  const int64_t oH = output_size[0], oW = output_size[1];
  const std::vector<int64_t> sizes = pooled_sizes(self, oH, oW);
  Tensor out = new_tensor(sizes, self, self.dtype());
  Tensor idx = new_tensor(sizes, self, DType::Int64);
  if (out.numel() == 0) return {out, idx};
  dispatch_pool("adaptive_max_pool2d", self.dtype(), false, false, out, [&]<typename S>(S*) {
    adaptive_max_forward<S>(static_cast<const S*>(self.data_ptr()), planes_of(self), oH, oW,
                            static_cast<S*>(out.data_ptr()), static_cast<int64_t*>(idx.data_ptr()));
  });
  return {out, idx};
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  return adaptive_max_impl("adaptive_max_pool2d", self, output_size);
}

Tensor adaptive_max_pool2d_backward(const Tensor& grad_output, const Tensor& self,
                                    const Tensor& indices) {
  constexpr std::string_view op = "adaptive_max_pool2d_backward";
  check_defined(op, {{"grad_output", grad_output}, {"self", self}, {"indices", indices}});
  check_same_device(op, {{"grad_output", grad_output}, {"self", self}, {"indices", indices}});
  meta::check_adaptive_max_pool2d_backward(op, grad_output, self, indices);
  return scatter_max_grad(op, "adaptive_max_pool2d_backward", grad_output, indices, self);
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& self, IntArrayRef output_size) {
  constexpr std::string_view op = "adaptive_max_pool1d";
  check_defined(op, {{"self", self}});
  meta::check_adaptive_pool1d(op, self, output_size, /*is_max=*/true);
  const int64_t out2[2] = {1, output_size[0]};
  auto [out, idx] = adaptive_max_impl(op, unsqueeze_h(self), IntArrayRef(out2, 2));
  return {squeeze_h(out), squeeze_h(idx)};
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("max_pool2d", &max_pool2d);
  m.impl("max_pool2d_with_indices", &max_pool2d_with_indices);
  m.impl("max_pool2d_with_indices_backward", &max_pool2d_with_indices_backward);
  m.impl("max_pool2d_backward", &max_pool2d_backward);
  m.impl("max_pool1d", &max_pool1d);
  m.impl("max_pool1d_with_indices", &max_pool1d_with_indices);
  m.impl("avg_pool2d", &avg_pool2d);
  m.impl("avg_pool2d_backward", &avg_pool2d_backward);
  m.impl("avg_pool1d", &avg_pool1d);
  m.impl("adaptive_avg_pool2d", &adaptive_avg_pool2d);
  m.impl("_adaptive_avg_pool2d", &adaptive_avg_pool2d_internal);
  m.impl("_adaptive_avg_pool2d_backward", &adaptive_avg_pool2d_backward);
  m.impl("adaptive_avg_pool1d", &adaptive_avg_pool1d);
  m.impl("adaptive_max_pool2d", &adaptive_max_pool2d);
  m.impl("adaptive_max_pool2d_backward", &adaptive_max_pool2d_backward);
  m.impl("adaptive_max_pool1d", &adaptive_max_pool1d);
}

}  // namespace loom::ops::cpu::pool
