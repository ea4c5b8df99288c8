// Tests for core/src/generator.cpp: the CPU generator and the per-device default generators.

#include "loom/core/generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "loom/core/error.h"

namespace loom {
namespace {

using ::testing::HasSubstr;

std::vector<uint64_t> draw(Generator& g, int n) {
  std::vector<uint64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(g.next_u64());
  return v;
}

TEST(CPUGeneratorTest, DefaultSeedIsPyTorchs) {
  CPUGenerator g;
  EXPECT_EQ(g.initial_seed(), 67280421310721ULL);
  EXPECT_EQ(g.device(), kCPU);
}

TEST(CPUGeneratorTest, SameSeedSameStream) {
  CPUGenerator a(123), b(123), c(124);
  const auto va = draw(a, 100);
  EXPECT_EQ(va, draw(b, 100));
  EXPECT_NE(va, draw(c, 100));
  // The stream is mt19937_64's.
  std::mt19937_64 ref(123);
  EXPECT_EQ(va[0], ref());
}

TEST(CPUGeneratorTest, ManualSeedRestartsTheStream) {
  CPUGenerator g(5);
  const auto first = draw(g, 10);
  g.manual_seed(5);
  EXPECT_EQ(draw(g, 10), first);
  g.manual_seed(99);
  EXPECT_EQ(g.initial_seed(), 99u);
  EXPECT_NE(draw(g, 10), first);
}

TEST(CPUGeneratorTest, NextDoubleIsInTheUnitInterval) {
  CPUGenerator g(1);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const double d = g.next_double();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum += d;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(CPUGeneratorTest, StateRoundTrips) {
  CPUGenerator g(42);
  draw(g, 17);  // advance somewhere into the stream
  const std::string state = g.get_state();
  const auto expected = draw(g, 50);
  CPUGenerator other(7);
  other.set_state(state);
  EXPECT_EQ(other.initial_seed(), 42u);
  EXPECT_EQ(draw(other, 50), expected);
  g.set_state(state);
  EXPECT_EQ(draw(g, 50), expected);
  EXPECT_EQ(g.get_state(), other.get_state());
}

TEST(CPUGeneratorTest, BadStateIsAValueErrorAndLeavesTheGeneratorAlone) {
  CPUGenerator g(3);
  const std::string before = g.get_state();
  std::string truncated = before.substr(0, before.size() / 2);
  truncated.resize(truncated.rfind(' '));  // cut at a number boundary
  for (const std::string& bad :
       {std::string(), std::string("garbage"), std::string("12 x"), truncated}) {
    try {
      g.set_state(bad);
      ADD_FAILURE() << "accepted a bad state of " << bad.size() << " bytes";
    } catch (const ValueError& e) {
      EXPECT_THAT(e.what(), HasSubstr("CPUGenerator.set_state: the state string is malformed"));
    }
    EXPECT_EQ(g.get_state(), before);
  }
}

TEST(CPUGeneratorTest, ThreadSafe) {
  CPUGenerator g(11);
  std::vector<std::vector<uint64_t>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { got[t] = draw(g, 1000); });
  }
  for (auto& th : threads) th.join();
  // Every draw comes from one stream: no value is lost or duplicated.
  CPUGenerator ref(11);
  const auto all = draw(ref, 4000);
  std::multiset<uint64_t> expected(all.begin(), all.end()), seen;
  for (const auto& v : got) seen.insert(v.begin(), v.end());
  EXPECT_EQ(seen, expected);
}

// ---------------------------------------------------------------- default generators

TEST(DefaultGeneratorTest, CpuHasOneDefaultGenerator) {
  Generator& g = default_generator();
  EXPECT_EQ(&g, &default_generator(kCPU));
  EXPECT_EQ(&g, &default_generator(Device(DeviceType::cpu(), 0)));  // -1 means 0
  EXPECT_EQ(g.device(), kCPU);
}

TEST(DefaultGeneratorTest, ManualSeedReseedsTheDefaultGenerator) {
  manual_seed(2024);
  EXPECT_EQ(default_generator().initial_seed(), 2024u);
  const auto first = draw(default_generator(), 20);
  manual_seed(2024);
  EXPECT_EQ(draw(default_generator(), 20), first);
  CPUGenerator fresh(2024);
  EXPECT_EQ(draw(fresh, 20), first);
}

TEST(DefaultGeneratorTest, DeviceWithoutFactoryThrowsDeviceError) {
  const DeviceType t = DeviceType::register_type("gentest_none");
  try {
    default_generator(Device(t, 0));
    FAIL() << "no DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("default_generator(gentest_none:0): no generator is "
                                    "registered for device type 'gentest_none'"));
  }
}

// A generator for a pretend device: a CPUGenerator that reports another device and counts
// its instances.
std::atomic<int> g_live_fake_generators{0};
class FakeDeviceGenerator final : public Generator {
 public:
  FakeDeviceGenerator(Device d, uint64_t tag) : device_(d), inner_(tag) {
    ++g_live_fake_generators;
  }
  ~FakeDeviceGenerator() override { --g_live_fake_generators; }
  void manual_seed(uint64_t seed) override { inner_.manual_seed(seed); }
  uint64_t initial_seed() const override { return inner_.initial_seed(); }
  uint64_t next_u64() override { return inner_.next_u64(); }
  std::string get_state() const override { return inner_.get_state(); }
  void set_state(const std::string& s) override { inner_.set_state(s); }
  Device device() const override { return device_; }

 private:
  Device device_;
  CPUGenerator inner_;
};

GeneratorFactory fake_factory(uint64_t tag) {
  return [tag](Device d) { return std::make_unique<FakeDeviceGenerator>(d, tag); };
}

TEST(DefaultGeneratorTest, FactoryForANewDeviceTypeAndItsRemoval) {
  const DeviceType t = DeviceType::register_type("gentest_a");
  {
    RegistrationHandle h = register_generator_factory(t, fake_factory(1));
    Generator& g0 = default_generator(Device(t, -1));
    EXPECT_EQ(g0.device(), Device(t, 0));
    EXPECT_EQ(&g0, &default_generator(Device(t, 0)));
    Generator& g1 = default_generator(Device(t, 1));
    EXPECT_NE(&g0, &g1);
    EXPECT_EQ(g1.device(), Device(t, 1));
    EXPECT_EQ(g_live_fake_generators.load(), 2);
    // manual_seed reaches every default generator that exists.
    manual_seed(77);
    EXPECT_EQ(g0.initial_seed(), 77u);
    EXPECT_EQ(g1.initial_seed(), 77u);
    EXPECT_EQ(default_generator().initial_seed(), 77u);
  }
  // The generators made by the departed factory are gone with it.
  EXPECT_EQ(g_live_fake_generators.load(), 0);
  EXPECT_THROW(default_generator(Device(t, 0)), DeviceError);
  // The CPU default generator is untouched.
  EXPECT_EQ(default_generator().initial_seed(), 77u);
}

TEST(DefaultGeneratorTest, RemovingAnOlderFactoryKeepsGeneratorsOfTheNewerOne) {
  const DeviceType t = DeviceType::register_type("gentest_b");
  RegistrationHandle older = register_generator_factory(t, fake_factory(1));
  RegistrationHandle newer = register_generator_factory(t, fake_factory(2));
  Generator& g = default_generator(Device(t, 0));  // made by the newer factory
  EXPECT_EQ(g.initial_seed(), 2u);
  g.manual_seed(555);
  older.reset();
  // Still the same generator, with its state: the newer factory is still registered.
  EXPECT_EQ(&default_generator(Device(t, 0)), &g);
  EXPECT_EQ(g.initial_seed(), 555u);
  newer.reset();
  EXPECT_EQ(g_live_fake_generators.load(), 0);
  EXPECT_THROW(default_generator(Device(t, 0)), DeviceError);
}

TEST(DefaultGeneratorTest, RemovingTheNewestFactoryFallsBackToThePrevious) {
  const DeviceType t = DeviceType::register_type("gentest_c");
  RegistrationHandle older = register_generator_factory(t, fake_factory(1));
  {
    RegistrationHandle newer = register_generator_factory(t, fake_factory(2));
    EXPECT_EQ(default_generator(Device(t, 0)).initial_seed(), 2u);
  }
  EXPECT_EQ(default_generator(Device(t, 0)).initial_seed(), 1u);
}

TEST(DefaultGeneratorTest, OverridingCpuAndRemovingKeepsTheBuiltInDefault) {
  Generator& cpu = default_generator();
  cpu.manual_seed(31337);
  {
    RegistrationHandle h = register_generator_factory(DeviceType::cpu(), fake_factory(9));
    // The existing default generator stays: it was handed out by reference.
    EXPECT_EQ(&default_generator(), &cpu);
  }
  EXPECT_EQ(&default_generator(), &cpu);
  EXPECT_EQ(default_generator().initial_seed(), 31337u);
}

TEST(DefaultGeneratorTest, AFactoryMayAskForAnotherDefaultGenerator) {
  // A device generator seeding itself from the CPU one must not deadlock.
  const DeviceType t = DeviceType::register_type("gentest_d");
  RegistrationHandle h = register_generator_factory(t, [](Device d) {
    return std::make_unique<FakeDeviceGenerator>(d, default_generator().initial_seed() + 1);
  });
  manual_seed(10);
  EXPECT_EQ(default_generator(Device(t, 0)).initial_seed(), 11u);
}

TEST(DefaultGeneratorTest, BadFactories) {
  const DeviceType t = DeviceType::register_type("gentest_e");
  EXPECT_THROW(register_generator_factory(t, GeneratorFactory()), RegistrationError);
  RegistrationHandle h = register_generator_factory(t, [](Device) { return nullptr; });
  try {
    default_generator(Device(t, 0));
    FAIL() << "no DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("the generator factory for device type 'gentest_e' returned "
                                    "null"));
  }
}

TEST(DefaultGeneratorTest, ConcurrentFirstUseMakesOneGenerator) {
  const DeviceType t = DeviceType::register_type("gentest_f");
  RegistrationHandle h = register_generator_factory(t, fake_factory(3));
  std::vector<Generator*> seen(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { seen[i] = &default_generator(Device(t, 0)); });
  }
  for (auto& th : threads) th.join();
  for (Generator* g : seen) EXPECT_EQ(g, seen[0]);
  h.reset();
  EXPECT_EQ(g_live_fake_generators.load(), 0);
}

}  // namespace
}  // namespace loom
