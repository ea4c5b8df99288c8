// The onednn provider's add, sub, mul and div (plugins/cpu_onednn/binary.cpp) against the
// reference kernels: same shapes and broadcasts either way round, small, non-contiguous,
// float64 and mixed-dtype calls (handed on), alphas, in-place and out= forms, malformed
// calls (the reference's error word for word), and gradients through both.
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

/// Rows of 256 columns: kRows * 256 is above every threshold of binary.cpp.
constexpr int64_t kRows = 1024;
constexpr int64_t kCols = 256;

Tensor values(IntArrayRef sizes, uint64_t seed, DType dtype = DType::Float32,
              bool strided = false) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v = random_values(static_cast<size_t>(n), seed, -4, 4);
  // IEEE cases every kernel must agree on: NaN, infinities, zeros of both signs.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> special = {nan, inf, -inf, 0.0, -0.0, 1e-30, 1e30};
  for (size_t i = 0; i < special.size() && i < v.size(); ++i) v[i * 7 % v.size()] = special[i];
  return make_tensor(v, sizes, dtype, strided);
}

void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.contiguous(), w = want.contiguous();
  EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), g.numel() * g.element_size()), 0) << what;
}

/// add, sub, mul and div are correctly rounded in both providers: the same bits, NaN included.
void expect_same_values(const Tensor& got, const Tensor& want, const std::string& what) {
  SCOPED_TRACE(what);
  expect_close(got, want.sizes(), to_doubles(want), 0, 0);
}

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

std::vector<std::pair<std::string, Binary>> binaries() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"add alpha -1", [](const Tensor& a, const Tensor& b) { return add(a, b, -1); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"sub alpha -1", [](const Tensor& a, const Tensor& b) { return sub(a, b, -1); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"div mode None", [](const Tensor& a, const Tensor& b) { return div(a, b, std::nullopt); }},
  };
}

class OnednnBinary : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { load_onednn(); }
};

TEST_F(OnednnBinary, SameShapesAndBroadcastsMatchTheReference) {
  const Tensor a = values({kRows, kCols}, 1);
  // Each pair: other broadcasts to self (oneDNN's src1), self broadcasts to other (swapped
  // for add and mul, handed on for sub and div), both broadcast (handed on), 0-d.
  const std::vector<std::pair<Tensor, Tensor>> pairs = {
      {a, values({kRows, kCols}, 2)},
      {a, values({kCols}, 3)},
      {a, values({kRows, 1}, 4)},
      {a, values({1, 1}, 5)},
      {a, make_tensor({2.5}, {})},
      {values({kCols}, 6), a},
      {values({kRows, 1}, 7), a},
      {values({kRows, 1, kCols}, 8), values({1, 4, kCols}, 9)},
      {values({4, kRows / 4, kCols}, 10), values({kRows / 4, 1}, 11)},
  };
  for (const auto& [name, f] : binaries()) {
    for (const auto& [x, y] : pairs) {
      const Tensor want = with_provider("reference", [&] { return f(x, y); });
      const Tensor got = with_provider("onednn", [&] { return f(x, y); });
      expect_same_values(got, want, name + " of " + x.describe() + " and " + y.describe());
    }
  }
}

TEST_F(OnednnBinary, CallsOutsideOnednnAreTheReference) {
  const Tensor a = values({kRows, kCols}, 1), b = values({kRows, kCols}, 2);
  const std::vector<std::pair<std::string, std::function<Tensor()>>> calls = {
      {"small",
       [&] {
         return add(values({4, 4}, 3), values({4}, 4));
       }},
      {"non-contiguous self",
       [&] {
         return mul(values({kRows, kCols}, 5, DType::Float32, true), b);
       }},
      {"transposed other",
       [&] {
         return sub(a, values({kCols, kRows}, 6).transpose(0, 1));
       }},
      {"float64",
       [&] {
         return div(values({kRows, kCols}, 7, DType::Float64), values({kCols}, 8, DType::Float64));
       }},
      {"float32 + float64",
       [&] {
         return add(a, values({kRows, kCols}, 9, DType::Float64));
       }},
      {"float32 * int64",
       [&] { return mul(a, make_tensor(std::vector<double>(kCols, 3), {kCols}, DType::Int64)); }},
      {"float32 + 0-d float64", [&] { return add(a, make_tensor({0.1}, {}, DType::Float64)); }},
      {"add alpha 2", [&] { return add(a, b, 2); }},
      {"sub alpha 0.5", [&] { return sub(a, b, 0.5); }},
      {"div floor", [&] { return div(a, b, "floor"); }},
      {"div trunc", [&] { return div(a, b, "trunc"); }},
  };
  for (const auto& [what, f] : calls) {
    expect_identical(with_provider("onednn", f), with_provider("reference", f), what);
  }
}

TEST_F(OnednnBinary, InPlaceAndOutForms) {
  const Tensor a = values({kRows, kCols}, 1), row = values({kCols}, 2);
  using Inplace = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Inplace>> inplace = {
      {"add_", [](const Tensor& s, const Tensor& o) { return add_(s, o); }},
      {"sub_", [](const Tensor& s, const Tensor& o) { return sub_(s, o); }},
      {"mul_", [](const Tensor& s, const Tensor& o) { return mul_(s, o); }},
      {"div_", [](const Tensor& s, const Tensor& o) { return div_(s, o); }},
  };
  for (const auto& [what, f] : inplace) {
    const Tensor want = a.clone(), got = a.clone();
    with_provider("reference", [&] { return f(want, row); });
    const uint32_t v0 = got.version();
    const Tensor r = with_provider("onednn", [&] { return f(got, row); });
    EXPECT_EQ(r.data_ptr(), got.data_ptr()) << what << " returns self";
    EXPECT_GT(got.version(), v0) << what << " bumps self's version";
    expect_same_values(got, want, what);
    // x op= x reads and writes the same elements.
    const Tensor want2 = a.clone(), got2 = a.clone();
    with_provider("reference", [&] { return f(want2, want2); });
    with_provider("onednn", [&] { return f(got2, got2); });
    expect_same_values(got2, want2, what + " with itself");
  }
  using Out = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Out>> outs = {
      {"add.out",
       [](const Tensor& s, const Tensor& o, const Tensor& out) { return add_out(out, s, o); }},
      {"sub.out",
       [](const Tensor& s, const Tensor& o, const Tensor& out) { return sub_out(out, s, o); }},
      {"mul.out",
       [](const Tensor& s, const Tensor& o, const Tensor& out) { return mul_out(out, s, o); }},
      {"div.out",
       [](const Tensor& s, const Tensor& o, const Tensor& out) { return div_out(out, s, o); }},
  };
  for (const auto& [what, f] : outs) {
    const Tensor want = Tensor::empty({kRows, kCols}), got = Tensor::empty({kRows, kCols});
    with_provider("reference", [&] { return f(a, row, want); });
    const uint32_t v0 = got.version();
    const Tensor r = with_provider("onednn", [&] { return f(a, row, got); });
    EXPECT_EQ(r.data_ptr(), got.data_ptr()) << what << " returns out";
    EXPECT_GT(got.version(), v0) << what << " bumps out's version";
    expect_same_values(got, want, what);
  }
}

TEST_F(OnednnBinary, MalformedCallsGetTheReferenceError) {
  const Tensor a = values({kRows, kCols}, 1), row = values({kCols}, 2);
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"shapes that do not broadcast",
       [&] {
         add(a, values({kRows, 3}, 3));
       }},
      {"in place onto a smaller self", [&] { add_(row.clone(), a); }},
      {"in place growing self's rank",
       [&] {
         mul_(a.clone(), values({1, kRows, kCols}, 4));
       }},
      {"bool alpha", [&] { add(a, a, true); }},
      {"bad rounding mode", [&] { div(a, a, "round"); }},
      {"out of a wrong dtype",
       [&] {
         add_out(Tensor::empty({kRows, kCols}, TensorOptions{}.with(DType::Int64)), a, a);
       }},
      // Note [Memory overlap]: partly shared memory is refused, not computed in some order.
      {"in place onto a partly overlapping input",
       [&] {
         const Tensor x = a.clone();
         mul_(x.narrow(0, 1, kRows - 1), x.narrow(0, 0, kRows - 1));
       }},
      {"out= partly overlapping an input",
       [&] {
         const Tensor x = a.clone();
         add_out(x.narrow(0, 0, kRows - 1), x.narrow(0, 1, kRows - 1), row);
       }},
      {"in place onto a broadcast self", [&] { add_(row.expand({kRows, kCols}), a); }},
  };
  expect_reference_errors(calls);
}

TEST_F(OnednnBinary, GradientsMatchTheReference) {
  const Tensor a0 = make_tensor(random_values(kRows * kCols, 1, 0.5, 2), {kRows, kCols});
  const Tensor b0 = make_tensor(random_values(kCols, 2, 0.5, 2), {kCols});
  for (const auto& [name, f] : binaries()) {
    auto grads = [&](const std::string& provider) {
      return with_provider(provider, [&] {
        const Tensor a = a0.clone().requires_grad_(), b = b0.clone().requires_grad_();
        f(a, b).sum().backward();
        return std::make_pair(a.grad(), b.grad());
      });
    };
    const auto [ga, gb] = grads("onednn");
    const auto [wa, wb] = grads("reference");
    expect_allclose(ga, wa, 1e-5, 1e-6, name + " grad self");
    expect_allclose(gb, wb, 1e-4, 1e-4, name + " grad other");
  }
}

}  // namespace
}  // namespace loom::testing
