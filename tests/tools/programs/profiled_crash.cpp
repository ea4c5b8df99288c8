// A program that runs ops for a while and then crashes (abort), for `loom profile`'s test:
// the trace written before the crash must still be readable.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "loom/loom.h"

int main(int argc, char** argv) {
  using namespace loom;
  init();
  Tensor x = ones({64, 64});
  for (int i = 0; i < 50; ++i) x = (x.matmul(x) * 0.01).relu();
  std::printf("ran the ops\n");
  std::fflush(stdout);
  // Long enough for the profiler's flush thread to write the trace at least once.
  std::this_thread::sleep_for(std::chrono::milliseconds(argc > 1 ? std::atoi(argv[1]) : 600));
  std::abort();
}
