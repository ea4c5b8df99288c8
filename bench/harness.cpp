#include "harness.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <map>
#include <thread>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <cstring>
#include <cerrno>
#include <string_view>

#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/tools/build_config.h"

extern char** environ;

namespace loom::bench {
namespace {

struct Registered {
  BenchmarkSpec spec;
  Side (*setup)();
};
struct PeerKey {
  Peer peer;
  std::string name;
  friend bool operator<(const PeerKey& a, const PeerKey& b) {
    return std::tie(a.peer, a.name) < std::tie(b.peer, b.name);
  }
};
struct Configuration {
  std::string who;
  std::function<std::string()> configure;
};

// Function-local statics: registration happens during static initialisation, in any order.
std::vector<Registered>& benchmarks() {
  static std::vector<Registered> v;
  return v;
}
std::map<PeerKey, std::function<Side()>>& peers() {
  static std::map<PeerKey, std::function<Side()>> m;
  return m;
}
std::vector<Configuration>& configurations() {
  static std::vector<Configuration> v;
  return v;
}

constexpr Peer kPeers[] = {Peer::torch, Peer::libtorch113, Peer::raw};
constexpr Peer kLibtorchPeers[] = {Peer::torch, Peer::libtorch113};
const char* peer_name(Peer p) {
  switch (p) {
    case Peer::torch:
      return "torch";
    case Peer::libtorch113:
      return "libtorch113";
    case Peer::raw:
      return "raw";
  }
  return "?";
}

/// What happened to each libtorch peer's library at start-up ("loaded", or why not).
std::map<Peer, std::string>& peer_load_status() {
  static std::map<Peer, std::string> m;
  return m;
}

/// A libtorch peer's process, bench-<peer>-sides (see peer_bridge.h and peer_server.cpp),
/// driven over two pipes: commands to its stdin, replies from its descriptor 3.
class PeerProcess {
 public:
  PeerProcess(const std::string& program, std::string name) : name_(std::move(name)) {
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from[1], 3);
    std::fflush(stdout);
    std::fflush(stderr);
    char* argv[] = {const_cast<char*>(program.c_str()), nullptr};
    const int rc = posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(to[0]);
    close(from[1]);
    if (rc != 0) {
      close(to[1]);
      close(from[0]);
      throw std::runtime_error("cannot start " + program + ": " + std::strerror(rc));
    }
    to_ = fdopen(to[1], "w");
    from_ = fdopen(from[0], "r");
  }
  ~PeerProcess() {
    if (to_) std::fclose(to_);  // end of its input: it exits
    if (from_) std::fclose(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  /// Sends command and returns the reply's payload (after "ok "); throws the "err" message.
  std::string request(const std::string& command) {
    std::fflush(stdout);  // what loom-bench printed goes out before what the peer prints
    std::fflush(stderr);
    if (std::fputs((command + "\n").c_str(), to_) < 0 || std::fflush(to_) != 0) {
      throw std::runtime_error(name_ + "'s process is gone (" + command + ")");
    }
    std::string line = read_line();
    if (line.rfind("ok", 0) == 0) return line.size() > 3 ? line.substr(3) : "";
    if (line.rfind("err ", 0) == 0) throw std::runtime_error(line.substr(4));
    throw std::runtime_error(name_ + "'s process answered '" + line + "' to " + command);
  }
  /// One more line of a reply.
  std::string read_line() {
    std::string line;
    int c;
    while ((c = std::fgetc(from_)) != EOF && c != '\n') line += static_cast<char>(c);
    if (c == EOF && line.empty()) throw std::runtime_error(name_ + "'s process ended");
    return line;
  }

 private:
  std::string name_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

/// A side of a peer process.
Side bridged_side(std::shared_ptr<PeerProcess> proc, int index) {
  const std::string handle = proc->request("setup " + std::to_string(index));
  if (handle == "none") return {};
  return [proc, handle]() {
    std::istringstream in(proc->request("sample " + handle));
    Sample s;
    double v;
    while (in >> v) s.push_back(v);
    return s;
  };
}

/// Starts one peer's process and registers its sides and configuration steps; returns
/// "loaded" or why not.
std::string load_peer(Peer peer, const std::string& program) {
  auto proc = std::make_shared<PeerProcess>(program, peer_name(peer));
  proc->request("init " + std::to_string(sample_ms()));
  const int configurations_n = std::stoi(proc->request("configurations"));
  for (int i = 0; i < configurations_n; ++i) {
    const std::string line = proc->read_line();
    const size_t tab = line.find('\t');
    const std::string text = tab == std::string::npos ? line : line.substr(tab + 1);
    configurations().push_back({peer_name(peer), [text] { return text; }});
  }
  const int sides_n = std::stoi(proc->request("sides"));
  for (int i = 0; i < sides_n; ++i) {
    const std::string name = proc->read_line();
    std::function<Side()> bridged = [proc, i]() { return bridged_side(proc, i); };
    auto& slot = peers()[{peer, name}];
    if (slot) {
      // loom-bench registered a side of its own for this peer and row (a Python peer, which
      // measures the row in the peer's strongest configuration, torch.compile included): it
      // is the peer's side wherever it is available, the C++ program's side elsewhere.
      slot = [local = slot, bridged]() {
        Side s = local();
        return s ? s : bridged();
      };
    } else {
      slot = std::move(bridged);
    }
  }
  return "loaded";
}

/// Starts each libtorch peer's process, bin/bench-<peer>-sides (see peer_bridge.h for why a
/// process).
void start_peers() {
  // A peer process that dies (a crashing side) must not take loom-bench with it when it is
  // written to next: its side reports an error instead.
  std::signal(SIGPIPE, SIG_IGN);
  std::string dir;
  try {
    dir = bin_dir();
  } catch (const std::exception& e) {
    for (Peer p : kLibtorchPeers) peer_load_status()[p] = e.what();
    return;
  }
  for (Peer p : kLibtorchPeers) {
    const std::string program = dir + "/bench-" + peer_name(p) + "-sides";
    if (!std::filesystem::is_regular_file(program)) {
      peer_load_status()[p] = "not built (its column is null; scripts/run-bench.sh builds it)";
      continue;
    }
    try {
      peer_load_status()[p] = load_peer(p, program);
    } catch (const std::exception& e) {
      peer_load_status()[p] = std::string("cannot use ") + program + " (its column is null): " +
                              e.what();
    }
  }
}

std::vector<Metric> metrics_of(const BenchmarkSpec& s) {
  std::vector<Metric> m{{s.name, s.unit, s.target}};
  m.insert(m.end(), s.extra_metrics.begin(), s.extra_metrics.end());
  return m;
}

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  std::optional<std::string> json_path;
  std::optional<std::string> filter;
  std::optional<int> rounds;
  bool list = false;
};

constexpr const char* kUsage =
    "usage: loom-bench [--filter REGEX] [--json FILE] [--rounds N] [--sample-ms MS] [--list]\n"
    "  --filter REGEX  run the benchmarks whose name (or a metric's name) matches REGEX\n"
    "  --json FILE     also write one JSON object per result line to FILE\n"
    "  --rounds N      A/B rounds per benchmark (default: each benchmark's own)\n"
    "  --sample-ms MS  length of one timing-loop sample (default 20)\n"
    "  --list          list the benchmarks and exit\n"
    "Each measurement runs Loom and its peers (torch: libtorch 2.x, libtorch113: Debian's\n"
    "libtorch 1.13, raw) alternately in this process; the table shows medians and ratio =\n"
    "loom/peer for times and memory, peer/loom for rates, against the faster libtorch peer\n"
    "(below 1 is better for Loom).\n";

Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i, std::string_view flag) -> std::string {
    const std::string a = argv[i];
    if (a.size() > flag.size() && a[flag.size()] == '=') return a.substr(flag.size() + 1);
    if (i + 1 >= argc) throw UsageError(std::string(flag) + " needs a value");
    return argv[++i];
  };
  auto number = [](const std::string& v, std::string_view flag) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(d > 0)) {
      throw UsageError(std::string(flag) + " expects a positive number, got '" + v + "'");
    }
    return d;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto is = [&](std::string_view flag) {
      return a == flag || (a.size() > flag.size() && a.starts_with(flag) && a[flag.size()] == '=');
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--list") {
      o.list = true;
    } else if (is("--json")) {
      o.json_path = value(i, "--json");
    } else if (is("--filter")) {
      o.filter = value(i, "--filter");
    } else if (is("--rounds")) {
      const double r = number(value(i, "--rounds"), "--rounds");
      if (r != std::floor(r)) throw UsageError("--rounds expects a whole number");
      o.rounds = static_cast<int>(r);
    } else if (is("--sample-ms")) {
      sample_ms() = number(value(i, "--sample-ms"), "--sample-ms");
    } else {
      throw UsageError("unknown argument '" + a + "'");
    }
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Four significant digits: what the measurements can support.
double round_sig(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  const double scale = std::pow(10.0, 4 - static_cast<int>(std::ceil(std::log10(std::fabs(x)))));
  return std::round(x * scale) / scale;
}

std::string fmt(std::optional<double> v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", *v);
  return buf;
}

/// Below 1 is better for Loom, whatever the unit.
std::optional<double> ratio(const Metric& m, std::optional<double> loom,
                            std::optional<double> peer) {
  if (!loom || !peer || *loom <= 0 || *peer <= 0) return std::nullopt;
  return m.unit.higher_is_better ? *peer / *loom : *loom / *peer;
}

struct Row {
  Metric metric;
  std::optional<double> loom;
  std::map<Peer, std::optional<double>> peer;
  std::string error;
  std::optional<double> max_ratio, max_ratio_raw;  // the first metric's ratio targets
};

/// The faster of the two libtorch peers' values (null when neither has one).
std::optional<double> best_libtorch(const Row& r) {
  std::optional<double> best;
  for (Peer p : kLibtorchPeers) {
    const auto v = r.peer.at(p);
    if (!v || *v <= 0) continue;
    if (!best || (r.metric.unit.higher_is_better ? *v > *best : *v < *best)) best = v;
  }
  return best;
}

struct Columns {
  bool raw = false;  // some selected benchmark has a raw peer
};

void print_header_row(const Columns& c) {
  std::printf("%-26s %-5s %9s %9s %11s %7s", "benchmark", "unit", "loom", "torch", "libtorch113",
              "ratio");
  if (c.raw) std::printf(" %9s %9s", "raw", "ratio_raw");
  std::printf("  %s\n", "target");
}

void print_row(const Columns& c, const Row& r) {
  if (!r.error.empty()) {
    std::printf("%-26s error: %s\n", r.metric.name.c_str(), r.error.c_str());
    std::fflush(stdout);
    return;
  }
  const auto best = best_libtorch(r);
  const auto raw = r.peer.at(Peer::raw);
  std::printf("%-26s %-5s %9s %9s %11s %7s", r.metric.name.c_str(), r.metric.unit.symbol,
              fmt(r.loom).c_str(), fmt(r.peer.at(Peer::torch)).c_str(),
              fmt(r.peer.at(Peer::libtorch113)).c_str(),
              fmt(ratio(r.metric, r.loom, best)).c_str());
  if (c.raw) std::printf(" %9s %9s", fmt(raw).c_str(), fmt(ratio(r.metric, r.loom, raw)).c_str());
  std::string target;
  auto add = [&](const std::string& what, bool met) {
    target += (target.empty() ? "" : ", ") + what + (met ? " ok" : " MISSED");
  };
  if (r.metric.target && r.loom) {
    const bool met =
        r.metric.unit.higher_is_better ? *r.loom >= *r.metric.target : *r.loom <= *r.metric.target;
    add(std::string(r.metric.unit.higher_is_better ? ">= " : "<= ") + fmt(r.metric.target), met);
  }
  if (r.max_ratio) {
    const auto v = ratio(r.metric, r.loom, best);
    if (v) add("ratio <= " + fmt(r.max_ratio), *v <= *r.max_ratio);
  }
  if (r.max_ratio_raw) {
    const auto v = ratio(r.metric, r.loom, raw);
    if (v) add("raw <= " + fmt(r.max_ratio_raw), *v <= *r.max_ratio_raw);
  }
  std::printf("  %s\n", target.empty() ? "-" : target.c_str());
  std::fflush(stdout);
}

nlohmann::ordered_json to_json(const Row& r, bool has_raw, const std::string& raw_label) {
  auto num = [](std::optional<double> v) {
    return v ? nlohmann::ordered_json(round_sig(*v)) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json j = {{"name", r.metric.name},
                              {"unit", r.metric.unit.symbol},
                              {"loom", num(r.loom)},
                              {"torch", num(r.peer.at(Peer::torch))},
                              {"libtorch113", num(r.peer.at(Peer::libtorch113))},
                              {"ratio", num(ratio(r.metric, r.loom, best_libtorch(r)))}};
  if (has_raw) {
    const auto raw = r.peer.at(Peer::raw);
    j[raw_label] = num(raw);
    j["ratio_" + raw_label] = num(ratio(r.metric, r.loom, raw));
  }
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

// One side of one benchmark while it runs.
struct Runner {
  std::string label;
  Side side;
  std::vector<Sample> samples;
  std::string error;
  bool ok() const { return side && error.empty(); }
  void sample(size_t metrics, bool keep) {
    if (!ok()) return;
    try {
      Sample s = side();
      if (s.size() != metrics) {
        error = "sampler returned " + std::to_string(s.size()) + " values for " +
                std::to_string(metrics) + " metrics";
      } else if (keep) {
        samples.push_back(std::move(s));
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
};

Side set_up(const std::function<Side()>& setup, std::string* error) {
  try {
    return setup();
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "setup threw an unknown exception";
  }
  return {};
}

/// Runs one benchmark; returns a row per metric.
std::vector<Row> run_benchmark(const Registered& b, int rounds) {
  const std::vector<Metric> metrics = metrics_of(b.spec);
  std::vector<Runner> sides;  // [0] is Loom, then the peers: A B A B
  sides.push_back({"loom", {}, {}, {}});
  sides[0].side = set_up(b.setup, &sides[0].error);
  std::map<Peer, size_t> peer_index;
  for (Peer p : kPeers) {
    auto it = peers().find({p, b.spec.name});
    if (it == peers().end()) continue;
    Runner r{peer_name(p), {}, {}, {}};
    r.side = set_up(it->second, &r.error);
    peer_index[p] = sides.size();
    sides.push_back(std::move(r));
  }
  // Note [Settling between sides]: a side's thread pools keep spinning for a while after its
  // sample: GNU OpenMP's idle threads (its default wait policy), OpenBLAS's workers (about
  // 2^28 cycles, ~80 ms), in loom-bench and in each libtorch peer's own process. A sample
  // taken while another side's threads spin shares the 2 cores with them and can read 20-50x
  // slow (seen: sgemm.256 at 2-5 GFLOP/s against 220, for Loom after OpenBLAS and for torch
  // after Loom). So every sample of another side than the last waits for that (settle()),
  // and every side keeps its fastest, spinning configuration.
  size_t last_side = sides.size();
  const auto take = [&](size_t i, bool keep) {
    if (i != last_side) settle();
    last_side = i;
    sides[i].sample(metrics.size(), keep);
  };
  for (size_t i = 0; i < sides.size(); ++i) take(i, /*keep=*/false);  // warm-up, calibration
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < sides.size(); ++i) take(i, /*keep=*/true);
  }

  std::vector<Row> rows;
  for (size_t m = 0; m < metrics.size(); ++m) {
    Row row{metrics[m], std::nullopt, {}, {}, std::nullopt, std::nullopt};
    if (m == 0) {
      row.max_ratio = b.spec.max_ratio;
      row.max_ratio_raw = b.spec.max_ratio_raw;
    }
    auto med = [&](const Runner& s) -> std::optional<double> {
      if (!s.ok() || s.samples.empty()) return std::nullopt;
      std::vector<double> v;
      for (const Sample& x : s.samples) v.push_back(x[m]);
      return median(std::move(v));
    };
    if (!sides[0].error.empty()) row.error = sides[0].error;
    row.loom = med(sides[0]);
    for (Peer p : kPeers) {
      row.peer[p] = peer_index.count(p) ? med(sides[peer_index[p]]) : std::nullopt;
    }
    rows.push_back(std::move(row));
  }
  for (size_t i = 1; i < sides.size(); ++i) {
    if (!sides[i].error.empty()) {
      std::fprintf(stderr, "loom-bench: %s: the %s side failed and is reported as null: %s\n",
                   b.spec.name.c_str(), sides[i].label.c_str(), sides[i].error.c_str());
    }
  }
  return rows;
}

int run(const Options& o) {
  std::optional<std::regex> filter;
  if (o.filter) {
    try {
      filter.emplace(*o.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw UsageError("--filter '" + *o.filter +
                       "' is not a valid regular expression: " + e.what());
    }
  }
  std::vector<const Registered*> selected;
  for (const Registered& b : benchmarks()) {
    bool match = !filter;
    for (const Metric& m : metrics_of(b.spec)) match = match || std::regex_search(m.name, *filter);
    if (match) selected.push_back(&b);
  }
  std::sort(selected.begin(), selected.end(),
            [](const Registered* a, const Registered* b) { return a->spec.name < b->spec.name; });

  if (o.list) {
    for (const Registered* b : selected) {
      std::string with;
      for (Peer p : kPeers) {
        if (peers().count({p, b->spec.name})) with += std::string(" vs ") + peer_name(p);
      }
      for (const Metric& m : metrics_of(b->spec)) {
        std::printf("%-30s %-5s%s\n", m.name.c_str(), m.unit.symbol, with.c_str());
      }
    }
    return 0;
  }
  if (selected.empty()) {
    std::string names;
    for (const Registered& b : benchmarks()) names += " " + b.spec.name;
    throw UsageError("no benchmark matches --filter '" + o.filter.value_or("") +
                     "'; there are:" + names);
  }

  std::ofstream json;
  if (o.json_path) {
    json.open(*o.json_path, std::ios::trunc);
    if (!json) throw std::runtime_error("cannot write --json file '" + *o.json_path + "'");
  }

  std::printf("loom-bench: Loom %s (%s, %s)\n", LOOM_VERSION_STRING, loom::build_config::kBuildType,
              loom::build_config::kCompiler);
  {
    // Timings are only as good as the machine is quiet: say how busy it was at the start.
    double load = -1;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &load) != 1) load = -1;
      std::fclose(f);
    }
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (load >= 0) {
      std::printf("  machine: %ld CPUs, load average %.2f at the start%s\n", cpus, load,
                  load > 0.5 * static_cast<double>(cpus)
                      ? " (busy: OpenMP's spinning threads make timings unreliable; "
                        "OMP_WAIT_POLICY=passive for every side is steadier)"
                      : "");
    }
  }
  for (const Configuration& c : configurations()) {
    std::string line;
    try {
      line = c.configure();
    } catch (const std::exception& e) {
      line = std::string("configuration failed: ") + e.what();
    }
    std::printf("  %s: %s\n", c.who.c_str(), line.c_str());
  }
  for (Peer p : kLibtorchPeers) {
    const bool configured =
        std::any_of(configurations().begin(), configurations().end(),
                    [&](const Configuration& c) { return c.who == peer_name(p); });
    const auto it = peer_load_status().find(p);
    if (!configured && it != peer_load_status().end()) {
      std::printf("  %s: %s\n", peer_name(p), it->second.c_str());
    }
  }
  std::printf("\n");

  Columns columns;
  for (const Registered* b : selected) columns.raw |= peers().count({Peer::raw, b->spec.name}) > 0;
  print_header_row(columns);
  bool failed = false;
  for (const Registered* b : selected) {
    const int rounds = o.rounds.value_or(b->spec.rounds);
    for (const Row& row : run_benchmark(*b, rounds)) {
      print_row(columns, row);
      failed |= !row.error.empty();
      if (json) {
        json << to_json(row, peers().count({Peer::raw, b->spec.name}) > 0, b->spec.raw_label)
                    .dump()
             << "\n";
      }
    }
  }
  std::printf(
      "\nmedians of A/B-alternated rounds; ratio = loom/peer for times and memory, peer/loom "
      "for rates, against the faster of torch and libtorch113 (ratio_raw: against raw): below 1 "
      "is better for Loom\n");
  if (json) {
    json.flush();
    if (!json) throw std::runtime_error("writing '" + *o.json_path + "' failed");
  }
  return failed ? 1 : 0;
}

}  // namespace

bool register_benchmark(BenchmarkSpec spec, Side (*setup)()) {
  benchmarks().push_back({std::move(spec), setup});
  return true;
}

bool register_peer(Peer peer, std::string name, Side (*setup)()) {
  peers()[{peer, std::move(name)}] = [setup] { return setup(); };
  return true;
}

bool register_configuration(std::string who, std::string (*configure)()) {
  configurations().push_back({std::move(who), configure});
  return true;
}

void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }

double& sample_ms() {
  static double ms = 20;
  return ms;
}

void load_backend_plugin(const std::string& name) {
  PluginLoader::instance().load(name);
  auto& d = Dispatcher::instance();
  if (d.preferred_provider(DispatchKey::CPU).empty()) {
    d.set_preferred_provider(DispatchKey::CPU, "reference");
  }
}

Side with_cpu_provider(std::string provider, Side inner) {
  return [provider = std::move(provider), inner = std::move(inner)]() {
    auto& d = Dispatcher::instance();
    const std::string previous = d.preferred_provider(DispatchKey::CPU);
    d.set_preferred_provider(DispatchKey::CPU, provider);
    struct Restore {
      Dispatcher& d;
      const std::string& previous;
      ~Restore() { d.set_preferred_provider(DispatchKey::CPU, previous); }
    } restore{d, previous};
    return inner();
  };
}

std::string bin_dir() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find loom-bench's own path: " + ec.message());
  return self.parent_path().string();
}

int run_main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    start_peers();
    return run(options);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "loom-bench: error: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-bench: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace loom::bench
