// train.*: the main job, `loom train`, beside a libtorch program of the same model and
// hyperparameters (bench/libtorch/train_main.cpp), each run as a child process that writes a
// JSON report: seconds per epoch of the CNN (2 threads) and of the MLP (each side in its
// fastest thread count: Loom 2, libtorch 1), the CNN run's peak resident memory, and the
// time from process start to the end of the first training step.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"

namespace loom::bench {
namespace {

namespace fs = std::filesystem;
const char* const kData = "/usr/share/datasets/fashion-mnist";

/// Runs command (output discarded) and returns the JSON report it wrote to report. Each side
/// runs in its fastest configuration: libtorch with OMP_WAIT_POLICY=passive (as the issue
/// measured it), Loom with the OpenMP default (passive makes every small parallel region of
/// an MLP step wake the second thread through the kernel: 0.39 s per epoch becomes 0.78).
nlohmann::json run_for_report(const std::string& command, const std::string& report,
                              bool passive) {
  fs::remove(report);
  const std::string line =
      (passive ? "OMP_WAIT_POLICY=passive " : "") + command + " > /dev/null 2>&1";
  if (std::system(line.c_str()) != 0) throw std::runtime_error("failed: " + command);
  std::ifstream in(report);
  if (!in) throw std::runtime_error(command + " wrote no report " + report);
  return nlohmann::json::parse(in);
}

std::string scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("loom-bench-" + name);
  fs::create_directories(p);
  return p.string();
}

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

/// libtorch's side: bench-libtorch-train; an empty Side when it was not built.
nlohmann::json libtorch_train(const std::string& args, const std::string& tag) {
  const std::string program = bin_dir() + "/bench-libtorch-train";
  const std::string report = scratch(tag) + "/report.json";
  return run_for_report(program + " --data " + kData + " --report " + report + " " + args, report,
                        /*passive=*/true);
}

bool libtorch_built() { return fs::is_regular_file(bin_dir() + "/bench-libtorch-train"); }

LOOM_BENCH("train.cnn.epoch", unit::s, .target = 15.6,
           .extra_metrics = {{"train.cnn.peak_rss", unit::MiB, std::nullopt}}, .rounds = 1) {
  return [] {
    const auto r = loom_train("--model cnn --epochs 1", "cnn");
    return Sample{r["epoch_seconds"][0].get<double>(), r["peak_rss_mib"].get<double>()};
  };
}

LOOM_BENCH_PEER(libtorch, "train.cnn.epoch") {
  if (!libtorch_built()) return {};
  return [] {
    const auto r = libtorch_train("--model cnn --threads 2", "torch-cnn");
    return Sample{r["epoch_seconds"][0].get<double>(), r["peak_rss_mib"].get<double>()};
  };
}

LOOM_BENCH("train.mlp.epoch", unit::s, .target = 0.78, .rounds = 3) {
  return [] {
    return loom_train("--model mlp --epochs 1", "mlp")["epoch_seconds"][0].get<double>();
  };
}

LOOM_BENCH_PEER(libtorch, "train.mlp.epoch") {
  if (!libtorch_built()) return {};
  return [] {
    return libtorch_train("--model mlp --threads 1", "torch-mlp")["epoch_seconds"][0].get<double>();
  };
}

LOOM_BENCH("train.startup", unit::s, .rounds = 5) {
  return [] {
    return loom_train("--model cnn --stop-after-steps 1", "startup")["first_step_seconds"]
        .get<double>();
  };
}

LOOM_BENCH_PEER(libtorch, "train.startup") {
  if (!libtorch_built()) return {};
  return [] {
    return libtorch_train("--model cnn --threads 2 --stop-after-steps 1", "torch-startup")
        ["first_step_seconds"].get<double>();
  };
}

}  // namespace
}  // namespace loom::bench
