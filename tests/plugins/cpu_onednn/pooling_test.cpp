// Tests for plugins/cpu_onednn/pooling.cpp: the onednn provider against the reference one,
// max / average / adaptive average pooling forward and backward (the backward ops directly
// and through autograd) over a grid of parameters, in contiguous, channels-last and strided
// layouts, ties in max pooling, the 1-d forms, and the calls handed on (float64,
// divisor_override, non-divisible adaptive sizes, malformed calls with the reference's
// message).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
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

class OnednnPooling : public ::testing::Test {
 protected:
  void SetUp() override { load_onednn(); }
};

/// x's values in a channels-last tensor of x's sizes (4-D or 3-D [N, C, L]).
Tensor channels_last(const Tensor& x) {
  const std::vector<double> v = to_doubles(x);
  std::vector<int64_t> perm_sizes{x.size(0)};
  for (int64_t d = 2; d < x.dim(); ++d) perm_sizes.push_back(x.size(d));
  perm_sizes.push_back(x.size(1));
  const int64_t C = x.size(1), inner = x.numel() / (x.size(0) * C);
  std::vector<double> p(v.size());
  for (int64_t n = 0; n < x.size(0); ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < inner; ++s) p[(n * inner + s) * C + c] = v[(n * C + c) * inner + s];
  const Tensor nhwc = make_tensor(p, perm_sizes, x.dtype());
  std::vector<int64_t> strides(static_cast<size_t>(x.dim()));
  strides[1] = 1;
  int64_t run = C;
  for (int64_t d = x.dim() - 1; d >= 2; --d) {
    strides[d] = run;
    run *= x.size(d);
  }
  strides[0] = run;
  return nhwc.as_strided_view(x.sizes(), strides, 0);
}

/// Expects got and want to hold the same values (NaN matching NaN, infinities exact):
/// expect_allclose cannot compare infinities (inf - inf is NaN).
void expect_same_values(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  const std::vector<double> g = to_doubles(got), w = to_doubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] != w[i]) {
      ADD_FAILURE() << what << ": element " << i << ": got " << g[i] << ", want " << w[i];
      return;
    }
  }
}

enum class Layout { kContiguous, kChannelsLast, kStrided };

Tensor make_input(const Sizes& sizes, Layout layout, uint64_t seed, DType dtype = DType::Float32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  const std::vector<double> v = random_values(static_cast<size_t>(n), seed);
  const Tensor x = make_tensor(v, sizes, dtype, layout == Layout::kStrided);
  return layout == Layout::kChannelsLast ? channels_last(x) : x;
}

/// d(sum(w * f(x)))/dx under provider, for fixed random weights w.
Tensor grad_of(const std::string& provider, const std::function<Tensor(const Tensor&)>& f,
               const Tensor& x0) {
  return with_provider(provider, [&] {
    Tensor x = x0.contiguous();
    x.set_requires_grad(true);
    const Tensor y = f(x);
    const Tensor w = make_tensor(random_values(static_cast<size_t>(y.numel()), 77), y.sizes());
    return autograd::grad({y}, {x}, {w})[0];
  });
}

struct MaxCase {
  Sizes k, s, p, d;
  bool ceil_mode;
};

TEST_F(OnednnPooling, MaxPoolMatchesReferenceOverGrid) {
  const std::vector<MaxCase> cases = {{{2}, {}, {0}, {1}, false},
                                      {{3}, {2}, {1}, {1}, false},
                                      {{3}, {2}, {1}, {1}, true},
                                      {{2, 3}, {1, 2}, {1, 0}, {1, 1}, false},
                                      {{3}, {1}, {1}, {2}, false},
                                      {{2}, {3}, {0}, {1}, true},
                                      {{3, 2}, {2, 2}, {1, 1}, {2, 1}, true},
                                      {{1}, {1}, {0}, {1}, false}};
  for (const Sizes& in : {Sizes{4, 16, 23, 24}, Sizes{64, 24, 23}}) {
    for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast, Layout::kStrided}) {
      if (layout == Layout::kChannelsLast && in.size() != 4) continue;
      const Tensor x = make_input(in, layout, 3);
      for (const MaxCase& c : cases) {
        SCOPED_TRACE(::testing::Message() << "in " << x.describe() << " k " << c.k[0] << " s "
                                          << (c.s.empty() ? 0 : c.s[0]) << " p " << c.p[0] << " d "
                                          << c.d[0] << " ceil " << c.ceil_mode);
        auto run = [&](const std::string& prov) {
          return with_provider(prov, [&] {
            const Tensor out = max_pool2d(x, c.k, c.s, c.p, c.d, c.ceil_mode);
            auto [out2, idx] = max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil_mode);
            const Tensor go =
                make_tensor(random_values(static_cast<size_t>(out.numel()), 9), out.sizes());
            const Tensor gi = max_pool2d_backward(go, x, c.k, c.s, c.p, c.d, c.ceil_mode);
            const Tensor gi2 =
                max_pool2d_with_indices_backward(go, x, c.k, c.s, c.p, c.d, c.ceil_mode, idx);
            return std::vector<Tensor>{out, out2, idx, gi, gi2};
          });
        };
        const auto got = run("onednn"), want = run("reference");
        expect_allclose(got[0], want[0], 0, 0, "max_pool2d");
        expect_allclose(got[1], want[1], 0, 0, "max_pool2d_with_indices");
        expect_allclose(got[2], want[2], 0, 0, "indices");
        EXPECT_EQ(got[2].dtype(), DType::Int64);
        expect_allclose(got[3], want[3], 1e-6, 1e-6, "max_pool2d_backward");
        expect_allclose(got[4], want[4], 1e-6, 1e-6, "max_pool2d_with_indices_backward");
      }
    }
  }
}

TEST_F(OnednnPooling, MaxPoolTiesRouteToTheFirstMaximum) {
  // Few distinct values: most windows hold several maxima; overlapping windows (stride 1).
  std::vector<double> v(2 * 16 * 32 * 32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7) % 3);
  for (bool cl : {false, true}) {
    Tensor x = make_tensor(v, {2, 16, 32, 32});
    if (cl) x = channels_last(x);
    for (const Sizes& s : {Sizes{1}, Sizes{2}}) {
      auto run = [&](const std::string& prov) {
        return with_provider(prov, [&] {
          auto [out, idx] = max_pool2d_with_indices(x, {3}, s, {1}, {1}, false);
          const Tensor go =
              make_tensor(random_values(static_cast<size_t>(out.numel()), 4), out.sizes());
          return std::vector<Tensor>{idx, max_pool2d_backward(go, x, {3}, s, {1}, {1}, false)};
        });
      };
      const auto got = run("onednn"), want = run("reference");
      expect_allclose(got[0], want[0], 0, 0, "indices");
      expect_allclose(got[1], want[1], 1e-6, 1e-6, "grad_input");
    }
    // All equal: every window's first position takes the gradient.
    const Tensor ones = make_tensor(std::vector<double>(v.size(), 1.0), {2, 16, 32, 32});
    const Tensor g1 = grad_of(
        "onednn", [](const Tensor& t) { return max_pool2d(t, {2}, {1}); },
        cl ? channels_last(ones) : ones);
    const Tensor g2 = grad_of(
        "reference", [](const Tensor& t) { return max_pool2d(t, {2}, {1}); }, ones);
    expect_allclose(g1, g2, 1e-6, 1e-6, "all equal");
  }
}

TEST_F(OnednnPooling, NanAndMinusInfinityFollowTheReference) {
  // A NaN takes its window (and its index); a window of -inf gives -inf at its first input
  // position, also where it overlaps the padding.
  std::vector<double> with_nan(2 * 16 * 32 * 32);
  for (size_t i = 0; i < with_nan.size(); ++i) with_nan[i] = static_cast<double>(i % 5);
  with_nan[6] = std::nan("");
  with_nan[7] = -INFINITY;
  std::vector<double> minus_inf(with_nan.size(), -INFINITY);
  for (size_t i = 0; i < 1024; ++i) minus_inf[i] = 1.0;  // plane 0
  for (const auto& v : {with_nan, minus_inf}) {
    for (bool cl : {false, true}) {
      Tensor x = make_tensor(v, {2, 16, 32, 32});
      if (cl) x = channels_last(x);
      auto run = [&](const std::string& prov) {
        return with_provider(prov, [&] {
          auto [out, idx] = max_pool2d_with_indices(x, {2}, {1}, {1});
          const Tensor go =
              make_tensor(random_values(static_cast<size_t>(out.numel()), 8), out.sizes());
          return std::vector<Tensor>{max_pool2d(x, {2}, {1}, {1}), out, idx,
                                     max_pool2d_backward(go, x, {2}, {1}, {1})};
        });
      };
      const auto got = run("onednn"), want = run("reference");
      for (size_t k = 0; k < got.size(); ++k) {
        expect_same_values(got[k], want[k], std::to_string(k) + (cl ? " channels-last" : ""));
      }
    }
  }
}

TEST_F(OnednnPooling, ChannelsLastInputGivesChannelsLastResult) {
  // Both providers keep channels-last (Note [Memory format]), above and below the size at
  // which the onednn provider hands calls on.
  for (const Sizes& sizes : {Sizes{2, 16, 16, 16}, Sizes{1, 16, 8, 8}}) {
    const Tensor x = make_input(sizes, Layout::kChannelsLast, 5);
    const Tensor got = with_provider("onednn", [&] { return max_pool2d(x, {2}); });
    EXPECT_FALSE(got.is_contiguous());
    EXPECT_EQ(got.stride(1), 1);
    const Tensor avg = with_provider("onednn", [&] { return avg_pool2d(x, {2}); });
    EXPECT_EQ(avg.stride(1), 1);
  }
}

struct AvgCase {
  Sizes k, s, p;
  bool ceil_mode, count_include_pad;
};

TEST_F(OnednnPooling, AvgPoolMatchesReferenceOverGrid) {
  std::vector<AvgCase> cases;
  for (bool ceil : {false, true})
    for (bool inc : {false, true}) {
      cases.push_back({{2}, {}, {0}, ceil, inc});
      cases.push_back({{3}, {2}, {1}, ceil, inc});
      cases.push_back({{3, 2}, {2, 1}, {1, 0}, ceil, inc});
      cases.push_back({{2}, {3}, {1}, ceil, inc});  // ceil: windows past the right padding
    }
  for (const Sizes& in : {Sizes{2, 16, 13, 14}, Sizes{32, 13, 14}}) {
    for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast, Layout::kStrided}) {
      if (layout == Layout::kChannelsLast && in.size() != 4) continue;
      const Tensor x = make_input(in, layout, 11);
      for (const AvgCase& c : cases) {
        SCOPED_TRACE(::testing::Message()
                     << "in " << x.describe() << " k " << c.k[0] << " p " << c.p[0] << " ceil "
                     << c.ceil_mode << " include " << c.count_include_pad);
        auto run = [&](const std::string& prov) {
          return with_provider(prov, [&] {
            const Tensor out =
                avg_pool2d(x, c.k, c.s, c.p, c.ceil_mode, c.count_include_pad, std::nullopt);
            const Tensor go =
                make_tensor(random_values(static_cast<size_t>(out.numel()), 2), out.sizes());
            return std::vector<Tensor>{out, avg_pool2d_backward(go, x, c.k, c.s, c.p, c.ceil_mode,
                                                                c.count_include_pad, std::nullopt)};
          });
        };
        const auto got = run("onednn"), want = run("reference");
        expect_allclose(got[0], want[0], 1e-5, 1e-6, "avg_pool2d");
        expect_allclose(got[1], want[1], 1e-5, 1e-6, "avg_pool2d_backward");
      }
    }
  }
}

TEST_F(OnednnPooling, AdaptiveAvgPoolMatchesReference) {
  for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast, Layout::kStrided}) {
    const Tensor x = make_input({4, 16, 8, 12}, layout, 13);
    for (const Sizes& o :
         {Sizes{1, 1}, Sizes{4, 3}, Sizes{8, 12}, Sizes{3, 5} /* not divisible */}) {
      auto run = [&](const std::string& prov) {
        return with_provider(prov, [&] {
          const Tensor out = adaptive_avg_pool2d(x, o);
          const Tensor out2 = _adaptive_avg_pool2d(x, o);
          const Tensor go =
              make_tensor(random_values(static_cast<size_t>(out.numel()), 6), out.sizes());
          return std::vector<Tensor>{out, out2, _adaptive_avg_pool2d_backward(go, x)};
        });
      };
      const auto got = run("onednn"), want = run("reference");
      for (size_t i = 0; i < got.size(); ++i) expect_allclose(got[i], want[i], 1e-5, 1e-6);
    }
  }
  const Tensor x1 = make_input({4, 96, 12}, Layout::kContiguous, 14);
  expect_allclose(with_provider("onednn", [&] { return adaptive_avg_pool1d(x1, {4}); }),
                  with_provider("reference", [&] { return adaptive_avg_pool1d(x1, {4}); }));
}

TEST_F(OnednnPooling, OneDimensionalFormsMatchReference) {
  for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast, Layout::kStrided}) {
    const Tensor x = make_input({16, 32, 67}, layout, 15);
    for (bool ceil : {false, true}) {
      auto run = [&](const std::string& prov) {
        return with_provider(prov, [&] {
          auto [o2, idx] = max_pool1d_with_indices(x, {3}, {2}, {1}, {1}, ceil);
          return std::vector<Tensor>{max_pool1d(x, {3}, {2}, {1}, {2}, ceil), o2, idx,
                                     avg_pool1d(x, {3}, {2}, {1}, ceil, true),
                                     avg_pool1d(x, {2}, {2}, {0}, ceil, false)};
        });
      };
      const auto got = run("onednn"), want = run("reference");
      for (size_t i = 0; i < got.size(); ++i) expect_allclose(got[i], want[i], 1e-6, 1e-6);
    }
  }
  const Tensor x2 = make_input({64, 67}, Layout::kContiguous, 16);
  expect_allclose(with_provider("onednn", [&] { return max_pool1d(x2, {2}); }),
                  with_provider("reference", [&] { return max_pool1d(x2, {2}); }), 0, 0);
}

TEST_F(OnednnPooling, GradientsThroughAutogradMatchReference) {
  const Tensor x = make_input({8, 16, 16, 18}, Layout::kContiguous, 17);
  const std::vector<std::function<Tensor(const Tensor&)>> fs = {
      [](const Tensor& t) { return max_pool2d(t, {3}, {2}, {1}); },
      [](const Tensor& t) { return std::get<0>(max_pool2d_with_indices(t, {2}, {2})); },
      [](const Tensor& t) { return avg_pool2d(t, {3}, {2}, {1}, true, false, std::nullopt); },
      [](const Tensor& t) {
        return adaptive_avg_pool2d(t, {4, 3});
      },
      [](const Tensor& t) { return max_pool1d(t.flatten(2, 3), {3}, {2}); },
      [](const Tensor& t) { return avg_pool1d(t.flatten(2, 3), {4}, {3}); },
  };
  for (size_t i = 0; i < fs.size(); ++i) {
    expect_allclose(grad_of("onednn", fs[i], x), grad_of("reference", fs[i], x), 1e-5, 1e-6,
                    "formula " + std::to_string(i));
  }
}

TEST_F(OnednnPooling, HandsOnWhatOnednnDoesNotTake) {
  // float64, divisor_override: the reference's results exactly.
  const Tensor xd = make_input({4, 16, 15, 15}, Layout::kContiguous, 18, DType::Float64);
  const Tensor x = make_input({4, 16, 15, 15}, Layout::kContiguous, 18);
  auto same = [&](auto f, const char* what) {
    expect_allclose(with_provider("onednn", f), with_provider("reference", f), 0, 0, what);
  };
  same([&] { return max_pool2d(xd, {3}, {2}, {1}); }, "float64 max");
  same([&] { return avg_pool2d(xd, {3}, {2}, {1}, false, true, std::nullopt); }, "float64 avg");
  same([&] { return avg_pool2d(x, {3}, {2}, {1}, false, true, 5); }, "divisor_override");
  same([&] { return adaptive_avg_pool2d(x, {3, 2}); }, "adaptive not divisible");
  EXPECT_EQ(with_provider("onednn", [&] { return max_pool2d(xd, {2}); }).dtype(), DType::Float64);
}

TEST_F(OnednnPooling, MalformedCallsGetTheReferenceMessage) {
  const Tensor x = make_input({4, 16, 15, 15}, Layout::kContiguous, 19);
  const Tensor go = make_input({4, 16, 2, 2}, Layout::kContiguous, 20);  // wrong: 8 x 8 expected
  const std::vector<std::function<void()>> calls = {
      [&] { max_pool2d(x, {3}, {2}, {2}); },  // pad > kernel / 2
      [&] { max_pool2d(x, {0}); },            // kernel 0
      [&] {
        max_pool2d(x, {2, 2, 2});
      },                                                   // three ints
      [&] { max_pool2d(x, {16}); },                        // output too small
      [&] { max_pool2d_backward(go, x, {3}, {2}, {1}); },  // grad_output of the wrong size
      [&] { avg_pool2d(x, {3}, {0}, {1}, false, true, std::nullopt); },  // stride 0
      [&] { avg_pool2d_backward(go, x, {3}, {2}, {1}, false, true, std::nullopt); },
      [&] {
        adaptive_avg_pool2d(x, {-1, 2});
      },
      [&] { _adaptive_avg_pool2d_backward(go.flatten(0, 1), x); },
      [&] {
        max_pool1d(x.flatten(2, 3), {2, 2});
      },
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string got = with_provider("onednn", [&] { return message_of(calls[i]); });
    const std::string want = with_provider("reference", [&] { return message_of(calls[i]); });
    EXPECT_FALSE(want.empty()) << i;
    EXPECT_EQ(got, want) << i;
  }
}

}  // namespace
}  // namespace loom::testing

namespace loom::testing {
namespace {

// Timings of onednn against reference (run with --gtest_also_run_disabled_tests).
TEST_F(OnednnPooling, DISABLED_Timing) {
  for (const Sizes& in : {Sizes{64, 32, 26, 26}, Sizes{8, 64, 56, 56}, Sizes{1, 16, 8, 8},
                          Sizes{4, 16, 16, 16}, Sizes{1, 64, 16, 16}}) {
    for (Layout layout : {Layout::kContiguous, Layout::kChannelsLast}) {
      const Tensor x = make_input(in, layout, 1);
      const Tensor out = max_pool2d(x, {2});
      const Tensor go =
          make_tensor(random_values(static_cast<size_t>(out.numel()), 2), out.sizes());
      const int reps = x.numel() > 100000 ? 30 : 300;
      const std::vector<std::pair<const char*, std::function<void()>>> fs = {
          {"max fwd", [&] { max_pool2d(x, {2}); }},
          {"max idx", [&] { max_pool2d_with_indices(x, {2}); }},
          {"max bwd", [&] { max_pool2d_backward(go, x, {2}); }},
          {"avg fwd", [&] { avg_pool2d(x, {2}, {}, {0}, false, true, std::nullopt); }},
          {"avg bwd", [&] { avg_pool2d_backward(go, x, {2}, {}, {0}, false, true, std::nullopt); }},
          {"max 3s2p1", [&] { max_pool2d(x, {3}, {2}, {1}); }},
          {"gap",
           [&] {
             adaptive_avg_pool2d(x, {1, 1});
           }},
      };
      for (const auto& [name, f] : fs) {
        const double a = with_provider("onednn", [&] { return best_us(f, reps); });
        const double b = with_provider("reference", [&] { return best_us(f, reps); });
        std::printf("%-24s %-3s %-10s onednn %9.1f us  reference %9.1f us  x%.2f\n",
                    x.describe().c_str(), layout == Layout::kChannelsLast ? "cl" : "", name, a, b,
                    b / a);
      }
    }
  }
}

}  // namespace
}  // namespace loom::testing

namespace loom::testing {
namespace {

TEST_F(OnednnPooling, BroadcastInput) {
  // A stride-0 (expanded) input: every batch entry the same plane.
  const Tensor base = make_input({1, 16, 24, 24}, Layout::kContiguous, 30);
  const Tensor x = base.as_strided_view({8, 16, 24, 24}, {0, 576, 24, 1}, 0);
  auto run = [&](const std::string& prov) {
    return with_provider(prov, [&] {
      const Tensor go = make_input({8, 16, 12, 12}, Layout::kContiguous, 31);
      return std::vector<Tensor>{
          max_pool2d(x, {2}), avg_pool2d(x, {2}, {}, {0}, false, true, std::nullopt),
          max_pool2d_backward(go, x, {2}), adaptive_avg_pool2d(x, {1, 1}),
          avg_pool2d_backward(go, x, {2}, {2}, {0}, false, true, std::nullopt)};
    });
  };
  const auto got = run("onednn"), want = run("reference");
  for (size_t i = 0; i < got.size(); ++i) expect_allclose(got[i], want[i], 1e-5, 1e-6);
}

}  // namespace
}  // namespace loom::testing
