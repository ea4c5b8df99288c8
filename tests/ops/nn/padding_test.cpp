// Padding of ops_nn against a float64 oracle written here (each mode by its definition:
// out[j] reads in[j - pad_left], reflected, clamped or wrapped), plus values printed by
// PyTorch for the awkward cases (negative pads mixed with positive ones). Batched and
// unbatched inputs, 1-3 padded dims, strided inputs, integer / bool / 16-bit dtypes, the
// backward ops against finite differences of the oracle, pad (F.pad) routing, and
// PyTorch's error messages.
#include "loom/ops/nn/padding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "ops_test_util.h"
#include "test_util.h"

namespace loom {
namespace {

using testing::contains;
using testing::expect_close;
using testing::make_tensor;
using testing::message_of;
using testing::random_values;
using testing::to_doubles;
using Vec = std::vector<double>;
using Sizes = std::vector<int64_t>;

class PaddingTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::load_ops_nn(); }
};

enum class Mode { Constant, Reflect, Replicate, Circular };

struct Padded {
  Sizes sizes;
  Vec values;
};

/// The oracle. pad lists the last dim first; negative pads crop.
Padded pad_ref(const Vec& x, const Sizes& sizes, const Sizes& pad, Mode mode, double value = 0) {
  const auto nd = static_cast<int64_t>(sizes.size());
  Sizes pl(nd, 0), pr(nd, 0);
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    pl[nd - 1 - i] = pad[2 * i];
    pr[nd - 1 - i] = pad[2 * i + 1];
  }
  Padded r;
  int64_t total = 1;
  for (int64_t d = 0; d < nd; ++d) {
    r.sizes.push_back(sizes[d] + pl[d] + pr[d]);
    total *= r.sizes.back();
  }
  Sizes j(nd, 0);
  for (int64_t k = 0; k < total; ++k) {
    int64_t off = 0;
    bool inside = true;
    for (int64_t d = 0; d < nd; ++d) {
      const int64_t n = sizes[d];
      int64_t i = j[d] - pl[d];
      switch (mode) {
        case Mode::Constant:
          inside = inside && i >= 0 && i < n;
          break;
        case Mode::Reflect:
          if (i < 0) i = -i;
          if (i >= n) i = 2 * (n - 1) - i;
          break;
        case Mode::Replicate:
          i = std::clamp<int64_t>(i, 0, n - 1);
          break;
        case Mode::Circular: {
          // Crop by the negative pads, then wrap the positive ones around what is left.
          const int64_t start = std::max<int64_t>(0, -pl[d]);
          const int64_t kept = n - start - std::max<int64_t>(0, -pr[d]);
          const int64_t t = j[d] - std::max<int64_t>(0, pl[d]);
          i = start + ((t % kept) + kept) % kept;
          break;
        }
      }
      off = off * n + i;
    }
    r.values.push_back(inside ? x[off] : value);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++j[d] < r.sizes[d]) break;
      j[d] = 0;
    }
  }
  return r;
}

void expect_pad(const Tensor& got, const Vec& x, const Sizes& sizes, const Sizes& pad, Mode mode,
                double value = 0) {
  const Padded want = pad_ref(x, sizes, pad, mode, value);
  expect_close(got, want.sizes, want.values, 0, 0);
}

Vec arange(int64_t n) {
  Vec v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return v;
}

TEST_F(PaddingTest, ConstantPadMatchesOracle) {
  const Sizes sizes{2, 3, 4};
  const Vec x = random_values(24, 1);
  for (const Sizes& p : {Sizes{1, 2}, Sizes{0, 0, 2, 1}, Sizes{1, 1, 1, 1, 1, 1}, Sizes{-1, 2},
                         Sizes{-2, -1, 1, -1}, Sizes{2, -3, 0, 0, -1, 1}, Sizes{}, Sizes{-4, 0}}) {
    SCOPED_TRACE(sizes_str(p));
    for (bool strided : {false, true}) {
      expect_pad(constant_pad_nd(make_tensor(x, sizes, DType::Float64, strided), p, 2.5), x, sizes,
                 p, Mode::Constant, 2.5);
    }
    expect_pad(pad(make_tensor(x, sizes, DType::Float64), p, "constant", -1.0), x, sizes, p,
               Mode::Constant, -1.0);
  }
  // The value is converted to the dtype (2.7 truncates to 2 for int64, as PyTorch).
  expect_close(constant_pad_nd(make_tensor({0, 1, 2}, {3}, DType::Int64), {1, 1}, 2.7), {5},
               {2, 0, 1, 2, 2}, 0, 0);
  expect_close(constant_pad_nd(make_tensor({1, 0}, {2}, DType::Bool), {1, 0}, true), {3}, {1, 1, 0},
               0, 0);
  expect_close(constant_pad_nd(make_tensor({1.5, -2}, {2}, DType::Float16), {0, 2}), {4},
               {1.5, -2, 0, 0}, 0, 0);
  const Tensor scalar = constant_pad_nd(make_tensor({3}, {}, DType::Float32), {});
  expect_close(scalar, {}, {3}, 0, 0);
}

TEST_F(PaddingTest, ConstantPadErrors) {
  const Tensor x = make_tensor(arange(6), {1, 2, 3});
  EXPECT_EQ(message_of([&] {
              constant_pad_nd(x, {1, 2, 3});
            }),
            "constant_pad_nd: Length of pad must be even but instead it equals 3");
  EXPECT_TRUE(contains(message_of([&] {
                         constant_pad_nd(x, {1, 1, 1, 1, 1, 1, 1, 1});
                       }),
                       "Length of pad should be no more than twice the number of dimensions of "
                       "the input. Pad length is 8 while the input has 3 dimensions."));
  EXPECT_TRUE(contains(message_of([&] {
                         constant_pad_nd(x, {-2, -2});
                       }),
                       "constant_pad_nd: The input size 3, plus negative padding -2 and -2 "
                       "resulted in a negative "
                       "output size, which is invalid. Check dimension 2 of your input."));
}

// Note [Result sizes that overflow]: pads whose sum with the size overflows int64 used to wrap
// and read as "negative padding"; sizes that fit but multiply past int64 were reported by empty.
TEST_F(PaddingTest, PaddedSizesThatOverflowSayso) {
  const Tensor x = make_tensor({1, 2}, {1, 2}, DType::Float32);
  constexpr int64_t kHuge = int64_t{1} << 62, kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(message_of([&] {
              pad(x, {kHuge, kHuge});
            }),
            "constant_pad_nd: the result size overflows int64 (the padded size of dimension 1: "
            "2 + 4611686018427387904 + 4611686018427387904)");
  EXPECT_EQ(message_of([&] {
              constant_pad_nd(x, {kMax, 1});
            }),
            "constant_pad_nd: the result size overflows int64 (the padded size of dimension 1: "
            "2 + 9223372036854775807 + 1)");
  EXPECT_EQ(message_of([&] {
              constant_pad_nd(x, {int64_t{1} << 40, 0, int64_t{1} << 40, 0});
            }),
            "constant_pad_nd: the result size overflows int64 (the number of elements of sizes "
            "[1099511627777, 1099511627778])");
  const Tensor x3 = make_tensor({1, 2, 3}, {1, 1, 3}, DType::Float32);
  EXPECT_EQ(message_of([&] {
              pad(x3, {kHuge, kHuge}, "replicate");
            }),
            "replication_pad1d: the result size overflows int64 (the padded size of dimension 2: "
            "3 + 4611686018427387904 + 4611686018427387904)");
  EXPECT_EQ(message_of([&] {
              pad(x3, {kMax, kMax}, "circular");
            }),
            "_pad_circular: Padding value causes wrapping around more than once.");
  // A crop by INT64_MIN that a huge right pad makes up for is not negated (undefined).
  EXPECT_EQ(to_doubles(constant_pad_nd(x3, {std::numeric_limits<int64_t>::min(), kMax - 1})),
            Vec{0});
}

// Note [Checked scalar conversion]: the value is written into self's dtype.
TEST_F(PaddingTest, ConstantPadValueMustFitTheDtype) {
  const Tensor i8 = make_tensor({1, 2}, {2}, DType::Int8);
  EXPECT_EQ(message_of([&] {
              constant_pad_nd(i8, {1, 1}, 300);
            }),
            "constant_pad_nd: value cannot be converted to type int8_t without overflow");
  EXPECT_EQ(message_of([&] {
              pad(make_tensor({1}, {1}, DType::Float16), {1, 0}, "constant", 1e5);
            }),
            "constant_pad_nd: value cannot be converted to type at::Half without overflow");
  expect_close(constant_pad_nd(i8, {1, 0}, -128), {3}, {-128, 1, 2}, 0, 0);
}

TEST_F(PaddingTest, ReflectionAndReplicationMatchOracle) {
  struct Case {
    Sizes sizes;
    Sizes pad;
  };
  const std::vector<Case> cases{{{2, 5}, {2, 3}},
                                {{2, 3, 5}, {4, 1}},
                                {{2, 3, 5}, {-1, 2}},
                                {{1, 3, 4}, {1, 2, 2, 1}},
                                {{2, 2, 3, 4}, {3, 0, -1, 2}},
                                {{2, 4, 5}, {0, 0, 3, 3}},
                                {{2, 2, 3, 4}, {1, 1, 2, 0, 1, 1}},
                                {{1, 2, 2, 3, 4}, {-1, 2, 1, 1, 0, 1}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(sizes_str(c.sizes) + " pad " + sizes_str(c.pad));
    int64_t n = 1;
    for (int64_t s : c.sizes) n *= s;
    const Vec x = random_values(n, 2);
    const size_t k = c.pad.size() / 2;
    for (DType t : {DType::Float32, DType::Float64}) {
      const Tensor xt = make_tensor(x, c.sizes, t, /*strided=*/true);
      const Vec xv = to_doubles(xt);
      const Tensor refl = k == 1   ? reflection_pad1d(xt, c.pad)
                          : k == 2 ? reflection_pad2d(xt, c.pad)
                                   : reflection_pad3d(xt, c.pad);
      const Tensor repl = k == 1   ? replication_pad1d(xt, c.pad)
                          : k == 2 ? replication_pad2d(xt, c.pad)
                                   : replication_pad3d(xt, c.pad);
      expect_pad(refl, xv, c.sizes, c.pad, Mode::Reflect);
      expect_pad(repl, xv, c.sizes, c.pad, Mode::Replicate);
      expect_pad(pad(xt, c.pad, "reflect"), xv, c.sizes, c.pad, Mode::Reflect);
      expect_pad(pad(xt, c.pad, "replicate"), xv, c.sizes, c.pad, Mode::Replicate);
    }
  }
  // Integer dtypes are gathered as they are.
  const Tensor ints = make_tensor(arange(6), {2, 3}, DType::Int64);
  expect_pad(replication_pad1d(ints, {1, 2}), arange(6), {2, 3}, {1, 2}, Mode::Replicate);
  expect_pad(reflection_pad1d(make_tensor(arange(6), {2, 3}, DType::UInt8), {2, 2}), arange(6),
             {2, 3}, {2, 2}, Mode::Reflect);
  // An empty batch is allowed.
  EXPECT_EQ(sizes_str(reflection_pad1d(make_tensor({}, {0, 2, 3}), {1, 1}).sizes()), "[0, 2, 5]");
}

TEST_F(PaddingTest, ValuesPrintedByPyTorch) {
  const Tensor x = make_tensor(arange(12), {1, 3, 4}, DType::Float32);
  expect_close(
      reflection_pad2d(x, {2, -1, 1, 2}), {1, 6, 5},
      {6, 5, 4, 5, 6, 2, 1, 0, 1, 2, 6, 5, 4, 5, 6, 10, 9, 8, 9, 10, 6, 5, 4, 5, 6, 2, 1, 0, 1, 2},
      0, 0);
  expect_close(replication_pad2d(x, {-1, 3, 2, -1}), {1, 4, 6},
               {1, 2, 3, 3, 3, 3, 1, 2, 3, 3, 3, 3, 1, 2, 3, 3, 3, 3, 5, 6, 7, 7, 7, 7}, 0, 0);
  const Tensor x4 = make_tensor(arange(12), {1, 1, 3, 4}, DType::Float32);
  expect_close(pad_circular(x4, {1, 2, 2, 1}), {1, 1, 6, 7},
               {7, 4, 5, 6, 7, 4, 5, 11, 8, 9, 10, 11, 8, 9, 3, 0, 1, 2, 3, 0, 1,
                7, 4, 5, 6, 7, 4, 5, 11, 8, 9, 10, 11, 8, 9, 3, 0, 1, 2, 3, 0, 1},
               0, 0);
  // A crop on one side, a wrap on the other: the wrap reads the cropped tensor.
  expect_close(pad(x4, {-1, 1, 0, 0}, "circular"), {1, 1, 3, 4},
               {1, 2, 3, 1, 5, 6, 7, 5, 9, 10, 11, 9}, 0, 0);
  expect_close(reflection_pad1d(make_tensor(arange(6), {1, 2, 3}), {-1, 2}), {1, 2, 4},
               {1, 2, 1, 0, 4, 5, 4, 3}, 0, 0);
  expect_close(reflection_pad1d_backward(make_tensor(arange(7), {1, 1, 7}),
                                         make_tensor(Vec(4, 0.0), {1, 1, 4}), {2, 1}),
               {1, 1, 4}, {2, 4, 10, 5}, 0, 0);
}

TEST_F(PaddingTest, CircularMatchesOracle) {
  for (const auto& [sizes, pad_list] :
       std::vector<std::pair<Sizes, Sizes>>{{{2, 5}, {2, 3}},
                                            {{2, 3, 5}, {3, -2}},
                                            {{1, 2, 3, 4}, {1, 2, 3, 0}},
                                            {{2, 3, 4}, {-1, 1, 2, -1}},
                                            {{1, 1, 2, 3, 4}, {1, 1, 1, 1, 2, 2}}}) {
    SCOPED_TRACE(sizes_str(sizes) + " pad " + sizes_str(pad_list));
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    const Vec x = random_values(n, 3);
    expect_pad(pad(make_tensor(x, sizes, DType::Float64, true), pad_list, "circular"), x, sizes,
               pad_list, Mode::Circular);
  }
}

TEST_F(PaddingTest, BackwardMatchesFiniteDifferences) {
  struct Case {
    Sizes sizes;
    Sizes pad;
  };
  for (const Case& c : std::vector<Case>{{{2, 6}, {3, 2}},
                                         {{1, 2, 5}, {-1, 4}},
                                         {{2, 3, 4}, {2, 1, 1, 2}},
                                         {{1, 2, 4, 3}, {2, -1, 3, 1}},
                                         {{1, 3, 3, 4}, {1, 2, 2, 1, 1, 0}}}) {
    SCOPED_TRACE(sizes_str(c.sizes) + " pad " + sizes_str(c.pad));
    int64_t n = 1;
    for (int64_t s : c.sizes) n *= s;
    const Vec x = random_values(n, 4);
    const size_t k = c.pad.size() / 2;
    for (Mode mode : {Mode::Reflect, Mode::Replicate}) {
      const Padded fwd = pad_ref(x, c.sizes, c.pad, mode);
      const Vec g = random_values(fwd.values.size(), 5);
      // Finite differences of sum(pad(x) * g) through the oracle.
      Vec fd(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        auto loss = [&](double delta) {
          Vec xv = x;
          xv[i] += delta;
          const Vec y = pad_ref(xv, c.sizes, c.pad, mode).values;
          double s = 0;
          for (size_t j = 0; j < y.size(); ++j) s += y[j] * g[j];
          return s;
        };
        fd[i] = (loss(1e-6) - loss(-1e-6)) / 2e-6;
      }
      const Tensor gt = make_tensor(g, fwd.sizes, DType::Float64, /*strided=*/true);
      const Tensor self = make_tensor(x, c.sizes, DType::Float64);
      Tensor got;
      if (mode == Mode::Reflect) {
        got = k == 1   ? reflection_pad1d_backward(gt, self, c.pad)
              : k == 2 ? reflection_pad2d_backward(gt, self, c.pad)
                       : reflection_pad3d_backward(gt, self, c.pad);
      } else {
        got = k == 1   ? replication_pad1d_backward(gt, self, c.pad)
              : k == 2 ? replication_pad2d_backward(gt, self, c.pad)
                       : replication_pad3d_backward(gt, self, c.pad);
      }
      expect_close(got, c.sizes, fd, 1e-7, 1e-8);
    }
  }
}

TEST_F(PaddingTest, ReflectionAndReplicationErrors) {
  const Tensor x = make_tensor(arange(6), {1, 2, 3});
  EXPECT_EQ(message_of([&] {
              reflection_pad1d(x, {3, 0});
            }),
            "reflection_pad1d: Argument #4: Padding size should be less than the corresponding "
            "input dimension, but "
            "got: padding (3, 0) at dimension 2 of input [1, 2, 3]");
  EXPECT_EQ(message_of([&] {
              reflection_pad2d(x, {1, 1, 2, 0});
            }),
            "reflection_pad2d: Argument #6: Padding size should be less than the corresponding "
            "input dimension, but "
            "got: padding (2, 0) at dimension 1 of input [1, 2, 3]");
  EXPECT_EQ(message_of([&] {
              replication_pad1d(make_tensor({1, 2, 3}, {3}), {5, 5});
            }),
            "replication_pad1d: Expected 2D or 3D (batch mode) tensor with possibly 0 batch size "
            "and other non-zero "
            "dimensions for input, but got: [3]");
  EXPECT_TRUE(contains(message_of([&] {
                         reflection_pad1d(make_tensor({}, {2, 0}), {1, 1});
                       }),
                       "but got: [2, 0]"));
  EXPECT_EQ(message_of([&] {
              replication_pad1d(x, {-2, -2});
            }),
            "replication_pad1d: input (W: 3) is too small. Calculated output W: -1");
  EXPECT_EQ(message_of([&] {
              replication_pad2d(x, {-2, -2, -1, -1});
            }),
            "replication_pad2d: input (H: 2, W: 3) is too small. Calculated output H: 0 W: -1");
  EXPECT_EQ(message_of([&] { reflection_pad1d(x, {1}); }),
            "reflection_pad1d: padding size is expected to be 2, but got: 1");
  EXPECT_EQ(message_of([&] {
              reflection_pad1d_backward(make_tensor(arange(10), {1, 2, 5}), x, {1, 2});
            }),
            "reflection_pad1d_backward: grad_output width unexpected. Expected: 6, Got: 5");
  EXPECT_EQ(message_of([&] {
              replication_pad2d_backward(make_tensor(arange(12), {1, 3, 4}), x, {1, 0, 1, 1});
            }),
            "replication_pad2d_backward: grad_output height unexpected. Expected: 4, Got: 3");
  EXPECT_TRUE(contains(
      message_of<TypeError>([&] {
        replication_pad1d_backward(make_tensor(arange(8), {1, 2, 4}, DType::Int64), x, {1, 0});
      }),
      "expected a floating point input"));
}

TEST_F(PaddingTest, PadRoutingAndErrors) {
  const Tensor x = make_tensor(arange(6), {1, 2, 3});
  EXPECT_EQ(message_of([&] {
              pad(x, {1, 1, 1}, "reflect");
            }),
            "pad: Padding length must be divisible by 2");
  EXPECT_EQ(
      message_of([&] {
        pad(x, {1, 1, 1, 1, 1, 1, 1, 1});
      }),
      "pad: Padding length should be less than or equal to two times the input dimension but got "
      "padding length 8 and input of dimension 3");
  EXPECT_EQ(message_of([&] {
              pad(x, {1, 1}, "reflect", 2.0);
            }),
            "pad: Padding mode \"reflect\" doesn't take in value argument");
  EXPECT_EQ(message_of<NotImplementedError>([&] {
              pad(x, {1, 1}, "mirror");
            }),
            "pad: Unrecognised padding mode mirror");
  EXPECT_EQ(message_of<NotImplementedError>([&] {
              pad(make_tensor({1, 2, 3}, {3}), {1, 1}, "reflect");
            }),
            "pad: Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  EXPECT_EQ(message_of([&] {
              pad(x, {4, 1}, "circular");
            }),
            "_pad_circular: Padding value causes wrapping around more than once.");
  EXPECT_TRUE(contains(message_of([&] {
                         pad_circular(x, {1, 1, 1, 1, 1, 1});
                       }),
                       "Invalid padding size, expected 1 or 2 non-padded dimensions"));
  // A zero value is accepted by the non-constant modes.
  expect_pad(pad(x, {1, 1}, "reflect", 0.0), arange(6), {1, 2, 3}, {1, 1}, Mode::Reflect);
}

}  // namespace
}  // namespace loom
