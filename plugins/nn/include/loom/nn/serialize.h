#pragma once
/// @file
/// Saving and loading a module's state dict as a safetensors file (loom::data::safetensors),
/// the checkpoint format of the training design: one tensor per state_dict() key.

#include <string>

#include "loom/nn/module.h"

namespace loom::nn {

/// Writes module.state_dict() to path as safetensors, atomically (Note [Atomic save] in
/// loom/data/safetensors.h); metadata "format" is "loom.nn.state_dict". Throws ValueError
/// when the file cannot be written.
void save(const Module& module, const std::string& path);

/// Reads a safetensors file written by save (or by PyTorch's safetensors.torch.save_file of a
/// state dict) into module with load_state_dict(dict, strict); returns what a non-strict load
/// skipped. Throws ValueError for a malformed file or a state dict that does not fit.
LoadStateDictResult load(Module& module, const std::string& path, bool strict = true);

}  // namespace loom::nn
