// The onednn provider's sum and mean (plugins/cpu_onednn/reduction.cpp) against the
// reference kernels: dim lists and keepdim (oneDNN takes the innermost dims, the others are
// handed on, Note [Reduction domain]); small, non-contiguous, float64, whole-tensor and dtype=
// calls (handed on); malformed dim lists (the reference's error word for word); and gradients
// through both.
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

/// 4 x 256 x 512 elements: above the threshold of reduction.cpp.
const std::vector<int64_t> kShape = {4, 256, 512};

Tensor values(IntArrayRef sizes, uint64_t seed, DType dtype = DType::Float32,
              bool strided = false) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return make_tensor(random_values(static_cast<size_t>(n), seed, -1, 3), sizes, dtype, strided);
}

void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.contiguous(), w = want.contiguous();
  EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), g.numel() * g.element_size()), 0) << what;
}

/// oneDNN sums in float32, the reference in double (Note [Reduction domain]): over up to
/// half a million positive-leaning elements, float32 partial sums agree to about 1e-5.
constexpr double kRtol = 2e-5;
constexpr double kAtol = 1e-4;

class OnednnReduction : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { load_onednn(); }
};

using Reduction = std::function<Tensor(const Tensor&)>;

std::vector<std::pair<std::string, Reduction>> reductions() {
  std::vector<std::pair<std::string, Reduction>> r = {
      {"sum", [](const Tensor& x) { return sum(x); }},
      {"mean", [](const Tensor& x) { return mean(x); }},
  };
  const std::vector<std::vector<int64_t>> dims = {{0},    {1},       {2},    {-1}, {0, 2},
                                                  {1, 2}, {0, 1, 2}, {2, 0}, {}};
  for (const auto& d : dims) {
    for (bool keepdim : {false, true}) {
      std::string tag = "[";
      for (int64_t v : d) tag += std::to_string(v) + ",";
      tag += keepdim ? "] keepdim" : "]";
      r.push_back({"sum" + tag, [d, keepdim](const Tensor& x) { return sum(x, d, keepdim); }});
      r.push_back({"mean" + tag, [d, keepdim](const Tensor& x) { return mean(x, d, keepdim); }});
    }
  }
  return r;
}

TEST_F(OnednnReduction, LargeCallsMatchTheReference) {
  const Tensor x = values(kShape, 1);
  for (const auto& [name, f] : reductions()) {
    const Tensor want = with_provider("reference", [&] { return f(x); });
    const Tensor got = with_provider("onednn", [&] { return f(x); });
    EXPECT_EQ(got.dtype(), DType::Float32) << name;
    expect_allclose(got, want, kRtol, kAtol, name);
  }
}

TEST_F(OnednnReduction, OnednnComputesLargeCalls) {
  // A float32 sum of half a million values differs from the double one in some bit.
  const Tensor x = values(kShape, 2);
  const Tensor want = with_provider("reference", [&] { return sum(x, {2}); });
  const Tensor got = with_provider("onednn", [&] { return sum(x, {2}); });
  EXPECT_NE(std::memcmp(got.data_ptr(), want.data_ptr(), got.numel() * 4), 0)
      << "no bit differs; was oneDNN bypassed?";
}

TEST_F(OnednnReduction, NanPropagates) {
  std::vector<double> v = random_values(1 << 20, 3);
  v[12345] = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = make_tensor(v, {1 << 10, 1 << 10});
  const Tensor want = with_provider("reference", [&] { return sum(x, {1}); });
  const Tensor got = with_provider("onednn", [&] { return sum(x, {1}); });
  expect_allclose(got, want, kRtol, kAtol, "sum with a NaN");
  EXPECT_TRUE(std::isnan(with_provider("onednn", [&] { return sum(x); }).item<float>()));
}

TEST_F(OnednnReduction, CallsOutsideOnednnAreTheReference) {
  const Tensor x = values(kShape, 4);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> calls = {
      {"small",
       [&] {
         return sum(values({3, 5}, 5), {1});
       }},
      {"non-contiguous", [&] { return sum(values(kShape, 6, DType::Float32, true), {1}); }},
      {"transposed", [&] { return mean(x.transpose(0, 2), {0}); }},
      {"float64", [&] { return sum(values(kShape, 7, DType::Float64), {2}, true); }},
      {"dtype float64", [&] { return sum(x, {1}, false, DType::Float64); }},
      {"mean dtype float64", [&] { return mean(x, DType::Float64); }},
      {"leading dim", [&] { return sum(x, {0}); }},
      {"middle dim", [&] { return mean(x, {1}, true); }},
      {"whole tensor", [&] { return sum(x); }},
      {"above the largest size",
       [&] {
         return sum(values({33, 1 << 17}, 10), {1});
       }},
      {"all dims listed",
       [&] {
         return mean(x, {0, 1, 2});
       }},
      {"int64",
       [&] { return sum(make_tensor(std::vector<double>(1 << 19, 2), {1 << 19}, DType::Int64)); }},
  };
  for (const auto& [what, f] : calls) {
    expect_identical(with_provider("onednn", f), with_provider("reference", f), what);
  }
}

TEST_F(OnednnReduction, MalformedCallsGetTheReferenceError) {
  const Tensor x = values(kShape, 8);
  const Tensor ints = make_tensor(std::vector<double>(1 << 19, 1), {1 << 19}, DType::Int64);
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"dim out of range", [&] { sum(x, {3}); }},
      {"negative dim out of range", [&] { mean(x, {-4}); }},
      {"dim twice",
       [&] {
         sum(x, {1, -2});
       }},
      {"mean of int64", [&] { mean(ints); }},
  };
  expect_reference_errors(calls);
}

TEST_F(OnednnReduction, GradientsMatchTheReference) {
  const Tensor x0 = values(kShape, 9);
  for (const auto& [name, f] : reductions()) {
    auto grad_of = [&](const std::string& provider) {
      return with_provider(provider, [&] {
        const Tensor x = x0.clone().requires_grad_();
        const Tensor y = f(x);
        (y * y).sum().backward();  // a gradient that depends on the reduced values
        return x.grad();
      });
    };
    expect_allclose(grad_of("onednn"), grad_of("reference"), 1e-4, 1e-3, name + " gradient");
  }
}

}  // namespace
}  // namespace loom::testing
