// `loom profile [--out DIR] [--shapes] [--flush-seconds S] -- PROGRAM [ARGS...]`: runs any
// program that uses Loom with the profiler on from the start (Note [Profiling a program from
// outside] in loom/profiler/profiler.h), then prints the table of time per op. The program
// leaves DIR/trace.json (open it in Perfetto) and DIR/profile.txt.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"

namespace loom::cli {

int run_profile(Args& args) {
  const std::vector<std::string>& words = args.rest();
  std::string out = "loom-profile";
  bool shapes = false;
  std::string flush = "1";
  size_t i = 0;
  for (; i < words.size() && words[i] != "--"; ++i) {
    const std::string& w = words[i];
    if (w == "--shapes") {
      shapes = true;
    } else if ((w == "--out" || w == "--flush-seconds") && i + 1 < words.size()) {
      (w == "--out" ? out : flush) = words[++i];
    } else {
      throw UsageError(str_cat("loom profile: unexpected argument '", w,
                               "' (usage: loom profile [--out DIR] [--shapes] "
                               "[--flush-seconds S] -- PROGRAM [ARGS...])"));
    }
  }
  if (i + 1 >= words.size()) {
    throw UsageError("loom profile: no program given (usage: loom profile [--out DIR] "
                     "[--shapes] [--flush-seconds S] -- PROGRAM [ARGS...])");
  }
  char* end = nullptr;
  const double seconds = std::strtod(flush.c_str(), &end);
  if (end == flush.c_str() || *end != '\0' || seconds < 0) {
    throw UsageError(str_cat("loom profile: --flush-seconds expects a number >= 0, got '",
                             flush, "'"));
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw InvalidInput(str_cat("loom profile: --out ", out, ": ", ec.message()));
  const std::string dir = std::filesystem::absolute(out).string();
  std::filesystem::remove(dir + "/profile.txt", ec);
  std::filesystem::remove(dir + "/trace.json", ec);

  std::vector<std::string> command(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end());
  std::vector<char*> argv;
  for (std::string& w : command) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(str_cat("loom profile: cannot start a process: ", std::strerror(errno)));
  if (pid == 0) {
    ::setenv("LOOM_PROFILE", dir.c_str(), 1);
    ::setenv("LOOM_PROFILE_SHAPES", shapes ? "1" : "0", 1);
    ::setenv("LOOM_PROFILE_FLUSH_SECONDS", flush.c_str(), 1);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "loom profile: cannot run %s: %s\n", argv[0], std::strerror(errno));
    std::_Exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(str_cat("loom profile: waitpid: ", std::strerror(errno)));
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  std::ifstream table(dir + "/profile.txt");
  if (table) {
    // The first table (time per op); the rest stays in the file.
    std::string line, text;
    int blank = 0;
    while (std::getline(table, line)) {
      if (line.empty() && ++blank == 1) break;
      text += line + "\n";
    }
    std::cout << text << "\nloom profile: " << dir << "/trace.json (open it in Perfetto), "
              << dir << "/profile.txt (also by provider" << (shapes ? " and by input shapes" : "")
              << ")\n";
  } else if (std::filesystem::exists(dir + "/trace.json")) {
    std::cout << "loom profile: the program ended without writing the tables (status " << code
              << "); the trace up to its last write is " << dir << "/trace.json\n";
  } else {
    std::cout << "loom profile: no trace was written: the program does not load libloom_core, "
                 "or ended before its first write (status "
              << code << ")\n";
  }
  return code;
}

}  // namespace loom::cli
