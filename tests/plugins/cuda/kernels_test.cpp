// The CUDA plugin's own kernels (plugins/cuda/src/kernels): pointwise ops, copies and casts,
// fills and factories, reductions, random numbers and dropout, views and shape copies.
// Everywhere: the plugin registers a CUDA kernel for each of these ops (the view ops as boxed
// CPU kernels), the unavailable reason names the driver, and an op asked for a CUDA tensor
// fails with a DeviceError naming the op. On a GPU: each op against the reference CPU
// provider on contiguous, broadcast and non-contiguous inputs in several dtypes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/core/device_hooks.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/loom.h"
#include "loom/ops/nn/dropout.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace loom::testing {
namespace {

void load_plugins() {
  static const bool loaded = [] {
    load_ops_core();
    load_ops_nn();
    PluginLoader::instance().load("cuda");
    return true;
  }();
  (void)loaded;
}

/// "" when a CUDA device is usable, else why not.
std::string cuda_unavailable() {
  load_plugins();
  const DeviceHooks* hooks = find_device_hooks(DeviceType::from_name("cuda"));
  if (hooks == nullptr) return "the cuda plugin registered no device hooks";
  if (hooks->device_count() > 0) return "";
  return hooks->unavailable_reason().empty() ? "0 devices" : hooks->unavailable_reason();
}

#define SKIP_WITHOUT_GPU()                                          \
  do {                                                              \
    if (const std::string why = cuda_unavailable(); !why.empty()) { \
      GTEST_SKIP() << "no CUDA device is available: " << why;       \
    }                                                               \
  } while (0)

Device gpu() { return Device(DeviceType::from_name("cuda"), 0); }
Tensor cuda(const Tensor& t) { return t.to(gpu()); }
Tensor cpu(const Tensor& t) { return t.to(kCPU); }

/// A random CPU tensor with values in [lo, hi); strided: a last dim of stride 2.
Tensor rnd(IntArrayRef sizes, uint64_t seed, DType dtype = DType::Float32, bool strided = false,
           double lo = -2, double hi = 2) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return make_tensor(random_values(static_cast<size_t>(n), seed, lo, hi), sizes, dtype, strided);
}

/// Random integers in [lo, hi) as dtype.
Tensor rnd_int(IntArrayRef sizes, uint64_t seed, DType dtype, int lo, int hi) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v = random_values(static_cast<size_t>(n), seed, lo, hi);
  for (double& x : v) x = std::floor(x);
  return make_tensor(v, sizes, dtype);
}

double tol(DType d) {
  switch (d) {
    case DType::Float64:
      return 1e-12;
    case DType::Float32:
      return 1e-5;
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1.6e-2;
    default:
      return 0;
  }
}

/// Expects the CUDA result got to equal the CPU result want: same dtype, sizes and values
/// (within the dtype's tolerance, scaled by k for reductions).
void expect_same(const Tensor& got, const Tensor& want, double k = 1,
                 const std::string& what = "") {
  ASSERT_TRUE(got.defined()) << what;
  EXPECT_EQ(got.device().type(), gpu().type()) << what;
  EXPECT_EQ(dtype_name(got.dtype()), dtype_name(want.dtype())) << what;
  const double t = tol(want.dtype()) * k;
  SCOPED_TRACE(what);
  expect_close(cpu(got), want.sizes(), to_doubles(want), t, t);
}

/// Runs f on the CPU inputs and on their CUDA copies and compares.
void check_op(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
              const std::vector<Tensor>& inputs, double k = 1) {
  std::vector<Tensor> on_gpu;
  for (const Tensor& t : inputs) on_gpu.push_back(cuda(t));
  expect_same(f(on_gpu), f(inputs), k, what);
}

/// The lowered copy of s.
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ---- without a GPU ----

TEST(CudaKernels, RegistersACudaKernelForEachOwnOp) {
  load_plugins();
  const std::vector<std::string> ops = {
      // pointwise
      "add.Tensor", "add_.Tensor", "add.out", "add.Scalar", "add_.Scalar", "sub.Tensor",
      "sub_.Tensor", "sub.Scalar", "mul.Tensor", "mul_.Tensor", "mul.out", "mul.Scalar",
      "div.Tensor", "div_.Tensor", "div.Tensor_mode", "div.Scalar", "div.Scalar_mode",
      "remainder.Tensor", "remainder.Scalar", "fmod.Tensor", "pow.Tensor_Tensor",
      "pow.Tensor_Scalar", "pow.Scalar", "pow_.Scalar", "maximum", "minimum", "atan2", "eq.Tensor",
      "eq.Scalar", "ne.Tensor", "lt.Tensor", "le.Scalar", "gt.Tensor", "ge.Scalar", "logical_and",
      "logical_or", "logical_xor", "logical_not", "bitwise_and.Tensor", "bitwise_or.Scalar",
      "bitwise_xor.Tensor", "bitwise_not", "neg", "neg_", "abs", "sign", "exp", "exp_", "exp2",
      "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "tanh",
      "tanh_", "sigmoid", "sigmoid_", "erf", "floor", "ceil", "round", "trunc", "round.decimals",
      "clamp", "clamp_", "clamp.Tensor", "nan_to_num", "relu", "relu_", "relu6", "selu", "silu",
      "silu_", "mish", "hardsigmoid", "hardswish", "hardtanh", "hardtanh_", "leaky_relu",
      "leaky_relu_", "elu", "gelu", "gelu_", "softplus", "threshold_backward", "where.self",
      "lerp.Scalar", "lerp_.Scalar", "lerp.Tensor", "addcmul", "addcmul_", "addcdiv", "addcdiv_",
      // copies, fills, factories
      "clone", "contiguous", "to.dtype", "fill_.Scalar", "fill_.Tensor", "zero_",
      "empty.memory_format", "zeros", "ones", "full", "arange", "arange.start", "arange.start_step",
      "linspace", "eye", "eye.m", "rand", "rand.generator", "randn", "randn.generator", "randint",
      "randint.low", "bernoulli", "bernoulli.p", "empty_like", "zeros_like", "ones_like",
      "full_like", "rand_like", "randn_like", "randint_like",
      // reductions
      "sum", "sum.dim_IntList", "mean", "mean.dim", "prod", "prod.dim_int", "all", "all.dim", "any",
      "any.dims", "max", "min", "max.dim", "min.dim", "amax", "amin", "argmax", "argmin", "var",
      "var.dim", "var.correction", "std", "std.correction", "var_mean.correction",
      "std_mean.correction", "norm.Scalar", "norm.ScalarOpt_dim", "linalg_vector_norm", "logsumexp",
      "cumsum", "cumprod", "frobenius_norm.dim",
      // dropout
      "native_dropout", "native_dropout_backward",
      // views and shape copies
      "view", "reshape", "reshape_as", "flatten.using_ints", "unflatten.int", "squeeze",
      "squeeze.dim", "unsqueeze", "transpose.int", "permute", "t", "expand", "expand_as", "narrow",
      "slice.Tensor", "select.int", "as_strided", "split.Tensor", "chunk", "unbind.int", "view_as",
      "movedim.int", "unsqueeze_", "transpose_", "cat", "stack", "concat", "repeat", "tile", "roll",
      "flip",
      // indexing
      "index_select", "index_select.out", "gather", "index_add", "index_add_",
      "index_select_backward", "index_fill.int_Scalar", "index_fill_.int_Tensor", "scatter.src",
      "scatter_.value", "scatter_add", "scatter_add_", "masked_fill.Scalar", "masked_fill.Tensor",
      "masked_fill_.Scalar", "masked_fill_.Tensor", "tril", "triu", "tril_", "triu_"};
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

TEST(CudaKernels, ViewOpsAreTheBoxedCpuKernels) {
  load_plugins();
  for (const char* name : {"view", "transpose.int", "permute", "select.int", "unsqueeze_"}) {
    const auto op = Dispatcher::instance().find_op(std::string("aten::") + name);
    ASSERT_TRUE(op.has_value()) << name;
    bool boxed = false;
    for (const KernelInfo& k : Dispatcher::instance().kernels(*op)) {
      if (dispatch_key_name(k.key) == "CUDA") boxed = k.boxed_only;
    }
    EXPECT_TRUE(boxed) << name;
  }
}

TEST(CudaKernels, WithoutADeviceTheReasonNamesTheDriverOrTheDevice) {
  const std::string why = cuda_unavailable();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is available";
  EXPECT_TRUE(contains(lower(why), "driver") || contains(lower(why), "device")) << why;
}

TEST(CudaKernels, WithoutADeviceFactoriesThrowNamingTheOp) {
  const std::string why = cuda_unavailable();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is available";
  const std::string msg = message_of<DeviceError>([] { zeros({2, 3}, DType::Float32, gpu()); });
  EXPECT_TRUE(contains(msg, "zeros")) << msg;
  EXPECT_TRUE(contains(msg, "no CUDA device is available")) << msg;
  const std::string msg2 = message_of<DeviceError>([] { arange(5, std::nullopt, gpu()); });
  EXPECT_TRUE(contains(msg2, "arange")) << msg2;
}

// ---- pointwise ----

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float64, DType::Float16,
                                        DType::BFloat16};

class CudaPointwise : public ::testing::TestWithParam<DType> {};

TEST_P(CudaPointwise, UnaryOpsMatchTheReference) {
  SKIP_WITHOUT_GPU();
  const DType d = GetParam();
  using F = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, F>> ops = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(abs(x)); }},
      {"sqrt", [](const Tensor& x) { return sqrt(abs(x)); }},
      {"rsqrt", [](const Tensor& x) { return rsqrt(add(abs(x), 0.5)); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }},
      {"elu", [](const Tensor& x) { return elu(x); }},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x, -0.5, 0.5); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"floor", [](const Tensor& x) { return floor(x); }},
      {"round", [](const Tensor& x) { return round(x); }},
      {"clamp", [](const Tensor& x) { return clamp(x, Scalar(-1.0), Scalar(0.5)); }},
      {"sign", [](const Tensor& x) { return sign(x); }},
      {"erf", [](const Tensor& x) { return erf(x); }},
  };
  const Tensor contiguous = rnd({5, 67}, 1, d);
  const Tensor strided = rnd({5, 67}, 2, d, /*strided=*/true);
  const Tensor transposed = rnd({67, 5}, 3, d).t();
  for (const auto& [name, f] : ops) {
    for (const Tensor& x : {contiguous, strided, transposed}) {
      // Transcendentals differ by an ulp or so between the device's and the host's libm.
      check_op(
          name, [&](const std::vector<Tensor>& in) { return f(in[0]); }, {x}, 8);
    }
  }
}

TEST_P(CudaPointwise, BinaryOpsBroadcastAndPromote) {
  SKIP_WITHOUT_GPU();
  const DType d = GetParam();
  const Tensor a = rnd({4, 1, 33}, 1, d), b = rnd({3, 33}, 2, d), s = rnd({}, 3, d);
  const Tensor bt = rnd({33, 3}, 4, d).t();
  auto both = [&](const std::string& name, auto f) {
    check_op(
        name, [&](const std::vector<Tensor>& in) { return f(in[0], in[1]); }, {a, b}, 4);
    check_op(
        name + " transposed", [&](const std::vector<Tensor>& in) { return f(in[0], in[1]); },
        {a, bt}, 4);
    check_op(
        name + " 0-d", [&](const std::vector<Tensor>& in) { return f(in[0], in[1]); }, {a, s}, 4);
  };
  both("add", [](const Tensor& x, const Tensor& y) { return add(x, y, 0.5); });
  both("sub", [](const Tensor& x, const Tensor& y) { return sub(x, y); });
  both("mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); });
  both("div", [](const Tensor& x, const Tensor& y) { return div(x, y); });
  both("div floor",
       [](const Tensor& x, const Tensor& y) { return div(x, y, std::string_view("floor")); });
  both("remainder", [](const Tensor& x, const Tensor& y) { return remainder(x, y); });
  both("pow", [](const Tensor& x, const Tensor& y) { return pow(abs(x), y); });
  both("maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); });
  both("eq", [](const Tensor& x, const Tensor& y) { return eq(x, y); });
  both("lt", [](const Tensor& x, const Tensor& y) { return lt(x, y); });
  both("threshold_backward",
       [](const Tensor& x, const Tensor& y) { return threshold_backward(x, y, 0.1); });
  // Scalars (wrapped numbers) and a mixed-dtype pair.
  check_op(
      "add scalar", [](const std::vector<Tensor>& in) { return add(in[0], 2.5, 2); }, {a}, 4);
  check_op(
      "mul scalar", [](const std::vector<Tensor>& in) { return mul(in[0], 3); }, {a}, 4);
  check_op(
      "pow 2", [](const std::vector<Tensor>& in) { return pow(in[0], 2); }, {a}, 4);
  check_op(
      "rpow", [](const std::vector<Tensor>& in) { return pow(2.0, in[0]); }, {a}, 4);
  const Tensor i = rnd_int({3, 33}, 5, DType::Int32, -5, 5);
  check_op(
      "float + int", [](const std::vector<Tensor>& in) { return add(in[0], in[1]); }, {a, i}, 4);
}

TEST_P(CudaPointwise, TernaryAndInPlaceOps) {
  SKIP_WITHOUT_GPU();
  const DType d = GetParam();
  const Tensor x = rnd({6, 40}, 1, d), y = rnd({40}, 2, d), z = rnd({6, 1}, 3, d, false, 0.5, 2);
  const Tensor c = gt(rnd({6, 40}, 4), 0);
  check_op("where", [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
           {c, x, y});
  check_op(
      "lerp", [](const std::vector<Tensor>& in) { return lerp(in[0], in[1], 0.3); },
      {x, rnd({6, 40}, 5, d)}, 4);
  check_op(
      "addcmul", [](const std::vector<Tensor>& in) { return addcmul(in[0], in[1], in[2], 0.5); },
      {x, y, z}, 4);
  check_op(
      "addcdiv", [](const std::vector<Tensor>& in) { return addcdiv(in[0], in[1], in[2], 0.5); },
      {x, y, z}, 4);
  // In place on a non-contiguous view: only the view's elements change.
  check_op(
      "add_ on a strided view",
      [](const std::vector<Tensor>& in) {
        Tensor base = clone(in[0]);
        Tensor v = base.t();
        add_(v, in[1].t(), 2);
        return base;
      },
      {x, rnd({6, 40}, 6, d)}, 4);
  check_op(
      "mul_ with broadcast",
      [](const std::vector<Tensor>& in) {
        Tensor base = clone(in[0]);
        mul_(base, in[1]);
        return base;
      },
      {x, y}, 4);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaPointwise, ::testing::ValuesIn(kFloatTypes));

TEST(CudaKernels, IntegerAndBoolOpsMatchTheReference) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::Int64, DType::Int32, DType::Int16, DType::Int8, DType::UInt8}) {
    const Tensor a = rnd_int({5, 37}, 1, d, 0, 100), b = rnd_int({37}, 2, d, 1, 9);
    auto f2 = [&](const std::string& name, auto f) {
      check_op(name + " " + std::string(dtype_name(d)),
               [&](const std::vector<Tensor>& in) { return f(in[0], in[1]); }, {a, b});
    };
    f2("add", [](const Tensor& x, const Tensor& y) { return add(x, y, 3); });
    f2("mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); });
    f2("div", [](const Tensor& x, const Tensor& y) { return div(x, y); });  // -> float32
    f2("div trunc",
       [](const Tensor& x, const Tensor& y) { return div(x, y, std::string_view("trunc")); });
    f2("remainder", [](const Tensor& x, const Tensor& y) { return remainder(x, y); });
    f2("bitwise_and", [](const Tensor& x, const Tensor& y) { return bitwise_and(x, y); });
    f2("ge", [](const Tensor& x, const Tensor& y) { return ge(x, y); });
    f2("maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); });
    f2("pow", [](const Tensor& x, const Tensor& y) { return pow(x, y); });
  }
  const Tensor m = gt(rnd({7, 9}, 3), 0), n = gt(rnd({7, 9}, 4), 0.5);
  check_op("logical_xor", [](const std::vector<Tensor>& in) { return logical_xor(in[0], in[1]); },
           {m, n});
  check_op("bool add", [](const std::vector<Tensor>& in) { return add(in[0], in[1]); }, {m, n});
  check_op("bitwise_not", [](const std::vector<Tensor>& in) { return bitwise_not(in[0]); }, {m});
  // Integer division by zero is an error, as on the CPU.
  const Tensor z = cuda(zeros({3}, DType::Int64)), o = cuda(ones({3}, DType::Int64));
  const std::string msg = message_of<ValueError>([&] { remainder(o, z); });
  EXPECT_TRUE(contains(msg, "ZeroDivisionError")) << msg;
  // Errors name the op like the CPU's.
  const std::string neg_msg = message_of<TypeError>([&] { neg(cuda(m)); });
  EXPECT_TRUE(contains(neg_msg, "Negation")) << neg_msg;
}

TEST(CudaKernels, CopiesConvertEveryDtypePair) {
  SKIP_WITHOUT_GPU();
  const std::vector<DType> all = {DType::Bool,    DType::UInt8,  DType::Int8,    DType::Int16,
                                  DType::Int32,   DType::Int64,  DType::Float16, DType::BFloat16,
                                  DType::Float32, DType::Float64};
  const Tensor v = mul(rnd({4, 6}, 1, DType::Float64), 50);
  for (DType from : all) {
    const Tensor src = to(v, from);
    for (DType dst : all) {
      check_op(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(dst)),
               [&](const std::vector<Tensor>& in) { return to(in[0], dst); }, {src});
      check_op(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(dst)) + " strided",
               [&](const std::vector<Tensor>& in) { return to(in[0].t(), dst); }, {src});
    }
  }
  // copy_ broadcasts src; contiguous() of a transpose; clone of a strided view.
  check_op("copy_ broadcast",
           [](const std::vector<Tensor>& in) {
             Tensor dst = zeros_like(in[0]);
             copy_(dst, in[1]);
             return dst;
           },
           {rnd({3, 5}, 2), rnd({5}, 3, DType::Float64)});
  check_op("contiguous", [](const std::vector<Tensor>& in) { return contiguous(in[0].t()); },
           {rnd({3, 5}, 4)});
  check_op("clone strided", [](const std::vector<Tensor>& in) { return clone(in[0]); },
           {rnd({3, 5}, 5, DType::Float16, true)});
}

TEST(CudaKernels, FillsAndFactories) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::Float32, DType::Float16, DType::Int64, DType::Bool, DType::UInt8}) {
    expect_same(zeros({3, 4}, d, gpu()), zeros({3, 4}, d), 1, "zeros");
    expect_same(ones({3, 4}, d, gpu()), ones({3, 4}, d), 1, "ones");
    expect_same(full({2, 5}, 3, d, gpu()), full({2, 5}, 3, d), 1, "full");
    expect_same(eye(3, 4, d, gpu()), eye(3, 4, d), 1, "eye");
  }
  expect_same(arange(0, 10, 3, std::nullopt, gpu()), arange(0, 10, 3), 1, "arange int");
  expect_same(arange(0.5, 3.0, 0.25, std::nullopt, gpu()), arange(0.5, 3.0, 0.25), 1, "arange");
  expect_same(linspace(-1, 1, 7, std::nullopt, gpu()), linspace(-1, 1, 7), 1, "linspace");
  check_op("fill_ strided",
           [](const std::vector<Tensor>& in) {
             Tensor base = clone(in[0]);
             fill_(base.t(), 2.5);
             return base;
           },
           {rnd({4, 6}, 1)});
  check_op("zeros_like transposed",
           [](const std::vector<Tensor>& in) { return zeros_like(in[0].t()); }, {rnd({4, 6}, 2)});
  check_op("full_like", [](const std::vector<Tensor>& in) { return full_like(in[0], 7); },
           {rnd({4, 6}, 3)});
  // A CPU result asked of a CUDA tensor comes from the CPU kernel.
  const Tensor c = zeros_like(cuda(rnd({2, 2}, 4)), std::nullopt, kCPU);
  EXPECT_TRUE(c.device().is_cpu());
}

// ---- reductions ----

class CudaReductions : public ::testing::TestWithParam<DType> {};

TEST_P(CudaReductions, MatchTheReference) {
  SKIP_WITHOUT_GPU();
  const DType d = GetParam();
  const Tensor x = rnd({6, 7, 45}, 1, d);
  const Tensor xt = rnd({45, 7, 6}, 2, d).permute({2, 1, 0});
  for (const Tensor& t : {x, xt}) {
    check_op(
        "sum all", [](const std::vector<Tensor>& in) { return sum(in[0]); }, {t}, 64);
    for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}}) {
      for (bool keep : {false, true}) {
        check_op(
            "sum dims", [&](const std::vector<Tensor>& in) { return sum(in[0], dims, keep); }, {t},
            64);
        check_op(
            "mean dims", [&](const std::vector<Tensor>& in) { return mean(in[0], dims, keep); },
            {t}, 64);
        check_op("amax dims",
                 [&](const std::vector<Tensor>& in) { return amax(in[0], dims, keep); }, {t});
        check_op(
            "var dims", [&](const std::vector<Tensor>& in) { return var(in[0], dims, 1, keep); },
            {t}, 64);
      }
    }
    for (int64_t dim : {0, 1, 2}) {
      check_op("max.dim values",
               [&](const std::vector<Tensor>& in) { return std::get<0>(max(in[0], dim)); }, {t});
      check_op("min.dim indices",
               [&](const std::vector<Tensor>& in) { return std::get<1>(min(in[0], dim)); }, {t});
      check_op("argmax", [&](const std::vector<Tensor>& in) { return argmax(in[0], dim); }, {t});
    }
    check_op("argmin all", [](const std::vector<Tensor>& in) { return argmin(in[0]); }, {t});
    check_op(
        "logsumexp", [](const std::vector<Tensor>& in) { return logsumexp(in[0], {2}, true); }, {t},
        64);
    check_op(
        "cumsum", [](const std::vector<Tensor>& in) { return cumsum(in[0], 1); }, {t}, 64);
    for (double ord : {2.0, 1.0, 3.0, 0.0, double(INFINITY)}) {
      check_op(
          "linalg_vector_norm",
          [&](const std::vector<Tensor>& in) {
            return linalg_vector_norm(in[0], ord, std::vector<int64_t>{1});
          },
          {t}, 64);
    }
    check_op("max all", [](const std::vector<Tensor>& in) { return max(in[0]); }, {t});
  }
  // A long row splits over blocks (Note [CUDA reduction plan]).
  const Tensor big = rnd({1 << 20}, 3, d, false, 0, 1);
  check_op(
      "sum long", [](const std::vector<Tensor>& in) { return sum(in[0]); }, {big}, 4096);
  check_op("argmax long", [](const std::vector<Tensor>& in) { return argmax(in[0]); }, {big});
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaReductions, ::testing::ValuesIn(kFloatTypes));

TEST(CudaKernels, IntegerReductionsAndNaN) {
  SKIP_WITHOUT_GPU();
  const Tensor i = rnd_int({5, 9, 11}, 1, DType::Int32, -50, 50);
  check_op("sum int", [](const std::vector<Tensor>& in) { return sum(in[0], {1}); }, {i});
  check_op("prod int", [](const std::vector<Tensor>& in) { return prod(in[0]); },
           {rnd_int({9}, 2, DType::Int64, 1, 4)});
  check_op("any", [](const std::vector<Tensor>& in) { return any(in[0]); }, {gt(i, 40)});
  check_op("all uint8", [](const std::vector<Tensor>& in) { return all(in[0]); },
           {rnd_int({9}, 3, DType::UInt8, 0, 3)});
  // NaN wins and its first index is reported; ties keep the first index.
  const Tensor v = tensor(std::vector<float>{1, 3, NAN, 3, NAN}, {5});
  check_op("max nan", [](const std::vector<Tensor>& in) { return max(in[0]); }, {v});
  check_op("argmax nan", [](const std::vector<Tensor>& in) { return argmax(in[0]); }, {v});
  const Tensor ties = tensor(std::vector<float>{2, 5, 5, 1}, {4});
  check_op("argmax ties", [](const std::vector<Tensor>& in) { return argmax(in[0]); }, {ties});
}

// ---- random, dropout ----

TEST(CudaKernels, RandomNumbersHaveTheRightMomentsAndRepeatWithTheSeed) {
  SKIP_WITHOUT_GPU();
  manual_seed(7);
  const Tensor u = cpu(rand({1 << 16}, DType::Float32, gpu()));
  manual_seed(7);
  const Tensor u2 = cpu(rand({1 << 16}, DType::Float32, gpu()));
  EXPECT_EQ(to_doubles(u), to_doubles(u2));
  const std::vector<double> uv = to_doubles(u);
  double mean_u = 0;
  for (double x : uv) {
    ASSERT_GE(x, 0);
    ASSERT_LT(x, 1);
    mean_u += x / static_cast<double>(uv.size());
  }
  EXPECT_NEAR(mean_u, 0.5, 0.01);
  const std::vector<double> nv = to_doubles(cpu(randn({1 << 16}, DType::Float64, gpu())));
  double m = 0, s2 = 0;
  for (double x : nv) m += x / static_cast<double>(nv.size());
  for (double x : nv) s2 += (x - m) * (x - m) / static_cast<double>(nv.size());
  EXPECT_NEAR(m, 0, 0.02);
  EXPECT_NEAR(std::sqrt(s2), 1, 0.02);
  const std::vector<double> bv = to_doubles(cpu(bernoulli(cuda(zeros({1 << 16})), 0.3)));
  double ones_frac = 0;
  for (double x : bv) ones_frac += x / static_cast<double>(bv.size());
  EXPECT_NEAR(ones_frac, 0.3, 0.01);
  const std::vector<double> iv =
      to_doubles(cpu(randint(3, 9, {4096}, nullptr, DType::Int64, gpu())));
  EXPECT_EQ(*std::min_element(iv.begin(), iv.end()), 3);
  EXPECT_EQ(*std::max_element(iv.begin(), iv.end()), 8);
}

TEST(CudaKernels, DropoutScalesKeptElementsAndItsBackwardUsesTheMask) {
  SKIP_WITHOUT_GPU();
  const Tensor x = cuda(rnd({64, 1024}, 1));
  const auto [out, mask] = native_dropout(x, 0.25, true);
  const std::vector<double> o = to_doubles(cpu(out)), k = to_doubles(cpu(mask)),
                            xv = to_doubles(cpu(x));
  double kept = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    kept += k[i] / static_cast<double>(o.size());
    ASSERT_NEAR(o[i], k[i] != 0 ? xv[i] / 0.75 : 0.0, 1e-5);
  }
  EXPECT_NEAR(kept, 0.75, 0.01);
  const Tensor g = cuda(rnd({64, 1024}, 2));
  const Tensor gi = native_dropout_backward(g, mask, 1 / 0.75);
  expect_same(gi, native_dropout_backward(cpu(g), cpu(mask), 1 / 0.75), 1, "dropout backward");
}

// ---- views and shape copies ----

TEST(CudaKernels, ViewsAndShapeCopies) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({4, 6, 5}, 1);
  check_op("transpose+reshape (copy)",
           [](const std::vector<Tensor>& in) {
             return reshape(transpose(in[0], 0, 2), {30, 4});
           },
           {x});
  check_op("flatten of a permute",
           [](const std::vector<Tensor>& in) {
             return flatten(permute(in[0], {1, 0, 2}), 0, 1);
           },
           {x});
  check_op("narrow + expand",
           [](const std::vector<Tensor>& in) {
             return contiguous(expand(narrow(in[0], 1, 2, 1), {4, 3, 5}));
           },
           {x});
  check_op("cat",
           [](const std::vector<Tensor>& in) {
             return cat({in[0], in[1].t()}, 0);
           },
           {rnd({2, 3}, 2), rnd({3, 4}, 3, DType::Float64)});
  check_op("stack",
           [](const std::vector<Tensor>& in) {
             return stack({in[0], in[1]}, 1);
           },
           {rnd({2, 3}, 4), rnd({2, 3}, 5)});
  check_op("repeat",
           [](const std::vector<Tensor>& in) {
             return repeat(in[0], {2, 1, 3});
           },
           {rnd({2, 3}, 6, DType::Float32, true)});
  check_op("roll",
           [](const std::vector<Tensor>& in) {
             return roll(in[0], {2, -1}, {0, 1});
           },
           {rnd({4, 5}, 7)});
  check_op("flip",
           [](const std::vector<Tensor>& in) {
             return flip(in[0].t(), {0, 1});
           },
           {rnd({4, 5}, 8)});
  check_op("flip one dim", [](const std::vector<Tensor>& in) { return flip(in[0], {1}); }, {x});
  // A view shares the CUDA storage.
  const Tensor g = cuda(x);
  const Tensor v = transpose(g, 0, 1);
  EXPECT_EQ(v.data_ptr(), g.data_ptr());
  EXPECT_EQ(v.device().type(), gpu().type());
}

TEST(CudaKernels, IndexingOps) {
  SKIP_WITHOUT_GPU();
  const Tensor x = rnd({5, 7, 3}, 1);
  for (int64_t dim : {0, 2}) {
    const Tensor i = dim == 0 ? tensor(std::vector<int64_t>{4, 0, 2, 2}, {4})
                              : tensor(std::vector<int64_t>{2, 0}, {2});
    check_op("index_select",
             [&](const std::vector<Tensor>& in) { return index_select(in[0], dim, in[1]); },
             {x, i});
    check_op("index_select int32 strided",
             [&](const std::vector<Tensor>& in) {
               return index_select(transpose(in[0], 0, 1), dim == 0 ? 1 : 2, in[1]);
             },
             {x, to(i, DType::Int32)});
  }
  const Tensor gi = rnd_int({5, 4, 3}, 2, DType::Int64, 0, 7);
  check_op("gather", [](const std::vector<Tensor>& in) { return gather(in[0], 1, in[1]); },
           {x, gi});
  check_op(
      "scatter_add",
      [](const std::vector<Tensor>& in) { return scatter_add(in[0], 1, in[1], in[2]); },
      {x, gi, rnd({5, 4, 3}, 4)}, 8);
  check_op(
      "index_add",
      [](const std::vector<Tensor>& in) { return index_add(in[0], 0, in[1], in[2], 2.0); },
      {x, tensor(std::vector<int64_t>{1, 3, 1}, {3}), rnd({3, 7, 3}, 5)}, 8);
  check_op("scatter value",
           [](const std::vector<Tensor>& in) { return scatter(in[0], 2, in[1], 0.5); },
           {x, rnd_int({5, 7, 1}, 6, DType::Int64, 0, 3)});
  check_op("index_fill",
           [](const std::vector<Tensor>& in) { return index_fill(in[0], 1, in[1], 2.5); },
           {x, tensor(std::vector<int64_t>{-1, 2, 2}, {3})});
  const Tensor bad = cuda(tensor(std::vector<int64_t>{0, 9}, {2}));
  const std::string msg = message_of<IndexError>([&] { index_select(cuda(x), 0, bad); });
  EXPECT_TRUE(contains(msg, "index out of range in self")) << msg;
  const Tensor mask = gt(rnd({7, 3}, 3), 0);
  check_op("masked_fill",
           [](const std::vector<Tensor>& in) { return masked_fill(in[0], in[1], -1.5); },
           {x, mask});
  check_op("tril", [](const std::vector<Tensor>& in) { return tril(in[0], 1); }, {x});
  check_op("triu_ strided",
           [](const std::vector<Tensor>& in) {
             Tensor c = clone(in[0]);
             Tensor v = transpose(c, 1, 2);
             triu_(v, -1);
             return c;
           },
           {x});
}

TEST(CudaKernels, CopyTakesThe64BitIndexPath) {
  SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 31) + 5;  // past int32: 64-bit offsets
  const Tensor one = cuda(full({1}, 3, DType::UInt8));
  Tensor big = empty({n}, DType::UInt8, gpu());
  copy_(big, expand(one, {n}));
  EXPECT_EQ(cpu(sum(big)).item<int64_t>(), 3 * n);
}

}  // namespace
}  // namespace loom::testing
