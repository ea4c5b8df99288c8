// Memory diagnostics (loom/core/memory.h): the allocators' figures per device, and the
// history of live tensor storages with the op that allocated each.

#include "loom/core/memory.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

#include "profiler/recorder.h"

namespace loom::memory {

AllocatorStats stats(Device device) { return get_allocator(device.type()).stats(); }
int64_t allocated(Device device) { return stats(device).allocated_bytes; }
int64_t max_allocated(Device device) { return stats(device).peak_allocated_bytes; }
int64_t reserved(Device device) { return stats(device).reserved_bytes; }
int64_t max_reserved(Device device) { return stats(device).peak_reserved_bytes; }
void reset_peak_stats(Device device) { get_allocator(device.type()).reset_peak_stats(); }
std::string summary(Device device) { return get_allocator(device.type()).summary(); }

namespace detail {
std::atomic<int> tracking_bits{0};
}  // namespace detail

namespace {

struct History {
  std::mutex mu;
  bool on = false;
  int stack_frames = 0;
  std::map<const void*, Block> live;  // by storage
};
History& history() {
  static auto* h = new History;  // outlives every storage freed during exit
  return *h;
}

// "function+0x12 (library)" lines of the caller's stack, demangled where possible.
std::vector<std::string> call_stack(int frames) {
  std::vector<void*> pcs(static_cast<size_t>(frames) + 3);
  const int n = ::backtrace(pcs.data(), static_cast<int>(pcs.size()));
  std::vector<std::string> out;
  char** symbols = ::backtrace_symbols(pcs.data(), n);
  if (symbols == nullptr) return out;
  for (int i = 3; i < n; ++i) {  // past call_stack, on_alloc and the StorageImpl constructor
    std::string line = symbols[i];
    // "lib.so(_ZN4loom3fooEv+0x1c) [0x...]": demangle the part between '(' and '+'.
    const size_t open = line.find('('), plus = line.find('+', open);
    if (open != std::string::npos && plus != std::string::npos && plus > open + 1) {
      const std::string mangled = line.substr(open + 1, plus - open - 1);
      int status = 0;
      char* name = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
      if (status == 0 && name != nullptr) {
        line = std::string(name) + line.substr(plus, line.find(')', plus) - plus) + " (" +
               line.substr(0, open) + ")";
      }
      std::free(name);
    }
    out.push_back(std::move(line));
  }
  std::free(symbols);
  return out;
}

}  // namespace

void record_history(bool enabled, int stack_frames) {
  History& h = history();
  std::lock_guard<std::mutex> lock(h.mu);
  if (enabled == h.on) {
    h.stack_frames = stack_frames;
    return;
  }
  h.on = enabled;
  h.stack_frames = stack_frames;
  if (enabled) {
    detail::tracking_bits.fetch_or(2, std::memory_order_relaxed);
    profiler::detail::track_ops(+1);
  } else {
    detail::tracking_bits.fetch_and(~2, std::memory_order_relaxed);
    profiler::detail::track_ops(-1);
    h.live.clear();
  }
}

std::vector<Block> snapshot() {
  History& h = history();
  std::lock_guard<std::mutex> lock(h.mu);
  std::vector<Block> out;
  out.reserve(h.live.size());
  for (const auto& [key, b] : h.live) out.push_back(b);
  std::sort(out.begin(), out.end(),
            [](const Block& a, const Block& b) { return a.time_ns < b.time_ns; });
  return out;
}

namespace detail {

void on_alloc(const void* key, Device device, size_t bytes, const void* address) {
  const int bits = tracking_bits.load(std::memory_order_relaxed);
  if (bits & 1) profiler::detail::note_memory(device, static_cast<int64_t>(bytes));
  if (bits & 2) {
    History& h = history();
    int frames = 0;
    {
      std::lock_guard<std::mutex> lock(h.mu);
      if (!h.on) return;
      frames = h.stack_frames;
    }
    Block b;
    b.address = reinterpret_cast<uintptr_t>(address);
    b.bytes = static_cast<int64_t>(bytes);
    b.device = device;
    b.op = profiler::detail::current_op_name();
    b.time_ns = profiler::detail::now_ns();
    if (frames > 0) b.stack = call_stack(frames);
    std::lock_guard<std::mutex> lock(h.mu);
    if (h.on) h.live[key] = std::move(b);
  }
}

void on_free(const void* key, Device device, size_t bytes) {
  const int bits = tracking_bits.load(std::memory_order_relaxed);
  if (bits & 1) profiler::detail::note_memory(device, -static_cast<int64_t>(bytes));
  if (bits & 2) {
    History& h = history();
    std::lock_guard<std::mutex> lock(h.mu);
    h.live.erase(key);
  }
}

}  // namespace detail
}  // namespace loom::memory
