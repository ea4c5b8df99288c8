// RMSprop (torch.optim.RMSprop) over optim::rmsprop_step_.
#include "loom/optim/rmsprop.h"

#include "loom/ops/core.h"
#include "loom/optim/ops.h"
#include "src/json_util.h"

namespace loom::optim {

using nlohmann::json;

std::string RMSpropOptions::to_json() const {
  return json{{"lr", lr()},
              {"alpha", alpha()},
              {"eps", eps()},
              {"weight_decay", weight_decay()},
              {"momentum", momentum()},
              {"centered", centered()},
              {"maximize", maximize()}}
      .dump();
}

void RMSpropOptions::from_json(std::string_view text) {
  constexpr std::string_view where = "RMSpropOptions.from_json";
  const json j = detail::parse_json(text, where);
  lr(detail::get<double>(j, "lr", where));
  alpha(detail::get<double>(j, "alpha", where));
  eps(detail::get<double>(j, "eps", where));
  weight_decay(detail::get<double>(j, "weight_decay", where));
  momentum(detail::get<double>(j, "momentum", where));
  centered(detail::get<bool>(j, "centered", where));
  maximize(detail::get<bool>(j, "maximize", where));
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

RMSprop::RMSprop(const std::vector<ParamGroup>& groups, const RMSpropOptions& defaults)
    : Optimizer(defaults.clone()) {
  check_options(defaults);
  add_groups(groups);
}

void RMSprop::check_options(const OptimizerOptions& base) const {
  const auto& o = static_cast<const RMSpropOptions&>(base);
  LOOM_CHECK(0.0 <= o.lr(), "Invalid learning rate: ", o.lr());
  LOOM_CHECK(0.0 <= o.eps(), "Invalid epsilon value: ", o.eps());
  LOOM_CHECK(0.0 <= o.momentum(), "Invalid momentum value: ", o.momentum());
  LOOM_CHECK(0.0 <= o.weight_decay(), "Invalid weight_decay value: ", o.weight_decay());
  LOOM_CHECK(0.0 <= o.alpha(), "Invalid alpha value: ", o.alpha());
}

void RMSprop::update(const Tensor& param, const Tensor& grad, ParamState& state,
                     const OptimizerOptions& base) {
  const auto& o = static_cast<const RMSpropOptions&>(base);
  auto& t = state.tensors;
  // As PyTorch: every buffer starts at zero, made on first need.
  auto buffer = [&](const char* name) -> Tensor {
    auto it = t.find(name);
    if (it == t.end()) it = t.emplace(name, zeros_like(param)).first;
    return it->second;
  };
  const Tensor square_avg = buffer("square_avg");
  std::optional<Tensor> grad_avg, momentum_buffer;
  if (o.centered()) grad_avg = buffer("grad_avg");
  if (o.momentum() > 0) momentum_buffer = buffer("momentum_buffer");
  state.step += 1;
  rmsprop_step_(param, grad, square_avg, grad_avg, momentum_buffer, o.lr(), o.alpha(), o.eps(),
                o.weight_decay(), o.momentum(), o.centered(), o.maximize());
}

}  // namespace loom::optim
