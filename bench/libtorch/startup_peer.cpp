// The libtorch side of startup.info: bench-<peer>-trivial (make a tensor, exit; built once per
// libtorch peer), linked with --as-needed so that it loads only the libtorch libraries it uses.
#include <filesystem>
#include <stdexcept>

#include "../child_process.h"
#include "../harness.h"

namespace loom::bench {
namespace {

LOOM_BENCH_LIBTORCH_PEER("startup.info") {
  const std::string trivial = bin_dir() + "/bench-" LOOM_BENCH_LIBTORCH_NAME "-trivial";
  if (!std::filesystem::is_regular_file(trivial)) {
    throw std::runtime_error(trivial + " was not built");
  }
  return [=] { return run_child({trivial}); };
}

}  // namespace
}  // namespace loom::bench
