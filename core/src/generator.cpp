#include "loom/core/generator.h"

#include <array>
#include <sstream>
#include <unordered_map>

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
  LOOM_CHECK(!is.fail(), "CPUGenerator.set_state: the state string is malformed (",
             state.size(), " bytes; expected the output of get_state())");
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  engine_ = engine;
}

namespace {
struct GeneratorRegistry {
  std::mutex mu;
  std::array<std::vector<std::pair<uint64_t, GeneratorFactory>>, kMaxDeviceTypes> factories;
  uint64_t next_id = 1;
  // Default generators live as long as the process (handed out by reference).
  std::unordered_map<int, std::unique_ptr<Generator>> defaults;  // key: type.id * 65536 + index
  GeneratorRegistry() {
    factories[0].emplace_back(0, [](Device) { return std::make_unique<CPUGenerator>(); });
  }
};
GeneratorRegistry& registry() {
  static auto* r = new GeneratorRegistry();  // leaked: generators are used until exit
  return *r;
}
}  // namespace

RegistrationHandle register_generator_factory(DeviceType type, GeneratorFactory factory) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const uint64_t id = r.next_id++;
  r.factories[type.id].emplace_back(id, std::move(factory));
  return RegistrationHandle([type, id] {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    auto& f = reg.factories[type.id];
    std::erase_if(f, [id](const auto& entry) { return entry.first == id; });
    // Generators made by the departing factory may hold code of an unloaded plugin.
    for (auto it = reg.defaults.begin(); it != reg.defaults.end();) {
      it = it->first / 65536 == type.id ? reg.defaults.erase(it) : std::next(it);
    }
  });
}

Generator& default_generator(Device d) {
  auto& r = registry();
  const int index = d.index() < 0 ? 0 : d.index();
  const int key = d.type().id * 65536 + index;
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.defaults.find(key);
  if (it != r.defaults.end()) return *it->second;
  auto& f = r.factories[d.type().id];
  LOOM_CHECK_T(DeviceError, !f.empty(), "default_generator(", d.str(),
               "): no generator is registered for device type '", d.type().name(), "'");
  auto gen = f.back().second(Device(d.type(), static_cast<int16_t>(index)));
  Generator& ref = *gen;
  r.defaults.emplace(key, std::move(gen));
  return ref;
}

void manual_seed(uint64_t seed) {
  auto& r = registry();
  std::vector<Generator*> gens;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& [k, g] : r.defaults) gens.push_back(g.get());
  }
  default_generator(Device()).manual_seed(seed);
  for (Generator* g : gens) g->manual_seed(seed);
}

}  // namespace loom
