# Intel MKL for the cpu_mkl provider (docs/design/cpu-providers.md), found where
# scripts/install-deps.sh puts it (.deps/mkl/{lib,include}, from the mkl wheels) or under
# LOOM_MKL_ROOT. Defines LOOM_WITH_MKL (opt-in: OFF by default, see below) and loom::mkl:
# the LP64 interface, the GNU OpenMP threading layer (libgomp, the runtime Loom's own loops
# and oneDNN use: one thread pool) and the core. The wheels ship only versioned sonames
# (libmkl_core.so.3), so the libraries are found by full file name.
set(LOOM_MKL_ROOT "${PROJECT_SOURCE_DIR}/.deps/mkl" CACHE PATH
    "Folder with MKL's lib/ and include/ (scripts/install-deps.sh fills .deps/mkl)")

set(_loom_mkl_found OFF)
if(EXISTS "${LOOM_MKL_ROOT}/include/mkl_cblas.h")
  set(_loom_mkl_found ON)
  foreach(_part intel_lp64 gnu_thread core)
    file(GLOB _loom_mkl_lib "${LOOM_MKL_ROOT}/lib/libmkl_${_part}.so.*")
    if(NOT _loom_mkl_lib)
      set(_loom_mkl_found OFF)
    endif()
    list(GET _loom_mkl_lib 0 _loom_mkl_${_part})
  endforeach()
endif()
# Built whenever MKL is there (scripts/install-deps.sh puts it there unless LOOM_WITH_MKL=0).
option(LOOM_WITH_MKL "Build the MKL CPU GEMM provider plugin (plugins/cpu_mkl; needs MKL in LOOM_MKL_ROOT)" ${_loom_mkl_found})

if(LOOM_WITH_MKL)
  if(NOT _loom_mkl_found)
    message(FATAL_ERROR "LOOM_WITH_MKL is ON but MKL is not in ${LOOM_MKL_ROOT} "
                        "(run scripts/install-deps.sh, or set LOOM_MKL_ROOT)")
  endif()
  find_package(OpenMP REQUIRED)
  add_library(loom_mkl INTERFACE)
  target_include_directories(loom_mkl SYSTEM INTERFACE "${LOOM_MKL_ROOT}/include")
  # Whole-file names keep the link order MKL needs (interface, threading, core).
  target_link_libraries(loom_mkl INTERFACE "${_loom_mkl_intel_lp64}" "${_loom_mkl_gnu_thread}"
                                           "${_loom_mkl_core}" OpenMP::OpenMP_CXX)
  add_library(loom::mkl ALIAS loom_mkl)
  set(LOOM_MKL_LIBDIR "${LOOM_MKL_ROOT}/lib")
  message(STATUS "Loom: MKL from ${LOOM_MKL_ROOT} (plugin cpu_mkl)")
endif()
