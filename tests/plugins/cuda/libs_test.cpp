// The CUDA plugin's library kernels (plugins/cuda/src/libs): cuBLAS matmuls, cuDNN
// convolutions, and the own pooling, normalization, softmax, loss and embedding kernels.
// Everywhere: the plugin registers a CUDA kernel for each of these ops and exports its cuDNN
// search counter. On a GPU: each op against the reference CPU provider on random inputs
// (TF32 off; tolerances per dtype below), deterministic mode giving bit-identical results
// twice, and benchmark mode searching once per shape.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/core/backend_flags.h"
#include "loom/core/device_hooks.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/loom.h"
#include "ops_test_util.h"
// Header-only and over public ops, so it can run here on CPU tensors.
#include "../../../plugins/cuda/src/libs/einsum_by_bmm.h"
#include "../../../plugins/cuda/src/libs/pad_by_copy.h"
#include "test_util.h"

namespace loom::testing {
namespace {

/// Loads ops_core, ops_nn and cuda once; returns the cuda plugin's file.
const std::string& cuda_plugin_path() {
  static const std::string path = [] {
    load_ops_core();
    load_ops_nn();
    return PluginLoader::instance().load("cuda").path;
  }();
  return path;
}

/// "" when a CUDA device is usable, else why not.
std::string cuda_unavailable() {
  cuda_plugin_path();
  const DeviceHooks* hooks = find_device_hooks(DeviceType::from_name("cuda"));
  if (hooks == nullptr) return "the cuda plugin registered no device hooks";
  if (hooks->device_count() > 0) return "";
  return hooks->unavailable_reason().empty() ? "0 devices" : hooks->unavailable_reason();
}

#define SKIP_WITHOUT_GPU()                                                      \
  do {                                                                          \
    if (const std::string why = cuda_unavailable(); !why.empty()) {             \
      GTEST_SKIP() << "no CUDA device is available: " << why;                   \
    }                                                                           \
  } while (0)

Device gpu() { return Device(DeviceType::from_name("cuda"), 0); }

/// Backend switches for a scope, restored after.
struct Flags {
  Flags(bool deterministic, bool benchmark)
      : det(backends::deterministic()), bench(backends::benchmark()), tf32(backends::allow_tf32()) {
    backends::set_deterministic(deterministic);
    backends::set_benchmark(benchmark);
    backends::set_allow_tf32(false);
  }
  ~Flags() {
    backends::set_deterministic(det);
    backends::set_benchmark(bench);
    backends::set_allow_tf32(tf32);
  }
  bool det, bench, tf32;
};

/// A random CPU tensor (values in [-2, 2)); strided: last dim of stride 2.
Tensor rnd(IntArrayRef sizes, uint64_t seed, DType dtype = DType::Float32, bool strided = false) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return make_tensor(random_values(static_cast<size_t>(n), seed), sizes, dtype, strided);
}

Tensor cuda(const Tensor& t) { return t.to(gpu()); }
Tensor cpu(const Tensor& t) { return t.to(kCPU).contiguous(); }
/// The CPU reference of a 16-bit input is computed in float32 from the same (rounded) values.
Tensor ref(const Tensor& t) {
  return t.dtype() == DType::Float16 || t.dtype() == DType::BFloat16 ? t.to(DType::Float32) : t;
}

/// Tolerances: float32 (no TF32) 1e-4 relative, float64 1e-10, float16 1e-2, bfloat16 4e-2,
/// with an absolute part scaled by the reduction length k.
double rtol(DType d) {
  switch (d) {
    case DType::Float64:
      return 1e-10;
    case DType::Float16:
      return 1e-2;
    case DType::BFloat16:
      return 4e-2;
    default:
      return 1e-4;
  }
}

/// Expects got (any device) to match want (CPU) within the dtype's tolerance.
void expect_matches(const Tensor& got, const Tensor& want, DType d, double k = 1) {
  ASSERT_TRUE(got.defined());
  expect_close(cpu(got).to(DType::Float64), want.sizes(), to_doubles(want), rtol(d),
               rtol(d) * std::sqrt(k) * 4);
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = to_doubles(cpu(a)), y = to_doubles(cpu(b));
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::memcmp(&x[i], &y[i], sizeof(double)) != 0) return false;
  }
  return true;
}

// ---- without a GPU ----

TEST(CudaLibs, RegistersACudaKernelForEachLibraryOp) {
  cuda_plugin_path();
  const std::vector<std::string> ops = {
      "mm", "mm.out", "bmm", "bmm.out", "addmm", "addmm.out", "baddbmm", "addbmm", "dot", "mv",
      "outer", "matmul", "linear", "convolution", "convolution_backward", "conv1d", "conv2d",
      "conv1d.padding", "conv2d.padding", "conv_transpose1d", "conv_transpose2d.input",
      "max_pool2d", "max_pool2d_with_indices", "max_pool2d_with_indices_backward",
      "max_pool2d_backward", "max_pool1d", "max_pool1d_with_indices", "avg_pool2d",
      "avg_pool2d_backward", "avg_pool1d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d",
      "_adaptive_avg_pool2d_backward", "adaptive_avg_pool1d", "adaptive_max_pool2d",
      "adaptive_max_pool2d_backward", "adaptive_max_pool1d", "native_batch_norm",
      "native_batch_norm_backward", "native_layer_norm", "native_layer_norm_backward",
      "native_group_norm", "native_group_norm_backward",
      "softmax.int", "log_softmax.int", "_softmax", "_log_softmax", "_softmax_backward_data",
      "_log_softmax_backward_data", "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward",
      "nll_loss2d_backward", "mse_loss", "mse_loss_backward", "smooth_l1_loss",
      "smooth_l1_loss_backward", "huber_loss", "huber_loss_backward", "soft_margin_loss",
      "soft_margin_loss_backward", "binary_cross_entropy", "binary_cross_entropy_backward",
      "binary_cross_entropy_with_logits", "embedding",
      "embedding_dense_backward", "einsum", "constant_pad_nd"};
  for (const std::string& name : ops) {
    const auto op = Dispatcher::instance().find_op("aten::" + name);
    ASSERT_TRUE(op.has_value()) << name;
    bool found = false;
    for (const KernelInfo& k : Dispatcher::instance().kernels(*op)) {
      found |= dispatch_key_name(k.key) == "CUDA" && k.provider == "cuda";
    }
    EXPECT_TRUE(found) << "no CUDA kernel from provider cuda for aten::" << name;
  }
}

/// The plugin's cuDNN search counter, found in the loaded plugin (nullptr if not exported).
using FindCount = int64_t (*)();
FindCount find_count_fn() {
  void* lib = dlopen(cuda_plugin_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  auto* fn = reinterpret_cast<FindCount>(dlsym(lib, "loom_cuda_cudnn_find_count"));
  dlclose(lib);  // drops only the reference RTLD_NOLOAD took
  return fn;
}

TEST(CudaLibs, ExportsTheCudnnSearchCounter) {
  const FindCount fn = find_count_fn();
  ASSERT_NE(fn, nullptr) << "loom_cuda_cudnn_find_count is not exported by " << cuda_plugin_path();
  if (cuda_unavailable().empty()) return;  // a GPU run may have searched already
  EXPECT_EQ(fn(), 0);
}

/// Whether a library whose file name starts with prefix is mapped into this process.
bool mapped(const std::string& prefix) {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  char line[4096];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, maps) != nullptr) {
    const char* slash = std::strrchr(line, '/');
    found = slash != nullptr && std::strncmp(slash + 1, prefix.c_str(), prefix.size()) == 0;
  }
  std::fclose(maps);
  return found;
}

// Note [cuBLAS opened at first use]: loading the plugin and asking its hooks (what loom info
// does) must not map libcublas / libcublasLt (~150 MiB resident).
TEST(CudaLibs, LoadingThePluginDoesNotOpenCublas) {
  if (mapped("libcublas")) GTEST_SKIP() << "an earlier test of this process opened cuBLAS";
  cuda_plugin_path();
  const DeviceHooks* hooks = find_device_hooks(DeviceType::from_name("cuda"));
  ASSERT_NE(hooks, nullptr);
  bool reported = false;
  for (const auto& [key, value] : hooks->info()) {
    if (key == "cuBLAS") {
      reported = true;
      EXPECT_NE(value.find("opens at first use"), std::string::npos) << value;
    }
  }
  EXPECT_TRUE(reported) << "loom info should still name the cuBLAS version";
  EXPECT_FALSE(mapped("libcublas"));
  EXPECT_FALSE(mapped("libcublasLt"));
}

/// einsum cases: equation and operand sizes.
struct EinsumCase {
  const char* equation;
  std::vector<std::vector<int64_t>> sizes;
};

std::vector<EinsumCase> einsum_cases() {
  return {{"ij,jk->ik", {{3, 4}, {4, 5}}},
          {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
          {"bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}}},
          {"ii->i", {{4, 4}}},
          {"ii", {{4, 4}}},
          {"i,i", {{5}, {5}}},
          {"i,i->i", {{1}, {5}}},
          {"i,j->ij", {{3}, {4}}},
          {"ijk->kji", {{2, 3, 4}}},
          {"ab,ab->a", {{3, 4}, {3, 4}}},
          {"abc,cd->", {{2, 3, 4}, {4, 5}}},
          {"ba,ac", {{3, 2}, {2, 4}}},
          {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
          {"...ij,...jk->...ik", {{2, 1, 3, 4}, {3, 4, 5}}},
          {"bij,jk->bk", {{2, 3, 4}, {4, 5}}},
          {"iij,jk->ik", {{3, 3, 4}, {4, 2}}}};
}

TEST(CudaLibs, EinsumByBmmMatchesTheReferenceOnCpu) {
  cuda_plugin_path();  // the reference einsum and the ops it is written over
  uint64_t seed = 1;
  for (const EinsumCase& c : einsum_cases()) {
    std::vector<Tensor> ops;
    for (const auto& s : c.sizes) ops.push_back(rnd(s, seed++, DType::Float64, ops.size() == 1));
    const Tensor want = einsum(c.equation, ops);
    const Tensor got = cuda::libs::einsum_by_bmm(c.equation, ops);
    SCOPED_TRACE(c.equation);
    expect_close(got, want.sizes(), to_doubles(want), 1e-12, 1e-12);
  }
  EXPECT_TRUE(contains(message_of([] {
                         cuda::libs::einsum_by_bmm("ij,jk", {rnd({2, 3}, 1), rnd({4, 5}, 2)});
                       }),
                       "einsum(): operands do not broadcast: subscript j"));
}

TEST(CudaLibs, ConstantPadByCopyMatchesTheReferenceOnCpu) {
  cuda_plugin_path();
  const Tensor x = rnd({2, 3, 4, 5}, 1, DType::Float32, /*strided=*/true);
  const std::vector<std::vector<int64_t>> pads = {
      {1, 2}, {0, 0, 2, 1}, {-1, 2, 1, -2}, {1, 1, 1, 1, 1, 1}, {-2, -3}, {-5, 1}};
  for (const auto& p : pads) {
    const Tensor want = constant_pad_nd(x, p, 0.5);
    const Tensor got = cuda::libs::constant_pad_by_copy(x, p, 0.5);
    SCOPED_TRACE(sizes_str(p));
    expect_close(got, want.sizes(), to_doubles(want), 0, 0);
  }
  EXPECT_TRUE(contains(message_of([&] { cuda::libs::constant_pad_by_copy(x, {-3, -3}, 0); }),
                       "resulted in a negative output size"));
}

TEST(CudaLibs, EinsumMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Flags flags(false, false);
  uint64_t seed = 1;
  for (const EinsumCase& c : einsum_cases()) {
    std::vector<Tensor> ops, gops;
    for (const auto& s : c.sizes) {
      ops.push_back(rnd(s, seed++));
      gops.push_back(cuda(ops.back()));
    }
    SCOPED_TRACE(c.equation);
    expect_matches(einsum(c.equation, gops), einsum(c.equation, ops), DType::Float32, 20);
  }
  const Tensor x = rnd({2, 3, 4, 5}, 100);
  expect_matches(constant_pad_nd(cuda(x), {-1, 2, 1, 1}, 0.5), constant_pad_nd(x, {-1, 2, 1, 1}, 0.5),
                 DType::Float32);
}

// ---- matmul (cuBLAS) ----

class CudaMatmul : public ::testing::TestWithParam<DType> {};

TEST_P(CudaMatmul, MatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Flags flags(false, false);
  const DType d = GetParam();
  const Tensor a = rnd({37, 53}, 1, d), b = rnd({53, 29}, 2, d), c = rnd({29}, 3, d);
  expect_matches(mm(cuda(a), cuda(b)), mm(ref(a), ref(b)), d, 53);
  // Transposed operands (column-major) and a strided one (copied).
  const Tensor at = rnd({53, 37}, 4, d).t(), bs = rnd({53, 29}, 5, d, /*strided=*/true);
  expect_matches(mm(cuda(at), cuda(bs)), mm(ref(at), ref(bs)), d, 53);
  expect_matches(addmm(cuda(c), cuda(a), cuda(b), 0.5, 2.0), addmm(ref(c), ref(a), ref(b), 0.5, 2.0),
                 d, 53);
  const Tensor x = rnd({4, 37, 53}, 6, d), y = rnd({4, 53, 29}, 7, d);
  expect_matches(bmm(cuda(x), cuda(y)), bmm(ref(x), ref(y)), d, 53);
  const Tensor z = rnd({4, 37, 29}, 8, d);
  expect_matches(baddbmm(cuda(z), cuda(x), cuda(y), 1.0, 1.0),
                 baddbmm(ref(z), ref(x), ref(y), 1.0, 1.0), d, 53);
  // matmul with broadcast batch dims and a 1-D operand; linear with a bias.
  const Tensor p = rnd({2, 1, 5, 53}, 9, d), q = rnd({3, 53, 7}, 10, d), v = rnd({53}, 11, d);
  expect_matches(matmul(cuda(p), cuda(q)), matmul(ref(p), ref(q)), d, 53);
  expect_matches(matmul(cuda(p), cuda(v)), matmul(ref(p), ref(v)), d, 53);
  const Tensor w = rnd({29, 53}, 12, d);
  expect_matches(linear(cuda(p), cuda(w), cuda(c)), linear(ref(p), ref(w), ref(c)), d, 53);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaMatmul,
                         ::testing::Values(DType::Float32, DType::Float64, DType::Float16,
                                           DType::BFloat16));

TEST(CudaLibs, MatmulRefusesIntegers) {
  SKIP_WITHOUT_GPU();
  const Tensor a = cuda(rnd({2, 2}, 1, DType::Int64));
  EXPECT_TRUE(contains(message_of<TypeError>([&] { mm(a, a); }), "mm: self of dtype int64"));
}

// ---- convolution (cuDNN) ----

struct ConvCase {
  std::vector<int64_t> input, weight, stride, padding, dilation, output_padding;
  bool transposed;
  int64_t groups;
};

class CudaConv : public ::testing::TestWithParam<DType> {};

TEST_P(CudaConv, ForwardAndBackwardMatchTheReference) {
  SKIP_WITHOUT_GPU();
  const Flags flags(false, false);
  const DType d = GetParam();
  const std::vector<ConvCase> cases = {
      {{2, 3, 9, 11}, {8, 3, 3, 3}, {1}, {1}, {1}, {0}, false, 1},
      {{2, 4, 10, 9}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, {0}, false, 2},
      {{3, 4, 7, 7}, {4, 1, 3, 3}, {1}, {1}, {1}, {0}, false, 4},      // depthwise
      {{2, 4, 5, 6}, {4, 3, 3, 3}, {2}, {1}, {1}, {1}, true, 1},       // transposed
      {{2, 3, 17}, {5, 3, 4}, {2}, {1}, {1}, {0}, false, 1},           // 1-d
  };
  uint64_t seed = 100;
  for (const ConvCase& k : cases) {
    const Tensor x = rnd(k.input, seed++, d), w = rnd(k.weight, seed++, d);
    const int64_t cout = k.transposed ? k.weight[1] * k.groups : k.weight[0];
    const Tensor b = rnd({cout}, seed++, d);
    const Tensor want =
        convolution(ref(x), ref(w), ref(b), k.stride, k.padding, k.dilation, k.transposed,
                    k.output_padding, k.groups);
    const Tensor got = convolution(cuda(x), cuda(w), cuda(b), k.stride, k.padding, k.dilation,
                                   k.transposed, k.output_padding, k.groups);
    const double reduction = static_cast<double>(w.numel() / w.size(0));
    expect_matches(got, want, d, reduction);
    const Tensor go = rnd(want.sizes(), seed++, d);
    const std::vector<int64_t> bias_sizes{cout};
    auto [gi, gw, gb] = convolution_backward(cuda(go), cuda(x), cuda(w), IntArrayRef(bias_sizes),
                                             k.stride, k.padding, k.dilation, k.transposed,
                                             k.output_padding, k.groups, {true, true, true});
    auto [ri, rw, rb] = convolution_backward(ref(go), ref(x), ref(w), IntArrayRef(bias_sizes),
                                             k.stride, k.padding, k.dilation, k.transposed,
                                             k.output_padding, k.groups, {true, true, true});
    expect_matches(gi, ri, d, reduction);
    expect_matches(gw, rw, d, static_cast<double>(go.numel() / go.size(1)));
    expect_matches(gb, rb, d, static_cast<double>(go.numel() / go.size(1)));
  }
  // padding='same' with an odd total padding (the extra element right/bottom).
  const Tensor x = rnd({2, 3, 8, 9}, 200, d), w = rnd({4, 3, 2, 4}, 201, d);
  expect_matches(conv2d(cuda(x), cuda(w), std::nullopt, 1, "same"),
                 conv2d(ref(x), ref(w), std::nullopt, 1, "same"), d, 24);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaConv,
                         ::testing::Values(DType::Float32, DType::Float64, DType::Float16));

TEST(CudaLibs, DeterministicModeIsBitIdentical) {
  SKIP_WITHOUT_GPU();
  const Flags flags(/*deterministic=*/true, false);
  const Tensor x = cuda(rnd({8, 16, 20, 20}, 1)), w = cuda(rnd({32, 16, 3, 3}, 2));
  const Tensor go = cuda(rnd({8, 32, 20, 20}, 3));
  auto run = [&] {
    const Tensor y = convolution(x, w, std::nullopt, {1}, {1}, {1}, false, {0}, 1);
    auto [gi, gw, gb] = convolution_backward(go, x, w, std::nullopt, {1}, {1}, {1}, false, {0}, 1,
                                             {true, true, false});
    const Tensor m = mm(x.reshape({8 * 16, 400}), x.reshape({8 * 16, 400}).t());
    return std::make_tuple(y, gi, gw, m);
  };
  const auto a = run();
  const auto b = run();
  EXPECT_TRUE(bit_identical(std::get<0>(a), std::get<0>(b)));
  EXPECT_TRUE(bit_identical(std::get<1>(a), std::get<1>(b)));
  EXPECT_TRUE(bit_identical(std::get<2>(a), std::get<2>(b)));
  EXPECT_TRUE(bit_identical(std::get<3>(a), std::get<3>(b)));
}

TEST(CudaLibs, BenchmarkModeSearchesOncePerShape) {
  SKIP_WITHOUT_GPU();
  const FindCount count = find_count_fn();
  ASSERT_NE(count, nullptr);
  const Flags flags(false, /*benchmark=*/true);
  // A shape no other test uses, so its first call searches.
  const Tensor x = cuda(rnd({3, 5, 13, 15}, 1)), w = cuda(rnd({7, 5, 3, 3}, 2));
  const int64_t before = count();
  const Tensor y1 = convolution(x, w, std::nullopt, {1}, {1}, {1}, false, {0}, 1);
  const int64_t after_first = count();
  const Tensor y2 = convolution(x, w, std::nullopt, {1}, {1}, {1}, false, {0}, 1);
  EXPECT_EQ(after_first, before + 1);
  EXPECT_EQ(count(), after_first) << "the second call of the same shape searched again";
  expect_matches(y2, cpu(y1).to(DType::Float64), DType::Float32);
}

// ---- pooling ----

class CudaPool : public ::testing::TestWithParam<DType> {};

TEST_P(CudaPool, MatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const DType d = GetParam();
  const Tensor x = rnd({2, 3, 11, 10}, 1, d, /*strided=*/true);
  // Max pooling with padding, dilation and ceil_mode: values and indices, then the backward.
  auto [out, idx] = max_pool2d_with_indices(cuda(x), {3, 2}, {2, 2}, {1, 1}, {1, 2}, true);
  auto [rout, ridx] = max_pool2d_with_indices(ref(x), {3, 2}, {2, 2}, {1, 1}, {1, 2}, true);
  expect_matches(out, rout, d);
  EXPECT_EQ(to_doubles(cpu(idx)), to_doubles(ridx));
  const Tensor go = rnd(rout.sizes(), 2, d);
  expect_matches(max_pool2d_with_indices_backward(cuda(go), cuda(x), {3, 2}, {2, 2}, {1, 1},
                                                  {1, 2}, true, idx),
                 max_pool2d_with_indices_backward(ref(go), ref(x), {3, 2}, {2, 2}, {1, 1}, {1, 2},
                                                  true, ridx),
                 d);
  // Average pooling, overlapping windows, without the padding in the count.
  const Tensor a = avg_pool2d(cuda(x), {3, 3}, {2, 1}, {1, 1}, false, false);
  const Tensor ra = avg_pool2d(ref(x), {3, 3}, {2, 1}, {1, 1}, false, false);
  expect_matches(a, ra, d);
  const Tensor ga = rnd(ra.sizes(), 3, d);
  expect_matches(avg_pool2d_backward(cuda(ga), cuda(x), {3, 3}, {2, 1}, {1, 1}, false, false,
                                     std::nullopt),
                 avg_pool2d_backward(ref(ga), ref(x), {3, 3}, {2, 1}, {1, 1}, false, false,
                                     std::nullopt),
                 d);
  // Adaptive average pooling to a size that does not divide the input.
  expect_matches(adaptive_avg_pool2d(cuda(x), {4, 3}), adaptive_avg_pool2d(ref(x), {4, 3}), d);
  const Tensor gp = rnd({2, 3, 4, 3}, 4, d);
  expect_matches(_adaptive_avg_pool2d_backward(cuda(gp), cuda(x)),
                 _adaptive_avg_pool2d_backward(ref(gp), ref(x)), d);
  // Adaptive max pooling to a larger size than the input along W (overlapping bins).
  auto [am, ai] = adaptive_max_pool2d(cuda(x), {4, 13});
  auto [ram, rai] = adaptive_max_pool2d(ref(x), {4, 13});
  expect_matches(am, ram, d);
  EXPECT_EQ(to_doubles(cpu(ai)), to_doubles(rai));
  const Tensor gm = rnd({2, 3, 4, 13}, 5, d);
  expect_matches(adaptive_max_pool2d_backward(cuda(gm), cuda(x), ai),
                 adaptive_max_pool2d_backward(ref(gm), ref(x), rai), d);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaPool,
                         ::testing::Values(DType::Float32, DType::Float64, DType::BFloat16));

// ---- normalization ----

TEST(CudaLibs, BatchNormMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({4, 3, 5, 6}, 1), w = rnd({3}, 2), b = rnd({3}, 3);
  const Tensor rm = rnd({3}, 4), rv = rnd({3}, 5).abs();
  const Tensor grm = cuda(rm), grv = cuda(rv);
  const Tensor crm = rm.clone(), crv = rv.clone();
  auto [y, mean, invstd] = native_batch_norm(cuda(x), cuda(w), cuda(b), grm, grv, true, 0.1, 1e-5);
  auto [ry, rmean, rinvstd] = native_batch_norm(x, w, b, crm, crv, true, 0.1, 1e-5);
  expect_matches(y, ry, DType::Float32, 120);
  expect_matches(mean, rmean, DType::Float32, 120);
  expect_matches(invstd, rinvstd, DType::Float32, 120);
  expect_matches(grm, crm, DType::Float32, 120);
  expect_matches(grv, crv, DType::Float32, 120);
  const Tensor go = rnd(x.sizes(), 6);
  auto [gi, gw, gb] = native_batch_norm_backward(cuda(go), cuda(x), cuda(w), grm, grv, mean, invstd,
                                                 true, 1e-5, {true, true, true});
  auto [ri, rw, rb] = native_batch_norm_backward(go, x, w, crm, crv, rmean, rinvstd, true, 1e-5,
                                                 {true, true, true});
  expect_matches(gi, ri, DType::Float32, 120);
  expect_matches(gw, rw, DType::Float32, 120);
  expect_matches(gb, rb, DType::Float32, 120);
  // Evaluation mode uses the running statistics.
  expect_matches(std::get<0>(native_batch_norm(cuda(x), cuda(w), cuda(b), grm, grv, false, 0.1, 1e-5)),
                 std::get<0>(native_batch_norm(x, w, b, crm, crv, false, 0.1, 1e-5)), DType::Float32);
}

TEST(CudaLibs, LayerNormMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({4, 5, 24}, 1), w = rnd({24}, 2), b = rnd({24}, 3);
  auto [y, mean, rstd] = native_layer_norm(cuda(x), {24}, cuda(w), cuda(b), 1e-5);
  auto [ry, rmean, rrstd] = native_layer_norm(x, {24}, w, b, 1e-5);
  expect_matches(y, ry, DType::Float32, 24);
  const Tensor go = rnd(x.sizes(), 4);
  auto [gi, gw, gb] = native_layer_norm_backward(cuda(go), cuda(x), {24}, mean, rstd, cuda(w),
                                                 cuda(b), {true, true, true});
  auto [ri, rw, rb] =
      native_layer_norm_backward(go, x, {24}, rmean, rrstd, w, b, {true, true, true});
  expect_matches(gi, ri, DType::Float32, 24);
  expect_matches(gw, rw, DType::Float32, 20);
  expect_matches(gb, rb, DType::Float32, 20);
}

TEST(CudaLibs, GroupNormMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({3, 6, 4, 5}, 1), w = rnd({6}, 2), b = rnd({6}, 3);
  auto [y, mean, rstd] = native_group_norm(cuda(x), cuda(w), cuda(b), 3, 6, 20, 2, 1e-5);
  auto [ry, rmean, rrstd] = native_group_norm(x, w, b, 3, 6, 20, 2, 1e-5);
  expect_matches(y, ry, DType::Float32, 60);
  expect_matches(mean, rmean, DType::Float32, 60);
  expect_matches(rstd, rrstd, DType::Float32, 60);
  const Tensor go = rnd(x.sizes(), 4);
  auto [gi, gw, gb] = native_group_norm_backward(cuda(go), cuda(x), mean, rstd, cuda(w), 3, 6, 20,
                                                 2, {true, true, true});
  auto [ri, rw, rb] =
      native_group_norm_backward(go, x, rmean, rrstd, w, 3, 6, 20, 2, {true, true, true});
  expect_matches(gi, ri, DType::Float32, 60);
  expect_matches(gw, rw, DType::Float32, 60);
  expect_matches(gb, rb, DType::Float32, 60);
}

// ---- softmax ----

TEST(CudaLibs, SoftmaxMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({3, 7, 5}, 1, DType::Float32, /*strided=*/true);
  for (int64_t dim : {0, 1, 2}) {
    for (bool log : {false, true}) {
      const Tensor y = log ? _log_softmax(cuda(x), dim, false) : _softmax(cuda(x), dim, false);
      const Tensor ry = log ? _log_softmax(x, dim, false) : _softmax(x, dim, false);
      expect_matches(y, ry, DType::Float32);
      const Tensor g = rnd(x.sizes(), 2);
      const Tensor gi = log ? _log_softmax_backward_data(cuda(g), y, dim, DType::Float32)
                            : _softmax_backward_data(cuda(g), y, dim, DType::Float32);
      const Tensor ri = log ? _log_softmax_backward_data(g, ry, dim, DType::Float32)
                            : _softmax_backward_data(g, ry, dim, DType::Float32);
      expect_matches(gi, ri, DType::Float32, 7);
    }
  }
  // half_to_float.
  const Tensor h = rnd({4, 33}, 3, DType::Float16);
  const Tensor y = _softmax(cuda(h), 1, true);
  EXPECT_EQ(y.dtype(), DType::Float32);
  expect_matches(y, _softmax(h.to(DType::Float32), 1, false), DType::Float16);
}

// ---- losses and embedding ----

TEST(CudaLibs, NllLossMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({6, 5}, 1), w = rnd({5}, 2).abs();
  const Tensor t = make_tensor({0, 4, 2, -100, 1, 4}, {6}, DType::Int64);
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    auto [out, tw] = nll_loss_forward(cuda(x), cuda(t), cuda(w), r, -100);
    auto [rout, rtw] = nll_loss_forward(x, t, w, r, -100);
    expect_matches(out, rout, DType::Float32, 6);
    expect_matches(tw, rtw, DType::Float32, 6);
    const Tensor go = r == Reduction::None ? rnd({6}, 3) : rnd({}, 3);
    expect_matches(nll_loss_backward(cuda(go), cuda(x), cuda(t), cuda(w), r, -100, tw),
                   nll_loss_backward(go, x, t, w, r, -100, rtw), DType::Float32);
  }
  const Tensor bad = make_tensor({0, 5, 2, 1, 1, 4}, {6}, DType::Int64);
  EXPECT_TRUE(contains(message_of<IndexError>([&] {
                         nll_loss_forward(cuda(x), cuda(bad), std::nullopt, Reduction::Mean, -100);
                       }),
                       "Target 5 is out of bounds."));
}

TEST(CudaLibs, MseLossMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({4, 9}, 1), y = rnd({9}, 2);  // y broadcasts
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const Tensor want = mse_loss(x, y, r);
    expect_matches(mse_loss(cuda(x), cuda(y), r), want, DType::Float32, 36);
    const Tensor g = r == Reduction::None ? rnd({4, 9}, 3) : rnd({}, 3);
    expect_matches(mse_loss_backward(cuda(g), cuda(x), cuda(y), r), mse_loss_backward(g, x, y, r),
                   DType::Float32);
  }
}

TEST(CudaLibs, PointwiseLossesMatchTheReference) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({5, 8}, 1), y = rnd({5, 8}, 2);
  const Tensor p = rnd({5, 8}, 3).abs().mul(0.24).add(0.01), t = rnd({5, 8}, 4).abs().mul(0.5);
  const Tensor w = rnd({8}, 5).abs();
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const Tensor g = r == Reduction::None ? rnd({5, 8}, 6) : rnd({}, 6);
    expect_matches(smooth_l1_loss(cuda(x), cuda(y), r, 0.5), smooth_l1_loss(x, y, r, 0.5),
                   DType::Float32, 40);
    expect_matches(smooth_l1_loss_backward(cuda(g), cuda(x), cuda(y), r, 0.5),
                   smooth_l1_loss_backward(g, x, y, r, 0.5), DType::Float32);
    expect_matches(huber_loss(cuda(x), cuda(y), r, 0.7), huber_loss(x, y, r, 0.7), DType::Float32,
                   40);
    expect_matches(binary_cross_entropy(cuda(p), cuda(t), cuda(w), r),
                   binary_cross_entropy(p, t, w, r), DType::Float32, 40);
    expect_matches(binary_cross_entropy_backward(cuda(g), cuda(p), cuda(t), cuda(w), r),
                   binary_cross_entropy_backward(g, p, t, w, r), DType::Float32);
    expect_matches(binary_cross_entropy_with_logits(cuda(x), cuda(t), cuda(w), cuda(w), r),
                   binary_cross_entropy_with_logits(x, t, w, w, r), DType::Float32, 40);
  }
  EXPECT_TRUE(contains(message_of([&] { binary_cross_entropy(cuda(x), cuda(t)); }),
                       "all elements of input should be between 0 and 1"));
}

TEST(CudaLibs, EmbeddingMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const Tensor w = rnd({10, 6}, 1);
  const Tensor idx = make_tensor({3, 0, 9, 3, 3, 7}, {2, 3}, DType::Int64);
  expect_matches(embedding(cuda(w), cuda(idx)), embedding(w, idx), DType::Float32);
  const Tensor g = rnd({2, 3, 6}, 2);
  for (bool freq : {false, true}) {
    expect_matches(embedding_dense_backward(cuda(g), cuda(idx), 10, 0, freq),
                   embedding_dense_backward(g, idx, 10, 0, freq), DType::Float32, 6);
  }
  const Tensor bad = make_tensor({10}, {1}, DType::Int64);
  EXPECT_TRUE(contains(message_of<IndexError>([&] { embedding(cuda(w), cuda(bad)); }),
                       "index out of range in self"));
}

}  // namespace
}  // namespace loom::testing
