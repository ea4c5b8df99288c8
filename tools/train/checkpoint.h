#pragma once
/// @file
/// loom-train's checkpoints: one safetensors file (loom/data/safetensors.h) with the model's
/// tensors under "model.", the optimizer's under "optim.", and the rest of the run's state as
/// JSON in the "loom.train" metadata entry. See Note [Checkpoint checks].
#include <cstdint>
#include <string>
#include <vector>

#include "loom/data/safetensors.h"
#include "metrics.h"
#include "options.h"

namespace loom::train {

/// Note [Checkpoint checks]
/// A checkpoint is read as untrusted input: a file cut short, a flipped byte or a hand-edited
/// value must stop the run with a message naming the file and the field, never crash it, read
/// out of bounds or send it round a loop for ages. So, before anything is used:
/// - the safetensors reader checks the layout and, for files Loom wrote, the checksums of every
///   tensor and of the metadata (Note [Checksums]);
/// - the stored config goes through apply_options_json and check_options, the command line's
///   rules, and must name every option that defines the run;
/// - every other metadata field is checked for type and range, the position against the config
///   (epoch <= epochs + 1, correct <= seen <= step_in_epoch x batch_size, one metrics row per
///   finished epoch), the scheduler's lists against the optimizer's parameter groups (a short
///   list would be read past its end), the generator's state by loading it into a scratch
///   generator; unknown fields and tensors are refused;
/// - once the data is loaded, check_resume_point checks the step against the epoch's length.
/// Losses may be NaN (a diverged run): JSON writes NaN as null, which reads back as NaN.

/// The parameter groups of loom-train's optimizers: one, holding every parameter.
inline constexpr size_t kParamGroups = 1;

/// Where the run stands; saved in every checkpoint.
struct Position {
  int64_t epoch = 1;                       ///< the epoch in progress (1-based)
  int64_t step_in_epoch = 0;               ///< steps of it already taken
  int64_t global_step = 0;                 ///< steps taken in the whole run
  double loss_sum = 0;                     ///< this epoch's running sum of loss x batch size
  int64_t correct = 0;                     ///< this epoch's correct predictions so far
  int64_t seen = 0;                        ///< this epoch's samples so far
  double seconds = 0;                      ///< training seconds of this epoch so far
  double train_seconds = 0;                ///< training seconds of the whole run so far
  double best_val_loss = 1e300;            ///< early stopping: the best validation loss
  int64_t epochs_without_improvement = 0;  ///< early stopping: epochs since it improved
  std::vector<EpochRow> rows;              ///< one per finished epoch
};

/// The "loom.train" metadata of a checkpoint (JSON text): the run's options, its position,
/// the optimizer's state dict JSON, the scheduler's state ("" for none) and the default
/// generator's state.
std::string checkpoint_metadata(const Options& o, const Position& pos,
                                const std::string& optimizer_json,
                                const std::string& scheduler_state, const std::string& rng_state);

/// A checkpoint read back, every field checked (Note [Checkpoint checks]).
struct Checkpoint {
  std::string path;              ///< where it was read from
  data::safetensors::File file;  ///< its tensors ("model.*", "optim.*")
  Options config;                ///< the stored config
  Position pos;                  ///< where the run stands
  std::string optimizer;         ///< the optimizer's state dict JSON
  std::string scheduler;         ///< the scheduler's state ("" for none)
  std::string rng;               ///< the default generator's state
};

/// Reads and checks the checkpoint at path (Note [Checkpoint checks]). Throws UserError
/// "--resume PATH: ..." naming the field and what was expected.
Checkpoint read_checkpoint(const std::string& path);

/// Checks what depends on the data: the step in the epoch against steps_per_epoch. Throws
/// UserError naming the file and the field.
void check_resume_point(const Checkpoint& c, int64_t steps_per_epoch);

/// Note [Options on resume]
/// `--resume` continues a run exactly, so the options split three ways:
/// - Those that define the run (kDefiningOptions: model, batch_size, lr, optimizer, momentum,
///   weight_decay, scheduler, seed, val_fraction, patience, limit_train, limit_test) come from
///   the checkpoint. Each shapes what the checkpoint holds (the weights, the optimizer and
///   scheduler state, the epoch's shuffled order and the position in it, the validation split),
///   so another value given is refused, naming the flag, the value and the stored one, rather
///   than dropped: in a PyTorch script a new lr passed before optimizer.load_state_dict is
///   silently replaced by the saved one, and the run is not the one asked for.
/// - epochs is the checkpoint's unless given; given, the run is extended or shortened and the
///   log says so, except under the cosine and onecycle schedules (their length follows the
///   epochs and is not in their state, so the learning rate would jump) and below the epoch in
///   progress, which are refused.
/// - The rest say how and where this process runs (device, provider, workers, data, out,
///   checkpoint, progress, stop_after_steps): from the command line, the defaults when not
///   given, whatever the checkpoint holds. A run saved on a GPU resumes on the CPU.

/// The options of a resumed run (Note [Options on resume]): sets o's defining options and its
/// epochs from the checkpoint c, given what the command line set (parse_options' sources).
/// Throws UserError "--resume PATH: --FLAG VALUE conflicts with the checkpoint's KEY VALUE..."
/// for a conflicting option. Returns the log lines that say what changed (a new --epochs).
std::vector<std::string> resume_options(Options& o, const OptionSources& given,
                                        const Checkpoint& c);

}  // namespace loom::train
