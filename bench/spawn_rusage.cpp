// bench-spawn PROGRAM [ARGS...]: runs PROGRAM once with stdout and stderr sent to /dev/null
// and prints "wall_ns=N maxrss_kib=N status=N" for it.
//
// Why a separate, tiny program: Linux reports as a child's ru_maxrss the larger of its own
// peak and the peak of the process image it replaced at exec. Spawned straight from
// loom-bench (which has libtorch loaded), every child would look as big as loom-bench.
// This program is small, so the peak it reports for its own child is that child's.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {
long long now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench-spawn PROGRAM [ARGS...]\n");
    return 2;
  }
  const long long t0 = now_ns();
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "bench-spawn: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    execv(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      std::fprintf(stderr, "bench-spawn: wait4: %s\n", std::strerror(errno));
      return 1;
    }
  }
  const long long wall = now_ns() - t0;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::printf("wall_ns=%lld maxrss_kib=%ld status=%d\n", wall, usage.ru_maxrss, code);
  return 0;
}
