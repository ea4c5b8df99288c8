// Gradient parity: every Loom op with a derivative (a kernel at the Autograd key, or a
// CompositeImplicitAutograd kernel whose parts record gradients) that libtorch also has under
// the same schema name is run on both sides in float64, with every floating tensor argument
// a leaf that requires grad; a fixed pseudo-random grad_output per floating result goes back
// through both autograd engines, and the gradients of the inputs must agree (sizes; values
// within 1e-7 relative and absolute; an undefined gradient on one side must be undefined or
// all zeros on the other). Samples: the conformance harness's (tests/conformance/samples.cpp)
// and the kink table below (Note [Kink samples]), which is where this test earns its keep:
// gradcheck cannot decide the gradient at a kink, a tie or a jump, but PyTorch's choice there
// is what models trained on PyTorch expect. In-place forms run on their functional op's
// samples (Note [In-place parity]).
//
// One test per op (GradientParity/OpGradientParity.MatchesLibtorch/aten__relu); each prints
// "agree", "differ" (the first differing element, with both values) or "skipped" (why).
// Differences listed in known_differences() report as skips so the suite stays green.
// Built only where libtorch is installed (LOOM_WITH_LIBTORCH).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/version.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>

#include "conformance.h"
#include "loom/autograd/engine.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/plugin_loader.h"
#include "ops_test_util.h"
#include "torch_interop.h"

namespace loom::parity {
namespace {

// The shared overloads live in torch_interop.h; this file adds one taking its leaves.
using parity::to_torch;

using autograd::variable_list;
using conformance::Sample;
using conformance::with_variants;

// ---- Conversions (shared ones in torch_interop.h) --------------------------------------------

/// The leaves of one call: Loom's and libtorch's copies of the same values, and where they go.
struct Leaves {
  variable_list loom;
  std::vector<at::Tensor> torch;
  std::vector<std::string> names;  ///< "self", "tensors[1]"
  // (argument index, list element or -1) per leaf
  std::vector<std::pair<size_t, int>> slots;
};

/// A Loom argument as a c10 IValue (nullopt if it has no libtorch form here). Tensors that
/// are leaves are replaced by their libtorch leaves (slot lookup in leaves).
std::optional<c10::IValue> to_torch(const IValue& v, size_t arg, const Leaves& leaves) {
  return parity::to_torch(v, [&](int elem) -> const at::Tensor* {
    for (size_t k = 0; k < leaves.slots.size(); ++k) {
      if (leaves.slots[k] == std::pair<size_t, int>{arg, elem}) return &leaves.torch[k];
    }
    return nullptr;
  });
}

// ---- Comparison ----------------------------------------------------------------------------

/// Note [Gradient tolerance]: float64 on both sides, the same formulas up to the order of
/// operations: |loom - libtorch| <= 1e-7 + 1e-7 * |libtorch|; NaN matches NaN, inf matches
/// the same inf.
bool close(double g, double w, bool exact) {
  if (std::isnan(g) || std::isnan(w)) return std::isnan(g) && std::isnan(w);
  if (g == w) return true;
  if (exact || std::isinf(g) || std::isinf(w)) return false;
  return std::fabs(g - w) <= 1e-7 + 1e-7 * std::fabs(w);
}

/// libtorch's tensor as doubles (row-major).
std::vector<double> doubles_of(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

bool all_zero(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return x == 0; });
}

/// Loom's tensor against libtorch's; "" when they agree. For gradients (undefined_is_zero),
/// an undefined tensor on one side matches all zeros on the other.
std::string compare(const Tensor& got, const at::Tensor& want, bool undefined_is_zero) {
  if (!got.defined() || !want.defined()) {
    if (got.defined() == want.defined()) return "";
    if (undefined_is_zero) {
      if (!got.defined() && all_zero(doubles_of(want))) return "";
      if (!want.defined() && all_zero(testing::to_doubles(got))) return "";
    }
    return str_cat("loom ", got.defined() ? "defined" : "undefined", ", libtorch ",
                   want.defined() ? "defined" : "undefined");
  }
  std::vector<int64_t> gs(got.sizes().begin(), got.sizes().end());
  if (gs != want.sizes().vec()) {
    return str_cat("sizes ", sizes_str(got.sizes()), ", libtorch ", c10::str(want.sizes()));
  }
  if (torch_dtype(got.dtype()) != want.scalar_type()) {
    return str_cat("dtype ", dtype_name(got.dtype()), ", libtorch ",
                   c10::toString(want.scalar_type()));
  }
  const std::vector<double> g = testing::to_doubles(got);
  const std::vector<double> w = doubles_of(want);
  const bool exact = !is_floating_point(got.dtype());
  for (size_t i = 0; i < g.size(); ++i) {
    if (!close(g[i], w[i], exact)) {
      return str_cat("element ", i, ": loom ", num(g[i]), ", libtorch ", num(w[i]));
    }
  }
  return "";
}

// ---- Samples ---------------------------------------------------------------------------------

Tensor V(std::vector<double> v, std::vector<int64_t> sizes) {
  return testing::make_tensor(v, sizes, DType::Float64);
}

// Note [Kink samples]: inputs exactly at the points where an op is not differentiable (or not
// continuous), where the gradient is a convention: PyTorch's is the reference. Values at 0
// (and -0.0) for relu / abs / sign / the leaky and exponential units, at the bounds for
// clamp / hardtanh / relu6 / hardsigmoid / hardswish / the shrinks / threshold, integers and
// halves for floor / ceil / round / trunc / frac / remainder / fmod, ties for the reductions
// that select (max, min, amax, amin, max.dim, median, sort, topk, cummax, pooling), equal
// operands for maximum / minimum and the losses' kinks, zeros for norms and powers, NaN and
// infinities where an op treats them on purpose (nan_to_num, max's NaN propagation).
using List = std::vector<Sample>;
using IL = std::vector<int64_t>;

const std::map<std::string, std::function<List()>>& kink_table() {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Zeros, signed zero, integers and halves, in [3, 4].
  auto K = [] { return V({-2, -1.5, -1, -0.5, -0.0, 0, 0.25, 0.5, 1, 1.5, 2, 3}, {3, 4}); };
  // The hard activations' kinks (+-3, 0, 6).
  auto K6 = [] { return V({-6, -3, -1, -0.0, 0, 1, 3, 6, 7, 0.5, -0.5, -3.5}, {3, 4}); };
  // Ties: row 0 has its max twice, row 1 is constant, row 2 has max and min twice; the whole
  // tensor's max (3) twice, its min (-1) four times, its lower median (0.5) three times.
  auto T = [] { return V({1, 2, 2, 0.5, -1, -1, -1, -1, 0.5, 3, 0.5, 3}, {3, 4}); };
  auto Tnan = [nan] { return V({1, nan, 2, 0.5, -1, -1, 3, -1, 0.5, 3, nan, 3}, {3, 4}); };
  auto Z = [] { return V(std::vector<double>(12, 0.0), {3, 4}); };
  auto Zrow = [] { return V({0, 0, 0, 0, 1, -2, 0, 0.5, -1, 0, 0, 0}, {3, 4}); };
  // B equals K at half of its elements.
  auto B = [] { return V({-2, 0, -1, 0.5, 0, 0, 1, 0.5, 1, -1, 2, 2}, {3, 4}); };
  auto C = [] { return V({1, 1, 1, 1, 2, 2, 2, 2, -1, 0.5, 0.5, 2}, {3, 4}); };
  // 4x4 images: constant (every window ties) and a pattern with ties inside the windows.
  auto P1 = [] { return V(std::vector<double>(16, 1.0), {1, 1, 4, 4}); };
  auto P2 = [] { return V({1, 2, 2, 0, 2, 1, 0, 2, 3, 3, 1, 1, 3, 3, 1, 1}, {1, 1, 4, 4}); };
  auto L1 = [] { return V({1, 2, 2, 1, 2, 2, 0, 0}, {1, 2, 4}); };
  static const auto* t = new std::map<std::string, std::function<List()>>{
      {"aten::relu",
       [=] {
         return List{{"kink: zeros, integers", {K()}}, {"kink: NaN", {Tnan()}}};
       }},
      {"aten::relu6",
       [=] {
         return List{{"kink: 0 and 6", {K6()}}};
       }},
      {"aten::abs",
       [=] {
         return List{{"kink: zeros", {K()}}};
       }},
      {"aten::sign",
       [=] {
         return List{{"kink: zeros", {K()}}};
       }},
      {"aten::sgn",
       [=] {
         return List{{"kink: zeros", {K()}}};
       }},
      {"aten::leaky_relu",
       [=] {
         return List{{"kink: zeros", {K()}},
                     {"kink: zeros, slope 0.2", {K(), 0.2}},
                     {"kink: zeros, slope -0.5", {K(), -0.5}}};
       }},
      {"aten::elu",
       [=] {
         return List{{"kink: zeros", {K()}},
                     {"kink: zeros, alpha 0.5 scale 1.5 input_scale 2", {K(), 0.5, 1.5, 2.0}}};
       }},
      {"aten::selu",
       [=] {
         return List{{"kink: zeros", {K()}}};
       }},
      {"aten::celu",
       [=] {
         return List{{"kink: zeros, alpha 0.5", {K(), 0.5}}};
       }},
      {"aten::hardtanh",
       [=] {
         return List{{"kink: at -1 and 1", {K()}}, {"kink: at -0.5 and 1.5", {K(), -0.5, 1.5}}};
       }},
      {"aten::clamp",
       [=] {
         return List{{"kink: at min -1 and max 1", {K(), -1.0, 1.0}},
                     {"kink: at min -0.5", {K(), -0.5, std::nullopt}},
                     {"kink: at max 0.5", {K(), std::nullopt, 0.5}},
                     {"kink: min 1 > max -1", {K(), 1.0, -1.0}},
                     {"kink: NaN", {Tnan(), -1.0, 1.0}}};
       }},
      {"aten::clamp.Tensor",
       [=] {
         return List{{"kink: min equal at half", {K(), B(), std::nullopt}},
                     {"kink: max equal at half", {K(), std::nullopt, B()}},
                     {"kink: min == max == self at half", {K(), B(), B()}}};
       }},
      {"aten::clamp_min",
       [=] {
         return List{{"kink: at 0", {K(), 0.0}}};
       }},
      {"aten::clamp_max",
       [=] {
         return List{{"kink: at 0", {K(), 0.0}}};
       }},
      {"aten::clamp_min.Tensor",
       [=] {
         return List{{"kink: equal at half", {K(), B()}}};
       }},
      {"aten::clamp_max.Tensor",
       [=] {
         return List{{"kink: equal at half", {K(), B()}}};
       }},
      {"aten::hardsigmoid",
       [=] {
         return List{{"kink: at -3 and 3", {K6()}}};
       }},
      {"aten::hardswish",
       [=] {
         return List{{"kink: at -3 and 3", {K6()}}};
       }},
      {"aten::softshrink",
       [=] {
         return List{{"kink: at +-0.5", {K(), 0.5}}};
       }},
      {"aten::hardshrink",
       [=] {
         return List{{"kink: at +-0.5", {K(), 0.5}}};
       }},
      {"aten::threshold",
       [=] {
         return List{{"kink: at 0.5", {K(), 0.5, -1.0}}};
       }},
      {"aten::prelu",
       [=] {
         return List{{"kink: zeros", {K(), V({0.25}, {1})}}};
       }},
      {"aten::softplus",
       [=] {
         return List{{"kink: x * beta == threshold", {K(), 2.0, 1.0}}};
       }},
      {"aten::floor",
       [=] {
         return List{{"kink: integers", {K()}}};
       }},
      {"aten::ceil",
       [=] {
         return List{{"kink: integers", {K()}}};
       }},
      {"aten::round",
       [=] {
         return List{{"kink: halves", {K()}}};
       }},
      {"aten::round.decimals",
       [=] {
         return List{{"kink: halves, decimals 1", {K(), int64_t{1}}}};
       }},
      {"aten::trunc",
       [=] {
         return List{{"kink: integers", {K()}}};
       }},
      {"aten::frac",
       [=] {
         return List{{"kink: integers", {K()}}};
       }},
      {"aten::fix",
       [=] {
         return List{{"kink: integers", {K()}}};
       }},
      {"aten::remainder.Tensor",
       [=] {
         return List{{"kink: exact multiples", {K(), V({0.5, -0.5, 1, -1}, {4})}}};
       }},
      {"aten::remainder.Scalar",
       [=] {
         return List{{"kink: exact multiples of 0.5", {K(), 0.5}}};
       }},
      {"aten::fmod.Tensor",
       [=] {
         return List{{"kink: exact multiples", {K(), V({0.5, -0.5, 1, -1}, {4})}}};
       }},
      {"aten::fmod.Scalar",
       [=] {
         return List{{"kink: exact multiples of 0.5", {K(), 0.5}}};
       }},
      {"aten::sqrt",
       [=] {
         return List{{"kink: zero", {V({0, 1, 4, 0.25}, {4})}}};
       }},
      {"aten::pow.Tensor_Scalar",
       [=] {
         return List{{"kink: zeros ** 0", {K(), 0.0}},
                     {"kink: zeros ** 1", {K(), 1.0}},
                     {"kink: zeros ** 2", {K(), 2.0}},
                     {"kink: zeros ** 3 (int)", {K(), int64_t{3}}},
                     {"kink: zeros ** 0.5", {V({0, 1, 4, 0.25}, {4}), 0.5}},
                     {"kink: zeros ** -1", {K(), -1.0}}};
       }},
      {"aten::pow.Tensor_Tensor",
       [=] {
         return List{
             {"kink: zero bases and exponents",
              {V({0, 0, 0, 0, 1, 2, 0.5, -1}, {2, 4}), V({0, 1, 2, 0.5, 0, 0, 3, 2}, {2, 4})}}};
       }},
      {"aten::pow.Scalar",
       [=] {
         return List{{"kink: 0 ** x", {0.0, K()}}, {"kink: 1 ** x", {1.0, K()}}};
       }},
      {"aten::atan2",
       [=] {
         return List{{"kink: (0, 0)", {V({0, 0, 1, 0}, {4}), V({0, 1, 0, -1}, {4})}}};
       }},
      {"aten::hypot",
       [=] {
         return List{{"kink: (0, 0)", {V({0, 0, 3}, {3}), V({0, 1, 4}, {3})}}};
       }},
      {"aten::xlogy.Tensor",
       [=] {
         return List{{"kink: x = 0", {V({0, 0, 1, 2}, {4}), V({0, 1, 0, 2}, {4})}}};
       }},
      {"aten::sinc",
       [=] {
         return List{{"kink: zero", {V({0, 1, -0.0, 0.5}, {4})}}};
       }},
      {"aten::nan_to_num",
       [=] {
         return List{{"kink: NaN and infinities", {V({nan, inf, -inf, 1}, {4})}}};
       }},
      {"aten::maximum",
       [=] {
         return List{{"kink: equal at half", {K(), B()}}, {"kink: NaN", {Tnan(), T()}}};
       }},
      {"aten::minimum",
       [=] {
         return List{{"kink: equal at half", {K(), B()}}, {"kink: NaN", {Tnan(), T()}}};
       }},
      {"aten::fmax",
       [=] {
         return List{{"kink: equal at half", {K(), B()}}};
       }},
      {"aten::fmin",
       [=] {
         return List{{"kink: equal at half", {K(), B()}}};
       }},
      {"aten::max",
       [=] {
         return List{{"kink: ties", {T()}}, {"kink: NaN", {Tnan()}}};
       }},
      {"aten::min",
       [=] {
         return List{{"kink: ties", {T()}}, {"kink: NaN", {Tnan()}}};
       }},
      {"aten::max.other",
       [=] {
         return List{{"kink: equal at half", {K(), B()}}};
       }},
      {"aten::min.other",
       [=] {
         return List{{"kink: equal at half", {K(), B()}}};
       }},
      {"aten::amax",
       [=] {
         return List{{"kink: ties dim 1", {T(), IL{1}}},
                     {"kink: ties all", {T()}},
                     {"kink: ties dim 1 keepdim", {T(), IL{1}, true}},
                     {"kink: NaN dim 1", {Tnan(), IL{1}}}};
       }},
      {"aten::amin",
       [=] {
         return List{{"kink: ties dim 1", {T(), IL{1}}},
                     {"kink: ties all", {T()}},
                     {"kink: NaN dim 1", {Tnan(), IL{1}}}};
       }},
      {"aten::max.dim",
       [=] {
         return List{{"kink: ties dim 1", {T(), int64_t{1}}},
                     {"kink: ties dim 0 keepdim", {T(), int64_t{0}, true}},
                     {"kink: NaN dim 1", {Tnan(), int64_t{1}}}};
       }},
      {"aten::min.dim",
       [=] {
         return List{{"kink: ties dim 1", {T(), int64_t{1}}},
                     {"kink: ties dim 0 keepdim", {T(), int64_t{0}, true}}};
       }},
      {"aten::aminmax",
       [=] {
         return List{{"kink: ties dim 1", {T(), std::nullopt}}};
       }},
      {"aten::median",
       [=] {
         return List{{"kink: ties", {T()}}};
       }},
      {"aten::nanmedian",
       [=] {
         return List{{"kink: ties", {T()}}};
       }},
      {"aten::median.dim",
       [=] {
         return List{{"kink: ties dim 1", {T(), int64_t{1}}}};
       }},
      {"aten::nanmedian.dim",
       [=] {
         return List{{"kink: ties dim 1", {T(), int64_t{1}}}};
       }},
      {"aten::kthvalue",
       [=] {
         return List{{"kink: ties k 2 dim 1", {T(), int64_t{2}, int64_t{1}}}};
       }},
      {"aten::mode",
       [=] {
         return List{{"kink: ties dim 1", {T(), int64_t{1}}}};
       }},
      {"aten::sort",
       [=] {
         return List{{"kink: ties dim 1", {T(), int64_t{1}}},
                     {"kink: ties dim 1 descending", {T(), int64_t{1}, true}},
                     {"kink: NaN dim 1", {Tnan(), int64_t{1}}}};
       }},
      {"aten::sort.stable",
       [=] {
         return List{{"kink: ties stable dim 1", {T(), true, int64_t{1}, false}},
                     {"kink: ties stable dim 0 descending", {T(), true, int64_t{0}, true}}};
       }},
      {"aten::msort",
       [=] {
         return List{{"kink: ties", {T()}}};
       }},
      {"aten::topk",
       [=] {
         return List{{"kink: ties k 2", {T(), int64_t{2}}},
                     {"kink: ties k 2 smallest", {T(), int64_t{2}, int64_t{1}, false}},
                     {"kink: ties k 3 dim 0", {T(), int64_t{3}, int64_t{0}}},
                     {"kink: NaN k 2", {Tnan(), int64_t{2}}}};
       }},
      {"aten::cummax",
       [=] {
         return List{{"kink: ties dim 1", {T(), int64_t{1}}}};
       }},
      {"aten::cummin",
       [=] {
         return List{{"kink: ties dim 1", {T(), int64_t{1}}}};
       }},
      {"aten::norm.Scalar",
       [=] {
         return List{{"kink: zeros p 2", {Z(), 2.0}},
                     {"kink: ties p inf", {T(), inf}},
                     {"kink: zeros p 1", {Zrow(), 1.0}}};
       }},
      {"aten::norm.ScalarOpt_dim",
       [=] {
         return List{{"kink: zero row p 2 dim 1", {Zrow(), 2.0, IL{1}}},
                     {"kink: ties p inf dim 1", {T(), inf, IL{1}}}};
       }},
      {"aten::linalg_vector_norm",
       [=] {
         return List{{"kink: zeros ord 2", {Z(), 2.0}},
                     {"kink: zero row ord 2 dim 1", {Zrow(), 2.0, IL{1}}},
                     {"kink: zero row ord 1 dim 1", {Zrow(), 1.0, IL{1}}},
                     {"kink: zero row ord 3 dim 1", {Zrow(), 3.0, IL{1}}},
                     {"kink: zero row ord 0.5 dim 1", {Zrow(), 0.5, IL{1}}},
                     {"kink: ties ord inf dim 1", {T(), inf, IL{1}}},
                     {"kink: ties ord -inf", {T(), -inf}}};
       }},
      {"aten::dist",
       [=] {
         return List{{"kink: equal operands", {K(), K()}}};
       }},
      {"aten::std.correction",
       [=] {
         return List{{"kink: constant row dim 1", {C(), IL{1}}}};
       }},
      {"aten::var.correction",
       [=] {
         return List{{"kink: constant row dim 1", {C(), IL{1}}}};
       }},
      {"aten::std",
       [=] {
         return List{{"kink: constant", {Z()}}};
       }},
      {"aten::l1_loss",
       [=] {
         return List{{"kink: input == target at half", {K(), B()}}};
       }},
      {"aten::smooth_l1_loss",
       [=] {
         return List{{"kink: |diff| 0 and == beta 0.5", {K(), B(), int64_t{1}, 0.5}},
                     {"kink: beta 0", {K(), B(), int64_t{1}, 0.0}}};
       }},
      {"aten::huber_loss",
       [=] {
         return List{{"kink: |diff| 0 and == delta 0.5", {K(), B(), int64_t{1}, 0.5}}};
       }},
      {"aten::mse_loss",
       [=] {
         return List{{"kink: input == target at half", {K(), B()}}};
       }},
      {"aten::margin_ranking_loss",
       [=] {
         return List{
             {"kink: at the margin",
              {V({1, 0.5, 0, 2}, {4}), V({0.5, 0.5, 0.5, 1}, {4}), V({1, 1, -1, -1}, {4}), 0.5}}};
       }},
      {"aten::hinge_embedding_loss",
       [=] {
         return List{
             {"kink: at the margin", {V({1, 0.5, 0, 2}, {4}), V({-1, -1, 1, -1}, {4}), 1.0}}};
       }},
      {"aten::max_pool2d",
       [=] {
         return List{
             {"kink: constant k 2 s 1", {P1(), IL{2, 2}, IL{1, 1}}},
             {"kink: ties k 2 s 2", {P2(), IL{2, 2}, IL{2, 2}}},
             {"kink: ties k 3 s 1 p 1", {P2(), IL{3, 3}, IL{1, 1}, IL{1, 1}}},
             {"kink: constant k 2 s 1 dilation 2", {P1(), IL{2, 2}, IL{1, 1}, IL{0, 0}, IL{2, 2}}},
             {"kink: NaN k 2 s 2",
              {V({1, nan, 2, 0, 2, 1, 0, 2, 3, 3, 1, nan, 3, 3, 1, 1}, {1, 1, 4, 4}), IL{2, 2},
               IL{2, 2}}}};
       }},
      {"aten::max_pool2d_with_indices",
       [=] {
         return List{
             {"kink: constant k 2 s 1", {P1(), IL{2, 2}, IL{1, 1}}},
             {"kink: ties k 2 s 2", {P2(), IL{2, 2}, IL{2, 2}}},
             {"kink: ties k 3 s 2 p 1 ceil", {P2(), IL{3, 3}, IL{2, 2}, IL{1, 1}, IL{1, 1}, true}}};
       }},
      {"aten::max_pool1d",
       [=] {
         return List{{"kink: ties k 2 s 1", {L1(), IL{2}, IL{1}}},
                     {"kink: ties k 3 s 2 p 1", {L1(), IL{3}, IL{2}, IL{1}}}};
       }},
      {"aten::max_pool1d_with_indices",
       [=] {
         return List{{"kink: ties k 2 s 1", {L1(), IL{2}, IL{1}}}};
       }},
      {"aten::adaptive_max_pool2d",
       [=] {
         return List{{"kink: constant -> [2, 2]", {P1(), IL{2, 2}}},
                     {"kink: ties -> [3, 3]", {P2(), IL{3, 3}}}};
       }},
      {"aten::adaptive_max_pool1d",
       [=] {
         return List{{"kink: ties -> [3]", {L1(), IL{3}}}};
       }},
      {"aten::prod",
       [=] {
         return List{{"kink: one zero", {V({0.5, 0, 1.5, -1.25}, {4})}},
                     {"kink: two zeros", {V({0.5, 0, 1.5, 0}, {4})}}};
       }},
      {"aten::prod.dim_int",
       [=] {
         return List{
             {"kink: rows with 0, 1 and 2 zeros dim 1",
              {V({0.5, 1, 1.5, -1.25, 0, 2, 0.5, 0.75, -0.5, 0, 1.75, 0}, {3, 4}), int64_t{1}}}};
       }},
      {"aten::cumprod",
       [=] {
         return List{
             {"kink: rows with 0, 1 and 2 zeros dim 1",
              {V({0.5, 1, 1.5, -1.25, 0, 2, 0.5, 0.75, -0.5, 0, 1.75, 0}, {3, 4}), int64_t{1}}}};
       }},
      {"aten::logsumexp",
       [=] {
         return List{{"kink: -inf row dim 1", {V({-inf, -inf, -inf, 1, 2, -inf}, {2, 3}), IL{1}}},
                     {"kink: +inf dim 1", {V({inf, 0, 1, 1, 2, 3}, {2, 3}), IL{1}}}};
       }},
      {"aten::softmax.int",
       [=] {
         return List{{"kink: -inf dim 1", {V({-inf, 0, 1, 1, -inf, 3}, {2, 3}), int64_t{1}}}};
       }},
      {"aten::log_softmax.int",
       [=] {
         return List{{"kink: -inf dim 1", {V({-inf, 0, 1, 1, -inf, 3}, {2, 3}), int64_t{1}}}};
       }},
      {"aten::reciprocal",
       [=] {
         return List{{"kink: zeros", {V({0, -0.0, 1, -2}, {4})}}};
       }},
      {"aten::rsqrt",
       [=] {
         return List{{"kink: zero", {V({0, 1, 4, 0.25}, {4})}}};
       }},
      {"aten::log",
       [=] {
         return List{{"kink: zero", {V({0, 1, 4, 0.25}, {4})}}};
       }},
      {"aten::log2",
       [=] {
         return List{{"kink: zero", {V({0, 1, 4, 0.25}, {4})}}};
       }},
      {"aten::log1p",
       [=] {
         return List{{"kink: -1", {V({-1, 0, 1, -0.5}, {4})}}};
       }},
      {"aten::div.Tensor",
       [=] {
         return List{{"kink: division by zero", {V({1, 0, -1, 2}, {4}), V({0, 0, 0, 1}, {4})}}};
       }},
      {"aten::binary_cross_entropy",
       [=] {
         return List{{"kink: input 0 and 1",
                      {V({0, 1, 0, 1, 0.5, 0.25}, {6}), V({0, 1, 1, 0, 0.5, 1}, {6})}}};
       }},
      {"aten::kl_div",
       [=] {
         return List{{"kink: target 0", {V({-1, -0.5, 0, -2}, {4}), V({0, 0.5, 0, 1}, {4})}}};
       }},
      {"aten::frobenius_norm.dim",
       [=] {
         return List{{"kink: zero row dim 1", {Zrow(), IL{1}}}};
       }},
      {"aten::std.dim",
       [=] {
         return List{{"kink: constant row dim 1", {C(), IL{1}}}};
       }},
      {"aten::std_mean.correction",
       [=] {
         return List{{"kink: constant row dim 1", {C(), IL{1}}}};
       }},
      {"aten::var_mean.correction",
       [=] {
         return List{{"kink: constant row dim 1", {C(), IL{1}}}};
       }},
      {"aten::where.self",
       [=] {
         Tensor c = Tensor::empty({4}, TensorOptions{}.with(DType::Bool));
         for (int64_t i = 0; i < 4; ++i) c.data_ptr<bool>()[i] = i % 2 == 0;
         return List{{"kink: equal branches", {c, V({1, 2, 3, 4}, {4}), V({1, 2, 3, 4}, {4})}}};
       }},
  };
  return *t;
}

/// Samples for ops the harness has none for that fit libtorch (an index argument it fills
/// with floats, a dtype or size argument), in the form of samples.cpp's table.
const std::map<std::string, std::function<List()>>& extra_table() {
  auto R = [](std::vector<int64_t> sizes, uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> dist(-2, 2);
    int64_t n = 1;
    for (int64_t x : sizes) n *= x;
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = dist(gen);
    return V(v, sizes);
  };
  auto I = [](std::vector<int64_t> values, std::vector<int64_t> sizes) {
    Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Int64));
    for (size_t i = 0; i < values.size(); ++i) t.data_ptr<int64_t>()[i] = values[i];
    return t;
  };
  auto P = [R](std::vector<int64_t> sizes, uint64_t seed) {  // in (0.5, 2)
    Tensor t = R(std::move(sizes), seed);
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.data_ptr<double>()[i] = 0.5 + std::fabs(t.data_ptr<double>()[i]) * 0.75;
    }
    return t;
  };
  static const auto* t = new std::map<std::string, std::function<List()>>{
      {"aten::take",
       [=] {
         return List{{"[3, 4] at [2, 3]", {R({3, 4}, 1), I({0, 5, 11, 3, 5, 7}, {2, 3})}}};
       }},
      {"aten::index_fill.int_Scalar",
       [=] {
         return List{
             {"[5, 4] dim 0 at [3] = 0.5", {R({5, 4}, 2), int64_t{0}, I({1, 4, 1}, {3}), 0.5}}};
       }},
      {"aten::index_fill.int_Tensor",
       [=] {
         return List{
             {"[5, 4] dim 1 at [2] = []", {R({5, 4}, 3), int64_t{1}, I({2, 0}, {2}), R({}, 4)}}};
       }},
      {"aten::embedding_backward",
       [=] {
         return List{{"[2, 4, 3] into 10 rows",
                      {R({2, 4, 3}, 5), I({1, 3, 3, 9, 0, 1, 2, 1}, {2, 4}), int64_t{10},
                       int64_t{-1}, false, false}}};
       }},
      {"aten::as_strided",
       [=] {
         return List{
             {"[3, 4] as [2, 2] strides [1, 2] from 1",
              {R({3, 4}, 6), IL{2, 2}, IL{1, 2}, int64_t{1}}},
             {"[3, 4] as [3, 3] strides [2, 1] (overlapping)", {R({3, 4}, 7), IL{3, 3}, IL{2, 1}}}};
       }},
      {"aten::cross_entropy_loss",
       [=] {
         return List{
             {"[4, 5] by [4], weight [5], smoothing 0.1",
              {R({4, 5}, 11), I({0, 4, 2, 2}, {4}), P({5}, 12), int64_t{1}, int64_t{-100}, 0.1}},
             {"[4, 5] by [4], ignore 2, smoothing 0.2",
              {R({4, 5}, 13), I({0, 2, 2, 3}, {4}), std::nullopt, int64_t{1}, int64_t{2}, 0.2}},
             {"[2, 5, 3] by [2, 3]", {R({2, 5, 3}, 14), I({0, 1, 4, 4, 2, 3}, {2, 3})}},
             {"[4, 5] by probabilities [4, 5]", {R({4, 5}, 15), P({4, 5}, 16)}}};
       }},
      {"aten::nll_loss",
       [=] {
         return List{{"[4, 5] by [4], weight [5], ignore 2",
                      {R({4, 5}, 17), I({0, 2, 2, 3}, {4}), P({5}, 18), int64_t{1}, int64_t{2}}},
                     {"[5] by []", {R({5}, 19), I({3}, {})}}};
       }},
      {"aten::embedding",
       [=] {
         return List{{"[6, 3] by [2, 3] repeated rows, scale_grad_by_freq",
                      {R({6, 3}, 20), I({4, 0, 4, 5, 4, 0}, {2, 3}), int64_t{-1}, true}},
                     {"[6, 3] by [2, 3] repeated rows, padding_idx 0",
                      {R({6, 3}, 21), I({4, 0, 4, 5, 4, 0}, {2, 3}), int64_t{0}}}};
       }},
      {"aten::index_put",
       [=] {
         return List{{"[5, 3] at repeated rows, accumulate",
                      {R({5, 3}, 22), std::vector<std::optional<Tensor>>{I({1, 3, 1}, {3})},
                       R({3, 3}, 23), true}}};
       }},
      {"aten::scatter_reduce.two",
       [=] {
         // Ties: src equals self or another src at the same destination.
         auto self = [] { return V({1, 2, 3, 4, 2, 2, 0, 1}, {2, 4}); };
         auto src = [] { return V({2, 1, 3, 3, 2, 0, 1, 2}, {2, 4}); };
         const Tensor idx = I({0, 1, 2, 2, 0, 0, 3, 3}, {2, 4});
         List l;
         for (const char* r : {"amax", "amin", "prod", "mean"}) {
           for (bool incl : {true, false}) {
             l.push_back({str_cat("kink: ties ", r, incl ? "" : ", without self"),
                          {self(), int64_t{1}, idx, src(), std::string(r), incl}});
           }
         }
         return l;
       }},
      {"aten::binary_cross_entropy",
       [=] {
         auto U = [R](std::vector<int64_t> sizes, uint64_t seed) {  // in (0.1, 0.9)
           Tensor t = R(std::move(sizes), seed);
           for (int64_t i = 0; i < t.numel(); ++i) {
             t.data_ptr<double>()[i] = 0.5 + t.data_ptr<double>()[i] * 0.2;
           }
           return t;
         };
         return List{{"[3, 4] x [3, 4] in (0.1, 0.9)", {U({3, 4}, 27), U({3, 4}, 28)}},
                     {"[3, 4] x [3, 4] in (0.1, 0.9), weight [3, 4]",
                      {U({3, 4}, 29), U({3, 4}, 30), P({3, 4}, 31)}}};
       }},
      {"aten::mean.dim",
       [=] {
         return List{{"[2, 3, 5] dims [0, -1]", {R({2, 3, 5}, 24), IL{0, -1}}}};
       }},
      {"aten::sum.dim_IntList",
       [=] {
         return List{{"[2, 3, 5] dims [0, 2]", {R({2, 3, 5}, 25), IL{0, 2}}}};
       }},
      {"aten::gelu",
       [=] {
         return List{{"[3, 4] tanh", {R({3, 4}, 26), std::string("tanh")}}};
       }},
      {"aten::to.dtype",
       [=] {
         return List{{"[3, 4] to float64", {R({3, 4}, 8), DType::Float64}}};
       }},
      {"aten::norm.ScalarOpt_dtype",
       [=] {
         return List{{"[3, 4] p 3 float64", {R({3, 4}, 9), 3.0, DType::Float64}},
                     {"[3, 4] p None float64", {R({3, 4}, 9), std::nullopt, DType::Float64}}};
       }},
      {"aten::norm.ScalarOpt_dim_dtype",
       [=] {
         return List{
             {"[3, 4] p 3 dim 1 float64", {R({3, 4}, 10), 3.0, IL{1}, false, DType::Float64}}};
       }},
  };
  return *t;
}

/// The kink table's entries that ran (to list those that never did).
std::set<std::string>& kink_ops_seen() {
  static std::set<std::string> s;
  return s;
}

/// Floating tensor arguments that are not differentiated, as in PyTorch's derivatives.yaml
/// (the same list as the harness's gradcheck): running statistics, nll's total_weight, the
/// losses' class / element weights, and the saved statistics of the norms' backward ops.
bool differentiable_argument(const std::string& op, const std::string& arg) {
  static const auto* per_op = new std::map<std::string, std::set<std::string>>{
      {"aten::native_batch_norm_backward", {"save_mean", "save_invstd"}},
      {"aten::native_layer_norm_backward", {"mean", "rstd"}},
      {"aten::native_group_norm_backward", {"mean", "rstd"}},
      // libtorch 1.13: "not differentiable with respect to argument 'target'".
      {"aten::soft_margin_loss", {"target"}},
      {"aten::multilabel_soft_margin_loss", {"target"}},
  };
  if (arg == "running_mean" || arg == "running_var" || arg == "total_weight") return false;
  if ((arg == "weight" || arg == "pos_weight") &&
      (op.starts_with("aten::nll_loss") || op.starts_with("aten::cross_entropy") ||
       op.starts_with("aten::binary_cross_entropy"))) {
    return false;
  }
  const auto it = per_op->find(op);
  return it == per_op->end() || !it->second.contains(arg);
}


/// The grad_output of result k: values in [-1, 1) from a seed of k and the sizes, the same
/// for both sides.
Tensor grad_output_for(size_t k, IntArrayRef sizes, DType dtype) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::mt19937_64 gen(1000003 * (k + 1) + static_cast<uint64_t>(n));
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(gen);
  return testing::make_tensor(v, sizes, dtype);
}

// ---- Known differences -----------------------------------------------------------------------

// Note [Known gradient differences]: (op, sample label substring) -> why. A difference on a
// matching sample reports as a skip (with the message), so the suite stays green; an entry
// that no longer differs is printed so it can go. Every entry is a bug in Loom's formula for
// its owners to fix unless its reason says PyTorch's behaviour is arguably the bug.
struct Known {
  std::string op;
  std::string label;  ///< a regex searched in the sample label
  std::string reason;
  std::string what = "";  ///< a regex the whole difference message must match ("": any)
};
const std::vector<Known>& known_differences() {
  // PyTorch's smooth_l1_loss_backward / huber_loss_backward, called for target with the
  // operands swapped, normalise the mean by target.numel(), not by the broadcast size.
  const std::string broadcast_target =
      "PyTorch 1.13 bug: the gradient of a broadcast target is too large by the broadcast "
      "factor (mean normalised by target.numel()); Loom's passes gradcheck";
  const std::string var0d = "^grad of self: element 0: loom -?nan, libtorch inf$";
  static const auto* v = new std::vector<Known>{
      // PyTorch's behaviour is arguably the bug:
      {"aten::hardswish", "kink: at -3 and 3",
       "PyTorch 1.13 CPU bug: at x == 3 its vectorised kernel gives grad (x >= 3), its scalar "
       "and CUDA kernels grad * 1.5 (x <= 3), which Loom matches"},
      {"aten::smooth_l1_loss", R"(^\[3, 4\] x \[(4|3, 1|)\](, non-contiguous)?$)", broadcast_target,
       "^grad of target: .*"},
      {"aten::huber_loss", R"(^\[3, 4\] x \[(4|3, 1|)\](, non-contiguous)?$)", broadcast_target,
       "^grad of target: .*"},
      {"aten::smooth_l1_loss", "kink: beta 0",
       "PyTorch bug: with beta 0 at input == target it gives input and target the same "
       "gradient (-grad), not opposite ones; Loom's are opposite"},
      {"aten::amax", "kink: NaN",
       "PyTorch arguably wrong: a row whose max is NaN gets NaN gradients everywhere (grad "
       "divided by the count of elements equal to NaN, 0); Loom sends it to the NaN (as "
       "PyTorch's max() does)"},
      {"aten::amin", "kink: NaN",
       "PyTorch arguably wrong: as amax (NaN gradients across a NaN row)"},
      // Degenerate: N - correction == 0 divides by zero on both sides.
      {"aten::var", "^\\[\\]",
       "0-d input, correction 1: Loom NaN, PyTorch inf; neither is meaningful", var0d},
      {"aten::var.dim", "^\\[\\]",
       "0-d input, correction 1: Loom NaN, PyTorch inf; neither is meaningful", var0d},
      {"aten::var.correction", "^\\[\\]",
       "0-d input, correction 1: Loom NaN, PyTorch inf; neither is meaningful", var0d},
      {"aten::var_mean.correction", "^\\[\\]",
       "0-d input, correction 1: Loom NaN, PyTorch inf; neither is meaningful", var0d},
  };
  return *v;
}

const Known* known_for(const std::string& op, const std::string& label,
                       const std::string& difference) {
  for (const Known& k : known_differences()) {
    if (k.op == op && std::regex_search(label, std::regex(k.label)) &&
        (k.what.empty() || std::regex_match(difference, std::regex(k.what)))) {
      return &k;
    }
  }
  return nullptr;
}

// ---- The check ---------------------------------------------------------------------------------

bool has_derivative(const OperatorHandle& op) {
  for (const KernelInfo& k : Dispatcher::instance().kernels(op)) {
    if (k.key == DispatchKey::Autograd || k.key == DispatchKey::CompositeImplicitAutograd) {
      return true;
    }
  }
  return false;
}

/// The floating tensors of Loom's result stack (lists flattened), and every tensor.
void results_of(const Stack& st, std::vector<Tensor>& all) {
  for (const IValue& v : st) {
    if (v.is_tensor()) all.push_back(v.to_tensor());
    if (v.tag() == IValue::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) all.push_back(t);
    }
  }
}
void results_of(const torch::jit::Stack& st, std::vector<at::Tensor>& all) {
  for (const c10::IValue& v : st) {
    if (v.isTensor()) all.push_back(v.toTensor());
    if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) all.push_back(t);
    }
    if (v.isTuple()) {
      for (const c10::IValue& e : v.toTupleRef().elements()) {
        if (e.isTensor()) all.push_back(e.toTensor());
      }
    }
  }
}

// Note [In-place parity]: an in-place form ("relu_", "mul_.Tensor": the op's name ends in
// '_', only self is written) is checked on its functional op's samples, applied to a clone of
// the self leaf on both sides (a leaf cannot be modified in place), so its gradient goes
// through the in-place formula and the clone. A formula that reads self after it was
// overwritten shows here.

/// The functional op of an in-place form, or nullopt if op is not one.
std::optional<OperatorHandle> functional_of(const OperatorHandle& op) {
  const FunctionSchema& s = op.schema();
  if (!s.name().ends_with("_") || s.arguments().empty()) return std::nullopt;
  for (size_t i = 0; i < s.arguments().size(); ++i) {
    const auto& alias = s.arguments()[i].alias;
    const bool writes = alias && alias->is_write;
    if (writes != (i == 0)) return std::nullopt;
  }
  std::string fname = s.ns() + "::" + s.name().substr(0, s.name().size() - 1);
  if (!s.overload_name().empty()) fname += "." + s.overload_name();
  // The in-place pows are named after their exponent only.
  if (fname == "aten::pow.Scalar") fname = "aten::pow.Tensor_Scalar";
  if (fname == "aten::pow.Tensor") fname = "aten::pow.Tensor_Tensor";
  return Dispatcher::instance().find_op(fname);
}

/// What one sample came to.
struct SampleOutcome {
  std::string skip;        ///< not compared, and why
  std::string difference;  ///< the differences ("" for none), "; "-separated
  std::string note;        ///< e.g. integer results (indices) differ at ties
};

SampleOutcome run_sample(const OperatorHandle& op, const c10::OperatorHandle& top,
                         const Sample& smp, bool strided, bool first_result_only = false) {
  const bool inplace = op.schema().is_mutable();
  SampleOutcome out;
  const auto& schema_args = op.schema().arguments();
  Stack args(smp.args.begin(), smp.args.end());
  try {
    normalize_boxed_arguments(op, args);
  } catch (const std::exception& e) {
    out.skip = str_cat("arguments do not fit the schema (", e.what(), ")");
    return out;
  }
  if (top.schema().arguments().size() != args.size()) {
    out.skip = str_cat("libtorch's schema has ", top.schema().arguments().size(),
                       " arguments, Loom's ", args.size());
    return out;
  }
  // The leaves: fresh float64 copies on both sides.
  Leaves leaves;
  auto make_leaf = [&](const Tensor& t, size_t arg, int elem, std::string name) {
    // Loom's leaves in the layout under test; libtorch's are contiguous copies.
    Tensor l = testing::make_tensor(testing::to_doubles(t), t.sizes(), DType::Float64,
                                    strided && t.dim() >= 1);
    l.set_requires_grad(true);
    at::Tensor tl = to_torch(l);
    tl.requires_grad_(true);
    leaves.loom.push_back(l);
    leaves.torch.push_back(tl);
    leaves.names.push_back(std::move(name));
    leaves.slots.emplace_back(arg, elem);
    return l;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& name = schema_args[i].name;
    if (!differentiable_argument(op.name(), name)) continue;
    IValue& v = args[i];
    if (v.is_tensor() && v.to_tensor().defined() && v.to_tensor().dtype() == DType::Float64) {
      v = make_leaf(v.to_tensor(), i, -1, name);
    } else if (v.tag() == IValue::Tag::TensorList) {
      std::vector<Tensor> list = v.to_tensor_list();
      for (size_t j = 0; j < list.size(); ++j) {
        if (list[j].dtype() == DType::Float64) {
          list[j] = make_leaf(list[j], i, static_cast<int>(j), str_cat(name, "[", j, "]"));
        }
      }
      v = std::move(list);
    }
  }
  if (leaves.loom.empty()) {
    out.skip = "no float64 tensor input";
    return out;
  }
  torch::jit::Stack tstack;
  for (size_t i = 0; i < args.size(); ++i) {
    auto tv = to_torch(args[i], i, leaves);
    if (!tv) {
      out.skip = str_cat("argument '", schema_args[i].name, "' has no libtorch form here");
      return out;
    }
    tstack.push_back(*tv);
  }
  if (inplace) {
    if (leaves.slots.empty() || leaves.slots[0] != std::pair<size_t, int>{0, -1}) {
      out.skip = "self is not a float64 tensor";
      return out;
    }
    Stack c{args[0]};
    Dispatcher::instance().find_op_or_throw("aten::clone").call_boxed(c);
    args[0] = c.at(0);
    tstack[0] = c10::IValue(tstack[0].toTensor().clone());
  }
  // Forward on both sides.
  std::string torch_error, loom_error;
  try {
    torch::autograd::AutoGradMode grad_on(true);
    top.callBoxed(&tstack);
  } catch (const std::exception& e) {
    torch_error = e.what();
  }
  Stack lstack = args;
  try {
    op.call_boxed(lstack);
  } catch (const std::exception& e) {
    loom_error = e.what();
  }
  if (!torch_error.empty() || !loom_error.empty()) {
    out.skip = str_cat("forward refused by ", torch_error.empty() ? "Loom" : "libtorch", " (",
                       (torch_error.empty() ? loom_error : torch_error).substr(0, 100), ")");
    return out;
  }
  std::vector<Tensor> got;
  std::vector<at::Tensor> want;
  results_of(lstack, got);
  results_of(tstack, want);
  if (got.size() != want.size()) {
    out.difference = str_cat("number of results: loom ", got.size(), ", libtorch ", want.size());
    return out;
  }
  // The forward must agree for the gradients to be comparable (random ops, and value
  // differences, which libtorch_parity reports, are skipped here).
  for (size_t k = 0; k < got.size(); ++k) {
    const std::string d = compare(got[k], want[k], false);
    if (d.empty()) continue;
    if (got[k].defined() && !is_floating_point(got[k].dtype())) {
      out.note = str_cat("integer result ", k, " differs (", d, ")");
      continue;
    }
    out.skip = str_cat("forward result ", k, " differs (", d,
                       "): random, or a value difference (see libtorch_parity)");
    return out;
  }
  // The floating results that require grad, and their grad_outputs.
  variable_list louts, lgos;
  std::vector<at::Tensor> touts, tgos;
  for (size_t k = 0; k < got.size(); ++k) {
    if (!got[k].defined() || !is_floating_point(got[k].dtype())) continue;
    const bool lr = got[k].requires_grad(), tr = want[k].requires_grad();
    if (lr != tr) {
      out.difference += str_cat("result ", k, " requires_grad: loom ", lr, ", libtorch ", tr, "; ");
    }
    if (!lr || !tr || (first_result_only && !louts.empty())) continue;
    const Tensor go = grad_output_for(k, got[k].sizes(), got[k].dtype());
    louts.push_back(got[k]);
    lgos.push_back(go);
    touts.push_back(want[k]);
    tgos.push_back(to_torch(go));
  }
  if (louts.empty()) {
    if (out.difference.empty())
      out.skip = "not differentiable (no result requires grad on either side)";
    return out;
  }
  std::vector<at::Tensor> tgrads;
  try {
    tgrads = torch::autograd::grad(touts, leaves.torch, tgos, /*retain_graph=*/c10::nullopt,
                                   /*create_graph=*/false, /*allow_unused=*/true);
  } catch (const std::exception& e) {
    out.skip = str_cat("libtorch's backward throws (",
                       std::string(e.what()).substr(0, std::string(e.what()).find('\n')), ")");
    return out;
  }
  variable_list lgrads;
  try {
    lgrads = autograd::grad(louts, leaves.loom, lgos, std::nullopt, false, true);
  } catch (const std::exception& e) {
    out.difference += str_cat("Loom's backward throws: ", e.what());
    return out;
  }
  for (size_t k = 0; k < leaves.loom.size(); ++k) {
    const std::string d = compare(lgrads.at(k), tgrads.at(k), true);
    if (!d.empty()) {
      out.difference += str_cat("grad of ", leaves.names[k], ": ", d);
      if (std::getenv("LOOM_PARITY_VERBOSE") != nullptr) {
        std::string a, b;
        if (lgrads[k].defined())
          for (double x : testing::to_doubles(lgrads[k])) a += " " + num(x);
        if (tgrads[k].defined())
          for (double x : doubles_of(tgrads[k])) b += " " + num(x);
        std::printf("  %s %s grad of %s:\n    loom    %s\n    libtorch%s\n", op.name().c_str(),
                    smp.label.c_str(), leaves.names[k].c_str(), a.c_str(), b.c_str());
      }
      // With several differentiated results: does it agree when only result 0 gets one?
      if (!first_result_only && louts.size() > 1) {
        const SampleOutcome first = run_sample(op, top, smp, strided, true);
        if (first.skip.empty() && first.difference.find("grad of") == std::string::npos) {
          out.difference += " (agrees when only the first result gets a gradient)";
        }
      }
      return out;
    }
  }
  if (out.difference.ends_with("; ")) out.difference.resize(out.difference.size() - 2);
  return out;
}

/// Results of the run, printed at the end.
struct Tally {
  std::vector<std::string> agree, differ, known, skipped;
  std::set<std::string> known_used;
};
Tally& tally() {
  static Tally t;
  return t;
}

void check_op(const std::string& name) {
  const OperatorHandle op = *Dispatcher::instance().find_op(name);
  const FunctionSchema& s = op.schema();
  const auto top =
      c10::Dispatcher::singleton().findSchema({s.ns() + "::" + s.name(), s.overload_name()});
  Tally& t = tally();
  if (!top) {
    t.skipped.push_back(name);
    std::printf("[gradient parity] %s: skipped (not in libtorch %s)\n", name.c_str(),
                TORCH_VERSION);
    GTEST_SKIP() << name << ": not in libtorch " << TORCH_VERSION;
  }
  std::vector<Sample> samples;
  // In-place forms take their functional op's samples (Note [In-place parity]).
  const OperatorHandle sop = functional_of(op).value_or(op);
  const std::string& sname = sop.name();
  const conformance::Samples harness = conformance::samples_for(sop);
  samples = harness.samples;
  if (auto it = extra_table().find(sname); it != extra_table().end()) {
    for (Sample& k : it->second()) samples.push_back(std::move(k));
  }
  if (auto it = kink_table().find(sname); it != kink_table().end()) {
    kink_ops_seen().insert(sname);
    for (Sample& k : it->second()) samples.push_back(std::move(k));
  }
  samples = with_variants(sop, std::move(samples));
  if (samples.empty()) {
    t.skipped.push_back(name);
    std::printf("[gradient parity] %s: skipped (%s)\n", name.c_str(), harness.skip_reason.c_str());
    GTEST_SKIP() << name << ": " << harness.skip_reason;
  }
  int compared = 0, kinks = 0;
  std::vector<std::string> failures, knowns;
  std::set<std::string> skips, notes;
  std::vector<std::pair<Sample, bool>> runs;  // every sample, contiguous and strided
  for (const Sample& smp : samples) {
    runs.emplace_back(smp, false);
    runs.emplace_back(Sample{smp.label + ", non-contiguous", smp.args}, true);
  }
  for (const auto& [smp, strided] : runs) {
    const SampleOutcome o = run_sample(op, *top, smp, strided);
    if (!o.skip.empty()) {
      skips.insert(o.skip);
      if (smp.label.starts_with("kink:") || std::getenv("LOOM_PARITY_VERBOSE") != nullptr) {
        std::printf("  sample of %s skipped: %s: %s\n", name.c_str(), smp.label.c_str(),
                    o.skip.c_str());
      }
      continue;
    }
    if (!o.note.empty()) notes.insert(str_cat(smp.label, ": ", o.note));
    if (!o.difference.empty()) {
      const std::string msg = str_cat(smp.label, ": ", o.difference);
      if (const Known* k = known_for(sname, smp.label, o.difference)) {
        t.known_used.insert(k->op + " / " + k->label);
        knowns.push_back(str_cat(msg, " [known: ", k->reason, "]"));
      } else {
        failures.push_back(msg);
      }
      continue;
    }
    ++compared;
    if (smp.label.starts_with("kink:")) ++kinks;
  }
  for (const std::string& n : notes) std::printf("  note %s: %s\n", name.c_str(), n.c_str());
  if (!failures.empty()) {
    t.differ.push_back(name);
    for (const std::string& f : failures) {
      std::printf("[gradient parity] %s: differ on %s\n", name.c_str(), f.c_str());
      ADD_FAILURE() << name << " differs on " << f;
    }
    return;
  }
  if (!knowns.empty()) {
    t.known.push_back(name);
    std::string all;
    for (const std::string& k : knowns) {
      std::printf("[gradient parity] %s: differ (known) on %s\n", name.c_str(), k.c_str());
      all += "\n  " + k;
    }
    GTEST_SKIP() << name << ": known differences:" << all;
  }
  if (compared == 0) {
    t.skipped.push_back(name);
    std::string why;
    for (const std::string& x : skips) why += (why.empty() ? "" : "; ") + x;
    std::printf("[gradient parity] %s: skipped (%s)\n", name.c_str(), why.c_str());
    GTEST_SKIP() << name << ": " << why;
  }
  t.agree.push_back(name);
  std::printf("[gradient parity] %s: agree (%d samples, %d at kinks)\n", name.c_str(), compared,
              kinks);
}

/// Every Loom op with a derivative: the functional ones, and the in-place forms (Note
/// [In-place parity]).
std::vector<std::string> differentiable_ops() {
  load_plugins();
  std::vector<std::string> names;
  for (const OperatorHandle& op : Dispatcher::instance().ops()) {
    if (!op.has_schema() || op.schema().ns() != "aten") continue;
    if (op.schema().is_mutable() && !functional_of(op)) continue;
    if (has_derivative(op)) names.push_back(op.name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class OpGradientParity : public ::testing::TestWithParam<std::string> {};
TEST_P(OpGradientParity, MatchesLibtorch) { check_op(GetParam()); }
INSTANTIATE_TEST_SUITE_P(GradientParity, OpGradientParity,
                         ::testing::ValuesIn(differentiable_ops()), case_name);

/// Prints the tally, the kink entries that never ran (their op has no derivative, or is
/// not in Loom) and the known differences that no longer differ.
class Report : public ::testing::Environment {
 public:
  void TearDown() override {
    const Tally& t = tally();
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const std::string& x : v) s += " " + x;
      return s;
    };
    std::printf("[gradient parity] %zu agree, %zu differ:%s, %zu known:%s, %zu skipped\n",
                t.agree.size(), t.differ.size(), join(t.differ).c_str(), t.known.size(),
                join(t.known).c_str(), t.skipped.size());
    std::vector<std::string> unused;
    for (const auto& [op, fn] : kink_table()) {
      if (!kink_ops_seen().contains(op)) unused.push_back(op);
    }
    if (!unused.empty() && !t.agree.empty()) {
      std::printf("[gradient parity] kink samples not run (no derivative or no such op):%s\n",
                  join(unused).c_str());
    }
    for (const Known& k : known_differences()) {
      if (!t.known_used.contains(k.op + " / " + k.label) && !t.agree.empty()) {
        std::printf("[gradient parity] known difference %s / '%s' no longer differs\n",
                    k.op.c_str(), k.label.c_str());
      }
    }
  }
};
[[maybe_unused]] ::testing::Environment* const report =
    ::testing::AddGlobalTestEnvironment(new Report);

}  // namespace
}  // namespace loom::parity
