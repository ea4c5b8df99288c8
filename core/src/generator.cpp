#include "loom/core/generator.h"

#include <array>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "loom/core/error.h"

namespace loom {

CPUGenerator::CPUGenerator(uint64_t seed) : seed_(seed), engine_(seed) {}

void CPUGenerator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  engine_.seed(seed);
}

uint64_t CPUGenerator::initial_seed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seed_;
}

uint64_t CPUGenerator::next_u64() {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_();
}

std::string CPUGenerator::get_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream os;
  os << seed_ << ' ' << engine_;
  return os.str();
}

void CPUGenerator::set_state(const std::string& state) {
  std::istringstream is(state);
  uint64_t seed = 0;
  std::mt19937_64 engine;
  is >> seed >> engine;
  LOOM_CHECK(!is.fail(), "CPUGenerator.set_state: the state string is malformed (", state.size(),
             " bytes; expected the output of get_state())");
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  engine_ = engine;
}

namespace {
struct DefaultGenerator {
  uint64_t factory_id;  // which registration made it: only that one's removal destroys it
  std::unique_ptr<Generator> generator;
};
struct GeneratorRegistry {
  std::mutex mu;
  std::array<std::vector<std::pair<uint64_t, GeneratorFactory>>, kMaxDeviceTypes> factories;
  uint64_t next_id = 1;
  // Default generators are handed out by reference and live until the factory that made
  // them is unregistered (or forever, for the built-in CPU factory).
  std::unordered_map<int, DefaultGenerator> defaults;  // key: type.id * 65536 + index
  GeneratorRegistry() {
    factories[0].emplace_back(0, [](Device) { return std::make_unique<CPUGenerator>(); });
  }
};
GeneratorRegistry& registry() {
  static auto* r = new GeneratorRegistry();  // leaked: generators are used until exit
  return *r;
}
bool is_registered(const GeneratorRegistry& r, DeviceType type, uint64_t factory_id) {
  for (const auto& [id, f] : r.factories[type.id]) {
    if (id == factory_id) return true;
  }
  return false;
}
}  // namespace

RegistrationHandle register_generator_factory(DeviceType type, GeneratorFactory factory) {
  LOOM_CHECK_T(RegistrationError, static_cast<bool>(factory), "register_generator_factory(",
               type.name(), "): the factory is empty");
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const uint64_t id = r.next_id++;
  r.factories[type.id].emplace_back(id, std::move(factory));
  return RegistrationHandle([type, id] {
    // Generators made by the departing factory may hold code of a plugin about to be
    // unloaded, so they go now; those made by other factories stay (they are handed out
    // by reference). They are destroyed outside the lock, after it is released.
    std::vector<std::unique_ptr<Generator>> departing;
    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    std::erase_if(reg.factories[type.id], [id](const auto& entry) { return entry.first == id; });
    for (auto it = reg.defaults.begin(); it != reg.defaults.end();) {
      if (it->second.factory_id == id) {
        departing.push_back(std::move(it->second.generator));
        it = reg.defaults.erase(it);
      } else {
        ++it;
      }
    }
  });
}

Generator& default_generator(Device d) {
  auto& r = registry();
  const int index = d.index() < 0 ? 0 : d.index();
  const int key = d.type().id * 65536 + index;
  for (;;) {
    GeneratorFactory factory;
    uint64_t factory_id = 0;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.defaults.find(key);
      if (it != r.defaults.end()) return *it->second.generator;
      auto& f = r.factories[d.type().id];
      LOOM_CHECK_T(DeviceError, !f.empty(), "default_generator(", d.str(),
                   "): no generator is registered for device type '", d.type().name(), "'");
      factory_id = f.back().first;
      factory = f.back().second;
    }
    // The factory runs without the lock: it may well ask for another default generator
    // (to seed itself from the CPU one, say).
    std::unique_ptr<Generator> made = factory(Device(d.type(), static_cast<int16_t>(index)));
    LOOM_CHECK_T(DeviceError, made != nullptr, "default_generator(", d.str(),
                 "): the generator factory for device type '", d.type().name(), "' returned null");
    std::lock_guard<std::mutex> lock(r.mu);  // declared after `made`: released before it dies
    if (!is_registered(r, d.type(), factory_id)) continue;  // unregistered meanwhile: again
    auto [it, inserted] = r.defaults.try_emplace(key, DefaultGenerator{factory_id, nullptr});
    if (inserted) it->second.generator = std::move(made);  // else another thread won the race
    return *it->second.generator;
  }
}

void manual_seed(uint64_t seed) {
  default_generator(Device());  // the CPU generator always exists
  auto& r = registry();
  // Under the lock: a handle released on another thread may be destroying generators.
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [key, entry] : r.defaults) entry.generator->manual_seed(seed);
}

}  // namespace loom
