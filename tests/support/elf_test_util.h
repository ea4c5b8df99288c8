#pragma once
// Reading a shared library's ELF layout in tests that craft broken plugin files (truncated
// copies, Note [Checking a plugin file before dlopen] in dispatcher/src/plugin_loader.cpp).

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace loom::testing {

/// Where the last byte of the PT_LOAD segments of elf (a whole 64-bit ELF file) ends: a copy
/// cut before it would make dlopen die of SIGBUS.
inline uint64_t end_of_loaded_bytes(const std::string& elf) {
  Elf64_Ehdr h;
  std::memcpy(&h, elf.data(), sizeof(h));
  uint64_t end = 0;
  for (unsigned i = 0; i < h.e_phnum; ++i) {
    Elf64_Phdr p;
    std::memcpy(&p, elf.data() + h.e_phoff + i * sizeof(p), sizeof(p));
    if (p.p_type == PT_LOAD) end = std::max<uint64_t>(end, p.p_offset + p.p_filesz);
  }
  return end;
}

}  // namespace loom::testing
