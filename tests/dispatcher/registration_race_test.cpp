// Registration racing with dispatch: readers call an op in a loop on several
// threads while the main thread registers and unregisters a competing
// provider and fallbacks. Every call must reach one of the live kernels.
// Run under ThreadSanitizer by tests/sanitizers.sh.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "loom/dispatcher/library.h"

namespace loom {
namespace {

LOOM_LIBRARY(drace, m) {
  m.def("pick(Tensor self) -> int");
  m.def("other(Tensor self) -> int");
}
LOOM_LIBRARY_IMPL(drace, CPU, m) {
  m.set_provider("base");
  m.impl("pick", [](const Tensor&) -> int64_t { return 1; });
  m.impl("other", [](const Tensor&) -> int64_t { return 7; });
}

TEST(RegistrationRace, DispatchNeverSeesAHalfRegisteredKernel) {
  auto pick =
      Dispatcher::instance().find_op_or_throw("drace::pick").typed<int64_t(const Tensor&)>();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0}, bad{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      Tensor x = Tensor::empty({1});
      while (!stop.load(std::memory_order_relaxed)) {
        const int64_t v = pick(x);
        if (v != 1 && v != 2) bad.fetch_add(1);
        calls.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // At least 300 rounds, and on until the readers have made plenty of calls during them
  // (bounded, so a stuck reader fails the test instead of hanging it).
  for (int round = 0; round < 300 || (calls.load() < 20000 && round < 200000); ++round) {
    Library lib(Library::Kind::Impl, "drace", DispatchKey::CPU);
    lib.set_provider("racer", 5).impl("pick", [](const Tensor&) -> int64_t { return 2; });
    Library fb(Library::Kind::Impl, "_", DispatchKey::Tracing);
    fb.fallback(KernelFunction::fallthrough());
    if (round % 3 == 0) Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, "base");
    Dispatcher::instance().set_preferred_provider(DispatchKey::CPU, "");
  }  // each round's registrations die here
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(calls.load(), 0);
  EXPECT_EQ(pick(Tensor::empty({1})), 1) << "after all racers left, the base provider remains";
}

TEST(RegistrationRace, UnregisteringAHigherKeyNeverFailsACall) {
  // A reader that saw the Autograd bit must still reach CPU when the Autograd kernel goes.
  auto other = Dispatcher::instance().find_op_or_throw("drace::other").typed<int64_t(const Tensor&)>();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0}, errors{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      Tensor x = Tensor::empty({1});
      while (!stop.load(std::memory_order_relaxed)) {
        try {
          if (other(x) != 7) errors.fetch_add(1);
        } catch (const Error&) {
          errors.fetch_add(1);
        }
        calls.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int round = 0; round < 30000 || (calls.load() < 20000 && round < 200000); ++round) {
    Library ag(Library::Kind::Impl, "drace", DispatchKey::Autograd);
    ag.impl("other", [](const Tensor&) -> int64_t { return 7; });
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0) << "of " << calls.load() << " calls";
}

TEST(RegistrationRace, ConcurrentRegistrationsFromManyThreads) {
  std::vector<std::thread> writers;
  std::atomic<int> errors{0};
  for (int i = 0; i < 4; ++i) {
    writers.emplace_back([&, i] {
      for (int r = 0; r < 50; ++r) {
        try {
          Library lib(Library::Kind::Impl, "drace", DispatchKey::CPU);
          lib.set_provider("writer" + std::to_string(i))
              .impl("other", [](const Tensor&) -> int64_t { return 7; });
        } catch (const Error&) {
          errors.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(errors.load(), 0);
  auto other =
      Dispatcher::instance().find_op_or_throw("drace::other").typed<int64_t(const Tensor&)>();
  EXPECT_EQ(other(Tensor::empty({1})), 7);
  EXPECT_EQ(Dispatcher::instance().kernels(other.handle()).size(), 1u);
}

}  // namespace
}  // namespace loom
