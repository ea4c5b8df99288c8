#pragma once
/// @file
/// loom-bench's harness: a registry of benchmarks, each a Loom side plus optional peers
/// (libtorch 2.x "torch", Debian's libtorch 1.13 "libtorch113", a raw library) measured in the
/// same run, alternating A B A B (the libtorch peers' sides run in a process of their own per
/// peer, see peer_bridge.h).
///
/// A benchmark is a setup function that returns a Side: a callable taking one sample.
/// @code
///   LOOM_BENCH("dispatch.noop.typed", unit::ns, .target = 25) {
///     auto noop = ...;                                     // setup: runs once
///     return ns_per_call([=] { do_not_optimize(noop(x)); });  // one sample = ns per call
///   }
///   // in a libtorch translation unit (bench/libtorch/, built once per libtorch into the peer
///   // program bench-<peer>-sides), joined to the benchmark by its name:
///   LOOM_BENCH_LIBTORCH_PEER("dispatch.noop.typed") { ...; return ns_per_call(...); }
/// @endcode
/// A peer that is not registered (its program not built or not started) or whose setup
/// returns an empty Side reports null. See bench/README.md for the output format and the
/// meaning of "ratio".

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace loom::bench {

/// A unit of measurement and which way is better.
struct Unit {
  const char* symbol;             ///< "ns", "s", "MiB", "GB/s"
  bool higher_is_better = false;  ///< true for rates
};

/// The usual units.
namespace unit {
inline constexpr Unit ns{"ns"};    ///< nanoseconds (lower is better)
inline constexpr Unit us{"us"};    ///< microseconds
inline constexpr Unit ms{"ms"};    ///< milliseconds
inline constexpr Unit s{"s"};      ///< seconds
inline constexpr Unit MiB{"MiB"};  ///< mebibytes (memory; lower is better)
/// A rate such as "GB/s" or "items/s" (higher is better).
constexpr Unit rate(const char* symbol) { return Unit{symbol, true}; }
}  // namespace unit

/// One reported number. A benchmark has its own metric plus optional extra ones measured by
/// the same sample (startup time and peak memory of one child process).
struct Metric {
  std::string name;              ///< "startup.info.peak_rss"
  Unit unit;                     ///< its unit
  std::optional<double> target;  ///< Loom's goal: at most (at least, for rates) this value
};

/// One sample of one side: a value per metric, in the benchmark's metric order.
using Sample = std::vector<double>;

/// A side's sampler. Built from any callable returning double (one metric) or Sample.
/// An empty Side means "this side is not available here".
class Side {
 public:
  /// Not available.
  Side() = default;
  /// From a callable returning double or Sample.
  template <typename F>
  requires(!std::is_same_v<std::decay_t<F>, Side> && std::is_invocable_v<F&>)
      Side(F f) {  // NOLINT: implicit on purpose, so setups can `return [..] { ... };`
    if constexpr (std::is_convertible_v<std::invoke_result_t<F&>, double>) {
      fn_ = [f = std::move(f)]() mutable { return Sample{static_cast<double>(f())}; };
    } else {
      fn_ = std::move(f);
    }
  }
  /// True if the side can be measured.
  explicit operator bool() const { return static_cast<bool>(fn_); }
  /// Takes one sample.
  Sample operator()() const { return fn_(); }

 private:
  std::function<Sample()> fn_;
};

/// What a benchmark is compared against.
enum class Peer {
  torch,        ///< libtorch of a PyTorch 2.x wheel (loom-bench-torch.so), or its Python side
  libtorch113,  ///< Debian's libtorch 1.13 (loom-bench-libtorch113.so)
  raw,          ///< the library a Loom backend wraps, or the machine's limit (memcpy)
};

/// How a benchmark is declared (designated initialisers: `.target = 25, .rounds = 7`).
struct BenchmarkSpec {
  std::string name;                   ///< its name, also its first metric's name
  Unit unit;                          ///< the first metric's unit
  std::optional<double> target;       ///< the first metric's target
  std::vector<Metric> extra_metrics;  ///< further metrics the same sample yields
  int rounds = 15;                    ///< A/B rounds (--rounds overrides)
  /// The JSON name of the raw peer's figure and ratio ("raw", "ratio_raw"); e.g. "cpp" when
  /// the raw peer is Loom's own C++ API (capi.add.1elem: "cpp", "ratio_cpp").
  std::string raw_label = "raw";
  /// A target on the first metric's ratio against the faster libtorch peer: ratio <= this
  /// (1.0 is "at least as fast as PyTorch").
  std::optional<double> max_ratio;
  /// A target on the first metric's ratio against the raw peer: ratio_raw <= this (1.25 is
  /// "at least 0.8 x memcpy bandwidth" on the memory-bound rows).
  std::optional<double> max_ratio_raw;
};

/// Registers a benchmark's Loom side. Returns true (for static registration).
bool register_benchmark(BenchmarkSpec spec, Side (*setup)());
/// Registers a peer's side of the benchmark called name. Returns true.
bool register_peer(Peer peer, std::string name, Side (*setup)());
/// Registers a step that runs once before any benchmark (e.g. libtorch's thread settings) and
/// returns a line describing the configuration it chose. Returns true. A peer library names
/// its step after the peer ("torch", "libtorch113").
bool register_configuration(std::string who, std::string (*configure)());

/// Keeps the compiler from optimising value (and the work that made it) away.
template <typename T>
inline void do_not_optimize(const T& value) {
  asm volatile("" : : "m"(value) : "memory");
}

/// Waits until thread pools that spin after their work (OpenMP, OpenBLAS), in this process or
/// another, have gone idle: what a side sampled after another side needs (Note [Settling
/// between sides] in harness.cpp). 100 ms.
void settle();

/// The sample length ns_per_call aims for, in milliseconds (--sample-ms).
double& sample_ms();

/// A side that calls body in a loop and returns nanoseconds per call. The loop length is
/// calibrated on the first sample (the warm-up) so that one sample takes about sample_ms().
template <typename F>
Side ns_per_call(F body) {
  auto iterations = std::make_shared<int64_t>(0);
  return [body = std::move(body), iterations]() mutable -> double {
    using clock = std::chrono::steady_clock;
    auto time = [&](int64_t n) {
      const auto t0 = clock::now();
      for (int64_t i = 0; i < n; ++i) body();
      return std::chrono::duration<double, std::nano>(clock::now() - t0).count();
    };
    if (*iterations == 0) {
      int64_t n = 1;
      double elapsed = time(n);
      while (elapsed < 1e6 && n < (int64_t{1} << 40)) {  // grow to at least 1 ms
        n *= 10;
        elapsed = time(n);
      }
      *iterations = std::max<int64_t>(1, static_cast<int64_t>(n * (sample_ms() * 1e6) / elapsed));
    }
    return time(*iterations) / static_cast<double>(*iterations);
  };
}

/// Loads a CPU backend plugin (cpu_onednn) without making it the run's default: the CPU key
/// goes on preferring the reference kernels (when nothing else was chosen), so the benchmarks
/// that measure those still do. A backend's benchmark takes its samples through
/// with_cpu_provider.
void load_backend_plugin(const std::string& name);

/// A side that takes each sample of inner with provider preferred at the CPU key, and
/// restores the previous preference afterwards (outside the timed loop).
Side with_cpu_provider(std::string provider, Side inner);

/// The folder of the running loom-bench (where loom and the helper programs are built).
std::string bin_dir();

/// Runs loom-bench: parses the command line, runs the selected benchmarks, prints the table
/// and writes the JSON lines. Returns the exit status.
int run_main(int argc, char** argv);

}  // namespace loom::bench

#define LOOM_BENCH_CONCAT_INNER(a, b) a##b
#define LOOM_BENCH_CONCAT(a, b) LOOM_BENCH_CONCAT_INNER(a, b)

/// Defines a benchmark: `LOOM_BENCH("name", unit::ns [, .target = 25, .rounds = 9]) { ...;
/// return side; }`. The body is its setup; it runs only if the benchmark is selected.
#define LOOM_BENCH(NAME, UNIT, ...) \
  LOOM_BENCH_(LOOM_BENCH_CONCAT(loom_bench_, __COUNTER__), NAME, UNIT __VA_OPT__(, ) __VA_ARGS__)
// GCC 12 warns about designated initialisers that skip a member with a default
// (-Wmissing-field-initializers); skipping them is the point here.
// clang-format off
#define LOOM_BENCH_(uid, NAME, UNIT, ...)                                                       \
  static ::loom::bench::Side LOOM_BENCH_CONCAT(uid, _setup)();                                  \
  _Pragma("GCC diagnostic push")                                                                \
  _Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"")                            \
  [[maybe_unused]] static const bool LOOM_BENCH_CONCAT(uid, _registered) =                      \
      ::loom::bench::register_benchmark(                                                        \
          ::loom::bench::BenchmarkSpec{.name = NAME, .unit = UNIT __VA_OPT__(, ) __VA_ARGS__}, \
          &LOOM_BENCH_CONCAT(uid, _setup));                                                     \
  _Pragma("GCC diagnostic pop")                                                                 \
  static ::loom::bench::Side LOOM_BENCH_CONCAT(uid, _setup)()
// clang-format on

/// Defines a peer's side of a benchmark: `LOOM_BENCH_PEER(raw, "name") { ...; return side; }`.
#define LOOM_BENCH_PEER(PEER, NAME) \
  LOOM_BENCH_PEER_(LOOM_BENCH_CONCAT(loom_bench_peer_, __COUNTER__), PEER, NAME)
#define LOOM_BENCH_PEER_(uid, PEER, NAME)                                  \
  static ::loom::bench::Side LOOM_BENCH_CONCAT(uid, _setup)();             \
  [[maybe_unused]] static const bool LOOM_BENCH_CONCAT(uid, _registered) = \
      ::loom::bench::register_peer(::loom::bench::Peer::PEER, NAME,        \
                                   &LOOM_BENCH_CONCAT(uid, _setup));       \
  static ::loom::bench::Side LOOM_BENCH_CONCAT(uid, _setup)()

/// Defines the side of the libtorch peer this translation unit is built for (the compile
/// definition LOOM_BENCH_LIBTORCH is torch or libtorch113): `LOOM_BENCH_LIBTORCH_PEER("name")
/// { ...; return side; }`.
#define LOOM_BENCH_LIBTORCH_PEER(NAME) LOOM_BENCH_PEER(LOOM_BENCH_LIBTORCH, NAME)
#define LOOM_BENCH_STRING_INNER(x) #x
#define LOOM_BENCH_STRING(x) LOOM_BENCH_STRING_INNER(x)
/// The name of the libtorch peer this translation unit is built for: "torch" or "libtorch113".
#define LOOM_BENCH_LIBTORCH_NAME LOOM_BENCH_STRING(LOOM_BENCH_LIBTORCH)

/// Defines a configuration step: `LOOM_BENCH_CONFIGURE("startup") { ...; return "what"; }`.
#define LOOM_BENCH_CONFIGURE(WHO) \
  LOOM_BENCH_CONFIGURE_(LOOM_BENCH_CONCAT(loom_bench_cfg_, __COUNTER__), WHO)
#define LOOM_BENCH_CONFIGURE_(uid, WHO)                                         \
  static std::string LOOM_BENCH_CONCAT(uid, _fn)();                             \
  [[maybe_unused]] static const bool LOOM_BENCH_CONCAT(uid, _registered) =      \
      ::loom::bench::register_configuration(WHO, &LOOM_BENCH_CONCAT(uid, _fn)); \
  static std::string LOOM_BENCH_CONCAT(uid, _fn)()
