// Reference CPU kernels: native_dropout and its backward op, and the composites dropout,
// feature_dropout, alpha_dropout and feature_alpha_dropout (PyTorch's _dropout_impl: random
// and pointwise ops through the dispatcher, so they serve every backend that has those).
//
// native_dropout draws one seed from the CPU default generator and makes its mask from the
// Philox stream of that seed (Note [Counter-based draws]), so loom::manual_seed(s) reproduces
// a mask exactly, with any number of threads.
#include "loom/ops/nn/dropout.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "cpu/meta.h"
#include "cpu/philox.h"
#include "cpu/reduce_engine.h"
#include "cpu/strided_copy.h"
#include "loom/core/generator.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/creation.h"
#include "loom/ops/pointwise.h"

namespace loom::ops::cpu::nn {
namespace {

using reduction::cast_contiguous;
using reduction::data_of;
using reduction::load;
using reduction::store;

void check_probability(std::string_view op, double p) {
  LOOM_CHECK(p >= 0 && p <= 1, op, ": dropout probability has to be between 0 and 1, but got ", p);
}

std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          std::optional<bool> train) {
  constexpr const char* op = "native_dropout";
  check_defined(op, {{"input", input}});
  LOOM_CHECK_T(TypeError, is_floating_point(input.dtype()), op,
               ": expected a floating point input, got ", input.describe());
  Tensor mask = Tensor::empty(input.sizes(), options_like(input, DType::Bool));
  if (!train.value_or(true)) {
    if (mask.numel() > 0 && !is_meta(mask))
      std::memset(mask.data_ptr(), 1, static_cast<size_t>(mask.numel()));
    return {contiguous_copy(input), mask};
  }
  check_probability("native_dropout", p);
  Tensor out = Tensor::empty(input.sizes(), options_like(input, input.dtype()));
  // Meta: the results' metadata only; the generator does not advance.
  if (input.numel() == 0 || is_meta(out)) return {out, mask};
  const double keep = 1.0 - p;
  // p == 1 keeps nothing; scale 0 rather than inf, so kept-nothing outputs are x * 0.
  const double scale = keep == 0 ? 0.0 : 1.0 / keep;
  const Tensor x = cast_contiguous(input, input.dtype());
  // Note [Counter-based draws]: drawing one number per element from the shared generator
  // (a virtual call and a lock each, in order, on one thread) took 13 ns an element, a third
  // of a TransformerEncoderLayer's training step (20 ms a call there). One seed is drawn
  // instead; element i keeps its value when word i % 4 of Philox block i / 4 of that seed is
  // below keep * 2^32. Blocks are pure functions of (seed, block), so threads fill their own
  // ranges and the mask is the same for every thread count: 1.5 ns an element on 2 threads
  // (2.3 ms a call in that step).
  const uint64_t seed = default_generator(Device()).next_u64();
  const auto threshold = static_cast<uint64_t>(std::ldexp(keep, 32));  // keep 1: every word
  const int64_t n = input.numel();
  bool* pm = data_of<bool>(mask);
  dispatch_floats(op, input, [&]<typename T>(T*) {
    using C = reduction::value_t<T>;
    const T* px = data_of<T>(x);
    T* po = data_of<T>(out);
    const auto s = static_cast<C>(scale);
    // 64 elements (16 blocks) at a time: their words, then the elements.
    const int64_t chunks = (n + 63) / 64;
#pragma omp parallel for schedule(static) if (n >= reduction::kGrain)
    for (int64_t c = 0; c < chunks; ++c) {
      uint32_t words[64];
      philox4x32_16(seed, static_cast<uint64_t>(16 * c), words);
      const int64_t lo = 64 * c, hi = std::min(n, lo + 64);
      for (int64_t i = lo; i < hi; ++i) {
        const bool k = words[i - lo] < threshold;
        pm[i] = k;
        // (x * mask) * scale, as PyTorch: a dropped inf or NaN gives NaN.
        store(po + i, load(px + i) * static_cast<C>(k) * s);
      }
    }
  });
  return {out, mask};
}

Tensor native_dropout_backward(const Tensor& grad_output, const Tensor& mask, double scale) {
  constexpr const char* op = "native_dropout_backward";
  check_defined(op, {{"grad_output", grad_output}, {"mask", mask}});
  LOOM_CHECK_T(TypeError, mask.dtype() == DType::Bool, op,
               ": Mask should be Bool Scalar Type, but got mask ", mask.describe());
  LOOM_CHECK(grad_output.sizes() == mask.sizes(), op, ": grad_output of size ",
             sizes_str(grad_output.sizes()), " does not match mask of size ",
             sizes_str(mask.sizes()));
  Tensor out = Tensor::empty(grad_output.sizes(), options_like(grad_output, grad_output.dtype()));
  if (out.numel() == 0) {
    LOOM_CHECK_T(TypeError, is_floating_point(grad_output.dtype()), op,
                 ": expected a floating point grad_output, got ", grad_output.describe());
    return out;
  }
  const Tensor g = cast_contiguous(grad_output, grad_output.dtype());
  const Tensor m = cast_contiguous(mask, DType::Bool);
  const bool* pm = data_of<bool>(m);
  dispatch_floats(op, grad_output, [&]<typename T>(T*) {
    if (is_meta(out)) return;
    using C = reduction::value_t<T>;
    const T* pg = data_of<T>(g);
    T* po = data_of<T>(out);
    const auto s = static_cast<C>(scale);
#pragma omp parallel for schedule(static) if (out.numel() >= reduction::kGrain)
    for (int64_t i = 0; i < out.numel(); ++i) {
      store(po + i, load(pg + i) * static_cast<C>(pm[i]) * s);
    }
  });
  return out;
}

/// PyTorch's _dropout_impl: the composite behind dropout, feature_dropout and the alpha forms.
Tensor dropout_impl(const Tensor& input, double p, bool train, bool feature, bool alpha) {
  const char* op = feature ? (alpha ? "feature_alpha_dropout" : "feature_dropout")
                           : (alpha ? "alpha_dropout" : "dropout");
  check_defined(op, {{"input", input}});
  check_probability(op, p);
  if (p == 0 || !train || input.numel() == 0) return input;
  if (p == 1) return loom::mul(input, loom::zeros({}, input.dtype(), input.device()));
  if (!feature && !alpha) return std::get<0>(loom::native_dropout(input, p, train));
  std::vector<int64_t> noise_sizes(input.sizes().begin(), input.sizes().end());
  if (feature) {
    LOOM_CHECK(input.dim() >= 2, op,
               ": Feature dropout requires at least 2 dimensions in the input");
    for (size_t d = 2; d < noise_sizes.size(); ++d) noise_sizes[d] = 1;
  }
  Tensor noise = loom::bernoulli(loom::empty(noise_sizes, input.dtype(), input.device()), 1.0 - p);
  if (!alpha) return loom::mul(input, loom::div(noise, 1.0 - p));
  // Dropped elements become SELU's saturation value -alpha * scale, and the affine a * x + b
  // keeps zero mean and unit variance.
  constexpr double kAlpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
  const Tensor b = loom::add(loom::mul(loom::sub(noise, 1), kAlpha * a), kAlpha * a * p);
  return loom::add(loom::mul(input, loom::mul(noise, a)), b);
}

Tensor dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, false, false);
}
Tensor feature_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, true, false);
}
Tensor alpha_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, false, true);
}
Tensor feature_alpha_dropout(const Tensor& input, double p, bool train) {
  return dropout_impl(input, p, train, true, true);
}

}  // namespace

LOOM_REFERENCE_KERNELS(aten, m) {
  m.set_provider("reference");
  m.impl("native_dropout", &native_dropout);
  m.impl("native_dropout_backward", &native_dropout_backward);
}

// The composites (PyTorch's _dropout_impl): one kernel for every backend and for autograd,
// which records the random and pointwise ops they call.
LOOM_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.set_provider("reference");
  m.impl("dropout", &dropout);
  m.impl("feature_dropout", &feature_dropout);
  m.impl("alpha_dropout", &alpha_dropout);
  m.impl("feature_alpha_dropout", &feature_alpha_dropout);
}

}  // namespace loom::ops::cpu::nn
