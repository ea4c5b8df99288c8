// Programs a user would write from the guide (docs/guide/compile.md), none of them in the other
// suites, compiled with loom::compile(fn) or loom::compile(module) against eager: the values
// (NaN positions included), the inputs after the call (in-place ops on inputs), and with grad
// mode on the gradients of the inputs that require grad and of parameters; over several calls,
// with new values each call, after parameter updates, and with new input shapes (recompiles).
//
// Each program runs twice from the same inputs: once compiled, once as the plain function, each
// on its own fresh copies of the inputs.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compile_test_util.h"
#include "loom/autograd/grad_mode.h"
#include "loom/compile/compile.h"
#include "loom/core/warning.h"
#include "loom/loom.h"
#include "loom/nn/nn.h"
#include "loom/optim/optim.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using graph::testing::CaughtWarnings;

using loom::testing::contains;
using loom::testing::expect_close;
using loom::testing::make_tensor;
using loom::testing::to_doubles;
using Inputs = std::vector<Tensor>;

::testing::Environment* const cache_dir =
    ::testing::AddGlobalTestEnvironment(new graph::testing::ProcessCacheDir("user-programs-test"));

class UserProgramTest : public ::testing::Test {
 protected:
  void SetUp() override { loom::init(); }
};

/// randn(sizes) * scale from seed, of dtype t.
Tensor rnd(std::vector<int64_t> sizes, uint64_t seed, DType t = DType::Float32,
           double scale = 1.0) {
  manual_seed(seed);
  return mul(randn(sizes, t), scale);
}

/// got equals want: defined-ness, dtype, sizes, values within float rounding (NaN where want
/// has NaN). A gradient's rounding scales with its largest element (`gradient`).
void expect_same(const Tensor& got, const Tensor& want, const std::string& what,
                 bool gradient = false) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.defined(), want.defined());
  if (!want.defined()) return;
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  const std::vector<double> w = to_doubles(want);
  double largest = 1.0;
  for (double v : w)
    if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
  const bool f64 = want.dtype() == DType::Float64;
  const double rtol = f64 ? 1e-10 : 1e-5;
  const double atol = (f64 ? 1e-12 : 1e-6) * (gradient ? largest : 1.0);
  expect_close(got, want.sizes(), w, rtol, atol);
}

/// sum over outs that require grad of sum(out * seed_k), seed_k fixed by k and the out's
/// shape: a backward seed that weighs each element differently. Undefined when none does.
Tensor weighted_loss(const std::vector<Tensor>& outs) {
  Tensor loss;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].requires_grad()) continue;
    manual_seed(1000 + k);
    const Tensor term = sum(mul(outs[k], randn(outs[k].sizes(), outs[k].dtype())));
    loss = loss.defined() ? add(loss, term) : term;
  }
  return loss;
}

/// What run_both saw.
struct Outcome {
  CompileStats stats;
  std::vector<std::string> warnings;
};

/// Calls fn compiled and eagerly, `calls` times each, on inputs(call) (a fresh set for each
/// side, with requires_grad already set): compares the outputs, the inputs afterwards (a
/// function may change them in place), and where an output requires grad the gradients of
/// every input. The compiled function is called before the eager one in each call.
Outcome run_both(const graph::TensorFunction& fn, const std::function<Inputs(int)>& inputs,
                 int calls, CompileOptions options = {}) {
  Outcome out;
  const CaughtWarnings warnings;
  const CompiledFunction compiled = compile(fn, options);
  for (int call = 0; call < calls; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Inputs ic = inputs(call), ie = inputs(call);
    const std::vector<Tensor> yc = compiled(ic);
    const std::vector<Tensor> ye = fn(ie);
    EXPECT_EQ(yc.size(), ye.size());
    if (yc.size() != ye.size()) break;
    for (size_t k = 0; k < ye.size(); ++k) {
      expect_same(yc[k], ye[k], "output " + std::to_string(k));
      EXPECT_EQ(yc[k].requires_grad(), ye[k].requires_grad()) << "output " << k;
    }
    for (size_t i = 0; i < ie.size(); ++i)
      expect_same(ic[i], ie[i], "input " + std::to_string(i) + " after the call");
    const Tensor lc = weighted_loss(yc), le = weighted_loss(ye);
    EXPECT_EQ(lc.defined(), le.defined());
    if (!le.defined() || !lc.defined()) continue;
    lc.backward();
    le.backward();
    for (size_t i = 0; i < ie.size(); ++i)
      expect_same(ic[i].grad(), ie[i].grad(), "input " + std::to_string(i) + ".grad", true);
  }
  out.stats = compiled.stats();
  out.warnings = warnings.messages;
  return out;
}

/// No warnings: no compiler fallback, no graph break.
void expect_quiet(const Outcome& o) {
  EXPECT_EQ(o.warnings, std::vector<std::string>{})
      << "a compiler fallback or a graph break: the calls ran no compiled code";
}

// ---- functions of tensors ----------------------------------------------------------------------

// A residual block that works on its intermediates in place, as a user saving memory would.
TEST_F(UserProgramTest, ResidualBlockWithInPlaceOpsOnIntermediates) {
  auto block = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &w = in[1], &b = in[2];
    // (relu_ saves its result for backward: the in-place ops on h come before it, as eagerly
    // an in-place op on a saved result fails the backward.)
    Tensor h = add(matmul(x, w), b);
    h.mul_(0.5);
    h.add_(x);
    h.relu_();
    Tensor g = mul(h, sigmoid(h));
    g.add_(-1.0);
    g.mul_(x);
    g.clamp_(-0.75, std::nullopt);
    return {g};
  };
  const Outcome o = run_both(
      block,
      [](int call) {
        return Inputs{rnd({5, 8}, 10 + call).requires_grad_(), rnd({8, 8}, 2).requires_grad_(),
                      rnd({8}, 3).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.captures, 1);
  EXPECT_EQ(o.stats.replays, 2);
}

// Views (permute, reshape, transpose, narrow, slice, unsqueeze, expand, select) between
// pointwise chains, on a non-contiguous input.
TEST_F(UserProgramTest, ViewsMixedWithPointwiseChains) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];                                     // [2, 3, 4], strided
    const Tensor& y = in[1];                                     // [3]
    Tensor a = mul(x.permute({2, 0, 1}), 2.0).add(1.0);          // [4, 2, 3]
    Tensor b = exp(a.reshape({4, 6}).transpose(0, 1)).mul(0.1);  // [6, 4]
    Tensor c = tanh(b.narrow(0, 1, 3)).add(y.unsqueeze(1));      // [3, 4]
    Tensor d = c.unsqueeze(0).expand({2, 3, 4});                 // [2, 3, 4]
    Tensor e = mul(d, x).sub(slice(x, 2, 1, 3).sum({2}, true));  // [2, 3, 4]
    return {e, e.select(1, 2).mul(3.0)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        std::vector<double> v(24);
        for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1 * static_cast<double>(i) - 1.0 + call;
        Tensor x = make_tensor(v, {2, 3, 4}, DType::Float32, /*strided=*/true);
        return Inputs{x.requires_grad_(), rnd({3}, 5 + call).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.captures, 1);
  EXPECT_EQ(o.stats.replays, 2);
}

// Causal attention written out: the mask built inside the function with triu, masked_fill with
// -inf, softmax over the last dim, and a where on a mask from a comparison.
TEST_F(UserProgramTest, MaskedFillAndWhereWithMasksBuiltInside) {
  auto attention = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &q = in[0], &k = in[1], &v = in[2];  // [B, T, D]
    const int64_t t = q.size(1);
    const Tensor scores =
        div(matmul(q, k.transpose(1, 2)), std::sqrt(static_cast<double>(q.size(2))));
    const Tensor causal = triu(ones({t, t}), 1).to(DType::Bool);
    const Tensor p =
        softmax(masked_fill(scores, causal, -std::numeric_limits<double>::infinity()), -1);
    const Tensor o = matmul(p, v);
    const Tensor big = gt(o.abs(), 0.5);
    return {where(big, mul(o, o), exp(o).sub(1.0)), masked_fill(o, lt(o, 0.0), 0.0)};
  };
  const Outcome o = run_both(
      attention,
      [](int call) {
        const int64_t t = call < 2 ? 5 : 7;  // the third call recompiles
        return Inputs{rnd({2, t, 4}, 20 + call).requires_grad_(),
                      rnd({2, t, 4}, 30 + call).requires_grad_(),
                      rnd({2, t, 4}, 40 + call).requires_grad_()};
      },
      4);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.captures, 2);
  EXPECT_EQ(o.stats.replays, 2);
}

// cat and stack of the results of fused chains, then a chain over the concatenation.
TEST_F(UserProgramTest, CatAndStackOfFusedResults) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &a = in[0], &b = in[1];  // [4, 3] each
    const Tensor u = gelu(add(mul(a, 2.0), b));
    const Tensor v = sigmoid(sub(a, b)).mul(b);
    const Tensor c = cat({u, v, a}, 1);  // [4, 9]
    const Tensor s = stack({u, v}, 0);   // [2, 4, 3]
    return {tanh(c).mul(c), s.mul(s).add(1.0).log()};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({4, 3}, 50 + call).requires_grad_(),
                      rnd({4, 3}, 60 + call).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// softmax and log_softmax over dim 1 of a 3-D tensor (not the last dim) and over the last dim.
TEST_F(UserProgramTest, SoftmaxOverAMiddleDimAndTheLastDim) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor x = mul(in[0], 1.5).add(in[1]);  // [3, 4, 5] + [5]
    return {softmax(x, 1), softmax(x, -1), log_softmax(x, 1).mul(x), log_softmax(x, 2)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({3, 4, 5}, 70 + call, DType::Float32, 3.0).requires_grad_(),
                      rnd({5}, 80).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// The same tensor returned twice, and an input returned unchanged.
TEST_F(UserProgramTest, SameTensorTwiceAndAnInputUnchanged) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor y = exp(in[0]).mul(in[1]);
    return {y, y, in[1], in[0]};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({3, 4}, 90 + call).requires_grad_(),
                      rnd({3, 4}, 91 + call).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// The same as values; and without grad the outputs that are the same tensor eagerly are the
// same tensor compiled (a write through one shows in the other), and a returned input is the
// caller's tensor.
TEST_F(UserProgramTest, SameTensorTwiceAliasesLikeEager) {
  autograd::NoGradGuard no_grad;
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor y = exp(in[0]).mul(2.0);
    return {y, y, in[0]};
  };
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor x = rnd({3, 4}, 95 + call);
    const std::vector<Tensor> out = c({x});
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].data_ptr(), out[1].data_ptr()) << "eager returns one tensor twice";
    EXPECT_EQ(out[2].data_ptr(), x.data_ptr()) << "eager returns the input itself";
  }
}

// Outputs that are views of an input: the values, and (without grad) that they alias the
// input as eager's do, so that a later in-place change of the input shows through them.
TEST_F(UserProgramTest, OutputsThatAreViewsOfAnInput) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];  // [4, 6]
    return {x.transpose(0, 1), x.narrow(1, 2, 3), x.reshape({2, 12}), x.unsqueeze(0)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({4, 6}, 100 + call).requires_grad_()};
      },
      3);
  expect_quiet(o);

  autograd::NoGradGuard no_grad;
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor xc = rnd({4, 6}, 110 + call), xe = xc.clone();
    const std::vector<Tensor> yc = c({xc}), ye = f({xe});
    xc.add_(1.0);  // the caller changes its input afterwards
    xe.add_(1.0);
    for (size_t k = 0; k < ye.size(); ++k) {
      expect_same(yc[k], ye[k], "view " + std::to_string(k) + " after the input changed");
      EXPECT_TRUE(yc[k].is_alias_of(xc)) << "output " << k << " is a view of the input eagerly";
    }
  }
}

// Integer and bool tensors mixed with float ones: comparisons, logical ops, casts both ways,
// integer arithmetic, bool outputs.
TEST_F(UserProgramTest, IntegerAndBoolTensorsMixedIn) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &idx = in[1], &flag = in[2];  // f32, i64, bool; [3, 4]
    const Tensor pos = gt(x, 0.0);
    const Tensor both = logical_and(pos, flag);
    const Tensor y = add(mul(x, both.to(DType::Float32)), idx.to(DType::Float32).mul(0.25));
    const Tensor n = add(mul(idx, 3), 1);                   // int64
    const Tensor counts = sum(both.to(DType::Int64), {1});  // int64 [3]
    return {y, n, logical_or(both, eq(remainder(idx, 2), 0)), counts, mul(x, idx)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        manual_seed(120 + call);
        return Inputs{rnd({3, 4}, 121 + call).requires_grad_(), randint(-5, 6, {3, 4}),
                      gt(rnd({3, 4}, 122 + call), 0.0)};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// A float64 program with functions the loops compute through the C library.
TEST_F(UserProgramTest, Float64Chain) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &y = in[1];
    const Tensor a = tanh(mul(x, y)).add(log1p(exp(x)));
    const Tensor b = div(sin(a), add(cos(y).abs(), 1.5)).mul(gelu(x));
    return {b, softmax(b, -1), sum(mul(b, b), {0})};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({6, 7}, 130 + call, DType::Float64, 2.0).requires_grad_(),
                      rnd({7}, 131 + call, DType::Float64).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// 0-size, 1-element and 0-d tensors through the same pointwise chain (each a recompile).
TEST_F(UserProgramTest, ZeroSizeOneElementAndZeroDimTensors) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &y = in[1];
    const Tensor z = sigmoid(add(mul(x, y), 0.5)).mul(x);
    return {z, sum(z), mean(exp(z), {0})};
  };
  const std::vector<std::vector<int64_t>> shapes = {{0, 5}, {1}, {1, 1}, {0, 5}, {1, 1}};
  const Outcome o = run_both(
      f,
      [&](int call) {
        return Inputs{rnd(shapes[call], 140 + call).requires_grad_(),
                      rnd(shapes[call], 150 + call).requires_grad_()};
      },
      static_cast<int>(shapes.size()));
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.captures, 3);
  EXPECT_EQ(o.stats.replays, 2);

  // 0-d inputs (a scalar loss weight, say) broadcast against a matrix.
  auto g = [](const Inputs& in) -> std::vector<Tensor> {
    return {mul(exp(in[0]), in[1]).add(in[1].mul(in[1]))};
  };
  const Outcome o2 = run_both(
      g,
      [](int call) {
        return Inputs{rnd({3, 2}, 160 + call).requires_grad_(),
                      rnd({}, 161 + call).requires_grad_()};
      },
      3);
  expect_quiet(o2);
  EXPECT_EQ(o2.stats.replays, 2);
}

// Broadcasting with size-1 dims in the middle: the gradients reduce over them.
TEST_F(UserProgramTest, BroadcastingWithSizeOneDimsInTheMiddle) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &a = in[0], &b = in[1], &c = in[2];  // [4, 1, 5], [1, 3, 1], [4, 3, 5]
    const Tensor d = in[3];                           // [3, 1]
    return {tanh(add(mul(a, b), c)).mul(d), mul(a, d).add(b)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({4, 1, 5}, 170 + call).requires_grad_(),
                      rnd({1, 3, 1}, 171 + call).requires_grad_(),
                      rnd({4, 3, 5}, 172 + call).requires_grad_(),
                      rnd({3, 1}, 173 + call).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// A function that branches on item(): its calls run eagerly with one warning, and give eager's
// results whichever way the branch goes (same metadata, different values).
TEST_F(UserProgramTest, ItemCallRunsEagerlyWithAWarningNeverWrong) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    if (x.sum().item<double>() > 0) return {exp(x).mul(2.0)};
    return {tanh(x).mul(3.0)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        // Positive, negative, positive, negative sums.
        Tensor x = rnd({4, 5}, 180).abs().add(0.1);
        if (call % 2 == 1) x = x.neg();
        return Inputs{x.requires_grad_()};
      },
      4);
  EXPECT_EQ(o.stats.replays, 0);
  ASSERT_EQ(o.warnings.size(), 1u) << "one warning saying where the value was read";
  EXPECT_TRUE(contains(o.warnings[0], "item")) << o.warnings[0];
}

// A function that changes an input in place: the caller sees eager's change after every call,
// and the value the function returns uses the changed input.
TEST_F(UserProgramTest, MutatingAnInputInPlace) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &y = in[1];
    x.add_(1.0);
    y.mul_(x);
    return {exp(x).add(y)};
  };
  autograd::NoGradGuard no_grad;  // in-place on leaves that require grad is refused eagerly
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({3, 4}, 190 + call), rnd({3, 4}, 191 + call)};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);

  // The same input called several times accumulates the changes, as eagerly.
  const CompiledFunction c = compile(f);
  const Tensor xc = rnd({2, 3}, 195), yc = rnd({2, 3}, 196);
  const Tensor xe = xc.clone(), ye = yc.clone();
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("repeat " + std::to_string(call));
    const Tensor oc = c({xc, yc})[0];
    const Tensor oe = f({xe, ye})[0];
    expect_same(oc, oe, "output");
    expect_same(xc, xe, "x");
    expect_same(yc, ye, "y");
  }
}

// An in-place change of an input that does not require grad, inside a function whose other
// input does: the caller's tensor changes, the gradient is eager's.
TEST_F(UserProgramTest, MutatingAnInputInPlaceWithGrad) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &w = in[0], &buf = in[1];  // buf as a running statistic
    buf.mul_(0.9).add_(w.detach().mean({0}), 0.1);
    return {mul(w, buf).sigmoid()};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({4, 3}, 200 + call).requires_grad_(), rnd({3}, 201)};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
}

// requires_grad on some inputs only, and which ones changes between calls (a guard).
TEST_F(UserProgramTest, RequiresGradOnSomeInputsOnly) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &a = in[0], &b = in[1], &c = in[2];
    return {gelu(mul(a, b)).add(c.mul(c)), sum(mul(b, c), {1})};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        Inputs in = {rnd({3, 5}, 210 + call), rnd({3, 5}, 211 + call), rnd({3, 5}, 212 + call)};
        in[call % 3 == 2 ? 0 : 1].requires_grad_();  // b, b, a, b, b
        return in;
      },
      5);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.captures, 2);
  EXPECT_EQ(o.stats.replays, 3);
}

// Calls under no_grad between calls with grad: outputs require no grad there, values equal.
TEST_F(UserProgramTest, NoGradAroundSomeCalls) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    return {silu(add(mul(in[0], in[1]), 1.0)).mul(in[0])};
  };
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const bool grad = call % 2 == 0;
    std::optional<autograd::NoGradGuard> off;
    if (!grad) off.emplace();
    const Tensor xc = rnd({4, 4}, 220 + call).requires_grad_(),
                 xe = rnd({4, 4}, 220 + call).requires_grad_();
    const Tensor w = rnd({4}, 221);
    const Tensor yc = c({xc, w})[0], ye = f({xe, w})[0];
    expect_same(yc, ye, "output");
    EXPECT_EQ(yc.requires_grad(), grad);
    if (!grad) continue;
    weighted_loss({yc}).backward();
    weighted_loss({ye}).backward();
    expect_same(xc.grad(), xe.grad(), "x.grad", true);
  }
  EXPECT_EQ(c.stats().captures, 2);
  EXPECT_EQ(c.stats().replays, 2);
}

// Reductions over dims other than the last, keepdim false, with pointwise ops around them.
TEST_F(UserProgramTest, ReductionsOverNonLastDims) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor x = exp(mul(in[0], 0.5));  // [3, 4, 5]
    const Tensor s0 = sum(x, {0});          // [4, 5]
    const Tensor m02 = mean(x, {0, 2});     // [4]
    const Tensor mx1 = amax(x, {1});        // [3, 5]
    const Tensor centered = sub(x, mean(x, {1}, true)).pow(2.0);
    return {s0.mul(2.0).add(1.0), m02.sqrt(), mx1, sum(centered, {0, 1}), logsumexp(x, {0}, false)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({3, 4, 5}, 230 + call).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// clamp, pow, sqrt and log of negative numbers: NaN in the same places, values and gradients.
TEST_F(UserProgramTest, NaNsFromNegativeNumbersInTheSamePlaces) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];  // signed values
    const Tensor r = sqrt(x);
    const Tensor p = pow(sub(x, 0.25), 0.5);
    const Tensor l = log(x).mul(2.0);
    const Tensor c = clamp(sqrt(x).add(1.0), -1.0, 2.0);  // clamp keeps NaN
    const Tensor m = maximum(r, x);                       // maximum propagates NaN
    return {r.add(p), l, c, m, pow(x, 1.5).mul(x)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        std::vector<double> v(20);
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = 0.37 * static_cast<double>(i) - 3.0 + 0.1 * call;
        return Inputs{make_tensor(v, {4, 5}).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// New input shapes record new graphs; the old ones are kept and replayed when a shape comes back.
TEST_F(UserProgramTest, ChangedInputShapesRecompileAndOldGraphsStay) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor h = layer_norm(in[0], {in[0].size(-1)});
    return {gelu(h).mul(in[1]).add(h)};
  };
  const std::vector<std::vector<int64_t>> shapes = {{4, 8},    {7, 8}, {4, 8},
                                                    {2, 3, 8}, {7, 8}, {4, 8}};
  const Outcome o = run_both(
      f,
      [&](int call) {
        return Inputs{rnd(shapes[call], 240 + call).requires_grad_(),
                      rnd({8}, 241).requires_grad_()};
      },
      static_cast<int>(shapes.size()));
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.captures, 3);
  EXPECT_EQ(o.stats.replays, 3);
}

// A functional MLP whose parameters are inputs, trained by hand with SGD steps in place
// between calls: each call reads the current parameter values.
TEST_F(UserProgramTest, FunctionalMlpTrainedWithInPlaceSgd) {
  auto mlp = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &w1 = in[1], &b1 = in[2], &w2 = in[3], &t = in[4];
    const Tensor h = tanh(linear(x, w1, b1));
    const Tensor y = linear(h, w2);
    return {mean(pow(sub(y, t), 2.0)), y};
  };
  const CompiledFunction c = compile(mlp);
  std::vector<Tensor> pc = {rnd({6, 4}, 250, DType::Float32, 0.5), rnd({6}, 251),
                            rnd({2, 6}, 252, DType::Float32, 0.5)};
  std::vector<Tensor> pe;
  for (const Tensor& p : pc) pe.push_back(p.clone());
  for (Tensor& p : pc) p.requires_grad_();
  for (Tensor& p : pe) p.requires_grad_();
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const int64_t batch = step < 3 ? 5 : 9;
    const Tensor x = rnd({batch, 4}, 260 + step), t = rnd({batch, 2}, 270 + step);
    const std::vector<Tensor> oc = c({x, pc[0], pc[1], pc[2], t});
    const std::vector<Tensor> oe = mlp({x, pe[0], pe[1], pe[2], t});
    expect_same(oc[0], oe[0], "loss");
    expect_same(oc[1], oe[1], "y");
    oc[0].backward();
    oe[0].backward();
    autograd::NoGradGuard off;
    for (size_t i = 0; i < pc.size(); ++i) {
      expect_same(pc[i].grad(), pe[i].grad(), "param " + std::to_string(i) + ".grad", true);
      pc[i].sub_(pc[i].grad(), 0.1);
      pe[i].sub_(pe[i].grad(), 0.1);
      pc[i].grad().zero_();
      pe[i].grad().zero_();
    }
  }
  EXPECT_EQ(c.stats().captures, 2);
  EXPECT_EQ(c.stats().replays, 2);
}

// Integer and bool arithmetic with negative operands and wrap-around, where C++ and PyTorch
// differ: remainder takes the divisor's sign, integer floor division rounds down, a uint8 sum
// wraps, int / int is a true (float) division, bool + bool promotes.
TEST_F(UserProgramTest, IntegerArithmeticWithNegativesAndWrapAround) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &a = in[0], &b = in[1], &u = in[2];  // int64, int64 (no zeros), uint8
    return {remainder(add(a, 1), b),
            div(mul(a, 3), b, std::string_view("floor")),
            div(a, b),
            add(mul(u, 2), 7),
            fmod(sub(a, 2), b),
            add(gt(a, 0), lt(b, 0)).mul(a),
            remainder(a.to(DType::Float32).mul(0.5), -1.5)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        manual_seed(500 + call);
        Tensor b = randint(1, 5, {3, 4});
        b = where(gt(rnd({3, 4}, 501 + call), 0.0), b, b.neg());
        return Inputs{randint(-9, 10, {3, 4}), b, randint(0, 256, {3, 4}, nullptr, DType::UInt8)};
      },
      3);
  expect_quiet(o);
  EXPECT_EQ(o.stats.replays, 2);
}

// Random ops inside the function (noise from randn_like, a constant randn of fixed size): each
// call draws new values, the same as eager's from the same seed.
TEST_F(UserProgramTest, RandomOpsInsideDrawNewValuesEachCall) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor noise = randn_like(in[0]).mul(0.1);
    const Tensor fixed_shape = rand({4});
    return {add(in[0], noise).tanh().mul(fixed_shape), fixed_shape};
  };
  const CompiledFunction c = compile(f);
  std::vector<double> first;
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor x = rnd({3, 4}, 510);
    manual_seed(520 + call);
    const std::vector<Tensor> yc = c({x});
    manual_seed(520 + call);
    const std::vector<Tensor> ye = f({x});
    expect_same(yc[0], ye[0], "output");
    expect_same(yc[1], ye[1], "rand({4})");
  }
}

// Tensors made inside the function from no input (zeros, arange, full): each call returns
// a new tensor, so the caller may change one in place without changing the next call's.
TEST_F(UserProgramTest, TensorsMadeInsideAreFreshEachCall) {
  autograd::NoGradGuard no_grad;
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor acc = zeros({3});
    const Tensor steps = arange(3, DType::Float32).mul(2.0);
    return {acc, steps, add(in[0], steps)};
  };
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor x = rnd({3}, 530 + call);
    const std::vector<Tensor> yc = c({x}), ye = f({x});
    for (size_t k = 0; k < ye.size(); ++k) expect_same(yc[k], ye[k], "output " + std::to_string(k));
    yc[0].add_(5.0);  // the caller uses the zeros as an accumulator
    yc[1].mul_(-1.0);
  }
}

// An input that is a view of another input, with an in-place change of one: the change shows in
// the other as eagerly, whether or not the first call's inputs overlapped.
TEST_F(UserProgramTest, InPlaceChangeOfAnInputSeenThroughAnAliasedInput) {
  autograd::NoGradGuard no_grad;
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &y = in[1];  // [6]; [6]
    x.mul_(2.0).add_(1.0);
    return {mul(y, 3.0).add(x)};
  };
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const bool aliased = call >= 1;
    const Tensor xc = rnd({6}, 540 + call), xe = xc.clone();
    const Tensor yc = aliased ? xc.view({6}) : rnd({6}, 541);
    const Tensor ye = aliased ? xe.view({6}) : rnd({6}, 541);
    const Tensor oc = c({xc, yc})[0], oe = f({xe, ye})[0];
    expect_same(oc, oe, aliased ? "y is x" : "y apart");
    expect_same(xc, xe, "x");
  }
}

// An in-place change of a non-leaf input that requires grad: the caller's tensor carries the
// change into its later ops and into the gradient of the leaf under it.
TEST_F(UserProgramTest, InPlaceChangeOfANonLeafInputThatRequiresGrad) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor& h = in[0];
    h.mul_(in[1]);
    return {exp(h).add(1.0)};
  };
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor xc = rnd({2, 5}, 550 + call).requires_grad_();
    const Tensor xe = rnd({2, 5}, 550 + call).requires_grad_();
    const Tensor w = rnd({5}, 551);
    const Tensor hc = mul(xc, 1.5), he = mul(xe, 1.5);
    const Tensor oc = c({hc, w})[0], oe = f({he, w})[0];
    expect_same(oc, oe, "output");
    expect_same(hc, he, "h after the call");
    // The caller uses h again: its gradient goes through the change.
    add(weighted_loss({oc}), sum(mul(hc, hc))).backward();
    add(weighted_loss({oe}), sum(mul(he, he))).backward();
    expect_same(xc.grad(), xe.grad(), "x.grad", true);
  }
}

// Gradients at kinks and ties, where the derivative is a convention: relu at 0, abs at 0, clamp
// at its bounds, maximum and minimum of equal values, and where() with NaN in the branch not
// taken (its NaN gradient reaches the input eagerly).
TEST_F(UserProgramTest, GradientsAtKinksTiesAndUnselectedNaNs) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &y = in[1];
    return {relu(x).mul(2.0), abs(x).add(x), clamp(x, -1.0, 1.0).mul(3.0),
            maximum(x, y).add(minimum(x, y).mul(0.5)),
            where(gt(x, 0.0), sqrt(x), zeros({})).add(1.0)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        const std::vector<double> xs = {-2, -1, -0.5, 0, 0, 0.5, 1, 2, 1.0 + call, -1};
        const std::vector<double> ys = {-2, 0, -0.5, 0, 1, 0.25, 1, 3, 1.0 + call, -1};
        return Inputs{make_tensor(xs, {2, 5}).requires_grad_(),
                      make_tensor(ys, {2, 5}).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// Division by zero, infinities and -0.0 through a chain: inf, -inf and NaN where eager has them.
TEST_F(UserProgramTest, InfinitiesAndDivisionByZero) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &y = in[1];
    const Tensor q = div(x, y);
    return {q.mul(2.0),    exp(q).sub(exp(q.neg())), reciprocal(y).mul(x), tanh(q), sigmoid(q),
            softmax(q, -1)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        const std::vector<double> xs = {1, -1, 0, 0, 3, 100, -100, 2.0 + call};
        const std::vector<double> ys = {0, 0, 0, -0.0, 1e-30, 1, 1, 1};
        return Inputs{make_tensor(xs, {2, 4}), make_tensor(ys, {2, 4})};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
}

// Strides of the outputs: a pointwise op on a transposed input gives eager's layout, so a
// later view() works on both or on neither.
TEST_F(UserProgramTest, OutputStridesMatchEager) {
  autograd::NoGradGuard no_grad;
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor xt = in[0].transpose(0, 1);  // [5, 3], strides (1, 5)
    return {exp(xt).mul(2.0), add(xt, 1.0).relu()};
  };
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor x = rnd({3, 5}, 560 + call);
    const std::vector<Tensor> yc = c({x}), ye = f({x});
    for (size_t k = 0; k < ye.size(); ++k) {
      expect_same(yc[k], ye[k], "output " + std::to_string(k));
      EXPECT_EQ(yc[k].strides().vec(), ye[k].strides().vec()) << "output " << k;
    }
  }
}

// Past the recompile limit calls run eagerly, with eager's values.
TEST_F(UserProgramTest, PastTheRecompileLimitCallsRunEagerly) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> { return {gelu(in[0]).mul(in[0])}; };
  const Outcome o = run_both(f,
                             [](int call) {
                               return Inputs{rnd({call + 1, 3}, 570 + call).requires_grad_()};
                             },
                             5, {.name = "limited", .recompile_limit = 2});
  EXPECT_EQ(o.stats.captures, 2);
  EXPECT_EQ(o.stats.eager, 3);
}

// Calls from several threads at once, each with its own inputs.
TEST_F(UserProgramTest, CallsFromSeveralThreads) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    return {tanh(mul(in[0], in[1])).add(in[0]).mul(softmax(in[0], -1))};
  };
  const CompiledFunction c = compile(f);
  c({rnd({16, 32}, 580), rnd({32}, 581)});  // recorded before the threads start
  std::vector<std::thread> threads;
  std::vector<Tensor> got(4), want(4);
  for (int t = 0; t < 4; ++t) {
    const Tensor x = rnd({16, 32}, 590 + t), w = rnd({32}, 581);
    want[t] = f({x, w})[0];
    threads.emplace_back([&, x, w, t] {
      for (int i = 0; i < 20; ++i) got[t] = c({x, w})[0];
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) expect_same(got[t], want[t], "thread " + std::to_string(t));
  EXPECT_EQ(c.stats().captures, 1);
}

// retain_graph: backward twice through a compiled graph gives twice the gradient, as eagerly;
// and autograd::grad instead of backward.
TEST_F(UserProgramTest, BackwardTwiceWithRetainGraphAndAutogradGrad) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    return {gelu(mul(in[0], in[1])).add(sigmoid(in[0]))};
  };
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor xc = rnd({4, 3}, 600 + call).requires_grad_(),
                 xe = rnd({4, 3}, 600 + call).requires_grad_();
    const Tensor w = rnd({3}, 601);
    const Tensor lc = weighted_loss(c({xc, w})), le = weighted_loss(f({xe, w}));
    lc.backward(Tensor(), true);
    lc.backward();
    le.backward(Tensor(), true);
    le.backward();
    expect_same(xc.grad(), xe.grad(), "x.grad after two backwards", true);
    const Tensor gc = autograd::grad({weighted_loss(c({xc, w}))}, {xc})[0];
    const Tensor ge = autograd::grad({weighted_loss(f({xe, w}))}, {xe})[0];
    expect_same(gc, ge, "autograd::grad", true);
  }
}

// Parameters held by the closure instead of passed as inputs (a functional model the way one
// writes it first): the gradient reaches them, and each call reads their current values after
// an in-place update.
TEST_F(UserProgramTest, ClosureParametersUpdatedInPlace) {
  const Tensor wc = rnd({3, 4}, 610).requires_grad_(), we = wc.detach().clone().requires_grad_();
  const Tensor bc = rnd({3}, 611).requires_grad_(), be = bc.detach().clone().requires_grad_();
  auto make = [](const Tensor& w, const Tensor& b) {
    return [w, b](const Inputs& in) -> std::vector<Tensor> {
      return {tanh(linear(in[0], w, b)).mul(exp(b))};
    };
  };
  const CompiledFunction c = compile(make(wc, bc));
  const auto eager = make(we, be);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Tensor x = rnd({5, 4}, 620 + step);
    const Tensor yc = c({x})[0], ye = eager({x})[0];
    expect_same(yc, ye, "output");
    weighted_loss({yc}).backward();
    weighted_loss({ye}).backward();
    expect_same(wc.grad(), we.grad(), "w.grad", true);
    expect_same(bc.grad(), be.grad(), "b.grad", true);
    autograd::NoGradGuard off;
    for (const Tensor* p : {&wc, &we, &bc, &be}) {
      p->sub_(p->grad(), 0.5);
      p->grad().zero_();
    }
  }
}

// Inputs that are views at different offsets into one buffer (same sizes and strides), a
// broadcast (stride 0) input, and one input passed twice.
TEST_F(UserProgramTest, InputsAtOffsetsBroadcastAndPassedTwice) {
  autograd::NoGradGuard no_grad;
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    return {mul(exp(in[0]), in[1]).add(in[2])};
  };
  const CompiledFunction c = compile(f);
  const Tensor big = rnd({8, 4}, 630);
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor x = big.narrow(0, call, 3);
    const Tensor row = rnd({4}, 631 + call).expand({3, 4});
    const Inputs in = {x, row, call == 3 ? x : rnd({3, 4}, 640 + call)};
    expect_same(c(in)[0], f(in)[0], "output");
  }
}

// The same tensor passed as two inputs, changed in place through one of them.
TEST_F(UserProgramTest, OneTensorPassedTwiceAndChangedThroughOne) {
  autograd::NoGradGuard no_grad;
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    in[0].add_(in[1]);  // x += x when both are x
    return {in[1].mul(2.0).add(in[0])};
  };
  const CompiledFunction c = compile(f);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor xc = rnd({2, 3}, 650 + call), xe = xc.clone();
    const Tensor oc = c({xc, xc})[0], oe = f({xe, xe})[0];
    expect_same(oc, oe, "output");
    expect_same(xc, xe, "x");
  }
}

// A float16 and a bfloat16 chain: eager rounds after every op; the values agree within the
// dtype's own rounding.
TEST_F(UserProgramTest, HalfAndBFloat16Chains) {
  autograd::NoGradGuard no_grad;
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    return {sigmoid(mul(in[0], in[1])).add(in[0]).mul(0.5), softmax(in[0], -1)};
  };
  for (DType t : {DType::Float16, DType::BFloat16}) {
    const CompiledFunction c = compile(f);
    for (int call = 0; call < 3; ++call) {
      SCOPED_TRACE("call " + std::to_string(call));
      const Inputs in = {rnd({4, 8}, 660 + call).to(t), rnd({8}, 661).to(t)};
      const std::vector<Tensor> yc = c(in), ye = f(in);
      for (size_t k = 0; k < ye.size(); ++k) {
        ASSERT_EQ(yc[k].dtype(), t);
        expect_close(yc[k], ye[k].sizes(), to_doubles(ye[k]), t == DType::Float16 ? 2e-3 : 1.6e-2,
                     1e-3);
      }
    }
  }
}

// Inputs of another dtype record another graph (float32, then float64, then float32 again).
TEST_F(UserProgramTest, AnotherDtypeRecordsAnotherGraph) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    return {exp(mul(in[0], 0.5)).add(in[0].pow(2.0))};
  };
  const std::vector<DType> types = {DType::Float32, DType::Float64, DType::Float32, DType::Float64};
  const Outcome o = run_both(
      f,
      [&](int call) {
        return Inputs{rnd({3, 3}, 670 + call, types[call]).requires_grad_()};
      },
      4);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.captures, 2);
  EXPECT_EQ(o.stats.replays, 2);
}

// Outputs that do not depend on the input that requires grad, and an input that requires grad
// but reaches no output: such outputs require no grad, as eagerly (a fused group's outputs get
// its backward node only where they depend on an input that requires grad).
TEST_F(UserProgramTest, OutputsIndependentOfGradInputsRequireNoGrad) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor& a = in[0];  // requires grad
    const Tensor& c = in[2];  // does not; in[1] requires grad and is unused
    return {exp(c).add(1.0), mul(a, c).sum({1})};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({3, 4}, 680 + call).requires_grad_(), rnd({3, 4}, 681).requires_grad_(),
                      rnd({3, 4}, 682 + call)};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
}

// The same without fusion (graphs replayed node by node): right.
TEST_F(UserProgramTest, OutputsIndependentOfGradInputsRequireNoGradUnfused) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    return {exp(in[2]).add(1.0), mul(in[0], in[2]).sum({1})};
  };
  const Outcome o =
      run_both(f,
               [](int call) {
                 return Inputs{rnd({3, 4}, 680 + call).requires_grad_(),
                               rnd({3, 4}, 681).requires_grad_(), rnd({3, 4}, 682 + call)};
               },
               3, {.fuse = false});
  expect_quiet(o);
}

// detach() inside the function stops the gradient, as eagerly (a stop-gradient target, say):
// detach() is no op, so the capture records it as a view made with grad mode off.
TEST_F(UserProgramTest, DetachInsideTheFunctionStopsTheGradient) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor& a = in[0];
    const Tensor target = exp(a).detach().mul(2.0);
    return {target, a.mul(3.0), mean(pow(sub(a, target), 2.0)), matmul(a.detach(), in[1])};
  };
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    run_both(f,
             [](int call) {
               return Inputs{rnd({3, 3}, 720 + call).requires_grad_(),
                             rnd({3, 3}, 721).requires_grad_()};
             },
             3, {.fuse = fuse});
  }
}

// Ops under a NoGradGuard inside the function record no gradient, as eagerly: each node keeps
// the grad mode it was captured under.
TEST_F(UserProgramTest, NoGradGuardInsideTheFunctionStopsTheGradient) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    Tensor t;
    {
      autograd::NoGradGuard off;
      t = exp(in[0]).mul(2.0);
    }
    return {t.add(in[0])};
  };
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    run_both(f, [](int call) { return Inputs{rnd({3}, 730 + call).requires_grad_()}; }, 3,
             {.fuse = fuse});
  }
}

// cumsum, a softmax over a dim of size 1, sums with a dtype argument, and a matmul on the result
// of a fused chain over a transposed view.
TEST_F(UserProgramTest, ScansSizeOneSoftmaxAndDtypeSums) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];  // [4, 1, 3]
    const Tensor s = softmax(x, 1);
    const Tensor c = cumsum(exp(x).mul(0.5), 2);
    const Tensor h = gelu(x.squeeze(1)).t();  // [3, 4]
    return {s, c, matmul(h, x.squeeze(1)), sum(gt(x, 0.0), DType::Int64),
            sum(x, {0, 2}, false, DType::Float64)};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({4, 1, 3}, 690 + call).requires_grad_()};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// The residual block with the in-place op on relu_'s saved result, which eager's backward
// refuses: the compiled backward refuses it too, or gives the gradient of the function the
// program wrote (never a gradient computed from the changed value).
TEST_F(UserProgramTest, InPlaceChangeOfASavedResult) {
  auto block = [](const Inputs& in) -> std::vector<Tensor> {
    Tensor h = add(matmul(in[0], in[1]), 0.1);
    h.relu_();
    h.mul_(0.5);  // changes relu_'s saved result
    return {h.add(in[0])};
  };
  const Tensor xe = rnd({3, 4}, 700).requires_grad_(), we = rnd({4, 4}, 701);
  EXPECT_THROW(weighted_loss(block({xe, we})).backward(), Error) << "eager refuses it";
  const CompiledFunction c = compile(block);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor xc = rnd({3, 4}, 710 + call).requires_grad_();
    const Tensor w = rnd({4, 4}, 701);
    bool refused = false;
    try {
      weighted_loss(c({xc, w})).backward();
    } catch (const Error&) {
      refused = true;
    }
    if (refused) continue;
    // The gradient of the same function written without in-place ops.
    const Tensor xr = rnd({3, 4}, 710 + call).requires_grad_();
    weighted_loss({relu(add(matmul(xr, w), 0.1)).mul(0.5).add(xr)}).backward();
    expect_same(xc.grad(), xr.grad(), "x.grad", true);
  }
}

// Softmax, layer norm and RMS norm written out of pointwise ops and last-dim reductions (the
// row loops), with a row of the scores fully masked to -inf (NaN there, as eagerly) and a
// padding mask built from a lengths input.
TEST_F(UserProgramTest, NormsAndSoftmaxWrittenOutWithAFullyMaskedRow) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    const Tensor &x = in[0], &g = in[1], &lengths = in[2];  // [4, 6], [6], int64 [4]
    const Tensor mu = mean(x, {-1}, true);
    const Tensor var = mean(pow(sub(x, mu), 2.0), {-1}, true);
    const Tensor ln = div(sub(x, mu), sqrt(add(var, 1e-5))).mul(g);
    const Tensor rms = mul(x, rsqrt(add(mean(mul(x, x), {-1}, true), 1e-6))).mul(g);
    const Tensor pad = ge(arange(6).unsqueeze(0), lengths.unsqueeze(1));  // [4, 6]
    const Tensor s = masked_fill(x, pad, -std::numeric_limits<double>::infinity());
    const Tensor e = exp(sub(s, amax(s, {-1}, true)));
    return {ln, rms, div(e, sum(e, {-1}, true))};
  };
  const Outcome o = run_both(
      f,
      [](int call) {
        return Inputs{rnd({4, 6}, 740 + call, DType::Float32, 2.0).requires_grad_(),
                      rnd({6}, 741).requires_grad_(),
                      make_tensor({6, 0, 3, 1.0 + call}, {4}, DType::Int64)};
      },
      3);
  expect_quiet(o);
  EXPECT_GT(o.stats.fused_groups, 0);
  EXPECT_EQ(o.stats.replays, 2);
}

// ---- modules ------------------------------------------------------------------------------------

/// Linear, LayerNorm, GELU, Dropout(0), Linear.
std::shared_ptr<nn::Sequential> make_mlp() {
  return std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::LayerNorm>(16),
      std::make_shared<nn::GELU>(), std::make_shared<nn::Dropout>(0.0),
      std::make_shared<nn::Linear>(16, 4));
}

/// Every parameter of a equals b's (twins), or its gradient with `grads`.
void expect_same_parameters(const nn::Module& a, const nn::Module& b, bool grads) {
  const nn::OrderedDict<Tensor> pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.keys(), pb.keys());
  auto ib = pb.begin();
  for (const auto& [name, p] : pa) {
    const Tensor& q = (ib++)->second;
    if (grads) {
      expect_same(p.grad(), q.grad(), name + ".grad", true);
    } else {
      expect_same(p, q, name);
    }
  }
}

// An MLP with LayerNorm, GELU and Dropout(p=0) trained 3 steps with Adam, compiled, against an
// eager twin; then a batch of another size, and eval.
TEST_F(UserProgramTest, MlpTrainedWithAdamAgainstAnEagerTwin) {
  manual_seed(300);
  const std::shared_ptr<nn::Sequential> model = make_mlp(), twin = make_mlp();
  twin->load_state_dict(model->state_dict());
  CompiledModule compiled = compile(model);
  optim::Adam opt_c(model->parameters(), optim::AdamOptions(1e-2));
  optim::Adam opt_e(twin->parameters(), optim::AdamOptions(1e-2));
  const CaughtWarnings warnings;
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const int64_t batch = step < 3 ? 6 : 10;
    const Tensor x = rnd({batch, 8}, 310 + step), t = rnd({batch, 4}, 320 + step);
    opt_c.zero_grad();
    opt_e.zero_grad();
    const Tensor yc = compiled(x), ye = (*twin)(x);
    expect_same(yc, ye, "output");
    const Tensor lc = mean(pow(sub(yc, t), 2.0)), le = mean(pow(sub(ye, t), 2.0));
    lc.backward();
    le.backward();
    expect_same_parameters(*model, *twin, /*grads=*/true);
    opt_c.step();
    opt_e.step();
    expect_same_parameters(*model, *twin, /*grads=*/false);
  }
  model->eval();
  twin->eval();
  {
    autograd::NoGradGuard off;
    const Tensor x = rnd({3, 8}, 330);
    expect_same(compiled(x), (*twin)(x), "eval output");
  }
  EXPECT_EQ(warnings.messages, std::vector<std::string>{});
  EXPECT_EQ(compiled.stats().captures, 3) << "train batch 6, train batch 10, eval under no_grad";
  EXPECT_EQ(compiled.stats().replays, 2);
}

/// A user-written module: a gated residual unit with a parameter and a buffer of its own.
class GatedUnit : public nn::Module {
 public:
  explicit GatedUnit(int64_t n)
      : nn::Module("GatedUnit"),
        fc(register_module("fc", std::make_shared<nn::Linear>(n, 2 * n))),
        scale(register_parameter("scale", ones({n}))),
        shift(register_buffer("shift", full({n}, 0.25))) {}
  Tensor forward(const Tensor& x) override {
    const std::vector<Tensor> halves = (*fc)(x).chunk(2, -1);
    Tensor h = mul(halves[0], sigmoid(halves[1]));
    if (is_training()) h = mul(h, 0.5);
    return add(x, mul(h, scale)).sub(shift);
  }
  std::shared_ptr<nn::Linear> fc;
  Tensor& scale;
  Tensor& shift;
};

// A module the user wrote, compiled: train and eval each, gradients of input and parameters,
// a parameter updated in place and a buffer changed in place between calls.
TEST_F(UserProgramTest, UserWrittenModuleWithParameterAndBuffer) {
  manual_seed(400);
  const auto m = std::make_shared<GatedUnit>(6), twin = std::make_shared<GatedUnit>(6);
  twin->load_state_dict(m->state_dict());
  CompiledModule compiled = compile(m);
  const CaughtWarnings warnings;
  for (int call = 0; call < 5; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const bool train = call != 3;
    m->train(train);
    twin->train(train);
    const Tensor xc = rnd({4, 6}, 410 + call).requires_grad_(),
                 xe = rnd({4, 6}, 410 + call).requires_grad_();
    const Tensor yc = compiled(xc), ye = (*twin)(xe);
    expect_same(yc, ye, "output");
    weighted_loss({yc}).backward();
    weighted_loss({ye}).backward();
    expect_same(xc.grad(), xe.grad(), "x.grad", true);
    expect_same_parameters(*m, *twin, /*grads=*/true);
    m->zero_grad();
    twin->zero_grad();
    autograd::NoGradGuard off;
    m->scale.add_(0.1);
    twin->scale.add_(0.1);
    m->shift.mul_(-2.0);
    twin->shift.mul_(-2.0);
  }
  EXPECT_EQ(warnings.messages, std::vector<std::string>{});
  EXPECT_EQ(compiled.stats().captures, 2);
  EXPECT_EQ(compiled.stats().replays, 3);
}

// detach() of an input that sits at another offset in its storage on each call: the detached
// view is made at the call's own offset (a constant offset read another row, or past the end).
TEST_F(UserProgramTest, DetachOfInputsAtOtherOffsets) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> { return {mul(in[0], in[0].detach())}; };
  const Outcome o = run_both(
      f,
      [](int call) {
        // Row call + 1 of a fresh [8, 16] matrix (the caller's leaf), then a tensor of its own.
        if (call == 3) return Inputs{rnd({16}, 760).requires_grad_()};
        const Tensor w = rnd({8, 16}, 761 + call);
        return Inputs{select(w, 0, call + 1).detach().requires_grad_()};
      },
      4);
  expect_quiet(o);
  EXPECT_EQ(o.stats.captures, 1);
}

// EnableGradGuard inside a function called under no_grad: the ops inside record gradients,
// as eagerly, fused loops included.
TEST_F(UserProgramTest, EnableGradGuardInsideANoGradCall) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    autograd::EnableGradGuard on;
    return {exp(mul(in[0], 0.5)).add(1.0)};
  };
  const CompiledFunction compiled = compile(f);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const Tensor xc = rnd({4, 5}, 770 + call).requires_grad_();
    const Tensor xe = rnd({4, 5}, 770 + call).requires_grad_();
    Tensor yc, ye;
    {
      autograd::NoGradGuard off;
      yc = compiled({xc})[0];
      ye = f({xe})[0];
    }
    ASSERT_EQ(yc.requires_grad(), ye.requires_grad());
    sum(yc).backward();
    sum(ye).backward();
    expect_same(xc.grad(), xe.grad(), "x.grad", true);
  }
  EXPECT_GT(compiled.stats().fused_groups, 0);
}

// A parameter frozen for the first calls and unfrozen later (fine-tuning): its gradient
// appears as eagerly, and freezing it again takes it away; each change records anew.
TEST_F(UserProgramTest, UnfreezingAParameterBetweenCalls) {
  manual_seed(780);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 8),
                                                std::make_shared<nn::LayerNorm>(8),
                                                std::make_shared<nn::GELU>());
  auto twin = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 8),
                                               std::make_shared<nn::LayerNorm>(8),
                                               std::make_shared<nn::GELU>());
  std::vector<Tensor> pm = model->parameters(), pt = twin->parameters();
  for (size_t i = 0; i < pm.size(); ++i) {
    autograd::NoGradGuard off;
    pt[i].copy_(pm[i]);
  }
  CompiledModule compiled = compile(model);
  for (int call = 0; call < 4; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const bool frozen = call % 2 == 0;  // the norm's weight: frozen, unfrozen, frozen, ...
    for (auto* params : {&pm, &pt}) {
      (*params)[2].set_requires_grad(!frozen);
      for (Tensor& t : *params) t.set_grad(Tensor());
    }
    const Tensor x = rnd({5, 6}, 790 + call);
    const Tensor yc = compiled(x), ye = (*twin)(x);
    expect_same(yc, ye, "output");
    sum(mul(yc, yc)).backward();
    sum(mul(ye, ye)).backward();
    for (size_t i = 0; i < pm.size(); ++i) {
      expect_same(pm[i].grad(), pt[i].grad(), "grad of parameter " + std::to_string(i), true);
    }
  }
  EXPECT_EQ(compiled.stats().captures, 2) << "frozen and unfrozen each have a graph";
}

// x.detach().requires_grad_() inside the function is a new leaf no op makes: its calls run
// eagerly with one warning, and x gets no gradient, as eagerly.
TEST_F(UserProgramTest, ANewLeafInsideTheFunctionRunsEagerly) {
  auto f = [](const Inputs& in) -> std::vector<Tensor> {
    Tensor leaf = in[0].detach();
    leaf.set_requires_grad(true);
    return {mul(leaf, 2.0), mul(in[0], 3.0)};
  };
  const Outcome o = run_both(
      f, [](int call) { return Inputs{rnd({3}, 800 + call).requires_grad_()}; }, 3);
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_TRUE(contains(o.warnings[0], "new leaf")) << o.warnings[0];
  EXPECT_EQ(o.stats.replays, 0);
}

}  // namespace
}  // namespace loom
