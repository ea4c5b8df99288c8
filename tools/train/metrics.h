#pragma once
/// @file
/// Classification metrics (accuracy, per-class precision / recall / F1, the confusion
/// matrix) and the run's outputs: metrics.csv, metrics.svg, a progress display.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::train {

/// counts[t][p]: samples of true class t predicted as p.
class ConfusionMatrix {
 public:
  /// An empty matrix over n classes.
  explicit ConfusionMatrix(int64_t classes) : n_(classes), counts_(classes * classes, 0) {}
  /// Counts one prediction; labels outside [0, classes) are an error.
  void add(int64_t truth, int64_t predicted);
  /// Samples counted.
  int64_t total() const;
  /// Correct / total (0 when empty).
  double accuracy() const;
  /// Of the samples predicted c, the part that is c (0 when none is predicted c).
  double precision(int64_t c) const;
  /// Of the samples of class c, the part predicted c.
  double recall(int64_t c) const;
  /// Harmonic mean of precision and recall (0 when both are 0).
  double f1(int64_t c) const;
  /// The count of (truth, predicted).
  int64_t at(int64_t truth, int64_t predicted) const { return counts_[truth * n_ + predicted]; }
  /// Number of classes.
  int64_t classes() const { return n_; }
  /// The matrix and the per-class table as text (for the log).
  std::string str(const std::vector<std::string>& names) const;

 private:
  int64_t n_;
  std::vector<int64_t> counts_;
};

/// One epoch's line of metrics.csv.
struct EpochRow {
  int64_t epoch = 0;
  double train_loss = 0, train_accuracy = 0;
  double val_loss = -1, val_accuracy = -1;  ///< -1: no validation split
  double test_loss = 0, test_accuracy = 0;
  double lr = 0;
  double seconds = 0;
  double samples_per_second = 0;
};

/// One training step's line of steps.csv (and of the TensorBoard log).
struct StepRow {
  int64_t step = 0;            ///< the run's step count after it (1-based)
  int64_t epoch = 0;           ///< the epoch it belongs to
  double loss = 0;             ///< the batch's mean loss
  double lr = 0;               ///< the learning rate it used (first parameter group)
  double samples_per_sec = 0;  ///< the epoch's training throughput so far
};

/// Seconds since this process started (exec), from /proc; 0 if unknown.
double seconds_since_process_start();
/// This process's peak resident memory in MiB (getrusage).
double peak_rss_mib();

/// Writes text to path atomically (a temporary file beside it, named as Note [Atomic save] in
/// loom/data/safetensors.h names them; fsync; rename). Throws std::runtime_error naming the
/// file; the temporary file is then removed.
void write_file_atomically(const std::string& path, const std::string& text);
/// metrics.csv: a header and one line per epoch.
std::string metrics_csv(const std::vector<EpochRow>& rows);
/// steps.csv: a header and one line per step.
std::string steps_csv(const std::vector<StepRow>& rows);
/// The rows of a steps.csv that steps_csv wrote (a resumed run continues its file). Throws
/// std::runtime_error naming the line for any other text.
std::vector<StepRow> parse_steps_csv(const std::string& text);
/// metrics.svg: loss (train, test) and accuracy (train, test) against epochs, two panels; with
/// steps, a third panel below: the training loss of every step, raw and smoothed, against the
/// step, with the epochs' ends marked.
std::string metrics_svg(const std::vector<EpochRow>& rows, const std::string& title,
                        const std::vector<StepRow>& steps = {});

/// Progress of one epoch: a bar rewritten in place on a terminal, or a plain line every
/// tenth of the epoch otherwise (logs, CI).
class Progress {
 public:
  /// mode: "bar", "lines" or "none".
  Progress(std::string mode, int64_t epoch, int64_t epochs, int64_t steps);
  /// After step (1-based) with the running mean loss and samples seen this epoch.
  void update(int64_t step, double loss, int64_t samples);
  /// True if update(step, ...) would draw now, so that a caller whose values cost a device
  /// synchronization to read can fetch them only then (calling update only then draws the
  /// same lines).
  bool due(int64_t step) const;
  /// Ends the display (a newline after a bar).
  void finish();

 private:
  std::string mode_;
  int64_t epoch_, epochs_, steps_;
  int64_t next_line_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace loom::train
