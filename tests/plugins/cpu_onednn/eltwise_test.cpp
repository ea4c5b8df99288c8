// The onednn provider's activations (plugins/cpu_onednn/eltwise.cpp) against the reference
// kernels: large calls (which oneDNN computes), small ones, non-contiguous and float64 ones
// (handed on, so identical), in-place and out= forms, malformed calls (the reference's
// error word for word), and gradients through both.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

/// Above every threshold of eltwise.cpp, so oneDNN computes these calls.
constexpr int64_t kBig = int64_t{1} << 18;
/// Below every threshold: handed on.
constexpr int64_t kSmall = 100;

/// One activation as the suite calls it, with the tolerance oneDNN's version meets.
struct Activation {
  std::string name;
  std::function<Tensor(const Tensor&)> fn;
  double rtol = 1e-5;
  double atol = 1e-6;
};

std::vector<Activation> activations() {
  return {
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"mish", [](const Tensor& x) { return mish(x); }},
      {"hardswish", [](const Tensor& x) { return hardswish(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x); }},
      {"leaky_relu(0.2)", [](const Tensor& x) { return leaky_relu(x, 0.2); }},
      {"elu", [](const Tensor& x) { return elu(x); }},
      {"elu(0.5)", [](const Tensor& x) { return elu(x, 0.5); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu(tanh)", [](const Tensor& x) { return gelu(x, "tanh"); }},
      {"abs", [](const Tensor& x) { return abs(x); }, 0, 0},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, 1e-6, 0},
  };
}

/// n float32 values in [-8, 8), led by the special values each kernel must treat as the
/// reference does (NaN, infinities, signed zeros, tiny and large magnitudes).
Tensor inputs(int64_t n, DType dtype = DType::Float32, uint64_t seed = 1) {
  std::vector<double> v = random_values(static_cast<size_t>(n), seed, -8, 8);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> special = {nan, inf,  -inf, 0.0, -0.0, 1e-8, -1e-8, 1e-30, -1e-30, 3,
                                       -3,  19.5, 20.5, 30,  -30,  100,  -100,  1e30,  -1e30};
  for (size_t i = 0; i < special.size() && i < v.size(); ++i) v[i] = special[i];
  return make_tensor(v, {n}, dtype);
}

/// got and want agree within the tolerance, NaN with NaN and infinities exactly.
void expect_near(const Tensor& got, const Tensor& want, double rtol, double atol,
                 const std::string& what) {
  SCOPED_TRACE(what);
  expect_close(got, want.sizes(), to_doubles(want), rtol, atol);
}

/// got and want hold the same bits (the call was handed on to the reference).
void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.contiguous(), w = want.contiguous();
  EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), g.numel() * g.element_size()), 0) << what;
}

/// True when a and b differ in at least one bit: oneDNN's polynomials round differently
/// from the reference's libm calls somewhere in a large input, which shows oneDNN ran.
bool differs(const Tensor& a, const Tensor& b) {
  return std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) != 0;
}

class OnednnEltwise : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { load_onednn(); }
};

TEST_F(OnednnEltwise, LargeCallsMatchTheReference) {
  const Tensor x = inputs(kBig);
  for (const Activation& a : activations()) {
    const Tensor want = with_provider("reference", [&] { return a.fn(x); });
    const Tensor got = with_provider("onednn", [&] { return a.fn(x); });
    expect_near(got, want, a.rtol, a.atol, a.name);
    EXPECT_TRUE(got.is_contiguous()) << a.name;
  }
}

TEST_F(OnednnEltwise, OnednnComputesLargeCalls) {
  const Tensor x = inputs(kBig);
  for (const char* name : {"tanh", "gelu", "silu", "mish", "elu"}) {
    for (const Activation& a : activations()) {
      if (a.name != name) continue;
      const Tensor want = with_provider("reference", [&] { return a.fn(x); });
      const Tensor got = with_provider("onednn", [&] { return a.fn(x); });
      EXPECT_TRUE(differs(got, want)) << name << ": no bit differs; was oneDNN bypassed?";
    }
  }
}

TEST_F(OnednnEltwise, SmallNonContiguousAndDoubleCallsAreTheReference) {
  const Tensor small = inputs(kSmall);
  const Tensor strided = make_tensor(random_values(static_cast<size_t>(kBig), 2, -8, 8),
                                     {kBig / 64, 64}, DType::Float32, /*strided=*/true);
  const Tensor dbl = inputs(kBig, DType::Float64);
  for (const Activation& a : activations()) {
    for (const Tensor* x : {&small, &strided, &dbl}) {
      const Tensor want = with_provider("reference", [&] { return a.fn(*x); });
      const Tensor got = with_provider("onednn", [&] { return a.fn(*x); });
      expect_identical(got, want, a.name + " of " + x->describe());
    }
  }
}

TEST_F(OnednnEltwise, DensePermutedInputsAreTakenAndKeepTheirLayout) {
  // A transposed (channels-last-like) dense input runs as one flat line; the result is laid
  // out as the input, as the reference lays it out.
  const Tensor transposed = inputs(kBig).view({512, kBig / 512}).transpose(0, 1);
  for (const Activation& a : activations()) {
    const Tensor want = with_provider("reference", [&] { return a.fn(transposed); });
    const Tensor got = with_provider("onednn", [&] { return a.fn(transposed); });
    EXPECT_EQ(got.strides().vec(), want.strides().vec()) << a.name;
    expect_near(got, want, a.rtol, a.atol, a.name + " of a transposed input");
  }
}

TEST_F(OnednnEltwise, ParametersOutsideOnednnAreTheReference) {
  const Tensor x = inputs(kBig);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> calls = {
      {"elu scale 2", [&] { return elu(x, 1, 2); }},
      {"elu input_scale 0.5", [&] { return elu(x, 1, 1, 0.5); }},
      // x holds a NaN, which oneDNN's relu, clip and exp would not keep (Note [Eltwise domain]).
      {"relu", [&] { return relu(x); }},
      {"relu6", [&] { return relu6(x); }},
      {"hardtanh", [&] { return hardtanh(x); }},
      {"clamp", [&] { return clamp(x, Scalar(-1), Scalar(1)); }},
      {"exp", [&] { return exp(x); }},
      // Not taken at all.
      {"log", [&] { return log(x); }},
      {"softplus", [&] { return softplus(x); }},
  };
  for (const auto& [what, f] : calls) {
    expect_identical(with_provider("onednn", f), with_provider("reference", f), what);
  }
}

/// The ops that scan for a NaN first (Note [Eltwise domain]), as the suite calls them.
std::vector<Activation> nan_scanning() {
  return {
      {"relu", [](const Tensor& x) { return relu(x); }, 0, 0},
      {"relu_", [](const Tensor& x) { return relu_(x.clone()); }, 0, 0},
      {"relu6", [](const Tensor& x) { return relu6(x); }, 0, 0},
      {"relu6_", [](const Tensor& x) { return relu6_(x.clone()); }, 0, 0},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x, -2, 3); }, 0, 0},
      {"hardtanh_", [](const Tensor& x) { return hardtanh_(x.clone()); }, 0, 0},
      {"hardtanh.out",
       [](const Tensor& x) { return hardtanh_out(Tensor::empty(x.sizes()), x, -0.5, 0.5); }, 0, 0},
      {"clamp", [](const Tensor& x) { return clamp(x, Scalar(-1), Scalar(2)); }, 0, 0},
      {"clamp min", [](const Tensor& x) { return clamp(x, Scalar(0.5)); }, 0, 0},
      {"clamp max", [](const Tensor& x) { return clamp(x, std::nullopt, Scalar(-0.5)); }, 0, 0},
      {"clamp int bounds", [](const Tensor& x) { return clamp(x, Scalar(-3), Scalar(3)); }, 0, 0},
      {"clamp_", [](const Tensor& x) { return clamp_(x.clone(), Scalar(-1), Scalar(1)); }, 0, 0},
      {"clamp.out",
       [](const Tensor& x) { return clamp_out(Tensor::empty(x.sizes()), x, Scalar(0), Scalar(1)); },
       0, 0},
      // oneDNN's exp gives 0 below -87.3, where libm's gives a subnormal (under 1.2e-38).
      {"exp", [](const Tensor& x) { return exp(x); }, 1e-6, 1.2e-38},
      {"exp_", [](const Tensor& x) { return exp_(x.clone()); }, 1e-6, 1.2e-38},
      {"exp.out", [](const Tensor& x) { return exp_out(Tensor::empty(x.sizes()), x); }, 1e-6,
       1.2e-38},
  };
}

/// True for the functional form of an op (not name_ or name.out).
bool functional(const Activation& a) {
  return a.name.find('_') == std::string::npos && a.name.find(".out") == std::string::npos;
}

/// inputs(n) without its NaN.
Tensor nan_free_inputs(int64_t n) {
  const Tensor x = inputs(n);
  static_cast<float*>(x.data_ptr())[0] = 0.25f;
  return x;
}

TEST_F(OnednnEltwise, NanScanningOpsMatchTheReferenceWithoutNan) {
  const Tensor x = nan_free_inputs(kBig);
  for (const Activation& a : nan_scanning()) {
    const Tensor want = with_provider("reference", [&] { return a.fn(x); });
    const Tensor got = with_provider("onednn", [&] { return a.fn(x); });
    expect_near(got, want, a.rtol, a.atol, a.name);
  }
  // exp's polynomial rounds differently from libm's exp somewhere: oneDNN ran.
  EXPECT_TRUE(differs(with_provider("onednn", [&] { return exp(x); }),
                      with_provider("reference", [&] { return exp(x); })));
  // Bounds the reference orders its own way: min > max, a NaN bound.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<std::string, std::function<Tensor()>>> calls = {
      {"clamp min > max", [&] { return clamp(x, Scalar(1), Scalar(-1)); }},
      {"clamp NaN min", [&] { return clamp(x, Scalar(nan), Scalar(1)); }},
      {"hardtanh NaN max", [&] { return hardtanh(x, -1, nan); }},
      {"hardtanh min > max", [&] { return hardtanh(x, 2, 1); }},
  };
  for (const auto& [what, f] : calls) {
    expect_identical(with_provider("onednn", f), with_provider("reference", f), what);
  }
  // Small and float64 calls go to the reference; a dense transposed input is taken, its
  // result laid out as it is.
  const Tensor small = nan_free_inputs(kSmall);
  const Tensor transposed = x.view({512, kBig / 512}).transpose(0, 1);
  const Tensor dbl = x.to(DType::Float64);
  for (const Activation& a : nan_scanning()) {
    if (!functional(a)) continue;  // the others make contiguous copies
    for (const Tensor* t : {&small, &dbl}) {
      const Tensor want = with_provider("reference", [&] { return a.fn(*t); });
      const Tensor got = with_provider("onednn", [&] { return a.fn(*t); });
      expect_identical(got, want, a.name + " of " + t->describe());
    }
    const Tensor want = with_provider("reference", [&] { return a.fn(transposed); });
    const Tensor got = with_provider("onednn", [&] { return a.fn(transposed); });
    EXPECT_EQ(got.strides().vec(), want.strides().vec()) << a.name;
    expect_near(got, want, a.rtol, a.atol, a.name + " of a transposed input");
  }
}

TEST_F(OnednnEltwise, InPlaceAndOutForms) {
  const Tensor x = inputs(kBig);
  using Inplace = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, Inplace>> inplace = {
      {"tanh_", [](const Tensor& t) { return tanh_(t); }},
      {"sigmoid_", [](const Tensor& t) { return sigmoid_(t); }},
      {"silu_", [](const Tensor& t) { return silu_(t); }},
      {"gelu_", [](const Tensor& t) { return gelu_(t, "tanh"); }},
      {"leaky_relu_", [](const Tensor& t) { return leaky_relu_(t, 0.1); }},
      {"elu_", [](const Tensor& t) { return elu_(t); }},
      {"sqrt_", [](const Tensor& t) { return sqrt_(t); }},
  };
  for (const auto& [what, f] : inplace) {
    const Tensor want = x.clone(), got = x.clone();
    with_provider("reference", [&] { return f(want); });
    const uint32_t v0 = got.version();
    const Tensor r = with_provider("onednn", [&] { return f(got); });
    EXPECT_EQ(r.data_ptr(), got.data_ptr()) << what << " returns self";
    EXPECT_GT(got.version(), v0) << what << " bumps self's version";
    expect_near(got, want, 1e-5, 1e-6, what);
  }
  using Out = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Out>> outs = {
      {"tanh.out", [](const Tensor& s, const Tensor& o) { return tanh_out(o, s); }},
      {"gelu.out", [](const Tensor& s, const Tensor& o) { return gelu_out(o, s); }},
      {"leaky_relu.out", [](const Tensor& s, const Tensor& o) { return leaky_relu_out(o, s); }},
      {"elu.out", [](const Tensor& s, const Tensor& o) { return elu_out(o, s); }},
      {"mish.out", [](const Tensor& s, const Tensor& o) { return mish_out(o, s); }},
      {"abs.out", [](const Tensor& s, const Tensor& o) { return abs_out(o, s); }},
  };
  for (const auto& [what, f] : outs) {
    const Tensor want = Tensor::empty({kBig}), got = Tensor::empty({kBig});
    with_provider("reference", [&] { return f(x, want); });
    const uint32_t v0 = got.version();
    const Tensor r = with_provider("onednn", [&] { return f(x, got); });
    EXPECT_EQ(r.data_ptr(), got.data_ptr()) << what << " returns out";
    EXPECT_GT(got.version(), v0) << what << " bumps out's version";
    expect_near(got, want, 1e-5, 1e-6, what);
  }
  // An out of another shape is the reference's to resize or reject.
  auto wrong_out = [&](const std::string& provider) {
    Tensor out = Tensor::empty({3});
    std::string error;
    try {
      with_provider(provider, [&] { return tanh_out(out, x); });
    } catch (const Error& e) {
      error = e.what();
    }
    return std::make_pair(out, error);
  };
  const auto [got_out, got_error] = wrong_out("onednn");
  const auto [want_out, want_error] = wrong_out("reference");
  EXPECT_EQ(got_error, want_error);
  expect_identical(got_out, want_out, "tanh.out into a [3] out");
}

TEST_F(OnednnEltwise, MalformedCallsGetTheReferenceError) {
  const Tensor x = inputs(kBig);
  const Tensor ints = make_tensor(std::vector<double>(kBig, 1), {kBig}, DType::Int64);
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"gelu approximate", [&] { gelu(x, "fast"); }},
      {"gelu_ approximate", [&] { gelu_(x.clone(), "fast"); }},
      {"leaky_relu on int64", [&] { leaky_relu(ints); }},
      {"silu on int64", [&] { silu(ints); }},
  };
  expect_reference_errors(calls);
}

TEST_F(OnednnEltwise, GradientsMatchTheReference) {
  // No NaN or infinity here: the gradients' formulas are the same ops under both providers.
  const Tensor base = make_tensor(random_values(static_cast<size_t>(kBig), 3, -6, 6), {kBig});
  std::vector<Activation> all = activations();
  for (const Activation& a : nan_scanning()) {
    if (functional(a)) all.push_back(a);  // autograd refuses in-place ops on a leaf
  }
  for (const Activation& a : all) {
    auto grad_of = [&](const std::string& provider) {
      return with_provider(provider, [&] {
        const Tensor x = base.clone().requires_grad_();
        a.fn(x).sum().backward();
        return x.grad();
      });
    };
    expect_near(grad_of("onednn"), grad_of("reference"), 1e-4, 1e-5, a.name + " gradient");
  }
}

}  // namespace
}  // namespace loom::testing
