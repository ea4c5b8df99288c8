// libFuzzer target for the safetensors reader (Note [Checked load] in
// plugins/data/include/loom/data/safetensors.h): any input must either parse or throw
// loom::Error — never crash, hang, read out of bounds or allocate without bound. See README.md.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "loom/data/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const loom::data::safetensors::File f = loom::data::safetensors::deserialize(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input");
    // Touch what was read, so a bad size or offset would show under ASan.
    size_t sum = 0;
    for (const auto& [name, t] : f.tensors) {
      const auto* p = static_cast<const uint8_t*>(t.data_ptr());
      const size_t n = static_cast<size_t>(t.numel()) * t.element_size();
      if (n > 0) sum += p[0] + p[n - 1] + name.size();
    }
    for (const auto& [k, v] : f.metadata) sum += k.size() + v.size();
    volatile size_t sink = sum;
    (void)sink;
  } catch (const loom::Error&) {
    // Refused with a message: the expected outcome for malformed input.
  }
  return 0;
}
