#pragma once
// Helpers shared by the GoogleTest suites.

#include <exception>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "loom/core/error.h"

namespace loom::testing {

/// Runs f, expects it to throw E (default: any loom::Error), and returns the message;
/// records a test failure (and returns "") if it throws something else or nothing.
template <typename E = Error, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw the wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

/// True if text contains part.
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace loom::testing
