// Reference CPU kernels: nearest, nearest-exact and (bi/tri)linear upsampling of 1-3 spatial
// dims and their backward ops.
//
// Note [Upsample source indices]: the source index of each output index follows PyTorch's
// CPU kernels exactly (aten/src/ATen/native/UpSample.h), including their float arithmetic:
// - nearest: floor(dst * scale) clamped to in - 1, in float, except that out == in copies
//   and out == 2 * in halves the index; nearest-exact: floor((dst + 0.5) * scale).
// - linear: area_pixel_compute_source_index: scale * dst with align_corners, else
//   scale * (dst + 0.5) - 0.5 clamped at 0; the two neighbours and their weights as in
//   guard_index_and_lambda; out == in copies. Computed in the op-math type (float for
//   float and the 16-bit floats, double for double).
// - scale: with align_corners (in - 1) / (out - 1) (0 when out == 1); otherwise 1 / s when
//   the op is given a scale s > 0 (F.interpolate with scale_factor), else in / out.
// Each spatial dim becomes a table of taps (source index, weight); a forward sums the taps
// of the dims nested outermost first (as PyTorch), a backward scatters along the same taps
// into a double buffer per (sample, channel) plane.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/meta/result_size.h"

namespace loom::ops::cpu::nn {
namespace {

using reduction::data_of;
using reduction::DimVec;
using reduction::kGrain;
using reduction::load;
using reduction::offset_of;
using reduction::store;

enum class Interp { Nearest, NearestExact, Linear };
using Scales = std::array<std::optional<double>, 3>;

template <typename C>
C compute_scales_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<C>(1.0 / *scale)
                             : static_cast<C>(in) / static_cast<C>(out);
}

int64_t nearest_index(Interp mode, int64_t j, int64_t in, int64_t out,
                      std::optional<double> scale) {
  if (mode == Interp::Nearest) {
    if (out == in) return j;
    if (out == 2 * in) return j >> 1;
  }
  const float s = compute_scales_value<float>(scale, in, out);
  const float f = mode == Interp::Nearest ? static_cast<float>(j) * s
                                          : static_cast<float>((static_cast<double>(j) + 0.5) * s);
  return std::min(static_cast<int64_t>(std::floor(f)), in - 1);
}

/// One spatial dim's taps: output index j reads src[t][j] with weight w[t][j], t < taps.
template <typename C>
struct Taps {
  int64_t in = 1, out = 1;
  int taps = 1;
  std::array<std::vector<int64_t>, 2> src{std::vector<int64_t>{0}, std::vector<int64_t>{0}};
  std::array<std::vector<C>, 2> w{std::vector<C>{C(1)}, std::vector<C>{C(0)}};
};

template <typename C>
Taps<C> make_taps(Interp mode, int64_t in, int64_t out, bool align_corners,
                  std::optional<double> scale) {
  Taps<C> t;
  t.in = in;
  t.out = out;
  for (auto& v : t.src) v.assign(static_cast<size_t>(out), 0);
  for (auto& v : t.w) v.assign(static_cast<size_t>(out), C(0));
  if (mode != Interp::Linear) {
    for (int64_t j = 0; j < out; ++j) {
      t.src[0][j] = nearest_index(mode, j, in, out, scale);
      t.w[0][j] = C(1);
    }
    return t;
  }
  C ratio;
  if (align_corners) {
    ratio = out > 1 ? static_cast<C>(in - 1) / static_cast<C>(out - 1) : C(0);
  } else {
    ratio = compute_scales_value<C>(scale, in, out);
  }
  t.taps = out == in ? 1 : 2;
  for (int64_t j = 0; j < out; ++j) {
    if (out == in) {
      t.src[0][j] = t.src[1][j] = j;
      t.w[0][j] = C(1);
      continue;
    }
    C real;
    if (align_corners) {
      real = ratio * static_cast<C>(j);
    } else {
      real = ratio * (static_cast<C>(j) + C(0.5)) - C(0.5);
      real = real < C(0) ? C(0) : real;
    }
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const C l1 = std::min(std::max(real - static_cast<C>(i0), C(0)), C(1));
    t.src[0][j] = i0;
    t.src[1][j] = i0 + (i0 < in - 1 ? 1 : 0);
    t.w[0][j] = C(1) - l1;
    t.w[1][j] = l1;
  }
  return t;
}

/// The geometry of one call: K spatial dims in slots 3 - K .. 2 (the others are size 1).
template <typename C>
struct Plan {
  std::array<Taps<C>, 3> dims;
  int64_t planes = 0;
  DimVec lead_sizes;  // N, C
};

template <typename C>
Plan<C> make_plan(Interp mode, IntArrayRef input_size, IntArrayRef output_size, bool align_corners,
                  const Scales& scales) {
  Plan<C> p;
  const auto K = static_cast<int64_t>(output_size.size());
  p.lead_sizes = {input_size[0], input_size[1]};
  p.planes = input_size[0] * input_size[1];
  for (int64_t k = 0; k < K; ++k) {
    p.dims[3 - K + k] =
        make_taps<C>(mode, input_size[2 + k], output_size[k], align_corners, scales[3 - K + k]);
  }
  return p;
}

/// Strides of t's N and C dims and of its spatial dims by slot (0 for absent slots).
std::pair<DimVec, std::array<int64_t, 3>> plan_strides(const Tensor& t) {
  const int64_t K = t.dim() - 2;
  std::array<int64_t, 3> st{0, 0, 0};
  for (int64_t k = 0; k < K; ++k) st[3 - K + k] = t.stride(2 + k);
  return {DimVec{t.stride(0), t.stride(1)}, st};
}

/// PyTorch's upsample_{1,2,3}d_common_check, its messages prefixed with the op's name.
void check_sizes(const char* op, IntArrayRef input_size, IntArrayRef output_size, int64_t K) {
  LOOM_CHECK(static_cast<int64_t>(output_size.size()) == K, op,
             ": It is expected output_size equals to ", K, ", but got size ", output_size.size());
  LOOM_CHECK(static_cast<int64_t>(input_size.size()) == K + 2, op,
             ": It is expected input_size equals to ", K + 2, ", but got size ", input_size.size());
  static constexpr const char* kNames[3] = {"D", "H", "W"};
  bool positive = true;
  std::string in_desc, out_desc;
  for (int64_t k = 0; k < K; ++k) {
    positive = positive && input_size[2 + k] > 0 && output_size[k] > 0;
    const char* sep = k == 0 ? "" : ", ";
    in_desc += str_cat(sep, kNames[3 - K + k], ": ", input_size[2 + k]);
    out_desc += str_cat(sep, kNames[3 - K + k], ": ", output_size[k]);
  }
  LOOM_CHECK(positive, op, ": Input and output sizes should be greater than 0, but got input (",
             in_desc, K == 1 ? ") and output (" : ") output (", out_desc, ")");
}

template <typename W>
void nearest_gather(const Plan<float>& p, const Tensor& in, const Tensor& out) {
  const auto strides = plan_strides(in);
  const DimVec& lead = strides.first;
  const std::array<int64_t, 3>& st = strides.second;
  std::array<std::vector<int64_t>, 3> off;
  for (int k = 0; k < 3; ++k) {
    off[k].resize(p.dims[k].src[0].size());
    for (size_t j = 0; j < off[k].size(); ++j) off[k][j] = p.dims[k].src[0][j] * st[k];
  }
  const W* src = static_cast<const W*>(in.data_ptr());
  W* dst = static_cast<W*>(out.data_ptr());
  const int64_t o0 = p.dims[0].out, o1 = p.dims[1].out, o2 = p.dims[2].out;
#pragma omp parallel for schedule(static) if (out.numel() >= kGrain && p.planes > 1)
  for (int64_t q = 0; q < p.planes; ++q) {
    const W* base = src + offset_of(q, p.lead_sizes, lead);
    W* o = dst + q * o0 * o1 * o2;
    for (int64_t a = 0; a < o0; ++a) {
      for (int64_t b = 0; b < o1; ++b) {
        const W* row = base + off[0][a] + off[1][b];
        for (int64_t c = 0; c < o2; ++c) *o++ = row[off[2][c]];
      }
    }
  }
}

/// The input rows (at most 4) that output row (a, b) of the two outer slots reads, with
/// the products of their weights; offsets are row * row_stride per slot.
template <typename C>
struct RowTaps {
  int n = 0;
  int64_t off[4];
  C w[4];
};

template <typename C>
RowTaps<C> row_taps(const Plan<C>& p, int64_t a, int64_t b, int64_t s0, int64_t s1) {
  RowTaps<C> r;
  for (int ta = 0; ta < p.dims[0].taps; ++ta) {
    for (int tb = 0; tb < p.dims[1].taps; ++tb) {
      r.off[r.n] = p.dims[0].src[ta][a] * s0 + p.dims[1].src[tb][b] * s1;
      r.w[r.n] = p.dims[0].w[ta][a] * p.dims[1].w[tb][b];
      ++r.n;
    }
  }
  return r;
}

template <typename T>
void linear_forward(const Plan<reduction::value_t<T>>& p, const Tensor& in, const Tensor& out) {
  using C = reduction::value_t<T>;
  const auto strides = plan_strides(in);
  const DimVec& lead = strides.first;
  const std::array<int64_t, 3>& st = strides.second;
  const T* src = data_of<T>(in);
  T* dst = data_of<T>(out);
  const auto& d2 = p.dims[2];
  std::vector<int64_t> c0(static_cast<size_t>(d2.out)), c1(c0.size());
  for (int64_t c = 0; c < d2.out; ++c) {
    c0[c] = d2.src[0][c] * st[2];
    c1[c] = d2.src[1][c] * st[2];
  }
  const C* w0 = d2.w[0].data();
  const C* w1 = d2.w[1].data();
  const int64_t rows = p.dims[0].out * p.dims[1].out;
#pragma omp parallel for schedule(static) if (out.numel() >= kGrain && p.planes * rows > 1)
  for (int64_t qr = 0; qr < p.planes * rows; ++qr) {
    const int64_t q = qr / rows, a = (qr % rows) / p.dims[1].out, b = qr % p.dims[1].out;
    const T* base = src + offset_of(q, p.lead_sizes, lead);
    const RowTaps<C> rt = row_taps(p, a, b, st[0], st[1]);
    T* o = dst + qr * d2.out;
    // Per row: w0 * x[i0] + w1 * x[i1] along the last dim, as PyTorch nests it.
    for (int64_t c = 0; c < d2.out; ++c) {
      C acc = 0;
      for (int r = 0; r < rt.n; ++r) {
        const T* row = base + rt.off[r];
        const C v = d2.taps == 2 ? w0[c] * static_cast<C>(load(row + c0[c])) +
                                       w1[c] * static_cast<C>(load(row + c1[c]))
                                 : static_cast<C>(load(row + c0[c]));
        acc += rt.w[r] * v;
      }
      store(o + c, acc);
    }
  }
}

Tensor upsample_forward(const char* op, Interp mode, int64_t K, const Tensor& self,
                        IntArrayRef output_size, bool align_corners, const Scales& scales) {
  check_defined(op, {{"self", self}});
  check_sizes(op, self.sizes(), output_size, K);
  int64_t non_batch = 1;
  for (int64_t d = 1; d < self.dim(); ++d) non_batch *= self.size(d);
  LOOM_CHECK(non_batch != 0, op, ": Non-empty ", K + 2,
             "D data tensor expected but got a tensor with sizes ", sizes_str(self.sizes()));
  std::vector<int64_t> out_sizes{self.size(0), self.size(1)};
  out_sizes.insert(out_sizes.end(), output_size.begin(), output_size.end());
  meta::check_result_numel(op, out_sizes, self.dtype());  // Note [Result sizes that overflow]
  if (mode != Interp::Linear) {
    Tensor out = Tensor::empty(out_sizes, options_like(self, self.dtype()));
    if (out.numel() == 0 || is_meta(out)) return out;
    const Plan<float> p = make_plan<float>(mode, self.sizes(), output_size, false, scales);
    switch (self.element_size()) {
      case 1:
        nearest_gather<uint8_t>(p, self, out);
        break;
      case 2:
        nearest_gather<uint16_t>(p, self, out);
        break;
      case 4:
        nearest_gather<uint32_t>(p, self, out);
        break;
      default:
        nearest_gather<uint64_t>(p, self, out);
        break;
    }
    return out;
  }
  Tensor out;
  dispatch_floats(op, self, [&]<typename T>(T*) {
    out = Tensor::empty(out_sizes, options_like(self, self.dtype()));
    if (out.numel() == 0 || is_meta(out)) return;
    const auto p =
        make_plan<reduction::value_t<T>>(mode, self.sizes(), output_size, align_corners, scales);
    linear_forward<T>(p, self, out);
  });
  return out;
}

Tensor upsample_backward(const char* op, Interp mode, int64_t K, const Tensor& grad_output,
                         IntArrayRef output_size, IntArrayRef input_size, bool align_corners,
                         const Scales& scales) {
  check_defined(op, {{"grad_output", grad_output}});
  check_sizes(op, input_size, output_size, K);
  LOOM_CHECK(grad_output.dim() == K + 2, op, ": Expected grad_output to be a tensor of dimension ",
             K + 2, " but got: dimension ", grad_output.dim());
  for (int64_t d = 0; d < K + 2; ++d) {
    const int64_t want = d < 2 ? input_size[d] : output_size[d - 2];
    LOOM_CHECK(grad_output.size(d) == want, op,
               ": Expected grad_output to have the same shape as output; output.size(", d,
               ") = ", want, " but got grad_output.size(", d, ") = ", grad_output.size(d));
  }
  meta::check_result_numel(op, input_size, grad_output.dtype());
  Tensor grad_input;
  dispatch_floats(op, grad_output, [&]<typename T>(T*) {
    using C = reduction::value_t<T>;
    grad_input = Tensor::empty(input_size, options_like(grad_output, grad_output.dtype()));
    if (grad_input.numel() == 0 || is_meta(grad_input)) return;
    const Plan<C> p = make_plan<C>(mode, input_size, output_size, align_corners, scales);
    const auto strides = plan_strides(grad_output);
    const DimVec& lead = strides.first;
    const std::array<int64_t, 3>& st = strides.second;
    const T* g = data_of<T>(grad_output);
    T* gi = data_of<T>(grad_input);
    const auto& d0 = p.dims[0];
    const auto& d1 = p.dims[1];
    const auto& d2 = p.dims[2];
    const int64_t i12 = d1.in * d2.in;
    const int64_t plane_in = d0.in * i12;
#pragma omp parallel for schedule(static) if (grad_output.numel() >= kGrain && p.planes > 1)
    for (int64_t q = 0; q < p.planes; ++q) {
      std::vector<double> acc(static_cast<size_t>(plane_in), 0.0);
      const T* base = g + offset_of(q, p.lead_sizes, lead);
      for (int64_t a = 0; a < d0.out; ++a) {
        for (int64_t b = 0; b < d1.out; ++b) {
          const RowTaps<C> rt = row_taps(p, a, b, i12, d2.in);
          const T* grow = base + a * st[0] + b * st[1];
          for (int64_t c = 0; c < d2.out; ++c) {
            const double v = load(grow + c * st[2]);
            const double v0 = v * static_cast<double>(d2.w[0][c]);
            const double v1 = v * static_cast<double>(d2.w[1][c]);
            for (int r = 0; r < rt.n; ++r) {
              double* row = acc.data() + rt.off[r];
              row[d2.src[0][c]] += v0 * rt.w[r];
              if (d2.taps == 2) row[d2.src[1][c]] += v1 * rt.w[r];
            }
          }
        }
      }
      T* o = gi + q * plane_in;
      for (int64_t i = 0; i < plane_in; ++i) store(o + i, acc[i]);
    }
  });
  return grad_input;
}

// ---- the ops: thin wrappers naming the mode, the rank and the scales ----

Tensor upsample_nearest1d(const Tensor& self, IntArrayRef output_size, std::optional<double> s) {
  return upsample_forward("upsample_nearest1d", Interp::Nearest, 1, self, output_size, false,
                          {std::nullopt, std::nullopt, s});
}
Tensor upsample_nearest2d(const Tensor& self, IntArrayRef output_size, std::optional<double> sh,
                          std::optional<double> sw) {
  return upsample_forward("upsample_nearest2d", Interp::Nearest, 2, self, output_size, false,
                          {std::nullopt, sh, sw});
}
Tensor upsample_nearest3d(const Tensor& self, IntArrayRef output_size, std::optional<double> sd,
                          std::optional<double> sh, std::optional<double> sw) {
  return upsample_forward("upsample_nearest3d", Interp::Nearest, 3, self, output_size, false,
                          {sd, sh, sw});
}
Tensor upsample_nearest_exact1d(const Tensor& self, IntArrayRef output_size,
                                std::optional<double> s) {
  return upsample_forward("_upsample_nearest_exact1d", Interp::NearestExact, 1, self, output_size,
                          false, {std::nullopt, std::nullopt, s});
}
Tensor upsample_nearest_exact2d(const Tensor& self, IntArrayRef output_size,
                                std::optional<double> sh, std::optional<double> sw) {
  return upsample_forward("_upsample_nearest_exact2d", Interp::NearestExact, 2, self, output_size,
                          false, {std::nullopt, sh, sw});
}
Tensor upsample_nearest_exact3d(const Tensor& self, IntArrayRef output_size,
                                std::optional<double> sd, std::optional<double> sh,
                                std::optional<double> sw) {
  return upsample_forward("_upsample_nearest_exact3d", Interp::NearestExact, 3, self, output_size,
                          false, {sd, sh, sw});
}
Tensor upsample_linear1d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                         std::optional<double> s) {
  return upsample_forward("upsample_linear1d", Interp::Linear, 1, self, output_size, align_corners,
                          {std::nullopt, std::nullopt, s});
}
Tensor upsample_bilinear2d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                           std::optional<double> sh, std::optional<double> sw) {
  return upsample_forward("upsample_bilinear2d", Interp::Linear, 2, self, output_size,
                          align_corners, {std::nullopt, sh, sw});
}
Tensor upsample_trilinear3d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                            std::optional<double> sd, std::optional<double> sh,
                            std::optional<double> sw) {
  return upsample_forward("upsample_trilinear3d", Interp::Linear, 3, self, output_size,
                          align_corners, {sd, sh, sw});
}

Tensor upsample_nearest1d_backward(const Tensor& grad, IntArrayRef output_size,
                                   IntArrayRef input_size, std::optional<double> s) {
  return upsample_backward("upsample_nearest1d_backward", Interp::Nearest, 1, grad, output_size,
                           input_size, false, {std::nullopt, std::nullopt, s});
}
Tensor upsample_nearest2d_backward(const Tensor& grad, IntArrayRef output_size,
                                   IntArrayRef input_size, std::optional<double> sh,
                                   std::optional<double> sw) {
  return upsample_backward("upsample_nearest2d_backward", Interp::Nearest, 2, grad, output_size,
                           input_size, false, {std::nullopt, sh, sw});
}
Tensor upsample_nearest3d_backward(const Tensor& grad, IntArrayRef output_size,
                                   IntArrayRef input_size, std::optional<double> sd,
                                   std::optional<double> sh, std::optional<double> sw) {
  return upsample_backward("upsample_nearest3d_backward", Interp::Nearest, 3, grad, output_size,
                           input_size, false, {sd, sh, sw});
}
Tensor upsample_nearest_exact1d_backward(const Tensor& grad, IntArrayRef output_size,
                                         IntArrayRef input_size, std::optional<double> s) {
  return upsample_backward("_upsample_nearest_exact1d_backward", Interp::NearestExact, 1, grad,
                           output_size, input_size, false, {std::nullopt, std::nullopt, s});
}
Tensor upsample_nearest_exact2d_backward(const Tensor& grad, IntArrayRef output_size,
                                         IntArrayRef input_size, std::optional<double> sh,
                                         std::optional<double> sw) {
  return upsample_backward("_upsample_nearest_exact2d_backward", Interp::NearestExact, 2, grad,
                           output_size, input_size, false, {std::nullopt, sh, sw});
}
Tensor upsample_nearest_exact3d_backward(const Tensor& grad, IntArrayRef output_size,
                                         IntArrayRef input_size, std::optional<double> sd,
                                         std::optional<double> sh, std::optional<double> sw) {
  return upsample_backward("_upsample_nearest_exact3d_backward", Interp::NearestExact, 3, grad,
                           output_size, input_size, false, {sd, sh, sw});
}
Tensor upsample_linear1d_backward(const Tensor& grad, IntArrayRef output_size,
                                  IntArrayRef input_size, bool align_corners,
                                  std::optional<double> s) {
  return upsample_backward("upsample_linear1d_backward", Interp::Linear, 1, grad, output_size,
                           input_size, align_corners, {std::nullopt, std::nullopt, s});
}
Tensor upsample_bilinear2d_backward(const Tensor& grad, IntArrayRef output_size,
                                    IntArrayRef input_size, bool align_corners,
                                    std::optional<double> sh, std::optional<double> sw) {
  return upsample_backward("upsample_bilinear2d_backward", Interp::Linear, 2, grad, output_size,
                           input_size, align_corners, {std::nullopt, sh, sw});
}
Tensor upsample_trilinear3d_backward(const Tensor& grad, IntArrayRef output_size,
                                     IntArrayRef input_size, bool align_corners,
                                     std::optional<double> sd, std::optional<double> sh,
                                     std::optional<double> sw) {
  return upsample_backward("upsample_trilinear3d_backward", Interp::Linear, 3, grad, output_size,
                           input_size, align_corners, {sd, sh, sw});
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("upsample_nearest1d", &upsample_nearest1d);
  m.impl("upsample_nearest2d", &upsample_nearest2d);
  m.impl("upsample_nearest3d", &upsample_nearest3d);
  m.impl("_upsample_nearest_exact1d", &upsample_nearest_exact1d);
  m.impl("_upsample_nearest_exact2d", &upsample_nearest_exact2d);
  m.impl("_upsample_nearest_exact3d", &upsample_nearest_exact3d);
  m.impl("upsample_linear1d", &upsample_linear1d);
  m.impl("upsample_bilinear2d", &upsample_bilinear2d);
  m.impl("upsample_trilinear3d", &upsample_trilinear3d);
  m.impl("upsample_nearest1d_backward", &upsample_nearest1d_backward);
  m.impl("upsample_nearest2d_backward", &upsample_nearest2d_backward);
  m.impl("upsample_nearest3d_backward", &upsample_nearest3d_backward);
  m.impl("_upsample_nearest_exact1d_backward", &upsample_nearest_exact1d_backward);
  m.impl("_upsample_nearest_exact2d_backward", &upsample_nearest_exact2d_backward);
  m.impl("_upsample_nearest_exact3d_backward", &upsample_nearest_exact3d_backward);
  m.impl("upsample_linear1d_backward", &upsample_linear1d_backward);
  m.impl("upsample_bilinear2d_backward", &upsample_bilinear2d_backward);
  m.impl("upsample_trilinear3d_backward", &upsample_trilinear3d_backward);
}

}  // namespace loom::ops::cpu::nn
