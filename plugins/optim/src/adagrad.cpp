// Adagrad (torch.optim.Adagrad) over optim::adagrad_step_.
#include "loom/optim/adagrad.h"

#include "loom/ops/core.h"
#include "loom/optim/ops.h"
#include "src/json_util.h"

namespace loom::optim {

using nlohmann::json;

std::string AdagradOptions::to_json() const {
  return json{{"lr", lr()},
              {"lr_decay", lr_decay()},
              {"weight_decay", weight_decay()},
              {"initial_accumulator_value", initial_accumulator_value()},
              {"eps", eps()},
              {"maximize", maximize()}}
      .dump();
}

void AdagradOptions::from_json(std::string_view text) {
  constexpr std::string_view where = "AdagradOptions.from_json";
  const json j = detail::parse_json(text, where);
  lr(detail::get<double>(j, "lr", where));
  lr_decay(detail::get<double>(j, "lr_decay", where));
  weight_decay(detail::get<double>(j, "weight_decay", where));
  initial_accumulator_value(detail::get<double>(j, "initial_accumulator_value", where));
  eps(detail::get<double>(j, "eps", where));
  maximize(detail::get<bool>(j, "maximize", where));
}

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adagrad::Adagrad(const std::vector<ParamGroup>& groups, const AdagradOptions& defaults)
    : Optimizer(defaults.clone()) {
  check_options(defaults);
  add_groups(groups);
}

void Adagrad::check_options(const OptimizerOptions& base) const {
  const auto& o = static_cast<const AdagradOptions&>(base);
  LOOM_CHECK(0.0 <= o.lr(), "Invalid learning rate: ", o.lr());
  LOOM_CHECK(0.0 <= o.lr_decay(), "Invalid lr_decay value: ", o.lr_decay());
  LOOM_CHECK(0.0 <= o.weight_decay(), "Invalid weight_decay value: ", o.weight_decay());
  LOOM_CHECK(0.0 <= o.initial_accumulator_value(),
             "Invalid initial_accumulator_value value: ", o.initial_accumulator_value());
  LOOM_CHECK(0.0 <= o.eps(), "Invalid epsilon value: ", o.eps());
}

void Adagrad::update(const Tensor& param, const Tensor& grad, ParamState& state,
                     const OptimizerOptions& base) {
  const auto& o = static_cast<const AdagradOptions&>(base);
  auto it = state.tensors.find("sum");
  if (it == state.tensors.end()) {
    it = state.tensors.emplace("sum", full_like(param, o.initial_accumulator_value())).first;
  }
  state.step += 1;
  adagrad_step_(param, grad, it->second, state.step, o.lr(), o.lr_decay(), o.weight_decay(),
                o.eps(), o.maximize());
}

}  // namespace loom::optim
