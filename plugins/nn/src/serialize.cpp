#include "loom/nn/serialize.h"

#include "loom/data/safetensors.h"

namespace loom::nn {

void save(const Module& module, const std::string& path) {
  data::safetensors::TensorList tensors;
  for (const auto& [key, t] : module.state_dict()) tensors.emplace_back(key, t);
  data::safetensors::save_file(path, tensors, {{"format", "loom.nn.state_dict"}});
}

LoadStateDictResult load(Module& module, const std::string& path, bool strict) {
  const data::safetensors::File file = data::safetensors::load_file(path);
  StateDict dict;
  for (const auto& [key, t] : file.tensors) dict.insert(key, t);
  return module.load_state_dict(dict, strict);
}

}  // namespace loom::nn
