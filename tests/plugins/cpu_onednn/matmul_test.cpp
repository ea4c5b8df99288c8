// The oneDNN matmul family (plugins/cpu_onednn/matmul.cpp) against the reference kernels:
// mm, bmm, addmm, baddbmm, the out= forms, linear and matmul on contiguous, transposed,
// strided and expanded operands, broadcast batches, with and without bias, beta and alpha;
// float64 and malformed calls handed to the reference (same result, same message); and the
// gradients of a small graph under each provider.
//
// Sizes: products of at most 4096 multiply-adds go to the reference kernel (matmul.cpp's
// kMaxReferenceMultiplyAdds), so the cases here are larger unless they test a hand-off.
//
// Tolerance: float32 sums of up to ~300 products of N(0, 1) values, accumulated in another
// order by oneDNN than by the reference GEMM: |got - want| <= 1e-4 + 1e-4 * |want|.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "loom/core/generator.h"
#include "matmul_family_test_util.h"
#include "onednn_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

class OnednnMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    load_onednn();
    Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, "");
    manual_seed(1234);
  }
};

/// f() under oneDNN and under the reference, compared.
template <typename F>
void expect_providers_agree(F&& f, const std::string& what) {
  const Tensor got = with_provider("onednn", f);
  const Tensor want = with_provider("reference", f);
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  expect_allclose(got, want, 1e-4, 1e-4, what);
}

TEST_F(OnednnMatmul, EveryOpOfTheFamilyHasAOnednnKernelAboveTheReference) {
  for (const std::string& name : matmul_family_ops()) {
    const auto kernels =
        Dispatcher::instance().kernels(Dispatcher::instance().find_op_or_throw(name));
    bool onednn = false, reference = false;
    for (const KernelInfo& k : kernels) {
      if (k.key != DispatchKey::CPU) continue;
      if (k.provider == "onednn") {
        onednn = true;
        EXPECT_EQ(k.priority, 10) << name;
        EXPECT_TRUE(k.active) << name << ": the onednn kernel is not selected by default";
      }
      reference |= k.provider == "reference";
    }
    EXPECT_TRUE(onednn) << name;
    EXPECT_TRUE(reference) << name;
  }
}

TEST_F(OnednnMatmul, MmContiguousTransposedStrided) {
  const int64_t m = 37, k = 53, n = 29;
  const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> cases = {
      {"contiguous", {randn({m, k}), randn({k, n})}},
      {"self transposed", {transposed_matrix(m, k), randn({k, n})}},
      {"mat2 transposed", {randn({m, k}), transposed_matrix(k, n)}},
      {"both transposed", {transposed_matrix(m, k), transposed_matrix(k, n)}},
      {"strided", {strided_matrix(m, k), strided_matrix(k, n)}},
      {"row of a matrix", {randn({5, 160}).narrow(0, 2, 1), randn({160, 40})}},
      {"column result", {randn({80, 60}), randn({60, 7}).narrow(1, 3, 1)}},
      {"large", {randn({128, 256}), randn({256, 96})}},
  };
  for (const auto& [what, ab] : cases) {
    const Tensor a = ab.first, b = ab.second;
    expect_providers_agree([&] { return mm(a, b); }, "mm " + what);
  }
}

TEST_F(OnednnMatmul, RepeatedShapesReuseThePrimitiveWithNewData) {
  // The second call of a shape finds its primitive in the cache; it must read the new data.
  for (int i = 0; i < 3; ++i) {
    const Tensor a = randn({40, 30}), b = randn({30, 20});
    expect_providers_agree([&] { return mm(a, b); }, "call " + std::to_string(i));
  }
}

TEST_F(OnednnMatmul, MmOutResizesAndHandsOnAliasing) {
  const Tensor a = randn({24, 24}), b = randn({24, 24});
  for (const std::vector<int64_t>& start : {std::vector<int64_t>{24, 24}, {0}, {3, 5}}) {
    auto run = [&] {
      Tensor out = Tensor::empty(start);
      Tensor r = mm_out(out, a, b);
      EXPECT_TRUE(r.is_same(out));
      return out;
    };
    expect_providers_agree(run, "mm.out from " + std::to_string(start.size()) + "-D out");
  }
  // out is an input: computed into a temporary by the reference.
  auto aliased = [&] {
    Tensor x = a.clone();
    mm_out(x, x, b);
    return x;
  };
  expect_providers_agree(aliased, "mm.out into self");
  // A strided out is written in place, its strides kept.
  auto into_view = [&] {
    Tensor big = Tensor::empty({24, 48});
    big.zero_();
    Tensor view = big.narrow(1, 0, 24);
    mm_out(view, a, b);
    return big;
  };
  expect_providers_agree(into_view, "mm.out into a view");
}

TEST_F(OnednnMatmul, BmmLayoutsAndOut) {
  const int64_t bs = 5, m = 17, k = 19, n = 23;
  const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> cases = {
      {"contiguous", {randn({bs, m, k}), randn({bs, k, n})}},
      {"transposed matrices",
       {randn({bs, k, m}).transpose(1, 2), randn({bs, n, k}).transpose(1, 2)}},
      {"batch innermost", {randn({m, bs, k}).transpose(0, 1), randn({bs, k, n})}},
      {"expanded self", {randn({1, m, k}).expand({bs, m, k}), randn({bs, k, n})}},
      {"expanded mat2", {randn({bs, m, k}), randn({1, k, n}).expand({bs, k, n})}},
      {"both expanded", {randn({1, m, k}).expand({bs, m, k}), randn({1, k, n}).expand({bs, k, n})}},
  };
  for (const auto& [what, ab] : cases) {
    const Tensor a = ab.first, b = ab.second;
    expect_providers_agree([&] { return bmm(a, b); }, "bmm " + what);
    expect_providers_agree(
        [&] {
          Tensor out = Tensor::empty({0});
          bmm_out(out, a, b);
          return out;
        },
        "bmm.out " + what);
  }
}

TEST_F(OnednnMatmul, AddmmSelfShapesBetaAlpha) {
  const int64_t m = 31, k = 27, n = 33;
  const Tensor a = randn({m, k}), b = randn({k, n});
  const std::vector<std::pair<std::string, Tensor>> selves = {
      {"[n]", randn({n})},
      {"[1, n]", randn({1, n})},
      {"[m, 1]", randn({m, 1})},
      {"[m, n]", randn({m, n})},
      {"[]", randn({})},
      {"[m, n] transposed", transposed_matrix(m, n)},
      {"[n] strided", randn({2 * n}).as_strided_view({n}, {2}, 0)},
  };
  const std::vector<std::pair<double, double>> scalars = {
      {1, 1}, {0, 1}, {0.5, 2}, {1, -3}, {0, 0.25}};
  for (const auto& [what, self] : selves) {
    for (const auto& [beta, alpha] : scalars) {
      const std::string label = "addmm self " + what + " beta " + std::to_string(beta) + " alpha " +
                                std::to_string(alpha);
      expect_providers_agree([&] { return addmm(self, a, b, beta, alpha); }, label);
      expect_providers_agree(
          [&] {
            Tensor out = Tensor::empty({0});
            addmm_out(out, self, a, b, beta, alpha);
            return out;
          },
          label + " (out=)");
    }
  }
}

TEST_F(OnednnMatmul, AddmmBetaZeroIgnoresNaN) {
  const Tensor self = Tensor::empty({16, 18});
  self.fill_(std::numeric_limits<double>::quiet_NaN());
  const Tensor a = randn({16, 20}), b = randn({20, 18});
  const Tensor got = with_provider("onednn", [&] { return addmm(self, a, b, 0, 1); });
  for (double v : to_doubles(got)) ASSERT_FALSE(std::isnan(v));
  expect_providers_agree([&] { return addmm(self, a, b, 0, 1); }, "beta 0 with NaN self");
  expect_providers_agree([&] { return addmm(self, a, b, 1, 1); }, "beta 1 with NaN self");
}

TEST_F(OnednnMatmul, AddmmOutIntoSelf) {
  const Tensor a = randn({20, 16}), b = randn({16, 20}), c = randn({20, 20});
  for (const auto& [beta, alpha] :
       std::vector<std::pair<double, double>>{{1, 1}, {0.5, 2}, {0, 1}}) {
    auto in_place = [&] {
      Tensor self = c.clone();
      addmm_out(self, self, a, b, beta, alpha);
      return self;
    };
    expect_providers_agree(in_place, "addmm.out into self, beta " + std::to_string(beta));
  }
  // out is mat1: the reference computes into a temporary.
  const Tensor x0 = randn({20, 20}), e = randn({20, 20});
  auto into_mat1 = [&] {
    Tensor x = x0.clone();
    addmm_out(x, c, x, e, 1, 1);
    return x;
  };
  expect_providers_agree(into_mat1, "addmm.out into mat1");
}

TEST_F(OnednnMatmul, Baddbmm) {
  const int64_t bs = 4, m = 13, k = 11, n = 15;
  const Tensor b1 = randn({bs, m, k}), b2 = randn({bs, k, n});
  const std::vector<std::pair<std::string, Tensor>> selves = {{"[n]", randn({n})},
                                                              {"[m, n]", randn({m, n})},
                                                              {"[b, m, n]", randn({bs, m, n})},
                                                              {"[b, 1, n]", randn({bs, 1, n})},
                                                              {"[1, 1, n]", randn({1, 1, n})}};
  for (const auto& [what, self] : selves) {
    for (const auto& [beta, alpha] :
         std::vector<std::pair<double, double>>{{1, 1}, {0, 1}, {2, 0.5}}) {
      expect_providers_agree([&] { return baddbmm(self, b1, b2, beta, alpha); },
                             "baddbmm self " + what + " beta " + std::to_string(beta));
    }
  }
}

TEST_F(OnednnMatmul, LinearBiasAndLayouts) {
  const Tensor w = randn({24, 40}), bias = randn({24});
  const std::vector<std::pair<std::string, Tensor>> inputs = {
      {"2-D", randn({16, 40})},
      {"3-D", randn({3, 7, 40})},
      {"3-D not mergeable", randn({7, 3, 40}).transpose(0, 1)},
      {"4-D", randn({2, 3, 5, 40})},
      {"input transposed", randn({40, 16}).t()},
  };
  for (const auto& [what, x] : inputs) {
    expect_providers_agree([&] { return linear(x, w, bias); }, "linear with bias, " + what);
    expect_providers_agree([&] { return linear(x, w); }, "linear without bias, " + what);
  }
  const Tensor x = randn({16, 40});
  const Tensor wt = randn({40, 24}).t();  // a weight that is itself a transposed view
  expect_providers_agree([&] { return linear(x, wt, bias); }, "linear, transposed weight");
  const Tensor sbias = randn({48}).as_strided_view({24}, {2}, 0);
  expect_providers_agree([&] { return linear(x, w, sbias); }, "linear, strided bias");
  const Tensor x1 = randn({40});
  expect_providers_agree([&] { return linear(x1, w, bias); }, "linear, 1-D input");
}

TEST_F(OnednnMatmul, MatmulRanksAndBroadcast) {
  const struct {
    std::vector<int64_t> a, b;
  } cases[] = {
      {{40, 30}, {30, 20}},
      {{3, 12, 10}, {10, 14}},
      {{12, 10}, {3, 10, 14}},
      {{3, 12, 10}, {3, 10, 14}},
      {{1, 12, 10}, {4, 10, 14}},
      {{4, 12, 10}, {1, 10, 14}},
      {{2, 1, 12, 10}, {3, 10, 14}},
      {{2, 3, 12, 10}, {10, 14}},
      {{10}, {10, 14}},
      {{12, 10}, {10}},
      {{10}, {10}},
      {{3, 12, 10}, {10}},
  };
  for (const auto& c : cases) {
    const Tensor a = randn(c.a), b = randn(c.b);
    const std::string what = "matmul " + sizes_str(c.a) + " @ " + sizes_str(c.b);
    expect_providers_agree([&] { return matmul(a, b); }, what);
  }
  // [B, m, k] whose batch and row dims do not merge: the 2-D weight is broadcast instead.
  const Tensor a = randn({12, 3, 10}).transpose(0, 1), b = randn({10, 14});
  expect_providers_agree([&] { return matmul(a, b); }, "matmul, batch dims not mergeable");
  // Products of more than 4096 multiply-adds each, batch broadcast.
  const Tensor p = randn({1, 40, 30}), q = randn({4, 30, 20});
  expect_providers_agree([&] { return matmul(p, q); }, "matmul [1, 40, 30] @ [4, 30, 20]");
  const Tensor pe = p.expand({4, 40, 30}), q1 = q.narrow(0, 1, 1);
  expect_providers_agree([&] { return matmul(pe, q1); },
                         "matmul [1, 40, 30] expanded to 4 @ [1, 30, 20]");
  const Tensor qt = q.transpose(1, 2), pt = p.squeeze(0).t();
  expect_providers_agree([&] { return matmul(qt, pt); }, "matmul [4, 20, 30] @ [30, 40]");
}

TEST_F(OnednnMatmul, Float64GoesToTheReference) {
  const Tensor a = randn({20, 30}, DType::Float64), b = randn({30, 10}, DType::Float64);
  const Tensor bias = randn({10}, DType::Float64), w = randn({10, 30}, DType::Float64);
  auto same = [](const Tensor& got, const Tensor& want, const std::string& what) {
    EXPECT_EQ(got.dtype(), DType::Float64) << what;
    EXPECT_EQ(to_doubles(got), to_doubles(want)) << what;  // the same kernel: bit for bit
  };
  auto both = [&](auto f, const std::string& what) {
    same(with_provider("onednn", f), with_provider("reference", f), what);
  };
  both([&] { return mm(a, b); }, "mm");
  both([&] { return addmm(bias, a, b); }, "addmm");
  both([&] { return matmul(a, b); }, "matmul");
  both([&] { return linear(a, w, bias); }, "linear");
  both([&] { return bmm(a.unsqueeze(0), b.unsqueeze(0)); }, "bmm");
}

TEST_F(OnednnMatmul, MalformedCallsGiveTheReferenceErrors) {
  const Tensor a = randn({4, 5}), b = randn({6, 7}), c3 = randn({2, 4, 5});
  const Tensor d = randn({5, 3}, DType::Float64);
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"mm shapes", [&] { mm(a, b); }},
      {"mm 3-D", [&] { mm(c3, b); }},
      {"mm dtypes", [&] { mm(a, d); }},
      {"mm.out dtype of out",
       [&] {
         mm_out(Tensor::empty({4, 3}, TensorOptions{}.with(DType::Float64)), a, randn({5, 3}));
       }},
      {"bmm shapes",
       [&] {
         bmm(c3, randn({2, 4, 5}));
       }},
      {"addmm self",
       [&] {
         addmm(randn({3, 3}), a, randn({5, 3}));
       }},
      {"baddbmm self",
       [&] {
         baddbmm(randn({2, 7}), c3, randn({2, 5, 3}));
       }},
      {"matmul batch",
       [&] {
         matmul(randn({2, 4, 5}), randn({3, 5, 4}));
       }},
      {"matmul 0-D", [&] { matmul(randn({}), a); }},
      {"linear weight 3-D",
       [&] {
         linear(a, randn({1, 3, 5}));
       }},
      {"linear shapes",
       [&] {
         linear(a, randn({3, 6}), randn({3}));
       }},
  };
  expect_reference_errors("onednn", calls);
}

TEST_F(OnednnMatmul, GradientsAgreeBetweenProviders) {
  expect_matmul_family_gradients_agree("onednn");
}

}  // namespace
}  // namespace loom::testing
