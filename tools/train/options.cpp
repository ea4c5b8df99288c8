// loom-train's options (options.h).
#include "options.h"

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace loom::train {
namespace {

using json = nlohmann::ordered_json;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

int64_t parse_int(const std::string& name, const std::string& v, int64_t min) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || n < min) {
    throw OptionError{"--" + name + " expects an integer >= " + std::to_string(min) + ", got " +
                      quoted(v)};
  }
  return n;
}

double parse_double(const std::string& name, const std::string& v, double min, double max) {
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || !(d >= min && d <= max)) {
    std::ostringstream os;
    os << "--" << name << " expects a number in [" << min << ", " << max << "], got "
       << quoted(v);
    throw OptionError{os.str()};
  }
  return d;
}

/// "cpu", "cuda" or "cuda:N" (whether such a device exists is checked when the run starts).
std::string device_spec(const std::string& v) {
  bool ok = v == "cpu" || v == "cuda";
  if (!ok && v.rfind("cuda:", 0) == 0 && v.size() > 5 && v.size() <= 9) {
    ok = v.find_first_not_of("0123456789", 5) == std::string::npos;
  }
  if (!ok) throw OptionError{"--device must be cpu, cuda or cuda:N, got " + quoted(v)};
  return v;
}

std::string one_of(const std::string& name, const std::string& v,
                   const std::vector<std::string>& allowed) {
  for (const std::string& a : allowed) {
    if (v == a) return v;
  }
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw OptionError{"--" + name + " must be one of " + list + ", got " + quoted(v)};
}

/// Each option: how to set it from a string (the command line and the config file share it).
using Setter = std::function<void(Options&, const std::string&)>;

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> s = {
      {"model", [](Options& o, const std::string& v) { o.model = one_of("model", v, {"mlp", "cnn"}); }},
      {"epochs", [](Options& o, const std::string& v) { o.epochs = parse_int("epochs", v, 1); }},
      {"batch-size", [](Options& o, const std::string& v) { o.batch_size = parse_int("batch-size", v, 1); }},
      {"lr", [](Options& o, const std::string& v) { o.lr = parse_double("lr", v, 0, 1e3); }},
      {"optimizer", [](Options& o, const std::string& v) { o.optimizer = one_of("optimizer", v, {"sgd", "adam", "adamw"}); }},
      {"momentum", [](Options& o, const std::string& v) { o.momentum = parse_double("momentum", v, 0, 1); }},
      {"weight-decay", [](Options& o, const std::string& v) { o.weight_decay = parse_double("weight-decay", v, 0, 1e3); }},
      {"scheduler", [](Options& o, const std::string& v) { o.scheduler = one_of("scheduler", v, {"none", "step", "cosine", "onecycle", "plateau"}); }},
      {"seed", [](Options& o, const std::string& v) { o.seed = static_cast<uint64_t>(parse_int("seed", v, 0)); }},
      {"provider", [](Options& o, const std::string& v) { o.provider = one_of("provider", v, {"reference", "onednn"}); }},
      {"device", [](Options& o, const std::string& v) { o.device = device_spec(v); }},
      {"workers", [](Options& o, const std::string& v) { o.workers = parse_int("workers", v, 0); }},
      {"data", [](Options& o, const std::string& v) { o.data = v; }},
      {"out", [](Options& o, const std::string& v) { o.out = v; }},
      {"checkpoint", [](Options& o, const std::string& v) { o.checkpoint = v; }},
      {"resume", [](Options& o, const std::string& v) { o.resume = v; }},
      {"val-fraction", [](Options& o, const std::string& v) { o.val_fraction = parse_double("val-fraction", v, 0, 0.5); }},
      {"patience", [](Options& o, const std::string& v) { o.patience = parse_int("patience", v, 0); }},
      {"limit-train", [](Options& o, const std::string& v) { o.limit_train = parse_int("limit-train", v, 0); }},
      {"limit-test", [](Options& o, const std::string& v) { o.limit_test = parse_int("limit-test", v, 0); }},
      {"stop-after-steps", [](Options& o, const std::string& v) { o.stop_after_steps = parse_int("stop-after-steps", v, 0); }},
      {"progress", [](Options& o, const std::string& v) { o.progress = one_of("progress", v, {"auto", "bar", "lines", "none"}); }},
  };
  return s;
}

void apply_config_file(Options& o, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw OptionError{"--config: cannot read " + quoted(path)};
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw OptionError{"--config: " + path + " is not valid JSON: " + e.what()};
  }
  if (!j.is_object()) throw OptionError{"--config: " + path + " must hold a JSON object"};
  for (const auto& [key, value] : j.items()) {
    std::string name = key;
    for (char& c : name) {
      if (c == '_') c = '-';
    }
    auto it = setters().find(name);
    if (it == setters().end() || name == "config") {
      throw OptionError{"--config: " + path + ": unknown option " + quoted(key)};
    }
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_number_integer()) {
      text = std::to_string(value.get<int64_t>());
    } else if (value.is_number()) {
      std::ostringstream os;
      os.precision(17);
      os << value.get<double>();
      text = os.str();
    } else {
      throw OptionError{"--config: " + path + ": " + quoted(key) +
                        " must be a string or a number"};
    }
    try {
      it->second(o, text);
    } catch (const OptionError& e) {
      throw OptionError{"--config: " + path + ": " + e.message};
    }
  }
}

}  // namespace

Options parse_options(const std::vector<std::string>& argv, bool& help) {
  help = false;
  // Pass 1: --config (the flags override it, wherever they stand).
  Options o;
  std::vector<std::pair<std::string, std::string>> flags;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-h" || a == "--help") {
      help = true;
      return o;
    }
    if (a.rfind("--", 0) != 0) throw OptionError{"unexpected argument " + quoted(a)};
    std::string name = a.substr(2), value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= argv.size()) throw OptionError{"--" + name + " expects a value"};
      value = argv[++i];
    }
    if (name != "config" && !setters().contains(name)) {
      throw OptionError{"unknown option --" + name};
    }
    flags.emplace_back(name, value);
  }
  for (const auto& [name, value] : flags) {
    if (name == "config") apply_config_file(o, value);
  }
  for (const auto& [name, value] : flags) {
    if (name != "config") setters().at(name)(o, value);
  }
  if (o.patience > 0 && o.val_fraction <= 0) {
    throw OptionError{"--patience " + std::to_string(o.patience) +
                      ": early stopping watches the validation loss; give --val-fraction too "
                      "(e.g. --val-fraction 0.1)"};
  }
  return o;
}

std::string options_json(const Options& o) {
  json j = {{"model", o.model},
            {"epochs", o.epochs},
            {"batch_size", o.batch_size},
            {"lr", o.lr},
            {"optimizer", o.optimizer},
            {"momentum", o.momentum},
            {"weight_decay", o.weight_decay},
            {"scheduler", o.scheduler},
            {"seed", o.seed},
            {"provider", o.provider},
            {"device", o.device},
            {"workers", o.workers},
            {"data", o.data},
            {"out", o.out},
            {"checkpoint", o.checkpoint},
            {"resume", o.resume},
            {"val_fraction", o.val_fraction},
            {"patience", o.patience},
            {"limit_train", o.limit_train},
            {"limit_test", o.limit_test},
            {"stop_after_steps", o.stop_after_steps},
            {"progress", o.progress}};
  return j.dump(2);
}

std::string usage() {
  return R"(usage: loom train [options]

Trains a model on Fashion-MNIST (Debian's dataset-fashion-mnist) and writes a run folder:
config.json, train.log, metrics.csv, metrics.svg, report.json, checkpoint.safetensors.
The last line printed is machine-readable:
  RESULT model=cnn epochs=2 test_accuracy=0.9123 train_seconds=41.2

options (--config FILE sets any of them from a JSON object, e.g. {"epochs": 3};
flags on the command line override it):
  --model mlp|cnn           the MLP 784-256-10 or the CNN (default cnn)
  --epochs N                passes over the training set (default 2)
  --batch-size N            samples per step (default 64)
  --lr X                    learning rate (default 0.001)
  --optimizer sgd|adam|adamw  (default adam); --momentum X for sgd; --weight-decay X
  --scheduler none|step|cosine|onecycle|plateau  learning-rate schedule (default none)
  --seed N                  weights, shuffling (default 0)
  --provider reference|onednn  CPU kernels (default: oneDNN when installed)
  --device cpu|cuda|cuda:N  where the model and the batches live (default cpu); cuda needs
                            the cuda plugin and a GPU, and says why when there is none
  --workers N               data-loading threads (default 0: in the training thread)
  --data DIR                the IDX files (default /usr/share/datasets/fashion-mnist)
  --out DIR                 the run folder (default runs/<model>-<date>-<time>)
  --checkpoint PATH         where checkpoints go (default <out>/checkpoint.safetensors)
  --resume PATH             continue the run saved in PATH exactly
  --val-fraction X          hold out this part of the training set for validation
  --patience N              early stopping after N epochs without a better validation loss
  --limit-train N, --limit-test N  use only the first N samples (quick runs)
  --stop-after-steps N      stop (after saving a checkpoint) once N steps are done
  --progress auto|bar|lines|none  a bar on a terminal, plain lines otherwise (auto)
)";
}

}  // namespace loom::train
