// The learning-rate schedulers (Note [Chainable schedulers] in loom/optim/lr_scheduler.h): each
// rule in PyTorch's recursive form, with its closed form where it has one.
#include "loom/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "src/json_util.h"

namespace loom::optim {

using nlohmann::json;

namespace {

/// Python's a % b for b > 0 (never negative).
int64_t floor_mod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return r < 0 ? r + b : r;
}

/// One value per group from a list of one (shared) or one per group, as PyTorch's
/// _format_param: "expected 2 values for max_lr, got 3".
std::vector<double> per_group(const std::vector<double>& values, size_t groups,
                              std::string_view what) {
  if (values.size() == 1) return std::vector<double>(groups, values[0]);
  LOOM_CHECK(values.size() == groups, "expected ", groups, " values for ", what, ", got ",
             values.size());
  return values;
}

}  // namespace

// ------------------------------------------------------------------------------- the base

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch)
    : optimizer_(optimizer), last_epoch_(last_epoch) {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    if (last_epoch == -1) {
      if (!groups[i].initial_lr) groups[i].initial_lr = groups[i].options->get_lr();
    } else {
      LOOM_CHECK(groups[i].initial_lr.has_value(),
                 "param 'initial_lr' is not specified in "
                 "param_groups[",
                 i, "] when resuming an optimizer");
    }
    base_lrs_.push_back(*groups[i].initial_lr);
  }
  last_lr_ = group_lrs();
}

LRScheduler::~LRScheduler() = default;

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> lrs;
  for (const ParamGroup& g : optimizer_.param_groups()) lrs.push_back(g.options->get_lr());
  return lrs;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size() && i < lrs.size(); ++i) groups[i].options->set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply(get_lr());
}

void LRScheduler::step(int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  std::optional<std::vector<double>> closed = closed_form_lr();
  apply(closed ? *closed : get_lr());
}

std::string LRScheduler::state_dict() const {
  return json{{"scheduler", std::string(name())},
              {"last_epoch", last_epoch_},
              {"step_count", step_count_},
              {"base_lrs", base_lrs_},
              {"last_lr", last_lr_}}
      .dump();
}

void LRScheduler::load_state_dict(std::string_view state) {
  const std::string where = str_cat(name(), ".load_state_dict");
  const json j = detail::parse_json(state, where);
  const std::string kind = detail::get<std::string>(j, "scheduler", where);
  LOOM_CHECK(kind == name(), where, ": the state dict was saved by ", kind, ", not by ", name());
  const auto last_epoch = detail::get<int64_t>(j, "last_epoch", where);
  const auto step_count = detail::get<int64_t>(j, "step_count", where);
  auto base_lrs = detail::get<std::vector<double>>(j, "base_lrs", where);
  auto last_lr = detail::get<std::vector<double>>(j, "last_lr", where);
  // get_lr() reads one entry per parameter group: a state dict of another optimizer must not
  // make it read past the end.
  const size_t groups = optimizer_.param_groups().size();
  LOOM_CHECK(base_lrs.size() == groups && last_lr.size() == groups, where,
             ": the state dict has ", base_lrs.size(), " base_lrs and ", last_lr.size(),
             " last_lr entries, but the optimizer has ", groups, " parameter groups");
  LOOM_CHECK(last_epoch >= -1 && step_count >= 0, where, ": last_epoch (", last_epoch,
             ") must be >= -1 and step_count (", step_count, ") >= 0");
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  base_lrs_ = std::move(base_lrs);
  last_lr_ = std::move(last_lr);
}

// --------------------------------------------------------------------------------- StepLR

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), step_size_(step_size), gamma_(gamma) {
  LOOM_CHECK(step_size > 0, "StepLR: expected a positive step_size, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  const int64_t decays = last_epoch_ / step_size_;  // whole periods passed (Python's //)
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(decays)));
  }
  return lrs;
}

// ---------------------------------------------------------------------------- MultiStepLR

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma,
                         int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return lrs;
  for (double& lr : lrs) lr *= std::pow(gamma_, static_cast<double>(count));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(passed)));
  return lrs;
}

// -------------------------------------------------------------------------- ExponentialLR

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  }
  return lrs;
}

// ---------------------------------------------------------------------- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min,
                                     int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), t_max_(T_max), eta_min_(eta_min) {
  LOOM_CHECK(T_max > 0, "CosineAnnealingLR: expected a positive T_max, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() const {
  constexpr double pi = std::numbers::pi;
  const double t = static_cast<double>(last_epoch_), T = static_cast<double>(t_max_);
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (size_t i = 0; i < lrs.size(); ++i) {
    const double base = base_lrs_[i];
    if (step_count_ == 1 && last_epoch_ > 0) {
      lrs[i] = eta_min_ + (base - eta_min_) * (1 + std::cos(t * pi / T)) / 2;
    } else if (floor_mod(last_epoch_ - 1 - t_max_, 2 * t_max_) == 0) {
      lrs[i] = lrs[i] + (base - eta_min_) * (1 - std::cos(pi / T)) / 2;
    } else {
      lrs[i] = (1 + std::cos(pi * t / T)) / (1 + std::cos(pi * (t - 1) / T)) * (lrs[i] - eta_min_) +
               eta_min_;
    }
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  constexpr double pi = std::numbers::pi;
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(eta_min_ + (base - eta_min_) *
                                 (1 + std::cos(pi * static_cast<double>(last_epoch_) /
                                               static_cast<double>(t_max_))) /
                                 2);
  }
  return lrs;
}

// ------------------------------------------------------------------------------- LinearLR

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  LOOM_CHECK(start_factor > 0 && start_factor <= 1.0,
             "Starting multiplicative factor expected to be greater than 0 and less or equal to "
             "1.");
  LOOM_CHECK(end_factor >= 0 && end_factor <= 1.0,
             "Ending multiplicative factor expected to be between 0 and 1.");
  LOOM_CHECK(total_iters > 0, "LinearLR: expected a positive total_iters, got ", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double d = end_factor_ - start_factor_;
  const double factor = 1.0 + d / (static_cast<double>(total_iters_) * start_factor_ +
                                   static_cast<double>(last_epoch_ - 1) * d);
  for (double& lr : lrs) lr *= factor;
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_));
  const double factor =
      start_factor_ + (end_factor_ - start_factor_) * done / static_cast<double>(total_iters_);
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * factor);
  return lrs;
}

// ----------------------------------------------------------------------------- ConstantLR

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), factor_(factor), total_iters_(total_iters) {
  LOOM_CHECK(factor >= 0 && factor <= 1.0,
             "Constant multiplicative factor expected to be between 0 and 1.");
  initial_step();
}

std::vector<double> ConstantLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : lrs) lr *= 1.0 / factor_;
  }
  return lrs;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  const double factor = last_epoch_ >= total_iters_ ? 1.0 : factor_;
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * factor);
  return lrs;
}

// --------------------------------------------------------------------------- PolynomialLR

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power,
                           int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), total_iters_(total_iters), power_(power) {
  LOOM_CHECK(total_iters > 0, "PolynomialLR: expected a positive total_iters, got ", total_iters);
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ > total_iters_) return lrs;
  const double t = static_cast<double>(last_epoch_), n = static_cast<double>(total_iters_);
  const double factor = std::pow((1.0 - t / n) / (1.0 - (t - 1) / n), power_);
  for (double& lr : lrs) lr *= factor;
  return lrs;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_));
  const double factor = std::pow(1.0 - done / static_cast<double>(total_iters_), power_);
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * factor);
  return lrs;
}

// ------------------------------------------------------------- LambdaLR, MultiplicativeLR

namespace {
/// One function per group, from one for every group or one per group.
std::vector<LrLambda> lambdas_per_group(std::vector<LrLambda> lambdas, size_t groups,
                                        std::string_view who) {
  if (lambdas.size() == 1) return std::vector<LrLambda>(groups, lambdas[0]);
  LOOM_CHECK(lambdas.size() == groups, "Expected ", groups, " lr_lambdas, but got ", lambdas.size(),
             " (", who, ")");
  return lambdas;
}
}  // namespace

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      lambdas_(lambdas_per_group(std::move(lr_lambdas), base_lrs_.size(), "LambdaLR")) {
  initial_step();
}

std::vector<double> LambdaLR::get_lr() const {
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i)
    lrs.push_back(base_lrs_[i] * lambdas_[i](last_epoch_));
  return lrs;
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas,
                                   int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      lambdas_(lambdas_per_group(std::move(lr_lambdas), base_lrs_.size(), "MultiplicativeLR")) {
  initial_step();
}

std::vector<double> MultiplicativeLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ > 0) {
    for (size_t i = 0; i < lrs.size(); ++i) lrs[i] *= lambdas_[i](last_epoch_);
  }
  return lrs;
}

// ----------------------------------------------------------------------------- OneCycleLR

namespace {
/// The cycle's length from total_steps or epochs * steps_per_epoch, after PyTorch's checks of
/// the options (made before anything is changed).
int64_t checked_total_steps(const OneCycleLR::Options& o) {
  int64_t total = 0;
  if (o.total_steps) {
    LOOM_CHECK(*o.total_steps > 0, "Expected positive integer total_steps, but got ",
               *o.total_steps);
    total = *o.total_steps;
  } else if (o.epochs && o.steps_per_epoch) {
    LOOM_CHECK(*o.epochs > 0, "Expected positive integer epochs, but got ", *o.epochs);
    LOOM_CHECK(*o.steps_per_epoch > 0, "Expected positive integer steps_per_epoch, but got ",
               *o.steps_per_epoch);
    total = *o.epochs * *o.steps_per_epoch;
  } else {
    LOOM_THROW(ValueError, "You must define either total_steps OR (epochs AND steps_per_epoch)");
  }
  LOOM_CHECK(o.pct_start >= 0 && o.pct_start <= 1,
             "Expected float between 0 and 1 pct_start, but got ", o.pct_start);
  LOOM_CHECK(o.anneal_strategy == "cos" || o.anneal_strategy == "linear",
             "anneal_strategy must be one of 'cos' or 'linear', instead got ", o.anneal_strategy);
  return total;
}

/// The optimizer, checked against the options and with each group's initial_lr set to
/// max_lr / div_factor (which the base then reads), as PyTorch's OneCycleLR does first.
Optimizer& prepare_one_cycle(Optimizer& optimizer, const OneCycleLR::Options& o,
                             int64_t last_epoch) {
  checked_total_steps(o);
  const size_t groups = optimizer.param_groups().size();
  const std::vector<double> max_lrs = per_group(o.max_lr, groups, "max_lr");
  if (o.cycle_momentum) {
    LOOM_CHECK(optimizer.defaults().get_momentum().has_value(),
               "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
    per_group(o.base_momentum, groups, "base_momentum");
    per_group(o.max_momentum, groups, "max_momentum");
  }
  if (last_epoch == -1) {
    for (size_t i = 0; i < groups; ++i) {
      optimizer.param_groups()[i].initial_lr = max_lrs[i] / o.div_factor;
    }
  }
  return optimizer;
}
}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, Options options, int64_t last_epoch)
    : LRScheduler(prepare_one_cycle(optimizer, options, last_epoch), last_epoch),
      options_(std::move(options)) {
  const Options& o = options_;
  total_steps_ = checked_total_steps(o);
  const double total = static_cast<double>(total_steps_);
  // Phase ends as PyTorch places them (floats: pct_start * total_steps need not be whole).
  if (o.three_phase) {
    phases_ = {{o.pct_start * total - 1, 0, 1, 0, 1},
               {2 * o.pct_start * total - 2, 1, 0, 1, 0},
               {total - 1, 0, 2, 0, 0}};
  } else {
    phases_ = {{o.pct_start * total - 1, 0, 1, 0, 1}, {total - 1, 1, 2, 1, 0}};
  }
  auto& groups = optimizer_.param_groups();
  max_lrs_ = per_group(o.max_lr, groups.size(), "max_lr");
  for (size_t i = 0; i < groups.size(); ++i) {
    initial_lrs_.push_back(max_lrs_[i] / o.div_factor);
    min_lrs_.push_back(initial_lrs_[i] / o.final_div_factor);
  }
  if (o.cycle_momentum) {
    base_momentums_ = per_group(o.base_momentum, groups.size(), "base_momentum");
    max_momentums_ = per_group(o.max_momentum, groups.size(), "max_momentum");
    if (last_epoch == -1) {
      for (size_t i = 0; i < groups.size(); ++i) groups[i].options->set_momentum(max_momentums_[i]);
    }
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy == "linear") return (end - start) * pct + start;
  const double cos_out = std::cos(std::numbers::pi * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}

std::vector<double> OneCycleLR::get_lr() const {
  const int64_t step_num = last_epoch_;
  LOOM_CHECK(step_num <= total_steps_, "Tried to step ", step_num,
             " times. The specified number of total steps is ", total_steps_);
  auto& groups = optimizer_.param_groups();
  std::vector<double> lrs;
  for (size_t i = 0; i < groups.size(); ++i) {
    const double lr_of[3] = {initial_lrs_[i], max_lrs_[i], min_lrs_[i]};
    double start_step = 0;
    double lr = 0, momentum = 0;
    for (size_t k = 0; k < phases_.size(); ++k) {
      const Phase& ph = phases_[k];
      if (static_cast<double>(step_num) <= ph.end_step || k + 1 == phases_.size()) {
        const double pct =
            (static_cast<double>(step_num) - start_step) / (ph.end_step - start_step);
        lr = anneal(lr_of[ph.start_lr], lr_of[ph.end_lr], pct);
        if (options_.cycle_momentum) {
          const double m_of[2] = {max_momentums_[i], base_momentums_[i]};
          momentum = anneal(m_of[ph.start_momentum], m_of[ph.end_momentum], pct);
        }
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (options_.cycle_momentum) groups[i].options->set_momentum(momentum);
  }
  return lrs;
}

// --------------------------------------------------------------------------- SequentialLR

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  LOOM_CHECK(!schedulers_.empty(), "SequentialLR expects at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    LOOM_CHECK(schedulers_[i] && &schedulers_[i]->optimizer() == &optimizer_,
               "Sequential Schedulers expects all schedulers to belong to the same optimizer, but "
               "got schedulers at index ",
               i, " to be different than the optimizer passed in.");
  }
  LOOM_CHECK(milestones_.size() == schedulers_.size() - 1,
             "Sequential Schedulers expects number of schedulers provided to be one more than the "
             "number of milestone points, but got number of schedulers ",
             schedulers_.size(), " and the number of milestones to be equal to ",
             milestones_.size());
  last_epoch_ = last_epoch + 1;
  // Back to the initial lrs, undo each scheduler's first step, and restart the first one.
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options->set_lr(*groups[i].initial_lr);
  for (auto& s : schedulers_) s->rewind_for_sequential();
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
    s.step(0);
  } else {
    s.step();
  }
  last_lr_ = s.get_last_lr();
}

void SequentialLR::step(int64_t) { LOOM_THROW(ValueError, "SequentialLR.step takes no epoch"); }

std::string SequentialLR::state_dict() const {
  json subs = json::array();
  for (const auto& s : schedulers_) subs.push_back(json::parse(s->state_dict()));
  json j = json::parse(LRScheduler::state_dict());
  j["schedulers"] = std::move(subs);
  return j.dump();
}

void SequentialLR::load_state_dict(std::string_view state) {
  constexpr std::string_view where = "SequentialLR.load_state_dict";
  LRScheduler::load_state_dict(state);
  const json j = detail::parse_json(state, where);
  const json& subs = detail::member(j, "schedulers", where);
  LOOM_CHECK(subs.is_array() && subs.size() == schedulers_.size(), where, ": expected ",
             schedulers_.size(), " schedulers' states, got ", subs.dump());
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(subs[i].dump());
}

// ---------------------------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, Options options)
    : optimizer_(optimizer), options_(std::move(options)) {
  LOOM_CHECK(options_.factor < 1.0, "Factor should be < 1.0.");
  min_lrs_ = [&] {
    const size_t groups = optimizer_.param_groups().size();
    if (options_.min_lr.size() == 1) return std::vector<double>(groups, options_.min_lr[0]);
    LOOM_CHECK(options_.min_lr.size() == groups, "expected ", groups, " min_lrs, got ",
               options_.min_lr.size());
    return options_.min_lr;
  }();
  LOOM_CHECK(options_.mode == "min" || options_.mode == "max", "mode ", options_.mode,
             " is unknown!");
  LOOM_CHECK(options_.threshold_mode == "rel" || options_.threshold_mode == "abs",
             "threshold mode ", options_.threshold_mode, " is unknown!");
  best_ = options_.mode == "min" ? std::numeric_limits<double>::infinity()
                                 : -std::numeric_limits<double>::infinity();
  for (const ParamGroup& g : optimizer_.param_groups()) last_lr_.push_back(g.options->get_lr());
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  const double t = options_.threshold;
  const bool rel = options_.threshold_mode == "rel";
  if (options_.mode == "min") return rel ? a < best * (1.0 - t) : a < best - t;
  return rel ? a > best * (t + 1.0) : a > best + t;
}

void ReduceLROnPlateau::step(double metric) {
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // ignore any bad epochs in cooldown
  }
  auto& groups = optimizer_.param_groups();
  if (num_bad_epochs_ > options_.patience) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].options->get_lr();
      const double new_lr = std::max(old_lr * options_.factor, min_lrs_[i]);
      if (old_lr - new_lr > options_.eps) groups[i].options->set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const ParamGroup& g : groups) last_lr_.push_back(g.options->get_lr());
}

std::string ReduceLROnPlateau::state_dict() const {
  // JSON has no infinity: the best of a scheduler that has not stepped is written as null.
  return json{{"scheduler", "ReduceLROnPlateau"},
              {"best", std::isfinite(best_) ? json(best_) : json(nullptr)},
              {"num_bad_epochs", num_bad_epochs_},
              {"cooldown_counter", cooldown_counter_},
              {"last_epoch", last_epoch_},
              {"last_lr", last_lr_}}
      .dump();
}

void ReduceLROnPlateau::load_state_dict(std::string_view state) {
  constexpr std::string_view where = "ReduceLROnPlateau.load_state_dict";
  const json j = detail::parse_json(state, where);
  const std::string kind = detail::get<std::string>(j, "scheduler", where);
  LOOM_CHECK(kind == "ReduceLROnPlateau", where, ": the state dict was saved by ", kind,
             ", not by ReduceLROnPlateau");
  const json& best = detail::member(j, "best", where);
  best_ = best.is_number() ? best.get<double>()
                           : (options_.mode == "min" ? std::numeric_limits<double>::infinity()
                                                     : -std::numeric_limits<double>::infinity());
  num_bad_epochs_ = detail::get<int64_t>(j, "num_bad_epochs", where);
  cooldown_counter_ = detail::get<int64_t>(j, "cooldown_counter", where);
  last_epoch_ = detail::get<int64_t>(j, "last_epoch", where);
  last_lr_ = detail::get<std::vector<double>>(j, "last_lr", where);
}

}  // namespace loom::optim
