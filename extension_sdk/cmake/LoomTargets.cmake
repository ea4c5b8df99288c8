# The imported targets of the installed SDK, written by hand rather than by install(EXPORT):
# libloom.so links libloom_core privately, and an exported target would have to name it (and
# through it Abseil and Boost) although apps never see it. Paths are relative to this file
# (<prefix>/lib/cmake/Loom), so the prefix can move. Keep it in step with the in-tree targets
# of extension_sdk/CMakeLists.txt: loom_capi's SOVERSION (the soname below) and loom_sdk's
# compile features and options.
get_filename_component(_loom_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT TARGET Loom::loom)
  add_library(Loom::loom SHARED IMPORTED)
  set_target_properties(Loom::loom PROPERTIES
    IMPORTED_LOCATION "${_loom_prefix}/lib/libloom.so"
    IMPORTED_SONAME "libloom.so.1"
    INTERFACE_INCLUDE_DIRECTORIES "${_loom_prefix}/include")
endif()

if(NOT TARGET Loom::sdk)
  add_library(Loom::sdk INTERFACE IMPORTED)
  set_target_properties(Loom::sdk PROPERTIES
    INTERFACE_LINK_LIBRARIES Loom::loom
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_COMPILE_OPTIONS
      "$<$<COMPILE_LANGUAGE:C,CXX>:-fvisibility=hidden>;$<$<COMPILE_LANGUAGE:CXX>:-fvisibility-inlines-hidden>;$<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-gnu-unique>;$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fvisibility=hidden>;$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<CXX_COMPILER_ID:GNU>>:-Xcompiler=-fno-gnu-unique>")
endif()
unset(_loom_prefix)
