#pragma once
/// @file
/// loom-train's options: defaults, a JSON config file (`--config FILE`), then the command line
/// on top, checked with a message that names the option and the value.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace loom::train {

/// The most --workers: each worker is a thread holding prefetched batches, and past the cores
/// more of them only cost memory (PyTorch warns past the CPU count). A fixed bound rather than
/// a multiple of this machine's cores, because the value is stored in checkpoints, and a run
/// saved on a large machine must resume on a small one. 256 is more than the cores of the
/// largest single machines and below the usual thread limits; a system that still refuses a
/// thread gets the DataLoader's error naming num_workers.
inline constexpr int64_t kMaxWorkers = 256;
/// Steps a bare --profile records.
inline constexpr int64_t kDefaultProfileSteps = 10;

/// Everything a run is configured by (written to the run folder as config.json).
struct Options {
  std::string model = "cnn";       ///< mlp | cnn
  int64_t epochs = 2;              ///< passes over the training set
  int64_t batch_size = 64;         ///< samples per step
  double lr = 1e-3;                ///< learning rate
  std::string optimizer = "adam";  ///< sgd | adam | adamw
  double momentum = 0.9;           ///< SGD momentum
  double weight_decay = 0;         ///< L2 (sgd, adam) or decoupled (adamw)
  std::string scheduler = "none";  ///< none | step | cosine | onecycle | plateau
  uint64_t seed = 0;               ///< weights, shuffling, augmentation
  std::string provider;            ///< reference | onednn | "" (the default: oneDNN if installed)
  /// auto | channels-last | contiguous: the layout of the model's 4-d weights and so of its
  /// activations (Note [Memory format]); auto is channels-last for the CNN on the CPU under the
  /// onednn provider (faster there, docs/design/training.md), contiguous otherwise.
  std::string memory_format = "auto";
  std::string device = "cpu";  ///< cpu | cuda | cuda:N (model and batches on it)
  int64_t workers = 0;         ///< DataLoader worker threads (at most kMaxWorkers)
  std::string data = "/usr/share/datasets/fashion-mnist";  ///< the IDX files' folder
  std::string out;                                         ///< run folder ("": runs/<model>-<time>)
  std::string checkpoint;   ///< checkpoint file ("": <out>/checkpoint.safetensors)
  std::string resume;       ///< checkpoint to resume from
  double val_fraction = 0;  ///< part of the training set held out for validation
  int64_t patience = 0;     ///< early stopping: epochs without a better validation loss (0: off)
  int64_t limit_train = 0;  ///< use only the first N training samples (0: all)
  int64_t limit_test = 0;   ///< use only the first N test samples (0: all)
  int64_t stop_after_steps = 0;   ///< end the run after this many steps (tests of resuming)
  int64_t profile = 0;            ///< profile this many steps (after 2) into trace.json; 0: off
  std::string progress = "auto";  ///< auto | bar | lines | none
  /// Run the model through loom::compile (fused pointwise loops, forward and backward); per
  /// process, like the device: a resume may turn it on or off.
  bool compile = false;
  /// TensorBoard log folder ("": none): per-step and per-epoch scalars, the run's hparams.
  /// Not part of what defines a run: a resume logs where its own command line says.
  std::string tensorboard;
};

/// A bad option: loom-train prints the message (and a hint to --help) and exits 2.
struct OptionError {
  std::string message;
};

/// A failure the user can fix (bad data folder, bad checkpoint): loom-train prints the
/// message and exits 2.
struct UserError {
  std::string message;
};

/// The options that a command line set, by flag name without "--" ("batch-size"), each with how
/// a message names where it came from: "--batch-size" for a flag, "--config FILE: batch_size"
/// for a key of a config file (a flag wins over the file). A resumed run checks them against
/// its checkpoint (Note [Options on resume] in checkpoint.h).
using OptionSources = std::map<std::string, std::string>;

/// Options from argv (after the program name): defaults, then --config FILE, then the flags.
/// Throws OptionError. Sets help to true for -h / --help. sources, if not null, gets every
/// option that --config or a flag set.
Options parse_options(const std::vector<std::string>& argv, bool& help,
                      OptionSources* sources = nullptr);

/// Why the file an option names cannot be read ("no such file", "it is a directory, not a
/// file", the system's reason), or "" if it can.
std::string unreadable_file(const std::string& path);

/// Sets the options that the JSON object j names (config.json's keys, '-' or '_' alike) with
/// the command line's rules: a --config file and the config stored in a checkpoint go through
/// this one function. Values are strings or numbers. Throws OptionError "<source>: <key> ...",
/// naming the key as j spells it, for an unknown key, a value of another type, or a value the
/// command line would refuse.
void apply_options_json(Options& o, const nlohmann::ordered_json& j, const std::string& source);

/// The rules between options (--patience needs --val-fraction), which parse_options applies
/// after every option is set; throws OptionError.
void check_options(const Options& o);

/// The options as a JSON object (config.json of a run; --config reads the same keys).
std::string options_json(const Options& o);

/// The --help text.
std::string usage();

}  // namespace loom::train
