#pragma once
/// @file
/// The CUDA device hooks and the compiled-architecture check of `loom info`.

#include <string>
#include <utility>
#include <vector>

#include "loom/core/device_hooks.h"
#include "runtime/diagnosis.h"

namespace loom::cuda {

/// The parsed LOOM_CUDA_ARCHITECTURES list the plugin was compiled with.
std::vector<CompiledArch> compiled_architectures();

/// DeviceHooks of the "cuda" device type.
class CudaHooks final : public DeviceHooks {
 public:
  int device_count() const override;
  std::string unavailable_reason() const override;
  int16_t current_device() const override;
  void set_current_device(int16_t index) const override;
  void* current_stream(int16_t index) const override;
  void synchronize(int16_t index) const override;
  Allocator* pinned_host_allocator() const override;
  std::vector<std::pair<std::string, std::string>> info() const override;
  void* create_stream(int16_t index) const override;
  void destroy_stream(int16_t index, void* stream) const override;
  void set_current_stream(int16_t index, void* stream) const override;
  void synchronize_stream(void* stream) const override;
  bool query_stream(void* stream) const override;
  void* create_event(int16_t index, bool timing) const override;
  void destroy_event(void* event) const override;
  void record_event(void* event, void* stream) const override;
  void wait_event(void* stream, void* event) const override;
  void synchronize_event(void* event) const override;
  bool query_event(void* event) const override;
  double event_elapsed_ms(void* start, void* end) const override;
  bool is_pinned(const void* ptr) const override;
  AllocatorStats memory_stats(int16_t index) const override;
  std::string memory_summary(int16_t index) const override;
  void record_stream(const void* ptr, void* stream) const override;
};

/// The plugin's hooks object (a static of the plugin).
CudaHooks& hooks();

}  // namespace loom::cuda
