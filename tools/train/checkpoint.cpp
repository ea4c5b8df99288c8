// loom-train's checkpoints (checkpoint.h): what the "loom.train" metadata holds, and reading it
// back as untrusted input (Note [Checkpoint checks]).
#include "checkpoint.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "loom/core/generator.h"

namespace loom::train {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kFormat = "loom-train checkpoint 1";
constexpr const char* kMetadataKey = "loom.train";
// No real run counts this far; below it counts stay exact as doubles and far from overflowing
// when the run adds to them.
constexpr int64_t kMaxCount = int64_t{1} << 53;
// A century of training.
constexpr double kMaxSeconds = 100.0 * 365 * 24 * 3600;
// The most samples a training set can have: an IDX file counts them in 32 bits.
constexpr int64_t kMaxSamples = int64_t{UINT32_MAX};

/// The options that define a run: a resumed run takes them from its checkpoint and refuses
/// another value (Note [Options on resume]).
const char* const kDefiningOptions[] = {
    "model",     "batch_size", "lr",           "optimizer", "momentum",    "weight_decay",
    "scheduler", "seed",       "val_fraction", "patience",  "limit_train", "limit_test"};

/// The fields of the metadata, in the order they are written.
const char* const kFields[] = {"format",        "config",
                               "optimizer",     "scheduler",
                               "epoch",         "step_in_epoch",
                               "global_step",   "loss_sum",
                               "correct",       "seen",
                               "seconds",       "train_seconds",
                               "best_val_loss", "epochs_without_improvement",
                               "rows",          "rng"};

/// The columns of a metrics row as the checkpoint stores it.
const char* const kRowColumns[] = {
    "epoch",        "train_loss",        "train_accuracy", "val_loss",
    "val_accuracy", "test_loss",         "test_accuracy",  "lr",
    "seconds",      "samples_per_second"};

std::string hex(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

/// A value for a message: its JSON, cut short if long.
std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Reads the fields of the metadata, each checked; failures name the file and the field.
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw UserError{where_ + ": field '" + field + "' " + problem};
  }

  const json& member(const json& object, const std::string& key, const std::string& field) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(field, "is missing");
    return *it;
  }

  /// An integer in [min, max]; why, if given, says where the range comes from.
  int64_t integer(const json& v, const std::string& field, int64_t min, int64_t max,
                  const std::string& why = "") const {
    const bool in_range = v.is_number_integer() &&
                          !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) &&
                          v.get<int64_t>() >= min && v.get<int64_t>() <= max;
    if (!in_range) {
      fail(field, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                      "]" + (why.empty() ? "" : " (" + why + ")") + ", got " + shown(v));
    }
    return v.get<int64_t>();
  }

  /// A number in [min, max]; with nan_ok, null (how JSON writes NaN) reads as NaN.
  double number(const json& v, const std::string& field, double min, double max,
                bool nan_ok = false) const {
    if (nan_ok && v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number() || !(v.get<double>() >= min && v.get<double>() <= max)) {
      fail(field, "must be a number in [" + number_text(min) + ", " + number_text(max) + "]" +
                      (nan_ok ? " or null (NaN)" : "") + ", got " + shown(v));
    }
    return v.get<double>();
  }

  /// A learning rate, by the command line's rule for --lr.
  double lr(const json& v, const std::string& field) const {
    Options scratch;
    try {
      apply_options_json(scratch, json{{"lr", v}}, "");
    } catch (const OptionError& e) {
      fail(field, "breaks the rule of --lr" + e.message);
    }
    return scratch.lr;
  }

  std::string string(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "must be a string, got " + shown(v));
    return v.get<std::string>();
  }

  const json& object(const json& v, const std::string& field) const {
    if (!v.is_object()) fail(field, "must be a JSON object, got " + shown(v));
    return v;
  }

  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

/// The stored config: the command line's rules (apply_options_json, check_options), and every
/// option that defines the run present.
Options read_config(const Reader& r, const json& m) {
  const json& cfg = r.object(r.member(m, "config", "config"), "config");
  for (const char* key : kDefiningOptions) r.member(cfg, key, std::string("config.") + key);
  r.member(cfg, "epochs", "config.epochs");
  Options o;
  try {
    apply_options_json(o, cfg, r.where() + ": field 'config'");
    check_options(o);
  } catch (const OptionError& e) {
    if (e.message.rfind(r.where(), 0) == 0) throw UserError{e.message};
    throw UserError{r.where() + ": field 'config': " + e.message};
  }
  return o;
}

std::vector<EpochRow> read_rows(const Reader& r, const json& rows, int64_t finished) {
  if (!rows.is_array() || rows.size() != static_cast<size_t>(finished)) {
    r.fail("rows", "must be an array of " + std::to_string(finished) +
                       " metrics rows (one per finished epoch), got " + shown(rows));
  }
  std::vector<EpochRow> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    const std::string at = "rows[" + std::to_string(i) + "]";
    if (!row.is_array() || row.size() != std::size(kRowColumns)) {
      r.fail(at, "must be an array of " + std::to_string(std::size(kRowColumns)) +
                     " numbers, got " + shown(row));
    }
    auto field = [&](size_t k) {
      return at + "[" + std::to_string(k) + "] (" + kRowColumns[k] + ")";
    };
    // Validation columns are -1 when the run holds none out.
    auto or_minus_one = [&](size_t k, double max, bool nan_ok) {
      const json& v = row[k];
      if (v.is_number() && v.get<double>() == -1) return -1.0;
      return r.number(v, field(k), 0, max, nan_ok);
    };
    EpochRow e;
    const int64_t epoch = static_cast<int64_t>(i) + 1;
    e.epoch = r.integer(row[0], field(0), epoch, epoch);
    e.train_loss = r.number(row[1], field(1), 0, DBL_MAX, /*nan_ok=*/true);
    e.train_accuracy = r.number(row[2], field(2), 0, 1);
    e.val_loss = or_minus_one(3, DBL_MAX, /*nan_ok=*/true);
    e.val_accuracy = or_minus_one(4, 1, /*nan_ok=*/false);
    e.test_loss = r.number(row[5], field(5), 0, DBL_MAX, /*nan_ok=*/true);
    e.test_accuracy = r.number(row[6], field(6), 0, 1);
    e.lr = r.lr(row[7], field(7));
    e.seconds = r.number(row[8], field(8), 0, kMaxSeconds);
    e.samples_per_second = r.number(row[9], field(9), 0, DBL_MAX);
    out.push_back(e);
  }
  return out;
}

/// The most steps an epoch of the stored config can have, with the most samples its data could
/// hold, and that bound as a message says it. The data, loaded later, may hold fewer
/// (check_resume_point).
std::pair<int64_t, std::string> most_steps_in_epoch(const Options& cfg) {
  const int64_t samples =
      cfg.limit_train > 0 ? std::min(cfg.limit_train, kMaxSamples) : kMaxSamples;
  const int64_t steps = samples / cfg.batch_size + (samples % cfg.batch_size != 0);
  return {steps, "an epoch of at most " + std::to_string(samples) + " samples (" +
                     (cfg.limit_train > 0 ? "limit_train" : "an IDX file's most") +
                     ") in batches of " + std::to_string(cfg.batch_size)};
}

Position read_position(const Reader& r, const json& m, const Options& cfg) {
  Position p;
  p.epoch =
      r.integer(r.member(m, "epoch", "epoch"), "epoch", 1, std::min(cfg.epochs, kMaxCount) + 1);
  // step_in_epoch has a range of its own, checked first: global_step's range starts at it, so
  // a wrong step_in_epoch must not read as a wrong global_step.
  const auto [most_steps, why] = most_steps_in_epoch(cfg);
  p.step_in_epoch =
      r.integer(r.member(m, "step_in_epoch", "step_in_epoch"), "step_in_epoch", 0, most_steps, why);
  p.global_step = r.integer(r.member(m, "global_step", "global_step"), "global_step",
                            p.step_in_epoch, kMaxCount);
  // At most a full batch per step taken this epoch.
  const int64_t most_seen = cfg.batch_size > kMaxCount / std::max<int64_t>(p.step_in_epoch, 1)
                                ? kMaxCount
                                : p.step_in_epoch * cfg.batch_size;
  p.seen = r.integer(r.member(m, "seen", "seen"), "seen", 0, most_seen);
  p.correct = r.integer(r.member(m, "correct", "correct"), "correct", 0, p.seen);
  p.loss_sum = r.number(r.member(m, "loss_sum", "loss_sum"), "loss_sum", 0, DBL_MAX, true);
  p.seconds = r.number(r.member(m, "seconds", "seconds"), "seconds", 0, kMaxSeconds);
  p.train_seconds =
      r.number(r.member(m, "train_seconds", "train_seconds"), "train_seconds", 0, kMaxSeconds);
  p.best_val_loss =
      r.number(r.member(m, "best_val_loss", "best_val_loss"), "best_val_loss", 0, DBL_MAX);
  p.epochs_without_improvement =
      r.integer(r.member(m, "epochs_without_improvement", "epochs_without_improvement"),
                "epochs_without_improvement", 0, cfg.patience);
  p.rows = read_rows(r, r.member(m, "rows", "rows"), p.epoch - 1);
  return p;
}

/// The optimizer's state dict: an object whose learning rates follow --lr's rule and whose
/// step counts are at most the run's. The optimizer checks the rest when it loads it.
std::string read_optimizer(const Reader& r, const json& m, const Position& p) {
  const json& opt = r.object(r.member(m, "optimizer", "optimizer"), "optimizer");
  if (const auto groups = opt.find("param_groups"); groups != opt.end() && groups->is_array()) {
    for (size_t i = 0; i < groups->size(); ++i) {
      const json& g = (*groups)[i];
      if (g.is_object() && g.contains("lr")) {
        r.lr(g.at("lr"), "optimizer.param_groups[" + std::to_string(i) + "].lr");
      }
    }
  }
  if (const auto state = opt.find("state"); state != opt.end() && state->is_object()) {
    for (const auto& [index, s] : state->items()) {
      if (s.is_object() && s.contains("step")) {
        r.integer(s.at("step"), "optimizer.state." + index + ".step", 0, p.global_step);
      }
    }
  }
  return opt.dump();
}

/// The scheduler's state: present exactly when the config names a scheduler, its lists one
/// learning rate per parameter group (the schedulers index them by group without a check),
/// its counters within the run's.
std::string read_scheduler(const Reader& r, const json& m, const Options& cfg, const Position& p) {
  const std::string state = r.string(r.member(m, "scheduler", "scheduler"), "scheduler");
  if (cfg.scheduler == "none") {
    if (!state.empty()) r.fail("scheduler", "must be empty (the config's scheduler is none)");
    return state;
  }
  if (state.empty()) {
    r.fail("scheduler", "is empty but the config's scheduler is " + cfg.scheduler);
  }
  json s;
  try {
    s = json::parse(state);
  } catch (const json::exception& e) {
    r.fail("scheduler", std::string("is not valid JSON: ") + e.what());
  }
  r.object(s, "scheduler");
  for (const char* list : {"base_lrs", "last_lr"}) {
    const auto it = s.find(list);
    if (it == s.end()) continue;
    const std::string field = std::string("scheduler.") + list;
    if (!it->is_array() || it->size() != kParamGroups) {
      r.fail(field, "must hold " + std::to_string(kParamGroups) +
                        " learning rate(s), one per parameter group, got " + shown(*it));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      r.lr((*it)[i], field + "[" + std::to_string(i) + "]");
    }
  }
  for (const char* counter : {"last_epoch", "step_count", "num_bad_epochs", "cooldown_counter"}) {
    if (const auto it = s.find(counter); it != s.end()) {
      r.integer(*it, std::string("scheduler.") + counter, 0, p.global_step + p.epoch);
    }
  }
  if (const auto best = s.find("best"); best != s.end() && !best->is_null()) {
    r.number(*best, "scheduler.best", -DBL_MAX, DBL_MAX);
  }
  return state;
}

/// The default generator's state: hex digits that a generator accepts.
std::string read_rng(const Reader& r, const json& m) {
  const std::string text = r.string(r.member(m, "rng", "rng"), "rng");
  if (text.empty() || text.size() % 2 != 0 ||
      text.find_first_not_of("0123456789abcdef") != std::string::npos) {
    r.fail("rng", "must be an even number of lowercase hex digits, got " + shown(json(text)));
  }
  std::string bytes;
  for (size_t i = 0; i < text.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  }
  try {
    CPUGenerator scratch;
    scratch.set_state(bytes);
  } catch (const Error& e) {
    r.fail("rng", std::string("is not a generator state: ") + e.what());
  }
  return bytes;
}

json rows_json(const std::vector<EpochRow>& rows) {
  json a = json::array();
  for (const EpochRow& r : rows) {
    a.push_back({r.epoch, r.train_loss, r.train_accuracy, r.val_loss, r.val_accuracy, r.test_loss,
                 r.test_accuracy, r.lr, r.seconds, r.samples_per_second});
  }
  return a;
}

}  // namespace

std::string checkpoint_metadata(const Options& o, const Position& pos,
                                const std::string& optimizer_json,
                                const std::string& scheduler_state, const std::string& rng_state) {
  const json meta = {{"format", kFormat},
                     {"config", json::parse(options_json(o))},
                     {"optimizer", json::parse(optimizer_json)},
                     {"scheduler", scheduler_state},
                     {"epoch", pos.epoch},
                     {"step_in_epoch", pos.step_in_epoch},
                     {"global_step", pos.global_step},
                     {"loss_sum", pos.loss_sum},
                     {"correct", pos.correct},
                     {"seen", pos.seen},
                     {"seconds", pos.seconds},
                     {"train_seconds", pos.train_seconds},
                     {"best_val_loss", pos.best_val_loss},
                     {"epochs_without_improvement", pos.epochs_without_improvement},
                     {"rows", rows_json(pos.rows)},
                     {"rng", hex(rng_state)}};
  return meta.dump();
}

Checkpoint read_checkpoint(const std::string& path) {
  Checkpoint c;
  c.path = path;
  try {
    c.file = data::safetensors::load_file(path);
  } catch (const Error& e) {
    throw UserError{std::string("--resume: ") + e.what()};
  }
  const std::string where = "--resume " + path;
  for (const auto& [name, t] : c.file.tensors) {
    if (name.rfind("model.", 0) != 0 && name.rfind("optim.", 0) != 0) {
      throw UserError{where + ": tensor '" + name +
                      "' is neither the model's (model.*) nor the optimizer's (optim.*)"};
    }
  }
  const auto it = c.file.metadata.find(kMetadataKey);
  if (it == c.file.metadata.end()) {
    throw UserError{where + ": a safetensors file but not a loom train checkpoint (no '" +
                    kMetadataKey + "' metadata)"};
  }
  json m;
  try {
    m = json::parse(it->second);
  } catch (const json::exception& e) {
    throw UserError{where + ": its " + kMetadataKey + " metadata is not valid JSON: " + e.what()};
  }
  const Reader r(where + ": " + kMetadataKey + " metadata");
  if (!m.is_object()) throw UserError{r.where() + " must be a JSON object, got " + shown(m)};
  for (const auto& [key, value] : m.items()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields)) {
      r.fail(key, "is not a field of a loom train checkpoint");
    }
  }
  if (r.string(r.member(m, "format", "format"), "format") != kFormat) {
    r.fail("format", "must be \"" + std::string(kFormat) + "\", got " + shown(m.at("format")));
  }
  c.config = read_config(r, m);
  c.pos = read_position(r, m, c.config);
  c.optimizer = read_optimizer(r, m, c.pos);
  c.scheduler = read_scheduler(r, m, c.config, c.pos);
  c.rng = read_rng(r, m);
  return c;
}

void check_resume_point(const Checkpoint& c, int64_t steps_per_epoch) {
  if (c.pos.step_in_epoch > steps_per_epoch) {
    Reader("--resume " + c.path + ": " + kMetadataKey + " metadata")
        .integer(json(c.pos.step_in_epoch), "step_in_epoch", 0, steps_per_epoch,
                 "the steps of an epoch of this run");
  }
}

std::vector<std::string> resume_options(Options& o, const OptionSources& given,
                                        const Checkpoint& c) {
  const std::string where = "--resume " + c.path + ": ";
  const json mine = json::parse(options_json(o)), stored = json::parse(options_json(c.config));
  auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  for (const char* key : kDefiningOptions) {
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const auto it = given.find(flag);
    if (it == given.end() || mine.at(key) == stored.at(key)) continue;
    throw UserError{where + it->second + " " + text(mine.at(key)) +
                    " conflicts with the checkpoint's " + key + " " + text(stored.at(key)) +
                    ": a resumed run continues with the options that define it (leave --" + flag +
                    " out, or start a new run without --resume)"};
  }
  const Options& saved = c.config;
  // The defining options from the checkpoint, through the same setters as --config (one list,
  // kDefiningOptions, says which they are).
  json defining = json::object();
  for (const char* key : kDefiningOptions) defining[key] = stored.at(key);
  apply_options_json(o, defining, where + "stored config");

  const auto epochs = given.find("epochs");
  if (epochs == given.end() || o.epochs == saved.epochs) {
    o.epochs = saved.epochs;
    return {};
  }
  const std::string asked = epochs->second + " " + std::to_string(o.epochs);
  if (saved.scheduler == "cosine" || saved.scheduler == "onecycle") {
    throw UserError{where + asked + ": the checkpoint's " + saved.scheduler +
                    " schedule spans its run's " + std::to_string(saved.epochs) +
                    " epochs and would jump with another count; leave --epochs out to end the "
                    "run as planned"};
  }
  if (o.epochs < c.pos.epoch) {
    throw UserError{where + asked + ": the checkpoint's run is at epoch " +
                    std::to_string(c.pos.epoch) + " already, so it can end after epoch " +
                    std::to_string(c.pos.epoch) + " at the earliest"};
  }
  return {asked + ": the resumed run ends after epoch " + std::to_string(o.epochs) +
          " (the checkpoint's run had " + std::to_string(saved.epochs) + ")"};
}

}  // namespace loom::train
