// Tests for plugins/cpu_onednn/normalization.cpp: the onednn provider against the reference
// one for native_batch_norm (training with the running statistics' update, evaluation,
// weight and bias optional; oneDNN takes channels-last inputs, the others are handed on),
// native_batch_norm_backward (every output_mask), native_layer_norm and its backward, directly and
// through autograd, in contiguous, channels-last and strided layouts, and the calls handed on
// (float64, small, malformed with the reference's message).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/autograd/engine.h"
#include "loom/ops/nn.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

using Sizes = std::vector<int64_t>;
using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;

class OnednnNormalization : public ::testing::Test {
 protected:
  void SetUp() override { load_onednn(); }
};

Tensor random(const Sizes& sizes, uint64_t seed, DType dtype = DType::Float32, bool strided = false,
              double lo = -2, double hi = 2) {
  return random_tensor(sizes, seed, dtype, strided, lo, hi);
}

/// x's values in a channels-last tensor of x's sizes (3-D to 5-D).
Tensor channels_last(const Tensor& x) {
  const std::vector<double> v = to_doubles(x);
  Sizes perm{x.size(0)};
  for (int64_t d = 2; d < x.dim(); ++d) perm.push_back(x.size(d));
  perm.push_back(x.size(1));
  const int64_t C = x.size(1), inner = x.numel() / (x.size(0) * C);
  std::vector<double> p(v.size());
  for (int64_t n = 0; n < x.size(0); ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < inner; ++s) p[(n * inner + s) * C + c] = v[(n * C + c) * inner + s];
  std::vector<int64_t> strides(static_cast<size_t>(x.dim()));
  strides[1] = 1;
  int64_t run = C;
  for (int64_t d = x.dim() - 1; d >= 2; --d) {
    strides[d] = run;
    run *= x.size(d);
  }
  strides[0] = run;
  return make_tensor(p, perm, x.dtype()).as_strided_view(x.sizes(), strides, 0);
}

/// A copy of t (fresh storage), so each provider updates its own running statistics.
Tensor copy_of(const Tensor& t) { return make_tensor(to_doubles(t), t.sizes(), t.dtype()); }

std::optional<Tensor> maybe(bool yes, const Tensor& t) {
  return yes ? std::optional<Tensor>(t) : std::nullopt;
}

void expect_defined_as(const Tensor& got, const Tensor& want, const std::string& what,
                       double rtol = 1e-4, double atol = 1e-5) {
  ASSERT_EQ(got.defined(), want.defined()) << what;
  if (!want.defined()) return;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  expect_allclose(got, want, rtol, atol, what);
}

void expect_same3(const Tensor3& got, const Tensor3& want, const std::string& what,
                  double rtol = 1e-4, double atol = 1e-5) {
  expect_defined_as(std::get<0>(got), std::get<0>(want), what + " [0]", rtol, atol);
  expect_defined_as(std::get<1>(got), std::get<1>(want), what + " [1]", rtol, atol);
  expect_defined_as(std::get<2>(got), std::get<2>(want), what + " [2]", rtol, atol);
}

enum class Layout { kContiguous, kChannelsLast, kStrided };

Tensor input_of(const Sizes& sizes, Layout layout, uint64_t seed) {
  const Tensor x = random(sizes, seed, DType::Float32, layout == Layout::kStrided, -1, 3);
  return layout == Layout::kChannelsLast ? channels_last(x) : x;
}

TEST_F(OnednnNormalization, BatchNormMatchesReference) {
  for (const Sizes& in :
       {Sizes{8, 16, 12, 14}, Sizes{64, 96}, Sizes{4, 8, 130}, Sizes{4, 8, 8, 10, 8}}) {
    const int64_t C = in[1];
    for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast, Layout::kStrided}) {
      if (layout == Layout::kChannelsLast && in.size() < 3) continue;
      const Tensor x = input_of(in, layout, 1);
      const Tensor w = random({C}, 2), b = random({C}, 3);
      const Tensor rm0 = random({C}, 4), rv0 = random({C}, 5, DType::Float32, false, 0.5, 2);
      for (bool training : {true, false}) {
        for (bool affine : {true, false}) {
          for (bool stats : {true, false}) {
            if (!training && !stats) continue;  // evaluation needs the running statistics
            SCOPED_TRACE(::testing::Message() << x.describe() << " training " << training
                                              << " affine " << affine << " stats " << stats);
            auto run = [&](const std::string& prov, Tensor& rm, Tensor& rv) {
              rm = copy_of(rm0);
              rv = copy_of(rv0);
              return with_provider(prov, [&] {
                return native_batch_norm(x, maybe(affine, w), maybe(affine, b), maybe(stats, rm),
                                         maybe(stats, rv), training, 0.1, 1e-5);
              });
            };
            Tensor rm1, rv1, rm2, rv2;
            const Tensor3 got = run("onednn", rm1, rv1), want = run("reference", rm2, rv2);
            expect_same3(got, want, "native_batch_norm");
            expect_allclose(rm1, rm2, 1e-5, 1e-6, "running_mean");
            expect_allclose(rv1, rv2, 1e-5, 1e-6, "running_var");
            if (stats && training) {
              EXPECT_GT(rm1.version(), 0u);
            }
            // The backward op, every mask, from the forward's saved statistics.
            const Tensor go = random(in, 6);
            for (int mask = 1; mask < 8; ++mask) {
              const std::array<bool, 3> m{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
              auto bwd = [&](const std::string& prov) {
                return with_provider(prov, [&] {
                  return native_batch_norm_backward(
                      go, x, maybe(affine, w), maybe(!training, rm0), maybe(!training, rv0),
                      maybe(training, std::get<1>(want)), maybe(training, std::get<2>(want)),
                      training, 1e-5, m);
                });
              };
              expect_same3(bwd("onednn"), bwd("reference"),
                           "native_batch_norm_backward mask " + std::to_string(mask), 1e-3, 1e-4);
            }
          }
        }
      }
    }
  }
}

TEST_F(OnednnNormalization, ChannelsLastBatchNormKeepsItsLayout) {
  // (The reference returns contiguous results, so this also shows which kernel ran.)
  const Tensor x = input_of({4, 16, 8, 8}, Layout::kChannelsLast, 7);
  const Tensor out = std::get<0>(with_provider("onednn", [&] {
    return native_batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1,
                             1e-5);
  }));
  EXPECT_EQ(out.stride(1), 1) << "the onednn kernel did not run";
}

TEST_F(OnednnNormalization, LayerNormMatchesReference) {
  struct Case {
    Sizes in, normalized;
  };
  for (const Case& c : {Case{{16, 32, 64}, {64}}, Case{{8, 24, 5, 7}, {5, 7}}, Case{{4096, 3}, {3}},
                        Case{{6, 1024}, {6, 1024}}}) {
    for (bool strided : {false, true}) {
      const Tensor x = random(c.in, 8, DType::Float32, strided, -1, 3);
      const Tensor w = random(c.normalized, 9), b = random(c.normalized, 10);
      for (bool affine : {true, false}) {
        SCOPED_TRACE(::testing::Message() << x.describe() << " affine " << affine);
        auto fwd = [&](const std::string& prov) {
          return with_provider(prov, [&] {
            return native_layer_norm(x, c.normalized, maybe(affine, w), maybe(affine, b), 1e-5);
          });
        };
        const Tensor3 want = fwd("reference");
        expect_same3(fwd("onednn"), want, "native_layer_norm");
        EXPECT_EQ(std::get<1>(fwd("onednn")).sizes().vec(), std::get<1>(want).sizes().vec());
        const Tensor go = random(c.in, 11, DType::Float32, strided);
        for (int mask = 1; mask < 8; ++mask) {
          const std::array<bool, 3> m{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
          auto bwd = [&](const std::string& prov) {
            return with_provider(prov, [&] {
              return native_layer_norm_backward(go, x, c.normalized, std::get<1>(want),
                                                std::get<2>(want), maybe(affine, w),
                                                maybe(affine, b), m);
            });
          };
          expect_same3(bwd("onednn"), bwd("reference"),
                       "native_layer_norm_backward mask " + std::to_string(mask), 1e-3, 1e-4);
        }
      }
    }
  }
}

/// The gradients of sum(g * f(x, w, b)) with respect to x, w and b under provider.
std::vector<Tensor> grads_of(
    const std::string& provider,
    const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f, const Tensor& x0,
    const Tensor& w0, const Tensor& b0) {
  return with_provider(provider, [&] {
    Tensor x = x0.is_contiguous() ? copy_of(x0) : channels_last(copy_of(x0));
    Tensor w = copy_of(w0), b = copy_of(b0);
    for (Tensor* t : {&x, &w, &b}) t->set_requires_grad(true);
    const Tensor y = f(x, w, b);
    const Tensor g = random(y.sizes().vec(), 12);
    return autograd::grad({y}, {x, w, b}, {g});
  });
}

TEST_F(OnednnNormalization, GradientsThroughAutogradMatchReference) {
  const Tensor nchw = random({8, 16, 12, 14}, 13, DType::Float32, false, -1, 3);
  const Tensor w = random({16}, 14), b = random({16}, 15);
  const Tensor rm = random({16}, 16), rv = random({16}, 17, DType::Float32, false, 0.5, 2);
  auto bn_train = [&](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
    return std::get<0>(native_batch_norm(x_, w_, b_, copy_of(rm), copy_of(rv), true, 0.1, 1e-5));
  };
  auto bn_eval = [&](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
    return std::get<0>(native_batch_norm(x_, w_, b_, rm, rv, false, 0.1, 1e-5));
  };
  using Fn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  for (const Tensor& x : {nchw, channels_last(nchw)}) {
    for (const Fn& f : {Fn(bn_train), Fn(bn_eval)}) {
      const auto got = grads_of("onednn", f, x, w, b), want = grads_of("reference", f, x, w, b);
      for (size_t i = 0; i < 3; ++i) expect_allclose(got[i], want[i], 1e-3, 1e-4, "bn grad");
    }
  }
  const Tensor xl = random({16, 12, 40}, 18);
  const Tensor wl = random({40}, 19), bl = random({40}, 20);
  auto ln = [](const Tensor& x_, const Tensor& w_, const Tensor& b_) {
    return layer_norm(x_, {40}, w_, b_, 1e-5);
  };
  const auto got = grads_of("onednn", ln, xl, wl, bl), want = grads_of("reference", ln, xl, wl, bl);
  for (size_t i = 0; i < 3; ++i) expect_allclose(got[i], want[i], 1e-3, 1e-4, "ln grad");
}

TEST_F(OnednnNormalization, HandsOnWhatOnednnDoesNotTake) {
  const Tensor xd = random({8, 16, 6, 7}, 21, DType::Float64);
  auto same3 = [](const std::function<Tensor3()>& f, const std::string& what) {
    const Tensor3 a = with_provider("onednn", f), b = with_provider("reference", f);
    expect_same3(a, b, what, 0, 0);
  };
  same3(
      [&] {
        return native_batch_norm(xd, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true,
                                 0.1, 1e-5);
      },
      "float64 batch norm");
  same3([&] { return native_layer_norm(xd, {7}, std::nullopt, std::nullopt, 1e-5); },
        "float64 layer norm");
  const Tensor small = random({2, 3, 4}, 22);
  same3(
      [&] {
        return native_batch_norm(small, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                 true, 0.1, 1e-5);
      },
      "small batch norm");
  EXPECT_EQ(
      std::get<0>(with_provider(
                      "onednn",
                      [&] { return native_layer_norm(xd, {7}, std::nullopt, std::nullopt, 1e-5); }))
          .dtype(),
      DType::Float64);
}

TEST_F(OnednnNormalization, MalformedCallsGetTheReferenceMessage) {
  const Tensor x = random({8, 16, 6, 7}, 23);
  const Tensor w = random({15}, 24), rm = random({16}, 25);
  const Tensor go = random({8, 16, 6, 6}, 26);
  const std::vector<std::function<void()>> calls = {
      [&] { native_batch_norm(x, w, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5); },
      [&] { native_batch_norm(x, std::nullopt, std::nullopt, rm, std::nullopt, false, 0.1, 1e-5); },
      [&] {
        native_batch_norm_backward(go, x, std::nullopt, std::nullopt, std::nullopt, rm, rm, true,
                                   1e-5, {true, true, true});
      },
      [&] {
        native_batch_norm_backward(x, x, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                   std::nullopt, true, 1e-5, {true, false, false});
      },
      [&] { native_layer_norm(x, {6}, std::nullopt, std::nullopt, 1e-5); },
      [&] { native_layer_norm(x, {7}, w, std::nullopt, 1e-5); },
      [&] {
        const Tensor3 f = native_layer_norm(x, {7}, std::nullopt, std::nullopt, 1e-5);
        native_layer_norm_backward(go, x, {7}, std::get<1>(f), std::get<2>(f), std::nullopt,
                                   std::nullopt, {true, true, true});
      },
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string got = with_provider("onednn", [&] { return message_of(calls[i]); });
    const std::string want = with_provider("reference", [&] { return message_of(calls[i]); });
    EXPECT_FALSE(want.empty()) << i;
    EXPECT_EQ(got, want) << i;
  }
}

// A training input with one value per channel that oneDNN takes (float32 NCHW, big enough
// for the blocked layout): it gets the reference's error before any running statistic is
// written, where oneDNN's zero variance made a zero output and a 0 / 0 running variance.
TEST_F(OnednnNormalization, OneValuePerChannelInTrainingGetsTheReferenceError) {
  const int64_t C = 16384;
  const Tensor x = random({1, C, 1, 1}, 27);
  const Tensor rm = random({C}, 28), rv = random({C}, 29, DType::Float32, false, 0.5, 2);
  const std::vector<double> rm0 = to_doubles(rm), rv0 = to_doubles(rv);
  auto call = [&] { native_batch_norm(x, std::nullopt, std::nullopt, rm, rv, true, 0.1, 1e-5); };
  const std::string want = with_provider("reference", [&] { return message_of(call); });
  EXPECT_EQ(want,
            "native_batch_norm: Expected more than 1 value per channel when training, got input "
            "size [1, 16384, 1, 1]");
  EXPECT_EQ(with_provider("onednn", [&] { return message_of(call); }), want);
  EXPECT_EQ(to_doubles(rm), rm0);
  EXPECT_EQ(to_doubles(rv), rv0);
}

// Timings of onednn against reference (run with --gtest_also_run_disabled_tests).
TEST_F(OnednnNormalization, DISABLED_Timing) {
  for (const Sizes& in : {Sizes{32, 64, 56, 56}, Sizes{8, 64, 28, 28}, Sizes{4, 16, 8, 8},
                          Sizes{2, 16, 8, 8}, Sizes{16, 64, 4, 4}}) {
    for (bool cl : {false, true}) {
      const Tensor x = cl ? channels_last(random(in, 1)) : random(in, 1);
      const int64_t C = in[1];
      const Tensor w = random({C}, 2), b = random({C}, 3), rm = random({C}, 4);
      const Tensor rv = random({C}, 5, DType::Float32, false, 0.5, 2), go = random(in, 6);
      const Tensor3 f = native_batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5);
      const int reps = x.numel() > 1000000 ? 5 : x.numel() > 10000 ? 30 : 300;
      const std::vector<std::pair<const char*, std::function<void()>>> fs = {
          {"bn train", [&] { native_batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5); }},
          {"bn eval", [&] { native_batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5); }},
          {"bn bwd",
           [&] {
             native_batch_norm_backward(go, x, w, rm, rv, std::get<1>(f), std::get<2>(f), true,
                                        1e-5, {true, true, true});
           }},
      };
      for (const auto& [name, fn] : fs) {
        const double a = with_provider("onednn", [&] { return best_us(fn, reps); });
        const double r = with_provider("reference", [&] { return best_us(fn, reps); });
        std::printf("%-24s %-3s %-9s onednn %9.1f us  reference %9.1f us  x%.2f\n",
                    x.describe().c_str(), cl ? "cl" : "", name, a, r, r / a);
      }
    }
  }
  for (const Sizes& in :
       {Sizes{64, 128, 768}, Sizes{512, 1024}, Sizes{8, 64}, Sizes{16, 256}, Sizes{64, 128}}) {
    const int64_t N = in.back();
    const Tensor x = random(in, 1), w = random({N}, 2), b = random({N}, 3), go = random(in, 4);
    const Tensor3 f = native_layer_norm(x, {N}, w, b, 1e-5);
    const int reps = x.numel() > 1000000 ? 5 : x.numel() > 10000 ? 30 : 300;
    const std::vector<std::pair<const char*, std::function<void()>>> fs = {
        {"ln fwd", [&] { native_layer_norm(x, {N}, w, b, 1e-5); }},
        {"ln bwd",
         [&] {
           native_layer_norm_backward(go, x, {N}, std::get<1>(f), std::get<2>(f), w, b,
                                      {true, true, true});
         }},
    };
    for (const auto& [name, fn] : fs) {
      const double a = with_provider("onednn", [&] { return best_us(fn, reps); });
      const double r = with_provider("reference", [&] { return best_us(fn, reps); });
      std::printf("%-24s     %-9s onednn %9.1f us  reference %9.1f us  x%.2f\n",
                  x.describe().c_str(), name, a, r, r / a);
    }
  }
}

}  // namespace
}  // namespace loom::testing

namespace loom::testing {
namespace {

TEST_F(OnednnNormalization, BroadcastInput) {
  // A stride-0 (expanded) input, through the blocked layout.
  const Tensor base = random({1, 16, 12, 14}, 40, DType::Float32, false, -1, 3);
  const Tensor x = base.as_strided_view({8, 16, 12, 14}, {0, 168, 14, 1}, 0);
  const Tensor go = random({8, 16, 12, 14}, 41);
  auto run = [&](const std::string& prov) {
    return with_provider(prov, [&] {
      const Tensor3 f = native_batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                          true, 0.1, 1e-5);
      const Tensor3 b = native_batch_norm_backward(go, x, std::nullopt, std::nullopt, std::nullopt,
                                                   std::get<1>(f), std::get<2>(f), true, 1e-5,
                                                   {true, true, true});
      return std::vector<Tensor3>{f, b,
                                  native_layer_norm(x, {12, 14}, std::nullopt, std::nullopt, 1e-5)};
    });
  };
  const auto got = run("onednn"), want = run("reference");
  for (size_t i = 0; i < got.size(); ++i) {
    expect_same3(got[i], want[i], "broadcast " + std::to_string(i), 1e-3, 1e-4);
  }
}

}  // namespace
}  // namespace loom::testing
