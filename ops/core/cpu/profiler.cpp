// The profiler's range ops (schemas/profiler.cpp): record_function_enter opens a
// loom::profiler::Range and returns a handle to it; record_function_exit(handle) closes it.
// Ranges close on the thread that opened them, innermost first, as every Range does. The ops
// themselves make no op events (the range is the event).
#include <map>
#include <memory>
#include <mutex>

#include "loom/core/error.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/library.h"
#include "loom/profiler/profiler.h"

namespace loom {
namespace {

struct OpenRanges {
  std::mutex mu;
  int64_t next = 1;
  std::map<int64_t, std::unique_ptr<profiler::Range>> ranges;
};
OpenRanges& open_ranges() {
  static auto* r = new OpenRanges;  // a range may close during exit
  return *r;
}

int64_t record_function_enter(std::string_view name) {
  auto range = std::make_unique<profiler::Range>(name);
  OpenRanges& r = open_ranges();
  std::lock_guard<std::mutex> lock(r.mu);
  const int64_t handle = r.next++;
  r.ranges.emplace(handle, std::move(range));
  return handle;
}

void record_function_exit(int64_t handle) {
  std::unique_ptr<profiler::Range> range;
  {
    OpenRanges& r = open_ranges();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.ranges.find(handle);
    LOOM_CHECK_T(ValueError, it != r.ranges.end(), "profiler::record_function_exit: no range ",
                 "is open with handle ", handle, " (each handle of record_function_enter ",
                 "closes once)");
    range = std::move(it->second);
    r.ranges.erase(it);
  }
  range.reset();  // may throw: a range closed before one opened inside it
}

}  // namespace

LOOM_LIBRARY_IMPL(profiler, CPU, m) {
  m.impl("record_function_enter", &record_function_enter);
  m.impl("record_function_exit", &record_function_exit);
  for (const char* name : {"profiler::record_function_enter", "profiler::record_function_exit"}) {
    profiler::detail::exclude_from_profile(Dispatcher::instance().find_op_or_throw(name).entry());
  }
}

}  // namespace loom
