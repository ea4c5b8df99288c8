// libloom.so: the function table of the stable C ABI (include/loom/capi.h), statuses,
// dtypes and devices, plugins. Tensors, ops and registration live in the sibling files.
#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <regex>
#include <string_view>
#include <vector>

#include "capi_internal.h"
#include "loom/core/device_hooks.h"
#include "loom/core/error.h"
#include "loom/core/generator.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/loom.h"

namespace loom::capi {

namespace {
// Out of memory while reporting an error: a static status that StatusRelease never frees.
LoomStatus* static_oom_status() {
  static LoomStatus* oom = new LoomStatus{LOOM_OUT_OF_MEMORY, "out of memory"};
  return oom;
}
}  // namespace

LoomStatus* make_status(LoomErrorCode code, std::string message) {
  try {
    return new LoomStatus{code, std::move(message)};
  } catch (...) {
    return static_oom_status();
  }
}

// Note [C ABI error codes]: the one map between Loom's exception types and the codes of
// capi.h, in both directions: status_from_current_exception (an exception leaving an entry
// point) and throw_status (a status a C kernel or backward function returned, rethrown
// through the dispatcher to whoever called the op, maybe an entry point again). Each code has
// one exception type, so a status keeps its code on the way through C++; the two codes that
// have no Loom exception of their own get one in capi_internal.h.
LoomStatus* status_from_current_exception(std::string_view echoed_input) {
  try {
    try {
      throw;
    } catch (const InvalidArgumentError& e) {  // before ValueError, its base
      return make_status(LOOM_INVALID_ARGUMENT, message_for_c(e.what(), echoed_input));
    } catch (const ValueError& e) {
      return make_status(LOOM_VALUE_ERROR, message_for_c(e.what(), echoed_input));
    } catch (const TypeError& e) {
      return make_status(LOOM_TYPE_ERROR, message_for_c(e.what(), echoed_input));
    } catch (const IndexError& e) {
      return make_status(LOOM_INDEX_ERROR, message_for_c(e.what(), echoed_input));
    } catch (const DeviceError& e) {
      return make_status(LOOM_DEVICE_ERROR, message_for_c(e.what(), echoed_input));
    } catch (const NotImplementedError& e) {
      return make_status(LOOM_NOT_IMPLEMENTED, message_for_c(e.what(), echoed_input));
    } catch (const SchemaParseError& e) {
      return make_status(LOOM_REGISTRATION_ERROR, message_for_c(e.what(), echoed_input));
    } catch (const RegistrationError& e) {
      return make_status(LOOM_REGISTRATION_ERROR, message_for_c(e.what(), echoed_input));
    } catch (const PluginError& e) {
      return make_status(LOOM_PLUGIN_ERROR, message_for_c(e.what(), echoed_input));
    } catch (const AutogradError& e) {
      return make_status(LOOM_AUTOGRAD_ERROR, message_for_c(e.what(), echoed_input));
    } catch (const OutOfMemoryError& e) {
      return make_status(LOOM_OUT_OF_MEMORY, message_for_c(e.what(), echoed_input));
    } catch (const std::bad_alloc&) {
      return make_status(LOOM_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
      // The allocators report exhaustion as a plain loom::Error ("CUDA out of memory. Tried
      // to allocate ...").
      const std::string what = e.what();
      return make_status(
          what.find("out of memory") != std::string::npos ? LOOM_OUT_OF_MEMORY : LOOM_ERROR,
          message_for_c(what, echoed_input));
    } catch (...) {
      return make_status(LOOM_ERROR, "unknown error (a non-standard exception)");
    }
  } catch (...) {  // no memory left to copy or rewrite the message
    return static_oom_status();
  }
}

void throw_status(LoomStatus* s, const std::string& where) {
  const LoomErrorCode code = s->code;
  std::string msg = s->message.empty() ? str_cat(where, " failed") : s->message;
  if (s != static_oom_status()) delete s;
  switch (code) {
    case LOOM_VALUE_ERROR:
      throw ValueError(msg);
    case LOOM_TYPE_ERROR:
      throw TypeError(msg);
    case LOOM_INDEX_ERROR:
      throw IndexError(msg);
    case LOOM_DEVICE_ERROR:
      throw DeviceError(msg);
    case LOOM_NOT_IMPLEMENTED:
      throw NotImplementedError(msg);
    case LOOM_REGISTRATION_ERROR:
      throw RegistrationError(msg);
    case LOOM_PLUGIN_ERROR:
      throw PluginError(msg);
    case LOOM_AUTOGRAD_ERROR:
      throw AutogradError(msg);
    case LOOM_INVALID_ARGUMENT:
      throw InvalidArgumentError(msg);
    case LOOM_OUT_OF_MEMORY:
      throw OutOfMemoryError(msg);
    default:
      throw Error(msg);  // LOOM_ERROR, and codes newer than this library
  }
}

namespace {
// Note [Messages for C clients]: Loom's messages are written for C++ users; a C client gets
// them through message_for_c, which drops what means nothing outside Loom's source tree and
// says in the C API's words what the C++ API would do. Kept to the messages an entry point can
// produce; each rewrite is tested in tests/extension_sdk/capi_test.cpp.
struct Rewrite {
  std::regex pattern;       ///< what to find
  const char* replacement;  ///< what replaces it ($1: the first group)
};

const std::vector<Rewrite>& rewrites() {
  static const auto* r = [] {
    // A file of Loom's tree as Origin::relative_path writes it (or an absolute path into a tree),
    // with its line: "ops/core/cpu/binary.cpp:300".
    const std::string path = "(?:/[^\\s:'\"()]*/)?";
    const std::string loom_file = path +
                                  "(?:core|dispatcher|ops|plugins|extension_sdk|tools)/"
                                  "[A-Za-z0-9_./+-]*\\.(?:cpp|cc|h|hpp|cu|cuh|c):[0-9]+";
    const std::string capi_file = path + "extension_sdk/capi/[A-Za-z0-9_./+-]*:[0-9]+";
    return new std::vector<Rewrite>{
        // Registrations made through this API have the C ABI's own source file as their origin;
        // what the client did was create a library.
        {std::regex("static registration at " + capi_file), "a library of this program"},
        // "reference (plugin 'ops_core' at ops/core/...:300)", "... in cudaMalloc at plugins/...".
        {std::regex(" ?\\(" + loom_file + "\\)"), ""},
        {std::regex("(?: at| in)? " + loom_file), ""},
        // C++-only advice: LOOM_LIBRARY blocks are LibraryCreate / PluginLibrary here.
        {std::regex("LOOM_LIBRARY\\(([A-Za-z0-9_]*)\\) at a library of this program"),
         "LibraryCreate(\"$1\")"},
        {std::regex("LOOM_LIBRARY\\(([A-Za-z0-9_]*)\\) at plugin '([^']*)'"),
         "PluginLibrary(\"$1\") of plugin '$2'"},
        {std::regex("LOOM_LIBRARY\\(([A-Za-z0-9_]*)\\)"), "library \"$1\""},
        {std::regex("by the library at a library of this program"),
         "by another library of this program"},
        {std::regex("by the library at plugin"), "by the library of plugin"},
        {std::regex("; only one LOOM_LIBRARY may define a namespace, use LOOM_LIBRARY_FRAGMENT\\("
                    "[^)]*\\) to add operators to it"),
         "; only one library may define a namespace: define the operator in that library, or "
         "use another namespace"},
        // Anomaly mode is not part of the C API.
        {std::regex(" Hint: enable anomaly detection[^.]*\\."), ""},
        {std::regex("var_no_grad = var\\.detach\\(\\)"), "TensorDetach"},
    };
  }();
  return *r;
}
}  // namespace

namespace {
// Replaces every quote of a long `input` in `message` by its excerpt. Both may be megabytes and
// the input as repetitive as "aaaa...", so the search is Knuth-Morris-Pratt: linear whatever the
// text (std::string::find and libstdc++'s Boyer-Moore set-up are quadratic on such input).
std::string shorten_echoes(const std::string& message, std::string_view input) {
  const size_t m = input.size();
  if (m <= kMessageExcerptChars || message.size() < m) return message;
  // border[i]: the length of the longest proper prefix of input[0..i] that is also its suffix.
  std::vector<size_t> border(m, 0);
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && input[i] != input[k]) k = border[k - 1];
    if (input[i] == input[k]) ++k;
    border[i] = k;
  }
  const std::string excerpt = message_excerpt(input);
  std::string out;
  size_t copied = 0;  // message[0, copied) is in out
  for (size_t i = 0, k = 0; i < message.size(); ++i) {
    while (k > 0 && message[i] != input[k]) k = border[k - 1];
    if (message[i] == input[k]) ++k;
    if (k == m) {  // a quote ends at i
      const size_t start = i + 1 - m;
      out.append(message, copied, start - copied);
      out += excerpt;
      copied = i + 1;
      k = 0;  // quotes do not overlap
    }
  }
  out.append(message, copied, std::string::npos);
  return out;
}
}  // namespace

std::string message_for_c(const std::string& message, std::string_view echoed_input) {
  // Shortened first: the rewrites below are regular expressions, which should not walk a
  // megabyte of someone's input.
  std::string out = shorten_echoes(message, echoed_input);
  for (const Rewrite& rw : rewrites()) out = std::regex_replace(out, rw.pattern, rw.replacement);
  return out;
}

LoomStatus* null_argument(const char* fn, const char* what) {
  return make_status(LOOM_INVALID_ARGUMENT, str_cat(fn, ": argument '", what, "' is NULL"));
}

LoomStatus* check_values(const char* fn, const char* what, const LoomValue* values, size_t n) {
  if (n == 0) return nullptr;
  if (values == nullptr) return null_argument(fn, what);
  // A client older than LoomValue v1 cannot exist; a newer one may have a larger struct.
  if (values->struct_size < sizeof(LoomValue)) {
    return make_status(
        LOOM_INVALID_ARGUMENT,
        str_cat(fn, ": ", what, "[0].struct_size is ", values->struct_size, ", expected at least ",
                sizeof(LoomValue), " (set struct_size = sizeof(LoomValue) in every value)"));
  }
  return nullptr;
}

namespace {

// ---- status ----
LoomErrorCode status_code(const LoomStatus* s) { return s ? s->code : LOOM_OK; }
const char* status_message(const LoomStatus* s) { return s ? s->message.c_str() : ""; }
void status_release(LoomStatus* s) {
  if (s != static_oom_status()) delete s;
}
LoomStatus* status_create(LoomErrorCode code, const char* message) {
  return make_status(code == LOOM_OK ? LOOM_ERROR : code, message ? message : "");
}

// ---- library ----
const char* version_string() { return LOOM_VERSION_STRING; }

LoomStatus* init() {
  LOOM_CAPI_TRY
  loom::init();
  // Note [CUDA at Init]: the CUDA backend is optional like cpu_onednn, but loading it maps
  // cuBLAS(Lt) and cuDNN (~55 ms, ~220 MB resident). Without a driver no CUDA device can
  // exist, so Init loads it only where libcuda.so.1 is installed; PluginLoad("cuda") still
  // loads it anywhere (and DeviceCount then says why there is no device). Why Init left it
  // out is recorded with the device type, so that "cuda:0" fails saying so (as PyTorch's
  // "Found no NVIDIA driver on your system") rather than as an unknown device type.
  static std::once_flag once;
  std::call_once(once, [] {
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == nullptr) {
      DeviceType::set_missing_reason(
          "cuda",
          "found no NVIDIA driver on this system (libcuda.so.1), so Init did not load the cuda "
          "plugin; install a driver for an NVIDIA GPU, or load the plugin with PluginLoad");
      return;
    }
    dlclose(driver);
    try {
      PluginLoader::instance().load("cuda");
    } catch (const Error& e) {
      DeviceType::set_missing_reason(
          "cuda", str_cat("the cuda plugin could not be loaded: ", message_for_c(e.what())));
    }
  });
  LOOM_CAPI_CATCH
}

// ---- dtypes and devices ----
LoomStatus* dtype_from_name(const char* name, int32_t* out) {
  LOOM_CAPI_NOT_NULL("DTypeFromName", name);
  LOOM_CAPI_NOT_NULL("DTypeFromName", out);
  LOOM_CAPI_TRY
  const std::optional<DType> d = parse_dtype(name);
  LOOM_CHECK_T(TypeError, d.has_value(), "DTypeFromName: unknown dtype '", message_excerpt(name),
               "' (expected one of bool, uint8, int8, int16, int32, int64, float16, bfloat16, "
               "float32, float64, or an alias such as float, double, long, int, half)");
  *out = static_cast<int32_t>(*d);
  LOOM_CAPI_CATCH
}
const char* dtype_name_of(int32_t dtype) {
  if (dtype < 0 || dtype >= kNumDTypes) return nullptr;
  return dtype_name(static_cast<DType>(dtype)).data();
}
LoomStatus* dtype_item_size(int32_t dtype, size_t* out) {
  LOOM_CAPI_NOT_NULL("DTypeItemSize", out);
  if (dtype < 0 || dtype >= kNumDTypes) {
    return make_status(LOOM_TYPE_ERROR, str_cat("DTypeItemSize: unknown dtype token ", dtype));
  }
  *out = element_size(static_cast<DType>(dtype));
  return nullptr;
}
LoomStatus* device_count(const char* type, int32_t* out, const char** reason) {
  LOOM_CAPI_NOT_NULL("DeviceCount", type);
  LOOM_CAPI_NOT_NULL("DeviceCount", out);
  LOOM_CAPI_TRY
  static std::mutex mu;
  static std::map<std::string, std::string>* reasons = new std::map<std::string, std::string>();
  std::string why;
  int32_t n = 0;
  if (std::string_view(type) == "cpu") {
    n = 1;
  } else if (!DeviceType::is_registered(type)) {
    why = DeviceType::missing_reason(type);
    if (why.empty()) why = str_cat("no plugin providing device type '", type, "' is loaded");
  } else if (DeviceHooks* hooks = find_device_hooks(DeviceType::from_name(type))) {
    n = hooks->device_count();
    if (n == 0) why = hooks->unavailable_reason();
  } else {
    n = 1;  // a device plugin without hooks (a test device): one device
  }
  if (reason != nullptr) {
    std::lock_guard<std::mutex> lock(mu);
    std::string& slot = (*reasons)[type];
    if (slot != why) slot = why;  // the pointer stays valid while the text is unchanged
    *reason = slot.c_str();
  }
  *out = n;
  LOOM_CAPI_CATCH_ECHOING(type)
}
LoomStatus* device_current_stream(const char* device, void** out) {
  LOOM_CAPI_NOT_NULL("DeviceCurrentStream", device);
  LOOM_CAPI_NOT_NULL("DeviceCurrentStream", out);
  LOOM_CAPI_TRY
  const Device d(device);
  DeviceHooks* hooks = d.is_cpu() ? nullptr : find_device_hooks(d.type());
  *out = hooks ? hooks->current_stream(d.index()) : nullptr;
  LOOM_CAPI_CATCH_ECHOING(device)
}
LoomStatus* device_synchronize(const char* device) {
  LOOM_CAPI_NOT_NULL("DeviceSynchronize", device);
  LOOM_CAPI_TRY
  const Device d(device);
  if (DeviceHooks* hooks = d.is_cpu() ? nullptr : find_device_hooks(d.type())) {
    hooks->synchronize(d.index());
  }
  LOOM_CAPI_CATCH_ECHOING(device)
}
LoomStatus* manual_seed_all(uint64_t seed) {
  LOOM_CAPI_TRY
  loom::manual_seed(seed);
  LOOM_CAPI_CATCH
}

// ---- plugins ----
LoomStatus* plugin_load(const char* name_or_path) {
  LOOM_CAPI_NOT_NULL("PluginLoad", name_or_path);
  LOOM_CAPI_TRY
  PluginLoader::instance().load(name_or_path);
  LOOM_CAPI_CATCH_ECHOING(name_or_path)
}
LoomStatus* plugin_unload(const char* name) {
  LOOM_CAPI_NOT_NULL("PluginUnload", name);
  LOOM_CAPI_TRY
  PluginLoader::instance().unload(name);
  LOOM_CAPI_CATCH_ECHOING(name)
}
LoomStatus* plugin_count(size_t* out) {
  LOOM_CAPI_NOT_NULL("PluginCount", out);
  LOOM_CAPI_TRY
  *out = PluginLoader::instance().loaded().size();
  LOOM_CAPI_CATCH
}
LoomStatus* plugin_info(size_t index, const char** name, const char** version) {
  LOOM_CAPI_TRY
  const std::vector<PluginInfo> loaded = PluginLoader::instance().loaded();
  LOOM_CHECK_T(IndexError, index < loaded.size(), "PluginInfo: index ", index,
               " is out of range for ", loaded.size(), " loaded plugins");
  // Interned: the same (name, version) pair always gives the same pointers.
  static std::mutex mu;
  static auto* interned = new std::map<std::string, std::string>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = interned->try_emplace(loaded[index].name, loaded[index].version).first;
  if (it->second != loaded[index].version) it->second = loaded[index].version;
  if (name) *name = it->first.c_str();
  if (version) *version = it->second.c_str();
  LOOM_CAPI_CATCH
}

LoomApi make_api() {
  LoomApi api{};
  api.struct_size = sizeof(LoomApi);
  api.version = LOOM_API_VERSION;
  api.StatusCode = &status_code;
  api.StatusMessage = &status_message;
  api.StatusRelease = &status_release;
  api.StatusCreate = &status_create;
  api.VersionString = &version_string;
  api.Init = &init;
  api.DTypeFromName = &dtype_from_name;
  api.DTypeName = &dtype_name_of;
  api.DTypeItemSize = &dtype_item_size;
  api.DeviceCount = &device_count;
  api.DeviceCurrentStream = &device_current_stream;
  api.DeviceSynchronize = &device_synchronize;
  api.ManualSeed = &manual_seed_all;
  api.PluginLoad = &plugin_load;
  api.PluginUnload = &plugin_unload;
  api.PluginCount = &plugin_count;
  api.PluginInfo = &plugin_info;
  fill_tensor_entries(api);
  fill_op_entries(api);
  fill_registration_entries(api);
  return api;
}

// Note [Frozen slot offsets]: every released version's entries sit at fixed offsets. Moving one
// breaks every client built before; these asserts (and tests/abi's, against the frozen header) stop
// that at compile time.
#define LOOM_SLOT(field, k) \
  static_assert(offsetof(LoomApi, field) == 8 + (k) * sizeof(void*), #field " moved")
LOOM_SLOT(StatusCode, 0);
LOOM_SLOT(StatusMessage, 1);
LOOM_SLOT(StatusRelease, 2);
LOOM_SLOT(StatusCreate, 3);
LOOM_SLOT(VersionString, 4);
LOOM_SLOT(Init, 5);
LOOM_SLOT(DTypeFromName, 6);
LOOM_SLOT(DTypeName, 7);
LOOM_SLOT(DTypeItemSize, 8);
LOOM_SLOT(DeviceCount, 9);
LOOM_SLOT(DeviceCurrentStream, 10);
LOOM_SLOT(DeviceSynchronize, 11);
LOOM_SLOT(ManualSeed, 12);
LOOM_SLOT(TensorFromData, 13);
LOOM_SLOT(TensorEmpty, 14);
LOOM_SLOT(TensorZeros, 15);
LOOM_SLOT(TensorRetain, 16);
LOOM_SLOT(TensorRelease, 17);
LOOM_SLOT(TensorDim, 18);
LOOM_SLOT(TensorNumel, 19);
LOOM_SLOT(TensorSizes, 20);
LOOM_SLOT(TensorStrides, 21);
LOOM_SLOT(TensorDType, 22);
LOOM_SLOT(TensorDevice, 23);
LOOM_SLOT(TensorDataPtr, 24);
LOOM_SLOT(TensorCopyToHost, 25);
LOOM_SLOT(TensorItem, 26);
LOOM_SLOT(TensorDescribe, 27);
LOOM_SLOT(TensorRequiresGrad, 28);
LOOM_SLOT(TensorSetRequiresGrad, 29);
LOOM_SLOT(TensorGrad, 30);
LOOM_SLOT(TensorSetGrad, 31);
LOOM_SLOT(TensorDetach, 32);
LOOM_SLOT(Backward, 33);
LOOM_SLOT(GradEnabled, 34);
LOOM_SLOT(SetGradEnabled, 35);
LOOM_SLOT(OpFind, 36);
LOOM_SLOT(OpSchema, 37);
LOOM_SLOT(OpCall, 38);
LOOM_SLOT(ValuesRelease, 39);
LOOM_SLOT(PluginLoad, 40);
LOOM_SLOT(PluginUnload, 41);
LOOM_SLOT(PluginCount, 42);
LOOM_SLOT(PluginInfo, 43);
LOOM_SLOT(LibraryCreate, 44);
LOOM_SLOT(PluginLibrary, 45);
LOOM_SLOT(LibraryRelease, 46);
LOOM_SLOT(LibraryDef, 47);
LOOM_SLOT(LibraryImpl, 48);
LOOM_SLOT(LibraryImplBackward, 49);
LOOM_SLOT(BackwardNumInputs, 50);
LOOM_SLOT(BackwardNumOutputs, 51);
LOOM_SLOT(BackwardInput, 52);
LOOM_SLOT(BackwardOutput, 53);
LOOM_SLOT(BackwardGradOutput, 54);
LOOM_SLOT(BackwardNeedsInputGrad, 55);
LOOM_SLOT(BackwardSetGradInput, 56);
LOOM_SLOT(BackwardArgument, 57);
// Version 2 appends after them (Note [Stable ABI rules] in capi.h).
LOOM_SLOT(OpListCreate, 58);
LOOM_SLOT(OpListSize, 59);
LOOM_SLOT(OpListGet, 60);
LOOM_SLOT(OpListRelease, 61);
LOOM_SLOT(OpName, 62);
LOOM_SLOT(OpArgumentEnumNames, 63);
static_assert(sizeof(LoomApi) == 8 + 64 * sizeof(void*), "version 1 has 58 entries, 2 adds 6");
static_assert(sizeof(LoomValue) == 24, "LoomValue v1 is 24 bytes");
#undef LOOM_SLOT

}  // namespace
}  // namespace loom::capi

extern "C" {

LOOM_CAPI_EXPORT const LoomApi* loom_get_api(uint32_t version) {
  static const LoomApi api = loom::capi::make_api();
  if (version == 0 || version > api.version) return nullptr;
  return &api;
}

LOOM_CAPI_EXPORT uint32_t loom_api_version(void) { return LOOM_API_VERSION; }

}  // extern "C"
