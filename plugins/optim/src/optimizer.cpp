// The optimizer base: groups, step, zero_grad, state dicts (Note [Optimizer state dicts]).
#include "loom/optim/optimizer.h"

#include <nlohmann/json.hpp>
#include <typeinfo>
#include <unordered_set>

#include "loom/autograd/grad_mode.h"
#include "loom/dispatcher/plugin_loader.h"
#include "loom/ops/core.h"
#include "loom/ops/tensor_methods.h"
#include "loom/profiler/profiler.h"
#include "loom/optim/ops.h"
#include "src/json_util.h"

namespace loom::optim {

namespace detail {
void require_optim_ops() {
  // A failed load throws out of the initializer, so the next call tries again.
  static const bool loaded = [] {
    PluginLoader::instance().load("ops_optim");
    return true;
  }();
  (void)loaded;
}
}  // namespace detail

using nlohmann::json;

void OptimizerOptions::set_momentum(double) {
  LOOM_THROW(ValueError, type_name(), " has no momentum or beta1 to set");
}

Optimizer::Optimizer(std::unique_ptr<OptimizerOptions> defaults) : defaults_(std::move(defaults)) {}

Optimizer::~Optimizer() = default;

std::unique_ptr<OptimizerOptions> Optimizer::adopt_options(const OptimizerOptions& options) const {
  LOOM_CHECK_T(TypeError, typeid(options) == typeid(*defaults_), name(),
               ": a parameter group's options must be ", defaults_->type_name(), ", got ",
               options.type_name());
  return options.clone();
}

void Optimizer::add_groups(const std::vector<ParamGroup>& groups) {
  LOOM_CHECK(!groups.empty(), "optimizer got an empty parameter list");
  for (const ParamGroup& g : groups) add_param_group(g);
}

void Optimizer::add_param_group(const ParamGroup& group) {
  LOOM_CHECK(!group.params.empty(), "optimizer got an empty parameter list");
  std::unordered_set<const TensorImpl*> seen;
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    LOOM_CHECK_T(TypeError, p.defined(), "optimizer can only optimize Tensors, but parameter ", i,
                 " of the group is an undefined Tensor");
    LOOM_CHECK(p.is_leaf(), "can't optimize a non-leaf Tensor (parameter ", i, " of the group, ",
               p.describe(), ")");
    LOOM_CHECK(seen.insert(p.impl()).second,
               "optimizer contains a parameter group with duplicate parameters (parameter ", i,
               ", ", p.describe(), ")");
  }
  for (const ParamGroup& other : groups_) {
    for (const Tensor& p : other.params) {
      LOOM_CHECK(!seen.contains(p.impl()),
                 "some parameters appear in more than one parameter group");
    }
  }
  std::unique_ptr<OptimizerOptions> options =
      group.options ? adopt_options(*group.options) : defaults_->clone();
  check_options(*options);
  ParamGroup added(group.params);
  added.options = std::move(options);
  added.initial_lr = group.initial_lr;
  groups_.push_back(std::move(added));
}

Tensor Optimizer::step(const LossClosure& closure) {
  // A profiler range, named as PyTorch's ("Optimizer.step#Adam.step").
  const profiler::Range range(profiler::is_recording() ? "Optimizer.step#" + std::string(name()) + ".step"
                                            : std::string());
  Tensor loss;
  if (closure) {
    autograd::EnableGradGuard enable;
    loss = closure();
  }
  autograd::NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const ParamGroup& group = groups_[gi];
    // param_groups() is writable, as in PyTorch: options replaced since must still fit.
    LOOM_CHECK_T(TypeError, group.options && typeid(*group.options) == typeid(*defaults_), name(),
                 ".step: the options of parameter group ", gi, " are ",
                 group.options ? group.options->type_name() : std::string_view("missing"),
                 ", expected ", defaults_->type_name());
    for (const Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      update(p, grad, state_[p.impl()], *group.options);
    }
  }
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  autograd::NoGradGuard no_grad;
  for (const ParamGroup& group : groups_) {
    for (const Tensor& p : group.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
        continue;
      }
      // As PyTorch: a gradient with history (create_graph) is cut loose before zeroing.
      if (grad.grad_fn()) {
        grad = grad.detach();
        p.set_grad(grad);
      } else if (grad.requires_grad()) {
        grad.set_requires_grad(false);
      }
      grad.zero_();
    }
  }
}

// ---------------------------------------------------------------------------- state dicts

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict out;
  json groups = json::array();
  json state = json::object();
  int64_t index = 0;
  for (const ParamGroup& group : groups_) {
    json g = json::parse(group.options->to_json());
    json params = json::array();
    for (const Tensor& p : group.params) {
      params.push_back(index);
      if (auto it = state_.find(p.impl()); it != state_.end()) {
        const ParamState& s = it->second;
        state[std::to_string(index)] = json{{"step", s.step}};
        for (const auto& [name, t] : s.tensors) {
          out.tensors[str_cat("state.", index, ".", name)] = t.detach();
        }
      }
      ++index;
    }
    g["params"] = std::move(params);
    if (group.initial_lr) g["initial_lr"] = *group.initial_lr;
    groups.push_back(std::move(g));
  }
  out.json =
      json{{"optimizer", std::string(name())}, {"param_groups", groups}, {"state", state}}.dump();
  return out;
}

void Optimizer::load_state_dict(const OptimizerStateDict& state_dict) {
  const json root = detail::parse_json(state_dict.json, "Optimizer.load_state_dict");
  const std::string where = str_cat(name(), ".load_state_dict");
  const std::string saved_by = detail::get<std::string>(root, "optimizer", where);
  LOOM_CHECK(saved_by == name(), where, ": the state dict was saved by ", saved_by, ", not by ",
             name());
  const json& groups = detail::member(root, "param_groups", where);
  LOOM_CHECK(groups.is_array() && groups.size() == groups_.size(),
             "loaded state dict has a different number of parameter groups");
  // Check everything before changing anything, so a failed load leaves the optimizer as it was.
  std::vector<const Tensor*> params;
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const json& g = groups[gi];
    const json& indices = detail::member(g, "params", where);
    LOOM_CHECK(indices.is_array() && indices.size() == groups_[gi].params.size(),
               "loaded state dict contains a parameter group that doesn't match the size of "
               "optimizer's group");
    for (const Tensor& p : groups_[gi].params) params.push_back(&p);
    json fields = g;
    fields.erase("params");
    fields.erase("initial_lr");
    auto o = groups_[gi].options->clone();
    o->from_json(fields.dump());
    check_options(*o);
    options.push_back(std::move(o));
  }
  std::unordered_map<const TensorImpl*, ParamState> state;
  const json& saved_state = detail::member(root, "state", where);
  for (const auto& [key, value] : saved_state.items()) {
    size_t index = 0;
    try {
      index = std::stoul(key);
    } catch (const std::exception&) {
      LOOM_THROW(ValueError, where, ": state key '", key, "' is not a parameter index");
    }
    LOOM_CHECK(index < params.size(), where, ": state for parameter ", index,
               " but the groups hold ", params.size(), " parameters");
    state[params[index]->impl()].step = detail::get<int64_t>(value, "step", where);
  }
  for (const auto& [key, t] : state_dict.tensors) {
    // "state.<index>.<name>"
    const size_t dot = key.find('.', 6);
    LOOM_CHECK(key.starts_with("state.") && dot != std::string::npos, where, ": unexpected key '",
               key, "' (expected state.<param index>.<name>)");
    size_t index = 0;
    try {
      index = std::stoul(key.substr(6, dot - 6));
    } catch (const std::exception&) {
      LOOM_THROW(ValueError, where, ": unexpected key '", key,
                 "' (expected state.<param index>.<name>)");
    }
    LOOM_CHECK(index < params.size(), where, ": '", key, "' names parameter ", index,
               " but the groups hold ", params.size(), " parameters");
    const Tensor& p = *params[index];
    LOOM_CHECK(t.defined(), where, ": '", key, "' is an undefined tensor");
    LOOM_CHECK(t.sizes() == p.sizes(), where, ": size mismatch for ", key,
               ": copying a tensor with shape ", sizes_str(t.sizes()),
               " from the state dict, the shape of parameter ", index, " is ",
               sizes_str(p.sizes()));
    state[p.impl()].tensors[key.substr(dot + 1)] =
        t.detach().to(p.device()).to(p.dtype()).clone().detach();
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    groups_[gi].options = std::move(options[gi]);
    const json& g = groups[gi];
    if (auto it = g.find("initial_lr"); it != g.end() && it->is_number()) {
      groups_[gi].initial_lr = it->get<double>();
    } else {
      groups_[gi].initial_lr.reset();
    }
  }
  state_ = std::move(state);
}

}  // namespace loom::optim
