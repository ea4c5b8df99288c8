#pragma once
// Generated C++ built by the system compiler and kept in a disk cache (docs/design/compile.md,
// sections 6 and 7). Internal to libloom_compile.

#include <boost/dll/shared_library.hpp>
#include <memory>
#include <string>

namespace loom::graph::detail {

/// A built and loaded library of generated code. It stays loaded while any user holds it.
struct CodeLibrary {
  boost::dll::shared_library library;
  std::string path;  ///< the cache entry it was loaded from
};

/// What build_or_load did.
struct CodeBuild {
  std::shared_ptr<CodeLibrary> library;  ///< null: no code (error says why)
  bool cache_hit = false;                ///< found in the cache, no compiler run
  bool no_compiler = false;              ///< no C++ compiler was found
  std::string error;                     ///< why there is no library
};

/// Finds source's library in the disk cache, or compiles it there, and loads it.
///
/// The cache folder is LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else ~/.cache/loom, with
/// `compile/` under it; an entry is `<key hash>.so` and `<key hash>.meta` (the key text, the
/// `.so`'s size and checksum), written to temporary names and renamed in, `.so` first, so
/// processes may build one key at once. An entry whose key text, size or checksum differs is
/// deleted and rebuilt, with one log line. Past LOOM_CACHE_MAX_MB (default 1024) of `.so`
/// files, the least recently used entries are deleted. The compiler is LOOM_CXX, else CXX,
/// else `c++` on PATH, run with a time limit (LOOM_COMPILE_TIMEOUT, seconds, default 120).
CodeBuild build_or_load(const std::string& source);

/// Whether build_or_load has a compiler to run (LOOM_CXX, CXX or `c++`, found as it finds it).
bool compiler_found();

}  // namespace loom::graph::detail
