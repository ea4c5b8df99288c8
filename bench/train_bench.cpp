// train.*: the main job, `loom train`, beside the same job in each libtorch peer, each run as a
// child process that writes a JSON report: seconds per epoch of the CNN (2 threads) and of the
// MLP (each side in its fastest thread count: Loom 2, libtorch 1), the CNN run's peak resident
// memory, and the time from process start to the end of the first training step.
//   torch        the better of bench-torch-train (libtorch 2.x, C++) and, where the environment
//                variable LOOM_BENCH_PYTHON names a Python with PyTorch (scripts/run-bench.sh
//                sets it), bench/python/train_peer.py: the same job in Python, eager NCHW, eager
//                channels_last and torch.compile; its fastest configuration is found once, at
//                setup, and timed in every round. Which one won is printed above the row.
//   libtorch113  bench-libtorch113-train (Debian's libtorch 1.13, C++).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "python_peer.h"

namespace loom::bench {
namespace {

namespace fs = std::filesystem;
const char* const kData = "/usr/share/datasets/fashion-mnist";

/// Loom's side: loom-train with the given arguments; reads the run folder's report.json.
nlohmann::json loom_train(const std::string& args, const std::string& tag) {
  const std::string trainer = bin_dir() + "/loom-train";
  if (!fs::is_regular_file(trainer)) throw std::runtime_error(trainer + " was not built");
  if (!fs::exists(std::string(kData) + "/train-images-idx3-ubyte.gz")) {
    throw std::runtime_error("Debian's dataset-fashion-mnist is not installed");
  }
  const std::string out = scratch(tag);
  return run_for_report(trainer + " --progress none --limit-test 1000 --out " + out + " " + args,
                        out + "/report.json", /*passive=*/false);
}

/// A libtorch peer's C++ program, bench-<peer>-train; "" when it was not built.
std::string train_program(const char* peer) {
  const std::string program = bin_dir() + "/bench-" + peer + "-train";
  return fs::is_regular_file(program) ? program : "";
}

/// Runs a libtorch peer's C++ program with the given arguments; returns its report.
nlohmann::json libtorch_train(const std::string& program, const std::string& args,
                              const std::string& tag) {
  const std::string report = scratch(tag) + "/report.json";
  return run_for_report(program + " --data " + kData + " --report " + report + " " + args, report,
                        /*passive=*/true);
}

LOOM_BENCH_CONFIGURE("python") {
  const char* python = std::getenv("LOOM_BENCH_PYTHON");
  if (!python || !*python) {
    return "LOOM_BENCH_PYTHON not set: the train.* rows' torch column is C++ libtorch only "
           "(scripts/run-bench.sh sets it)";
  }
  return std::string("train.* rows: the torch column is the better of bench-torch-train and ") +
         "bench/python/train_peer.py run by " + python +
         " (eager NCHW, eager channels_last, torch.compile; Adam(fused=True); same threads as "
         "the C++ peer; OMP_WAIT_POLICY=passive)";
}

/// Runs train_peer.py with the given configurations; returns its report
/// {"configs": {name: {"epoch_seconds", ...}}, "skipped": {name: why}, "best": name}.
nlohmann::json python_train(const PythonPeer& py, const std::string& model, int threads,
                            const std::string& configs, const std::string& tag) {
  const std::string report = scratch(tag) + "/report.json";
  return run_for_report(
      py.command("--model " + model + " --threads " + std::to_string(threads) + " --data " + kData +
                 " --configs " + configs + " --report " + report),
      report, /*passive=*/true);
}

/// The torch peer of train.<model>.epoch: at setup, every Python configuration once (each
/// printed); then each sample is the better of the C++ program and the fastest Python
/// configuration. with_rss: the sample also carries the winner's peak RSS.
Side torch_train_side(const std::string& model, int threads, bool with_rss) {
  const std::string program = train_program("torch");
  const PythonPeer py = python_peer("train_peer.py");
  if (program.empty() && !py) return {};
  std::string best_config;
  if (py) {
    const auto r = python_train(py, model, threads, "all", "py-" + model + "-all");
    for (const auto& [name, why] : r["skipped"].items()) {
      std::printf("  train.%s.epoch torch (python %s): skipped: %s\n", model.c_str(),
                  name.c_str(), why.get<std::string>().c_str());
    }
    for (const auto& [name, c] : r["configs"].items()) {
      std::printf("  train.%s.epoch torch (python %s): %.3f s per epoch%s\n", model.c_str(),
                  name.c_str(), c["epoch_seconds"].get<double>(),
                  c.contains("compile_seconds")
                      ? (", compiled in " + std::to_string(c["compile_seconds"].get<double>()) +
                         " s (not counted)")
                            .c_str()
                      : "");
    }
    best_config = r.value("best", "");
    std::fflush(stdout);
  }
  auto wins = std::make_shared<std::vector<std::string>>();
  return [=]() -> Sample {
    std::string winner;
    Sample best;
    auto consider = [&](const std::string& who, double seconds, double rss) {
      if (best.empty() || seconds < best[0]) {
        best = with_rss ? Sample{seconds, rss} : Sample{seconds};
        winner = who;
      }
    };
    if (!program.empty()) {
      const auto r = libtorch_train(program, "--model " + model + " --threads " +
                                                 std::to_string(threads), "torch-" + model);
      consider("C++ libtorch", r["epoch_seconds"][0].get<double>(),
               r["peak_rss_mib"].get<double>());
    }
    if (!best_config.empty()) {
      const auto r = python_train(py, model, threads, best_config, "py-" + model);
      const auto& c = r["configs"][best_config];
      consider("python " + best_config, c["epoch_seconds"].get<double>(),
               c["peak_rss_mib"].get<double>());
    }
    std::printf("  train.%s.epoch torch: this round's best is %s (%.3f s)\n", model.c_str(),
                winner.c_str(), best[0]);
    std::fflush(stdout);
    return best;
  };
}

/// The libtorch113 peer of train.<model>.epoch: its C++ program.
Side libtorch113_train_side(const std::string& model, int threads, bool with_rss) {
  const std::string program = train_program("libtorch113");
  if (program.empty()) return {};
  return [=]() -> Sample {
    const auto r = libtorch_train(program, "--model " + model + " --threads " +
                                               std::to_string(threads), "libtorch113-" + model);
    const double seconds = r["epoch_seconds"][0].get<double>();
    return with_rss ? Sample{seconds, r["peak_rss_mib"].get<double>()} : Sample{seconds};
  };
}

LOOM_BENCH("train.cnn.epoch", unit::s, .target = 15.6,
           .extra_metrics = {{"train.cnn.peak_rss", unit::MiB, std::nullopt}}, .rounds = 1,
           .max_ratio = 0.8) {
  return [] {
    const auto r = loom_train("--model cnn --epochs 1", "cnn");
    return Sample{r["epoch_seconds"][0].get<double>(), r["peak_rss_mib"].get<double>()};
  };
}

LOOM_BENCH_PEER(torch, "train.cnn.epoch") { return torch_train_side("cnn", 2, true); }
LOOM_BENCH_PEER(libtorch113, "train.cnn.epoch") { return libtorch113_train_side("cnn", 2, true); }

LOOM_BENCH("train.mlp.epoch", unit::s, .target = 0.78, .rounds = 3) {
  return [] {
    return loom_train("--model mlp --epochs 1", "mlp")["epoch_seconds"][0].get<double>();
  };
}

LOOM_BENCH_PEER(torch, "train.mlp.epoch") { return torch_train_side("mlp", 1, false); }
LOOM_BENCH_PEER(libtorch113, "train.mlp.epoch") { return libtorch113_train_side("mlp", 1, false); }

LOOM_BENCH("train.startup", unit::s, .rounds = 5) {
  return [] {
    return loom_train("--model cnn --stop-after-steps 1", "startup")["first_step_seconds"]
        .get<double>();
  };
}

/// A libtorch peer's train.startup: its C++ program, stopped after one step.
Side startup_side(const char* peer) {
  const std::string program = train_program(peer);
  if (program.empty()) return {};
  const std::string tag = std::string(peer) + "-startup";
  return [=] {
    return libtorch_train(program, "--model cnn --threads 2 --stop-after-steps 1", tag)
        ["first_step_seconds"].get<double>();
  };
}

LOOM_BENCH_PEER(torch, "train.startup") { return startup_side("torch"); }
LOOM_BENCH_PEER(libtorch113, "train.startup") { return startup_side("libtorch113"); }

}  // namespace
}  // namespace loom::bench
