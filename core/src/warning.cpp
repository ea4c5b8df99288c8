// The warning handler (loom/core/warning.h).
#include "loom/core/warning.h"

#include <iostream>
#include <mutex>
#include <set>

namespace loom {
namespace {
struct Warnings {
  std::mutex mu;
  WarningHandler handler;
  std::set<std::string> printed;  // the default handler prints each message once
};
Warnings& warnings() {
  static auto* w = new Warnings();  // leaked: warnings may come from static destructors
  return *w;
}
}  // namespace

void warn(const std::string& message) {
  Warnings& w = warnings();
  WarningHandler h;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    if (!w.handler) {
      if (w.printed.insert(message).second) std::cerr << "loom: warning: " << message << "\n";
      return;
    }
    h = w.handler;
  }
  h(message);  // outside the lock: a handler may warn again
}

WarningHandler set_warning_handler(WarningHandler handler) {
  Warnings& w = warnings();
  std::lock_guard<std::mutex> lock(w.mu);
  WarningHandler old = std::move(w.handler);
  w.handler = std::move(handler);
  return old;
}

}  // namespace loom
