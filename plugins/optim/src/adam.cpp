// Adam and AdamW (torch.optim.Adam, torch.optim.AdamW) over optim::adam_step_.
#include "loom/optim/adam.h"

#include "loom/ops/core.h"
#include "loom/optim/ops.h"
#include "src/json_util.h"

namespace loom::optim {

using nlohmann::json;

std::string AdamOptions::to_json() const {
  return json{{"lr", lr()},
              {"betas", {betas().first, betas().second}},
              {"eps", eps()},
              {"weight_decay", weight_decay()},
              {"amsgrad", amsgrad()},
              {"maximize", maximize()},
              {"decoupled_weight_decay", decoupled_weight_decay()}}
      .dump();
}

void AdamOptions::from_json(std::string_view text) {
  const std::string where = str_cat(type_name(), ".from_json");
  const json j = detail::parse_json(text, where);
  lr(detail::get<double>(j, "lr", where));
  const json& b = detail::member(j, "betas", where);
  LOOM_CHECK(b.is_array() && b.size() == 2 && b[0].is_number() && b[1].is_number(), where,
             ": 'betas' must be two numbers, got ", b.dump());
  betas({b[0].get<double>(), b[1].get<double>()});
  eps(detail::get<double>(j, "eps", where));
  weight_decay(detail::get<double>(j, "weight_decay", where));
  amsgrad(detail::get<bool>(j, "amsgrad", where));
  maximize(detail::get<bool>(j, "maximize", where));
  decoupled_weight_decay(detail::get<bool>(j, "decoupled_weight_decay", where));
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

Adam::Adam(const std::vector<ParamGroup>& groups, const AdamOptions& defaults)
    : Optimizer(defaults.clone()) {
  check_options(defaults);
  add_groups(groups);
}

Adam::Adam(std::unique_ptr<OptimizerOptions> defaults) : Optimizer(std::move(defaults)) {}

void Adam::check_options(const OptimizerOptions& base) const {
  const auto& o = static_cast<const AdamOptions&>(base);
  LOOM_CHECK(0.0 <= o.lr(), "Invalid learning rate: ", o.lr());
  LOOM_CHECK(0.0 <= o.eps(), "Invalid epsilon value: ", o.eps());
  LOOM_CHECK(0.0 <= o.betas().first && o.betas().first < 1.0,
             "Invalid beta parameter at index 0: ", o.betas().first);
  LOOM_CHECK(0.0 <= o.betas().second && o.betas().second < 1.0,
             "Invalid beta parameter at index 1: ", o.betas().second);
  LOOM_CHECK(0.0 <= o.weight_decay(), "Invalid weight_decay value: ", o.weight_decay());
}

void Adam::update(const Tensor& param, const Tensor& grad, ParamState& state,
                  const OptimizerOptions& base) {
  const auto& o = static_cast<const AdamOptions&>(base);
  auto& t = state.tensors;
  if (!t.contains("exp_avg")) {
    t["exp_avg"] = zeros_like(param);
    t["exp_avg_sq"] = zeros_like(param);
  }
  std::optional<Tensor> vmax;
  if (o.amsgrad()) {
    auto it = t.find("max_exp_avg_sq");
    if (it == t.end()) it = t.emplace("max_exp_avg_sq", zeros_like(param)).first;
    vmax = it->second;
  }
  state.step += 1;
  adam_step_(param, grad, t["exp_avg"], t["exp_avg_sq"], vmax, state.step, o.lr(), o.betas().first,
             o.betas().second, o.eps(), o.weight_decay(), o.amsgrad(), o.maximize(),
             o.decoupled_weight_decay());
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

AdamW::AdamW(const std::vector<ParamGroup>& groups, const AdamWOptions& defaults)
    : Adam(std::make_unique<AdamWOptions>(static_cast<const AdamOptions&>(defaults))) {
  check_options(defaults);
  add_groups(groups);
}

std::unique_ptr<OptimizerOptions> AdamW::adopt_options(const OptimizerOptions& options) const {
  // AdamWOptions(...).amsgrad(true) is an AdamOptions& (the setters are Adam's), so a group
  // may bring Adam's options: they become AdamW's, decoupled.
  const auto* adam = dynamic_cast<const AdamOptions*>(&options);
  LOOM_CHECK_T(TypeError, adam != nullptr, name(),
               ": a parameter group's options must be AdamWOptions, got ", options.type_name());
  return std::make_unique<AdamWOptions>(*adam);
}

}  // namespace loom::optim
