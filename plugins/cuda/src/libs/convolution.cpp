// CUDA kernels of the convolution family through cuDNN 9's descriptor API (cudnn_cnn):
// convolution (plain and transposed, any groups, 1-d and 2-d), convolution_backward, and
// conv1d / conv2d (explicit padding or 'valid'/'same') / conv_transpose1d / conv_transpose2d,
// which have reference kernels of their own and so need CUDA ones too. 1-d runs as 2-d with a
// unit height; 3-d is refused (NotImplementedError, as the reference CPU kernels do).
//
// Every tensor reaches cuDNN contiguous NCHW (inputs are made contiguous first) with 4-d
// descriptors; weights are filters [K, C/groups, kH, kW] (NCHW). A transposed convolution is
// the data gradient of the plain one whose input is its output: in cuDNN's roles, x is the
// transposed convolution's output, y its input, and its weight [Cin, Cout/groups, kH, kW] is
// the filter as it is (Note [Convolution roles] below).
//
// Note [cuDNN algorithm choice]: for each of the three computations (forward, backward data,
// backward filter) and each problem (a key of the kind, device, dtype, every dim, padding,
// stride, dilation, groups, and the mode) the algorithm is chosen once and cached in a
// mutex-protected hash map:
//  - deterministic mode (backends::deterministic()): the best algorithm cuDNN's heuristics
//    (cudnnGet*Algorithm_v7) list as CUDNN_DETERMINISTIC; for the backward passes, the
//    deterministic ALGO_1 when nothing is listed. Benchmark mode is ignored then.
//  - benchmark mode (backends::benchmark()): cudnnFind*AlgorithmEx times the algorithms on
//    the call's own tensors, with a workspace as large as the largest the heuristics list
//    (at most 1 GiB), once per key; find_count() counts these searches.
//  - otherwise: the heuristics' first working algorithm.
// An algorithm wanting more than 1 GiB of workspace is passed over in every mode.
// float32 without backends::allow_tf32() runs CUDNN_FMA_MATH and skips tensor-op algorithms;
// float16 and bfloat16 compute in float on tensor cores; float64 in double.
//
// The bias is added, and its gradient summed, by the own kernels of libs/channel.cu (any
// dtype, a fixed summation order) rather than by cudnnAddTensor / cudnnConvolutionBackwardBias.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libs/common.h"
#include "libs/handles.h"
#include "libs/kernels.h"
#include "loom/core/backend_flags.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/library.h"
#include "loom/ops/nn/meta/convolution.h"

namespace loom::cuda::libs {

/// The number of cudnnFind*AlgorithmEx searches run so far (benchmark mode; a search runs
/// once per problem). Exported for tests: loom_cuda_cudnn_find_count().
int64_t cudnn_find_count();

namespace {

std::atomic<int64_t> g_find_count{0};

// ---- parameters and checks (the reference kernels' wording) ----

/// A checked convolution brought to 2-d (the height of a 1-d one is a unit).
struct Conv {
  bool transposed = false, one_d = false;
  int64_t N = 0, Cin = 0, H = 0, W = 0;  ///< the op's input
  int64_t Cout = 0, oH = 0, oW = 0;      ///< the op's output
  int64_t kH = 0, kW = 0, groups = 1;
  int64_t pH = 0, pW = 0, sH = 1, sW = 1, dH = 1, dW = 1;
  std::vector<int64_t> out_sizes;  ///< the op's output sizes at its rank
  DType dtype = DType::Float32;
};

/// Checks a batched convolution (PyTorch's check_shape_forward and the CPU kernels' checks)
/// and returns its 2-d geometry.
Conv plan(std::string_view op, const Tensor& input, const Tensor& weight, const Tensor& bias,
          IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
          IntArrayRef output_padding, int64_t groups) {
  const int64_t k = weight.dim();
  const int64_t dim = ops::meta::check_weight_and_groups(op, weight, groups);
  const ops::meta::ConvParams prm = ops::meta::make_params(op, dim, stride, padding, dilation,
                                                           transposed, output_padding, groups);
  const IntArrayRef ws = weight.sizes();
  ops::meta::check_shape_forward(op, input, ws, bias, prm);
  const std::vector<int64_t>& s = prm.stride;
  const std::vector<int64_t>& p = prm.padding;
  const std::vector<int64_t>& d = prm.dilation;
  const std::vector<int64_t>& o = prm.output_padding;
  LOOM_CHECK_T(NotImplementedError, dim <= 2, op, ": ", dim,
               "-d convolution is not implemented by the CUDA kernels (1-d and 2-d are)");
  Conv c;
  c.transposed = transposed;
  c.one_d = dim == 1;
  c.groups = groups;
  c.dtype = input.dtype();
  c.N = input.size(0);
  c.Cin = input.size(1);
  c.H = c.one_d ? 1 : input.size(2);
  c.W = input.size(k - 1);
  c.kH = c.one_d ? 1 : ws[2];
  c.kW = ws[k - 1];
  const auto two = [&](const std::vector<int64_t>& v, int64_t unit) {
    return c.one_d ? std::pair<int64_t, int64_t>{unit, v[0]} : std::pair<int64_t, int64_t>{v[0], v[1]};
  };
  std::tie(c.sH, c.sW) = two(s, 1);
  std::tie(c.pH, c.pW) = two(p, 0);
  std::tie(c.dH, c.dW) = two(d, 1);
  const auto [opH, opW] = two(o, 0);
  if (!transposed) {
    ops::meta::check_no_output_padding(op, o);
    c.Cout = ws[0];
    c.oH = ops::meta::conv_output_size(op, 0, c.H, c.kH, c.sH, c.pH, c.dH, 0, false);
    c.oW = ops::meta::conv_output_size(op, c.one_d ? 0 : 1, c.W, c.kW, c.sW, c.pW, c.dW, 0, false);
  } else {
    c.Cout = ws[1] * groups;
    ops::meta::check_transposed_output_padding(op, opH, opW, c.sH, c.sW, c.dH, c.dW);
    c.oH = ops::meta::conv_output_size(op, 0, c.H, c.kH, c.sH, c.pH, c.dH, opH, true);
    c.oW = ops::meta::conv_output_size(op, c.one_d ? 0 : 1, c.W, c.kW, c.sW, c.pW, c.dW, opW, true);
    ops::meta::check_transposed_output_size(op, c.H, c.W, c.oH, c.oW);
  }
  LOOM_CHECK(c.kH > 0 && c.kW > 0, op, ": kernel size should be greater than zero, but got kH: ",
             c.kH, " kW: ", c.kW);
  c.out_sizes = ops::meta::conv_out_sizes(c.N, c.Cout, c.oH, c.oW, c.one_d);
  ops::meta::check_result_numel(op, c.out_sizes, input.dtype());  // as the reference
  return c;
}

void check_types(std::string_view op, const Tensor& input, const Tensor& weight,
                 const Tensor& bias) {
  LOOM_CHECK_T(TypeError, input.dtype() == weight.dtype(), op, ": Input type (",
               dtype_name(input.dtype()), ") and weight type (", dtype_name(weight.dtype()),
               ") should be the same");
  LOOM_CHECK_T(TypeError, !bias.defined() || input.dtype() == bias.dtype(), op, ": Input type (",
               dtype_name(input.dtype()), ") and bias type (", dtype_name(bias.dtype()),
               ") should be the same");
  check_float_dtype(op, "input", input);
}

using ops::meta::squeeze_view;
using ops::meta::unsqueeze_view;

// ---- descriptors (RAII) ----

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(std::string_view op, DType t, int64_t n, int64_t c, int64_t h, int64_t w) {
    LOOM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d), op);
    LOOM_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, cudnn_dtype(t),
                                                to_int(op, "the batch size", n),
                                                to_int(op, "the channels", c),
                                                to_int(op, "the height", h),
                                                to_int(op, "the width", w)),
                     op);
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc(std::string_view op, DType t, int64_t k, int64_t c, int64_t h, int64_t w) {
    LOOM_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d), op);
    LOOM_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d, cudnn_dtype(t), CUDNN_TENSOR_NCHW,
                                                to_int(op, "the filters", k),
                                                to_int(op, "the filter channels", c),
                                                to_int(op, "the kernel height", h),
                                                to_int(op, "the kernel width", w)),
                     op);
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};

/// The math type a convolution of dtype t starts from (Note [cuDNN algorithm choice]).
cudnnMathType_t base_math(DType t) {
  if (t == DType::Float16 || t == DType::BFloat16) return CUDNN_TENSOR_OP_MATH;
  if (t == DType::Float32 && !backends::allow_tf32()) return CUDNN_FMA_MATH;
  return CUDNN_DEFAULT_MATH;
}

struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc(std::string_view op, const Conv& c) {
    LOOM_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d), op);
    const cudnnDataType_t compute = c.dtype == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    LOOM_CUDNN_CHECK(
        cudnnSetConvolution2dDescriptor(
            d, to_int(op, "the padding", c.pH), to_int(op, "the padding", c.pW),
            to_int(op, "the stride", c.sH), to_int(op, "the stride", c.sW),
            to_int(op, "the dilation", c.dH), to_int(op, "the dilation", c.dW),
            CUDNN_CROSS_CORRELATION, compute),
        op);
    LOOM_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d, to_int(op, "groups", c.groups)), op);
    LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(d, base_math(c.dtype)), op);
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

/// Note [Convolution roles]: the descriptors of a convolution in cuDNN's roles: x (the plain
/// convolution's input), w (the filter), y (its output). Plain: x = the op's input, y = its
/// output. Transposed: x = the op's output, y = the op's input.
struct Descs {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  Descs(std::string_view op, const Conv& c)
      : x(op, c.dtype, c.N, c.transposed ? c.Cout : c.Cin, c.transposed ? c.oH : c.H,
          c.transposed ? c.oW : c.W),
        y(op, c.dtype, c.N, c.transposed ? c.Cin : c.Cout, c.transposed ? c.H : c.oH,
          c.transposed ? c.W : c.oW),
        w(op, c.dtype, c.transposed ? c.Cin : c.Cout,
          (c.transposed ? c.Cout : c.Cin) / c.groups, c.kH, c.kW),
        conv(op, c) {}
};

// ---- algorithm choice (Note [cuDNN algorithm choice]) ----

enum class Kind { Fwd = 0, BwdData = 1, BwdFilter = 2 };

/// A chosen algorithm: its id, math type and workspace.
struct Choice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

std::string cache_key(Kind kind, int device, const Conv& c, int mode) {
  return str_cat(static_cast<int>(kind), ",", device, ",", static_cast<int>(c.dtype), ",",
                 c.transposed, ",", c.N, ",", c.Cin, ",", c.H, ",", c.W, ",", c.Cout, ",", c.oH,
                 ",", c.oW, ",", c.kH, ",", c.kW, ",", c.groups, ",", c.pH, ",", c.pW, ",", c.sH,
                 ",", c.sW, ",", c.dH, ",", c.dW, ",", mode, ",", backends::allow_tf32());
}

std::mutex g_cache_mutex;
std::unordered_map<std::string, Choice>& cache() {
  static auto* map = new std::unordered_map<std::string, Choice>();
  return *map;
}

/// The largest workspace an algorithm may ask for (an FFT algorithm can want gigabytes); a
/// heuristic choice beyond it goes to the next algorithm listed.
constexpr size_t kMaxWorkspace = size_t{1} << 30;

/// The first usable entry of perf results (best first) under the current mode, if any.
template <typename Perf>
std::optional<Choice> pick(const Perf* perf, int count, DType dtype, bool deterministic) {
  const bool no_tf32 = dtype == DType::Float32 && !backends::allow_tf32();
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxWorkspace) continue;
    if (deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    cudnnMathType_t math = p.mathType;
    if (no_tf32) {
      if (math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
      math = CUDNN_FMA_MATH;
    }
    return Choice{static_cast<int>(p.algo), math, p.memory};
  }
  return std::nullopt;
}

/// The per-kind cuDNN entry points, so choose() is written once.
struct FwdApi {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr int kFallback = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  static int max_count(cudnnHandle_t h) {
    int n = 0;
    return cudnnGetConvolutionForwardAlgorithmMaxCount(h, &n) == CUDNN_STATUS_SUCCESS ? n : 8;
  }
  static cudnnStatus_t get(cudnnHandle_t h, const Descs& d, int n, int* r, Perf* p) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.d, d.w.d, d.conv.d, d.y.d, n, r, p);
  }
  /// a: x, b: w, out: y.
  static cudnnStatus_t find(cudnnHandle_t h, const Descs& d, const void* a, const void* b,
                            void* out, int n, int* r, Perf* p, void* ws, size_t wss) {
    return cudnnFindConvolutionForwardAlgorithmEx(h, d.x.d, a, d.w.d, b, d.conv.d, d.y.d, out, n,
                                                  r, p, ws, wss);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descs& d, int algo, size_t* s) {
    return cudnnGetConvolutionForwardWorkspaceSize(
        h, d.x.d, d.w.d, d.conv.d, d.y.d, static_cast<cudnnConvolutionFwdAlgo_t>(algo), s);
  }
};

struct BwdDataApi {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr int kFallback = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  static int max_count(cudnnHandle_t h) {
    int n = 0;
    return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &n) == CUDNN_STATUS_SUCCESS ? n : 8;
  }
  static cudnnStatus_t get(cudnnHandle_t h, const Descs& d, int n, int* r, Perf* p) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.d, d.y.d, d.conv.d, d.x.d, n, r, p);
  }
  /// a: w, b: dy, out: dx.
  static cudnnStatus_t find(cudnnHandle_t h, const Descs& d, const void* a, const void* b,
                            void* out, int n, int* r, Perf* p, void* ws, size_t wss) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w.d, a, d.y.d, b, d.conv.d, d.x.d, out,
                                                       n, r, p, ws, wss);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descs& d, int algo, size_t* s) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, d.w.d, d.y.d, d.conv.d, d.x.d, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), s);
  }
};

struct BwdFilterApi {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr int kFallback = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  static int max_count(cudnnHandle_t h) {
    int n = 0;
    return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &n) == CUDNN_STATUS_SUCCESS ? n
                                                                                               : 8;
  }
  static cudnnStatus_t get(cudnnHandle_t h, const Descs& d, int n, int* r, Perf* p) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.d, d.y.d, d.conv.d, d.w.d, n, r, p);
  }
  /// a: x, b: dy, out: dw.
  static cudnnStatus_t find(cudnnHandle_t h, const Descs& d, const void* a, const void* b,
                            void* out, int n, int* r, Perf* p, void* ws, size_t wss) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x.d, a, d.y.d, b, d.conv.d, d.w.d,
                                                         out, n, r, p, ws, wss);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descs& d, int algo, size_t* s) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, d.x.d, d.y.d, d.conv.d, d.w.d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), s);
  }
};

/// The algorithm of a computation (cached per problem), its math type set on d.conv.
/// a, b, out: the computation's two inputs and its output (Api::find's order), written by
/// a benchmark search.
template <typename Api>
Choice choose(std::string_view op, Kind kind, cudnnHandle_t h, int device, const Conv& c,
              const Descs& d, const void* a, const void* b, void* out) {
  const bool det = backends::deterministic();
  const bool bench = !det && backends::benchmark();
  const int mode = det ? 2 : (bench ? 1 : 0);
  const std::string key = cache_key(kind, device, c, mode);
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (auto it = cache().find(key); it != cache().end()) {
      LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.d, it->second.math), op);
      return it->second;
    }
  }
  const int n = std::max(1, Api::max_count(h));
  std::vector<typename Api::Perf> perf(static_cast<size_t>(n));
  int returned = 0;
  LOOM_CUDNN_CHECK(Api::get(h, d, n, &returned, perf.data()), op);
  std::optional<Choice> choice;
  if (bench) {
    // The largest workspace the heuristics list (bounded), for the search to use.
    size_t bytes = 0;
    for (int i = 0; i < returned; ++i) {
      if (perf[static_cast<size_t>(i)].status == CUDNN_STATUS_SUCCESS) {
        bytes = std::max(bytes, std::min(perf[static_cast<size_t>(i)].memory, kMaxWorkspace));
      }
    }
    const Tensor ws = new_on_device(device, {static_cast<int64_t>(std::max<size_t>(bytes, 1))},
                                    DType::UInt8);
    std::vector<typename Api::Perf> found(static_cast<size_t>(n));
    int found_count = 0;
    g_find_count.fetch_add(1, std::memory_order_relaxed);
    LOOM_CUDNN_CHECK(Api::find(h, d, a, b, out, n, &found_count, found.data(), ws.data_ptr(), bytes),
                     op);
    choice = pick(found.data(), found_count, c.dtype, false);
  }
  if (!choice) choice = pick(perf.data(), returned, c.dtype, det);
  if (!choice) choice = Choice{Api::kFallback, base_math(c.dtype), 0};
  LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.d, choice->math), op);
  // The workspace of the algorithm with the math type it runs with.
  LOOM_CUDNN_CHECK(Api::workspace(h, d, choice->algo, &choice->workspace), op);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  cache().emplace(key, *choice);
  return *choice;
}

// ---- the computations ----

/// alpha = 1 and beta = 0 of the convolution's compute type (float, or double for float64).
struct Scale {
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  const void* one(DType t) const { return t == DType::Float64 ? static_cast<const void*>(&d1) : &f1; }
  const void* zero(DType t) const { return t == DType::Float64 ? static_cast<const void*>(&d0) : &f0; }
};

Tensor workspace(int device, size_t bytes) {
  return new_on_device(device, {static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::UInt8);
}

/// y = conv(x, w) in cuDNN's roles (contiguous tensors).
void run_forward(std::string_view op, int device, const Conv& c, const Descs& d, const Tensor& x,
                 const Tensor& w, const Tensor& y) {
  cudnnHandle_t h = cudnn_handle(op, device);
  const Choice ch = choose<FwdApi>(op, Kind::Fwd, h, device, c, d, ptr(x), ptr(w), ptr(y));
  const Tensor ws = workspace(device, ch.workspace);
  const Scale s;
  LOOM_CUDNN_CHECK(cudnnConvolutionForward(h, s.one(c.dtype), d.x.d, ptr(x), d.w.d, ptr(w), d.conv.d,
                                           static_cast<cudnnConvolutionFwdAlgo_t>(ch.algo),
                                           ws.data_ptr(), ch.workspace, s.zero(c.dtype), d.y.d,
                                           ptr(y)),
                   op);
}

/// dx = the data gradient of y = conv(x, w) for dy.
void run_backward_data(std::string_view op, int device, const Conv& c, const Descs& d,
                       const Tensor& w, const Tensor& dy, const Tensor& dx) {
  cudnnHandle_t h = cudnn_handle(op, device);
  const Choice ch =
      choose<BwdDataApi>(op, Kind::BwdData, h, device, c, d, ptr(w), ptr(dy), ptr(dx));
  const Tensor ws = workspace(device, ch.workspace);
  const Scale s;
  LOOM_CUDNN_CHECK(cudnnConvolutionBackwardData(h, s.one(c.dtype), d.w.d, ptr(w), d.y.d, ptr(dy),
                                                d.conv.d,
                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(ch.algo),
                                                ws.data_ptr(), ch.workspace, s.zero(c.dtype), d.x.d,
                                                ptr(dx)),
                   op);
}

/// dw = the filter gradient of y = conv(x, w) for dy.
void run_backward_filter(std::string_view op, int device, const Conv& c, const Descs& d,
                         const Tensor& x, const Tensor& dy, const Tensor& dw) {
  cudnnHandle_t h = cudnn_handle(op, device);
  const Choice ch =
      choose<BwdFilterApi>(op, Kind::BwdFilter, h, device, c, d, ptr(x), ptr(dy), ptr(dw));
  const Tensor ws = workspace(device, ch.workspace);
  const Scale s;
  LOOM_CUDNN_CHECK(
      cudnnConvolutionBackwardFilter(h, s.one(c.dtype), d.x.d, ptr(x), d.y.d, ptr(dy), d.conv.d,
                                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(ch.algo),
                                     ws.data_ptr(), ch.workspace, s.zero(c.dtype), d.w.d, ptr(dw)),
      op);
}

/// The forward of a checked batched convolution (input, weight, bias as given).
Tensor forward(std::string_view op, const Conv& c, const Tensor& input, const Tensor& weight,
               const Tensor& bias) {
  OpGuard g(op, input);
  Tensor out = new_on(input, {c.N, c.Cout, c.oH, c.oW}, c.dtype);
  if (out.numel() == 0) return c.one_d ? squeeze_view(out, 2) : out;
  if (input.numel() == 0 || weight.numel() == 0) {
    zero_fill(op, out);
  } else {
    const Tensor x = dense(c.one_d ? unsqueeze_view(input, 2) : input);
    const Tensor w = dense(c.one_d ? unsqueeze_view(weight, 2) : weight);
    const Descs d(op, c);
    if (!c.transposed) {
      run_forward(op, g.device(), c, d, x, w, out);
    } else {
      run_backward_data(op, g.device(), c, d, w, x, out);
    }
  }
  if (bias.defined()) {
    const Tensor b = dense(bias);
    launch_add_channel_bias(kind_of(c.dtype), ptr(out), ptr(b), c.N, c.Cout, c.oH * c.oW,
                            g.stream());
    check_launch(op);
  }
  return c.one_d ? squeeze_view(out, 2) : out;
}

Tensor bias_of(const std::optional<Tensor>& bias) {
  return bias && bias->defined() ? *bias : Tensor();
}

/// convolution's checks and forward on a batched input.
Tensor conv_forward(std::string_view op, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias_opt, IntArrayRef stride, IntArrayRef padding,
                    IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                    int64_t groups) {
  const Tensor bias = bias_of(bias_opt);
  if (bias.defined()) {
    check_cuda_tensors(op, {{"input", input}, {"weight", weight}, {"bias", bias}});
  } else {
    check_cuda_tensors(op, {{"input", input}, {"weight", weight}});
  }
  check_types(op, input, weight, bias);
  const Conv c = plan(op, input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups);
  return forward(op, c, input, weight, bias);
}

/// PyTorch's batchify: a (spatial+1)-d input gets a batch of one.
std::pair<Tensor, bool> batchify(std::string_view op, const Tensor& input, int64_t spatial) {
  check_defined(op, {{"input", input}});
  return ops::meta::batchify(op, input, spatial);
}

using ops::meta::unbatchify;

Tensor conv_nd(std::string_view op, int64_t spatial, const Tensor& input, const Tensor& weight,
               const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
               IntArrayRef dilation, int64_t groups) {
  const auto [in, batched] = batchify(op, input, spatial);
  const int64_t zero = 0;
  return unbatchify(
      conv_forward(op, in, weight, bias, stride, padding, dilation, false, zero, groups), batched);
}

/// conv1d.padding / conv2d.padding. 'same' (stride 1) pads each side by half the dilated
/// kernel extent; when that total is odd the extra element goes right/bottom, which cuDNN's
/// symmetric padding cannot express: the convolution then runs with one more element of
/// padding on both sides of that dim, and its first output row/column is dropped (out[o] of
/// the asymmetric padding is out'[o + 1] of the symmetric one, for stride 1).
Tensor conv_mode_nd(std::string_view op, int64_t spatial, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias, IntArrayRef stride, std::string_view mode,
                    IntArrayRef dilation, int64_t groups) {
  const auto [in, batched] = batchify(op, input, spatial);
  const int64_t zero = 0;
  if (mode == "valid") {
    return unbatchify(
        conv_forward(op, in, weight, bias, stride, zero, dilation, false, zero, groups), batched);
  }
  LOOM_CHECK(mode == "same", op, ": Invalid padding string: '", mode, "'");
  check_defined(op, {{"input", input}, {"weight", weight}});
  LOOM_CHECK(weight.dim() > 2, op, ": weight should have at least three dimensions");
  const std::vector<int64_t> total = ops::meta::same_padding_totals(op, weight, stride, dilation);
  const size_t dim = total.size();
  std::vector<int64_t> pad(dim), odd(dim);
  for (size_t i = 0; i < dim; ++i) {
    odd[i] = total[i] % 2;
    pad[i] = total[i] / 2 + odd[i];
  }
  Tensor out = conv_forward(op, in, weight, bias, stride, pad, dilation, false, zero, groups);
  if (std::any_of(odd.begin(), odd.end(), [](int64_t v) { return v != 0; })) {
    std::vector<int64_t> sizes(out.sizes().begin(), out.sizes().end());
    int64_t offset = out.storage_offset();
    for (size_t i = 0; i < dim; ++i) {
      if (odd[i] == 0) continue;
      const auto d = static_cast<int64_t>(i) + 2;
      sizes[static_cast<size_t>(d)] -= 1;
      offset += out.stride(d);
    }
    out = dense(out.as_strided_view(sizes, out.strides(), offset));
  }
  return unbatchify(out, batched);
}

Tensor conv_transpose_nd(std::string_view op, int64_t spatial, const Tensor& input,
                         const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                         int64_t groups, IntArrayRef dilation) {
  const auto [in, batched] = batchify(op, input, spatial);
  return unbatchify(
      conv_forward(op, in, weight, bias, stride, padding, dilation, true, output_padding, groups),
      batched);
}

// ---- the registered kernels ----

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  return conv_forward("convolution", input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv1d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return conv_mode_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return conv_mode_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation);
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output,
                                                        const Tensor& input, const Tensor& weight,
                                                        std::optional<IntArrayRef> /*bias_sizes*/,
                                                        IntArrayRef stride, IntArrayRef padding,
                                                        IntArrayRef dilation, bool transposed,
                                                        IntArrayRef output_padding, int64_t groups,
                                                        const std::vector<bool>& output_mask) {
  constexpr std::string_view op = "convolution_backward";
  check_cuda_tensors(op, {{"grad_output", grad_output}, {"input", input}, {"weight", weight}});
  LOOM_CHECK(output_mask.size() == 3, op, ": expected output_mask to have 3 values, but got ",
             output_mask.size());
  LOOM_CHECK(input.dim() == grad_output.dim(), op,
             ": Expected input and grad_output to have the same number of dimensions, but got: ",
             input.dim(), " and ", grad_output.dim());
  check_same_dtype(op, {{"grad_output", grad_output}, {"input", input}, {"weight", weight}});
  check_float_dtype(op, "input", input);
  const Conv c = plan(op, input, weight, Tensor(), stride, padding, dilation, transposed,
                      output_padding, groups);
  ops::meta::check_grad_output_sizes(op, grad_output, input, weight, c.out_sizes);
  OpGuard g(op, input);
  const auto four = [&](const Tensor& t) { return dense(c.one_d ? unsqueeze_view(t, 2) : t); };
  const Tensor go = four(grad_output);
  Tensor gi, gw, gb;
  const bool empty = input.numel() == 0 || weight.numel() == 0 || go.numel() == 0;
  std::optional<Descs> d;
  if (!empty && (output_mask[0] || output_mask[1])) d.emplace(op, c);
  if (output_mask[0]) {
    gi = new_on(input, {c.N, c.Cin, c.H, c.W}, c.dtype);
    if (empty) {
      zero_fill(op, gi);
    } else if (!transposed) {
      run_backward_data(op, g.device(), c, *d, four(weight), go, gi);
    } else {
      run_forward(op, g.device(), c, *d, go, four(weight), gi);
    }
    if (c.one_d) gi = squeeze_view(gi, 2);
  }
  if (output_mask[1]) {
    gw = new_on(weight, {weight.size(0), weight.size(1), c.kH, c.kW}, c.dtype);
    if (empty) {
      zero_fill(op, gw);
    } else if (!transposed) {
      run_backward_filter(op, g.device(), c, *d, four(input), go, gw);
    } else {
      run_backward_filter(op, g.device(), c, *d, go, four(input), gw);
    }
    if (c.one_d) gw = squeeze_view(gw, 2);
  }
  if (output_mask[2]) {
    gb = new_on(input, {c.Cout}, c.dtype);
    launch_channel_sum(kind_of(c.dtype), ptr(go), c.N, c.Cout, c.oH * c.oW, ptr(gb), g.stream());
    check_launch(op);
  }
  return {gi, gw, gb};
}

}  // namespace

int64_t cudnn_find_count() { return g_find_count.load(std::memory_order_relaxed); }

LOOM_LIBRARY_IMPL(aten, CUDA, m) {
  m.set_provider("cuda");
  m.impl("convolution", &convolution);
  m.impl("convolution_backward", &convolution_backward);
  m.impl("conv1d", &conv1d);
  m.impl("conv2d", &conv2d);
  m.impl("conv1d.padding", &conv1d_padding);
  m.impl("conv2d.padding", &conv2d_padding);
  m.impl("conv_transpose1d", &conv_transpose1d);
  m.impl("conv_transpose2d.input", &conv_transpose2d);
}

}  // namespace loom::cuda::libs

/// The number of cuDNN algorithm searches (benchmark mode) this process has run; for tests,
/// found with dlsym in the loaded plugin.
extern "C" __attribute__((visibility("default"))) int64_t loom_cuda_cudnn_find_count() {
  return loom::cuda::libs::cudnn_find_count();
}
