#pragma once
/// @file
/// Warnings: things a user should hear about that are not errors (PyTorch's TORCH_WARN), such
/// as a kernel that replaces another plugin's kernel process-wide. By default each distinct
/// message is printed once to stderr ("loom: warning: ..."); a program (or the C ABI) may
/// install its own handler.

#include <functional>
#include <string>

namespace loom {

/// Receives each warning's message.
using WarningHandler = std::function<void(const std::string& message)>;

/// Reports a warning through the current handler. Thread-safe.
void warn(const std::string& message);

/// Installs handler (an empty one restores the default: once per message, to stderr) and
/// returns the previous handler (empty for the default).
WarningHandler set_warning_handler(WarningHandler handler);

}  // namespace loom
