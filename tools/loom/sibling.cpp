// `loom bench [...]`: runs loom-bench, which is built next to `loom` (it links libtorch for
// the comparisons, which `loom` itself must not: its start-up stays cheap).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom::cli {

int run_bench(Args& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(str_cat("cannot find the loom executable: ", ec.message()));
  const std::string bench = (self.parent_path() / "loom-bench").string();
  if (!fs::is_regular_file(bench, ec)) {
    throw Error(str_cat("the benchmark program ", bench,
                        " was not built; configure with -DLOOM_BUILD_BENCH=ON (and libtorch "
                        "installed for the comparisons), then build the 'loom-bench' target"));
  }
  std::vector<std::string> words = args.rest();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(bench.c_str()));
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(bench.c_str(), argv.data());
  throw Error(str_cat("cannot run ", bench, ": ", std::strerror(errno)));
}

}  // namespace loom::cli
