// The profiler (core/src/profiler, loom/profiler/profiler.h): op events from the dispatcher's
// Profiling key, nesting, provider attribution, ranges, backward links, shapes, the ring
// buffer, the schedule, the reports and the errors.

#include "loom/profiler/profiler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "loom/core/memory.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/library.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/loom.h"

namespace loom {
namespace {

LOOM_LIBRARY(prof, m) {
  m.def("leaf(Tensor self) -> Tensor");
  m.def("outer(Tensor self) -> Tensor");
  m.def("scaled(Tensor self, int factor) -> Tensor");
}

Tensor call_leaf(const Tensor& t) {
  static const auto op =
      Dispatcher::instance().find_op_or_throw("prof::leaf").typed<Tensor(const Tensor&)>();
  return op(t);
}

LOOM_LIBRARY_IMPL(prof, CPU, m) {
  m.impl("leaf", [](const Tensor& t) { return t; });
  // A kernel that calls other ops: its events nest inside its own.
  m.impl("outer", [](const Tensor& t) { return call_leaf(call_leaf(t)); });
}

// Two providers of prof::scaled at CPU: "fast" takes factors up to 100 and hands the rest to
// the runner-up, "reference" (Note [Next provider]).
const OperatorHandle::Typed<Tensor(const Tensor&, int64_t)>& scaled_op() {
  static const auto op = Dispatcher::instance()
                             .find_op_or_throw("prof::scaled")
                             .typed<Tensor(const Tensor&, int64_t)>();
  return op;
}

struct Providers {
  Library reference{Library::Kind::Impl, "prof", DispatchKey::CPU};
  Library fast{Library::Kind::Impl, "prof", DispatchKey::CPU};
  Providers() {
    reference.set_provider("reference", 0).impl("scaled", [](const Tensor& t, int64_t) { return t; });
    fast.set_provider("fast", 10).impl("scaled", [](const Tensor& t, int64_t f) {
      if (f > 100) return scaled_op().call_next_provider(DispatchKey::CPU, t, f);
      return t;
    });
  }
};

std::vector<profiler::Event> named(const profiler::Profile& p, const std::string& name) {
  std::vector<profiler::Event> out;
  for (const auto& e : p.events()) {
    if (e.name == name) out.push_back(e);
  }
  return out;
}

class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override { init(); }
  void TearDown() override {
    if (profiler::is_recording()) profiler::stop();
  }
};

TEST_F(ProfilerTest, NothingIsRecordedWhileOff) {
  call_leaf(Tensor::empty({2}));
  profiler::start();
  profiler::Profile p = profiler::stop();
  EXPECT_TRUE(p.events().empty());
  call_leaf(Tensor::empty({2}));
  EXPECT_FALSE(profiler::is_recording());
}

TEST_F(ProfilerTest, OpsNestInsideRangesAndCallers) {
  const Tensor x = Tensor::empty({2, 3});
  profiler::start();
  {
    profiler::Range r("step");
    static const auto outer =
        Dispatcher::instance().find_op_or_throw("prof::outer").typed<Tensor(const Tensor&)>();
    outer(x);
  }
  const profiler::Profile p = profiler::stop();
  ASSERT_EQ(p.events().size(), 4u);
  const auto& ev = p.events();
  EXPECT_EQ(ev[0].name, "step");
  EXPECT_EQ(ev[0].kind, profiler::Event::Kind::Range);
  EXPECT_EQ(ev[0].depth, 0);
  EXPECT_EQ(ev[1].name, "prof::outer");
  EXPECT_EQ(ev[1].depth, 1);
  EXPECT_EQ(ev[2].name, "prof::leaf");
  EXPECT_EQ(ev[3].name, "prof::leaf");
  EXPECT_EQ(ev[2].depth, 2);
  for (size_t i = 1; i < ev.size(); ++i) {
    EXPECT_GE(ev[i].start_ns, ev[0].start_ns);
    EXPECT_LE(ev[i].end_ns, ev[0].end_ns);
    EXPECT_EQ(ev[i].thread, ev[0].thread);
  }
  EXPECT_LE(ev[2].end_ns, ev[3].start_ns);
  // Self time: the caller's duration less its children's.
  EXPECT_EQ(ev[1].self_ns,
            (ev[1].end_ns - ev[1].start_ns) - (ev[2].end_ns - ev[2].start_ns) -
                (ev[3].end_ns - ev[3].start_ns));
  const auto rows = p.key_averages();
  const auto leaf = std::find_if(rows.begin(), rows.end(),
                                 [](const auto& r) { return r.name == "prof::leaf"; });
  ASSERT_NE(leaf, rows.end());
  EXPECT_EQ(leaf->calls, 2);
  EXPECT_NE(p.table().find("prof::outer"), std::string::npos);
}

TEST_F(ProfilerTest, EventsNameTheProviderThatServedTheCall) {
  Providers providers;
  const Tensor x = Tensor::empty({1});
  profiler::start();
  scaled_op()(x, 2);    // fast takes it
  scaled_op()(x, 500);  // fast hands it to reference
  Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, "reference");
  scaled_op()(x, 2);    // the user's choice
  Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, "");
  const profiler::Profile p = profiler::stop();
  const auto ev = named(p, "prof::scaled");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].provider, "fast");
  EXPECT_EQ(ev[1].provider, "reference") << "a hand-off names the provider that did the work";
  EXPECT_EQ(ev[2].provider, "reference");
  const auto by_provider = p.key_averages(profiler::GroupBy::Provider);
  int rows = 0;
  for (const auto& r : by_provider) rows += r.name == "prof::scaled";
  EXPECT_EQ(rows, 2);
}

TEST_F(ProfilerTest, RealOpsNameTheirPluginAndLinkToTheirBackwardNode) {
  Tensor w = ones({3}).requires_grad_();
  profiler::start();
  Tensor loss = (w * w).sum();
  loss.backward();
  const profiler::Profile p = profiler::stop();
  const auto mul = named(p, "aten::mul.Tensor");
  ASSERT_FALSE(mul.empty());
  EXPECT_FALSE(mul[0].provider.empty());
  EXPECT_FALSE(mul[0].plugin.empty());
  ASSERT_GE(mul[0].sequence_nr, 0) << "the forward op that recorded a node carries its number";
  const auto bwd = named(p, "MulBackward0");
  ASSERT_EQ(bwd.size(), 1u);
  EXPECT_EQ(bwd[0].kind, profiler::Event::Kind::Backward);
  EXPECT_EQ(bwd[0].sequence_nr, mul[0].sequence_nr);
  // The backward formula's ops nest inside the node's event.
  bool nested = false;
  for (const auto& e : p.events()) {
    nested |= e.kind == profiler::Event::Kind::Op && e.start_ns >= bwd[0].start_ns &&
              e.end_ns <= bwd[0].end_ns && e.depth > bwd[0].depth;
  }
  EXPECT_TRUE(nested);
  // The trace links them with a flow arrow.
  const auto trace = nlohmann::json::parse(p.chrome_trace());
  int flows = 0;
  for (const auto& e : trace["traceEvents"]) flows += e["ph"] == "s";
  EXPECT_GE(flows, 1);
}

TEST_F(ProfilerTest, ShapesAreRecordedWhenAsked) {
  const Tensor x = Tensor::empty({2, 3});
  profiler::start({.record_shapes = true});
  call_leaf(x);
  scaled_op();  // not called: only the handle
  profiler::Profile p = profiler::stop();
  ASSERT_EQ(p.events().size(), 1u);
  EXPECT_EQ(p.events()[0].shapes, "[2, 3] float32");
  profiler::start();
  call_leaf(x);
  p = profiler::stop();
  EXPECT_EQ(p.events()[0].shapes, "");
  const auto rows = profiler::Profile().key_averages(profiler::GroupBy::OpAndShapes);
  EXPECT_TRUE(rows.empty());
}

TEST_F(ProfilerTest, TheRingKeepsTheNewestEventsAndCountsTheRest) {
  const Tensor x = Tensor::empty({1});
  profiler::start({.max_events = 10});
  for (int i = 0; i < 100; ++i) call_leaf(x);
  const profiler::Profile p = profiler::stop();
  EXPECT_EQ(p.events().size(), 10u);
  EXPECT_EQ(p.dropped_events(), 90);
  EXPECT_NE(p.table().find("90 older events dropped"), std::string::npos);
}

TEST_F(ProfilerTest, EveryThreadIsRecorded) {
  const Tensor x = Tensor::empty({1});
  profiler::start();
  call_leaf(x);
  std::thread([&] { call_leaf(x); }).join();
  const profiler::Profile p = profiler::stop();
  const auto ev = named(p, "prof::leaf");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_NE(ev[0].thread, ev[1].thread);
}

TEST_F(ProfilerTest, ChromeTraceIsValidJsonWithOneCompleteEventPerEvent) {
  const Tensor x = Tensor::empty({1});
  profiler::start({.record_shapes = true});
  {
    profiler::Range r("a \"quoted\"\nname");
    call_leaf(x);
  }
  const profiler::Profile p = profiler::stop();
  const std::string path = ::testing::TempDir() + "/loom_trace_" + std::to_string(::getpid()) + ".json";
  p.export_chrome_trace(path);
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  int complete = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++complete;
    EXPECT_GE(e["ts"].template get<double>(), 0.0);
    EXPECT_GE(e["dur"].template get<double>(), 0.0);
  }
  EXPECT_EQ(complete, 2);
  EXPECT_EQ(trace["traceEvents"][2]["name"], "a \"quoted\"\nname");
  std::remove(path.c_str());
}

TEST_F(ProfilerTest, MisuseGetsClearErrors) {
  EXPECT_THROW(
      {
        try {
          profiler::stop();
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("no profiler is recording"), std::string::npos);
          throw;
        }
      },
      Error);
  profiler::start();
  try {
    profiler::start();
    FAIL() << "a second start must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already recording"), std::string::npos);
  }
  // A range closed before the one opened inside it.
  // (A plain delete: unique_ptr::reset is noexcept, and the destructor throws.)
  auto* outer = new profiler::Range("outer");
  auto* inner = new profiler::Range("inner");
  try {
    delete outer;
    FAIL() << "closing a range out of order must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reverse order"), std::string::npos);
  }
  delete inner;
  const profiler::Profile p = profiler::stop();
  EXPECT_EQ(p.events().size(), 2u);
  try {
    p.export_chrome_trace("/nonexistent-folder/trace.json");
    FAIL() << "an unwritable path must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/trace.json"), std::string::npos);
  }
  EXPECT_THROW(profiler::start({.max_events = 0}), Error);
}

TEST_F(ProfilerTest, ScheduleWaitsWarmsUpAndHandsOverTheActiveSteps) {
  const Tensor x = Tensor::empty({1});
  std::vector<size_t> ready;
  {
    profiler::ScheduledProfiler prof({.wait = 1, .warmup = 1, .active = 2, .repeat = 2}, {},
                                     [&](const profiler::Profile& p) {
                                       ready.push_back(named(p, "prof::leaf").size());
                                     });
    for (int step = 0; step < 12; ++step) {
      for (int i = 0; i <= step; ++i) call_leaf(x);  // step s calls leaf s+1 times
      prof.step();
    }
  }
  // Cycle 1: steps 0 wait, 1 warmup, 2-3 active (3 + 4 calls); cycle 2: 6-7 active (7 + 8).
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0], 7u);
  EXPECT_EQ(ready[1], 15u);
  EXPECT_FALSE(profiler::is_recording());
}

TEST_F(ProfilerTest, MemoryOfAScriptedSequenceIsExact) {
  profiler::start({.profile_memory = true});
  {
    profiler::Range r("script");
    Tensor a = Tensor::empty({256});  // 1024 bytes
    Tensor b = Tensor::empty({512});  // 2048: 3072 held
    a = Tensor();                     // 2048 held
    Tensor c = Tensor::empty({128});  // 512: 2560 held
  }                                   // b and c go: 0
  const profiler::Profile p = profiler::stop();
  std::vector<int64_t> totals;
  for (const auto& m : p.memory_events()) {
    EXPECT_EQ(m.device, "cpu");
    totals.push_back(m.total_bytes);
  }
  ASSERT_EQ(totals.size(), 6u);
  EXPECT_EQ(totals[0], 1024);
  EXPECT_EQ(totals[1], 3072);
  EXPECT_EQ(totals[2], 2048);
  EXPECT_EQ(totals[3], 2560);
  EXPECT_EQ(totals[5], 0);
  const auto script = named(p, "script");
  ASSERT_EQ(script.size(), 1u);
  // Freed in its scope (c, then b, as locals go in reverse order): net 0; the peak 3072.
  EXPECT_EQ(script[0].self_memory_bytes, 0);
  EXPECT_EQ(script[0].peak_memory_bytes, 3072);
  EXPECT_NE(p.table().find("Peak Mem"), std::string::npos);
  int counters = 0;
  const auto trace = nlohmann::json::parse(p.chrome_trace());
  for (const auto& e : trace["traceEvents"]) counters += e["ph"] == "C";
  EXPECT_EQ(counters, 6);
}

TEST_F(ProfilerTest, AnOpOwnsWhatItAllocates) {
  const Tensor x = ones({1000});
  profiler::start({.profile_memory = true});
  Tensor y = x + x;
  const profiler::Profile p = profiler::stop();
  const auto add = named(p, "aten::add.Tensor");
  ASSERT_EQ(add.size(), 1u);
  // Its result: 4000 bytes (allocated by the op itself, or by an op it called).
  int64_t inside = add[0].self_memory_bytes;
  for (const auto& e : p.events()) {
    if (e.depth > add[0].depth && e.start_ns >= add[0].start_ns && e.end_ns <= add[0].end_ns) {
      inside += e.self_memory_bytes;
    }
  }
  EXPECT_EQ(inside, 4000);
  EXPECT_GE(add[0].peak_memory_bytes, 4000);
}

TEST_F(ProfilerTest, MemoryStatisticsAndHistory) {
  const Device cpu;
  memory::reset_peak_stats(cpu);
  const int64_t before = memory::allocated(cpu);
  {
    Tensor big = Tensor::empty({1 << 18});  // 1 MiB
    EXPECT_GE(memory::allocated(cpu) - before, 1 << 20);
  }
  EXPECT_GE(memory::max_allocated(cpu) - before, 1 << 20);
  EXPECT_GE(memory::reserved(cpu), memory::allocated(cpu));
  EXPECT_FALSE(memory::summary(cpu).empty());

  const Tensor x = ones({1000});
  memory::record_history(true, 8);
  Tensor y = x + x;
  Tensor z = Tensor::empty({7});
  std::vector<memory::Block> live = memory::snapshot();
  auto by_op = [&](const std::string& op) {
    return std::count_if(live.begin(), live.end(), [&](const memory::Block& b) {
      return b.op == op && b.bytes == 4000;
    });
  };
  EXPECT_EQ(by_op("aten::add.Tensor") + by_op("aten::empty.memory_format"), 1)
      << "the result's block names the op that made it";
  ASSERT_FALSE(live.empty());
  EXPECT_FALSE(live.front().stack.empty());
  EXPECT_EQ(live.back().bytes, 28);
  y = Tensor();
  live = memory::snapshot();
  EXPECT_EQ(live.size(), 1u) << "a freed block leaves the snapshot";
  memory::record_history(false);
  EXPECT_TRUE(memory::snapshot().empty());
}


TEST_F(ProfilerTest, RangeOpsOpenRangesForCallersByName) {
  // What a C client does (OpFind + OpCall go through call_boxed).
  const OperatorHandle enter = Dispatcher::instance().find_op_or_throw("profiler::record_function_enter");
  const OperatorHandle exit_op = Dispatcher::instance().find_op_or_throw("profiler::record_function_exit");
  profiler::start();
  Stack s;
  s.emplace_back(std::string("boxed range"));
  enter.call_boxed(s);
  ASSERT_EQ(s.size(), 1u);
  const int64_t handle = s[0].to_int();
  call_leaf(Tensor::empty({1}));
  s.clear();
  s.emplace_back(handle);
  exit_op.call_boxed(s);
  const profiler::Profile p = profiler::stop();
  ASSERT_EQ(p.events().size(), 2u) << "the range ops make no op events of their own";
  EXPECT_EQ(p.events()[0].name, "boxed range");
  EXPECT_EQ(p.events()[0].kind, profiler::Event::Kind::Range);
  EXPECT_EQ(p.events()[1].name, "prof::leaf");
  EXPECT_EQ(p.events()[1].depth, 1);
}


// A timer that counts, for the fake device of the test plugin fake_device.
class CountingTimer final : public profiler::DeviceTimer {
 public:
  uint64_t start() override { return ++started; }
  void stop(uint64_t token) override { stopped.push_back(token); }
  int64_t elapsed_ns(uint64_t token) override { return 1000 * static_cast<int64_t>(token); }
  void clear() override { ++cleared; }
  uint64_t started = 0;
  std::vector<uint64_t> stopped;
  int cleared = 0;
};

TEST_F(ProfilerTest, ADeviceTimerTimesTheOpsOnItsDevice) {
  const char* dir = std::getenv("LOOM_TEST_PLUGIN_DIR");
  if (dir == nullptr || *dir == '\0') dir = LOOM_TEST_PLUGIN_DIR_DEFAULT;
  ::setenv("LOOM_PLUGIN_PATH", dir, 1);
  PluginLoader::instance().load("fake_device");
  ::unsetenv("LOOM_PLUGIN_PATH");
  const DeviceType fake = DeviceType::from_name("fake");
  CountingTimer timer;
  const RegistrationHandle registered = profiler::register_device_timer(fake, &timer);
  EXPECT_THROW(profiler::register_device_timer(fake, &timer), Error);
  const Tensor x = Tensor::empty({3}, TensorOptions{}.with(Device("fake")));
  static const auto twice =
      Dispatcher::instance().find_op_or_throw("testns::twice").typed<Tensor(const Tensor&)>();
  profiler::start();
  twice(x);                        // on the fake device: timed
  call_leaf(Tensor::empty({1}));  // on the CPU: not
  const profiler::Profile p = profiler::stop();
  const auto on_device = named(p, "testns::twice");
  ASSERT_EQ(on_device.size(), 1u);
  EXPECT_EQ(on_device[0].device_ns, 1000);
  EXPECT_EQ(on_device[0].plugin, "fake_device");
  EXPECT_EQ(named(p, "prof::leaf")[0].device_ns, -1);
  EXPECT_EQ(timer.stopped, std::vector<uint64_t>{1});
  EXPECT_EQ(timer.cleared, 1);
  EXPECT_NE(p.table().find("Device"), std::string::npos);
  EXPECT_NE(p.chrome_trace().find("\"device_us\":1.000"), std::string::npos);
}


// Starting and stopping while other threads call ops and open ranges: every event belongs to
// one session, scopes that close after stop() write nothing (Note [Event buffers]). Run under
// ThreadSanitizer by tests/sanitizers.sh.
TEST_F(ProfilerTest, StartAndStopWhileOtherThreadsRecord) {
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&] {
      const Tensor x = Tensor::empty({4});
      while (!done.load()) {
        profiler::Range r("work");
        call_leaf(x);
      }
    });
  }
  int64_t seen = 0;
  for (int round = 0; round < 20; ++round) {
    profiler::start({.max_events = 5000});
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const profiler::Profile p = profiler::stop();
    for (const auto& e : p.events()) {
      EXPECT_TRUE(e.name == "work" || e.name == "prof::leaf") << e.name;
      EXPECT_LE(e.start_ns, e.end_ns);
    }
    seen += static_cast<int64_t>(p.events().size());
  }
  done = true;
  for (auto& w : workers) w.join();
  EXPECT_GT(seen, 0);
}

}  // namespace
}  // namespace loom
