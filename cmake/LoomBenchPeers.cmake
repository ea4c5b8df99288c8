# The libtorch peers of loom-bench (bench/README.md, "Peers"), detected here for the top level.
#
#   libtorch113  Debian's libtorch-dev (1.13), found with find_package(Torch) in the global scope
#                as before: the parity tests (tests/parity, tests/plugins/optim) use its
#                TORCH_LIBRARIES / TORCH_INCLUDE_DIRS under LOOM_WITH_LIBTORCH.
#   torch        libtorch from a PyTorch 2.x wheel (scripts/run-bench.sh installs one in a
#                git-ignored virtual environment): LOOM_BENCH_TORCH_PREFIX is that wheel's
#                torch.utils.cmake_prefix_path. bench/CMakeLists.txt imports its two CPU
#                libraries itself (see there why not through find_package).
find_package(Torch QUIET PATHS /usr/lib/x86_64-linux-gnu/cmake/Torch)
option(LOOM_WITH_LIBTORCH "Compare against libtorch in the tests (parity) and the benchmarks"
       ${Torch_FOUND})
option(LOOM_BENCH_LIBTORCH113 "Build loom-bench's libtorch113 peer (Debian's libtorch 1.13)"
       ${LOOM_WITH_LIBTORCH})
set(LOOM_BENCH_TORCH_PREFIX "" CACHE PATH
    "A PyTorch 2.x wheel's torch.utils.cmake_prefix_path: builds loom-bench's torch peer")
if(LOOM_BENCH_LIBTORCH113 AND NOT Torch_FOUND)
  message(FATAL_ERROR "LOOM_BENCH_LIBTORCH113 needs Debian's libtorch-dev (not found)")
endif()
if(LOOM_BENCH_TORCH_PREFIX)
  set(LOOM_BENCH_TORCH ON)
else()
  set(LOOM_BENCH_TORCH OFF)
endif()
