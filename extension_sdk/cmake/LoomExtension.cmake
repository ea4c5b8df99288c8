# loom_add_extension(NAME SOURCES src... [CUDA])
#
# Builds a stable-ABI extension: a MODULE library lib<NAME>.so that links libloom.so only
# (Loom::sdk: hidden visibility, -fno-gnu-unique) and exports just the plugin entry point
# `loom_plugin_manifest` (LOOM_STABLE_EXTENSION of loom/stable.hpp declares it; a linker
# version script, LoomExtension.map, keeps every other symbol local).
# Load it with `loom plugin check lib<NAME>.so`, api->PluginLoad(path), or by putting it
# in a folder named by LOOM_PLUGIN_PATH.
#
# CUDA: the sources may include .cu files. The CUDA language is enabled here (when the
# project has not done so) for CMAKE_CUDA_ARCHITECTURES, default "90-real;90-virtual"
# (sm_90 machine code plus its PTX, which newer GPUs JIT-compile) unless the caller set
# CMAKE_CUDA_ARCHITECTURES or CUDAARCHS; the CUDA runtime is linked as a shared library.
#
# Note [loom_add_extension is a macro]: enable_language() must run at directory scope, not
# inside a function (the compiler variables it sets would vanish when the function returns),
# so the public name is a macro that enables CUDA and then calls the function doing the rest.
# Call it at file scope of a CMakeLists.txt, not from inside a function.
macro(loom_add_extension _loom_ext_name)
  set(_loom_ext_args ${ARGN})
  if("CUDA" IN_LIST _loom_ext_args)
    get_property(_loom_ext_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT "CUDA" IN_LIST _loom_ext_languages)
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
        set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual" CACHE STRING
            "CUDA architectures of Loom extensions (CMake CUDA_ARCHITECTURES syntax)")
      endif()
      enable_language(CUDA)
    endif()
  endif()
  _loom_add_extension(${_loom_ext_name} ${_loom_ext_args})
endmacro()

function(_loom_add_extension NAME)
  cmake_parse_arguments(E "CUDA" "" "SOURCES" ${ARGN})
  if(E_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "loom_add_extension(${NAME}): unknown arguments ${E_UNPARSED_ARGUMENTS} "
                        "(expected SOURCES src... [CUDA])")
  endif()
  if(NOT E_SOURCES)
    message(FATAL_ERROR "loom_add_extension(${NAME}): no SOURCES given")
  endif()
  if(NOT E_CUDA)
    foreach(src IN LISTS E_SOURCES)
      if(src MATCHES "\\.cu$")
        message(FATAL_ERROR "loom_add_extension(${NAME}): ${src} is a CUDA source; add the "
                            "CUDA keyword: loom_add_extension(${NAME} SOURCES ... CUDA)")
      endif()
    endforeach()
  endif()

  add_library(${NAME} MODULE ${E_SOURCES})
  target_link_libraries(${NAME} PRIVATE Loom::sdk)
  set_target_properties(${NAME} PROPERTIES PREFIX "lib")
  # Only the entry point leaves the module (LoomExtension.map says why visibility is not enough).
  set(map "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/LoomExtension.map")
  target_link_options(${NAME} PRIVATE "LINKER:--version-script=${map}")
  set_property(TARGET ${NAME} APPEND PROPERTY LINK_DEPENDS "${map}")
  if(E_CUDA)
    # The shared runtime, as Loom's own CUDA plugin: a statically linked one would register
    # exit handlers inside this module, which may be unmapped (unloaded) before the process exits.
    set_target_properties(${NAME} PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set_target_properties(${NAME} PROPERTIES CUDA_ARCHITECTURES "90-real;90-virtual")
    endif()
  endif()
endfunction()
