// ops.*: the reference CPU kernels of ops_core / ops_nn and loom::optim's Adam step on the
// shapes of the operator issues, beside both libtorch peers (bench/libtorch/ops_peer.cpp).
// The memory-bound rows have a "raw" peer, the machine's roofline: memcpy of the same number
// of bytes (a memcpy of B bytes moves 2B: it reads and writes), split in two halves over 2
// OpenMP threads. Rates count the bytes an op must move (each input read once, each output
// written once); ratio_raw = memcpy GB/s / the op's GB/s (for times: the op's time / memcpy's),
// so the "at least 0.8 x memcpy" is ratio_raw <= 1.25. All sides use 2 threads.
#include <omp.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "harness.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"
#include "loom/ops/nn.h"
#include "loom/optim/ops.h"

namespace loom::bench {
namespace {

constexpr int64_t k16M = int64_t{16} << 20;
constexpr double kMiB = 1024.0 * 1024.0;

void load_ops() {
  PluginLoader::instance().load("ops_core");
  PluginLoader::instance().load("ops_nn");
}

/// Two page-aligned buffers of bytes each, written once (so no first-touch fault is timed).
/// The fastest plain copy this machine has for buffers far larger than the caches: 16-byte
/// non-temporal stores (SSE2, every x86-64), which write whole lines without first reading
/// them. glibc's memcpy did not stream at these sizes on the AMD Zen 4 machine (27-36 GB/s
/// against 60-90 for this loop), which made the roofline flatter Loom's memory-bound rows.
/// dst and src are 64-byte aligned (the chunks start on whole lines).
void stream_copy(char* dst, const char* src, size_t n) {
#if defined(__x86_64__)
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (size_t k = 0; k < 64; k += 16) {
      const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(src + i + k));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + k), v);
    }
  }
  std::memcpy(dst + i, src + i, n - i);
  _mm_sfence();
#else
  std::memcpy(dst, src, n);
#endif
}

struct CopyBuffers {
  size_t bytes;
  char* src;
  char* dst;
  explicit CopyBuffers(size_t n)
      : bytes(n),
        src(static_cast<char*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))),
        dst(static_cast<char*>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {
    if (!src || !dst) throw std::bad_alloc();
    std::memset(src, 1, n);
    std::memset(dst, 0, n);
  }
  ~CopyBuffers() {
    std::free(src);
    std::free(dst);
  }
  CopyBuffers(const CopyBuffers&) = delete;
  CopyBuffers& operator=(const CopyBuffers&) = delete;
  /// One copy of the buffer, one half per thread (stream_copy).
  void copy() const {
#pragma omp parallel num_threads(2)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      const size_t chunk = (bytes / static_cast<size_t>(n) + 63) / 64 * 64;
      const size_t begin = std::min(bytes, chunk * static_cast<size_t>(t));
      const size_t end = std::min(bytes, begin + chunk);
      stream_copy(dst + begin, src + begin, end - begin);
    }
    do_not_optimize(dst[0]);
  }
};

/// The roofline for the rates: GB/s of a 64 MiB memcpy (reads and writes counted).
Side memcpy_rate() {
  auto b = std::make_shared<CopyBuffers>(size_t{64} << 20);
  auto side = ns_per_call([b] { b->copy(); });
  return [side, b]() { return 2.0 * static_cast<double>(b->bytes) / side()[0]; };
}

/// The roofline for a time: microseconds to memcpy half of moved_bytes (that moves them all).
Side memcpy_us(double moved_bytes) {
  auto b = std::make_shared<CopyBuffers>(static_cast<size_t>(moved_bytes / 2));
  auto side = ns_per_call([b] { b->copy(); });
  return [side]() { return side()[0] / 1000.0; };
}

/// Deterministic values in [-0.5, 0.5) (no two neighbours equal: pooling has real maxima).
Tensor pattern(IntArrayRef sizes) {
  Tensor t = Tensor::empty(sizes);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
  return t;
}

Tensor filled(IntArrayRef sizes, double v) {
  Tensor t = Tensor::empty(sizes);
  fill_(t, v);
  return t;
}

/// GB/s moved by an add of n float32 (two reads, one write).
double add_gbps(double ns, int64_t n) { return 3.0 * 4.0 * static_cast<double>(n) / ns; }

LOOM_BENCH("add.1elem", unit::ns, .max_ratio = 0.4) {
  load_ops();
  const Tensor a = filled({1}, 1.5), b = filled({1}, 2.5);
  return ns_per_call([=] { do_not_optimize(add(a, b)); });
}

LOOM_BENCH("memcpy.16M", unit::rate("GB/s"), .rounds = 9, .max_ratio = 1.0,
           .max_ratio_raw = 1.25) {
  // copy_ of 16M float32 (64 MiB): the op closest to memcpy; raw is memcpy itself.
  load_ops();
  const Tensor src = filled({k16M}, 1.5), dst = filled({k16M}, 0);
  auto side = ns_per_call([=] { do_not_optimize(copy_(dst, src)); });
  return [side]() { return 2.0 * 4.0 * static_cast<double>(k16M) / side()[0]; };
}

LOOM_BENCH_PEER(raw, "memcpy.16M") { return memcpy_rate(); }

LOOM_BENCH("add.16M.out", unit::rate("GB/s"), .rounds = 9, .max_ratio = 1.0,
           .max_ratio_raw = 1.25) {
  load_ops();
  const Tensor a = filled({k16M}, 1.5), b = filled({k16M}, 2.5), out = filled({k16M}, 0);
  auto side = ns_per_call([=] { do_not_optimize(add_out(out, a, b)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH_PEER(raw, "add.16M.out") { return memcpy_rate(); }

LOOM_BENCH("add.16M.alloc", unit::rate("GB/s"), .rounds = 9) {
  load_ops();
  const Tensor a = filled({k16M}, 1.5), b = filled({k16M}, 2.5);
  auto side = ns_per_call([=] { do_not_optimize(add(a, b)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}

LOOM_BENCH("sum.16M", unit::rate("GB/s"), .rounds = 9, .max_ratio = 1.0,
           .max_ratio_raw = 1.25) {
  load_ops();
  const Tensor a = filled({k16M}, 0.5);
  auto side = ns_per_call([=] { do_not_optimize(sum(a)); });
  return [side]() { return 4.0 * static_cast<double>(k16M) / side()[0]; };
}

LOOM_BENCH_PEER(raw, "sum.16M") { return memcpy_rate(); }

/// The softmax rows' input: 4096 x 1024 float32 in [0, 4).
Tensor softmax_input() {
  Tensor x = Tensor::empty({4096, 1024});
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < 4096 * 1024; ++i) p[i] = static_cast<float>((i * 7919) % 1000) / 250.0f;
  return x;
}
constexpr double kSoftmaxBytes = 2.0 * 16 * kMiB;  // read x, write the result

template <typename F>
Side us_per_call(F body) {
  auto side = ns_per_call(std::move(body));
  return [side]() { return side()[0] / 1000.0; };
}

LOOM_BENCH("softmax.4096x1024", unit::us, .rounds = 9, .max_ratio = 1.0,
           .max_ratio_raw = 1.25) {
  load_ops();
  const Tensor x = softmax_input();
  return us_per_call([=] { do_not_optimize(softmax(x, 1)); });
}
LOOM_BENCH_PEER(raw, "softmax.4096x1024") { return memcpy_us(kSoftmaxBytes); }

LOOM_BENCH("log_softmax.4096x1024", unit::us, .rounds = 9, .max_ratio = 1.0,
           .max_ratio_raw = 1.25) {
  load_ops();
  const Tensor x = softmax_input();
  return us_per_call([=] { do_not_optimize(log_softmax(x, 1)); });
}
LOOM_BENCH_PEER(raw, "log_softmax.4096x1024") { return memcpy_us(kSoftmaxBytes); }

LOOM_BENCH("softmax.bwd.4096x1024", unit::us, .rounds = 9, .max_ratio = 1.0,
           .max_ratio_raw = 1.25) {
  // The op softmax's backward runs: _softmax_backward_data(grad, softmax output).
  load_ops();
  const Tensor y = softmax(softmax_input(), 1), g = pattern({4096, 1024});
  return us_per_call(
      [=] { do_not_optimize(_softmax_backward_data(g, y, 1, DType::Float32)); });
}
LOOM_BENCH_PEER(raw, "softmax.bwd.4096x1024") { return memcpy_us(1.5 * kSoftmaxBytes); }

LOOM_BENCH("relu.bwd.16M", unit::rate("GB/s"), .rounds = 9, .max_ratio = 1.0,
           .max_ratio_raw = 1.25) {
  // relu's backward, threshold_backward(grad, self, 0): two reads and a write per element.
  load_ops();
  const Tensor g = filled({k16M}, 1.5), x = pattern({k16M});
  auto side = ns_per_call([=] { do_not_optimize(threshold_backward(g, x, 0)); });
  return [side]() { return add_gbps(side()[0], k16M); };
}
LOOM_BENCH_PEER(raw, "relu.bwd.16M") { return memcpy_rate(); }

// max pooling 2x2, stride 2, on a CNN's activation: N32 C64 56x56 float32 (NCHW).
constexpr int64_t kPoolN = 32, kPoolC = 64, kPoolHW = 56;
constexpr double kPoolIn = 4.0 * kPoolN * kPoolC * kPoolHW * kPoolHW, kPoolOut = kPoolIn / 4;

LOOM_BENCH("maxpool2d.fwd", unit::us, .rounds = 9, .max_ratio = 1.0) {
  load_ops();
  const Tensor x = pattern({kPoolN, kPoolC, kPoolHW, kPoolHW});
  return us_per_call([=] { do_not_optimize(max_pool2d(x, {2, 2}, {2, 2})); });
}
LOOM_BENCH_PEER(raw, "maxpool2d.fwd") { return memcpy_us(kPoolIn + kPoolOut); }

LOOM_BENCH("maxpool2d.bwd", unit::us, .rounds = 9, .max_ratio = 1.0) {
  // The backward Loom's autograd runs for max_pool2d (max_pool2d_backward: the maxima found
  // again, no indices saved); the libtorch peers run theirs, max_pool2d_with_indices_backward.
  load_ops();
  const Tensor x = pattern({kPoolN, kPoolC, kPoolHW, kPoolHW});
  const Tensor g = pattern({kPoolN, kPoolC, kPoolHW / 2, kPoolHW / 2});
  return us_per_call([=] { do_not_optimize(max_pool2d_backward(g, x, {2, 2}, {2, 2})); });
}
LOOM_BENCH_PEER(raw, "maxpool2d.bwd") { return memcpy_us(kPoolIn + kPoolOut); }

// One Adam step over 10M float32 parameters: reads param, grad, exp_avg, exp_avg_sq and
// writes param, exp_avg, exp_avg_sq (28 bytes per parameter).
constexpr int64_t k10M = 10'000'000;
double adam_gbps(double ns) { return 28.0 * static_cast<double>(k10M) / ns; }

LOOM_BENCH("adam.10M", unit::rate("GB/s"), .rounds = 9, .max_ratio = 1.0,
           .max_ratio_raw = 1.25) {
  // loom::optim's adam_step_ op (what optim::Adam::step calls per parameter), lr 1e-3.
  load_ops();
  const Tensor p = pattern({k10M}), g = pattern({k10M}), m = filled({k10M}, 0),
               v = filled({k10M}, 0);
  auto step = std::make_shared<int64_t>(0);
  auto side = ns_per_call([=] {
    optim::adam_step_(p, g, m, v, std::nullopt, ++*step, 1e-3);
    do_not_optimize(p);
  });
  return [side]() { return adam_gbps(side()[0]); };
}
LOOM_BENCH_PEER(raw, "adam.10M") { return memcpy_rate(); }

}  // namespace
}  // namespace loom::bench
