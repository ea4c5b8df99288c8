#include "child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

extern char** environ;

namespace loom::bench {

namespace {
// Keeps an OpenMP runtime (libtorch's) from spinning its worker threads while it winds down.
constexpr const char* kChildEnvironment[] = {"OMP_WAIT_POLICY=passive"};
}  // namespace

Sample run_child(const std::vector<std::string>& command) {
  const std::string spawner = bin_dir() + "/bench-spawn";
  if (!std::filesystem::is_regular_file(spawner)) {
    throw std::runtime_error(spawner + " was not built");
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "OMP_WAIT_POLICY=", 16) != 0) env.emplace_back(*e);
  }
  for (const char* e : kChildEnvironment) env.emplace_back(e);
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> words = {spawner};
  words.insert(words.end(), command.begin(), command.end());
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, spawner.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[256];
    for (;;) {
      const ssize_t n = read(fds[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fds[0]);
  if (rc != 0) throw std::runtime_error("cannot run " + spawner + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  long long wall_ns = 0;
  long maxrss_kib = 0;
  int code = -1;
  if (std::sscanf(out.c_str(), "wall_ns=%lld maxrss_kib=%ld status=%d", &wall_ns, &maxrss_kib,
                  &code) != 3) {
    throw std::runtime_error("bench-spawn gave no measurement for " + command[0]);
  }
  if (code != 0) {
    throw std::runtime_error(command[0] + " exited with status " + std::to_string(code) +
                             (code == 127 ? " (it could not be started)" : ""));
  }
  return {static_cast<double>(wall_ns) * 1e-9, static_cast<double>(maxrss_kib) / 1024.0};
}

}  // namespace loom::bench
