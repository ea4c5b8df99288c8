#pragma once
/// @file
/// The default generator of a CUDA device (Note [Philox state] in generator.cpp).

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "loom/core/generator.h"

namespace loom::cuda {

/// Philox state of one CUDA device: a seed and an offset that every random kernel advances.
class PhiloxGenerator final : public Generator {
 public:
  /// PyTorch's default seed, so that unseeded runs match its habits.
  explicit PhiloxGenerator(Device device, uint64_t seed = 67280421310721ULL);
  /// Reseeds and resets the offset to 0.
  void manual_seed(uint64_t seed) override;
  uint64_t initial_seed() const override;
  /// 64 bits for host-side draws (advances the offset by one).
  uint64_t next_u64() override;
  /// "philox <seed> <offset>".
  std::string get_state() const override;
  void set_state(const std::string& state) override;
  Device device() const override { return device_; }
  /// {seed, offset} for one kernel; advances the offset by increment rounded up to 4.
  std::pair<uint64_t, uint64_t> seed_offset(uint64_t increment);

 private:
  mutable std::mutex mu_;
  Device device_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace loom::cuda
