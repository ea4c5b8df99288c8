// The harness's gradient checks (docs/design/conformance.md, "Gradients"): every op with a
// derivative (a kernel at the Autograd key, or a CompositeImplicitAutograd kernel whose
// parts record gradients) is gradchecked in float64 on the harness's own samples, contiguous
// and non-contiguous; a short list of ops is also gradgradchecked. One test per op:
//   Gradcheck/OpGradcheck.MatchesFiniteDifferences/aten__mul_Tensor
//   Gradgradcheck/OpGradgradcheck.MatchesFiniteDifferences/aten__mul_Tensor
// OpDerivatives.Missing lists the ops with floating results that have no derivative (only
// the Autograd fallback, which throws in backward); it reports and never fails.
#include "loom/autograd/gradcheck.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "conformance.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/plugin_loader.h"
#include "ops_test_util.h"

namespace loom::conformance {
namespace {

using autograd::variable_list;

// Note [Gradcheck sample size]: gradcheck runs two forwards per input element and one
// backward per output element, so its cost grows with the product of the two. Samples over
// these caps are skipped (with the reason); ops whose every harness sample is larger get a
// small one from gradcheck_samples() below.
constexpr int64_t kMaxInputElements = 160;   // all floating tensor inputs together
constexpr int64_t kMaxOutputElements = 160;  // all floating outputs together
// gradgradcheck also perturbs the grad_outputs and runs a double backward per element.
constexpr int64_t kMaxGradgradElements = 72;

// Note [Smooth samples]: finite differences are meaningless at a kink (abs and relu at 0,
// clamp and hardtanh at their bounds, the shrink ops at +-lambda) or a jump (floor, round at
// halves). The harness's samples are uniform in [-2, 2), and the thresholds of the packs'
// ops (and the scalar 0.75 schema-made samples use) are multiples of 0.25; every floating
// input value closer than kSmoothMargin to such a multiple is moved kSmoothMargin away from
// it, for every op, so no central difference (step 1e-6) straddles one. Kinks that depend on
// two values (maximum at x == y, ties of max and sort) are left to the samples' randomness.
constexpr double kSmoothGrid = 0.25;
constexpr double kSmoothMargin = 0.02;

double smooth(double v) {
  const double k = std::round(v / kSmoothGrid) * kSmoothGrid;
  if (std::fabs(v - k) >= kSmoothMargin) return v;
  return v >= k ? k + kSmoothMargin : k - kSmoothMargin;
}

enum class Check { Grad, GradGrad };

// Note [Known gradcheck failures]: ops whose formula is known to be wrong or missing a part,
// each with the reason. Their failure reports as a skip (with gradcheck's message) so the
// suite stays green; when one passes the test says so, and its line should go.
const std::map<std::string, std::string>& known_failures(Check kind) {
  // Empty at present. Entries are {"aten::op", "reason"}.
  static const auto* grad = new std::map<std::string, std::string>{};
  static const auto* gradgrad = new std::map<std::string, std::string>{};
  return kind == Check::Grad ? *grad : *gradgrad;
}

// The ops gradgradchecked: their formulas are made of differentiable ops.
const std::vector<std::string>& gradgrad_ops() {
  static const auto* v = new std::vector<std::string>{
      "aten::add.Tensor",
      "aten::sub.Tensor",
      "aten::mul.Tensor",
      "aten::div.Tensor",
      "aten::neg",
      "aten::exp",
      "aten::log",
      "aten::tanh",
      "aten::sigmoid",
      "aten::sin",
      "aten::cos",
      "aten::sqrt",
      "aten::pow.Tensor_Scalar",
      "aten::pow.Tensor_Tensor",
      "aten::sum",
      "aten::sum.dim_IntList",
      "aten::mean",
      "aten::mean.dim",
      "aten::mm",
      "aten::matmul",
      "aten::softmax.int",
      "aten::log_softmax.int",
      "aten::mse_loss",
      "aten::linear",
  };
  return *v;
}

void load_packs() {
  PluginLoader::instance().load("ops_core");
  PluginLoader::instance().load("ops_nn");
}

bool verbose() {
  static const bool v = std::getenv("LOOM_CONFORMANCE_VERBOSE") != nullptr;
  return v;
}

/// How an op gets its derivative.
enum class Derivative { None, Formula, Composite };

Derivative derivative_of(const OperatorHandle& op) {
  bool composite = false;
  for (const KernelInfo& k : Dispatcher::instance().kernels(op)) {
    if (k.key == DispatchKey::Autograd) return Derivative::Formula;
    if (k.key == DispatchKey::CompositeImplicitAutograd) composite = true;
  }
  return composite ? Derivative::Composite : Derivative::None;
}

/// Float64 values in [-2, 2) from a fixed seed (as samples.cpp's R).
Tensor R(std::vector<int64_t> sizes, uint64_t seed = 1) {
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Float64));
  std::mt19937_64 gen(seed * 7919 + static_cast<uint64_t>(t.numel()));
  std::uniform_real_distribution<double> dist(-2, 2);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_ptr<double>()[i] = dist(gen);
  return t;
}
Tensor P(std::vector<int64_t> sizes, uint64_t seed = 1) {  // positive values
  Tensor t = R(std::move(sizes), seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data_ptr<double>()[i] = 0.5 + std::fabs(t.data_ptr<double>()[i]) * 0.75;
  }
  return t;
}
Tensor I(std::vector<int64_t> sizes, int64_t hi, uint64_t seed = 3) {  // int64 in [0, hi)
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Int64));
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data_ptr<int64_t>()[i] = static_cast<int64_t>(gen() % static_cast<uint64_t>(hi));
  }
  return t;
}

Tensor index_tensor(std::vector<int64_t> values, std::vector<int64_t> sizes) {
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Int64));
  for (size_t i = 0; i < values.size(); ++i) t.data_ptr<int64_t>()[i] = values[i];
  return t;
}

/// Small samples for ops whose every harness sample is over the caps (Note [Gradcheck
/// sample size]), in the form of samples.cpp's table.
std::vector<Sample> gradcheck_samples(const OperatorHandle& op) {
  using IL = std::vector<int64_t>;
  using List = std::vector<Sample>;
  static const auto* t = new std::map<std::string, std::function<List()>>{
      {"aten::convolution",
       [] {
         return List{{"[1, 2, 4, 4] * [3, 2, 2, 2] pad [1, 0]",
                      {R({1, 2, 4, 4}), R({3, 2, 2, 2}, 2), R({3}, 3), IL{1, 1}, IL{1, 0}, IL{1, 1},
                       false, IL{0, 0}, int64_t{1}}},
                     {"[1, 2, 3, 3] *T [2, 3, 2, 2] s 2 pad 1",
                      {R({1, 2, 3, 3}), R({2, 3, 2, 2}, 2), R({3}, 3), IL{2, 2}, IL{1, 1}, IL{1, 1},
                       true, IL{0, 0}, int64_t{1}}},
                     {"[1, 4, 5, 5] * [4, 2, 2, 2] dilation 2 groups 2, no bias",
                      {R({1, 4, 5, 5}), R({4, 2, 2, 2}, 2), std::nullopt, IL{1, 1}, IL{0, 0},
                       IL{2, 2}, false, IL{0, 0}, int64_t{2}}},
                     {"[1, 2, 6] * [3, 2, 3] s 2 (1d)",
                      {R({1, 2, 6}), R({3, 2, 3}, 2), R({3}, 3), IL{2}, IL{1}, IL{1}, false, IL{0},
                       int64_t{1}}},
                     {"[1, 2, 3, 3] *T [2, 1, 2, 2] s 2 out_pad 1 groups 2",
                      {R({1, 2, 3, 3}), R({2, 1, 2, 2}, 2), R({2}, 3), IL{2, 2}, IL{0, 0}, IL{1, 1},
                       true, IL{1, 1}, int64_t{2}}}};
       }},
      {"aten::conv2d",
       [] {
         return List{{"[1, 4, 3, 3] * [4, 2, 2, 2] groups 2",
                      {R({1, 4, 3, 3}), R({4, 2, 2, 2}, 2), R({4}, 3), IL{1, 1}, IL{0, 0}, IL{1, 1},
                       int64_t{2}}}};
       }},
      {"aten::conv2d.padding",
       [] {
         return List{
             {"[1, 2, 3, 4] * [2, 2, 3, 3] same",
              {R({1, 2, 3, 4}), R({2, 2, 3, 3}, 2), R({2}, 3), IL{1, 1}, std::string("same")}}};
       }},
      {"aten::conv1d.padding",
       [] {
         return List{
             {"[1, 2, 6] * [3, 2, 3] same",
              {R({1, 2, 6}), R({3, 2, 3}, 2), R({3}, 3), IL{1}, std::string("same")}},
             {"[1, 2, 6] * [3, 2, 3] valid dilation 2",
              {R({1, 2, 6}), R({3, 2, 3}, 2), R({3}, 3), IL{1}, std::string("valid"), IL{2}}}};
       }},
      {"aten::conv1d",
       [] {
         return List{{"[1, 2, 6] * [3, 2, 3]", {R({1, 2, 6}), R({3, 2, 3}, 2), R({3}, 3)}}};
       }},
      {"aten::conv_transpose1d",
       [] {
         return List{{"[1, 4, 5] *T [4, 3, 3]", {R({1, 4, 5}), R({4, 3, 3}, 2)}}};
       }},
      {"aten::conv_transpose2d.input",
       [] {
         return List{{"[1, 2, 3, 3] *T [2, 3, 2, 2] s 2 pad 1",
                      {R({1, 2, 3, 3}), R({2, 3, 2, 2}, 2), R({3}, 3), IL{2, 2}, IL{1, 1}, IL{0, 0},
                       int64_t{1}, IL{1, 1}}}};
       }},
      {"aten::max_pool2d_with_indices",
       [] {
         return List{{"[1, 2, 5, 4] k 3 s 2 p 1 ceil",
                      {R({1, 2, 5, 4}), IL{3, 3}, IL{2, 2}, IL{1, 1}, IL{1, 1}, true}}};
       }},
      {"aten::max_pool2d",
       [] {
         return List{{"[1, 2, 5, 4] k 3 s 2", {R({1, 2, 5, 4}), IL{3, 3}, IL{2, 2}}},
                     {"[1, 1, 6, 5] k 2 s 1 p 1 dilation 2",
                      {R({1, 1, 6, 5}), IL{2, 2}, IL{1, 1}, IL{1, 1}, IL{2, 2}}}};
       }},
      {"aten::avg_pool2d",
       [] {
         return List{{"[1, 2, 5, 4] k 3 s 2 p 1", {R({1, 2, 5, 4}), IL{3, 3}, IL{2, 2}, IL{1, 1}}},
                     {"[1, 2, 5, 4] k 3 s 2 p 1 ceil, without pad",
                      {R({1, 2, 5, 4}), IL{3, 3}, IL{2, 2}, IL{1, 1}, true, false}},
                     {"[1, 2, 5, 4] k 2 s 2 divisor 3",
                      {R({1, 2, 5, 4}), IL{2, 2}, IL{2, 2}, IL{0, 0}, false, true, int64_t{3}}}};
       }},
      {"aten::embedding",
       [] {
         return List{
             {"[10, 3] by [2, 4]", {R({10, 3}), I({2, 4}, 10)}},
             // padding_idx and scale_grad_by_freq change the gradient on purpose (the padding
             // row gets none, a repeated row is scaled by 1 / count): here the padding row is not
             // looked up and no row repeats, so backward must still be the Jacobian.
             {"[6, 3] by [2, 2] padding_idx 2, scale_grad_by_freq",
              {R({6, 3}), index_tensor({4, 0, 1, 5}, {2, 2}), int64_t{2}, true}}};
       }},
      {"aten::group_norm",
       [] {
         return List{{"[2, 4, 3] in 2 groups", {R({2, 4, 3}), int64_t{2}, R({4}, 2), R({4}, 3)}},
                     {"[2, 4, 3] in 4 groups, no affine", {R({2, 4, 3}), int64_t{4}}}};
       }},
      {"aten::adaptive_avg_pool2d",
       [] {
         return List{{"[1, 2, 5, 4] -> [3, 2]", {R({1, 2, 5, 4}), IL{3, 2}}}};
       }},
      {"aten::_adaptive_avg_pool2d",
       [] {
         return List{{"[1, 2, 5, 4] -> [3, 2]", {R({1, 2, 5, 4}), IL{3, 2}}}};
       }},
      {"aten::adaptive_max_pool2d",
       [] {
         return List{{"[1, 2, 5, 4] -> [3, 2]", {R({1, 2, 5, 4}), IL{3, 2}}}};
       }},
      {"aten::upsample_nearest2d",
       [] {
         return List{{"[1, 1, 3, 4] to [5, 7]", {R({1, 1, 3, 4}), IL{5, 7}}}};
       }},
      {"aten::upsample_bilinear2d",
       [] {
         return List{{"[1, 1, 3, 4] to [5, 7]", {R({1, 1, 3, 4}), IL{5, 7}, false}},
                     {"[1, 1, 3, 4] to [5, 7] align_corners", {R({1, 1, 3, 4}), IL{5, 7}, true}}};
       }},
      {"aten::upsample_nearest2d_backward",
       [] {
         return List{{"[1, 1, 5, 7] to [1, 1, 3, 4]", {R({1, 1, 5, 7}), IL{5, 7}, IL{1, 1, 3, 4}}}};
       }},
      {"aten::upsample_bilinear2d_backward",
       [] {
         return List{
             {"[1, 1, 5, 7] to [1, 1, 3, 4]", {R({1, 1, 5, 7}), IL{5, 7}, IL{1, 1, 3, 4}, false}}};
       }},
      {"aten::reflection_pad2d",
       [] {
         return List{{"[1, 1, 4, 5] pad [1, 2, 2, 1]", {R({1, 1, 4, 5}), IL{1, 2, 2, 1}}}};
       }},
      {"aten::replication_pad2d",
       [] {
         return List{{"[1, 1, 4, 5] pad [1, 2, 2, 1]", {R({1, 1, 4, 5}), IL{1, 2, 2, 1}}}};
       }},
      {"aten::reflection_pad2d_backward",
       [] {
         return List{{"[1, 1, 5, 7] to [1, 1, 4, 5]",
                      {R({1, 1, 5, 7}), R({1, 1, 4, 5}, 2), IL{1, 1, 1, 0}}}};
       }},
      {"aten::replication_pad2d_backward",
       [] {
         return List{{"[1, 1, 5, 7] to [1, 1, 4, 5]",
                      {R({1, 1, 5, 7}), R({1, 1, 4, 5}, 2), IL{1, 1, 1, 0}}}};
       }},
      {"aten::native_batch_norm",
       [] {
         return List{
             {"[3, 2, 4] training",
              {R({3, 2, 4}), R({2}, 2), R({2}, 3), R({2}, 4), P({2}, 5), true, 0.1, 1e-5}},
             {"[3, 2, 4] training, no stats",
              {R({3, 2, 4}), R({2}, 2), R({2}, 3), std::nullopt, std::nullopt, true, 0.1, 1e-5}},
             {"[3, 2, 2, 2] eval",
              {R({3, 2, 2, 2}), R({2}, 2), R({2}, 3), R({2}, 4), P({2}, 5), false, 0.1, 1e-5}}};
       }},
      {"aten::batch_norm",
       [] {
         return List{
             {"[3, 2, 4] training",
              {R({3, 2, 4}), R({2}, 2), R({2}, 3), R({2}, 4), P({2}, 5), true, 0.1, 1e-5, false}},
             {"[3, 2, 4] eval",
              {R({3, 2, 4}), R({2}, 2), R({2}, 3), R({2}, 4), P({2}, 5), false, 0.1, 1e-5, false}}};
       }},
      {"aten::native_batch_norm_backward",
       [] {
         return List{{"[2, 3, 2] training",
                      {R({2, 3, 2}), R({2, 3, 2}, 2), R({3}, 3), std::nullopt, std::nullopt,
                       R({3}, 4), P({3}, 5), true, 1e-5, std::vector<bool>{true, true, true}}}};
       }},
      {"aten::native_layer_norm_backward",
       [] {
         return List{{"[2, 2, 3] over [3]",
                      {R({2, 2, 3}), R({2, 2, 3}, 2), IL{3}, R({2, 2, 1}, 3), P({2, 2, 1}, 4),
                       R({3}, 5), R({3}, 6), std::vector<bool>{true, true, true}}}};
       }},
      {"aten::max_pool2d_with_indices_backward",
       [] {
         const Tensor x = R({1, 1, 5, 4}, 2);
         Stack st{x, IL{3, 3}, IL{2, 2}};
         Dispatcher::instance().find_op_or_throw("aten::max_pool2d_with_indices").call_boxed(st);
         return List{{"[1, 1, 2, 1] into [1, 1, 5, 4]",
                      {R({1, 1, 2, 1}), x, IL{3, 3}, IL{2, 2}, IL{0, 0}, IL{1, 1}, false,
                       st.at(1).to_tensor()}}};
       }},
      {"aten::avg_pool2d_backward",
       [] {
         return List{{"[1, 1, 2, 1] into [1, 1, 5, 4]",
                      {R({1, 1, 2, 1}), R({1, 1, 5, 4}, 2), IL{3, 3}, IL{2, 2}, IL{0, 0}, false,
                       true, std::nullopt}}};
       }},
      {"aten::take",
       [] {
         return List{{"[3, 4] at [2, 3]", {R({3, 4}), I({2, 3}, 12)}}};
       }},
      {"aten::index_fill.int_Scalar",
       [] {
         return List{{"[5, 4] dim 0 at [3] = 0.5", {R({5, 4}), int64_t{0}, I({3}, 5), 0.5}}};
       }},
      {"aten::index_fill.int_Tensor",
       [] {
         return List{{"[5, 4] dim 1 at [2] = []", {R({5, 4}), int64_t{1}, I({2}, 4), R({}, 2)}}};
       }},
      {"aten::embedding_backward",
       [] {
         return List{{"[2, 4, 3] into 10 rows",
                      {R({2, 4, 3}), I({2, 4}, 10), int64_t{10}, int64_t{-1}, false, false}}};
       }},
      // Not in the value harness's table: their results depend on the layout (as_strided
      // reads storage) or on a dtype argument, which its dtype sweep cannot follow.
      {"aten::as_strided",
       [] {
         return List{{"[3, 4] as [2, 2] strides [1, 2] from 1",
                      {R({3, 4}), IL{2, 2}, IL{1, 2}, int64_t{1}}},
                     {"[3, 4] as [3, 3] strides [2, 1] (overlapping rows)",
                      {R({3, 4}), IL{3, 3}, IL{2, 1}}}};
       }},
      {"aten::to.dtype",
       [] {
         return List{{"[3, 4] to float64", {R({3, 4}), DType::Float64}}};
       }},
      {"aten::norm.ScalarOpt_dtype",
       [] {
         return List{{"[3, 4] p 3 float64", {R({3, 4}), 3.0, DType::Float64}},
                     {"[3, 4] p None float64", {R({3, 4}), std::nullopt, DType::Float64}}};
       }},
      {"aten::norm.ScalarOpt_dim_dtype",
       [] {
         return List{{"[3, 4] p 3 dim 1 float64", {R({3, 4}), 3.0, IL{1}, false, DType::Float64}}};
       }},
      {"aten::_softmax_backward_data",
       [] {
         Stack st{R({3, 4}, 2), int64_t{1}, false};
         Dispatcher::instance().find_op_or_throw("aten::_softmax").call_boxed(st);
         return List{
             {"[3, 4] dim 1", {R({3, 4}), st.at(0).to_tensor(), int64_t{1}, DType::Float64}}};
       }},
      {"aten::_log_softmax_backward_data",
       [] {
         Stack st{R({3, 4}, 2), int64_t{1}, false};
         Dispatcher::instance().find_op_or_throw("aten::_log_softmax").call_boxed(st);
         return List{
             {"[3, 4] dim 1", {R({3, 4}), st.at(0).to_tensor(), int64_t{1}, DType::Float64}}};
       }},
      {"aten::kl_div",
       [] {
         return List{{"[3, 4] x [3, 4] positive target", {R({3, 4}), P({3, 4}, 2)}},
                     {"[3, 4] x [3, 4] log_target", {R({3, 4}), R({3, 4}, 2), int64_t{1}, true}}};
       }},
      // scatter: no index repeats within a row (which write wins is unspecified).
      {"aten::scatter.src",
       [] {
         return List{
             {"[3, 4] dim 1 by [3, 2] from [3, 2]",
              {R({3, 4}), int64_t{1}, index_tensor({0, 2, 3, 1, 1, 0}, {3, 2}), R({3, 2}, 2)}}};
       }},
      {"aten::scatter.value",
       [] {
         return List{{"[3, 4] dim 1 by [3, 2] = 0.5",
                      {R({3, 4}), int64_t{1}, index_tensor({0, 2, 3, 1, 1, 0}, {3, 2}), 0.5}}};
       }},
      {"aten::scatter_add",
       [] {
         return List{{"[3, 4] dim 0 by [5, 4] from [5, 4]",
                      {R({3, 4}), int64_t{0}, I({5, 4}, 3), R({5, 4}, 2)}},
                     {"[3, 4] dim 1 by [3, 2] from [3, 3]",
                      {R({3, 4}), int64_t{1}, I({3, 2}, 4), R({3, 3}, 2)}}};
       }},
      {"aten::scatter_reduce.two",
       [] {
         const Tensor idx = I({3, 3}, 4);
         auto smp = [&idx](const char* reduce, bool include_self) {
           return Sample{
               str_cat("[3, 4] dim 1 ", reduce, include_self ? "" : ", without self"),
               {R({3, 4}), int64_t{1}, idx, R({3, 3}, 2), std::string(reduce), include_self}};
         };
         return List{smp("sum", true),   smp("mean", true), smp("mean", false), smp("prod", true),
                     smp("prod", false), smp("amax", true), smp("amin", false)};
       }},
      {"aten::nll_loss",
       [] {
         return List{{"[4, 5] by [4]", {R({4, 5}), I({4}, 5)}},
                     {"[4, 5] by [4], weight [5], ignore 2",
                      {R({4, 5}), I({4}, 5), P({5}, 2), int64_t{1}, int64_t{2}}},
                     {"[5] by []", {R({5}), I({}, 5)}}};
       }},
      {"aten::cross_entropy_loss",
       [] {
         return List{{"[4, 5] by [4]", {R({4, 5}), I({4}, 5)}},
                     {"[4, 5] by [4], weight [5], smoothing 0.1",
                      {R({4, 5}), I({4}, 5), P({5}, 2), int64_t{1}, int64_t{-100}, 0.1}},
                     {"[4, 5] by [4], ignore 2, smoothing 0.2",
                      {R({4, 5}), I({4}, 5), std::nullopt, int64_t{1}, int64_t{2}, 0.2}},
                     {"[2, 5, 3] by [2, 3]", {R({2, 5, 3}), I({2, 3}, 5)}},
                     {"[4, 5] by probabilities [4, 5]", {R({4, 5}), P({4, 5}, 2)}}};
       }},
      {"aten::binary_cross_entropy",
       [] {
         return List{{"[3, 4] x [3, 4], weight [3, 4]", {R({3, 4}), R({3, 4}, 2), P({3, 4}, 3)}},
                     {"[3, 4] x [3, 4]", {R({3, 4}), R({3, 4}, 2)}}};
       }},
      {"aten::binary_cross_entropy_with_logits",
       [] {
         return List{{"[3, 4] x [3, 4]", {R({3, 4}), R({3, 4}, 2)}},
                     {"[3, 4] x [3, 4], weight [4], pos_weight [4]",
                      {R({3, 4}), P({3, 4}, 2), P({4}, 3), P({4}, 4)}}};
       }},
      // Backward ops (their derivative is the forward op's double backward).
      {"aten::native_dropout_backward",
       [] {
         Tensor mask = Tensor::empty({3, 4}, TensorOptions{}.with(DType::Bool));
         for (int64_t i = 0; i < 12; ++i) mask.data_ptr<bool>()[i] = i % 3 != 0;
         return List{{"[3, 4] masked, scale 1.5", {R({3, 4}), mask, 1.5}}};
       }},
      {"aten::addbmm",
       [] {
         return List{
             {"[3, 2] + [2, 3, 4] x [2, 4, 2]", {R({3, 2}), R({2, 3, 4}, 2), R({2, 4, 2}, 3)}}};
       }},
      {"aten::baddbmm",
       [] {
         return List{{"[2, 3, 2] + [2, 3, 4] x [2, 4, 2]",
                      {R({2, 3, 2}), R({2, 3, 4}, 2), R({2, 4, 2}, 3)}}};
       }},
  };
  if (auto it = t->find(op.name()); it != t->end()) return it->second();
  return {};
}

Tensor values(std::vector<double> v, std::vector<int64_t> sizes) {
  Tensor t = Tensor::empty(sizes, TensorOptions{}.with(DType::Float64));
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<double>()[i] = v[i];
  return t;
}

/// Samples run besides the harness's, for arguments its samples leave at one value: several
/// dims, corrections, norms' orders, optional bounds, activation parameters, zeros for prod.
std::vector<Sample> extra_samples(const OperatorHandle& op) {
  using IL = std::vector<int64_t>;
  using List = std::vector<Sample>;
  const double inf = std::numeric_limits<double>::infinity();
  // [3, 4] with one zero in row 0 and two in row 1 (prod's special cases).
  auto zeros = [] {
    return values({0.5, 0, 1.5, -1.25, 0, 2, 0, 0.75, -0.5, 1.25, 1.75, -2}, {3, 4});
  };
  static const auto* t = new std::map<std::string, std::function<List()>>{
      {"aten::sum.dim_IntList",
       [] {
         return List{{"[2, 3, 5] dims [0, 2]", {R({2, 3, 5}), IL{0, 2}}},
                     {"[2, 3, 5] dims [] (all)", {R({2, 3, 5}), IL{}}},
                     {"[2, 3, 5] dims None", {R({2, 3, 5}), std::nullopt}}};
       }},
      {"aten::mean.dim",
       [] {
         return List{{"[2, 3, 5] dims [0, -1]", {R({2, 3, 5}), IL{0, -1}}},
                     {"[2, 3, 5] dims None", {R({2, 3, 5}), std::nullopt}}};
       }},
      {"aten::amax",
       [] {
         return List{{"[2, 3, 5] dims [0, 2]", {R({2, 3, 5}), IL{0, 2}}},
                     {"[3, 4] all", {R({3, 4})}}};
       }},
      {"aten::amin",
       [] {
         return List{{"[2, 3, 5] dims [0, 2]", {R({2, 3, 5}), IL{0, 2}}},
                     {"[3, 4] all", {R({3, 4})}}};
       }},
      {"aten::logsumexp",
       [] {
         return List{{"[2, 3, 5] dims [0, 2]", {R({2, 3, 5}), IL{0, 2}}}};
       }},
      {"aten::var.correction",
       [] {
         return List{{"[3, 4] dim 1 correction 0", {R({3, 4}), IL{1}, 0.0}},
                     {"[2, 3, 5] dims [0, 2] correction 2", {R({2, 3, 5}), IL{0, 2}, 2.0}},
                     {"[3, 4] all", {R({3, 4}), std::nullopt, std::nullopt}}};
       }},
      {"aten::std.correction",
       [] {
         return List{{"[3, 4] dim 1 correction 0", {R({3, 4}), IL{1}, 0.0}},
                     {"[2, 3, 5] dims [0, 2] correction 2", {R({2, 3, 5}), IL{0, 2}, 2.0}},
                     {"[3, 4] all", {R({3, 4}), std::nullopt, std::nullopt}}};
       }},
      {"aten::var_mean.correction",
       [] {
         return List{{"[2, 3, 5] dims [0, 2] correction 0", {R({2, 3, 5}), IL{0, 2}, 0.0}}};
       }},
      {"aten::std_mean.correction",
       [] {
         return List{{"[2, 3, 5] dims [0, 2] correction 0", {R({2, 3, 5}), IL{0, 2}, 0.0}}};
       }},
      {"aten::norm.Scalar",
       [inf] {
         return List{{"[3, 4] p 1", {R({3, 4}), 1.0}},
                     {"[3, 4] p 3", {R({3, 4}), 3.0}},
                     {"[3, 4] p inf", {R({3, 4}), inf}},
                     {"[3, 4] p 0", {R({3, 4}), 0.0}}};
       }},
      {"aten::linalg_vector_norm",
       [inf] {
         return List{{"[3, 4] ord 1 dim 1", {R({3, 4}), 1.0, IL{1}}},
                     {"[2, 3, 5] ord 3 dims [0, 2]", {R({2, 3, 5}), 3.0, IL{0, 2}}},
                     {"[3, 4] ord inf", {R({3, 4}), inf}},
                     {"[3, 4] ord -inf dim 0", {R({3, 4}), -inf, IL{0}}},
                     {"[3, 4] ord 0.5", {R({3, 4}), 0.5}}};
       }},
      {"aten::prod",
       [zeros] {
         return List{{"[3, 4] with zeros", {zeros()}}};
       }},
      {"aten::prod.dim_int",
       [zeros] {
         return List{{"[3, 4] with zeros dim 1", {zeros(), int64_t{1}}},
                     {"[3, 4] with zeros dim 0", {zeros(), int64_t{0}}}};
       }},
      {"aten::cumprod",
       [zeros] {
         return List{{"[3, 4] with zeros dim 1", {zeros(), int64_t{1}}},
                     {"[3, 4] with zeros dim 0", {zeros(), int64_t{0}}}};
       }},
      {"aten::cumsum",
       [] {
         return List{{"[2, 3, 5] dim 0", {R({2, 3, 5}), int64_t{0}}}};
       }},
      {"aten::clamp",
       [] {
         return List{{"[3, 4] min -0.5", {R({3, 4}), -0.5, std::nullopt}},
                     {"[3, 4] max 0.5", {R({3, 4}), std::nullopt, 0.5}}};
       }},
      {"aten::clamp.Tensor",
       [] {
         return List{{"[3, 4] min [4]", {R({3, 4}), R({4}, 2), std::nullopt}},
                     {"[3, 4] max [3, 1]", {R({3, 4}), std::nullopt, R({3, 1}, 3)}}};
       }},
      {"aten::pow.Tensor_Scalar",
       [] {
         return List{{"[3, 4] ** 3", {R({3, 4}), int64_t{3}}},
                     {"[3, 4] ** -2", {P({3, 4}), -2.0}},
                     {"[3, 4] ** 0", {R({3, 4}), 0.0}},
                     {"[3, 4] ** 1", {R({3, 4}), 1.0}}};
       }},
      {"aten::gelu",
       [] {
         return List{{"[3, 4] tanh", {R({3, 4}), std::string("tanh")}}};
       }},
      {"aten::softplus",
       [] {
         return List{{"[3, 4] beta 2 threshold 1", {R({3, 4}), 2.0, 1.0}}};
       }},
      {"aten::elu",
       [] {
         return List{{"[3, 4] alpha 0.5 scale 1.5 input_scale 2", {R({3, 4}), 0.5, 1.5, 2.0}}};
       }},
      {"aten::leaky_relu",
       [] {
         return List{{"[3, 4] slope 0.2", {R({3, 4}), 0.2}}};
       }},
      // Shapes, indexing, linear algebra.
      {"aten::cat",
       [] {
         return List{{"[2, 3] ++ [2, 1] ++ [2, 2] dim 1",
                      {std::vector<Tensor>{R({2, 3}), R({2, 1}, 2), R({2, 2}, 3)}, int64_t{1}}},
                     {"[2, 3] ++ [0, 3]", {std::vector<Tensor>{R({2, 3}), R({0, 3}, 2)}}}};
       }},
      {"aten::stack",
       [] {
         return List{
             {"[2, 3] x 3 dim 1",
              {std::vector<Tensor>{R({2, 3}), R({2, 3}, 2), R({2, 3}, 3)}, int64_t{1}}},
             {"[2, 3] x 2 dim -1", {std::vector<Tensor>{R({2, 3}), R({2, 3}, 2)}, int64_t{-1}}}};
       }},
      {"aten::squeeze",
       [] {
         return List{{"[3, 1, 4, 1]", {R({3, 1, 4, 1})}}};
       }},
      {"aten::squeeze.dim",
       [] {
         return List{{"[3, 1, 4] dim 1", {R({3, 1, 4}), int64_t{1}}},
                     {"[3, 1, 4] dim 0 (not 1)", {R({3, 1, 4}), int64_t{0}}}};
       }},
      {"aten::squeeze.dims",
       [] {
         return List{{"[3, 1, 4, 1] dims [1, -1]", {R({3, 1, 4, 1}), IL{1, -1}}}};
       }},
      {"aten::narrow",
       [] {
         return List{
             {"[5, 4] dim 1 from 1 length 2", {R({5, 4}), int64_t{1}, int64_t{1}, int64_t{2}}}};
       }},
      {"aten::select.int",
       [] {
         return List{{"[5, 4] dim 0 index -1", {R({5, 4}), int64_t{0}, int64_t{-1}}}};
       }},
      {"aten::slice.Tensor",
       [] {
         return List{
             {"[5, 4] dim 0 1:5:2", {R({5, 4}), int64_t{0}, int64_t{1}, int64_t{5}, int64_t{2}}},
             {"[5, 4] dim 1 -3:", {R({5, 4}), int64_t{1}, int64_t{-3}}}};
       }},
      {"aten::tril",
       [] {
         return List{{"[3, 4] diagonal 1", {R({3, 4}), int64_t{1}}},
                     {"[2, 3, 4] diagonal -1", {R({2, 3, 4}), int64_t{-1}}}};
       }},
      {"aten::triu",
       [] {
         return List{{"[3, 4] diagonal 1", {R({3, 4}), int64_t{1}}},
                     {"[2, 3, 4] diagonal -1", {R({2, 3, 4}), int64_t{-1}}}};
       }},
      {"aten::movedim.int",
       [] {
         return List{{"[2, 3, 4] 0 -> 2", {R({2, 3, 4}), int64_t{0}, int64_t{2}}}};
       }},
      {"aten::gather",
       [] {
         return List{{"[3, 4] dim 0 by [5, 4]", {R({3, 4}), int64_t{0}, I({5, 4}, 3)}}};
       }},
      {"aten::index.Tensor",
       [] {
         using Idx = std::vector<std::optional<Tensor>>;
         return List{
             {"[3, 4][[5], [5]] (repeats)", {R({3, 4}), Idx{I({5}, 3), I({5}, 4, 7)}}},
             {"[2, 3, 4][:, [2, 1], None]", {R({2, 3, 4}), Idx{std::nullopt, I({2, 1}, 3)}}},
             {"[3, 4][[2, 1], [3]] (broadcast)", {R({3, 4}), Idx{I({2, 1}, 3), I({3}, 4, 9)}}}};
       }},
      {"aten::index_put",
       [] {
         using Idx = std::vector<std::optional<Tensor>>;
         return List{{"[3, 4][[2], [2]] = [2] (no repeats)",
                      {R({3, 4}), Idx{index_tensor({0, 2}, {2}), index_tensor({1, 3}, {2})},
                       R({2}, 2), false}},
                     {"[3, 4][[2]] = [4] broadcast",
                      {R({3, 4}), Idx{index_tensor({2, 0}, {2})}, R({4}, 2), false}}};
       }},
      {"aten::index_add",
       [] {
         return List{{"[5, 4] dim 1 by [3] alpha 0.5",
                      {R({5, 4}), int64_t{1}, I({3}, 4), R({5, 3}, 2), 0.5}}};
       }},
      {"aten::sort",
       [] {
         return List{{"[3, 5] dim 0 descending", {R({3, 5}), int64_t{0}, true}}};
       }},
      {"aten::softmax.int",
       [] {
         return List{{"[3, 4] dim 0", {R({3, 4}), int64_t{0}}}};
       }},
      {"aten::log_softmax.int",
       [] {
         return List{{"[3, 4] dim 0", {R({3, 4}), int64_t{0}}}};
       }},
      {"aten::addmm",
       [] {
         return List{{"[3, 4] + [3, 5] x [5, 4] beta 0.5 alpha 2",
                      {R({3, 4}), R({3, 5}, 2), R({5, 4}, 3), 0.5, 2.0}}};
       }},
      {"aten::addcmul",
       [] {
         return List{{"[3, 4] value 0.5", {R({3, 4}), R({3, 4}, 2), R({4}, 3), 0.5}}};
       }},
      {"aten::addcdiv",
       [] {
         return List{{"[3, 4] value 0.5", {R({3, 4}), R({3, 4}, 2), P({4}, 3), 0.5}}};
       }},
      {"aten::lerp.Scalar",
       [] {
         return List{{"[3, 4] to [4] by 0.3", {R({3, 4}), R({4}, 2), 0.3}}};
       }},
      {"aten::linear",
       [] {
         return List{{"[3, 5] x [4, 5], no bias", {R({3, 5}), R({4, 5}, 2)}},
                     {"[5] x [4, 5] + [4]", {R({5}), R({4, 5}, 2), R({4}, 3)}}};
       }},
      {"aten::matmul",
       [] {
         return List{{"[2, 3, 4] x [2, 4, 2]", {R({2, 3, 4}), R({2, 4, 2}, 2)}},
                     {"[5] x [5]", {R({5}), R({5}, 2)}},
                     {"[2, 3, 5] x [5]", {R({2, 3, 5}), R({5}, 2)}},
                     {"[5] x [2, 5, 3]", {R({5}), R({2, 5, 3}, 2)}}};
       }},
      {"aten::einsum",
       [] {
         auto e = [](const char* eq, std::vector<Tensor> ts) {
           return Sample{eq, {std::string(eq), std::move(ts)}};
         };
         return List{e("bij,bjk->bik", {R({2, 3, 4}), R({2, 4, 2}, 2)}), e("ii->i", {R({4, 4})}),
                     e("ij->", {R({3, 4})}), e("i,j->ij", {R({3}), R({4}, 2)}),
                     e("ij,ij->i", {R({3, 4}), R({3, 4}, 2)})};
       }},
      {"aten::hardtanh",
       [] {
         return List{{"[3, 4] in [-0.5, 1.5]", {R({3, 4}), -0.5, 1.5}}};
       }},
  };
  if (auto it = t->find(op.name()); it != t->end()) return it->second();
  return {};
}

/// The samples gradcheck runs: gradcheck_samples(), else the harness's; then extra_samples().
Samples samples_of(const OperatorHandle& op) {
  std::vector<Sample> own = gradcheck_samples(op);
  Samples out = own.empty() ? samples_for(op) : Samples{std::move(own), ""};
  for (Sample& s : extra_samples(op)) out.samples.push_back(std::move(s));
  return out;
}

/// One gradcheck call: the op's arguments with the floating tensors that require grad taken
/// out as the checked inputs.
struct Call {
  Stack args;                                 ///< the arguments (floating tensors as placed)
  std::vector<std::pair<size_t, int>> slots;  ///< (argument, list element or -1) per input
  variable_list inputs;                       ///< float64 leaves that require grad
};

/// Note [Sample domains]: a sample whose results are not all finite (log, acos or kl_div of
/// the harness's values in [-2, 2)) is outside the op's domain, where finite differences say
/// nothing; some ops refuse such values (binary_cross_entropy wants [0, 1]). Such a sample
/// is retried with its floating values mapped into (0.1, 0.9), then (1.1, 1.9) (acosh), and
/// skipped if no domain gives finite results.
enum class Domain { AsGiven, Unit, AboveOne };

double in_domain(double v, Domain d) {
  if (d == Domain::AsGiven) return v;
  const double u = std::clamp((v + 2) / 4, 0.0, 1.0);  // [-2, 2) -> [0, 1)
  return (d == Domain::Unit ? 0.1 : 1.1) + 0.8 * u;
}

const char* domain_label(Domain d) {
  return d == Domain::AsGiven ? ""
         : d == Domain::Unit  ? " (values in (0.1, 0.9))"
                              : " (values in (1.1, 1.9))";
}

/// t as a float64 leaf (values in the domain, made smooth: Note [Smooth samples]) in the
/// layout.
Tensor leaf(const Tensor& t, Layout layout, Domain domain, bool smoothed) {
  std::vector<double> v = testing::to_doubles(t);
  for (double& x : v) x = in_domain(x, domain);
  if (smoothed) {
    for (double& x : v) x = smooth(x);
  }
  const bool strided = layout == Layout::NonContiguous && t.dim() >= 1;
  Tensor out = testing::make_tensor(v, t.sizes(), DType::Float64, strided);
  out.set_requires_grad(true);
  return out;
}

/// Floating tensor arguments that are not differentiated, as in PyTorch's derivatives.yaml:
/// batch norm's running statistics are buffers (updated in place in training mode), the nll
/// losses' total_weight is a count of the targets' weights, and the saved statistics that
/// the norms' backward ops take are not_implemented there.
bool differentiable_argument(const std::string& op, const std::string& arg) {
  static const auto* per_op = new std::map<std::string, std::set<std::string>>{
      {"aten::native_batch_norm_backward", {"save_mean", "save_invstd"}},
      {"aten::native_layer_norm_backward", {"mean", "rstd"}},
      {"aten::native_group_norm_backward", {"mean", "rstd"}},
  };
  if (arg == "running_mean" || arg == "running_var" || arg == "total_weight") return false;
  // The losses' class / element weights (derivatives.yaml lists self and target only).
  if ((arg == "weight" || arg == "pos_weight") &&
      (op.starts_with("aten::nll_loss") || op.starts_with("aten::cross_entropy") ||
       op.starts_with("aten::binary_cross_entropy"))) {
    return false;
  }
  const auto it = per_op->find(op);
  return it == per_op->end() || !it->second.contains(arg);
}

/// Ops that are smooth everywhere and whose samples hold exact values on purpose (zeros for
/// prod), which Note [Smooth samples] would move.
bool keeps_exact_values(const std::string& op) {
  return op == "aten::prod" || op == "aten::prod.dim_int" || op == "aten::cumprod";
}

Call make_call(const OperatorHandle& op, const Sample& s, Layout layout,
               Domain domain = Domain::AsGiven) {
  const bool smoothed = !keeps_exact_values(op.name());
  Call c;
  const auto& schema_args = op.schema().arguments();
  for (size_t i = 0; i < s.args.size(); ++i) {
    const IValue& v = s.args[i];
    const bool differentiable =
        i >= schema_args.size() || differentiable_argument(op.name(), schema_args[i].name);
    if (!differentiable) {
      c.args.push_back(v);
    } else if (v.is_tensor() && v.to_tensor().defined() &&
               v.to_tensor().dtype() == DType::Float64) {
      c.inputs.push_back(leaf(v.to_tensor(), layout, domain, smoothed));
      c.slots.emplace_back(i, -1);
      c.args.emplace_back(c.inputs.back());
    } else if (v.tag() == IValue::Tag::TensorList) {
      std::vector<Tensor> list = v.to_tensor_list();
      for (size_t j = 0; j < list.size(); ++j) {
        if (list[j].dtype() != DType::Float64) continue;
        list[j] = leaf(list[j], layout, domain, smoothed);
        c.inputs.push_back(list[j]);
        c.slots.emplace_back(i, static_cast<int>(j));
      }
      c.args.emplace_back(std::move(list));
    } else {
      c.args.push_back(v);
    }
  }
  return c;
}

/// The floating tensors of a result stack, in order (lists flattened).
variable_list floating_results(const Stack& st) {
  variable_list out;
  auto add = [&out](const Tensor& t) {
    if (t.defined() && is_floating_point(t.dtype())) out.push_back(t);
  };
  for (const IValue& v : st) {
    if (v.is_tensor()) add(v.to_tensor());
    if (v.tag() == IValue::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) add(t);
    }
  }
  return out;
}

/// The function gradcheck differentiates: the op called boxed on call's arguments with the
/// checked inputs put in their slots, returning its floating results (only those at keep
/// when keep is not empty: results that do not require grad, PyTorch's
/// output_differentiability, such as batch norm's saved statistics, are left out).
autograd::CheckedFunction function_of(const OperatorHandle& op, const Call& call,
                                      std::vector<size_t> keep = {}) {
  return [op, call, keep](const variable_list& inputs) -> variable_list {
    Stack st = call.args;
    for (size_t k = 0; k < call.slots.size(); ++k) {
      const auto [arg, elem] = call.slots[k];
      if (elem < 0) {
        st[arg] = inputs[k];
      } else {
        std::vector<Tensor> list = st[arg].to_tensor_list();
        list[static_cast<size_t>(elem)] = inputs[k];
        st[arg] = std::move(list);
      }
    }
    normalize_boxed_arguments(op, st);
    op.call_boxed(st);
    variable_list all = floating_results(st);
    if (keep.empty()) return all;
    variable_list kept;
    for (size_t i : keep) kept.push_back(all.at(i));
    return kept;
  };
}

bool all_finite(const variable_list& ts) {
  for (const Tensor& t : ts) {
    for (double v : testing::to_doubles(t)) {
      if (!std::isfinite(v)) return false;
    }
  }
  return true;
}

int64_t numel_of(const variable_list& ts) {
  int64_t n = 0;
  for (const Tensor& t : ts) n += t.numel();
  return n;
}

/// What one op's check came to.
struct Outcome {
  int checked = 0;              ///< (sample, layout) pairs that passed
  std::string failure;          ///< the first failure ("" for none)
  std::set<std::string> skips;  ///< why samples were not checked
};

/// A sample made ready for gradcheck, or why it cannot be checked.
struct Prepared {
  Call call;
  autograd::CheckedFunction fn;
  std::string label;
  std::string skip;  ///< non-empty: not checked, and why
};

Prepared prepare(const OperatorHandle& op, const Sample& s, Layout layout, Check kind) {
  const int64_t max_in = kind == Check::Grad ? kMaxInputElements : kMaxGradgradElements;
  const int64_t max_out = kind == Check::Grad ? kMaxOutputElements : kMaxGradgradElements;
  Prepared p;
  std::string refusal, nonfinite;
  for (Domain d : {Domain::AsGiven, Domain::Unit, Domain::AboveOne}) {
    p.call = make_call(op, s, layout, d);
    p.label = str_cat(s.label, domain_label(d));
    if (p.call.inputs.empty()) {
      p.skip = "no floating tensor input";
      return p;
    }
    if (numel_of(p.call.inputs) > max_in) {
      p.skip = str_cat(s.label, ": more than ", max_in, " input elements");
      return p;
    }
    p.fn = function_of(op, p.call);
    variable_list results;
    try {
      results = p.fn(p.call.inputs);
    } catch (const Error& e) {
      // Some ops refuse values outside their domain (binary_cross_entropy: in [0, 1]).
      if (refusal.empty())
        refusal = str_cat(s.label, ": the op refuses it in float64 (", e.what(), ")");
      continue;
    }
    if (results.empty()) {
      p.skip = "no floating result";
      return p;
    }
    if (std::none_of(results.begin(), results.end(),
                     [](const Tensor& t) { return t.requires_grad(); })) {
      p.skip = "not differentiable (no result requires grad)";
      return p;
    }
    std::vector<size_t> keep;
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].requires_grad()) keep.push_back(i);
    }
    if (keep.size() < results.size()) {
      p.fn = function_of(op, p.call, keep);
      variable_list kept;
      for (size_t i : keep) kept.push_back(results[i]);
      results = std::move(kept);
    }
    if (std::any_of(results.begin(), results.end(),
                    [](const Tensor& t) { return t.dtype() != DType::Float64; })) {
      // A float32 result rounds away most of a 1e-6 step.
      p.skip = str_cat(s.label, ": a result is not float64");
      return p;
    }
    if (numel_of(results) > max_out) {
      p.skip = str_cat(s.label, ": more than ", max_out, " result elements");
      return p;
    }
    if (all_finite(results)) {
      p.skip.clear();
      return p;
    }
    nonfinite = str_cat(s.label, ": results not finite in any domain (Note [Sample domains])");
  }
  p.skip = nonfinite.empty() ? refusal : nonfinite;
  return p;
}

Outcome check_op(const OperatorHandle& op, Check kind) {
  Outcome out;
  Samples all = samples_of(op);
  if (all.samples.empty()) {
    out.skips.insert(all.skip_reason);
    return out;
  }
  std::vector<Sample> samples = std::move(all.samples);
  samples = with_variants(op, std::move(samples));
  for (const Sample& s : samples) {
    const std::vector<Layout> layouts = kind == Check::Grad
                                            ? std::vector{Layout::Contiguous, Layout::NonContiguous}
                                            : std::vector{Layout::Contiguous};
    for (Layout layout : layouts) {
      const char* lname = layout == Layout::Contiguous ? "contiguous" : "non-contiguous";
      const Prepared p = prepare(op, s, layout, kind);
      if (!p.skip.empty()) {
        out.skips.insert(p.skip);
        break;
      }
      try {
        if (kind == Check::Grad) {
          autograd::gradcheck(p.fn, p.call.inputs);
        } else {
          autograd::gradgradcheck(p.fn, p.call.inputs);
        }
      } catch (const Error& e) {
        if (out.failure.empty()) out.failure = str_cat(p.label, ", ", lname, ": ", e.what());
        continue;
      }
      if (verbose()) {
        std::printf("  %s %s on %s, %s\n", kind == Check::Grad ? "gradchecked" : "gradgradchecked",
                    op.name().c_str(), p.label.c_str(), lname);
      }
      // An op passes on a sample with elements; zero-size ones only check the shapes.
      if (numel_of(p.call.inputs) > 0) ++out.checked;
    }
  }
  if (out.checked == 0 && out.skips.empty()) out.skips.insert("only zero-size samples apply");
  if (verbose() && out.checked > 0) {
    for (const std::string& why : out.skips)
      std::printf("  skipped %s: %s\n", op.name().c_str(), why.c_str());
  }
  return out;
}

/// Results of the run, printed at the end (OpGradcheckReport).
struct Tally {
  std::vector<std::string> passed, failed, known, skipped;
};
Tally& tally(Check kind) {
  static Tally grad, gradgrad;
  return kind == Check::Grad ? grad : gradgrad;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& x : s) out += (out.empty() ? "" : "; ") + x;
  return out;
}

void run_check(const std::string& name, Check kind) {
  const OperatorHandle op = *Dispatcher::instance().find_op(name);
  Tally& t = tally(kind);
  const Outcome o = check_op(op, kind);
  const auto& known = known_failures(kind);
  const auto k = known.find(name);
  if (!o.failure.empty()) {
    if (k != known.end()) {
      t.known.push_back(name);
      GTEST_SKIP() << name << ": known failure (" << k->second << "): " << o.failure;
    }
    t.failed.push_back(name);
    ADD_FAILURE() << name << ": " << o.failure;
    return;
  }
  if (k != known.end() && o.checked > 0) {
    std::printf("%s passes now: remove it from known_failures() (%s)\n", name.c_str(),
                k->second.c_str());
  }
  if (o.checked == 0) {
    t.skipped.push_back(name);
    GTEST_SKIP() << name << ": " << join(o.skips);
  }
  t.passed.push_back(name);
}

/// Every op with a derivative, functional forms only (in-place and out= forms record the
/// same formula and are checked through their functional op).
std::vector<std::string> differentiable_ops() {
  load_packs();
  std::vector<std::string> names;
  for (const OperatorHandle& op : Dispatcher::instance().ops()) {
    if (!op.has_schema() || op.schema().is_mutable()) continue;
    if (derivative_of(op) != Derivative::None) names.push_back(op.name());
  }
  return names;
}

std::vector<std::string> gradgrad_cases() {
  load_packs();
  std::vector<std::string> names;
  for (const std::string& n : gradgrad_ops()) {
    if (auto op = Dispatcher::instance().find_op(n); op && derivative_of(*op) != Derivative::None) {
      names.push_back(n);
    }
  }
  return names;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

class OpGradcheck : public ::testing::TestWithParam<std::string> {};
TEST_P(OpGradcheck, MatchesFiniteDifferences) { run_check(GetParam(), Check::Grad); }
INSTANTIATE_TEST_SUITE_P(Gradcheck, OpGradcheck, ::testing::ValuesIn(differentiable_ops()),
                         case_name);

class OpGradgradcheck : public ::testing::TestWithParam<std::string> {};
TEST_P(OpGradgradcheck, MatchesFiniteDifferences) { run_check(GetParam(), Check::GradGrad); }
INSTANTIATE_TEST_SUITE_P(Gradgradcheck, OpGradgradcheck, ::testing::ValuesIn(gradgrad_cases()),
                         case_name);

/// Ops with floating results and no derivative: only the Autograd fallback, whose backward
/// throws "the derivative for 'aten::x' is not implemented". Printed, never a failure.
TEST(OpDerivatives, Missing) {
  load_packs();
  std::vector<std::string> missing, unknown;
  for (const OperatorHandle& op : Dispatcher::instance().ops()) {
    if (!op.has_schema() || op.schema().is_mutable() || derivative_of(op) != Derivative::None) {
      continue;
    }
    bool returns_tensor = false;
    for (const Argument& r : op.schema().returns()) {
      returns_tensor |=
          r.type.kind == TypeKind::Tensor ||
          (r.type.kind == TypeKind::List && r.type.element().kind == TypeKind::Tensor);
    }
    if (!returns_tensor) continue;
    const Samples s = samples_of(op);
    if (s.samples.empty()) {
      // Factories and random ops have no derivative to miss.
      if (s.skip_reason.find("explicit sample") != std::string::npos) unknown.push_back(op.name());
      continue;
    }
    bool floating = false, ran = false;
    for (const Sample& smp : s.samples) {
      Stack st = make_call(op, smp, Layout::Contiguous).args;
      for (IValue& v : st) {  // plain inputs: only the dtype of the results matters here
        if (v.is_tensor() && v.to_tensor().defined()) v = v.to_tensor().detach();
      }
      try {
        normalize_boxed_arguments(op, st);
        op.call_boxed(st);
      } catch (const Error&) {
        continue;
      }
      ran = true;
      floating = !floating_results(st).empty();
      break;
    }
    if (floating) missing.push_back(op.name());
    if (!ran) unknown.push_back(op.name());
  }
  // Backward ops need a derivative only for double backward; list them apart.
  std::string m, b, u;
  size_t nb = 0;
  for (const std::string& n : missing) {
    const bool backward = n.find("_backward") != std::string::npos;
    (backward ? b : m) += " " + n;
    nb += backward;
  }
  for (const std::string& n : unknown) u += " " + n;
  std::printf("[gradcheck] %zu ops with floating results have no derivative:%s\n",
              missing.size() - nb, m.c_str());
  std::printf("[gradcheck] %zu backward ops have none (needed for double backward):%s\n", nb,
              b.c_str());
  std::printf(
      "[gradcheck] %zu more ops without a derivative have no sample that runs in float64 "
      "(integer-only ops, or a sample is missing):%s\n",
      unknown.size(), u.c_str());
}

/// gradgradcheck of every other op with a derivative, printed (never a failure): which
/// formulas are differentiable themselves, and which are not yet (a part without a formula).
TEST(OpDerivatives, GradgradSurvey) {
  const std::vector<std::string>& listed = gradgrad_ops();
  std::vector<std::string> pass;
  std::map<std::string, std::vector<std::string>> needs;  // missing derivative -> ops
  std::string mismatch;
  size_t skipped = 0;
  for (const std::string& name : differentiable_ops()) {
    if (std::find(listed.begin(), listed.end(), name) != listed.end()) continue;
    const Outcome o = check_op(*Dispatcher::instance().find_op(name), Check::GradGrad);
    const std::string marker = "the derivative for '";
    if (const size_t at = o.failure.find(marker); at != std::string::npos) {
      const size_t from = at + marker.size();
      needs[o.failure.substr(from, o.failure.find('\'', from) - from)].push_back(name);
    } else if (!o.failure.empty()) {
      mismatch += "\n  " + name + ": " + o.failure;
    } else if (o.checked > 0) {
      pass.push_back(name);
    } else {
      ++skipped;
    }
  }
  std::string p, n;
  for (const std::string& x : pass) p += " " + x;
  for (const auto& [missing, ops] : needs) {
    n += "\n  " + missing + " (for";
    for (const std::string& x : ops) n += " " + x;
    n += ")";
  }
  std::printf("[gradgradcheck survey] %zu more ops pass:%s\n", pass.size(), p.c_str());
  std::printf("[gradgradcheck survey] %zu derivatives are missing for double backward:%s\n",
              needs.size(), n.c_str());
  std::printf("[gradgradcheck survey] mismatches:%s\n",
              mismatch.empty() ? " none" : mismatch.c_str());
  std::printf("[gradgradcheck survey] %zu ops have no sample that applies\n", skipped);
}

/// Prints the tally of the gradient checks that ran.
class Report : public ::testing::Environment {
 public:
  void TearDown() override {
    for (Check kind : {Check::Grad, Check::GradGrad}) {
      const Tally& t = tally(kind);
      const size_t n = t.passed.size() + t.failed.size() + t.known.size() + t.skipped.size();
      if (n == 0) continue;
      std::string f, k;
      for (const std::string& x : t.failed) f += " " + x;
      for (const std::string& x : t.known) k += " " + x;
      std::printf("[%s] %zu passed, %zu failed%s%s, %zu known failures%s%s, %zu skipped\n",
                  kind == Check::Grad ? "gradcheck" : "gradgradcheck", t.passed.size(),
                  t.failed.size(), f.empty() ? "" : ":", f.c_str(), t.known.size(),
                  k.empty() ? "" : ":", k.c_str(), t.skipped.size());
    }
  }
};
[[maybe_unused]] ::testing::Environment* const report =
    ::testing::AddGlobalTestEnvironment(new Report);

}  // namespace
}  // namespace loom::conformance
