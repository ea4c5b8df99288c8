// loom-train's options (options.h).
#include "options.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace loom::train {
namespace {

using json = nlohmann::ordered_json;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The parsers below take the option's label as messages should call it: "--batch-size" on
// the command line, the key as written ("batch_size") in a JSON object.

int64_t parse_int(const std::string& label, const std::string& v, int64_t min,
                  int64_t max = INT64_MAX) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || n < min || n > max) {
    const std::string range = max == INT64_MAX
                                  ? ">= " + std::to_string(min)
                                  : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    throw OptionError{label + " expects an integer " + range + ", got " + quoted(v)};
  }
  return n;
}

double parse_double(const std::string& label, const std::string& v, double min, double max) {
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || !(d >= min && d <= max)) {
    std::ostringstream os;
    os << label << " expects a number in [" << min << ", " << max << "], got " << quoted(v);
    throw OptionError{os.str()};
  }
  return d;
}

/// "cpu", "cuda" or "cuda:N" (whether such a device exists is checked when the run starts).
std::string device_spec(const std::string& label, const std::string& v) {
  bool ok = v == "cpu" || v == "cuda";
  if (!ok && v.rfind("cuda:", 0) == 0 && v.size() > 5 && v.size() <= 9) {
    ok = v.find_first_not_of("0123456789", 5) == std::string::npos;
  }
  if (!ok) throw OptionError{label + " must be cpu, cuda or cuda:N, got " + quoted(v)};
  return v;
}

std::string one_of(const std::string& label, const std::string& v,
                   const std::vector<std::string>& allowed) {
  for (const std::string& a : allowed) {
    if (v == a) return v;
  }
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw OptionError{label + " must be one of " + list + ", got " + quoted(v)};
}

/// Each option: how to set it from a string, by its rule (the command line and JSON objects
/// share it). The third argument is the label messages use ("--batch-size", "batch_size").
using Setter = std::function<void(Options&, const std::string&, const std::string&)>;

Setter integer(int64_t Options::*field, int64_t min, int64_t max = INT64_MAX) {
  return [=](Options& o, const std::string& v, const std::string& l) {
    o.*field = parse_int(l, v, min, max);
  };
}

Setter number(double Options::*field, double min, double max) {
  return [=](Options& o, const std::string& v, const std::string& l) {
    o.*field = parse_double(l, v, min, max);
  };
}

Setter choice(std::string Options::*field, std::vector<std::string> allowed) {
  return [=](Options& o, const std::string& v, const std::string& l) {
    o.*field = one_of(l, v, allowed);
  };
}

Setter text(std::string Options::*field) {
  return [=](Options& o, const std::string& v, const std::string&) { o.*field = v; };
}

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> s = {
      {"model", choice(&Options::model, {"mlp", "cnn"})},
      {"epochs", integer(&Options::epochs, 1)},
      {"batch-size", integer(&Options::batch_size, 1)},
      {"lr", number(&Options::lr, 0, 1e3)},
      {"optimizer", choice(&Options::optimizer, {"sgd", "adam", "adamw"})},
      {"momentum", number(&Options::momentum, 0, 1)},
      {"weight-decay", number(&Options::weight_decay, 0, 1e3)},
      {"scheduler", choice(&Options::scheduler, {"none", "step", "cosine", "onecycle", "plateau"})},
      {"seed", [](Options& o, const std::string& v,
                  const std::string& l) { o.seed = static_cast<uint64_t>(parse_int(l, v, 0)); }},
      // "" is the default (what config.json holds when --provider was not given).
      {"provider",
       [](Options& o, const std::string& v, const std::string& l) {
         o.provider = v.empty() ? v : one_of(l, v, {"reference", "onednn"});
       }},
      {"memory-format", choice(&Options::memory_format, {"auto", "channels-last", "contiguous"})},
      {"device", [](Options& o, const std::string& v,
                    const std::string& l) { o.device = device_spec(l, v); }},
      {"workers", integer(&Options::workers, 0, kMaxWorkers)},
      {"data", text(&Options::data)},
      {"out", text(&Options::out)},
      {"checkpoint", text(&Options::checkpoint)},
      {"resume", text(&Options::resume)},
      {"val-fraction", number(&Options::val_fraction, 0, 0.5)},
      {"patience", integer(&Options::patience, 0)},
      {"limit-train", integer(&Options::limit_train, 0)},
      {"limit-test", integer(&Options::limit_test, 0)},
      {"stop-after-steps", integer(&Options::stop_after_steps, 0)},
      {"profile", integer(&Options::profile, 0)},
      {"progress", choice(&Options::progress, {"auto", "bar", "lines", "none"})},
      {"tensorboard", text(&Options::tensorboard)},
      {"compile",
       [](Options& o, const std::string& v, const std::string& l) {
         o.compile = one_of(l, v, {"true", "false"}) == "true";
       }},
  };
  return s;
}

/// Applies the config file at path; sources (if not null) gets each key it sets.
void apply_config_file(Options& o, const std::string& path, OptionSources* sources) {
  if (const std::string why = unreadable_file(path); !why.empty()) {
    throw OptionError{"--config: cannot read " + quoted(path) + ": " + why};
  }
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    throw OptionError{"--config: cannot read " + quoted(path) +
                      (errno != 0 ? ": " + std::string(std::strerror(errno)) : "")};
  }
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw OptionError{"--config: " + path + " is not valid JSON: " + e.what()};
  }
  apply_options_json(o, j, "--config: " + path);
  if (sources == nullptr) return;
  for (const auto& [key, value] : j.items()) {
    std::string name = key;
    for (char& c : name) {
      if (c == '_') c = '-';
    }
    (*sources)[name] = "--config " + path + ": " + key;
  }
}

}  // namespace

void apply_options_json(Options& o, const json& j, const std::string& source) {
  if (!j.is_object()) throw OptionError{source + " must hold a JSON object, got " + j.dump()};
  for (const auto& [key, value] : j.items()) {
    std::string name = key;
    for (char& c : name) {
      if (c == '_') c = '-';
    }
    auto it = setters().find(name);
    if (it == setters().end()) throw OptionError{source + ": unknown option " + quoted(key)};
    // The value as the command line would spell it, so the same rule checks it.
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_boolean()) {
      text = value.get<bool>() ? "true" : "false";
    } else if (value.is_number_unsigned()) {
      text = std::to_string(value.get<uint64_t>());  // past INT64_MAX: refused, not wrapped
    } else if (value.is_number_integer()) {
      text = std::to_string(value.get<int64_t>());
    } else if (value.is_number()) {
      std::ostringstream os;
      os.precision(17);
      os << value.get<double>();
      text = os.str();
    } else {
      throw OptionError{source + ": " + quoted(key) +
                        " must be a string, a number or a boolean, got " + value.dump()};
    }
    try {
      it->second(o, text, key);
    } catch (const OptionError& e) {
      throw OptionError{source + ": " + e.message};
    }
  }
}

void check_options(const Options& o) {
  if (o.patience > 0 && o.val_fraction <= 0) {
    throw OptionError{"--patience " + std::to_string(o.patience) +
                      ": early stopping watches the validation loss; give --val-fraction too "
                      "(e.g. --val-fraction 0.1)"};
  }
}

std::string unreadable_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) return "no such file";
  if (st.type() == fs::file_type::directory) return "it is a directory, not a file";
  if (st.type() != fs::file_type::regular) return "";  // a pipe (bash's <(...)): read it once
  errno = 0;
  std::ifstream in(path);
  if (!in) return errno != 0 ? std::strerror(errno) : "it cannot be opened";
  return "";
}

Options parse_options(const std::vector<std::string>& argv, bool& help, OptionSources* sources) {
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
    } else if (name == "profile" && (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)) {
      value = std::to_string(kDefaultProfileSteps);  // a bare --profile
    } else if (name == "compile" && (i + 1 >= argv.size() || argv[i + 1].rfind("--", 0) == 0)) {
      value = "true";  // a bare --compile
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
    if (name == "config") apply_config_file(o, value, sources);
  }
  for (const auto& [name, value] : flags) {
    if (name == "config") continue;
    setters().at(name)(o, value, "--" + name);
    if (sources != nullptr) (*sources)[name] = "--" + name;
  }
  check_options(o);
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
            {"memory_format", o.memory_format},
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
            {"profile", o.profile},
            {"progress", o.progress},
            {"tensorboard", o.tensorboard},
            {"compile", o.compile}};
  return j.dump(2);
}

std::string usage() {
  return R"(usage: loom train [options]

Trains a model on Fashion-MNIST (Debian's dataset-fashion-mnist) and writes a run folder:
config.json, train.log, metrics.csv (per epoch), steps.csv (per step), metrics.svg,
report.json, checkpoint.safetensors.
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
  --memory-format auto|channels-last|contiguous  layout of the CNN's weights and activations
                            (default auto: channels-last on the CPU under oneDNN, faster there)
  --device cpu|cuda|cuda:N  where the model and the batches live (default cpu); cuda needs
                            the cuda plugin and a GPU, and says why when there is none
  --workers N               data-loading threads, 0 to 256 (default 0: in the training
                            thread); more than the cores only costs memory
  --data DIR                the IDX files (default /usr/share/datasets/fashion-mnist)
  --out DIR                 the run folder (default runs/<model>-<date>-<time>)
  --checkpoint PATH         where checkpoints go (default <out>/checkpoint.safetensors)
  --resume PATH             continue the run saved in PATH exactly (see below)
  --val-fraction X          hold out this part of the training set for validation
  --patience N              early stopping after N epochs without a better validation loss
  --limit-train N, --limit-test N  use only the first N samples (quick runs)
  --stop-after-steps N      stop (after saving a checkpoint) once N steps are done
  --progress auto|bar|lines|none  a bar on a terminal, plain lines otherwise (auto)
  --profile[=N]             profile N steps (default 10) after two unprofiled ones (the first
                            pays one-time costs) and write trace.json (Chrome/Perfetto trace:
                            every op with its provider, backward nodes, data loading, optimizer
                            steps) and profile.txt (time per op, per op and shapes, per
                            provider) into the run folder
  --tensorboard DIR         also log to TensorBoard event files in DIR: per step train/loss,
                            train/lr, train/samples_per_sec; per epoch epoch/train_loss,
                            epoch/test_accuracy, ... (at the epoch's last step); the options and
                            final test metrics in the HParams tab (tensorboard --logdir DIR)
  --compile[=true|false]    run the model through loom::compile: its pointwise chains become
                            generated loops, forward and backward (docs/guide/compile.md);
                            the first steps of each batch shape record and build them

resuming (--resume PATH): the run continues as saved, so
  --model --batch-size --lr --optimizer --momentum --weight-decay --scheduler --seed
  --val-fraction --patience --limit-train --limit-test
                            come from the checkpoint; giving one with another value is an
                            error (start a new run to change them)
  --epochs N                the checkpoint's unless given; given, the run ends after epoch N
                            instead (said in the log), except with --scheduler cosine or
                            onecycle, whose schedule spans the saved epochs
  --device --provider --memory-format --workers --data --out --checkpoint --progress
  --stop-after-steps --tensorboard --profile --compile
                            apply to this process as given (defaults when not given; --out:
                            the checkpoint's folder), so a run saved on a GPU resumes on a CPU
)";
}

}  // namespace loom::train
