// The MKL GEMM provider (plugins/cpu_mkl/gemm.cpp) against the reference kernels: mm, bmm,
// addmm, baddbmm, the out= forms, linear and matmul on contiguous, transposed, strided and
// expanded operands, broadcast batches, bias, beta and alpha; calls outside BLAS's domain
// (float64, empty, strided both ways, tiny) handed to the next provider with the same result
// and the same errors; gradients of a small graph; the provider's place beside cpu_onednn.
//
// Each case checks that MKL really took the call (the plugin's exported call counter) where
// it should, so a kernel that handed everything on would not pass.
//
// Tolerance: float32 sums of up to ~300 products of N(0, 1) values, accumulated in another
// order by MKL than by the reference GEMM: |got - want| <= 1e-4 + 1e-4 * |want|.
#include <dlfcn.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "loom/core/generator.h"
#include "loom/dispatcher/plugin_loader.h"
#include "matmul_family_test_util.h"
#include "ops_test_util.h"
#include "provider_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

/// The plugin's count of BLAS calls (loom_cpu_mkl_gemm_calls), found in the loaded plugin.
int64_t gemm_calls() {
  const std::string path = std::string(LOOM_TEST_PLUGIN_DIR_MAIN) + "/libloom_cpu_mkl.so";
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return -1;
  auto* f = reinterpret_cast<int64_t (*)()>(dlsym(handle, "loom_cpu_mkl_gemm_calls"));
  const int64_t n = f ? f() : -1;
  dlclose(handle);
  return n;
}

class MklMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    load_ops_core();
    PluginLoader::instance().load("cpu_mkl");
    Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, "");
    manual_seed(4321);
  }
};

/// f() under MKL and under the reference, compared; expects MKL to have made `calls` BLAS
/// calls for it (0: the call is handed on).
template <typename F>
void expect_agree(F&& f, const std::string& what, int64_t calls = 1) {
  const int64_t before = gemm_calls();
  const Tensor got = with_provider("mkl", f);
  EXPECT_EQ(gemm_calls() - before, calls) << what << ": BLAS calls";
  const Tensor want = with_provider("reference", f);
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  expect_allclose(got, want, 1e-4, 1e-4, what);
}

TEST_F(MklMatmul, TheFamilyIsRegisteredAsProviderMkl) {
  EXPECT_GE(gemm_calls(), 0) << "the plugin's counter is not found";
  for (const std::string& name : matmul_family_ops()) {
    bool mkl = false;
    for (const KernelInfo& k :
         Dispatcher::instance().kernels(Dispatcher::instance().find_op_or_throw(name))) {
      if (k.key != DispatchKey::CPU || k.provider != "mkl") continue;
      mkl = true;
      EXPECT_TRUE(k.priority == 5 || k.priority == 20) << name << ": priority " << k.priority;
      EXPECT_TRUE(k.active) << name << ": above the reference, it must be selected";
    }
    EXPECT_TRUE(mkl) << name;
  }
}

TEST_F(MklMatmul, MmLayouts) {
  const int64_t m = 37, k = 53, n = 29;
  const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> taken = {
      {"contiguous", {randn({m, k}), randn({k, n})}},
      {"self transposed", {transposed_matrix(m, k), randn({k, n})}},
      {"mat2 transposed", {randn({m, k}), transposed_matrix(k, n)}},
      {"both transposed", {transposed_matrix(m, k), transposed_matrix(k, n)}},
      {"rows of a wider matrix", {randn({m, 2 * k}).narrow(1, 3, k), randn({k, n})}},
      {"one row", {randn({5, 160}).narrow(0, 2, 1), randn({160, 40})}},
      {"one column", {randn({80, 60}), randn({60, 7}).narrow(1, 3, 1)}},
      {"large", {randn({128, 256}), randn({256, 96})}},
  };
  for (const auto& [what, ab] : taken) {
    const Tensor a = ab.first, b = ab.second;
    expect_agree([&] { return mm(a, b); }, "mm " + what);
  }
  // Strided both ways, tiny, empty, float64: handed on (same result).
  const Tensor s = strided_matrix(m, k), b = randn({k, n});
  expect_agree([&] { return mm(s, b); }, "mm strided both ways", 0);
  const Tensor t1 = randn({8, 8}), t2 = randn({8, 8});
  expect_agree([&] { return mm(t1, t2); }, "mm 8x8 (tiny)", 0);
  const Tensor e1 = randn({0, 5}), e2 = randn({5, 7});
  expect_agree([&] { return mm(e1, e2); }, "mm [0, 5] @ [5, 7]", 0);
  const Tensor z1 = randn({30, 0}), z2 = randn({0, 40});
  expect_agree([&] { return mm(z1, z2); }, "mm with k = 0", 0);
}

TEST_F(MklMatmul, Float64GoesToTheReferenceBitForBit) {
  const Tensor a = randn({20, 30}, DType::Float64), b = randn({30, 10}, DType::Float64);
  const Tensor bias = randn({10}, DType::Float64), w = randn({10, 30}, DType::Float64);
  auto both = [&](auto f, const std::string& what) {
    const int64_t before = gemm_calls();
    const Tensor got = with_provider("mkl", f), want = with_provider("reference", f);
    EXPECT_EQ(gemm_calls(), before) << what;
    EXPECT_EQ(got.dtype(), DType::Float64) << what;
    EXPECT_EQ(to_doubles(got), to_doubles(want)) << what;
  };
  both([&] { return mm(a, b); }, "mm");
  both([&] { return addmm(bias, a, b); }, "addmm");
  both([&] { return matmul(a, b); }, "matmul");
  both([&] { return linear(a, w, bias); }, "linear");
  both([&] { return bmm(a.unsqueeze(0), b.unsqueeze(0)); }, "bmm");
}

TEST_F(MklMatmul, MmOutResizesAndHandsOnAliasing) {
  const Tensor a = randn({24, 24}), b = randn({24, 24});
  for (const std::vector<int64_t>& start : {std::vector<int64_t>{24, 24}, {0}, {3, 5}}) {
    auto run = [&] {
      Tensor out = Tensor::empty(start);
      EXPECT_TRUE(mm_out(out, a, b).is_same(out));
      return out;
    };
    expect_agree(run, "mm.out from " + sizes_str(start));
  }
  auto aliased = [&] {
    Tensor x = a.clone();
    mm_out(x, x, b);
    return x;
  };
  expect_agree(aliased, "mm.out into self", 0);
  auto into_view = [&] {  // a row-major view with a wider row stride
    Tensor big = Tensor::empty({24, 48});
    big.zero_();
    mm_out(big.narrow(1, 0, 24), a, b);
    return big;
  };
  expect_agree(into_view, "mm.out into a view");
  auto into_transposed = [&] {  // a column-major out: written as C^T = B^T A^T
    Tensor big = Tensor::empty({24, 24});
    mm_out(big.t(), a, b);
    return big;
  };
  expect_agree(into_transposed, "mm.out into a transposed out");
}

TEST_F(MklMatmul, BmmLayoutsAndOut) {
  const int64_t bs = 5, m = 17, k = 19, n = 23;
  const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> cases = {
      {"contiguous", {randn({bs, m, k}), randn({bs, k, n})}},
      {"transposed matrices",
       {randn({bs, k, m}).transpose(1, 2), randn({bs, n, k}).transpose(1, 2)}},
      {"batch innermost", {randn({m, bs, k}).transpose(0, 1), randn({bs, k, n})}},
      {"expanded self", {randn({1, m, k}).expand({bs, m, k}), randn({bs, k, n})}},
      {"expanded mat2", {randn({bs, m, k}), randn({1, k, n}).expand({bs, k, n})}},
      {"batch of one", {randn({1, 70, k}), randn({1, k, n})}},
  };
  for (const auto& [what, ab] : cases) {
    const Tensor a = ab.first, b = ab.second;
    expect_agree([&] { return bmm(a, b); }, "bmm " + what);
    expect_agree(
        [&] {
          Tensor out = Tensor::empty({0});
          bmm_out(out, a, b);
          return out;
        },
        "bmm.out " + what);
  }
  // An out whose batches overlap (stride-0 batch dim) is handed on, as is a tiny batch.
  const Tensor a = randn({bs, 2, 3}), b = randn({bs, 3, 2});
  expect_agree([&] { return bmm(a, b); }, "bmm tiny", 0);
}

TEST_F(MklMatmul, AddmmSelfShapesBetaAlpha) {
  const int64_t m = 31, k = 27, n = 33;
  const Tensor a = randn({m, k}), b = randn({k, n});
  const std::vector<std::pair<std::string, Tensor>> selves = {
      {"[n]", randn({n})},         {"[1, n]", randn({1, n})},
      {"[m, 1]", randn({m, 1})},   {"[m, n]", randn({m, n})},
      {"[]", randn({})},           {"[m, n] transposed", transposed_matrix(m, n)},
      {"[n] strided", randn({2 * n}).as_strided_view({n}, {2}, 0)},
  };
  for (const auto& [what, self] : selves) {
    for (const auto& [beta, alpha] :
         std::vector<std::pair<double, double>>{{1, 1}, {0, 1}, {0.5, 2}, {1, -3}}) {
      const std::string label = "addmm self " + what + " beta " + std::to_string(beta) +
                                " alpha " + std::to_string(alpha);
      expect_agree([&] { return addmm(self, a, b, beta, alpha); }, label);
      expect_agree(
          [&] {
            Tensor out = Tensor::empty({0});
            addmm_out(out, self, a, b, beta, alpha);
            return out;
          },
          label + " (out=)");
    }
  }
  // alpha = 0: BLAS would skip the product (an infinity there gives NaN in the reference).
  expect_agree([&] { return addmm(selves[0].second, a, b, 1, 0); }, "addmm alpha 0", 0);
}

TEST_F(MklMatmul, AddmmBetaZeroIgnoresNaNAndOutIntoSelf) {
  const Tensor self = Tensor::empty({16, 18});
  self.fill_(std::numeric_limits<double>::quiet_NaN());
  const Tensor a = randn({16, 20}), b = randn({20, 18});
  const Tensor got = with_provider("mkl", [&] { return addmm(self, a, b, 0, 1); });
  for (double v : to_doubles(got)) ASSERT_FALSE(std::isnan(v));
  expect_agree([&] { return addmm(self, a, b, 0, 1); }, "beta 0 with NaN self");
  expect_agree([&] { return addmm(self, a, b, 1, 1); }, "beta 1 with NaN self");
  const Tensor c = randn({16, 18});
  for (double beta : {1.0, 0.5, 0.0}) {
    auto in_place = [&] {
      Tensor s = c.clone();
      addmm_out(s, s, a, b, beta, 2.0);
      return s;
    };
    expect_agree(in_place, "addmm.out into self, beta " + std::to_string(beta));
  }
}

TEST_F(MklMatmul, Baddbmm) {
  const int64_t bs = 4, m = 13, k = 11, n = 15;
  const Tensor b1 = randn({bs, m, k}), b2 = randn({bs, k, n});
  for (const Tensor& self : {randn({n}), randn({m, n}), randn({bs, m, n}), randn({bs, 1, n})}) {
    for (const auto& [beta, alpha] :
         std::vector<std::pair<double, double>>{{1, 1}, {0, 1}, {2, 0.5}}) {
      expect_agree([&] { return baddbmm(self, b1, b2, beta, alpha); },
                   "baddbmm self " + sizes_str(self.sizes()) + " beta " + std::to_string(beta));
    }
  }
}

TEST_F(MklMatmul, LinearBiasAndLayouts) {
  const Tensor w = randn({24, 40}), bias = randn({24});
  const std::vector<std::pair<std::string, Tensor>> inputs = {
      {"2-D", randn({16, 40})},
      {"3-D", randn({3, 7, 40})},
      {"4-D", randn({2, 3, 5, 40})},
      {"input transposed", randn({40, 16}).t()},
  };
  for (const auto& [what, x] : inputs) {
    expect_agree([&] { return linear(x, w, bias); }, "linear with bias, " + what);
    expect_agree([&] { return linear(x, w); }, "linear without bias, " + what);
  }
  const Tensor x = randn({16, 40});
  const Tensor wt = randn({40, 24}).t();
  expect_agree([&] { return linear(x, wt, bias); }, "linear, transposed weight");
  const Tensor sbias = randn({48}).as_strided_view({24}, {2}, 0);
  expect_agree([&] { return linear(x, w, sbias); }, "linear, strided bias");
  // Handed on: rows that do not merge, a 1-D input.
  const Tensor nm = randn({7, 3, 40}).transpose(0, 1);
  expect_agree([&] { return linear(nm, w, bias); }, "linear, 3-D not mergeable", 0);
  const Tensor x1 = randn({40});
  expect_agree([&] { return linear(x1, w, bias); }, "linear, 1-D input", 0);
}

TEST_F(MklMatmul, MatmulRanksAndBroadcast) {
  const struct {
    std::vector<int64_t> a, b;
    int64_t calls;
  } cases[] = {
      {{40, 30}, {30, 20}, 1},         {{3, 12, 10}, {10, 14}, 1},
      {{12, 10}, {3, 10, 14}, 1},      {{3, 12, 10}, {3, 10, 14}, 1},
      {{1, 12, 10}, {4, 10, 14}, 1},   {{4, 12, 10}, {1, 10, 14}, 1},
      {{2, 1, 12, 10}, {3, 10, 14}, 0},  // batch [2, 3] from strides that do not merge
      {{2, 3, 12, 10}, {3, 10, 14}, 0},  // mat2 broadcast over [2, 3]: strides do not merge
      {{2, 3, 12, 10}, {10, 14}, 1},
      {{10}, {10, 14}, 0},             {{12, 10}, {10}, 0},
      {{3, 12, 10}, {10}, 0},
  };
  for (const auto& c : cases) {
    const Tensor a = randn(c.a), b = randn(c.b);
    expect_agree([&] { return matmul(a, b); },
                 "matmul " + sizes_str(c.a) + " @ " + sizes_str(c.b), c.calls);
  }
  // Batch and row dims that do not merge: the 2-D operand is broadcast over the batch.
  const Tensor a = randn({12, 3, 10}).transpose(0, 1), b = randn({10, 14});
  expect_agree([&] { return matmul(a, b); }, "matmul, batch dims not mergeable");
  const Tensor q = randn({4, 30, 20});
  const Tensor qt = q.transpose(1, 2), pt = randn({40, 30}).t();
  expect_agree([&] { return matmul(qt, pt); }, "matmul [4, 20, 30] @ [30, 40] transposed");
}

TEST_F(MklMatmul, MalformedCallsGiveTheReferenceErrors) {
  const Tensor a = randn({40, 50}), b = randn({60, 70}), c3 = randn({2, 40, 50});
  const Tensor d = randn({50, 30}, DType::Float64);
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"mm shapes", [&] { mm(a, b); }},
      {"mm 3-D", [&] { mm(c3, b); }},
      {"mm dtypes", [&] { mm(a, d); }},
      {"mm.out dtype of out",
       [&] { mm_out(Tensor::empty({40, 30}, TensorOptions{}.with(DType::Float64)), a,
                    randn({50, 30})); }},
      {"bmm shapes", [&] { bmm(c3, randn({2, 40, 50})); }},
      {"addmm self", [&] { addmm(randn({3, 3}), a, randn({50, 30})); }},
      {"baddbmm self", [&] { baddbmm(randn({2, 7}), c3, randn({2, 50, 30})); }},
      {"matmul batch", [&] { matmul(randn({2, 40, 50}), randn({3, 50, 40})); }},
      {"matmul 0-D", [&] { matmul(randn({}), a); }},
      {"linear weight 3-D", [&] { linear(a, randn({1, 30, 50})); }},
      {"linear shapes", [&] { linear(a, randn({30, 60}), randn({30})); }},
  };
  expect_reference_errors("mkl", calls);
}

TEST_F(MklMatmul, GradientsAgreeBetweenProviders) {
  expect_matmul_family_gradients_agree("mkl");
}

#if LOOM_TEST_WITH_ONEDNN
// Beside cpu_onednn: mkl sits above it on Intel CPUs and below it elsewhere; either way each
// hands what it does not take to the next provider, down to the reference, and unloading
// cpu_mkl leaves oneDNN serving the calls (Note [Next provider]: the hand-off walks the chain;
// the middle of three providers once handed a float64 call to itself without end).
TEST_F(MklMatmul, BesideOnednnTheChainEndsAtTheReference) {
  PluginLoader::instance().load("cpu_onednn");
  int mkl_priority = -1, onednn_priority = -1;
  for (const KernelInfo& k :
       Dispatcher::instance().kernels(Dispatcher::instance().find_op_or_throw("aten::mm"))) {
    if (k.key != DispatchKey::CPU) continue;
    if (k.provider == "mkl") mkl_priority = k.priority;
    if (k.provider == "onednn") onednn_priority = k.priority;
  }
  __builtin_cpu_init();
  EXPECT_EQ(mkl_priority, __builtin_cpu_is("intel") ? 20 : 5);
  EXPECT_EQ(onednn_priority, 10);
  const Tensor a = randn({40, 30}), b = randn({30, 20}), d = randn({40, 30}, DType::Float64);
  const Tensor want = with_provider("reference", [&] { return mm(a, b); });
  expect_allclose(mm(a, b), want, 1e-4, 1e-4, "mm by default");
  expect_allclose(with_provider("mkl", [&] { return mm(a, b); }), want, 1e-4, 1e-4, "mm, mkl");
  expect_allclose(with_provider("onednn", [&] { return mm(a, b); }), want, 1e-4, 1e-4,
                  "mm, onednn");
  const Tensor b64 = randn({30, 20}, DType::Float64);
  EXPECT_EQ(to_doubles(with_provider("mkl", [&] { return mm(d, b64); })),
            to_doubles(with_provider("reference", [&] { return mm(d, b64); })));
  PluginLoader::instance().unload("cpu_mkl");
  expect_allclose(mm(a, b), want, 1e-4, 1e-4, "mm after unloading cpu_mkl");
  PluginLoader::instance().unload("cpu_onednn");
  PluginLoader::instance().load("cpu_mkl");
  expect_allclose(mm(a, b), want, 1e-4, 1e-4, "mm after reloading cpu_mkl");
}
#endif

}  // namespace
}  // namespace loom::testing
