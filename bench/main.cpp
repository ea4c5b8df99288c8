// loom-bench: Loom against libtorch, in one process (see harness.h and README.md).
#include "harness.h"

int main(int argc, char** argv) { return loom::bench::run_main(argc, argv); }
