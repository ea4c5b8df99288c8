#pragma once
/// @file
/// Random number generators: seedable, one default generator per device.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "loom/core/device.h"
#include "loom/core/registration.h"

namespace loom {

/// A source of random bits for one device. Thread-safe.
class Generator {
 public:
  virtual ~Generator() = default;
  /// Reseeds (also resets any stream offset).
  virtual void manual_seed(uint64_t seed) = 0;
  /// The seed last set.
  virtual uint64_t initial_seed() const = 0;
  /// 64 random bits.
  virtual uint64_t next_u64() = 0;
  /// Opaque state for checkpointing.
  virtual std::string get_state() const = 0;
  /// Restores get_state(); throws ValueError on a malformed state.
  virtual void set_state(const std::string& state) = 0;
  /// The device this generator serves.
  virtual Device device() const = 0;
  /// A uniform double in [0, 1) with 53 random bits.
  double next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
};

/// The CPU generator: a 64-bit Mersenne Twister (mt19937_64).
class CPUGenerator final : public Generator {
 public:
  /// Seeded with seed (PyTorch's default seed is 67280421310721).
  explicit CPUGenerator(uint64_t seed = 67280421310721ULL);
  void manual_seed(uint64_t seed) override;
  uint64_t initial_seed() const override;
  uint64_t next_u64() override;
  std::string get_state() const override;
  void set_state(const std::string& state) override;
  Device device() const override { return Device(); }

 private:
  mutable std::mutex mu_;
  uint64_t seed_;
  std::mt19937_64 engine_;
};

/// Makes the default generator for one device of a registered type.
using GeneratorFactory = std::function<std::unique_ptr<Generator>(Device)>;
/// Registers how default generators of a device type are made (plugins for their devices).
/// The newest registration makes the generators not made yet; destroying the handle
/// destroys the default generators this registration made, and only those. Throws
/// RegistrationError for an empty factory.
RegistrationHandle register_generator_factory(DeviceType type, GeneratorFactory factory);
/// The default generator of device d (index -1 is treated as 0). Throws DeviceError if
/// the device type has no generator factory.
Generator& default_generator(Device d = Device());
/// Seeds the default generator of every device that has one (torch.manual_seed). Each
/// Generator::manual_seed runs under the registry's lock, so it must not call back into
/// default_generator or register_generator_factory.
void manual_seed(uint64_t seed);

}  // namespace loom
