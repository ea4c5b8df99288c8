#pragma once
/// @file
/// The plain logic behind `loom info`'s CUDA diagnosis, kept free of CUDA calls (header-only)
/// so that the tests check it on a machine without a GPU: why no device is available, and
/// whether a GPU can run the architectures the plugin was compiled for (the "no kernel image
/// is available for execution on the device" trap).

#include <string>
#include <string_view>
#include <vector>

#include "loom/core/str_cat.h"

namespace loom::cuda {

/// "13.0" from CUDA's 1000 * major + 10 * minor encoding.
inline std::string cuda_version_text(int v) { return str_cat(v / 1000, ".", (v % 1000) / 10); }

/// The one-line reason no CUDA device is available, from what cudaGetDeviceCount said.
/// @param error_name cudaGetErrorName of its error, "" when it succeeded with 0 devices
/// @param error_string cudaGetErrorString of the error
/// @param driver cudaDriverGetVersion (0 without a driver)
/// @param runtime cudaRuntimeGetVersion
/// @param visible_devices CUDA_VISIBLE_DEVICES, or nullptr when unset
inline std::string unavailable_text(std::string_view error_name, std::string_view error_string,
                                    int driver, int runtime, const char* visible_devices) {
  const std::string code =
      error_name.empty() ? std::string() : str_cat(error_name, ": ", error_string);
  if (error_name == "cudaErrorInsufficientDriver" && driver == 0) {
    return str_cat("no CUDA driver is installed (", code, ")");
  }
  if (error_name == "cudaErrorInsufficientDriver") {
    return str_cat("the CUDA driver (", cuda_version_text(driver),
                   ") is older than the CUDA runtime Loom was built with (",
                   cuda_version_text(runtime), "); update the NVIDIA driver (", code, ")");
  }
  if (error_name.empty() || error_name == "cudaErrorNoDevice") {
    return str_cat(
        "no CUDA-capable GPU was found",
        visible_devices ? str_cat(" (CUDA_VISIBLE_DEVICES='", visible_devices, "')") : "",
        code.empty() ? "" : str_cat(" (", code, ")"));
  }
  return str_cat("cudaGetDeviceCount failed (", code, ")");
}

/// One entry of the architectures the plugin was compiled for (LOOM_CUDA_ARCHITECTURES).
struct CompiledArch {
  int capability = 0;     ///< 90 for sm_90
  bool sass = false;      ///< machine code is embedded ("-real" or no suffix)
  bool ptx = false;       ///< PTX is embedded ("-virtual" or no suffix), JIT-compiled later
  bool specific = false;  ///< an "a" variant (sm_90a): runs only on exactly that version
};

/// Parses CMake's CUDA_ARCHITECTURES list, comma- or semicolon-separated:
/// "90-real,90-virtual", "80", "90a-real".
inline std::vector<CompiledArch> parse_architectures(std::string_view list) {
  std::vector<CompiledArch> out;
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find_first_of(",;", start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view item = list.substr(start, end - start);
    start = end + 1;
    size_t digits = 0;
    int capability = 0;
    while (digits < item.size() && item[digits] >= '0' && item[digits] <= '9') {
      capability = capability * 10 + (item[digits] - '0');
      ++digits;
    }
    if (digits == 0) continue;
    const std::string_view rest = item.substr(digits);
    CompiledArch a;
    a.capability = capability;
    a.specific = !rest.empty() && rest[0] != '-';
    a.sass = rest.find("-virtual") == std::string_view::npos;
    a.ptx = rest.find("-real") == std::string_view::npos;
    out.push_back(a);
  }
  return out;
}

/// "sm_90 (SASS), compute_90 (PTX)".
inline std::string architectures_text(const std::vector<CompiledArch>& archs) {
  std::string out;
  for (const CompiledArch& a : archs) {
    const char* suffix = a.specific ? "a" : "";
    if (a.sass) str_append(&out, out.empty() ? "" : ", ", "sm_", a.capability, suffix, " (SASS)");
    if (a.ptx) {
      str_append(&out, out.empty() ? "" : ", ", "compute_", a.capability, suffix, " (PTX)");
    }
  }
  return out.empty() ? "(none)" : out;
}

/// True if a GPU of this compute capability (major * 10 + minor) can run code compiled for
/// archs: machine code runs on the same major version with an equal or newer minor one ("a"
/// variants only on exactly theirs); PTX is JIT-compiled for any equal or newer GPU.
inline bool runs_on(const std::vector<CompiledArch>& archs, int capability) {
  for (const CompiledArch& a : archs) {
    if (a.specific) {
      if ((a.sass || a.ptx) && a.capability == capability) return true;
      continue;
    }
    if (a.sass && a.capability / 10 == capability / 10 && a.capability <= capability) return true;
    if (a.ptx && a.capability <= capability) return true;
  }
  return false;
}

}  // namespace loom::cuda
