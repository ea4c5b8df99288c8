#pragma once
/// @file
/// Loom's exception hierarchy and the LOOM_CHECK family of macros.
///
/// Every error a user can provoke is a loom::Error subclass whose message says
/// what was expected, what was given and where (op, argument, shapes, dtypes,
/// devices). Nothing in Loom aborts on user input.

#include <stdexcept>
#include <string>

#include "loom/core/str_cat.h"

namespace loom {

/// Base class of every exception Loom throws on bad input or bad state.
class Error : public std::runtime_error {
 public:
  /// Creates an error with a finished, human-readable message.
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A value is out of range or malformed (PyTorch's ValueError / RuntimeError).
class ValueError : public Error {
 public:
  using Error::Error;
};

/// An argument has the wrong type or dtype (PyTorch's TypeError).
class TypeError : public Error {
 public:
  using Error::Error;
};

/// An index or dimension is out of range (PyTorch's IndexError).
class IndexError : public Error {
 public:
  using Error::Error;
};

/// Tensors live on incompatible devices, or a device is unknown.
class DeviceError : public Error {
 public:
  using Error::Error;
};

/// No kernel is registered for the requested operator and dispatch key set.
class NotImplementedError : public Error {
 public:
  using Error::Error;
};

/// A registration (def/impl/fallback) conflicts with an existing one or is malformed.
class RegistrationError : public Error {
 public:
  using Error::Error;
};

/// A plugin could not be loaded, checked or unloaded.
class PluginError : public Error {
 public:
  using Error::Error;
};

/// Autograd misuse: backward through a freed graph, a saved tensor modified in place, an
/// in-place op on a leaf that requires grad, ... (PyTorch raises RuntimeError with the same text).
class AutogradError : public Error {
 public:
  using Error::Error;
};

/// A schema string could not be parsed; carries the 1-based column of the problem.
class SchemaParseError : public Error {
 public:
  /// @param message full message (already contains the column and a caret line)
  /// @param column 1-based column in the schema string where parsing failed
  SchemaParseError(const std::string& message, int column) : Error(message), column_(column) {}
  /// 1-based column in the schema string where parsing failed.
  int column() const { return column_; }

 private:
  int column_;
};

namespace detail {
/// Throws E with the concatenation of the message pieces. Out of line of the
/// caller's hot path: LOOM_CHECK only reaches it when the check fails.
template <typename E, typename... Args>
[[noreturn]] __attribute__((noinline, cold)) void throw_error(const Args&... args) {
  throw E(str_cat(args...));
}
/// Throws E for a failed check: with the message pieces, or, when there are none, with a
/// message naming the condition (as TORCH_CHECK does) rather than an empty one.
template <typename E, typename... Args>
[[noreturn]] __attribute__((noinline, cold)) void throw_check_failure(const char* condition,
                                                                      const Args&... args) {
  if constexpr (sizeof...(Args) == 0) {
    throw E(str_cat("Expected ", condition, " to be true, but got false"));
  } else {
    throw E(str_cat(args...));
  }
}
}  // namespace detail

}  // namespace loom

/// Throws loom::ValueError with the message pieces (absl::StrCat arguments) unless cond holds.
/// Without message pieces the message names the condition.
#define LOOM_CHECK(cond, ...)                                                                    \
  do {                                                                                           \
    if (__builtin_expect(!(cond), 0)) {                                                          \
      ::loom::detail::throw_check_failure<::loom::ValueError>(#cond __VA_OPT__(, ) __VA_ARGS__); \
    }                                                                                            \
  } while (0)

/// Throws the given loom::Error subclass with the message pieces unless cond holds.
#define LOOM_CHECK_T(ErrorType, cond, ...)                                              \
  do {                                                                                  \
    if (__builtin_expect(!(cond), 0)) {                                                 \
      ::loom::detail::throw_check_failure<ErrorType>(#cond __VA_OPT__(, ) __VA_ARGS__); \
    }                                                                                   \
  } while (0)

/// Throws the given loom::Error subclass unconditionally.
#define LOOM_THROW(ErrorType, ...) ::loom::detail::throw_error<ErrorType>(__VA_ARGS__)
