#pragma once
/// @file
/// Errors: the Error hierarchy, api() (the C table, fetched once) and check().
/// Part of loom/stable.hpp (include that).

#include <stdexcept>
#include <string>

#include "loom/capi.h"

#if defined(__GNUC__)
/// Marks the error paths cold and out of line so that the success path stays small.
#define LOOM_STABLE_COLD __attribute__((noinline, cold))
#else
/// Marks the error paths cold and out of line so that the success path stays small.
#define LOOM_STABLE_COLD
#endif

/// The C++ wrapper over the stable C ABI.
namespace loom::stable {
/// An error reported by Loom (or by this wrapper): the C ABI's error code and the message,
/// word for word what Loom's C++ API would have said.
class Error : public std::runtime_error {
 public:
  /// An error with a LOOM_* code and a message.
  Error(LoomErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  /// The LOOM_* error code (LOOM_VALUE_ERROR, LOOM_TYPE_ERROR, ...).
  LoomErrorCode code() const noexcept { return code_; }

 private:
  LoomErrorCode code_;
};

/// A bad value: shapes that do not match, a negative size (LOOM_VALUE_ERROR).
class ValueError : public Error {
 public:
  /// An error with the given message.
  explicit ValueError(const std::string& m, LoomErrorCode c = LOOM_VALUE_ERROR) : Error(c, m) {}
};
/// A bad type: wrong dtype, wrong argument kind (LOOM_TYPE_ERROR).
class TypeError : public Error {
 public:
  /// An error with the given message.
  explicit TypeError(const std::string& m, LoomErrorCode c = LOOM_TYPE_ERROR) : Error(c, m) {}
};
/// An index out of range (LOOM_INDEX_ERROR).
class IndexError : public Error {
 public:
  /// An error with the given message.
  explicit IndexError(const std::string& m, LoomErrorCode c = LOOM_INDEX_ERROR) : Error(c, m) {}
};
/// Tensors on different devices, a device that is missing (LOOM_DEVICE_ERROR).
class DeviceError : public Error {
 public:
  /// An error with the given message.
  explicit DeviceError(const std::string& m, LoomErrorCode c = LOOM_DEVICE_ERROR) : Error(c, m) {}
};
/// No such op, or no kernel for these inputs (LOOM_NOT_IMPLEMENTED).
class NotImplementedError : public Error {
 public:
  /// An error with the given message.
  explicit NotImplementedError(const std::string& m, LoomErrorCode c = LOOM_NOT_IMPLEMENTED)
      : Error(c, m) {}
};
/// A definition or kernel that conflicts (LOOM_REGISTRATION_ERROR).
class RegistrationError : public Error {
 public:
  /// An error with the given message.
  explicit RegistrationError(const std::string& m, LoomErrorCode c = LOOM_REGISTRATION_ERROR)
      : Error(c, m) {}
};
/// A plugin file refused (LOOM_PLUGIN_ERROR).
class PluginError : public Error {
 public:
  /// An error with the given message.
  explicit PluginError(const std::string& m, LoomErrorCode c = LOOM_PLUGIN_ERROR) : Error(c, m) {}
};
/// Backward through a freed graph, in-place on a saved tensor (LOOM_AUTOGRAD_ERROR).
class AutogradError : public Error {
 public:
  /// An error with the given message.
  explicit AutogradError(const std::string& m, LoomErrorCode c = LOOM_AUTOGRAD_ERROR)
      : Error(c, m) {}
};
/// Misuse of the API: a null handle, a too-small buffer (LOOM_INVALID_ARGUMENT).
class InvalidArgumentError : public Error {
 public:
  /// An error with the given message.
  explicit InvalidArgumentError(const std::string& m, LoomErrorCode c = LOOM_INVALID_ARGUMENT)
      : Error(c, m) {}
};
/// An allocation failed (LOOM_OUT_OF_MEMORY).
class OutOfMemoryError : public Error {
 public:
  /// An error with the given message.
  explicit OutOfMemoryError(const std::string& m, LoomErrorCode c = LOOM_OUT_OF_MEMORY)
      : Error(c, m) {}
};

/// Throws the Error subclass of code with message (Error itself for LOOM_ERROR and codes
/// this header does not know).
[[noreturn]] LOOM_STABLE_COLD inline void throw_error(LoomErrorCode code,
                                                      const std::string& message) {
  switch (code) {
    case LOOM_VALUE_ERROR:
      throw ValueError(message);
    case LOOM_TYPE_ERROR:
      throw TypeError(message);
    case LOOM_INDEX_ERROR:
      throw IndexError(message);
    case LOOM_DEVICE_ERROR:
      throw DeviceError(message);
    case LOOM_NOT_IMPLEMENTED:
      throw NotImplementedError(message);
    case LOOM_REGISTRATION_ERROR:
      throw RegistrationError(message);
    case LOOM_PLUGIN_ERROR:
      throw PluginError(message);
    case LOOM_AUTOGRAD_ERROR:
      throw AutogradError(message);
    case LOOM_INVALID_ARGUMENT:
      throw InvalidArgumentError(message);
    case LOOM_OUT_OF_MEMORY:
      throw OutOfMemoryError(message);
    default:
      throw Error(code, message);
  }
}

/// @cond INTERNAL
namespace detail {
/// Fetches the table, or throws when the loaded library is older than this header.
LOOM_STABLE_COLD inline const LoomApi* fetch_api() {
  const LoomApi* table = loom_get_api(LOOM_API_VERSION);
  if (table == nullptr) {
    throw Error(LOOM_ERROR, "loom_get_api: the loaded libloom implements API version " +
                                std::to_string(loom_api_version()) + ", older than version " +
                                std::to_string(LOOM_API_VERSION) +
                                " this program was built against; install a newer Loom");
  }
  return table;
}
}  // namespace detail
/// @endcond

/// The C function table (version LOOM_API_VERSION), fetched once. Throws Error when the
/// loaded libloom is older than this header.
inline const LoomApi* api() {
  static const LoomApi* const table = detail::fetch_api();
  return table;
}

/// Throws the exception of status (and releases it); a status the caller owns.
[[noreturn]] LOOM_STABLE_COLD inline void throw_status(LoomStatus* status) {
  const LoomApi* a = api();
  const LoomErrorCode code = a->StatusCode(status);
  std::string message = a->StatusMessage(status);
  a->StatusRelease(status);
  throw_error(code, message);
}

/// Does nothing for NULL (success); otherwise throws the status as an Error subclass.
inline void check(LoomStatus* status) {
  if (status != nullptr) throw_status(status);
}

}  // namespace loom::stable
