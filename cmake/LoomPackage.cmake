# The installed C++ API as a CMake package and a pkg-config file (docs/design/packaging.md).
#
# Included by the top-level CMakeLists.txt after every library is defined. The libraries put
# themselves into the export set LoomCppTargets (install(TARGETS ... EXPORT LoomCppTargets));
# this file adds the umbrella target and writes:
#   lib/cmake/Loom/LoomCppTargets.cmake   Loom::core, Loom::ops_core, Loom::ops_nn, Loom::nn,
#                                         Loom::optim, Loom::data, Loom::compile,
#                                         [Loom::utils], [Loom::cuda], Loom::cpp (all of them)
#   lib/pkgconfig/loom-cpp.pc             the same for `pkg-config --cflags --libs loom-cpp`
# LoomConfig.cmake (extension_sdk/cmake/LoomConfig.cmake.in) loads the C++ targets only when a
# program asks for them, so an app on the stable ABI needs none of their dependencies.

# Loom::cpp: the whole C++ API in one name, as libtorch's ${TORCH_LIBRARIES}: the core, both op
# packs' headers, nn, optim, data and compile (and utils, cuda where they are built).
add_library(loom_cpp INTERFACE)
target_link_libraries(loom_cpp INTERFACE loom_core loom_ops_core_api loom_ops_nn_api
                                         loom_nn loom_optim loom_data loom_compile)
set(_loom_cpp_components core ops_core ops_nn nn optim data compile)
set(_loom_cpp_libs -lloom_nn -lloom_optim -lloom_data -lloom_compile)
if(TARGET loom_utils)
  target_link_libraries(loom_cpp INTERFACE loom_utils)
  list(APPEND _loom_cpp_components utils)
  list(PREPEND _loom_cpp_libs -lloom_utils)
endif()
if(TARGET loom_cuda_api)
  target_link_libraries(loom_cpp INTERFACE loom_cuda_api)
  list(APPEND _loom_cpp_components cuda)
endif()
list(APPEND _loom_cpp_components cpp)
set_target_properties(loom_cpp PROPERTIES EXPORT_NAME cpp)
add_library(Loom::cpp ALIAS loom_cpp)
install(TARGETS loom_cpp EXPORT LoomCppTargets)

install(EXPORT LoomCppTargets NAMESPACE Loom:: DESTINATION lib/cmake/Loom
        FILE LoomCppTargets.cmake)
# The components this install has (LoomConfig.cmake checks requested ones against it).
string(REPLACE ";" " " LOOM_CPP_COMPONENTS "${_loom_cpp_components}")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/LoomCppComponents.cmake
  "# Written by cmake/LoomPackage.cmake: the C++ components of this install.\n"
  "set(_loom_cpp_components ${LOOM_CPP_COMPONENTS})\n")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/LoomCppComponents.cmake DESTINATION lib/cmake/Loom)

# pkg-config: Abseil's own .pc files carry its flags and libraries; Boost is header-only.
string(REPLACE ";" " " LOOM_CPP_PC_LIBS "${_loom_cpp_libs}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/loom-cpp.pc.in ${CMAKE_CURRENT_BINARY_DIR}/loom-cpp.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/loom-cpp.pc DESTINATION lib/pkgconfig)
unset(_loom_cpp_components)
unset(_loom_cpp_libs)
