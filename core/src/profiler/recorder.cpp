// The profiler's recording side: sessions, per-thread buffers, op events from the
// dispatcher's Profiling key, ranges, backward nodes. Reports are in report.cpp.
//
// Note [Event buffers]: each thread appends to its own buffer under its own mutex, which only
// start() and stop() ever contend for; an event is reserved and stamped when it opens and
// stamped again when it closes. A session number ties events to one recording: a scope that
// closes after stop() (or after the next start()) finds another session and writes nothing.
// The buffers together hold at most max_events events: past that, a thread overwrites its own
// oldest (a ring per thread), and each overwritten event is counted as dropped. Every slot
// keeps the serial of the event in it, so a close whose slot was overwritten meanwhile is
// recognised and ignored.

#include "profiler/recorder.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <exception>

#include "absl/container/flat_hash_map.h"
#include "loom/autograd/node.h"
#include "loom/core/error.h"
#include "loom/core/memory.h"
#include "loom/core/warning.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/profiling.h"

namespace loom::profiler {
namespace detail {

State& state() {
  static State* s = new State;
  return *s;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ThreadBuffer& this_thread_buffer() {
  thread_local std::shared_ptr<ThreadBuffer> buffer;
  if (!buffer) {
    auto b = std::make_shared<ThreadBuffer>();
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mu);
    b->thread_number = st.next_thread_number++;
    st.buffers.push_back(b);
    buffer = std::move(b);
  }
  return *buffer;
}

void sync_session(ThreadBuffer& b, uint64_t session) {
  if (b.session == session) return;
  b.session = session;
  b.events.clear();
  b.serials.clear();
  b.shapes.clear();
  b.open.clear();
  b.overwrite = 0;
  b.dropped = 0;
}

uint32_t reserve_slot(ThreadBuffer& b) {
  State& st = state();
  if (st.budget.fetch_sub(1, std::memory_order_relaxed) > 0) {
    b.events.emplace_back();
    b.serials.push_back(0);
    if (!b.shapes.empty() || st.record_shapes.load(std::memory_order_relaxed)) {
      b.shapes.emplace_back();
    }
    return static_cast<uint32_t>(b.events.size() - 1);
  }
  st.budget.fetch_add(1, std::memory_order_relaxed);
  ++b.dropped;
  if (b.events.empty()) return UINT32_MAX;
  // The ring: this thread's oldest slot that no open event holds.
  for (size_t tries = 0; tries < b.events.size(); ++tries) {
    const size_t i = b.overwrite++ % b.events.size();
    const bool held = std::any_of(b.open.begin(), b.open.end(),
                                  [&](const OpenEvent& o) { return o.index == i; });
    if (!held) return static_cast<uint32_t>(i);
  }
  return UINT32_MAX;
}

const std::string* intern(std::string_view s) {
  static std::mutex mu;
  static auto* table = new absl::flat_hash_map<std::string, std::unique_ptr<std::string>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = table->find(absl::string_view(s.data(), s.size()));
  if (it == table->end()) {
    it = table->emplace(std::string(s), std::make_unique<std::string>(s)).first;
  }
  return it->second.get();
}

namespace {

// Note [Device time]: one timer per device type, by type id.
std::array<std::atomic<DeviceTimer*>, 64> g_timers{};
DeviceTimer* device_timer(int type_id) {
  return type_id >= 0 && type_id < 64 ? g_timers[type_id].load(std::memory_order_acquire)
                                       : nullptr;
}

struct LabelTable {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> names{{"", ""}};
  absl::flat_hash_map<std::string, uint16_t> ids;
};
LabelTable& labels() {
  static auto* t = new LabelTable;
  return *t;
}

// Opens an event of kind on this thread; returns the buffer (nullptr: not recording or
// dropped) and fills slot/serial/session.
ThreadBuffer* open_event(const void* name, uint8_t kind, uint16_t label, int64_t seq,
                         uint32_t* slot, uint64_t* serial, uint64_t* session) {
  State& st = state();
  if (!st.recording.load(std::memory_order_relaxed)) return nullptr;
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  const uint64_t s = st.session.load(std::memory_order_acquire);
  if (!st.recording.load(std::memory_order_relaxed)) return nullptr;
  sync_session(b, s);
  const uint32_t i = reserve_slot(b);
  if (i == UINT32_MAX) return nullptr;
  const uint64_t id = b.next_serial++;
  b.events[i] = RawEvent{name, now_ns(), 0, seq, 0, 0, 0, label, kind,
                         static_cast<uint8_t>(std::min<size_t>(b.open.size(), 255))};
  b.serials[i] = id;
  if (i < b.shapes.size()) b.shapes[i].clear();
  b.open.push_back(OpenEvent{id, i});
  *slot = i;
  *serial = id;
  *session = s;
  return &b;
}

// Closes the event (slot, serial) of session on b; false if it is not the innermost open
// one (then it is closed anyway and removed from the stack).
bool close_event(ThreadBuffer& b, uint64_t session, uint64_t serial, bool op_event) {
  const int64_t end = now_ns();
  std::lock_guard<std::mutex> lock(b.mu);
  if (b.session != session) return true;  // a later session: nothing of ours is left
  auto it = std::find_if(b.open.rbegin(), b.open.rend(),
                         [&](const OpenEvent& o) { return o.serial == serial; });
  if (it == b.open.rend()) return true;
  const bool innermost = it == b.open.rbegin();
  const uint32_t i = it->index;
  b.open.erase(std::next(it).base());
  if (b.serials[i] != serial) return innermost;  // overwritten by the ring meanwhile
  RawEvent& e = b.events[i];
  e.end_ns = end;
  if (e.timer != 0) {
    if (DeviceTimer* t = device_timer(static_cast<int>(e.timer >> 56))) {
      t->stop(e.timer & ((uint64_t{1} << 56) - 1));
    }
  }
  // Note [Linking forward and backward]: the op keeps the sequence number it saw at its start
  // only if a node was made meanwhile (the counter moved); else it made none.
  if (op_event && e.seq >= 0 && autograd::peek_sequence_nr() == static_cast<uint64_t>(e.seq)) {
    e.seq = -1;
  }
  return innermost;
}

}  // namespace

uint16_t kernel_label(std::string_view provider, std::string_view plugin) {
  LabelTable& t = labels();
  std::string key(provider);
  key.push_back('\0');
  key.append(plugin);
  std::lock_guard<std::mutex> lock(t.mu);
  if (auto it = t.ids.find(key); it != t.ids.end()) return it->second;
  if (t.names.size() >= UINT16_MAX) return 0;
  const auto id = static_cast<uint16_t>(t.names.size());
  t.names.emplace_back(std::string(provider), std::string(plugin));
  t.ids.emplace(std::move(key), id);
  return id;
}

std::pair<std::string, std::string> kernel_label_names(uint16_t label) {
  LabelTable& t = labels();
  std::lock_guard<std::mutex> lock(t.mu);
  if (label >= t.names.size()) return {};
  return t.names[label];
}

bool recording() { return state().recording.load(std::memory_order_relaxed); }

namespace {
// The memory history's users (track_ops) and the op stack it reads (Note [Memory events]).
std::atomic<int> g_op_tracking{0};
thread_local std::vector<const OperatorEntry*> t_ops;
std::mutex g_key_mu;
int g_key_users = 0;  // the profiler and the op tracking: the Profiling key is on while > 0

void use_profiling_key(int delta) {
  std::lock_guard<std::mutex> lock(g_key_mu);
  g_key_users += delta;
  const uint64_t bit = DispatchKeySet(DispatchKey::Profiling).bits();
  if (g_key_users > 0) {
    process_included_keys.fetch_or(bit, std::memory_order_relaxed);
  } else {
    process_included_keys.fetch_and(~bit, std::memory_order_relaxed);
  }
}
}  // namespace

void track_ops(int delta) {
  g_op_tracking.fetch_add(delta, std::memory_order_relaxed);
  use_profiling_key(delta);
}

namespace {
std::array<std::atomic<const OperatorEntry*>, 8> g_excluded{};
bool excluded(const OperatorEntry* op) {
  for (const auto& e : g_excluded) {
    const OperatorEntry* x = e.load(std::memory_order_relaxed);
    if (x == nullptr) return false;
    if (x == op) return true;
  }
  return false;
}
}  // namespace

void exclude_from_profile(const OperatorEntry* op) {
  for (auto& e : g_excluded) {
    const OperatorEntry* expected = nullptr;
    if (e.compare_exchange_strong(expected, op) || expected == op) return;
  }
  LOOM_THROW(Error, "profiler: more than ", g_excluded.size(), " ops excluded from profiles");
}

OpScope::OpScope(const OperatorEntry* op, DispatchKeySet ks) {
  if (!state().recording.load(std::memory_order_relaxed) || excluded(op)) {
    if (g_op_tracking.load(std::memory_order_relaxed) > 0) {
      t_ops.push_back(op);
      tracked_ = true;
    }
    return;
  }
  // The provider: the kernel selected at the call's backend key (the highest of keys 1..32).
  constexpr uint64_t kBackendBits = ((uint64_t{1} << 33) - 1) & ~uint64_t{1};
  const uint64_t backend = ks.bits() & kBackendBits;
  const uint16_t label =
      backend ? op->kernel_label(static_cast<DispatchKey>(63 - __builtin_clzll(backend))) : 0;
  uint32_t slot = 0;
  ThreadBuffer* b = open_event(op, kRawOp, label,
                               static_cast<int64_t>(autograd::peek_sequence_nr()), &slot,
                               &serial_, &session_);
  buffer_ = b;
  // A device with a timer (a dynamic backend key: device type id = key - 1).
  if (b != nullptr && backend != 0) {
    const int key = 63 - __builtin_clzll(backend);
    if (key >= static_cast<int>(DispatchKey::FirstDynamicBackend)) {
      if (DeviceTimer* t = device_timer(key - 1)) {
        if (const uint64_t token = t->start()) {
          std::lock_guard<std::mutex> lock(b->mu);
          if (b->session == session_ && b->serials[slot] == serial_) {
            b->events[slot].timer = (static_cast<uint64_t>(key - 1) << 56) | token;
          }
        }
      }
    }
  }
  wants_shapes_ = b != nullptr && state().record_shapes.load(std::memory_order_relaxed);
}

OpScope::~OpScope() {
  if (buffer_) close_event(*static_cast<ThreadBuffer*>(buffer_), session_, serial_, true);
  if (tracked_ && !t_ops.empty()) t_ops.pop_back();
}

// Note [Memory events]: an allocation or release while the profiler records memory is an
// event of its own (closed at once, bytes in seq, device in label) and adds its bytes to the
// innermost open event of the thread, whose own net allocation that is.
void note_memory(Device device, int64_t bytes) {
  State& st = state();
  if (!st.recording.load(std::memory_order_relaxed) ||
      !st.profile_memory.load(std::memory_order_relaxed)) {
    return;
  }
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  const uint64_t s = st.session.load(std::memory_order_acquire);
  sync_session(b, s);
  if (!b.open.empty() && b.serials[b.open.back().index] == b.open.back().serial) {
    b.events[b.open.back().index].memory += bytes;
  }
  const uint32_t i = reserve_slot(b);
  if (i == UINT32_MAX) return;
  const auto code = static_cast<uint16_t>(static_cast<uint8_t>(device.type().id) |
                                          (static_cast<uint16_t>((device.index() + 1) & 0xff) << 8));
  b.events[i] = RawEvent{nullptr, now_ns(), 0, bytes, 0, 0, 0, code, kRawMemory, 0};
  b.serials[i] = b.next_serial++;
}

std::string current_op_name() {
  State& st = state();
  if (st.recording.load(std::memory_order_relaxed)) {
    ThreadBuffer& b = this_thread_buffer();
    std::lock_guard<std::mutex> lock(b.mu);
    for (auto it = b.open.rbegin(); it != b.open.rend(); ++it) {
      const RawEvent& e = b.events[it->index];
      if (b.serials[it->index] == it->serial && e.kind == kRawOp) {
        return static_cast<const OperatorEntry*>(e.name)->name();
      }
    }
    return "";
  }
  return t_ops.empty() ? std::string() : t_ops.back()->name();
}

namespace {
// The shapes string of the innermost open event of scope's buffer, if it is the scope's.
std::string* shapes_of(void* buffer, uint64_t serial) {
  auto* b = static_cast<ThreadBuffer*>(buffer);
  // Only the owning thread appends, and it is this one: the lock guards against stop().
  if (b->open.empty() || b->open.back().serial != serial) return nullptr;
  const uint32_t i = b->open.back().index;
  if (i >= b->shapes.size()) return nullptr;
  b->events[i].shapes = i + 1;
  return &b->shapes[i];
}

void append_shape(std::string& out, const Tensor& t) {
  if (!out.empty()) out += ", ";
  if (!t.defined()) {
    out += "undefined";
    return;
  }
  out += '[';
  const auto sizes = t.sizes();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d) out += ", ";
    out += std::to_string(sizes[d]);
  }
  out += "] ";
  out += std::string(dtype_name(t.dtype()));
}
}  // namespace

void OpScope::add_input(const Tensor& t) {
  auto* b = static_cast<ThreadBuffer*>(buffer_);
  std::lock_guard<std::mutex> lock(b->mu);
  if (b->session != session_) return;
  if (std::string* s = shapes_of(buffer_, serial_)) append_shape(*s, t);
}

void OpScope::add_input_list(const Tensor* data, size_t n) {
  auto* b = static_cast<ThreadBuffer*>(buffer_);
  std::lock_guard<std::mutex> lock(b->mu);
  if (b->session != session_) return;
  std::string* s = shapes_of(buffer_, serial_);
  if (!s) return;
  std::string inner;
  for (size_t i = 0; i < n; ++i) append_shape(inner, data[i]);
  if (!s->empty()) *s += ", ";
  *s += "{" + inner + "}";
}

void OpScope::add_other() {
  auto* b = static_cast<ThreadBuffer*>(buffer_);
  std::lock_guard<std::mutex> lock(b->mu);
  if (b->session != session_) return;
  if (std::string* s = shapes_of(buffer_, serial_)) *s += s->empty() ? "-" : ", -";
}

void note_hand_off(const OperatorEntry* op, uint16_t label) {
  if (label == 0 || !state().recording.load(std::memory_order_relaxed)) return;
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  // The innermost open op event of this op: the call being handed on.
  for (auto it = b.open.rbegin(); it != b.open.rend(); ++it) {
    RawEvent& e = b.events[it->index];
    if (b.serials[it->index] != it->serial || e.kind != kRawOp) continue;
    if (e.name == op) e.label = label;
    return;
  }
}

BackwardScope::BackwardScope(const autograd::Node& node) {
  if (!recording()) return;
  uint32_t slot = 0;
  buffer_ = open_event(intern(node.name()), kRawBackward, 0,
                       static_cast<int64_t>(node.sequence_nr()), &slot, &serial_, &session_);
}

BackwardScope::~BackwardScope() {
  if (buffer_) close_event(*buffer_, session_, serial_, false);
}

}  // namespace detail

using detail::State;
using detail::state;

bool is_recording() { return detail::recording(); }

RegistrationHandle register_device_timer(DeviceType type, DeviceTimer* timer) {
  LOOM_CHECK(type.id >= 0 && type.id < 64, "profiler::register_device_timer: device type id ",
             static_cast<int>(type.id), " is out of range");
  DeviceTimer* expected = nullptr;
  LOOM_CHECK(detail::g_timers[type.id].compare_exchange_strong(expected, timer),
             "profiler::register_device_timer: a timer for device type '", type.name(),
             "' is registered already");
  return RegistrationHandle([id = type.id, timer] {
    DeviceTimer* mine = timer;
    detail::g_timers[id].compare_exchange_strong(mine, nullptr);
  });
}

void start(const ProfilerOptions& options) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  LOOM_CHECK(!st.recording.load(), "profiler::start: a profiler is already recording in this "
             "process (one at a time); stop it first with profiler::stop()");
  LOOM_CHECK(options.max_events >= 1, "profiler::start: max_events must be at least 1, got ",
             options.max_events);
  st.options = options;
  st.record_shapes.store(options.record_shapes, std::memory_order_relaxed);
  st.profile_memory.store(options.profile_memory, std::memory_order_relaxed);
  st.budget.store(options.max_events, std::memory_order_relaxed);
  st.start_ns = detail::now_ns();
  st.session.fetch_add(1, std::memory_order_acq_rel);
  st.recording.store(true, std::memory_order_release);
  detail::use_profiling_key(+1);
  if (options.profile_memory) memory::detail::tracking_bits.fetch_or(1, std::memory_order_relaxed);
}

// Defined in report.cpp: orders the events and computes self times and links.
void finish_profile(std::vector<Event>& events, std::vector<MemoryEvent>& memory);

namespace {
// The events of the running session as a Profile. finishing: stop() (buffers are emptied);
// else a snapshot (events still open end now, recording goes on). st.mu held.
Profile collect(State& st, bool finishing) {
  const uint64_t session = st.session.load();
  std::vector<Event> events;
  std::vector<MemoryEvent> memory;
  int64_t dropped = 0;
  const int64_t end_ns = detail::now_ns();
  for (const auto& bp : st.buffers) {
    detail::ThreadBuffer& b = *bp;
    std::lock_guard<std::mutex> block(b.mu);
    if (b.session != session) continue;
    dropped += b.dropped;
    for (size_t i = 0; i < b.events.size(); ++i) {
      const detail::RawEvent& r = b.events[i];
      if (b.serials[i] == 0) continue;
      if (r.kind == detail::kRawMemory) {
        MemoryEvent m;
        m.time_ns = r.start_ns;
        m.thread = b.thread_number;
        m.device = Device(DeviceType{static_cast<int8_t>(r.label & 0xff)},
                          static_cast<int16_t>((r.label >> 8) - 1))
                       .str();
        m.bytes = r.seq;
        memory.push_back(std::move(m));
        continue;
      }
      Event e;
      switch (r.kind) {
        case detail::kRawOp: {
          e.kind = Event::Kind::Op;
          e.name = static_cast<const OperatorEntry*>(r.name)->name();
          auto [provider, plugin] = detail::kernel_label_names(r.label);
          e.provider = std::move(provider);
          e.plugin = std::move(plugin);
          break;
        }
        case detail::kRawRange:
          e.kind = Event::Kind::Range;
          e.name = *static_cast<const std::string*>(r.name);
          break;
        default:
          e.kind = Event::Kind::Backward;
          e.name = *static_cast<const std::string*>(r.name);
          break;
      }
      if (r.shapes != 0 && r.shapes - 1 < b.shapes.size()) e.shapes = b.shapes[r.shapes - 1];
      e.thread = b.thread_number;
      e.start_ns = r.start_ns;
      // Still open: it ends now (an event opened by a thread that raced stop() may have
      // stamped its start after end_ns was read).
      e.end_ns = r.end_ns != 0 ? r.end_ns : std::max(end_ns, r.start_ns);
      e.depth = r.depth;
      e.sequence_nr = r.seq;
      e.self_memory_bytes = r.memory;
      if (finishing && r.timer != 0) {
        if (DeviceTimer* t = detail::device_timer(static_cast<int>(r.timer >> 56))) {
          e.device_ns = t->elapsed_ns(r.timer & ((uint64_t{1} << 56) - 1));
        }
      }
      events.push_back(std::move(e));
    }
    if (finishing) {
      // Free the memory now; the thread's next session starts afresh (sync_session).
      b.session = 0;
      std::vector<detail::RawEvent>().swap(b.events);
      std::vector<uint64_t>().swap(b.serials);
      std::vector<std::string>().swap(b.shapes);
      b.open.clear();
    }
  }
  if (finishing) {
    for (auto& t : detail::g_timers) {
      if (DeviceTimer* timer = t.load(std::memory_order_acquire)) timer->clear();
    }
  }
  finish_profile(events, memory);
  return Profile::make(std::move(events), dropped, st.start_ns, end_ns, std::move(memory));
}
}  // namespace

Profile stop() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  LOOM_CHECK(st.recording.load(), "profiler::stop: no profiler is recording (start one with "
             "profiler::start())");
  st.recording.store(false, std::memory_order_release);
  detail::use_profiling_key(-1);
  if (st.options.profile_memory) {
    memory::detail::tracking_bits.fetch_and(~1, std::memory_order_relaxed);
  }
  return collect(st, true);
}

Profile snapshot() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  LOOM_CHECK(st.recording.load(), "profiler::snapshot: no profiler is recording (start one "
             "with profiler::start())");
  return collect(st, false);
}

Range::Range(std::string_view name) {
  if (!detail::recording()) return;
  uint32_t slot = 0;
  buffer_ = detail::open_event(detail::intern(name), detail::kRawRange, 0, -1, &slot, &serial_,
                               &session_);
}

Range::~Range() noexcept(false) {
  if (!buffer_) return;
  auto* b = static_cast<detail::ThreadBuffer*>(buffer_);
  if (detail::close_event(*b, session_, serial_, false)) return;
  if (std::uncaught_exceptions() > 0) return;  // unwinding: closing out of order is expected
  LOOM_THROW(Error, "profiler::Range: a range was closed before the ranges opened inside it "
             "(ranges close in the reverse order of opening on their thread; it was closed "
             "anyway)");
}

ScheduledProfiler::ScheduledProfiler(Schedule schedule, ProfilerOptions options,
                                     std::function<void(const Profile&)> on_trace_ready)
    : schedule_(schedule), options_(options), on_trace_ready_(std::move(on_trace_ready)) {
  LOOM_CHECK(schedule.wait >= 0 && schedule.warmup >= 0 && schedule.active >= 1 &&
                 schedule.repeat >= 0,
             "profiler::ScheduledProfiler: wait, warmup and repeat must be >= 0 and active >= 1, "
             "got wait=", schedule.wait, " warmup=", schedule.warmup, " active=", schedule.active,
             " repeat=", schedule.repeat);
  enter(0);
}

ScheduledProfiler::~ScheduledProfiler() {
  if (!recording_) return;
  try {
    const Profile p = stop();
    const int64_t cycle = schedule_.wait + schedule_.warmup + schedule_.active;
    if (step_ % cycle >= schedule_.wait + schedule_.warmup && on_trace_ready_) on_trace_ready_(p);
  } catch (const std::exception& e) {
    warn(std::string("profiler::ScheduledProfiler: ") + e.what());
  }
}

void ScheduledProfiler::step() {
  ++step_;
  enter(step_);
}

// Recording states per step of the schedule: off (wait or past the last cycle), warmup, active.
void ScheduledProfiler::enter(int64_t step) {
  const int64_t cycle = schedule_.wait + schedule_.warmup + schedule_.active;
  const int64_t pos = step % cycle;
  const bool done = schedule_.repeat > 0 && step / cycle >= schedule_.repeat;
  // Leaving the previous step's state.
  if (recording_ && step > 0) {
    const int64_t prev = (step - 1) % cycle;
    const bool prev_active = prev >= schedule_.wait + schedule_.warmup;
    const bool prev_warmup = !prev_active && prev >= schedule_.wait;
    const bool ends_cycle = prev == cycle - 1;
    const bool ends_warmup = prev_warmup && pos >= schedule_.wait + schedule_.warmup;
    if (ends_cycle || ends_warmup) {
      Profile p = stop();
      recording_ = false;
      if (ends_cycle && on_trace_ready_) on_trace_ready_(p);
    }
  }
  if (done || recording_ || pos < schedule_.wait) return;
  start(options_);
  recording_ = true;
}

}  // namespace loom::profiler
