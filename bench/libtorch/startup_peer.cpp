// The libtorch side of startup.info: bench-libtorch-trivial (make a tensor, exit), linked
// with --as-needed so that it loads only the libtorch libraries it uses.
#include <filesystem>
#include <stdexcept>

#include "../child_process.h"
#include "../harness.h"

namespace loom::bench {
namespace {

LOOM_BENCH_PEER(libtorch, "startup.info") {
  const std::string trivial = bin_dir() + "/bench-libtorch-trivial";
  if (!std::filesystem::is_regular_file(trivial)) {
    throw std::runtime_error(trivial + " was not built");
  }
  return [=] { return run_child({trivial}); };
}

}  // namespace
}  // namespace loom::bench
