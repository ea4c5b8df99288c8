// The default generators of CUDA devices: Philox counter-based state (seed, offset).
//
// Note [Philox state]: a CUDA random kernel does not carry a generator object; each thread
// computes philox4x32(key = seed, counter = (offset, subsequence = thread id)). A kernel takes
// {seed, offset} from philox_seed_offset(device, n), which advances the offset by the number
// of values each thread may draw, so the next kernel draws fresh numbers and a run is
// reproducible from the seed alone (PyTorch's PhiloxCudaState without graph capture).
#include "runtime/generator.h"

#include <sstream>

#include "loom/core/error.h"
#include "runtime/context.h"

namespace loom::cuda {

PhiloxGenerator::PhiloxGenerator(Device device, uint64_t seed) : device_(device), seed_(seed) {}

void PhiloxGenerator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t PhiloxGenerator::initial_seed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seed_;
}

uint64_t PhiloxGenerator::next_u64() {
  // Host-side draws (rare: a random permutation built on the host) use splitmix64 over
  // (seed, offset) and advance the same offset, so they too are reproducible from the seed.
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t z = seed_ + 0x9e3779b97f4a7c15ULL * (++offset_);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string PhiloxGenerator::get_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return "philox " + std::to_string(seed_) + " " + std::to_string(offset_);
}

void PhiloxGenerator::set_state(const std::string& state) {
  std::istringstream in(state);
  std::string tag;
  uint64_t seed = 0, offset = 0;
  in >> tag >> seed >> offset;
  LOOM_CHECK_T(ValueError, in && tag == "philox", "CUDA generator set_state: malformed state '",
               state, "' (expected 'philox <seed> <offset>', as get_state() returns)");
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  offset_ = offset;
}

std::pair<uint64_t, uint64_t> PhiloxGenerator::seed_offset(uint64_t increment) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::pair<uint64_t, uint64_t> result{seed_, offset_};
  offset_ += (increment + 3) / 4 * 4;  // Philox4x32 yields 4 values per counter
  return result;
}

std::pair<uint64_t, uint64_t> philox_seed_offset(int device, uint64_t increment) {
  if (device < 0) device = current_device();
  Generator& g = default_generator(Device(device_type(), static_cast<int16_t>(device)));
  return philox_seed_offset(g, increment);
}

std::pair<uint64_t, uint64_t> philox_seed_offset(Generator& g, uint64_t increment) {
  auto* p = dynamic_cast<PhiloxGenerator*>(&g);
  LOOM_CHECK_T(TypeError, p != nullptr, "CUDA random op: expected a CUDA generator, got one for ",
               g.device().str());
  return p->seed_offset(increment);
}

}  // namespace loom::cuda
