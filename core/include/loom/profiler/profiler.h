#pragma once
/// @file
/// The profiler (PyTorch's torch.profiler; design: docs/design/profiler.md): what ran, on
/// which thread, served by which provider and plugin, for how long, nested how.
///
/// While it records, every op call on every thread becomes an event (the dispatcher's
/// Profiling key, loom/dispatcher/profiling.h), as do user ranges (profiler::Range) and the
/// autograd engine's backward nodes (linked to their forward op by the autograd sequence
/// number). stop() hands back a Profile: the events, a key_averages() table by op, by op and
/// input shapes, or by provider, and a Chrome trace that Perfetto and chrome://tracing open.
///
/// @code
///   loom::profiler::start({.record_shapes = true});
///   { loom::profiler::Range r("forward"); y = model.forward(x); }
///   loom::profiler::Profile p = loom::profiler::stop();
///   std::cout << p.table();
///   p.export_chrome_trace("trace.json");
/// @endcode
///
/// Costs: with the profiler off, one bit test per op call; on, two clock reads and one event
/// of 56 bytes (more with shapes). Memory is bounded: past ProfilerOptions::max_events the
/// oldest events of the recording thread are overwritten and counted as dropped.

#include <cstdint>
#include <functional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/device.h"
#include "loom/core/registration.h"

namespace loom {
class OperatorEntry;
}  // namespace loom

namespace loom::profiler {

/// What a profile records.
struct ProfilerOptions {
  /// Input shapes and dtypes of every op ("[64, 1, 28, 28] float32, [] -"): key_averages can
  /// then group by op and shapes. Costs a string per event.
  bool record_shapes = false;
  /// Tensor memory: every storage allocated or freed becomes a memory event (a counter track
  /// per device in the trace), each op's net allocation and the peak while it ran are kept.
  bool profile_memory = false;
  /// The most events kept at once, all threads together (a ring: the oldest of the recording
  /// thread go first, counted by Profile::dropped_events). At least 1.
  int64_t max_events = int64_t{1} << 20;
};

/// One recorded event.
struct Event {
  /// What made the event.
  enum class Kind : uint8_t {
    Op,        ///< an operator call through the dispatcher
    Range,     ///< a user range (profiler::Range) or one of Loom's own (DataLoader, optimizer)
    Backward,  ///< the autograd engine running one backward node
  };
  Kind kind = Kind::Op;     ///< what made it
  std::string name;         ///< "aten::add.Tensor", the range's name, or "MulBackward0"
  std::string provider;     ///< an op's provider ("reference", "onednn", ...); "" otherwise
  std::string plugin;       ///< the plugin that registered that kernel; "" for the program's own
  std::string shapes;       ///< the inputs' shapes and dtypes when recorded, else ""
  int64_t thread = 0;       ///< the thread, numbered from 1 in the order threads first recorded
  int64_t start_ns = 0;     ///< start, nanoseconds of the steady clock
  int64_t end_ns = 0;       ///< end (an op still running at stop(): the stop time)
  int depth = 0;            ///< nesting on its thread, 0 for the outermost
  /// Links forward and backward (PyTorch's sequence number): an op that records a gradient
  /// carries the sequence number of the node it creates, the Backward event of that node the
  /// same number; -1 where there is none.
  int64_t sequence_nr = -1;
  /// Nanoseconds of the event's own work: its duration less its children's on its thread.
  int64_t self_ns = 0;
  /// With profile_memory: bytes of tensor memory the event allocated less those it freed,
  /// itself (not counting its children).
  int64_t self_memory_bytes = 0;
  /// With profile_memory: the most tensor memory allocated during the event, counted from the
  /// start of the recording (on every device and thread: the process's figure).
  int64_t peak_memory_bytes = 0;
  /// An op on a device whose plugin registered a DeviceTimer (CUDA): nanoseconds the device
  /// spent between the op's start and end on its stream; -1 otherwise.
  int64_t device_ns = -1;
};

/// One allocation or release of tensor memory (ProfilerOptions::profile_memory).
struct MemoryEvent {
  int64_t time_ns = 0;    ///< when
  int64_t thread = 0;     ///< on which thread (numbered as Event::thread)
  std::string device;     ///< "cpu", "cuda:0", ...
  int64_t bytes = 0;      ///< allocated (> 0) or freed (< 0)
  /// Tensor memory of that device allocated since the recording started, after this event.
  int64_t total_bytes = 0;
};

/// How key_averages() groups events.
enum class GroupBy {
  Op,           ///< by name
  OpAndShapes,  ///< by name and input shapes (needs ProfilerOptions::record_shapes)
  Provider,     ///< by name and the provider that served it
};

/// One row of key_averages().
struct EventStats {
  std::string name;       ///< the op, range or node name
  std::string shapes;     ///< GroupBy::OpAndShapes: the shapes; else ""
  std::string provider;   ///< GroupBy::Provider: the provider; else the providers seen, joined by '/'
  int64_t calls = 0;      ///< how many events
  int64_t self_ns = 0;    ///< their own time, summed
  int64_t total_ns = 0;   ///< their durations, summed (children included)
  int64_t self_memory_bytes = 0;  ///< with profile_memory: their net allocations, summed
  int64_t peak_memory_bytes = 0;  ///< with profile_memory: the highest peak among them
  int64_t device_ns = 0;          ///< device time of those that have one, summed
};

/// What one recording saw; made by stop().
class Profile {
 public:
  /// An empty profile.
  Profile() = default;
  /// Every event, ordered by thread, then start time (outer before inner).
  const std::vector<Event>& events() const { return events_; }
  /// The allocations and releases, in time order (with ProfilerOptions::profile_memory).
  const std::vector<MemoryEvent>& memory_events() const { return memory_; }
  /// Events overwritten because max_events was reached.
  int64_t dropped_events() const { return dropped_; }
  /// Wall time of the recording, nanoseconds.
  int64_t duration_ns() const { return end_ns_ - start_ns_; }
  /// Statistics per group, most self time first.
  std::vector<EventStats> key_averages(GroupBy by = GroupBy::Op) const;
  /// key_averages() as a text table (PyTorch's key_averages().table()): name, [shapes |
  /// provider,] calls, self and total time with their shares, average; at most row_limit rows.
  std::string table(GroupBy by = GroupBy::Op, size_t row_limit = 30) const;
  /// The events as a Chrome trace (JSON, "X" events with provider, plugin, shapes and sequence
  /// number as args; thread names; flow arrows from each forward op to its backward node).
  std::string chrome_trace() const;
  /// Writes chrome_trace() to path atomically (a temporary file renamed into place). Throws
  /// loom::Error naming the path and the system's reason when it cannot.
  void export_chrome_trace(const std::string& path) const;

  /// A profile of the given events (what stop() makes; tests and tools build their own).
  static Profile make(std::vector<Event> events, int64_t dropped, int64_t start_ns,
                      int64_t end_ns, std::vector<MemoryEvent> memory = {}) {
    Profile p;
    p.events_ = std::move(events);
    p.memory_ = std::move(memory);
    p.dropped_ = dropped;
    p.start_ns_ = start_ns;
    p.end_ns_ = end_ns;
    return p;
  }

 private:
  std::vector<Event> events_;
  std::vector<MemoryEvent> memory_;
  int64_t dropped_ = 0;
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
};

/// Starts recording on every thread. Throws loom::Error if a profiler is already recording
/// (one at a time, as PyTorch) or if options.max_events < 1.
void start(const ProfilerOptions& options = {});
/// Stops recording and returns what was recorded. Throws loom::Error if none is recording.
Profile stop();
/// What was recorded so far, while recording goes on (events still open end now). Throws
/// loom::Error if none is recording.
Profile snapshot();
/// True while a profiler records.
bool is_recording();

/// Note [Profiling a program from outside]: when the environment names a folder in
/// LOOM_PROFILE, libloom_core starts a profiler as it loads (LOOM_PROFILE_SHAPES=1 records
/// shapes), rewrites trace.json in that folder from a snapshot every LOOM_PROFILE_FLUSH_SECONDS
/// (default 1; 0: only at exit), so that a crash leaves the trace up to the last write, and
/// at exit writes trace.json and profile.txt (the tables) there. `loom profile -- CMD` sets it.
/// Returns the folder, or "" when the environment does not ask for it.
std::string environment_profile_dir();

/// A user range (PyTorch's record_function): an event from construction to destruction, on
/// this thread, enclosing the ops called meanwhile. Free when the profiler is off.
/// Ranges must close in the reverse order of opening on their thread (RAII does that); one
/// closed out of order throws loom::Error naming both ranges.
class Range {
 public:
  /// Opens a range named name.
  explicit Range(std::string_view name);
  /// Closes it.
  ~Range() noexcept(false);
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  void* buffer_ = nullptr;
  uint64_t session_ = 0;
  uint64_t serial_ = 0;
};

/// PyTorch's torch.profiler.schedule: over training steps, `wait` steps off, `warmup` steps
/// recorded and thrown away (the first steps pay one-time costs), `active` steps recorded and
/// handed to on_trace_ready, then again `repeat` times (0: for as long as step() is called).
struct Schedule {
  int64_t wait = 0;    ///< steps without recording
  int64_t warmup = 0;  ///< steps recorded and discarded
  int64_t active = 1;  ///< steps recorded and kept (at least 1)
  int64_t repeat = 1;  ///< cycles; 0 for no limit
};

/// Drives start()/stop() from a training loop: call step() after every step.
///
/// @code
///   profiler::ScheduledProfiler prof({.wait = 1, .warmup = 1, .active = 2}, {},
///       [](const profiler::Profile& p) { p.export_chrome_trace("trace.json"); });
///   for (...) { train_step(); prof.step(); }
/// @endcode
class ScheduledProfiler {
 public:
  /// Ready to profile by schedule; on_trace_ready gets each cycle's profile.
  ScheduledProfiler(Schedule schedule, ProfilerOptions options,
                    std::function<void(const Profile&)> on_trace_ready);
  /// Stops a recording in progress (handing it to on_trace_ready only if it was active).
  ~ScheduledProfiler();
  ScheduledProfiler(const ScheduledProfiler&) = delete;
  ScheduledProfiler& operator=(const ScheduledProfiler&) = delete;
  /// Marks the end of one step; starts and stops recording as the schedule says.
  void step();
  /// The steps seen.
  int64_t steps() const { return step_; }

 private:
  void enter(int64_t step);
  Schedule schedule_;
  ProfilerOptions options_;
  std::function<void(const Profile&)> on_trace_ready_;
  int64_t step_ = 0;
  bool recording_ = false;
};

/// Note [Device time]: a device plugin measures the device's side of op events on its device
/// type (the CUDA plugin with CUDA events on the current stream). The profiler calls start()
/// as an op event on that device opens, stop(token) as it closes, and, when stop() makes the
/// profile, elapsed_ns(token) (which may wait for the device) and then clear().
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  /// Marks an op's start on the device; returns a token (0: this op is not timed).
  virtual uint64_t start() = 0;
  /// Marks its end.
  virtual void stop(uint64_t token) = 0;
  /// The device nanoseconds between start and stop of token, or -1 if unknown.
  virtual int64_t elapsed_ns(uint64_t token) = 0;
  /// Forgets every token (the profile is made).
  virtual void clear() = 0;
};

/// Registers timer for op events on device type `type` (one per type; the plugin keeps the
/// handle, whose destruction unregisters it). Throws loom::Error if one is registered.
RegistrationHandle register_device_timer(DeviceType type, DeviceTimer* timer);

namespace detail {
/// Calls of op make no op events (the range ops of the profiler namespace, whose range is the
/// event). At most 8 such ops.
void exclude_from_profile(const OperatorEntry* op);
}  // namespace detail

}  // namespace loom::profiler
