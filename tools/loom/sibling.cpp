// Subcommands that run a program built next to `loom`: `loom bench` runs loom-bench (it
// links libtorch for the comparisons) and `loom train` runs loom-train (it links the nn,
// optim and data libraries). `loom` itself links only libloom_core, so its start-up stays
// cheap.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom::cli {
namespace {

/// Replaces this process with the program `name` from loom's own folder, given args.
[[noreturn]] void exec_sibling(std::string_view name, const std::vector<std::string>& args,
                               std::string_view how_to_build) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(str_cat("cannot find the loom executable: ", ec.message()));
  const std::string program = (self.parent_path() / std::string(name)).string();
  if (!fs::is_regular_file(program, ec)) {
    throw Error(str_cat("the program ", program, " was not built; ", how_to_build));
  }
  std::vector<std::string> words = args;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(program.c_str(), argv.data());
  throw Error(str_cat("cannot run ", program, ": ", std::strerror(errno)));
}

}  // namespace

int run_bench(Args& args) {
  exec_sibling("loom-bench", args.rest(),
               "configure with -DLOOM_BUILD_BENCH=ON (and libtorch installed for the "
               "comparisons), then build the 'loom-bench' target");
}

int run_train(Args& args) {
  exec_sibling("loom-train", args.rest(), "build the 'loom-train' target");
}

}  // namespace loom::cli
