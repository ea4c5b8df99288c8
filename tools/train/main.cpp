// loom-train (`loom train`): trains the MLP or the CNN on Fashion-MNIST with Loom's nn, optim
// and data libraries, writes a run folder (config, log, metrics, plot, checkpoints) and ends
// with one machine-readable RESULT line. Resuming from a checkpoint continues the run exactly:
// weights, optimizer and scheduler state, the position in the epoch's shuffled order, the
// epoch's running sums and the RNG state are all in the checkpoint.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "loom/compile/compile.h"
#include "loom/core/device_hooks.h"
#include "loom/data/dataloader.h"
#include "loom/data/datasets.h"
#include "loom/data/safetensors.h"
#include "loom/data/transforms.h"
#include "loom/loom.h"
#include "loom/nn/container.h"
#include "loom/optim/adam.h"
#include "loom/optim/lr_scheduler.h"
#include "loom/optim/sgd.h"
#include "loom/profiler/profiler.h"
#include "metrics.h"
#include "models.h"
#include "options.h"

#if LOOM_TRAIN_TENSORBOARD
#include "loom/utils/summary_writer.h"
#else
// Built without loom_utils (no protobuf or libpng): --tensorboard says so when it is used.
namespace loom::utils {
struct HParamValue {
  template <typename T>
  HParamValue(const T&) {}  // NOLINT
};
struct SummaryWriterOptions {
  int64_t max_queue = 0;
  double flush_secs = 0;
  std::optional<int64_t> purge_step;
};
struct SummaryWriter {
  SummaryWriter(const std::string&, const SummaryWriterOptions&) {
    throw Error(
        "this loom-train was built without loom_utils (TensorBoard needs protobuf and "
        "libpng at build time; see scripts/install-deps.sh)");
  }
  const std::string& file_path() const { return path_; }
  template <typename... A>
  void add_scalar(const A&...) {}
  void add_hparams(const std::map<std::string, HParamValue>&,
                   const std::map<std::string, double>&) {}
  void flush() {}
  void close() {}
  std::string path_;
};
}  // namespace loom::utils
#endif

namespace loom::train {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const std::vector<std::string> kClassNames = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                              "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                              "Bag",         "Ankle boot"};

/// Prints to stdout and appends to the run's train.log.
class Log {
 public:
  void open(const std::string& path) { file_.open(path, std::ios::app); }
  void line(const std::string& text) {
    std::cout << text << "\n" << std::flush;
    if (file_) file_ << text << "\n" << std::flush;
  }
  void file_only(const std::string& text) {
    if (file_) file_ << text << std::flush;
  }

 private:
  std::ofstream file_;
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void check_data_folder(const std::string& dir) {
  if (fs::exists(dir) && !fs::is_directory(dir)) {
    throw UserError{"--data " + dir +
                    ": is a file, not a folder (the folder of the Fashion-MNIST IDX files)"};
  }
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    const fs::path plain = fs::path(dir) / f;
    const fs::path gz = fs::path(dir) / (std::string(f) + ".gz");
    if (!fs::exists(plain) && !fs::exists(gz)) {
      throw UserError{"the Fashion-MNIST files are not in " + dir + " (missing " + gz.string() +
                      "); install Debian's dataset-fashion-mnist or pass --data DIR"};
    }
  }
}

/// Refuses, before anything is read or written, a path option that cannot be what it names: a
/// --resume file that is missing, a directory or unreadable; an --out that is a file; a
/// --checkpoint that is a directory or whose folder does not exist. (--config is read while
/// the options are parsed, --data when the data loads; each says the same of its path.)
void check_paths(const Options& o) {
  if (!o.resume.empty()) {
    if (const std::string why = unreadable_file(o.resume); !why.empty()) {
      throw UserError{"--resume: cannot read '" + o.resume + "': " + why};
    }
  }
  if (!o.out.empty() && fs::exists(o.out) && !fs::is_directory(o.out)) {
    throw UserError{"--out " + o.out + ": is a file, not a folder (the run folder)"};
  }
  if (!o.checkpoint.empty()) {
    if (fs::is_directory(o.checkpoint)) {
      throw UserError{"--checkpoint " + o.checkpoint +
                      ": is a directory; give the checkpoint file's path (e.g. " +
                      (fs::path(o.checkpoint) / "checkpoint.safetensors").string() + ")"};
    }
    fs::path dir = fs::path(o.checkpoint).parent_path();
    if (dir.empty()) dir = ".";
    if (!fs::is_directory(dir)) {
      throw UserError{"--checkpoint " + o.checkpoint + ": its folder " + dir.string() +
                      (fs::exists(dir) ? " is a file" : " does not exist")};
    }
    if (::access(dir.c_str(), W_OK) != 0) {
      throw UserError{"--checkpoint " + o.checkpoint + ": cannot write in its folder " +
                      dir.string() + ": " + std::strerror(errno)};
    }
  }
}

/// Makes the run folder, or says why it cannot.
void make_run_folder(const std::string& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw UserError{"--out " + out + ": cannot make the run folder: " + ec.message()};
}

/// The first n samples of a dataset (a deterministic split or a quick run).
class Slice final : public data::Dataset {
 public:
  Slice(std::shared_ptr<const data::Dataset> base, int64_t begin, int64_t end)
      : base_(std::move(base)), begin_(begin), end_(end) {}
  int64_t size() const override { return end_ - begin_; }
  data::Sample get(int64_t index) const override { return base_->get(begin_ + index); }
  std::optional<std::vector<Tensor>> get_many(const std::vector<int64_t>& indices) const override {
    std::vector<int64_t> shifted(indices);
    for (int64_t& i : shifted) i += begin_;
    return base_->get_many(shifted);
  }

 private:
  std::shared_ptr<const data::Dataset> base_;
  int64_t begin_, end_;
};

/// The device of --device: the CPU, or a CUDA device after loading the cuda plugin and
/// checking that the device exists. Refuses (exit 2) with the reason when there is none: no
/// plugin, no driver, no GPU, an index past the last device.
Device select_device(const std::string& spec) {
  if (spec == "cpu") return kCPU;
  const std::string what = "--device " + spec;
  try {
    PluginLoader::instance().load("cuda");
  } catch (const Error& e) {
    throw UserError{what + ": the CUDA plugin (cuda) could not be loaded: " + e.what()};
  }
  const DeviceType type = DeviceType::from_name("cuda");
  const DeviceHooks* hooks = find_device_hooks(type);
  const int count = hooks != nullptr ? hooks->device_count() : 0;
  if (count <= 0) {
    std::string why = hooks != nullptr ? hooks->unavailable_reason() : "";
    if (why.empty())
      why = hooks != nullptr ? "the driver reports 0 devices"
                             : "the cuda plugin registered no device hooks";
    throw UserError{what + ": no CUDA device is available: " + why};
  }
  const Device parsed(spec);
  const int index = parsed.index() < 0 ? hooks->current_device() : parsed.index();
  if (index >= count) {
    throw UserError{
        what + ": there " +
        (count == 1 ? "is 1 CUDA device" : "are " + std::to_string(count) + " CUDA devices") +
        " (cuda:0 to cuda:" + std::to_string(count - 1) + ")"};
  }
  hooks->set_current_device(static_cast<int16_t>(index));
  return Device(type, static_cast<int16_t>(index));
}

/// t on device. A batch in pinned memory is copied asynchronously (non_blocking); see Note
/// [Pinned batches] in loom/data/dataloader.h.
Tensor to_device(const Tensor& t, Device device) {
  if (device.is_cpu() || t.device() == device) return t;
  Tensor out = Tensor::empty(t.sizes(), TensorOptions{}.with(t.dtype()).with(device));
  loom::copy_(out, t, /*non_blocking=*/data::is_pinned(t));
  return out;
}

/// A CPU copy of t (t itself if it is on the CPU): for item(), metrics and checkpoints.
Tensor to_cpu(const Tensor& t) { return t.device().is_cpu() ? t : t.detach().to(kCPU); }

/// Note [Metrics on the device]: on a GPU, reading a step's loss and correct count back
/// waits for the step to finish, which keeps the CPU from queueing the next steps while the
/// GPU runs. So there they are added up on the device, from the host's running sums, and read
/// back (one synchronization) only when something needs them: the progress display when it
/// draws, the first step (first_step_seconds), a checkpoint, the end of the epoch. The loss sum
/// is formed exactly as on the CPU (each step's float32 loss as float64 times the batch size,
/// added in step order), so the numbers do not depend on when they are read.
class DeviceSums {
 public:
  /// Adds a step's loss (a float scalar) and correct count (an int64 scalar) on the device.
  template <typename P>
  void add(const Tensor& loss, const Tensor& correct, int64_t n, const P& pos, Device device) {
    if (!loss_.defined()) {
      loss_ = to_device(Tensor::scalar(pos.loss_sum), device);
      correct_ = to_device(Tensor::scalar(pos.correct), device);
    }
    loss_ = loss_ + loss.detach().to(DType::Float64) * static_cast<double>(n);
    correct_ = correct_ + correct;
  }
  /// True if some steps are not read back yet.
  bool pending() const { return loss_.defined(); }
  /// Reads the sums back into pos (nothing when none is pending).
  template <typename P>
  void read(P& pos) {
    if (!pending()) return;
    pos.loss_sum = to_cpu(loss_).item<double>();
    pos.correct = to_cpu(correct_).item<int64_t>();
    loss_ = correct_ = Tensor();
  }

 private:
  Tensor loss_, correct_;
};

/// The per-step log: steps.csv's rows and, with --tensorboard, the train/* scalars. On a GPU a
/// step's loss stays on the device until the sums are read back (Note [Metrics on the
/// device]); its row waits with it, and all waiting rows are read at once.
class StepLog {
 public:
  StepLog(std::vector<StepRow> rows, utils::SummaryWriter* tb, std::string tb_dir)
      : rows_(std::move(rows)), tb_(tb), tb_dir_(std::move(tb_dir)) {}

  /// A finished step; loss is its loss tensor on the device, or undefined when row.loss
  /// holds the value already.
  void add(const StepRow& row, const Tensor& loss) {
    if (!loss.defined()) {
      record(row);
    } else {
      pending_.emplace_back(row, loss.detach());
    }
  }
  /// Reads the waiting losses back and records their rows.
  void resolve() {
    for (auto& [row, loss] : pending_) {
      row.loss = to_cpu(loss).item<double>();
      record(row);
    }
    pending_.clear();
  }
  /// Every recorded step.
  const std::vector<StepRow>& rows() const { return rows_; }

 private:
  void record(const StepRow& r) {
    rows_.push_back(r);
    if (tb_ == nullptr) return;
    try {
      tb_->add_scalar("train/loss", r.loss, r.step);
      tb_->add_scalar("train/lr", r.lr, r.step);
      tb_->add_scalar("train/samples_per_sec", r.samples_per_sec, r.step);
    } catch (const Error& e) {
      throw UserError{"--tensorboard " + tb_dir_ + ": " + e.what()};
    }
  }

  std::vector<StepRow> rows_;
  std::vector<std::pair<StepRow, Tensor>> pending_;
  utils::SummaryWriter* tb_;
  std::string tb_dir_;
};

/// The steps.csv of the run folder that a resumed run continues: its rows up to the
/// checkpoint's step (the later ones are taken again). A missing or unreadable file gives an
/// empty log, said in the log: the file is a report, never needed to continue the run.
std::vector<StepRow> read_steps(const std::string& out, int64_t up_to,
                                const std::function<void(const std::string&)>& note) {
  const fs::path path = fs::path(out) / "steps.csv";
  if (!fs::exists(path)) return {};
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<StepRow> rows;
  try {
    rows = parse_steps_csv(text);
  } catch (const std::exception& e) {
    note("starting a new " + path.string() + ": the old one cannot be continued (" + e.what() +
         ")");
    return {};
  }
  while (!rows.empty() && rows.back().step > up_to) rows.pop_back();
  return rows;
}

/// The run's options that TensorBoard's HParams tab shows (those that define a run).
std::map<std::string, utils::HParamValue> hparams_of(const Options& o) {
  return {{"model", o.model},
          {"epochs", o.epochs},
          {"batch_size", o.batch_size},
          {"lr", o.lr},
          {"optimizer", o.optimizer},
          {"momentum", o.momentum},
          {"weight_decay", o.weight_decay},
          {"scheduler", o.scheduler},
          {"seed", static_cast<double>(o.seed)},
          {"val_fraction", o.val_fraction},
          {"patience", o.patience}};
}

/// Loss and accuracy of model on loader, with the confusion matrix.
struct Evaluation {
  double loss = 0;
  ConfusionMatrix confusion{10};
};

/// The model's call: (*model)(x), or its compiled form with --compile.
using Forward = std::function<Tensor(const Tensor&)>;

Evaluation evaluate(nn::Module& model, const Forward& forward, data::DataLoader& loader,
                    Device device) {
  autograd::NoGradGuard no_grad;
  model.eval();
  Evaluation e;
  double loss_sum = 0;
  int64_t seen = 0;
  for (data::Batch& b : loader) {
    const Tensor logits = forward(to_device(b[0], device));
    const int64_t n = b[0].size(0);
    loss_sum += to_cpu(cross_entropy(logits, to_device(b[1], device))).item<double>() *
                static_cast<double>(n);
    const Tensor pred = to_cpu(logits.argmax(1)).contiguous();
    const Tensor truth = b[1].contiguous();
    const int64_t* p = pred.data_ptr<int64_t>();
    const int64_t* t = truth.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) e.confusion.add(t[i], p[i]);
    seen += n;
  }
  e.loss = seen ? loss_sum / static_cast<double>(seen) : 0;
  model.train();
  return e;
}

/// The run's learning-rate schedule, whichever kind it is.
struct Schedule {
  std::shared_ptr<optim::LRScheduler> per_step;   // onecycle
  std::shared_ptr<optim::LRScheduler> per_epoch;  // step, cosine
  std::shared_ptr<optim::ReduceLROnPlateau> plateau;
  std::string state() const {
    if (per_step) return per_step->state_dict();
    if (per_epoch) return per_epoch->state_dict();
    if (plateau) return plateau->state_dict();
    return "";
  }
  void load(const std::string& s) {
    if (s.empty()) return;
    if (per_step) per_step->load_state_dict(s);
    if (per_epoch) per_epoch->load_state_dict(s);
    if (plateau) plateau->load_state_dict(s);
  }
};

void save_checkpoint(const std::string& path, nn::Module& model, const optim::Optimizer& opt,
                     const Schedule& schedule, const Position& pos, const Options& o) {
  // Written from CPU copies: the file is the same whatever device trained.
  data::safetensors::TensorList tensors;
  for (const auto& [name, t] : model.state_dict()) tensors.emplace_back("model." + name, to_cpu(t));
  const optim::OptimizerStateDict osd = opt.state_dict();
  for (const auto& [name, t] : osd.tensors) tensors.emplace_back("optim." + name, to_cpu(t));
  data::safetensors::save_file(
      path, tensors,
      {{"loom.train",
        checkpoint_metadata(o, pos, osd.json, schedule.state(), default_generator().get_state())}});
}

/// Restores a checked checkpoint (Note [Checkpoint checks]) into the run. What only the model,
/// the optimizer or the scheduler can check is refused naming the file and the part.
void load_checkpoint(const Checkpoint& c, nn::Module& model, optim::Optimizer& opt,
                     Schedule& schedule, Position& pos) {
  const std::string where = "--resume " + c.path + ": ";
  nn::StateDict sd;
  optim::OptimizerStateDict osd;
  for (const auto& [name, t] : c.file.tensors) {
    if (name.rfind("model.", 0) == 0) sd.insert(name.substr(6), t);
    if (name.rfind("optim.", 0) == 0) osd.tensors[name.substr(6)] = t;
  }
  try {
    model.load_state_dict(sd, /*strict=*/true);
  } catch (const Error& e) {
    throw UserError{where + "the model tensors (model.*) do not fit the model: " + e.what()};
  }
  osd.json = c.optimizer;
  try {
    opt.load_state_dict(osd);
  } catch (const Error& e) {
    throw UserError{where + "field 'optimizer' (and the optim.* tensors): " + e.what()};
  }
  try {
    schedule.load(c.scheduler);
  } catch (const Error& e) {
    throw UserError{where + "field 'scheduler': " + e.what()};
  }
  pos = c.pos;
  default_generator().set_state(c.rng);  // read_checkpoint loaded it into a scratch generator
}

/// Deletes what interrupted saves left in the run folder and beside the checkpoint (Note
/// [Atomic save] in loom/data/safetensors.h): Loom's temporary files whose process is gone.
std::vector<std::string> remove_stale_temporaries(const Options& o) {
  namespace st = data::safetensors;
  try {
    std::vector<std::string> removed = st::remove_stale_temporaries(o.out);
    fs::path dir = fs::path(o.checkpoint).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!fs::equivalent(dir, o.out, ec)) {
      for (std::string& p :
           st::remove_stale_temporaries(dir.string(), fs::path(o.checkpoint).filename().string()))
        removed.push_back(std::move(p));
    }
    return removed;
  } catch (const Error& e) {
    throw UserError{e.what()};
  }
}

std::string timestamp() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return buf;
}

int run(Options o, const OptionSources& given) {
  Log log;
  // The device first: a run that cannot have its GPU fails before it reads any data.
  loom::init();
  const Device device = select_device(o.device);
  check_paths(o);
  // Resuming: the run's defining options come from its checkpoint, read and checked whole
  // before anything else happens (Note [Checkpoint checks], Note [Options on resume]).
  std::optional<Checkpoint> resumed;
  std::vector<std::string> resume_changes;
  if (!o.resume.empty()) {
    resumed = read_checkpoint(o.resume);
    resume_changes = resume_options(o, given, *resumed);
    if (o.out.empty()) o.out = fs::path(o.resume).parent_path().string();
  }
  check_data_folder(o.data);
  if (o.out.empty()) o.out = "runs/" + o.model + "-" + timestamp();
  make_run_folder(o.out);
  if (o.checkpoint.empty()) o.checkpoint = (fs::path(o.out) / "checkpoint.safetensors").string();
  if (o.progress == "auto") o.progress = ::isatty(STDOUT_FILENO) ? "bar" : "lines";
  const std::vector<std::string> stale = remove_stale_temporaries(o);
  log.open((fs::path(o.out) / "train.log").string());
  for (const std::string& path : stale) {
    log.line("removed " + path + ", the temporary file of an interrupted save");
  }
  write_file_atomically((fs::path(o.out) / "config.json").string(), options_json(o) + "\n");

  Dispatcher& d = Dispatcher::instance();
  if (!o.provider.empty()) {
    if (o.provider == "onednn" && !PluginLoader::instance().is_loaded("cpu_onednn")) {
      throw UserError{"--provider onednn: the oneDNN plugin (cpu_onednn) is not installed"};
    }
    d.set_preferred_provider(DispatchKey::CPU, o.provider);
  }
  const std::string provider = PluginLoader::instance().is_loaded("cpu_onednn") &&
                                       d.preferred_provider(DispatchKey::CPU) != "reference"
                                   ? "onednn"
                                   : "reference";

  // Data: pixels to [0, 1], then Fashion-MNIST's mean and standard deviation (ToTensor and
  // Normalize). The transforms are deterministic, so they run once over the whole set, in
  // float32 exactly as per sample, and batches are gathered with one index_select per field.
  auto normalized = [&](bool train) -> std::shared_ptr<const data::Dataset> {
    data::MnistDataset raw(o.data, train);
    // In place: one float copy of the images at a time (peak memory and start-up).
    Tensor images = raw.images().to(DType::Float32);
    images.div_(Tensor::scalar(255.0f)).sub_(Tensor::scalar(0.2860f)).div_(Tensor::scalar(0.3530f));
    return std::make_shared<data::TensorDataset>(
        std::vector<Tensor>{images.unsqueeze(1), raw.labels()});
  };
  std::shared_ptr<const data::Dataset> train_all, test_set;
  try {
    train_all = normalized(true);
    test_set = normalized(false);
  } catch (const Error& e) {
    throw UserError{e.what()};
  }
  int64_t n_train = train_all->size();
  if (o.limit_train > 0) n_train = std::min(n_train, o.limit_train);
  const int64_t n_val =
      static_cast<int64_t>(std::floor(static_cast<double>(n_train) * o.val_fraction));
  auto train_set = std::make_shared<Slice>(train_all, 0, n_train - n_val);
  auto val_set = std::make_shared<Slice>(train_all, n_train - n_val, n_train);
  if (o.limit_test > 0 && o.limit_test < test_set->size()) {
    test_set = std::make_shared<Slice>(test_set, 0, o.limit_test);
  }
  data::DataLoaderOptions train_opts;
  train_opts.batch_size = o.batch_size;
  train_opts.shuffle = true;
  train_opts.seed = o.seed;
  train_opts.num_workers = static_cast<int>(o.workers);
  train_opts.pin_memory = !device.is_cpu();
  data::DataLoader train_loader(train_set, train_opts);
  data::DataLoaderOptions eval_opts;
  eval_opts.batch_size = 1000;
  eval_opts.num_workers = static_cast<int>(o.workers);
  eval_opts.pin_memory = !device.is_cpu();
  data::DataLoader test_loader(test_set, eval_opts);
  data::DataLoader val_loader(val_set, eval_opts);
  const int64_t steps_per_epoch = train_loader.size();
  if (resumed) check_resume_point(*resumed, steps_per_epoch);

  // Model, optimizer, schedule: all drawn from the seed. The weights are drawn on the CPU and
  // then moved, so a run starts from the same weights on every device.
  manual_seed(o.seed);
  auto model = make_model(o.model);
  model->to(device);
  // Channels-last (Note [Memory format] in loom/ops/nn/memory_format.h): the convolutions,
  // pooling and relu then run in oneDNN's fastest layout with no reorder per call. Only the
  // layout changes: the weights' values, the checkpoint (written contiguous) and the numbers
  // computed are the same.
  const bool channels_last =
      o.memory_format == "channels-last" ||
      (o.memory_format == "auto" && o.model == "cnn" && device.is_cpu() && provider == "onednn");
  if (channels_last) model->to(MemoryFormat::ChannelsLast);
  model->train();
  std::unique_ptr<optim::Optimizer> opt;
  if (o.optimizer == "sgd") {
    optim::SGDOptions so(o.lr);
    so.momentum(o.momentum).weight_decay(o.weight_decay);
    opt = std::make_unique<optim::SGD>(model->parameters(), so);
  } else if (o.optimizer == "adam") {
    optim::AdamOptions ao(o.lr);
    ao.weight_decay(o.weight_decay);
    opt = std::make_unique<optim::Adam>(model->parameters(), ao);
  } else {
    optim::AdamWOptions ao(o.lr);
    if (o.weight_decay > 0) ao.weight_decay(o.weight_decay);
    opt = std::make_unique<optim::AdamW>(model->parameters(), ao);
  }
  // Checkpoints are checked against this (a scheduler's lists hold one entry per group).
  LOOM_CHECK(opt->param_groups().size() == kParamGroups, "loom train: expected ", kParamGroups,
             " parameter group(s), the optimizer has ", opt->param_groups().size());
  Schedule schedule;
  if (o.scheduler == "step") {
    schedule.per_epoch = std::make_shared<optim::StepLR>(*opt, 1, 0.5);
  } else if (o.scheduler == "cosine") {
    schedule.per_epoch = std::make_shared<optim::CosineAnnealingLR>(*opt, o.epochs);
  } else if (o.scheduler == "onecycle") {
    optim::OneCycleLR::Options oc;
    oc.max_lr = {o.lr};
    oc.total_steps = o.epochs * steps_per_epoch;
    schedule.per_step = std::make_shared<optim::OneCycleLR>(*opt, oc);
  } else if (o.scheduler == "plateau") {
    optim::ReduceLROnPlateau::Options po;
    po.patience = 1;
    po.factor = 0.5;
    schedule.plateau = std::make_shared<optim::ReduceLROnPlateau>(*opt, po);
  }

  Position pos;
  if (resumed) {
    load_checkpoint(*resumed, *model, *opt, schedule, pos);
    log.line("resuming " + o.resume + " at epoch " + std::to_string(pos.epoch) + ", step " +
             std::to_string(pos.step_in_epoch) + " of " + std::to_string(steps_per_epoch));
    for (const std::string& change : resume_changes) log.line(change);
  }
  // --compile: the model's calls go through loom::compile, which keeps graphs per training
  // mode and batch shape (the last, smaller batch of an epoch is another graph).
  std::optional<CompiledModule> compiled;
  if (o.compile) compiled = loom::compile(model, {.name = "loom train " + o.model});
  const Forward forward = [&](const Tensor& x) { return compiled ? (*compiled)(x) : (*model)(x); };
  // --compile's counts: logged when the run ends (or stops), and in report.json.
  auto compile_report = [&]() -> json {
    if (!compiled) return nullptr;
    const CompileStats c = compiled->stats();
    log.line("loom::compile: " + std::to_string(c.captures) + " graphs recorded, " +
             std::to_string(c.replays) + " calls replayed, " + std::to_string(c.fused_groups) +
             " fused groups (" + std::to_string(c.compiles) + " built, " +
             std::to_string(c.cache_hits) + " from the cache, " + std::to_string(c.fallbacks) +
             " left unfused), " + std::to_string(c.eager) + " calls eager");
    return {{"captures", c.captures},   {"replays", c.replays},       {"eager", c.eager},
            {"fused_groups", c.fused_groups}, {"compiles", c.compiles},
            {"cache_hits", c.cache_hits},     {"fallbacks", c.fallbacks}};
  };
  log.line("loom train: model " + o.model + ", " + std::to_string(model->parameters().size()) +
           " parameter tensors, " + std::to_string(train_set->size()) + " training samples" +
           (n_val ? ", " + std::to_string(n_val) + " for validation" : std::string()) + ", " +
           std::to_string(test_set->size()) + " test samples, optimizer " + o.optimizer +
           ", provider " + provider + ", device " + device.str() +
           (channels_last ? ", channels-last" : "") + ", out " + o.out);

  // --tensorboard: a resumed run's file starts past the checkpoint's step, so TensorBoard
  // drops what the interrupted run logged after it (the steps are taken again).
  std::unique_ptr<utils::SummaryWriter> tb;
  if (!o.tensorboard.empty()) {
    utils::SummaryWriterOptions tbo;
    tbo.max_queue = 100;
    tbo.flush_secs = 5;
    if (resumed) tbo.purge_step = pos.global_step + 1;
    try {
      tb = std::make_unique<utils::SummaryWriter>(o.tensorboard, tbo);
    } catch (const Error& e) {
      throw UserError{"--tensorboard " + o.tensorboard + ": " + e.what()};
    }
    log.line("TensorBoard log: " + tb->file_path());
  }
  StepLog steps(
      resumed ? read_steps(o.out, pos.global_step, [&](const std::string& text) { log.line(text); })
              : std::vector<StepRow>{},
      tb.get(), o.tensorboard);
  auto log_epoch = [&](const EpochRow& row) {
    if (!tb) return;
    try {
      // At the step the epoch ended on, not its number: one x axis with train/*, and a
      // resumed run's purge (by step) then covers these too.
      auto put = [&](const char* name, double v) { tb->add_scalar(name, v, pos.global_step); };
      put("epoch/train_loss", row.train_loss);
      put("epoch/train_accuracy", row.train_accuracy);
      if (row.val_loss >= 0) {
        put("epoch/val_loss", row.val_loss);
        put("epoch/val_accuracy", row.val_accuracy);
      }
      put("epoch/test_loss", row.test_loss);
      put("epoch/test_accuracy", row.test_accuracy);
      put("epoch/lr", row.lr);
      put("epoch/seconds", row.seconds);
      put("epoch/samples_per_second", row.samples_per_second);
      tb->flush();
    } catch (const Error& e) {
      throw UserError{"--tensorboard " + o.tensorboard + ": " + e.what()};
    }
  };

  auto write_outputs = [&] {
    write_file_atomically((fs::path(o.out) / "metrics.csv").string(), metrics_csv(pos.rows));
    write_file_atomically((fs::path(o.out) / "steps.csv").string(), steps_csv(steps.rows()));
    write_file_atomically((fs::path(o.out) / "metrics.svg").string(),
                          metrics_svg(pos.rows, "loom train: " + o.model, steps.rows()));
  };

  // --profile N: steps 1-2 unprofiled (one-time costs), then N recorded; the trace and the
  // tables go into the run folder when the window closes (or the run ends inside it).
  std::unique_ptr<profiler::ScheduledProfiler> prof;
  if (o.profile > 0) {
    prof = std::make_unique<profiler::ScheduledProfiler>(
        profiler::Schedule{.wait = 1, .warmup = 1, .active = o.profile, .repeat = 1},
        profiler::ProfilerOptions{.record_shapes = true},
        [&o, &log](const profiler::Profile& p) {
          p.export_chrome_trace((fs::path(o.out) / "trace.json").string());
          write_file_atomically((fs::path(o.out) / "profile.txt").string(),
                                "By op:\n" + p.table(profiler::GroupBy::Op, 25) +
                                    "\nBy op and provider:\n" +
                                    p.table(profiler::GroupBy::Provider, 25) +
                                    "\nBy op and input shapes:\n" +
                                    p.table(profiler::GroupBy::OpAndShapes, 25));
          log.line("profile: " + std::to_string(p.events().size()) + " events in " +
                   (fs::path(o.out) / "trace.json").string() + " (open it in Perfetto), tables in " +
                   (fs::path(o.out) / "profile.txt").string());
        });
  }

  Evaluation last_test;
  bool stopped_early = false;
  double first_step_seconds = -1;  // from process start: start-up, data, model, one step
  DeviceSums sums;
  for (; pos.epoch <= o.epochs; ++pos.epoch) {
    train_loader.set_epoch(pos.epoch);
    Progress progress(o.progress, pos.epoch, o.epochs, steps_per_epoch);
    int64_t step = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (data::Batch& b : train_loader) {
      if (++step <= pos.step_in_epoch) continue;  // resumed: already taken
      const Tensor images = to_device(b[0], device), labels = to_device(b[1], device);
      const Tensor logits = forward(images);
      const Tensor loss = cross_entropy(logits, labels);
      opt->zero_grad();
      loss.backward();
      const double step_lr = opt->param_groups().front().options->get_lr();
      opt->step();
      if (schedule.per_step) schedule.per_step->step();
      const int64_t n = b[0].size(0);
      const bool stopping = o.stop_after_steps > 0 && pos.global_step + 1 >= o.stop_after_steps;
      double step_loss = 0;
      if (device.is_cpu()) {
        step_loss = loss.item<double>();
        pos.loss_sum += step_loss * static_cast<double>(n);
        pos.correct += logits.argmax(1).eq(labels).sum().item<int64_t>();
      } else {
        sums.add(loss, logits.argmax(1).eq(labels).sum(), n, pos, device);
        if (first_step_seconds < 0 || stopping || step == steps_per_epoch || progress.due(step)) {
          sums.read(pos);
        }
      }
      pos.seen += n;
      ++pos.step_in_epoch;
      ++pos.global_step;
      if (first_step_seconds < 0) first_step_seconds = seconds_since_process_start();
      const double elapsed =
          pos.seconds +
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      steps.add({pos.global_step, pos.epoch, step_loss, step_lr,
                 elapsed > 0 ? static_cast<double>(pos.seen) / elapsed : 0},
                device.is_cpu() ? Tensor() : loss);
      if (device.is_cpu() || !sums.pending()) {
        steps.resolve();
        progress.update(step, pos.loss_sum / static_cast<double>(pos.seen), pos.seen);
      }
      if (prof) prof->step();
      if (o.stop_after_steps > 0 && pos.global_step >= o.stop_after_steps) {
        const auto now = std::chrono::steady_clock::now();
        pos.seconds += std::chrono::duration<double>(now - t0).count();
        pos.train_seconds += std::chrono::duration<double>(now - t0).count();
        progress.finish();
        save_checkpoint(o.checkpoint, *model, *opt, schedule, pos, o);
        write_file_atomically((fs::path(o.out) / "steps.csv").string(), steps_csv(steps.rows()));
        if (tb) tb->flush();
        const json partial = {{"stopped_after_steps", pos.global_step},
                              {"first_step_seconds", first_step_seconds},
                              {"peak_rss_mib", peak_rss_mib()},
                              {"compile", compile_report()}};
        write_file_atomically((fs::path(o.out) / "report.json").string(), partial.dump(2) + "\n");
        log.line("stopped after " + std::to_string(pos.global_step) + " steps; checkpoint " +
                 o.checkpoint + " (continue with --resume " + o.checkpoint + ")");
        return 0;
      }
    }
    sums.read(pos);
    steps.resolve();
    progress.finish();
    const double epoch_seconds =
        pos.seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    pos.train_seconds += epoch_seconds - pos.seconds;

    EpochRow row;
    row.epoch = pos.epoch;
    row.train_loss = pos.seen ? pos.loss_sum / static_cast<double>(pos.seen) : 0;
    row.train_accuracy =
        pos.seen ? static_cast<double>(pos.correct) / static_cast<double>(pos.seen) : 0;
    row.lr = opt->param_groups().front().options->get_lr();
    row.seconds = epoch_seconds;
    row.samples_per_second = epoch_seconds > 0 ? static_cast<double>(pos.seen) / epoch_seconds : 0;
    if (n_val > 0) {
      const Evaluation v = evaluate(*model, forward, val_loader, device);
      row.val_loss = v.loss;
      row.val_accuracy = v.confusion.accuracy();
    }
    last_test = evaluate(*model, forward, test_loader, device);
    row.test_loss = last_test.loss;
    row.test_accuracy = last_test.confusion.accuracy();
    pos.rows.push_back(row);
    log.line("epoch " + std::to_string(pos.epoch) + "/" + std::to_string(o.epochs) +
             ": train loss " + fmt("%.4f", row.train_loss) + " accuracy " +
             fmt("%.4f", row.train_accuracy) +
             (n_val ? ", validation loss " + fmt("%.4f", row.val_loss) + " accuracy " +
                          fmt("%.4f", row.val_accuracy)
                    : std::string()) +
             ", test loss " + fmt("%.4f", row.test_loss) + " accuracy " +
             fmt("%.4f", row.test_accuracy) + ", " + fmt("%.1f", epoch_seconds) + " s, " +
             fmt("%.0f", row.samples_per_second) + " samples/s");

    if (schedule.per_epoch) schedule.per_epoch->step();
    if (schedule.plateau) schedule.plateau->step(n_val ? row.val_loss : row.test_loss);
    bool stop = false;
    if (o.patience > 0 && n_val > 0) {
      if (row.val_loss < pos.best_val_loss) {
        pos.best_val_loss = row.val_loss;
        pos.epochs_without_improvement = 0;
      } else if (++pos.epochs_without_improvement >= o.patience) {
        stop = true;
      }
    }
    // The next epoch starts from scratch; the checkpoint says so.
    pos.step_in_epoch = 0;
    pos.loss_sum = 0;
    pos.correct = pos.seen = 0;
    pos.seconds = 0;
    ++pos.epoch;
    save_checkpoint(o.checkpoint, *model, *opt, schedule, pos, o);
    --pos.epoch;
    write_outputs();
    log_epoch(row);
    if (stop) {
      log.line("early stopping: validation loss did not improve for " + std::to_string(o.patience) +
               " epochs");
      stopped_early = true;
      break;
    }
  }
  if (pos.rows.empty()) throw UserError{"nothing to train: the run is already complete"};
  write_outputs();

  // The final report: per-class metrics and the confusion matrix of the test set.
  const std::string matrix =
      last_test.confusion.total() ? last_test.confusion.str(kClassNames) : "";
  if (!matrix.empty()) {
    log.file_only(matrix);
    if (o.progress != "none") std::cout << matrix;
  }
  json classes = json::array();
  for (int64_t c = 0; c < 10; ++c) {
    classes.push_back({{"class", kClassNames[c]},
                       {"precision", last_test.confusion.precision(c)},
                       {"recall", last_test.confusion.recall(c)},
                       {"f1", last_test.confusion.f1(c)}});
  }
  json confusion = json::array();
  for (int64_t t = 0; t < 10; ++t) {
    json r = json::array();
    for (int64_t p = 0; p < 10; ++p) r.push_back(last_test.confusion.at(t, p));
    confusion.push_back(r);
  }
  const EpochRow& last = pos.rows.back();
  json epoch_seconds = json::array();
  for (const EpochRow& r : pos.rows) epoch_seconds.push_back(r.seconds);
  const json report = {{"model", o.model},
                       {"epochs", last.epoch},
                       {"early_stopped", stopped_early},
                       {"test_accuracy", last.test_accuracy},
                       {"test_loss", last.test_loss},
                       {"train_seconds", pos.train_seconds},
                       {"provider", provider},
                       {"device", device.str()},
                       {"epoch_seconds", epoch_seconds},
                       {"first_step_seconds", first_step_seconds},
                       {"peak_rss_mib", peak_rss_mib()},
                       {"compile", compile_report()},
                       {"per_class", classes},
                       {"confusion_matrix", confusion}};
  write_file_atomically((fs::path(o.out) / "report.json").string(), report.dump(2) + "\n");
  if (tb) {
    try {
      tb->add_hparams(hparams_of(o), {{"hparam/test_accuracy", last.test_accuracy},
                                      {"hparam/test_loss", last.test_loss}});
      tb->close();
    } catch (const Error& e) {
      throw UserError{"--tensorboard " + o.tensorboard + ": " + e.what()};
    }
  }
  log.line("RESULT model=" + o.model + " epochs=" + std::to_string(last.epoch) + " test_accuracy=" +
           fmt("%.4f", last.test_accuracy) + " train_seconds=" + fmt("%.1f", pos.train_seconds));
  return 0;
}

}  // namespace
}  // namespace loom::train

int main(int argc, char** argv) {
  using namespace loom::train;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    bool help = false;
    OptionSources given;
    Options o = parse_options(args, help, &given);
    if (help) {
      std::cout << usage();
      return 0;
    }
    return run(std::move(o), given);
  } catch (const OptionError& e) {
    std::cerr << "loom train: " << e.message << "\n(see loom train --help)\n";
    return 2;
  } catch (const UserError& e) {
    std::cerr << "loom train: " << e.message << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "loom train: error: " << e.what() << "\n";
    return 1;
  }
}
