// cuda.sgemm.N, cuda.hgemm.N: square matrix products on cuda:0 through Loom's mm (the cuda
// plugin's cuBLAS kernel, a new result from the caching allocator each call), beside, as "raw",
// the cuBLAS call itself on buffers of the same shapes made once: cublasSgemm for float32
// (default math: no TF32, as Loom's default; LOOM_ALLOW_TF32=1 turns it on for both), and
// cublasGemmEx with float16 operands and float32 accumulation for float16 (what PyTorch and
// Loom use). Rates in TFLOP/s; ratio_raw = raw / loom (below 1 is better for Loom).
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda_bench.h"
#include "loom/core/backend_flags.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"

namespace loom::bench {
namespace {

/// TFLOP/s of an n x n x n product taking ns nanoseconds.
double tflops(double ns, int64_t n) { return 2.0 * static_cast<double>(n * n * n) / ns / 1e3; }

/// n x n values in [-0.5, 0.5), the same pattern on every side.
std::vector<float> pattern(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n * n));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] =
        static_cast<float>((i * 7919 + static_cast<size_t>(seed) * 104729) % 1000) / 1000.0f - 0.5f;
  }
  return v;
}

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusName(s) + " (" +
                             cublasGetStatusString(s) + ")");
  }
}

Side loom_side(const char* name, int64_t n, DType dtype) {
  if (!cuda::unavailable_reason().empty()) return cuda::skipped(name);
  const Tensor a = Tensor::from_vector(pattern(n, 1), {n, n}).to(dtype).to(cuda::device());
  const Tensor b = Tensor::from_vector(pattern(n, 2), {n, n}).to(dtype).to(cuda::device());
  do_not_optimize(mm(a, b));  // the first call creates the cuBLAS handle and workspace
  cuda::sync();
  auto side = cuda::gpu_ns_per_call([=] { do_not_optimize(mm(a, b)); });
  return [side, n]() { return tflops(side()[0], n); };
}

/// Raw cuBLAS on row-major buffers: C = A B is C^T = B^T A^T in cuBLAS's column-major terms.
Side raw_side(int64_t n, bool half) {
  if (!cuda::unavailable_reason().empty()) return {};
  struct State {
    cublasHandle_t handle = nullptr;
    std::unique_ptr<cuda::DeviceBuffer> a, b, c;
    ~State() {
      if (handle) cublasDestroy(handle);
    }
  };
  auto s = std::make_shared<State>();
  check_cublas(cublasCreate(&s->handle), "cublasCreate");
  const bool tf32 = backends::allow_tf32();
  check_cublas(cublasSetMathMode(s->handle,
                                 !half && tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
               "cublasSetMathMode");
  const size_t count = static_cast<size_t>(n * n);
  const size_t bytes = count * (half ? sizeof(__half) : sizeof(float));
  s->a = std::make_unique<cuda::DeviceBuffer>(bytes);
  s->b = std::make_unique<cuda::DeviceBuffer>(bytes);
  s->c = std::make_unique<cuda::DeviceBuffer>(bytes);
  const std::vector<float> va = pattern(n, 1), vb = pattern(n, 2);
  if (half) {
    std::vector<__half> ha(count), hb(count);
    for (size_t i = 0; i < count; ++i) {
      ha[i] = __float2half(va[i]);
      hb[i] = __float2half(vb[i]);
    }
    s->a->upload(ha.data(), bytes);
    s->b->upload(hb.data(), bytes);
  } else {
    s->a->upload(va.data(), bytes);
    s->b->upload(vb.data(), bytes);
  }
  const int in = static_cast<int>(n);
  auto side = cuda::gpu_ns_per_call([s, in, half] {
    const float alpha = 1, beta = 0;
    if (half) {
      check_cublas(cublasGemmEx(s->handle, CUBLAS_OP_N, CUBLAS_OP_N, in, in, in, &alpha, s->b->ptr,
                                CUDA_R_16F, in, s->a->ptr, CUDA_R_16F, in, &beta, s->c->ptr,
                                CUDA_R_16F, in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
    } else {
      check_cublas(cublasSgemm(s->handle, CUBLAS_OP_N, CUBLAS_OP_N, in, in, in, &alpha,
                               static_cast<const float*>(s->b->ptr), in,
                               static_cast<const float*>(s->a->ptr), in, &beta,
                               static_cast<float*>(s->c->ptr), in),
                   "cublasSgemm");
    }
  });
  return [side, n]() { return tflops(side()[0], n); };
}

LOOM_BENCH("cuda.sgemm.1024", unit::rate("TFLOP/s"), .rounds = 9) {
  return loom_side("cuda.sgemm.1024", 1024, DType::Float32);
}
LOOM_BENCH_PEER(raw, "cuda.sgemm.1024") { return raw_side(1024, false); }

LOOM_BENCH("cuda.sgemm.4096", unit::rate("TFLOP/s"), .rounds = 7) {
  return loom_side("cuda.sgemm.4096", 4096, DType::Float32);
}
LOOM_BENCH_PEER(raw, "cuda.sgemm.4096") { return raw_side(4096, false); }

LOOM_BENCH("cuda.hgemm.1024", unit::rate("TFLOP/s"), .rounds = 9) {
  return loom_side("cuda.hgemm.1024", 1024, DType::Float16);
}
LOOM_BENCH_PEER(raw, "cuda.hgemm.1024") { return raw_side(1024, true); }

LOOM_BENCH("cuda.hgemm.4096", unit::rate("TFLOP/s"), .rounds = 7) {
  return loom_side("cuda.hgemm.4096", 4096, DType::Float16);
}
LOOM_BENCH_PEER(raw, "cuda.hgemm.4096") { return raw_side(4096, true); }

}  // namespace
}  // namespace loom::bench
