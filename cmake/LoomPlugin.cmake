# loom_add_plugin(NAME SOURCES src... [LIBS lib...] [OUTPUT_DIR dir] [NO_INSTALL])
#
# Builds one Loom plugin: a MODULE library named loom_<NAME>.so with hidden
# visibility (only its manifest entry point is exported), linked against
# libloom_core, and placed in the plugin folder that `loom` searches.
# NO_INSTALL: not installed (test plugins, deliberately broken ones).
function(loom_add_plugin NAME)
  cmake_parse_arguments(P "NO_INSTALL" "OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
  if(NOT P_OUTPUT_DIR)
    set(P_OUTPUT_DIR ${LOOM_PLUGIN_OUTPUT_DIR})
  endif()
  add_library(${NAME} MODULE ${P_SOURCES})
  target_link_libraries(${NAME} PRIVATE loom::core ${P_LIBS})
  # GNU unique symbols (e.g. from inline statics of std templates) pin a .so in memory
  # after dlclose; without them unloading a plugin really unmaps it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${NAME} PRIVATE -fno-gnu-unique)
  endif()
  set_target_properties(${NAME} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "loom_${NAME}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR}
    BUILD_RPATH "$ORIGIN/../..;$ORIGIN"
    INSTALL_RPATH "$ORIGIN/../..")
  if(NOT P_NO_INSTALL)
    install(TARGETS ${NAME} LIBRARY DESTINATION lib/loom/plugins)
  endif()
endfunction()
