#pragma once
/// @file
/// Upsampling of the nn pack (nearest, nearest-exact, linear, bilinear, trilinear) with
/// PyTorch's source-index rules, the backward ops autograd uses, and loom::interpolate
/// (F.interpolate), which picks the op. The ops_nn plugin must be loaded.
///
/// Inputs are [N, C, W], [N, C, H, W] or [N, C, D, H, W]. A scale argument (scales,
/// scales_h, ...) is what F.interpolate passes when given a scale_factor: when present and
/// positive, the source index uses 1 / scale instead of in / out (see Note [Upsample source
/// indices] in ops/nn/cpu/upsample.cpp). Nearest modes take any dtype; linear modes and all
/// backward ops take floating dtypes.

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/ops/op_handle.h"

namespace loom {

using OptScale = std::optional<double>;  ///< an upsample op's optional scale factor

/// Nearest upsampling of [N, C, W] to output_size {W'}: source floor(dst * scale).
inline Tensor upsample_nearest1d(const Tensor& self, IntArrayRef output_size,
                                 OptScale scales = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_nearest1d", Tensor(const Tensor&, IntArrayRef, OptScale));
  return op(self, output_size, scales);
}

/// Nearest upsampling of [N, C, H, W] to output_size {H', W'}.
inline Tensor upsample_nearest2d(const Tensor& self, IntArrayRef output_size,
                                 OptScale scales_h = {}, OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_nearest2d",
                Tensor(const Tensor&, IntArrayRef, OptScale, OptScale));
  return op(self, output_size, scales_h, scales_w);
}

/// Nearest upsampling of [N, C, D, H, W] to output_size {D', H', W'}.
inline Tensor upsample_nearest3d(const Tensor& self, IntArrayRef output_size,
                                 OptScale scales_d = {}, OptScale scales_h = {},
                                 OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_nearest3d",
                Tensor(const Tensor&, IntArrayRef, OptScale, OptScale, OptScale));
  return op(self, output_size, scales_d, scales_h, scales_w);
}

/// Nearest-exact upsampling of [N, C, W] (source floor((dst + 0.5) * scale), as Pillow and
/// scikit-image).
inline Tensor upsample_nearest_exact1d(const Tensor& self, IntArrayRef output_size,
                                       OptScale scales = {}) {
  LOOM_TYPED_OP(op, "aten::_upsample_nearest_exact1d",
                Tensor(const Tensor&, IntArrayRef, OptScale));
  return op(self, output_size, scales);
}

/// Nearest-exact upsampling of [N, C, H, W].
inline Tensor upsample_nearest_exact2d(const Tensor& self, IntArrayRef output_size,
                                       OptScale scales_h = {}, OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::_upsample_nearest_exact2d",
                Tensor(const Tensor&, IntArrayRef, OptScale, OptScale));
  return op(self, output_size, scales_h, scales_w);
}

/// Nearest-exact upsampling of [N, C, D, H, W].
inline Tensor upsample_nearest_exact3d(const Tensor& self, IntArrayRef output_size,
                                       OptScale scales_d = {}, OptScale scales_h = {},
                                       OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::_upsample_nearest_exact3d",
                Tensor(const Tensor&, IntArrayRef, OptScale, OptScale, OptScale));
  return op(self, output_size, scales_d, scales_h, scales_w);
}

/// Linear interpolation of [N, C, W] to output_size {W'}.
inline Tensor upsample_linear1d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                                OptScale scales = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_linear1d", Tensor(const Tensor&, IntArrayRef, bool, OptScale));
  return op(self, output_size, align_corners, scales);
}

/// Bilinear interpolation of [N, C, H, W] to output_size {H', W'}.
inline Tensor upsample_bilinear2d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                                  OptScale scales_h = {}, OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_bilinear2d",
                Tensor(const Tensor&, IntArrayRef, bool, OptScale, OptScale));
  return op(self, output_size, align_corners, scales_h, scales_w);
}

/// Trilinear interpolation of [N, C, D, H, W] to output_size {D', H', W'}.
inline Tensor upsample_trilinear3d(const Tensor& self, IntArrayRef output_size, bool align_corners,
                                   OptScale scales_d = {}, OptScale scales_h = {},
                                   OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_trilinear3d",
                Tensor(const Tensor&, IntArrayRef, bool, OptScale, OptScale, OptScale));
  return op(self, output_size, align_corners, scales_d, scales_h, scales_w);
}

/// Gradient of upsample_nearest1d: input_size is the forward input's full size [N, C, W].
inline Tensor upsample_nearest1d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                          IntArrayRef input_size, OptScale scales = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_nearest1d_backward",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, OptScale));
  return op(grad_output, output_size, input_size, scales);
}

/// Gradient of upsample_nearest2d (input_size [N, C, H, W]).
inline Tensor upsample_nearest2d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                          IntArrayRef input_size, OptScale scales_h = {},
                                          OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_nearest2d_backward",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, OptScale, OptScale));
  return op(grad_output, output_size, input_size, scales_h, scales_w);
}

/// Gradient of upsample_nearest3d (input_size [N, C, D, H, W]).
inline Tensor upsample_nearest3d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                          IntArrayRef input_size, OptScale scales_d = {},
                                          OptScale scales_h = {}, OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_nearest3d_backward",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, OptScale, OptScale, OptScale));
  return op(grad_output, output_size, input_size, scales_d, scales_h, scales_w);
}

/// Gradient of upsample_nearest_exact1d.
inline Tensor upsample_nearest_exact1d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                                IntArrayRef input_size, OptScale scales = {}) {
  LOOM_TYPED_OP(op, "aten::_upsample_nearest_exact1d_backward",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, OptScale));
  return op(grad_output, output_size, input_size, scales);
}

/// Gradient of upsample_nearest_exact2d.
inline Tensor upsample_nearest_exact2d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                                IntArrayRef input_size, OptScale scales_h = {},
                                                OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::_upsample_nearest_exact2d_backward",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, OptScale, OptScale));
  return op(grad_output, output_size, input_size, scales_h, scales_w);
}

/// Gradient of upsample_nearest_exact3d.
inline Tensor upsample_nearest_exact3d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                                IntArrayRef input_size, OptScale scales_d = {},
                                                OptScale scales_h = {}, OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::_upsample_nearest_exact3d_backward",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, OptScale, OptScale, OptScale));
  return op(grad_output, output_size, input_size, scales_d, scales_h, scales_w);
}

/// Gradient of upsample_linear1d.
inline Tensor upsample_linear1d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                         IntArrayRef input_size, bool align_corners,
                                         OptScale scales = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_linear1d_backward",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, bool, OptScale));
  return op(grad_output, output_size, input_size, align_corners, scales);
}

/// Gradient of upsample_bilinear2d.
inline Tensor upsample_bilinear2d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                           IntArrayRef input_size, bool align_corners,
                                           OptScale scales_h = {}, OptScale scales_w = {}) {
  LOOM_TYPED_OP(op, "aten::upsample_bilinear2d_backward",
                Tensor(const Tensor&, IntArrayRef, IntArrayRef, bool, OptScale, OptScale));
  return op(grad_output, output_size, input_size, align_corners, scales_h, scales_w);
}

/// Gradient of upsample_trilinear3d.
inline Tensor upsample_trilinear3d_backward(const Tensor& grad_output, IntArrayRef output_size,
                                            IntArrayRef input_size, bool align_corners,
                                            OptScale scales_d = {}, OptScale scales_h = {},
                                            OptScale scales_w = {}) {
  LOOM_TYPED_OP(
      op, "aten::upsample_trilinear3d_backward",
      Tensor(const Tensor&, IntArrayRef, IntArrayRef, bool, OptScale, OptScale, OptScale));
  return op(grad_output, output_size, input_size, align_corners, scales_d, scales_h, scales_w);
}

/// The options of interpolate, as F.interpolate's keyword arguments. Give exactly one of
/// size and scale_factor. size has one entry per spatial dim (PyTorch refuses a list of another
/// length); a single scale_factor applies to every spatial dim, as a Python float does.
struct InterpolateOptions {
  InterpolateOptions() = default;
  std::vector<int64_t> size;  ///< output spatial sizes, one per dim (empty: use scale_factor)
  std::vector<double> scale_factor;  ///< spatial multipliers, one or one per dim (empty: size)
  /// "nearest", "nearest-exact", "linear" (3-D input), "bilinear" (4-D), "trilinear" (5-D).
  std::string mode = "nearest";
  /// Linear modes only; absent means false, as in PyTorch.
  std::optional<bool> align_corners;
  /// With scale_factor: true computes the output size and then forgets the scale (the
  /// source index uses in / out); absent or false passes the scale to the op.
  std::optional<bool> recompute_scale_factor;

  /// Sets size.
  InterpolateOptions& with_size(std::vector<int64_t> v) {
    size = std::move(v);
    return *this;
  }
  /// Sets scale_factor.
  InterpolateOptions& with_scale_factor(std::vector<double> v) {
    scale_factor = std::move(v);
    return *this;
  }
  /// Sets mode.
  InterpolateOptions& with_mode(std::string m) {
    mode = std::move(m);
    return *this;
  }
  /// Sets align_corners.
  InterpolateOptions& with_align_corners(bool v) {
    align_corners = v;
    return *this;
  }
  /// Sets recompute_scale_factor.
  InterpolateOptions& with_recompute_scale_factor(bool v) {
    recompute_scale_factor = v;
    return *this;
  }
};

/// F.interpolate: resizes the spatial dims of [N, C, W], [N, C, H, W] or [N, C, D, H, W]
/// by picking the upsample op for the mode and rank, with PyTorch's errors. With a
/// scale_factor the output size is floor(in * scale) and, unless recompute_scale_factor,
/// the scale itself reaches the op. (It is C++ API, not an op.) "area" and "bicubic" are
/// not available yet (NotImplementedError).
inline Tensor interpolate(const Tensor& input, const InterpolateOptions& options) {
  const std::string& mode = options.mode;
  const bool nearest_like = mode == "nearest" || mode == "nearest-exact" || mode == "area";
  LOOM_CHECK(!(nearest_like && options.align_corners.has_value()),
             "align_corners option can only be set with the interpolating modes: linear | "
             "bilinear | bicubic | trilinear");
  const bool align_corners = options.align_corners.value_or(false);
  const int64_t dim = input.dim() - 2;
  const bool has_size = !options.size.empty();
  const bool has_scale = !options.scale_factor.empty();
  LOOM_CHECK(!(has_size && has_scale), "only one of size or scale_factor should be defined");
  LOOM_CHECK(has_size || has_scale, "either size or scale_factor should be defined");
  auto spatial = [&] {
    std::vector<int64_t> s;
    for (int64_t d = 2; d < input.dim(); ++d) s.push_back(input.size(d));
    return sizes_str(s);
  };
  std::vector<int64_t> output_size;
  std::vector<OptScale> scales(static_cast<size_t>(std::max<int64_t>(dim, 0)));
  if (has_size) {
    // A size is a list, one entry per spatial dim, as a list or tuple is in F.interpolate: {4}
    // for a 2-d image is refused rather than read as {4, 4}.
    output_size = options.size;
    LOOM_CHECK(static_cast<int64_t>(output_size.size()) == dim,
               "Input and output must have the same number of spatial dimensions, but got input "
               "with spatial dimensions of ",
               spatial(), " and output size of ", sizes_str(options.size),
               ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
               "(o1, o2, ...,oK) format.");
    LOOM_CHECK(!options.recompute_scale_factor.value_or(false),
               "recompute_scale_factor is not meaningful with an explicit size.");
  } else {
    std::vector<double> factors = options.scale_factor;
    if (factors.size() == 1) {
      factors.assign(static_cast<size_t>(std::max<int64_t>(dim, 0)), options.scale_factor[0]);
    }
    if (static_cast<int64_t>(factors.size()) != dim) {
      std::string given = "[";
      for (size_t i = 0; i < options.scale_factor.size(); ++i) {
        given += str_cat(i == 0 ? "" : ", ", options.scale_factor[i]);
      }
      LOOM_THROW(ValueError,
                 "Input and scale_factor must have the same number of spatial dimensions, but "
                 "got input with spatial dimensions of ",
                 spatial(), " and scale_factor of shape ", given,
                 "]. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                 "scale_factor in (s1, s2, ...,sK) format.");
    }
    const bool recompute = options.recompute_scale_factor.value_or(false);
    for (int64_t i = 0; i < dim; ++i) {
      // As upsample's .vec overloads: the double product, truncated.
      output_size.push_back(
          static_cast<int64_t>(std::floor(static_cast<double>(input.size(i + 2)) * factors[i])));
      if (!recompute) scales[i] = factors[i];
    }
  }
  const int64_t nd = input.dim();
  if (mode == "nearest" || mode == "nearest-exact") {
    const bool exact = mode == "nearest-exact";
    if (nd == 3) {
      return exact ? upsample_nearest_exact1d(input, output_size, scales[0])
                   : upsample_nearest1d(input, output_size, scales[0]);
    }
    if (nd == 4) {
      return exact ? upsample_nearest_exact2d(input, output_size, scales[0], scales[1])
                   : upsample_nearest2d(input, output_size, scales[0], scales[1]);
    }
    if (nd == 5) {
      return exact ? upsample_nearest_exact3d(input, output_size, scales[0], scales[1], scales[2])
                   : upsample_nearest3d(input, output_size, scales[0], scales[1], scales[2]);
    }
  }
  if (nd == 3 && mode == "linear") {
    return upsample_linear1d(input, output_size, align_corners, scales[0]);
  }
  if (nd == 4 && mode == "bilinear") {
    return upsample_bilinear2d(input, output_size, align_corners, scales[0], scales[1]);
  }
  if (nd == 5 && mode == "trilinear") {
    return upsample_trilinear3d(input, output_size, align_corners, scales[0], scales[1], scales[2]);
  }
  const bool linear_mode = mode == "linear" || mode == "bilinear" || mode == "trilinear";
  if (linear_mode && nd >= 3 && nd <= 5) {
    const int64_t want = mode == "linear" ? 3 : mode == "bilinear" ? 4 : 5;
    LOOM_THROW(NotImplementedError, "Got ", nd, "D input, but ", mode, " mode needs ", want,
               "D input");
  }
  LOOM_CHECK_T(NotImplementedError, !(mode == "area" || mode == "bicubic") || nd < 3 || nd > 5,
               "interpolate: mode '", mode,
               "' is not implemented yet (available: nearest | nearest-exact | linear | bilinear "
               "| trilinear)");
  LOOM_THROW(NotImplementedError, "Input Error: Only 3D, 4D and 5D input Tensors supported (got ",
             nd,
             "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
             "nearest-exact (got ",
             mode, ")");
}

/// interpolate to an explicit output size: `interpolate(x, {64, 64}, "bilinear")`.
inline Tensor interpolate(const Tensor& input, std::vector<int64_t> size,
                          std::string mode = "nearest",
                          std::optional<bool> align_corners = std::nullopt) {
  InterpolateOptions o;
  o.size = std::move(size);
  o.mode = std::move(mode);
  o.align_corners = align_corners;
  return interpolate(input, o);
}

}  // namespace loom
