// startup.*: wall time and peak memory of a whole process, `loom info` against the smallest
// libtorch program, each run as a child through bench-spawn (see spawn_rusage.cpp).
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.h"
#include "harness.h"

namespace loom::bench {
namespace {

namespace fs = std::filesystem;

LOOM_BENCH("startup.info", unit::s, .target = 0.1,
           .extra_metrics = {{"startup.info.peak_rss", unit::MiB, 50.0}}, .rounds = 9) {
  const std::string loom = bin_dir() + "/loom";
  if (!fs::is_regular_file(loom)) throw std::runtime_error(loom + " was not built");
  return [=] { return run_child({loom, "info"}); };
}

LOOM_BENCH_CONFIGURE("startup") {
  return "children run through bench-spawn (wall time and ru_maxrss of that child alone), "
         "output to /dev/null, OMP_WAIT_POLICY=passive";
}

}  // namespace
}  // namespace loom::bench
