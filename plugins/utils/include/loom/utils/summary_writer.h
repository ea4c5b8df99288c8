#pragma once
/// @file
/// loom::utils::SummaryWriter: logs scalars, histograms, images, text and hyperparameters to
/// TensorBoard event files, as PyTorch's torch.utils.tensorboard.SummaryWriter does.
///
/// Note [Event files]
/// An event file is a sequence of records, each framed as TFRecord frames them: the payload's
/// length (uint64, little-endian), the masked CRC32C of those 8 bytes, the payload, the masked
/// CRC32C of the payload (mask: rotate right by 15 bits, add 0xa282ead8). Each payload is a
/// serialized Event protocol buffer; the first one holds file_version "brain.Event:2", the
/// others one Summary each. TensorBoard reads every file named events.out.tfevents.* in a
/// folder (a "run"); a writer names its file `events.out.tfevents.UNIXTIME.HOST.PID.N`
/// so that several writers, in one process or many, never share a file.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "loom/core/tensor.h"

namespace loom::utils {

/// How a SummaryWriter buffers and names its file.
struct SummaryWriterOptions {
  /// Events held in memory before they are written to the file (at least 1).
  int64_t max_queue = 10;
  /// Seconds after which an add_* call writes what is held, however few events (0: every
  /// call). Nothing is written between calls: there is no background thread.
  double flush_secs = 120;
  /// Appended to the file's name (e.g. ".train").
  std::string filename_suffix;
  /// A run resumed from a checkpoint taken at step purge_step - 1: the file starts with a
  /// SessionLog START event at purge_step, and TensorBoard then drops, from the run's earlier
  /// files, every event at purge_step or later (the steps the resumed run logs again).
  std::optional<int64_t> purge_step;
};

/// A hyperparameter's value for add_hparams: a number, a string or a bool.
class HParamValue {
 public:
  /// The kinds of value TensorBoard's hyperparameter table can show.
  enum class Kind { Number, String, Bool };
  /// A number (TensorBoard stores it as a double).
  HParamValue(double v) : kind_(Kind::Number), number_(v) {}  // NOLINT: implicit on purpose
  /// An integer, stored as a double (exact up to 2^53).
  HParamValue(int64_t v) : HParamValue(static_cast<double>(v)) {}  // NOLINT
  /// An integer, stored as a double.
  HParamValue(int v) : HParamValue(static_cast<double>(v)) {}  // NOLINT
  /// A string.
  HParamValue(std::string v) : kind_(Kind::String), text_(std::move(v)) {}  // NOLINT
  /// A string (not a bool, which a bare pointer would otherwise become).
  HParamValue(const char* v) : HParamValue(std::string(v)) {}  // NOLINT
  /// A bool.
  HParamValue(bool v) : kind_(Kind::Bool), flag_(v) {}  // NOLINT
  /// Which kind of value this is.
  Kind kind() const { return kind_; }
  /// The number (0 unless kind() is Number).
  double number() const { return number_; }
  /// The string ("" unless kind() is String).
  const std::string& text() const { return text_; }
  /// The bool (false unless kind() is Bool).
  bool flag() const { return flag_; }

 private:
  Kind kind_;
  double number_ = 0;
  std::string text_;
  bool flag_ = false;
};

/// Writes one TensorBoard event file in a folder (Note [Event files]). Every add_* call
/// appends one event; events are buffered (SummaryWriterOptions) and written by flush(),
/// close() and the destructor. Thread-safe: calls from several threads are serialized.
///
/// Errors: a folder that cannot be made or a file that cannot be written throws loom::Error
/// naming the path and the system's reason; a bad argument throws loom::ValueError or
/// loom::TypeError naming the function, the argument, its shape and dtype. The destructor never
/// throws (a failure there becomes a loom::warn).
///
/// @code
///   loom::utils::SummaryWriter writer("runs/exp1");
///   for (int64_t step = 0; step < 100; ++step) writer.add_scalar("train/loss", loss, step);
///   writer.close();  // or let the destructor flush
/// @endcode
class SummaryWriter {
 public:
  /// Opens a new event file in log_dir, making the folder (and its parents) if needed, and
  /// writes the file_version event. An empty log_dir means `runs/DATE-TIME_HOSTNAME`.
  /// Throws loom::Error naming the folder or file and the reason when it cannot.
  explicit SummaryWriter(std::string log_dir, SummaryWriterOptions options = {});
  /// Flushes and closes (see close()); never throws.
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  /// Logs value under tag at step (TensorBoard's Scalars tab). TensorBoard stores a scalar
  /// as a float32, so value is rounded to the nearest float. wall_time: seconds since the Unix
  /// epoch (default: now).
  void add_scalar(const std::string& tag, double value, int64_t step,
                  std::optional<double> wall_time = std::nullopt);

  /// Logs several related scalars on one chart: each key k of values goes to the run folder
  /// `LOG_DIR/MAIN_TAG_K` (a '/' in the name becomes '_') under the tag main_tag, as
  /// PyTorch's add_scalars does.
  void add_scalars(const std::string& main_tag, const std::map<std::string, double>& values,
                   int64_t step, std::optional<double> wall_time = std::nullopt);

  /// Logs a histogram of values' elements (any shape, any real dtype, any device) in bins
  /// buckets of equal width between the smallest and the largest element. Throws
  /// loom::ValueError if values is empty or holds NaN or infinity, or if bins < 1.
  void add_histogram(const std::string& tag, const Tensor& values, int64_t step, int64_t bins = 64,
                     std::optional<double> wall_time = std::nullopt);

  /// Logs an image, PNG-encoded. img is float32/float64 in [0, 1] (values outside are
  /// clamped) or uint8 in [0, 255], on any device, laid out as dataformats says: "CHW" (the
  /// default, as PyTorch) or "HWC" with 1 (grey), 3 (RGB) or 4 (RGBA) channels, or "HW"
  /// (grey). Throws loom::ValueError for another shape or layout, loom::TypeError for another
  /// dtype.
  void add_image(const std::string& tag, const Tensor& img, int64_t step,
                 std::string_view dataformats = "CHW",
                 std::optional<double> wall_time = std::nullopt);

  /// Logs text (TensorBoard's Text tab renders it as Markdown).
  void add_text(const std::string& tag, const std::string& text, int64_t step,
                std::optional<double> wall_time = std::nullopt);

  /// Logs one session of TensorBoard's hyperparameter table (its HParams tab): the
  /// hyperparameters' values, and metrics logged as scalars (step 0) under their names, which
  /// become the table's metric columns. run_name "" writes into this writer's own file, so the
  /// session is this run; another name writes into a new writer at `LOG_DIR/RUN_NAME`, as
  /// PyTorch's add_hparams does (one run per call). Throws loom::ValueError if hparams is
  /// empty.
  void add_hparams(const std::map<std::string, HParamValue>& hparams,
                   const std::map<std::string, double>& metrics, const std::string& run_name = "");

  /// Writes the buffered events to the file (and flushes those of add_scalars' runs). Throws
  /// loom::Error naming the file and the reason if the write fails.
  void flush();
  /// Flushes and closes the file; later add_* calls throw loom::Error. Calling it again does
  /// nothing.
  void close();

  /// The folder given (or the default one chosen).
  const std::string& log_dir() const { return log_dir_; }
  /// The event file's path.
  const std::string& file_path() const;

 private:
  class File;
  void add_event(const std::string& event, const char* function);
  SummaryWriter& child(const std::string& subdir);

  std::string log_dir_;
  SummaryWriterOptions options_;
  std::unique_ptr<File> file_;
  std::map<std::string, std::unique_ptr<SummaryWriter>> children_;
  std::mutex mutex_;
};

}  // namespace loom::utils
