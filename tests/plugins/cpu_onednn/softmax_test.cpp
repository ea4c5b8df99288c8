// Tests for plugins/cpu_onednn/softmax.cpp: the onednn provider against the reference one
// for _softmax, _log_softmax, softmax.int, log_softmax.int and the backward ops, along every
// dim, in contiguous and strided layouts, directly and through autograd, lines with NaN and
// -inf, and the calls handed on (float64, half_to_float, small, malformed with the
// reference's message).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/autograd/engine.h"
#include "loom/ops/core.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

using Sizes = std::vector<int64_t>;

class OnednnSoftmax : public ::testing::Test {
 protected:
  void SetUp() override { load_onednn(); }
};

Tensor random(const Sizes& sizes, uint64_t seed, DType dtype = DType::Float32,
              bool strided = false) {
  return random_tensor(sizes, seed, dtype, strided, -4, 4);
}

/// Expects got and want to hold the same values within tolerance, NaN matching NaN and
/// infinities exact (expect_allclose cannot compare infinities: inf - inf is NaN).
void expect_close_or_same(const Tensor& got, const Tensor& want, const std::string& what,
                          double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = to_doubles(got), w = to_doubles(want);
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    if ((std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i]) continue;
    if (!(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]))) {
      ADD_FAILURE() << what << ": element " << i << ": got " << g[i] << ", want " << w[i];
      ++bad;
    }
  }
}

TEST_F(OnednnSoftmax, ForwardAndBackwardMatchReferenceAlongEveryDim) {
  for (const Sizes& in :
       {Sizes{64, 100}, Sizes{37, 130}, Sizes{6, 8, 10, 12}, Sizes{5000}, Sizes{64, 100, 1}}) {
    for (bool strided : {false, true}) {
      const Tensor x = random(in, 1, DType::Float32, strided);
      const auto nd = static_cast<int64_t>(in.size());
      for (int64_t dim = -nd; dim < nd; ++dim) {
        SCOPED_TRACE(::testing::Message() << x.describe() << " dim " << dim);
        auto run = [&](const std::string& prov) {
          return with_provider(prov, [&] {
            const Tensor y = _softmax(x, dim, false), ly = _log_softmax(x, dim, false);
            const Tensor g = random(in, 2, DType::Float32, strided);
            return std::vector<Tensor>{y,
                                       ly,
                                       softmax(x, dim),
                                       log_softmax(x, dim, DType::Float32),
                                       _softmax_backward_data(g, y, dim, DType::Float32),
                                       _log_softmax_backward_data(g, ly, dim, DType::Float32)};
          });
        };
        const auto got = run("onednn"), want = run("reference");
        const char* names[] = {
            "_softmax",        "_log_softmax",           "softmax.int",
            "log_softmax.int", "_softmax_backward_data", "_log_softmax_backward_data"};
        // oneDNN's vectorised exp and log are good to a few float ulps (log-softmax's
        // log-sum to ~3e-6 absolute), its backward sums a line in float (the reference: in
        // double), and log-softmax's g - exp(y) * sum(g) cancels: tolerances to match.
        for (size_t i = 0; i < got.size(); ++i) {
          expect_close_or_same(got[i], want[i], names[i], i < 4 ? 1e-5 : 1e-4, 1e-5);
        }
      }
    }
  }
}

TEST_F(OnednnSoftmax, TransposedInput) {
  const Tensor x = random({96, 80}, 3).transpose(0, 1);  // [80, 96], strides (1, 80)
  for (int64_t dim : {0, 1}) {
    expect_close_or_same(with_provider("onednn", [&] { return _softmax(x, dim, false); }),
                         with_provider("reference", [&] { return _softmax(x, dim, false); }),
                         "transposed");
  }
}

TEST_F(OnednnSoftmax, NanAndInfinityLinesFollowTheReference) {
  std::vector<double> v = random_values(64 * 100, 4, -4, 4);
  v[5] = std::nan("");                                  // line 0: a NaN
  for (size_t i = 100; i < 200; ++i) v[i] = -INFINITY;  // line 1: all -inf
  v[250] = -INFINITY;                                   // line 2: one -inf
  v[350] = INFINITY;                                    // line 3: one +inf
  const Tensor x = make_tensor(v, {64, 100});
  for (bool log : {false, true}) {
    auto f = [&] { return log ? _log_softmax(x, 1, false) : _softmax(x, 1, false); };
    expect_close_or_same(with_provider("onednn", f), with_provider("reference", f),
                         log ? "log_softmax" : "softmax");
  }
}

TEST_F(OnednnSoftmax, GradientsThroughAutogradMatchReference) {
  const Tensor x0 = random({32, 6, 50}, 5);
  const std::vector<std::function<Tensor(const Tensor&)>> fs = {
      [](const Tensor& t) { return softmax(t, -1); },
      [](const Tensor& t) { return log_softmax(t, 1); },
      [](const Tensor& t) { return _softmax(t, 0, false); },
      [](const Tensor& t) { return _log_softmax(t, 2, false); },
  };
  for (size_t i = 0; i < fs.size(); ++i) {
    auto grad = [&](const std::string& prov) {
      return with_provider(prov, [&] {
        Tensor x = make_tensor(to_doubles(x0), x0.sizes());
        x.set_requires_grad(true);
        const Tensor y = fs[i](x);
        return autograd::grad({y}, {x}, {random(y.sizes().vec(), 6)})[0];
      });
    };
    expect_close_or_same(grad("onednn"), grad("reference"), "formula " + std::to_string(i), 1e-4,
                         1e-5);
  }
}

TEST_F(OnednnSoftmax, HandsOnWhatOnednnDoesNotTake) {
  const Tensor xd = random({64, 100}, 7, DType::Float64);
  const Tensor x = random({64, 100}, 7);
  auto same = [](const std::function<Tensor()>& f, const std::string& what) {
    expect_close_or_same(with_provider("onednn", f), with_provider("reference", f), what, 0, 0);
  };
  same([&] { return _softmax(xd, 1, false); }, "float64");
  same([&] { return _log_softmax(xd, 0, false); }, "float64 log");
  same([&] { return softmax(x, 1, DType::Float64); }, "dtype change");
  same([&] { return _softmax_backward_data(xd, xd, 1, DType::Float64); }, "float64 backward");
  same([&] { return _softmax(random({2, 3}, 8), 1, false); }, "small");
  same([&] { return _softmax(random({}, 9), 0, false); }, "0-d");
}

TEST_F(OnednnSoftmax, MalformedCallsGetTheReferenceMessage) {
  const Tensor x = random({64, 100}, 10);
  const Tensor xd = random({64, 100}, 11, DType::Float64);
  const Tensor other = random({64, 99}, 12);
  const std::vector<std::function<void()>> calls = {
      [&] { _softmax(x, 2, false); },
      [&] { _log_softmax(x, -3, false); },
      [&] { _softmax(x, 1, true); },  // half_to_float of a float32 input
      [&] { _softmax_backward_data(other, x, 1, DType::Float32); },
      [&] { _log_softmax_backward_data(xd, x, 1, DType::Float32); },
      [&] { _softmax_backward_data(x, x, 5, DType::Float32); },
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string got = with_provider("onednn", [&] { return message_of(calls[i]); });
    const std::string want = with_provider("reference", [&] { return message_of(calls[i]); });
    EXPECT_FALSE(want.empty()) << i;
    EXPECT_EQ(got, want) << i;
  }
}

// Timings of onednn against reference (run with --gtest_also_run_disabled_tests).
TEST_F(OnednnSoftmax, DISABLED_Timing) {
  struct Case {
    Sizes in;
    int64_t dim;
  };
  for (const Case& c : {Case{{4096, 1024}, 1}, Case{{64, 10}, 1}, Case{{128, 1000}, 1},
                        Case{{8, 8, 128, 128}, -1}, Case{{64, 10, 26, 26}, 1}, Case{{16, 64}, 1},
                        Case{{32, 128}, 1}, Case{{64, 256}, 1}, Case{{1024, 32}, 0}}) {
    const Tensor x = random(c.in, 1), g = random(c.in, 2);
    const Tensor y = _softmax(x, c.dim, false), ly = _log_softmax(x, c.dim, false);
    const int reps = x.numel() > 1000000 ? 5 : x.numel() > 10000 ? 30 : 300;
    const std::vector<std::pair<const char*, std::function<void()>>> fs = {
        {"softmax", [&] { _softmax(x, c.dim, false); }},
        {"log_softmax", [&] { _log_softmax(x, c.dim, false); }},
        {"softmax bwd", [&] { _softmax_backward_data(g, y, c.dim, DType::Float32); }},
        {"log bwd", [&] { _log_softmax_backward_data(g, ly, c.dim, DType::Float32); }},
    };
    for (const auto& [name, fn] : fs) {
      const double a = with_provider("onednn", [&] { return best_us(fn, reps); });
      const double r = with_provider("reference", [&] { return best_us(fn, reps); });
      std::printf("%-26s dim %2ld %-12s onednn %9.1f us  reference %9.1f us  x%.2f\n",
                  x.describe().c_str(), static_cast<long>(c.dim), name, a, r, r / a);
    }
  }
}

}  // namespace
}  // namespace loom::testing
