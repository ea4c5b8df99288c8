// Reference CPU kernels: constant_pad_nd, reflection / replication padding (1-3 dims) and
// their backward ops, _pad_circular, and the composite pad (F.pad).
//
// Note [Padding as an index map]: every non-constant mode maps each output index along a
// padded dim to the input index it copies, with PyTorch's formulas (which also give
// negative pads, i.e. crops, their meaning). A forward is then a gather through the per-dim
// maps (bytes, so any dtype) and a backward the scatter-add through the same maps (in
// double). Leading dims (batch, channel) are "planes" and run in parallel.
#include "loom/ops/nn/padding.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/meta.h"
#include "cpu/reduce_engine.h"
#include "cpu/strided_copy.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/meta/padding.h"

namespace loom::ops::cpu::nn {
namespace {

using reduction::data_of;
using reduction::DimVec;
using reduction::kGrain;
using reduction::load;
using reduction::offset_of;
using reduction::store;

enum class Mode { Reflect, Replicate, Circular };

/// The input index each output index along one dim copies (Note [Padding as an index map]).
std::vector<int64_t> source_indices(Mode mode, int64_t in, int64_t pad_l, int64_t pad_r) {
  const int64_t out = in + pad_l + pad_r;
  const int64_t i_start = meta::cropped_by(pad_l, in);
  const int64_t o_start = std::max<int64_t>(0, pad_l);
  // Circular wraps within what is left after cropping.
  const int64_t kept = in - i_start - meta::cropped_by(pad_r, in);
  std::vector<int64_t> src(static_cast<size_t>(std::max<int64_t>(out, 0)));
  for (int64_t j = 0; j < out; ++j) {
    int64_t ip = 0;
    switch (mode) {
      case Mode::Reflect:
        ip = j < pad_l ? 2 * pad_l - j : j < in + pad_l ? j : 2 * (in + pad_l - 1) - j;
        ip = ip - o_start + i_start;
        break;
      case Mode::Replicate:
        ip = j < pad_l ? pad_l : j < in + pad_l ? j : in + pad_l - 1;
        ip = ip - o_start + i_start;
        break;
      case Mode::Circular:
        ip = i_start + (((j - o_start) % kept) + kept) % kept;
        break;
    }
    src[j] = ip;
  }
  return src;
}

/// A padding of the last K (1..3) dims; the leading dims are planes.
struct PadPlan {
  int64_t k = 0;
  std::vector<int64_t> out_sizes;
  DimVec lead_sizes;
  int64_t planes = 1;
  // Padded dims, outermost first, filled up to 3 with dims of size 1.
  std::array<int64_t, 3> in_size{1, 1, 1}, out_size{1, 1, 1};
  std::array<std::vector<int64_t>, 3> src{std::vector<int64_t>{0}, std::vector<int64_t>{0},
                                          std::vector<int64_t>{0}};
};

/// padding lists the last dim first; dim k of the plan (0 = outermost) is self's dim
/// nd - K + k and takes padding[2 * (K - 1 - k)] and the entry after it.
PadPlan make_plan(Mode mode, const Tensor& self, IntArrayRef padding) {
  PadPlan p;
  p.k = static_cast<int64_t>(padding.size()) / 2;
  const int64_t nd = self.dim();
  p.out_sizes.assign(self.sizes().begin(), self.sizes().end());
  for (int64_t d = 0; d < nd - p.k; ++d) {
    p.lead_sizes.push_back(self.size(d));
    p.planes *= self.size(d);
  }
  for (int64_t k = 0; k < p.k; ++k) {
    const int64_t d = nd - p.k + k;
    const int64_t pl = padding[2 * (p.k - 1 - k)], pr = padding[2 * (p.k - 1 - k) + 1];
    const int64_t slot = 3 - p.k + k;
    p.in_size[slot] = self.size(d);
    p.out_size[slot] = self.size(d) + pl + pr;
    p.out_sizes[d] = p.out_size[slot];
    p.src[slot] = source_indices(mode, self.size(d), pl, pr);
  }
  return p;
}

/// The strides of t's leading dims and its padded dims (0 for the filler dims).
std::pair<DimVec, std::array<int64_t, 3>> plan_strides(const PadPlan& p, const Tensor& t) {
  const int64_t nd = t.dim();
  DimVec lead(t.strides().begin(), t.strides().begin() + (nd - p.k));
  std::array<int64_t, 3> st{0, 0, 0};
  for (int64_t k = 0; k < p.k; ++k) st[3 - p.k + k] = t.stride(nd - p.k + k);
  return {lead, st};
}

/// Forward: out[plane, a, b, c] = in[plane, src0[a], src1[b], src2[c]], as words of W.
template <typename W>
void gather(const PadPlan& p, const Tensor& in, const Tensor& out) {
  const auto strides = plan_strides(p, in);
  const DimVec& lead = strides.first;
  const std::array<int64_t, 3>& st = strides.second;
  std::array<std::vector<int64_t>, 3> off;
  for (int k = 0; k < 3; ++k) {
    off[k].resize(p.src[k].size());
    for (size_t j = 0; j < off[k].size(); ++j) off[k][j] = p.src[k][j] * st[k];
  }
  const W* src = static_cast<const W*>(in.data_ptr());
  W* dst = static_cast<W*>(out.data_ptr());
  const int64_t plane_out = p.out_size[0] * p.out_size[1] * p.out_size[2];
#pragma omp parallel for schedule(static) if (out.numel() >= kGrain && p.planes > 1)
  for (int64_t q = 0; q < p.planes; ++q) {
    const W* base = src + offset_of(q, p.lead_sizes, lead);
    W* o = dst + q * plane_out;
    for (int64_t a = 0; a < p.out_size[0]; ++a) {
      const W* pa = base + off[0][a];
      for (int64_t b = 0; b < p.out_size[1]; ++b) {
        const W* pb = pa + off[1][b];
        for (int64_t c = 0; c < p.out_size[2]; ++c) *o++ = pb[off[2][c]];
      }
    }
  }
}

Tensor pad_forward(Mode mode, const Tensor& self, IntArrayRef padding) {
  const PadPlan p = make_plan(mode, self, padding);
  Tensor out = Tensor::empty(p.out_sizes, options_like(self, self.dtype()));
  if (out.numel() == 0 || is_meta(out)) return out;
  switch (self.element_size()) {
    case 1:
      gather<uint8_t>(p, self, out);
      break;
    case 2:
      gather<uint16_t>(p, self, out);
      break;
    case 4:
      gather<uint32_t>(p, self, out);
      break;
    default:
      gather<uint64_t>(p, self, out);
      break;
  }
  return out;
}

/// Backward: the scatter-add of grad_output through the forward's maps, per plane in double.
Tensor pad_backward(const char* op, Mode mode, const Tensor& grad_output, const Tensor& self,
                    IntArrayRef padding) {
  const PadPlan p = make_plan(mode, self, padding);
  static constexpr const char* kNames[3] = {"depth", "height", "width"};
  LOOM_CHECK(grad_output.dim() == self.dim(), op, ": expected grad_output with ", self.dim(),
             " dims (the output's), but got grad_output of size ", sizes_str(grad_output.sizes()));
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (grad_output.size(d) == p.out_sizes[d]) continue;
    const int64_t k = d - (self.dim() - p.k);
    if (k < 0) {
      LOOM_THROW(ValueError, op, ": grad_output of size ", sizes_str(grad_output.sizes()),
                 " does not match the output size ", sizes_str(p.out_sizes));
    }
    LOOM_THROW(ValueError, op, ": grad_output ", kNames[3 - p.k + k],
               " unexpected. Expected: ", p.out_sizes[d], ", Got: ", grad_output.size(d));
  }
  Tensor grad_input = Tensor::empty(self.sizes(), options_like(grad_output, grad_output.dtype()));
  const auto strides = plan_strides(p, grad_output);
  const DimVec& lead = strides.first;
  const std::array<int64_t, 3>& st = strides.second;
  dispatch_floats(op, grad_output, [&]<typename T>(T*) {
    if (grad_input.numel() == 0 || is_meta(grad_input)) return;
    const T* g = data_of<T>(grad_output);
    T* gi = data_of<T>(grad_input);
    const int64_t i12 = p.in_size[1] * p.in_size[2];
    const int64_t plane_in = p.in_size[0] * i12;
#pragma omp parallel for schedule(static) if (grad_output.numel() >= kGrain && p.planes > 1)
    for (int64_t q = 0; q < p.planes; ++q) {
      std::vector<double> acc(static_cast<size_t>(plane_in), 0.0);
      const T* base = g + offset_of(q, p.lead_sizes, lead);
      for (int64_t a = 0; a < p.out_size[0]; ++a) {
        for (int64_t b = 0; b < p.out_size[1]; ++b) {
          const T* row = base + a * st[0] + b * st[1];
          double* dst = acc.data() + p.src[0][a] * i12 + p.src[1][b] * p.in_size[2];
          for (int64_t c = 0; c < p.out_size[2]; ++c) dst[p.src[2][c]] += load(row + c * st[2]);
        }
      }
      T* o = gi + q * plane_in;
      for (int64_t i = 0; i < plane_in; ++i) store(o + i, acc[i]);
    }
  });
  return grad_input;
}

/// PyTorch's checks of the reflection and replication ops of K padded dims (op names the op
/// whose padded sizes overflow).
void check_pad(const char* op, Mode mode, const Tensor& self, IntArrayRef padding, int64_t K) {
  LOOM_CHECK(static_cast<int64_t>(padding.size()) == 2 * K, op, ": padding size is expected to be ",
             2 * K, ", but got: ", padding.size());
  const int64_t nd = self.dim();
  bool valid = nd == K + 1 || nd == K + 2;
  for (int64_t d = nd == K + 2 ? 1 : 0; valid && d < nd; ++d) valid = self.size(d) != 0;
  LOOM_CHECK(valid, op, ": Expected ", K + 1, "D or ", K + 2,
             "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
             "input, but got: ",
             sizes_str(self.sizes()));
  static constexpr const char* kNames[3] = {"D", "H", "W"};
  std::string in_desc, out_desc;
  bool too_small = false;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t d = nd - K + k;
    const int64_t pl = padding[2 * (K - 1 - k)], pr = padding[2 * (K - 1 - k) + 1];
    const int64_t in = self.size(d);
    // Argument numbers as in PyTorch's messages: #4 for the last dim, #6, #8 before it.
    if (mode == Mode::Reflect) {
      LOOM_CHECK(pl < in && pr < in, op, ": Argument #", 4 + 2 * (K - 1 - k),
                 ": Padding size should be less than the corresponding input dimension, but "
                 "got: padding (",
                 pl, ", ", pr, ") at dimension ", d, " of input ", sizes_str(self.sizes()));
    }
    const char* name = kNames[3 - K + k];
    const int64_t out = meta::padded_size(op, in, pl, pr, d);
    in_desc += str_cat(k == 0 ? "" : ", ", name, ": ", in);
    out_desc += str_cat(k == 0 ? "" : " ", name, ": ", out);
    too_small = too_small || out < 1;
  }
  LOOM_CHECK(!too_small, op, ": input (", in_desc, ") is too small. Calculated output ", out_desc);
}

/// "reflection_pad2d", "replication_pad1d_backward", ...
constexpr const char* pad_op_name(Mode mode, int64_t k, bool backward) {
  constexpr const char* kNames[2][3][2] = {{{"reflection_pad1d", "reflection_pad1d_backward"},
                                            {"reflection_pad2d", "reflection_pad2d_backward"},
                                            {"reflection_pad3d", "reflection_pad3d_backward"}},
                                           {{"replication_pad1d", "replication_pad1d_backward"},
                                            {"replication_pad2d", "replication_pad2d_backward"},
                                            {"replication_pad3d", "replication_pad3d_backward"}}};
  return kNames[mode == Mode::Reflect ? 0 : 1][k - 1][backward ? 1 : 0];
}

template <Mode kMode, int64_t K>
Tensor pad_op(const Tensor& self, IntArrayRef padding) {
  check_defined(pad_op_name(kMode, K, false), {{"self", self}});
  check_pad(pad_op_name(kMode, K, false), kMode, self, padding, K);
  return pad_forward(kMode, self, padding);
}

template <Mode kMode, int64_t K>
Tensor pad_op_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef padding) {
  constexpr const char* op = pad_op_name(kMode, K, true);
  check_defined(op, {{"grad_output", grad_output}, {"self", self}});
  check_pad(op, kMode, self, padding, K);
  return pad_backward(op, kMode, grad_output, self, padding);
}

/// PyTorch's _pad_circular: pads the last pad.size() / 2 dims of a tensor with 1 or 2
/// more (unpadded) leading dims.
Tensor pad_circular(const Tensor& self, IntArrayRef pad) {
  check_defined("_pad_circular", {{"self", self}});
  const int64_t nd = self.dim();
  const auto padded = static_cast<int64_t>(pad.size()) / 2;
  const int64_t unpadded = nd - padded;
  LOOM_CHECK(
      pad.size() % 2 == 0 && (unpadded == 1 || unpadded == 2),
      "_pad_circular: Invalid padding size, expected 1 or 2 non-padded dimensions, which would be "
      "equivalent to padding of length ",
      (nd - 1) * 2, " or ", (nd - 2) * 2, " respectively but got ", pad.size());
  for (int64_t k = 0; k < padded; ++k) {
    const int64_t pl = pad[2 * (padded - 1 - k)], pr = pad[2 * (padded - 1 - k) + 1];
    const int64_t size = self.size(unpadded + k);
    // Wrapping reads what is left after cropping, so each positive pad must fit in it.
    const int64_t kept = size - meta::cropped_by(pl, size) - meta::cropped_by(pr, size);
    LOOM_CHECK(pl <= size && pr <= size && pl <= kept && pr <= kept,
               "_pad_circular: Padding value causes wrapping around more than once.");
    LOOM_CHECK(meta::padded_size("_pad_circular", size, pl, pr, unpadded + k) >= 0,
               "_pad_circular: Negative padding value is resulting in an empty dimension");
  }
  return pad_forward(Mode::Circular, self, pad);
}

// ---- constant ----

/// Writes value (converted to t's dtype) into every element of the contiguous t.
void fill(const Tensor& t, const Scalar& value) {
  dispatch_all(t.dtype(), [&]<typename T>(T*) {
    T* p = data_of<T>(t);
    T v;
    if (value.is_floating_point()) {
      store(&v, value.to_double());
    } else {
      store(&v, value.to_int());
    }
    std::fill(p, p + t.numel(), v);
  });
}

Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  check_defined("constant_pad_nd", {{"self", self}});
  const meta::ConstantPad g = meta::constant_pad_geometry(self, pad);
  // Note [Checked scalar conversion]: the value is written into self's dtype.
  meta::check_scalar_fits("constant_pad_nd", value, self.dtype());
  Tensor out = Tensor::empty(g.out_sizes, options_like(self, self.dtype()));
  if (out.numel() == 0 || is_meta(out)) return out;
  if (g.grows || g.empty_copy) fill(out, value);
  if (g.empty_copy) return out;
  const auto [src_off, dst_off] = meta::constant_pad_offsets(self, g, out.strides(), 0);
  const auto es = static_cast<int64_t>(self.element_size());
  copy_strided(static_cast<char*>(out.data_ptr()) + dst_off * es, out.strides(),
               static_cast<const char*>(self.data_ptr()) + src_off * es, self.strides(),
               g.copy_sizes, self.element_size());
  return out;
}

// ---- pad (F.pad) ----

Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode,
           std::optional<double> value) {
  check_defined("pad", {{"self", self}});
  const int64_t nd = self.dim();
  LOOM_CHECK(pad.size() % 2 == 0, "pad: Padding length must be divisible by 2");
  LOOM_CHECK(static_cast<int64_t>(pad.size()) <= nd * 2,
             "pad: Padding length should be less than or equal to two times the input dimension "
             "but "
             "got padding length ",
             pad.size(), " and input of dimension ", nd);
  if (mode == "constant") return loom::constant_pad_nd(self, pad, value.value_or(0.0));
  LOOM_CHECK_T(NotImplementedError, mode == "reflect" || mode == "replicate" || mode == "circular",
               "pad: Unrecognised padding mode ", mode);
  LOOM_CHECK(!value || *value == 0, "pad: Padding mode \"", mode,
             "\" doesn't take in value argument");
  const auto k = static_cast<int64_t>(pad.size()) / 2;
  const bool fits = k >= 1 && k <= 3 && (nd == k + 1 || nd == k + 2);
  LOOM_CHECK_T(NotImplementedError, fits,
               "pad: Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  if (mode == "circular") return loom::pad_circular(self, pad);
  const bool reflect = mode == "reflect";
  switch (k) {
    case 1:
      return reflect ? loom::reflection_pad1d(self, pad) : loom::replication_pad1d(self, pad);
    case 2:
      return reflect ? loom::reflection_pad2d(self, pad) : loom::replication_pad2d(self, pad);
    default:
      return reflect ? loom::reflection_pad3d(self, pad) : loom::replication_pad3d(self, pad);
  }
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("constant_pad_nd", &constant_pad_nd);
  m.impl("reflection_pad1d", &pad_op<Mode::Reflect, 1>);
  m.impl("reflection_pad1d_backward", &pad_op_backward<Mode::Reflect, 1>);
  m.impl("reflection_pad2d", &pad_op<Mode::Reflect, 2>);
  m.impl("reflection_pad2d_backward", &pad_op_backward<Mode::Reflect, 2>);
  m.impl("reflection_pad3d", &pad_op<Mode::Reflect, 3>);
  m.impl("reflection_pad3d_backward", &pad_op_backward<Mode::Reflect, 3>);
  m.impl("replication_pad1d", &pad_op<Mode::Replicate, 1>);
  m.impl("replication_pad1d_backward", &pad_op_backward<Mode::Replicate, 1>);
  m.impl("replication_pad2d", &pad_op<Mode::Replicate, 2>);
  m.impl("replication_pad2d_backward", &pad_op_backward<Mode::Replicate, 2>);
  m.impl("replication_pad3d", &pad_op<Mode::Replicate, 3>);
  m.impl("replication_pad3d_backward", &pad_op_backward<Mode::Replicate, 3>);
  m.impl("_pad_circular", &pad_circular);
}

// F.pad's composite: one kernel for every backend and for autograd, which records the op
// it picks.
LOOM_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.set_provider("reference");
  m.impl("pad", &pad);
}

}  // namespace loom::ops::cpu::nn
