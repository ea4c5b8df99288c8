#pragma once
/// @file
/// The CUDA device hooks and the compiled-architecture check of `loom info`.

#include <string>
#include <utility>
#include <vector>

#include "loom/core/device_hooks.h"

namespace loom::cuda {

/// One entry of the architectures the plugin was compiled for (LOOM_CUDA_ARCHITECTURES).
struct CompiledArch {
  int capability = 0;     ///< 90 for sm_90
  bool sass = false;      ///< machine code is embedded ("-real")
  bool ptx = false;       ///< PTX is embedded ("-virtual"), JIT-compiled for newer GPUs
  bool specific = false;  ///< an "a" variant (sm_90a): runs only on exactly that version
};

/// The parsed LOOM_CUDA_ARCHITECTURES list.
std::vector<CompiledArch> compiled_architectures();
/// "sm_90 (SASS), compute_90 (PTX)".
std::string compiled_architectures_text();
/// True if a GPU of this compute capability (major * 10 + minor) can run the plugin's kernels.
bool runs_on(int capability);

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
};

/// The plugin's hooks object (a static of the plugin).
CudaHooks& hooks();

}  // namespace loom::cuda
