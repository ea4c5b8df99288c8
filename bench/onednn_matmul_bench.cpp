// sgemm.*: square float32 matrix products through Loom's mm with the provider a user gets by
// default (cpu_onednn's kernel, or cpu_mkl's where that plugin is built and ranks first on
// this CPU: docs/design/cpu-providers.md), beside libtorch's torch::mm
// (bench/libtorch/onednn_matmul_peer.cpp) and, as "raw", the better on this machine of a
// oneDNN matmul primitive made once and OpenBLAS's cblas_sgemm, on buffers of the same shapes.
// Every side uses 2 threads.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <dnnl.hpp>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/ops/core.h"

#if LOOM_BENCH_WITH_OPENBLAS
#include <cblas.h>
#endif

namespace loom::bench {
namespace {

constexpr int kThreads = 2;

/// GFLOP/s of an n x n x n product taking ns nanoseconds.
double gflops(double ns, int64_t n) { return 2.0 * static_cast<double>(n * n * n) / ns; }

/// n x n values in [-0.5, 0.5), the same pattern on every side.
std::vector<float> pattern(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n * n));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] =
        static_cast<float>((i * 7919 + static_cast<size_t>(seed) * 104729) % 1000) / 1000.0f - 0.5f;
  }
  return v;
}

/// Loads the CPU GEMM providers (cpu_mkl only where it is built) and returns the one that
/// serves mm by default: the highest priority at the CPU key. Printed once.
std::string default_gemm_provider() {
  static const std::string provider = [] {
    load_backend_plugin("cpu_onednn");
    try {
      load_backend_plugin("cpu_mkl");
    } catch (const std::exception&) {  // not built (MKL not installed): oneDNN serves mm
    }
    auto& d = Dispatcher::instance();
    std::string best;
    int best_priority = 0;
    for (const KernelInfo& k : d.kernels(d.find_op_or_throw("aten::mm"))) {
      if (k.key == DispatchKey::CPU && (best.empty() || k.priority > best_priority)) {
        best = k.provider;
        best_priority = k.priority;
      }
    }
    std::printf("  Loom side of sgemm.*: provider %s\n", best.c_str());
    std::fflush(stdout);
    return best;
  }();
  return provider;
}

Side loom_side(int64_t n) {
  const std::string provider = default_gemm_provider();
  Tensor a = Tensor::empty({n, n}), b = Tensor::empty({n, n});
  const std::vector<float> va = pattern(n, 1), vb = pattern(n, 2);
  std::copy(va.begin(), va.end(), a.data_ptr<float>());
  std::copy(vb.begin(), vb.end(), b.data_ptr<float>());
  auto side = ns_per_call([=] { do_not_optimize(mm(a, b)); });
  return with_cpu_provider(provider, [side, n]() { return gflops(side()[0], n); });
}

/// Raw oneDNN: one matmul primitive on row-major buffers, made once, executed in the loop.
Side raw_onednn(int64_t n) {
  struct State {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    std::vector<float> a, b, c;
    dnnl::matmul primitive;
    std::unordered_map<int, dnnl::memory> args;
  };
  auto s = std::make_shared<State>();
  s->a = pattern(n, 1);
  s->b = pattern(n, 2);
  s->c.assign(static_cast<size_t>(n * n), 0.0f);
  const dnnl::memory::desc md({n, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), s->engine);
  s->primitive = dnnl::matmul(pd);
  s->args = {{DNNL_ARG_SRC, dnnl::memory(md, s->engine, s->a.data())},
             {DNNL_ARG_WEIGHTS, dnnl::memory(md, s->engine, s->b.data())},
             {DNNL_ARG_DST, dnnl::memory(md, s->engine, s->c.data())}};
  auto side = ns_per_call([s] {
    s->primitive.execute(s->stream, s->args);
    s->stream.wait();
    do_not_optimize(s->c[0]);
  });
  return [side, n]() { return gflops(side()[0], n); };
}

#if LOOM_BENCH_WITH_OPENBLAS
/// Raw OpenBLAS: cblas_sgemm on row-major buffers.
Side raw_openblas(int64_t n) {
  openblas_set_num_threads(kThreads);
  auto a = std::make_shared<std::vector<float>>(pattern(n, 1));
  auto b = std::make_shared<std::vector<float>>(pattern(n, 2));
  auto c = std::make_shared<std::vector<float>>(static_cast<size_t>(n * n), 0.0f);
  const auto in = static_cast<blasint>(n);
  auto side = ns_per_call([=] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, in, in, 1.0f, a->data(), in,
                b->data(), in, 0.0f, c->data(), in);
    do_not_optimize((*c)[0]);
  });
  return [side, n]() { return gflops(side()[0], n); };
}
#endif

/// The better raw library for n: both are sampled here, alternately (a busy machine drifts),
/// the faster by median becomes the raw side, and the choice is printed.
Side raw_side(int64_t n) {
  omp_set_num_threads(kThreads);
  std::vector<std::pair<std::string, Side>> raws{{"oneDNN matmul primitive", raw_onednn(n)}};
#if LOOM_BENCH_WITH_OPENBLAS
  raws.emplace_back("OpenBLAS cblas_sgemm", raw_openblas(n));
#endif
  std::vector<std::vector<double>> samples(raws.size());
  for (auto& [name, side] : raws) side();  // warm-up and calibration
  for (int round = 0; round < 5; ++round) {
    for (size_t i = 0; i < raws.size(); ++i) {
      settle();  // OpenBLAS's spinning workers would slow oneDNN's next sample, and back
      samples[i].push_back(raws[i].second()[0]);
    }
  }
  size_t best = 0;
  std::string line;
  for (size_t i = 0; i < raws.size(); ++i) {
    std::sort(samples[i].begin(), samples[i].end());
    const double median = samples[i][samples[i].size() / 2];
    if (median > samples[best][samples[best].size() / 2]) best = i;
    line += (i ? ", " : "") + raws[i].first + " " + std::to_string(static_cast<int>(median)) +
            " GFLOP/s";
  }
#if !LOOM_BENCH_WITH_OPENBLAS
  line += ", OpenBLAS not built";
#endif
  std::printf("  raw side of sgemm.%lld: %s (%s)\n", static_cast<long long>(n),
              raws[best].first.c_str(), line.c_str());
  std::fflush(stdout);
  return raws[best].second;
}

LOOM_BENCH("sgemm.256", unit::rate("GFLOP/s"), .max_ratio = 1.0) { return loom_side(256); }
LOOM_BENCH_PEER(raw, "sgemm.256") { return raw_side(256); }

LOOM_BENCH("sgemm.1024", unit::rate("GFLOP/s"), .rounds = 9, .max_ratio = 1.0) { return loom_side(1024); }
LOOM_BENCH_PEER(raw, "sgemm.1024") { return raw_side(1024); }

LOOM_BENCH("sgemm.2048", unit::rate("GFLOP/s"), .rounds = 7, .max_ratio = 1.0) { return loom_side(2048); }
LOOM_BENCH_PEER(raw, "sgemm.2048") { return raw_side(2048); }

}  // namespace
}  // namespace loom::bench
