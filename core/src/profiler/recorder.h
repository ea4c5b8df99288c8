#pragma once
// The profiler's recording side (internal): per-thread event buffers, the session, interned
// names. See docs/design/profiler.md and Note [Event buffers] in recorder.cpp.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/device.h"
#include "loom/profiler/profiler.h"

namespace loom::autograd {
class Node;
}

namespace loom::profiler::detail {

enum RawKind : uint8_t { kRawOp = 0, kRawRange = 1, kRawBackward = 2, kRawMemory = 3 };

// One event as recorded: 56 bytes. The name is an OperatorEntry* for ops (entries live as long
// as the process), an interned string for ranges and nodes, null for memory events. A memory
// event keeps its bytes in seq and its device in label (Note [Memory events]).
struct RawEvent {
  const void* name;
  int64_t start_ns;
  int64_t end_ns;  // 0 while open
  int64_t seq;     // -1: none
  int64_t memory;  // net bytes allocated by the event itself (profile_memory)
  uint64_t timer;  // Note [Device time]: device type id << 56 | the timer's token; 0: none
  uint32_t shapes; // 1 + index into ThreadBuffer::shapes; 0: none
  uint16_t label;  // Note [Kernel labels]
  uint8_t kind;    // RawKind
  uint8_t depth;
};
static_assert(sizeof(RawEvent) == 56, "an event should stay small (issue: <= 100 bytes)");

// An open event on a thread's stack.
struct OpenEvent {
  uint64_t serial;
  uint32_t index;
};

// One thread's events. Its mutex is uncontended except against start()/stop().
struct ThreadBuffer {
  std::mutex mu;
  uint64_t session = 0;      // the session these events belong to
  int64_t thread_number = 0; // 1, 2, ... in the order threads first recorded
  std::vector<RawEvent> events;
  std::vector<uint64_t> serials;     // per slot: the serial of the event in it
  std::vector<std::string> shapes;   // per slot, when shapes are recorded
  std::vector<OpenEvent> open;       // the open events, innermost last
  uint64_t next_serial = 1;
  size_t overwrite = 0;              // the next slot to overwrite once the ring is full
  int64_t dropped = 0;
};

// The process's profiler state (never destroyed: threads may record during exit).
struct State {
  std::mutex mu;  // start/stop and the buffer list
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::atomic<bool> recording{false};
  std::atomic<uint64_t> session{0};
  std::atomic<int64_t> budget{0};  // events that may still be added before rings wrap
  ProfilerOptions options;  // under mu; the threads that record read the two flags below
  std::atomic<bool> record_shapes{false};
  std::atomic<bool> profile_memory{false};
  int64_t start_ns = 0;
  int64_t next_thread_number = 1;
};
State& state();

// Nanoseconds of the steady clock.
int64_t now_ns();
// This thread's buffer, made and registered on first use.
ThreadBuffer& this_thread_buffer();
// Makes b current for the running session (dropping an older session's events). b.mu held.
void sync_session(ThreadBuffer& b, uint64_t session);
// Reserves a slot for a new event; returns its index, or UINT32_MAX if it was dropped. b.mu held.
uint32_t reserve_slot(ThreadBuffer& b);
// Tensor memory allocated (> 0) or freed (< 0) on device by this thread (memory.cpp calls it
// while the profiler records memory).
void note_memory(Device device, int64_t bytes);
// The name of the op running innermost on this thread ("" if none is known): from the
// recording's open events, or from the op stack kept for the memory history.
std::string current_op_name();
// Adds (+1) or removes (-1) a user of the op stack (the memory history): while there is one,
// the Profiling key is on so that every op call maintains the stack.
void track_ops(int delta);

// A string kept for the life of the process (range and node names).
const std::string* intern(std::string_view s);

// The event of one backward node run by the autograd engine (engine.cpp): named after the
// node, carrying its sequence number (Note [Linking forward and backward]).
class BackwardScope {
 public:
  explicit BackwardScope(const autograd::Node& node);
  ~BackwardScope();
  BackwardScope(const BackwardScope&) = delete;
  BackwardScope& operator=(const BackwardScope&) = delete;

 private:
  ThreadBuffer* buffer_ = nullptr;
  uint64_t serial_ = 0;
  uint64_t session_ = 0;
};

}  // namespace loom::profiler::detail
