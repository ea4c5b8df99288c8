#include "loom/nn/container.h"

namespace loom::nn {

namespace {
std::shared_ptr<Module> at_index(const std::vector<std::shared_ptr<Module>>& items, int64_t index,
                                 const char* container) {
  const auto n = static_cast<int64_t>(items.size());
  LOOM_CHECK_T(IndexError, index >= -n && index < n, "index ", index, " is out of range for a ",
               container, " of ", n, " modules");
  return items[static_cast<size_t>(index < 0 ? index + n : index)];
}
}  // namespace

Sequential::Sequential(
    std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> named) {
  for (const auto& [name, m] : named) register_module(name, m);
}

void Sequential::push_back(const std::string& name, std::shared_ptr<Module> module) {
  register_module(name, std::move(module));
}

std::shared_ptr<Module> Sequential::operator[](int64_t index) const {
  return at_index(children(), index, "Sequential");
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : children()) x = (*m)(x);
  return x;
}

void ModuleList::extend(const std::vector<std::shared_ptr<Module>>& others) {
  for (const auto& m : others) push_back(m);
}

std::shared_ptr<Module> ModuleList::operator[](int64_t index) const {
  return at_index(children(), index, "ModuleList");
}

ModuleDict::ModuleDict(
    std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> items) {
  for (const auto& [key, m] : items) register_module(key, m);
}

std::shared_ptr<Module> ModuleDict::operator[](const std::string& key) const {
  const auto children = named_children();
  const std::shared_ptr<Module>* m = children.find(key);
  LOOM_CHECK_T(IndexError, m != nullptr, "ModuleDict: no module \"", key, "\"");
  return *m;
}

}  // namespace loom::nn
