// bench-<peer>-sides: a libtorch peer's sides, served to loom-bench (see peer_bridge.h).
//
// loom-bench starts one per libtorch peer, writes one command per line to its stdin and reads
// one reply per line from file descriptor 3 ("ok PAYLOAD" or "err MESSAGE"); stdout and stderr
// are loom-bench's (flushed after every command, so that what a side prints comes out before
// loom-bench goes on). Commands:
//   init SAMPLE_MS        ok
//   configurations        ok N, then N lines "WHO<TAB>LINE"
//   sides                 ok N, then N benchmark names, one a line
//   setup I               ok HANDLE | ok none (not available here) | err WHY
//   sample HANDLE         ok V1 V2 ... | err WHY
// It exits at the end of its input.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "peer_bridge.h"

namespace {

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return s;
}

}  // namespace

int main() {
  FILE* reply = fdopen(3, "w");
  if (!reply) {
    std::fprintf(stderr, "bench-peer-sides: started without a reply pipe on descriptor 3\n");
    return 2;
  }
  auto send = [&](const std::string& line) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::fputs((line + "\n").c_str(), reply);
    std::fflush(reply);
  };
  char err[2048], a[512], b[4096];
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string command;
    in >> command;
    err[0] = '\0';
    if (command == "init") {
      double ms = 20;
      in >> ms;
      send(loom_bench_peer_init(LOOM_BENCH_PEER_ABI, ms, err, sizeof err) == 0
               ? "ok"
               : "err " + one_line(err));
    } else if (command == "configurations") {
      const int n = loom_bench_peer_configuration_count();
      std::string out = "ok " + std::to_string(n);
      for (int i = 0; i < n; ++i) {
        a[0] = b[0] = '\0';
        loom_bench_peer_configure(i, a, sizeof a, b, sizeof b);
        out += "\n" + one_line(a) + "\t" + one_line(b);
      }
      send(out);
    } else if (command == "sides") {
      const int n = loom_bench_peer_side_count();
      std::string out = "ok " + std::to_string(n);
      for (int i = 0; i < n; ++i) {
        a[0] = '\0';
        loom_bench_peer_side_name(i, a, sizeof a);
        out += "\n" + one_line(a);
      }
      send(out);
    } else if (command == "setup") {
      int i = -1;
      in >> i;
      const int h = loom_bench_peer_setup(i, err, sizeof err);
      send(h >= 0 ? "ok " + std::to_string(h) : h == -1 ? "ok none" : "err " + one_line(err));
    } else if (command == "sample") {
      int h = -1, count = 0;
      in >> h;
      double values[16];
      if (loom_bench_peer_sample(h, values, 16, &count, err, sizeof err) != 0) {
        send("err " + one_line(err));
      } else {
        std::ostringstream out;
        out.precision(17);
        out << "ok";
        for (int k = 0; k < count; ++k) out << ' ' << values[k];
        send(out.str());
      }
    } else {
      send("err unknown command '" + one_line(command) + "'");
    }
  }
  return 0;
}
