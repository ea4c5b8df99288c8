// cuda.conv3x3.fwd: the CPU conv3x3.fwd's shape (a batch of 32, 64 -> 64 channels, 56 x 56, 3x3,
// padding 1, float32, NCHW) on cuda:0 through Loom's conv2d (the cuda plugin's cuDNN kernel,
// its default algorithm choice), and cuda.conv3x3.fwd.benchmark the same with Loom's benchmark
// mode on (cuDNN's algorithm search, cached per shape). The "raw" side of both is cuDNN itself:
// descriptors, the fastest algorithm cudnnFindConvolutionForwardAlgorithm measures, and its
// workspace, all made once, then cudnnConvolutionForward in the loop. TF32 follows Loom's
// switch (off by default: FMA math only on both sides; LOOM_ALLOW_TF32=1 allows tensor ops).
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda_bench.h"
#include "loom/core/backend_flags.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/ops/tensor_methods.h"

namespace loom::bench {
namespace {

constexpr int64_t kN = 32, kC = 64, kHW = 56;

/// Values in [-0.5, 0.5) in a fixed pattern (bench/onednn_conv_bench.cpp's).
std::vector<float> pattern(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
  return v;
}

void check_cudnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cudnnGetErrorString(s));
  }
}

Side loom_side(const char* name, bool benchmark_mode) {
  if (!cuda::unavailable_reason().empty()) return cuda::skipped(name);
  const Tensor x =
      Tensor::from_vector(pattern(kN * kC * kHW * kHW), {kN, kC, kHW, kHW}).to(cuda::device());
  const Tensor w = Tensor::from_vector(pattern(kC * kC * 9), {kC, kC, 3, 3}).to(cuda::device());
  auto run = [=] { do_not_optimize(conv2d(x, w, std::nullopt, 1, 1)); };
  // Each sample runs with the mode it measures and restores the previous one.
  auto with_mode = [benchmark_mode](auto&& f) {
    const bool before = backends::benchmark();
    backends::set_benchmark(benchmark_mode);
    struct Restore {
      bool before;
      ~Restore() { backends::set_benchmark(before); }
    } restore{before};
    return f();
  };
  with_mode([&] {
    run();  // the first call picks (or searches) the algorithm
    cuda::sync();
    return 0;
  });
  auto side = cuda::gpu_ns_per_call(run);
  return [side, with_mode]() { return with_mode([&] { return side()[0] / 1e3; }); };
}

Side raw_side() {
  if (!cuda::unavailable_reason().empty()) return {};
  struct State {
    cudnnHandle_t handle = nullptr;
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnConvolutionFwdAlgo_t algo{};
    std::unique_ptr<cuda::DeviceBuffer> dx, dw, dy, workspace;
    size_t workspace_bytes = 0;
    ~State() {
      if (conv) cudnnDestroyConvolutionDescriptor(conv);
      if (w) cudnnDestroyFilterDescriptor(w);
      if (y) cudnnDestroyTensorDescriptor(y);
      if (x) cudnnDestroyTensorDescriptor(x);
      if (handle) cudnnDestroy(handle);
    }
  };
  auto s = std::make_shared<State>();
  const int n = kN, c = kC, hw = kHW;
  check_cudnn(cudnnCreate(&s->handle), "cudnnCreate");
  check_cudnn(cudnnCreateTensorDescriptor(&s->x), "cudnnCreateTensorDescriptor");
  check_cudnn(cudnnCreateTensorDescriptor(&s->y), "cudnnCreateTensorDescriptor");
  check_cudnn(cudnnCreateFilterDescriptor(&s->w), "cudnnCreateFilterDescriptor");
  check_cudnn(cudnnCreateConvolutionDescriptor(&s->conv), "cudnnCreateConvolutionDescriptor");
  check_cudnn(cudnnSetTensor4dDescriptor(s->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hw, hw),
              "cudnnSetTensor4dDescriptor");
  check_cudnn(cudnnSetTensor4dDescriptor(s->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hw, hw),
              "cudnnSetTensor4dDescriptor");
  check_cudnn(cudnnSetFilter4dDescriptor(s->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, c, c, 3, 3),
              "cudnnSetFilter4dDescriptor");
  check_cudnn(cudnnSetConvolution2dDescriptor(s->conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT),
              "cudnnSetConvolution2dDescriptor");
  const bool tf32 = backends::allow_tf32();
  check_cudnn(cudnnSetConvolutionMathType(s->conv, tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
              "cudnnSetConvolutionMathType");
  const size_t xbytes = sizeof(float) * n * c * hw * hw, wbytes = sizeof(float) * c * c * 9;
  s->dx = std::make_unique<cuda::DeviceBuffer>(xbytes);
  s->dy = std::make_unique<cuda::DeviceBuffer>(xbytes);
  s->dw = std::make_unique<cuda::DeviceBuffer>(wbytes);
  s->dx->upload(pattern(kN * kC * kHW * kHW).data(), xbytes);
  s->dw->upload(pattern(kC * kC * 9).data(), wbytes);
  // The fastest algorithm cuDNN measures, among those of the math type allowed.
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int found = 0;
  check_cudnn(cudnnFindConvolutionForwardAlgorithm(s->handle, s->x, s->w, s->conv, s->y,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
              "cudnnFindConvolutionForwardAlgorithm");
  int best = -1;
  for (int i = 0; i < found && best < 0; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        (tf32 || perf[i].mathType != CUDNN_TENSOR_OP_MATH)) {
      best = i;
    }
  }
  if (best < 0) throw std::runtime_error("cuDNN found no forward algorithm for the shape");
  s->algo = perf[best].algo;
  check_cudnn(cudnnSetConvolutionMathType(s->conv, perf[best].mathType),
              "cudnnSetConvolutionMathType");
  check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(s->handle, s->x, s->w, s->conv, s->y, s->algo,
                                                      &s->workspace_bytes),
              "cudnnGetConvolutionForwardWorkspaceSize");
  s->workspace = std::make_unique<cuda::DeviceBuffer>(s->workspace_bytes);
  std::printf("  raw side of cuda.conv3x3.fwd: cuDNN algorithm %d (%.3f ms measured by cuDNN)\n",
              static_cast<int>(s->algo), static_cast<double>(perf[best].time));
  std::fflush(stdout);
  auto side = cuda::gpu_ns_per_call([s] {
    const float alpha = 1, beta = 0;
    check_cudnn(cudnnConvolutionForward(s->handle, &alpha, s->x, s->dx->ptr, s->w, s->dw->ptr,
                                        s->conv, s->algo, s->workspace->ptr, s->workspace_bytes,
                                        &beta, s->y, s->dy->ptr),
                "cudnnConvolutionForward");
  });
  return [side]() { return side()[0] / 1e3; };
}

LOOM_BENCH("cuda.conv3x3.fwd", unit::us, .rounds = 9) {
  return loom_side("cuda.conv3x3.fwd", false);
}
LOOM_BENCH_PEER(raw, "cuda.conv3x3.fwd") { return raw_side(); }

LOOM_BENCH("cuda.conv3x3.fwd.benchmark", unit::us, .rounds = 9) {
  return loom_side("cuda.conv3x3.fwd.benchmark", true);
}
LOOM_BENCH_PEER(raw, "cuda.conv3x3.fwd.benchmark") { return raw_side(); }

}  // namespace
}  // namespace loom::bench
