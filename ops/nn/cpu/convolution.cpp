// Reference CPU kernels of the convolution family: convolution (plain and transposed, any
// groups), conv1d, conv2d, their padding='valid'/'same' forms, conv_transpose1d/2d and
// convolution_backward. 1-d runs as 2-d with a unit height. Every product is an im2col
// or col2im copy plus the micro-kernel of the blocked GEMM in ops/core/cpu/gemm.h, with
// the weights packed once per call and im2col written straight in the packed layouts, in
// column chunks, in parallel over (image, group, chunk or channel block) tasks, one thread
// each (Note [Convolution as big and small] in cpu/conv_im2col.h). float and double
// compute in their own type; the 16-bit
// floats are widened to float32 and rounded once at the end. Checks and messages follow
// PyTorch's (aten/src/ATen/native/Convolution.cpp), prefixed by the op the user called.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu/conv_im2col.h"
#include "cpu/elementwise.h"
#include "cpu/gemm.h"
#include "cpu/meta.h"
#include "loom/core/tensor_checks.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/memory_format.h"
#include "loom/ops/nn/meta/convolution.h"

namespace loom::ops::cpu::conv {
namespace {

using gemm::Mat;
using meta::ConvParams;
using meta::squeeze_view;
using meta::unsqueeze_view;

// ---- tensor helpers ----

/// t as a contiguous tensor of dtype d (t itself when it already is one); floating only.
Tensor contiguous_as(const Tensor& t, DType d) {
  if (t.dtype() == d && t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.sizes(), options_like(t, d));
  if (t.numel() == 0 || is_meta(out)) return out;
  dispatch_floats("convolution", t, [&]<typename S>(S*) {
    dispatch_floats("convolution", out, [&]<typename D>(D*) {
      const S* src = static_cast<const S*>(t.data_ptr());
      D* dst = static_cast<D*>(out.data_ptr());
      int64_t i = 0;
      gemm::for_each_offset<1>(t.sizes(), {t.strides()},
                               [&](const auto& o) { dst[i++] = convert<D>(src[o[0]]); });
    });
  });
  return out;
}

/// PyTorch's Tensor::toString() for a CPU tensor: "CPUFloatType".
std::string type_string(const Tensor& t) {
  return str_cat("CPU", torch_type_name(t.dtype()), "Type");
}

// ---- parameters and checks ----

void check_types(std::string_view op, const Tensor& input, const Tensor& weight,
                 const Tensor& bias) {
  LOOM_CHECK_T(TypeError, input.dtype() == weight.dtype(), op, ": Input type (", type_string(input),
               ") and weight type (", type_string(weight), ") should be the same");
  LOOM_CHECK_T(TypeError, !bias.defined() || input.dtype() == bias.dtype(), op, ": Input type (",
               type_string(input), ") and bias type (", type_string(bias), ") should be the same");
}

/// A convolution brought to 2-d: the batched 4-d input and weight views and the geometry.
struct Plan {
  int64_t N, G, Cin, Cout;  // Cout: the output's channels (weight.size(1)*G if transposed)
  int64_t H, W, oH, oW;     // input and output spatial sizes
  Geometry geo;             // big/small geometry (Note [Convolution as big and small])
  int64_t Cb, Cs;           // big and small channels per group
  bool transposed, one_d;
  Tensor input, weight;            // 4-d views
  std::vector<int64_t> out_sizes;  // the output's sizes at the op's rank
};

/// Builds the 2-d plan of a checked convolution, with the slow_conv2d and
/// slow_conv_transpose2d checks PyTorch's CPU backends make.
Plan make_plan(std::string_view op, const Tensor& input, const Tensor& weight,
               const ConvParams& p) {
  Plan pl;
  pl.one_d = weight.dim() == 3;
  pl.input = pl.one_d ? unsqueeze_view(input, 2) : input;
  pl.weight = pl.one_d ? unsqueeze_view(weight, 2) : weight;
  auto two = [&](const std::vector<int64_t>& v, int64_t unit) {
    return pl.one_d ? std::pair<int64_t, int64_t>{unit, v[0]}
                    : std::pair<int64_t, int64_t>{v[0], v[1]};
  };
  const auto [sH, sW] = two(p.stride, 1);
  const auto [pH, pW] = two(p.padding, 0);
  const auto [dH, dW] = two(p.dilation, 1);
  const auto [opH, opW] = two(p.output_padding, 0);
  const auto [eH, eW] = two(p.extra, 0);
  const Tensor& in = pl.input;
  const Tensor& w = pl.weight;
  pl.N = in.size(0);
  pl.G = p.groups;
  pl.Cin = in.size(1);
  pl.H = in.size(2);
  pl.W = in.size(3);
  const int64_t kH = w.size(2), kW = w.size(3);
  pl.transposed = p.transposed;
  if (!p.transposed) {
    LOOM_CHECK(kH > 0 && kW > 0, op, ": kernel size should be greater than zero, but got kH: ", kH,
               " kW: ", kW);
    pl.Cout = w.size(0);
    pl.oH = meta::conv_output_size(op, 0, pl.H, kH, sH, pH, dH, eH, false);
    pl.oW = meta::conv_output_size(op, pl.one_d ? 0 : 1, pl.W, kW, sW, pW, dW, eW, false);
    pl.Cb = pl.Cin / pl.G;
    pl.Cs = pl.Cout / pl.G;
    pl.geo = Geometry{pl.H, pl.W, pl.oH, pl.oW, kH, kW, sH, sW, pH, pW, dH, dW};
  } else {
    LOOM_CHECK(kH > 0 && kW > 0, op,
               ": kernel size should be greater than zero, but got kernel_height: ", kH,
               " kernel_width: ", kW);
    meta::check_transposed_output_padding(op, opH, opW, sH, sW, dH, dW);
    pl.Cout = w.size(1) * pl.G;
    pl.oH = meta::conv_output_size(op, 0, pl.H, kH, sH, pH, dH, opH, true);
    pl.oW = meta::conv_output_size(op, pl.one_d ? 0 : 1, pl.W, kW, sW, pW, dW, opW, true);
    meta::check_transposed_output_size(op, pl.H, pl.W, pl.oH, pl.oW);
    pl.Cb = w.size(1);
    pl.Cs = pl.Cin / pl.G;
    pl.geo = Geometry{pl.oH, pl.oW, pl.H, pl.W, kH, kW, sH, sW, pH, pW, dH, dW};
  }
  pl.out_sizes = meta::conv_out_sizes(pl.N, pl.Cout, pl.oH, pl.oW, pl.one_d);
  meta::check_result_numel(op, pl.out_sizes, input.dtype());  // Note [Result sizes that overflow]
  return pl;
}

// ---- the three routines (Note [Convolution as big and small]) ----

/// Per-group channel counts and geometry of a big/small pair.
struct Spec {
  int64_t N, G, Cb, Cs;
  Geometry geo;
};

Spec spec_of(const Plan& pl) { return Spec{pl.N, pl.G, pl.Cb, pl.Cs, pl.geo}; }

/// Columns of one im2col chunk with `rows` rows: about 128 Ki elements, a multiple of 16.
int64_t chunk_columns(int64_t rows, int64_t L) {
  constexpr int64_t kTarget = int64_t{1} << 17;
  int64_t lc = std::max<int64_t>(64, kTarget / std::max<int64_t>(rows, 1));
  lc = (lc + 15) / 16 * 16;
  return std::max<int64_t>(1, std::min(lc, L));
}

/// Whether a parallel region pays for itself (about 64 Ki multiply-adds or more).
bool worth_parallel(int64_t tasks, double macs) {
  return tasks > 1 && gemm::max_threads() > 1 && macs >= 65536.0;
}

/// Element strides of a 4-d tensor.
struct Strides4 {
  int64_t n, c, h, w;
};
Strides4 strides_of(const Tensor& t) {
  return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

/// Whether the H x W plane of a [.., H, W] view with strides bs is one run of stride bs.w.
bool plane_is_linear(const Geometry& g, const Strides4& bs) {
  return g.H == 1 || bs.h == g.W * bs.w;
}

/// small_from_big for narrow groups (Cs < 4, e.g. depthwise): an im2col chunk, then the
/// GEMM entry point (which turns a single row into a GEMV).
template <typename T>
void small_from_big_narrow(const T* big, Strides4 bs, const T* wm, const T* bias, T* small,
                           const Spec& sp) {
  const Geometry& g = sp.geo;
  const int64_t R = sp.Cb * g.kernel(), L = g.small_numel();
  const bool pointwise = g.is_pointwise() && plane_is_linear(g, bs);
  const int64_t lc = pointwise ? std::min<int64_t>(L, 2048) : chunk_columns(R, L);
  const int64_t n_chunks = (L + lc - 1) / lc;
  const int64_t tasks = sp.N * sp.G * n_chunks;
  const bool par = worth_parallel(tasks, double(sp.N) * sp.G * sp.Cs * R * L);
#pragma omp parallel if (par)
  {
    std::vector<T> col(pointwise ? 0 : static_cast<size_t>(R * lc));
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t chunk = t % n_chunks, ng = t / n_chunks, grp = ng % sp.G, n = ng / sp.G;
      const int64_t l0 = chunk * lc, l1 = std::min(L, l0 + lc), w = l1 - l0;
      const T* img = big + n * bs.n + grp * sp.Cb * bs.c;
      Mat<const T> b{col.data(), w, 1};
      if (pointwise) {
        b = Mat<const T>{img + l0 * bs.w, bs.c, bs.w};
      } else {
        im2col(img, bs.c, bs.h, bs.w, g, 0, sp.Cb, l0, l1, col.data());
      }
      T* out = small + (n * sp.G + grp) * sp.Cs * L + l0;
      if (bias) {
        for (int64_t i = 0; i < sp.Cs; ++i)
          std::fill(out + i * L, out + i * L + w, bias[grp * sp.Cs + i]);
      }
      // Serial GEMM inside this `omp for` (Note [Serial GEMM inside a parallel loop]).
      gemm::gemm<T>(sp.Cs, w, R, T(1), Mat<const T>{wm + grp * sp.Cs * R, R, 1}, b,
                    bias ? T(1) : T(0), Mat<T>{out, L, 1}, /*parallel=*/false);
    }
  }
}

/// C[mc x nc] (contiguous rows, leading dimension ldc) = (accumulate ? C : 0) + packed A
/// (mc x kc) @ packed B (kc x nc), on the micro-kernel of ops/core/cpu/gemm.h; the tile is
/// written back with unit stride, which the compiler vectorises.
template <typename T>
[[gnu::always_inline]] inline void conv_macro_body(int64_t mc, int64_t nc, int64_t kc, const T* pa,
                                                   const T* pb, bool accumulate, T* c,
                                                   int64_t ldc) {
  using Bl = gemm::Blocking<T>;
  alignas(64) T tile[Bl::MR * Bl::NR];
  for (int64_t jr = 0; jr < nc; jr += Bl::NR) {
    const int64_t nr = std::min<int64_t>(Bl::NR, nc - jr);
    for (int64_t ir = 0; ir < mc; ir += Bl::MR) {
      const int64_t mr = std::min<int64_t>(Bl::MR, mc - ir);
      gemm::micro_kernel<T>(kc, pa + ir * kc, pb + jr * kc, tile);
      for (int64_t i = 0; i < mr; ++i) {
        T* row = c + (ir + i) * ldc + jr;
        const T* t = tile + i * Bl::NR;
        if (nr == Bl::NR) {
          if (accumulate) {
            for (int j = 0; j < Bl::NR; ++j) row[j] += t[j];
          } else {
            for (int j = 0; j < Bl::NR; ++j) row[j] = t[j];
          }
        } else {
          for (int64_t j = 0; j < nr; ++j) row[j] = accumulate ? row[j] + t[j] : t[j];
        }
      }
    }
  }
}

template <typename T>
void conv_macro_baseline(int64_t mc, int64_t nc, int64_t kc, const T* pa, const T* pb,
                         bool accumulate, T* c, int64_t ldc) {
  conv_macro_body<T>(mc, nc, kc, pa, pb, accumulate, c, ldc);
}
template <typename T>
[[gnu::target("avx2,fma")]] void conv_macro_avx2(int64_t mc, int64_t nc, int64_t kc, const T* pa,
                                                 const T* pb, bool accumulate, T* c, int64_t ldc) {
  conv_macro_body<T>(mc, nc, kc, pa, pb, accumulate, c, ldc);
}

/// small[n, g] (contiguous [N, G*Cs, oH, oW], written) = wm[g] @ im2col(big[n, g]) (+ bias).
/// big is any-strided; wm is contiguous [G*Cs, Cb*kH*kW]. The convolution's hot path: the
/// weights are packed for the GEMM micro-kernel once per call, and im2col writes each
/// column chunk straight into the packed-B layout, so the only copy of the input is the one
/// the GEMM needs anyway. Tasks: (image, group, chunk of columns), one thread each.
template <typename T>
void small_from_big(const T* big, Strides4 bs, const T* wm, const T* bias, T* small,
                    const Spec& sp) {
  using Bl = gemm::Blocking<T>;
  const Geometry& g = sp.geo;
  const int64_t R = sp.Cb * g.kernel(), L = g.small_numel();
  if (sp.N == 0 || sp.G * sp.Cs == 0 || L == 0) return;
  if (sp.Cs < 4 || R == 0) return small_from_big_narrow<T>(big, bs, wm, bias, small, sp);
  constexpr int64_t KC = Bl::KC;
  // Packed weights: group g, KC slice starting at row pc: m_pad*kc elements at
  // g*m_pad*R + pc*m_pad, as ceil(Cs/MR) slivers of kc x MR.
  const int64_t m_pad = (sp.Cs + Bl::MR - 1) / Bl::MR * Bl::MR;
  std::vector<T> pa(static_cast<size_t>(sp.G * m_pad * R));
  for (int64_t grp = 0; grp < sp.G; ++grp)
    for (int64_t pc = 0; pc < R; pc += KC) {
      const int64_t kc = std::min<int64_t>(KC, R - pc);
      gemm::pack_a<T>(Mat<const T>{wm + grp * sp.Cs * R + pc, R, 1}, sp.Cs, kc,
                      pa.data() + grp * m_pad * R + pc * m_pad);
    }
  const int64_t lc = std::min<int64_t>(L, Bl::NB);
  const int64_t lc_pad = (lc + Bl::NR - 1) / Bl::NR * Bl::NR;
  const int64_t n_chunks = (L + lc - 1) / lc;
  // Few images and columns (batch 1, small planes): split the output channels too, each
  // row block redoing the chunk's im2col.
  const int64_t base_tasks = sp.N * sp.G * n_chunks;
  const int64_t want = (2 * gemm::max_threads() + base_tasks - 1) / base_tasks;
  const int64_t rows_per =
      std::max<int64_t>(Bl::MR, ((sp.Cs + want - 1) / want + Bl::MR - 1) / Bl::MR * Bl::MR);
  const int64_t m_blocks = (sp.Cs + rows_per - 1) / rows_per;
  const int64_t tasks = base_tasks * m_blocks;
  const bool par = worth_parallel(tasks, double(sp.N) * sp.G * sp.Cs * R * L);
  auto* macro = gemm::has_avx2_fma() ? &conv_macro_avx2<T> : &conv_macro_baseline<T>;
#pragma omp parallel if (par)
  {
    std::vector<T> pb(static_cast<size_t>(std::min<int64_t>(R, KC) * lc_pad));
    std::vector<T> rowbuf(static_cast<size_t>(lc));
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t mb = t % m_blocks, rest = t / m_blocks;
      const int64_t chunk = rest % n_chunks, ng = rest / n_chunks, grp = ng % sp.G, n = ng / sp.G;
      const int64_t l0 = chunk * lc, l1 = std::min(L, l0 + lc), w = l1 - l0;
      const int64_t i0 = mb * rows_per, i1 = std::min(sp.Cs, i0 + rows_per);
      const T* img = big + n * bs.n + grp * sp.Cb * bs.c;
      T* out = small + (n * sp.G + grp) * sp.Cs * L + l0;
      if (bias) {
        for (int64_t i = i0; i < i1; ++i)
          std::fill(out + i * L, out + i * L + w, bias[grp * sp.Cs + i]);
      }
      for (int64_t pc = 0; pc < R; pc += KC) {
        const int64_t kc = std::min<int64_t>(KC, R - pc);
        im2col_packed<Bl::NR>(img, bs.c, bs.h, bs.w, g, pc, pc + kc, l0, l1, rowbuf.data(),
                              pb.data());
        const T* pa_slice = pa.data() + grp * m_pad * R + pc * m_pad;
        for (int64_t ic = i0; ic < i1; ic += Bl::MC) {
          const int64_t mc = std::min<int64_t>(Bl::MC, i1 - ic);
          macro(mc, w, kc, pa_slice + ic * kc, pb.data(), pc > 0 || bias, out + ic * L, L);
        }
      }
    }
  }
}

/// big[n, g] (contiguous [N, G*Cb, H, W], written) = col2im(wm[g]^T @ small[n, g]) (+ bias
/// per big channel). small is contiguous. Tasks: (image, group, block of big channels), so
/// no two tasks write the same element. Each block's rows of wm[g]^T are packed for the
/// micro-kernel once per call; each column chunk of small is packed per task.
template <typename T>
void big_from_small(const T* small, const T* wm, const T* bias, T* big, const Spec& sp) {
  using Bl = gemm::Blocking<T>;
  const Geometry& g = sp.geo;
  const int64_t K = g.kernel(), RB = sp.Cb * K, L = g.small_numel(), HW = g.H * g.W;
  if (sp.N == 0 || sp.G * sp.Cb == 0 || HW == 0) return;
  const bool pointwise = g.is_pointwise();
  const int64_t images = sp.N * sp.G;
  const int64_t want = std::max<int64_t>(1, (2 * gemm::max_threads() + images - 1) / images);
  const int64_t cpb = (sp.Cb + std::min(want, sp.Cb) - 1) / std::min(want, sp.Cb);
  const int64_t blocks = (sp.Cb + cpb - 1) / cpb;
  // Packed wm[g]^T rows of block b, KC slice starting at column pc of the product's inner
  // dim (Cs): at ((g*blocks + b)*Cs + pc) * rows_pad, as slivers of kc x MR.
  const int64_t rows_pad = (cpb * K + Bl::MR - 1) / Bl::MR * Bl::MR;
  std::vector<T> pa(static_cast<size_t>(sp.G * blocks * sp.Cs * rows_pad));
  for (int64_t grp = 0; grp < sp.G; ++grp)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t c0 = blk * cpb, rows = (std::min(sp.Cb, c0 + cpb) - c0) * K;
      for (int64_t pc = 0; pc < sp.Cs; pc += Bl::KC) {
        const int64_t kc = std::min<int64_t>(Bl::KC, sp.Cs - pc);
        // Element (r, m) of wm[g]^T is wm[(g*Cs + m)*RB + r].
        gemm::pack_a<T>(Mat<const T>{wm + (grp * sp.Cs + pc) * RB + c0 * K, 1, RB}, rows, kc,
                        pa.data() + ((grp * blocks + blk) * sp.Cs + pc) * rows_pad);
      }
    }
  const int64_t lc = std::min<int64_t>(L, Bl::NB);
  const int64_t lc_pad = (lc + Bl::NR - 1) / Bl::NR * Bl::NR;
  const int64_t tasks = images * blocks;
  const bool par = worth_parallel(tasks, double(images) * sp.Cs * RB * L);
  auto* macro = gemm::has_avx2_fma() ? &conv_macro_avx2<T> : &conv_macro_baseline<T>;
#pragma omp parallel if (par)
  {
    std::vector<T> col(pointwise ? 0 : static_cast<size_t>(cpb * K * lc));
    std::vector<T> pb(static_cast<size_t>(std::min<int64_t>(sp.Cs, Bl::KC) * lc_pad));
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t blk = t % blocks, ng = t / blocks, grp = ng % sp.G;
      const int64_t c0 = blk * cpb, c1 = std::min(sp.Cb, c0 + cpb), rows = (c1 - c0) * K;
      T* img = big + ng * sp.Cb * HW;
      for (int64_t c = c0; c < c1; ++c) {
        std::fill(img + c * HW, img + (c + 1) * HW, bias ? bias[grp * sp.Cb + c] : T(0));
      }
      const T* x = small + ng * sp.Cs * L;
      for (int64_t l0 = 0; l0 < L; l0 += lc) {
        const int64_t l1 = std::min(L, l0 + lc), w = l1 - l0;
        // The product's rows land in the image itself (pointwise) or in an im2col chunk.
        T* dst = pointwise ? img + c0 * HW + l0 : col.data();
        const int64_t ldd = pointwise ? HW : w;
        if (sp.Cs == 0) std::fill(col.begin(), col.end(), T(0));
        for (int64_t pc = 0; pc < sp.Cs; pc += Bl::KC) {
          const int64_t kc = std::min<int64_t>(Bl::KC, sp.Cs - pc);
          const Mat<const T> bm{x + pc * L + l0, L, 1};
          for (int64_t sl = 0; sl * Bl::NR < w; ++sl)
            gemm::pack_b_sliver<T>(bm, kc, w, sl, pb.data());
          const T* pa_slice = pa.data() + ((grp * blocks + blk) * sp.Cs + pc) * rows_pad;
          for (int64_t ic = 0; ic < rows; ic += Bl::MC) {
            const int64_t mc = std::min<int64_t>(Bl::MC, rows - ic);
            macro(mc, w, kc, pa_slice + ic * kc, pb.data(), pc > 0 || (pointwise && bias),
                  dst + ic * ldd, ldd);
          }
        }
        if (!pointwise) col2im(col.data(), g, c0, c1, l0, l1, img);
      }
    }
  }
}

/// gw[g] (contiguous [G*Cs, Cb*kH*kW], written) = sum over n of small[n, g] @ im2col(big[n,
/// g])^T. big is any-strided, small contiguous. Tasks: (group, block of big channels, part
/// of the batch); batch parts beyond the first accumulate into their own buffers, summed at
/// the end. Each task computes its block transposed, im2col rows times small^T, with the
/// im2col chunk written straight in the packed-A layout and the block accumulated in
/// registers-sized tiles of a contiguous buffer over the whole batch part, then written
/// back transposed once.
template <typename T>
void weight_from(const T* big, Strides4 bs, const T* small, T* gw, const Spec& sp) {
  using Bl = gemm::Blocking<T>;
  const Geometry& g = sp.geo;
  const int64_t K = g.kernel(), RB = sp.Cb * K, L = g.small_numel();
  const int64_t total = sp.G * sp.Cs * RB;
  if (total == 0) return;
  const int64_t threads = gemm::max_threads();
  const int64_t want = std::max<int64_t>(1, (2 * threads + sp.G - 1) / sp.G);
  const int64_t cpb = (sp.Cb + std::min(want, sp.Cb) - 1) / std::min(want, sp.Cb);
  const int64_t blocks = (sp.Cb + cpb - 1) / cpb;
  const int64_t nsplit =
      std::max<int64_t>(1, std::min(sp.N, (2 * threads + sp.G * blocks - 1) / (sp.G * blocks)));
  const int64_t lc = std::min<int64_t>(std::max<int64_t>(L, 1), Bl::KC);
  const int64_t rows_max = cpb * K, rows_pad = (rows_max + Bl::MR - 1) / Bl::MR * Bl::MR;
  const int64_t cs_pad = (sp.Cs + Bl::NR - 1) / Bl::NR * Bl::NR;
  std::vector<T> partial(static_cast<size_t>((nsplit - 1) * total));
  const int64_t tasks = sp.G * blocks * nsplit;
  const bool par = worth_parallel(tasks, double(sp.N) * total * L);
  auto* macro = gemm::has_avx2_fma() ? &conv_macro_avx2<T> : &conv_macro_baseline<T>;
#pragma omp parallel if (par)
  {
    std::vector<T> pa(static_cast<size_t>(rows_pad * lc)), pb(static_cast<size_t>(lc * cs_pad));
    std::vector<T> rowbuf(static_cast<size_t>(lc)), acc(static_cast<size_t>(rows_max * sp.Cs));
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t blk = t % blocks, rest = t / blocks, grp = rest % sp.G, part = rest / sp.G;
      const int64_t c0 = blk * cpb, c1 = std::min(sp.Cb, c0 + cpb), rows = (c1 - c0) * K;
      const int64_t n0 = part * sp.N / nsplit, n1 = (part + 1) * sp.N / nsplit;
      bool first = true;
      for (int64_t n = n0; n < n1; ++n) {
        const T* img = big + n * bs.n + grp * sp.Cb * bs.c;
        const T* x = small + (n * sp.G + grp) * sp.Cs * L;
        for (int64_t l0 = 0; l0 < L; l0 += lc) {
          const int64_t l1 = std::min(L, l0 + lc), w = l1 - l0;
          im2col_packed_a<Bl::MR>(img, bs.c, bs.h, bs.w, g, c0 * K, c1 * K, l0, l1, rowbuf.data(),
                                  pa.data());
          // small^T chunk [w, Cs]: element (p, m) is x[m*L + l0 + p].
          const Mat<const T> bm{x + l0, 1, L};
          for (int64_t sl = 0; sl * Bl::NR < sp.Cs; ++sl) {
            gemm::pack_b_sliver<T>(bm, w, sp.Cs, sl, pb.data());
          }
          for (int64_t ic = 0; ic < rows; ic += Bl::MC) {
            const int64_t mc = std::min<int64_t>(Bl::MC, rows - ic);
            macro(mc, sp.Cs, w, pa.data() + ic * w, pb.data(), !first, acc.data() + ic * sp.Cs,
                  sp.Cs);
          }
          first = false;
        }
      }
      T* dst = (part == 0 ? gw : partial.data() + (part - 1) * total) + grp * sp.Cs * RB + c0 * K;
      for (int64_t m = 0; m < sp.Cs; ++m)
        for (int64_t r = 0; r < rows; ++r) {
          dst[m * RB + r] = first ? T(0) : acc[static_cast<size_t>(r * sp.Cs + m)];
        }
    }
  }
  if (nsplit > 1) {
#pragma omp parallel for if (par) schedule(static)
    for (int64_t i = 0; i < total; ++i) {
      T s = gw[i];
      for (int64_t q = 0; q < nsplit - 1; ++q) s += partial[q * total + i];
      gw[i] = s;
    }
  }
}

/// gb[c] = sum over n and l of go[n, c, l] (go contiguous [N, C, L]), in double.
template <typename T>
void bias_from(const T* go, int64_t N, int64_t C, int64_t L, T* gb) {
  const bool par = worth_parallel(C, double(N) * C * L);
#pragma omp parallel for if (par) schedule(static)
  for (int64_t c = 0; c < C; ++c) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n) {
      const T* p = go + (n * C + c) * L;
      double part = 0;
#pragma omp simd reduction(+ : part)
      for (int64_t l = 0; l < L; ++l) part += static_cast<double>(p[l]);
      s += part;
    }
    gb[c] = static_cast<T>(s);
  }
}

template <typename T>
const T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}
template <typename T>
T* mut_ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

/// A new contiguous tensor of sizes and dtype d on like's device.
Tensor new_tensor(IntArrayRef sizes, const Tensor& like, DType d) {
  return Tensor::empty(sizes, options_like(like, d));
}

/// True when a 2-d convolution's results are channels-last: its input or its weight suggests
/// channels-last (Note [Memory format] in loom/ops/nn/memory_format.h), as in PyTorch.
bool follows_channels_last(const Tensor& input, const Tensor& weight) {
  return suggests_channels_last(input) || suggests_channels_last(weight);
}

/// The compute type of a floating dtype: float for the 16-bit floats.
DType compute_dtype(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d;
}

/// Calls f with a typed null pointer for the compute type (float or double) of dtype d, or
/// throws PyTorch's "not implemented for" naming `kernel`.
template <typename F>
void dispatch_compute(std::string_view kernel, DType d, F&& f) {
  switch (d) {
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      return f(static_cast<float*>(nullptr));
    case DType::Float64:
      return f(static_cast<double*>(nullptr));
    default:
      throw_dtype_unsupported(kernel, d);
  }
}

// ---- forward ----

/// The convolution on a batched input: PyTorch's _convolution with the slow_conv2d and
/// slow_conv_transpose2d CPU backends. `extra` is added right/bottom padding (for 'same').
Tensor conv_forward(std::string_view op, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias_opt, IntArrayRef stride, IntArrayRef padding,
                    IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                    int64_t groups, IntArrayRef extra = {}) {
  const Tensor bias = bias_opt && bias_opt->defined() ? *bias_opt : Tensor();
  check_defined(op, {{"input", input}, {"weight", weight}});
  check_same_device(op, {{"input", input}, {"weight", weight}, {"bias", bias}});
  const int64_t dim = meta::check_weight_and_groups(op, weight, groups);
  const ConvParams p = meta::make_params(op, dim, stride, padding, dilation, transposed,
                                         output_padding, groups, extra);
  meta::check_shape_forward(op, input, weight.sizes(), bias, p);
  check_types(op, input, weight, bias);
  LOOM_CHECK_T(NotImplementedError, dim <= 2, op, ": ", dim,
               "-d convolution is not implemented by the reference CPU kernels (1-d and 2-d are)");
  const Plan pl = make_plan(op, input, weight, p);
  const DType dt = input.dtype();
  const DType ct = compute_dtype(dt);
  Tensor out;
  dispatch_compute(
      transposed ? "slow_conv_transpose2d_out_cpu" : "slow_conv2d_cpu", dt, [&]<typename T>(T*) {
        const Tensor w = contiguous_as(pl.weight, ct);
        const Tensor b = bias.defined() ? contiguous_as(bias, ct) : Tensor();
        const Spec sp = spec_of(pl);
        out = new_tensor({pl.N, pl.Cout, pl.oH, pl.oW}, input, ct);
        if (is_meta(out)) return;
        if (!transposed) {
          const Tensor in = ct == dt ? pl.input : contiguous_as(pl.input, ct);
          small_from_big<T>(ptr<T>(in), strides_of(in), ptr<T>(w), ptr<T>(b), mut_ptr<T>(out), sp);
        } else {
          const Tensor in = contiguous_as(pl.input, ct);
          big_from_small<T>(ptr<T>(in), ptr<T>(w), ptr<T>(b), mut_ptr<T>(out), sp);
        }
      });
  if (ct != dt) out = contiguous_as(out, dt);
  if (pl.one_d) return squeeze_view(out, 2);
  // Note [Memory format]: channels-last in (input or weight), channels-last out. The loops
  // write NCHW; the copy costs little beside them.
  return follows_channels_last(input, weight) ? to_memory_format(out, MemoryFormat::ChannelsLast)
                                              : out;
}

/// PyTorch's batchify: a (spatial+1)-d input gets a batch of one.
std::pair<Tensor, bool> batchify(std::string_view op, const Tensor& input, int64_t spatial) {
  check_defined(op, {{"input", input}});
  return meta::batchify(op, input, spatial);
}

using meta::unbatchify;

/// conv1d/conv2d/conv3d's own bias check (dtype names as caffe2 prints them).
void check_bias_dtype(std::string_view op, const Tensor& input, const std::optional<Tensor>& bias) {
  if (!bias || !bias->defined() || !input.defined()) return;
  LOOM_CHECK_T(TypeError, bias->dtype() == input.dtype(), op, ": Input type (",
               gemm::c_type_name(input.dtype()), ") and bias type (",
               gemm::c_type_name(bias->dtype()), ") should be the same");
}

Tensor conv_nd(std::string_view op, int64_t spatial, const Tensor& input, const Tensor& weight,
               const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
               IntArrayRef dilation, int64_t groups) {
  check_bias_dtype(op, input, bias);
  const auto [in, batched] = batchify(op, input, spatial);
  const int64_t zero = 0;
  return unbatchify(
      conv_forward(op, in, weight, bias, stride, padding, dilation, false, zero, groups), batched);
}

/// PyTorch's convolution_same: stride 1 only; when the total padding of a dim is odd, the
/// extra element goes to the right/bottom (PyTorch pads the input by it; here it is padding
/// the im2col copy reads as zero, with the same output and messages).
Tensor conv_same(std::string_view op, const Tensor& input, const Tensor& weight,
                 const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef dilation,
                 int64_t groups) {
  check_defined(op, {{"input", input}, {"weight", weight}});
  const int64_t k = weight.dim();
  meta::check_weight_and_groups(op, weight, groups);
  LOOM_CHECK(k == input.dim(), op, ": Expected ", k, "-dimensional input for ", k,
             "-dimensional weight", sizes_str(weight.sizes()), ", but got ", input.dim(),
             "-dimensional input of size ", sizes_str(input.sizes()), " instead");
  const std::vector<int64_t> total = meta::same_padding_totals(op, weight, stride, dilation);
  std::vector<int64_t> left(total.size()), extra(total.size());
  for (size_t i = 0; i < total.size(); ++i) {
    left[i] = total[i] / 2;
    extra[i] = total[i] - 2 * left[i];
  }
  const int64_t zero = 0;
  return conv_forward(op, input, weight, bias, stride, left, dilation, false, zero, groups, extra);
}

Tensor conv_mode_nd(std::string_view op, int64_t spatial, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias, IntArrayRef stride, std::string_view padding,
                    IntArrayRef dilation, int64_t groups) {
  const auto [in, batched] = batchify(op, input, spatial);
  if (padding == "same") {
    return unbatchify(conv_same(op, in, weight, bias, stride, dilation, groups), batched);
  }
  LOOM_CHECK(padding == "valid", op, ": Invalid padding string: '", padding, "'");
  const int64_t zero = 0;
  return unbatchify(conv_forward(op, in, weight, bias, stride, zero, dilation, false, zero, groups),
                    batched);
}

Tensor conv_transpose_nd(std::string_view op, int64_t spatial, const Tensor& input,
                         const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                         int64_t groups, IntArrayRef dilation) {
  const auto [in, batched] = batchify(op, input, spatial);
  return unbatchify(
      conv_forward(op, in, weight, bias, stride, padding, dilation, true, output_padding, groups),
      batched);
}

// ---- the registered kernels ----

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  return conv_forward("convolution", input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv1d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return conv_mode_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return conv_mode_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation);
}

// ---- backward ----

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output,
                                                        const Tensor& input, const Tensor& weight,
                                                        std::optional<IntArrayRef> /*bias_sizes*/,
                                                        IntArrayRef stride, IntArrayRef padding,
                                                        IntArrayRef dilation, bool transposed,
                                                        IntArrayRef output_padding, int64_t groups,
                                                        const std::vector<bool>& output_mask) {
  constexpr std::string_view op = "convolution_backward";
  check_defined(op, {{"grad_output", grad_output}, {"input", input}, {"weight", weight}});
  check_same_device(op, {{"grad_output", grad_output}, {"input", input}, {"weight", weight}});
  LOOM_CHECK(output_mask.size() == 3, op, ": expected output_mask to have 3 values, but got ",
             output_mask.size());
  const int64_t dim = meta::check_weight_and_groups(op, weight, groups);
  const ConvParams p =
      meta::make_params(op, dim, stride, padding, dilation, transposed, output_padding, groups);
  meta::check_shape_forward(op, input, weight.sizes(), Tensor(), p);
  LOOM_CHECK(input.dim() == grad_output.dim(), op,
             ": Expected input and grad_output to have the same number of dimensions, but got: ",
             input.dim(), " and ", grad_output.dim());
  if (!transposed) meta::check_no_output_padding(op, p.output_padding);
  check_same_dtype(op, {{"grad_output", grad_output}, {"input", input}, {"weight", weight}});
  LOOM_CHECK_T(NotImplementedError, dim <= 2, op, ": ", dim,
               "-d convolution is not implemented by the reference CPU kernels (1-d and 2-d are)");
  const Plan pl = make_plan(op, input, weight, p);
  meta::check_grad_output_sizes(op, grad_output, input, weight, pl.out_sizes);
  const DType dt = input.dtype();
  const DType ct = compute_dtype(dt);
  Tensor gi, gw, gb;
  const bool no_data = is_meta(input);  // allocate the gradients, skip the loops
  dispatch_compute("slow_conv2d_backward_cpu", dt, [&]<typename T>(T*) {
    const Tensor go4 = pl.one_d ? unsqueeze_view(grad_output, 2) : grad_output;
    const Tensor go = contiguous_as(go4, ct);
    const Tensor w = contiguous_as(pl.weight, ct);
    const Spec sp = spec_of(pl);
    if (output_mask[0]) {
      gi = new_tensor(pl.input.sizes(), input, ct);
      if (no_data) {
        // a meta gradient: nothing to compute
      } else if (!transposed) {
        big_from_small<T>(ptr<T>(go), ptr<T>(w), nullptr, mut_ptr<T>(gi), sp);
      } else {
        small_from_big<T>(ptr<T>(go), strides_of(go), ptr<T>(w), nullptr, mut_ptr<T>(gi), sp);
      }
    }
    if (output_mask[1]) {
      gw = new_tensor(pl.weight.sizes(), input, ct);
      if (no_data) {
        // a meta gradient: nothing to compute
      } else if (!transposed) {
        const Tensor in = ct == dt ? pl.input : contiguous_as(pl.input, ct);
        weight_from<T>(ptr<T>(in), strides_of(in), ptr<T>(go), mut_ptr<T>(gw), sp);
      } else {
        const Tensor in = contiguous_as(pl.input, ct);
        weight_from<T>(ptr<T>(go), strides_of(go), ptr<T>(in), mut_ptr<T>(gw), sp);
      }
    }
    if (output_mask[2]) {
      gb = new_tensor({pl.Cout}, input, ct);
      if (!no_data) bias_from<T>(ptr<T>(go), pl.N, pl.Cout, pl.oH * pl.oW, mut_ptr<T>(gb));
    }
  });
  if (ct != dt) {
    if (gi.defined()) gi = contiguous_as(gi, dt);
    if (gw.defined()) gw = contiguous_as(gw, dt);
    if (gb.defined()) gb = contiguous_as(gb, dt);
  }
  if (pl.one_d) {
    if (gi.defined()) gi = squeeze_view(gi, 2);
    if (gw.defined()) gw = squeeze_view(gw, 2);
  } else {
    // Note [Memory format]: the input's gradient in the layout of the forward's result, the
    // weight's in the weight's.
    if (gi.defined() && follows_channels_last(input, weight))
      gi = to_memory_format(gi, MemoryFormat::ChannelsLast);
    if (gw.defined() && suggests_channels_last(weight))
      gw = to_memory_format(gw, MemoryFormat::ChannelsLast);
  }
  return {gi, gw, gb};
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("convolution", &convolution);
  m.impl("conv1d", &conv1d);
  m.impl("conv2d", &conv2d);
  m.impl("conv1d.padding", &conv1d_padding);
  m.impl("conv2d.padding", &conv2d_padding);
  m.impl("conv_transpose1d", &conv_transpose1d);
  m.impl("conv_transpose2d.input", &conv_transpose2d);
  m.impl("convolution_backward", &convolution_backward);
}

}  // namespace loom::ops::cpu::conv
