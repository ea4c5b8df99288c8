// SGD (torch.optim.SGD) over optim::sgd_step_.
#include "loom/optim/sgd.h"

#include "loom/ops/core.h"
#include "loom/optim/ops.h"
#include "src/json_util.h"

namespace loom::optim {

using nlohmann::json;

std::string SGDOptions::to_json() const {
  return json{{"lr", lr()},
              {"momentum", momentum()},
              {"dampening", dampening()},
              {"weight_decay", weight_decay()},
              {"nesterov", nesterov()},
              {"maximize", maximize()}}
      .dump();
}

void SGDOptions::from_json(std::string_view text) {
  constexpr std::string_view where = "SGDOptions.from_json";
  const json j = detail::parse_json(text, where);
  lr(detail::get<double>(j, "lr", where));
  momentum(detail::get<double>(j, "momentum", where));
  dampening(detail::get<double>(j, "dampening", where));
  weight_decay(detail::get<double>(j, "weight_decay", where));
  nesterov(detail::get<bool>(j, "nesterov", where));
  maximize(detail::get<bool>(j, "maximize", where));
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

SGD::SGD(const std::vector<ParamGroup>& groups, const SGDOptions& defaults)
    : Optimizer(defaults.clone()) {
  check_options(defaults);
  add_groups(groups);
}

void SGD::check_options(const OptimizerOptions& base) const {
  const auto& o = static_cast<const SGDOptions&>(base);
  LOOM_CHECK(0.0 <= o.lr(), "Invalid learning rate: ", o.lr());
  LOOM_CHECK(0.0 <= o.momentum(), "Invalid momentum value: ", o.momentum());
  LOOM_CHECK(0.0 <= o.weight_decay(), "Invalid weight_decay value: ", o.weight_decay());
  LOOM_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0),
             "Nesterov momentum requires a momentum and zero dampening");
}

void SGD::update(const Tensor& param, const Tensor& grad, ParamState& state,
                 const OptimizerOptions& base) {
  const auto& o = static_cast<const SGDOptions&>(base);
  std::optional<Tensor> buf;
  bool first = false;
  if (o.momentum() != 0) {
    auto it = state.tensors.find("momentum_buffer");
    if (it == state.tensors.end()) {
      // Written whole by the first step (it becomes the gradient).
      it = state.tensors.emplace("momentum_buffer", empty_like(param)).first;
      first = true;
    }
    buf = it->second;
  }
  sgd_step_(param, grad, buf, o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(),
            o.maximize(), first);
}

}  // namespace loom::optim
