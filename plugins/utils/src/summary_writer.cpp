// SummaryWriter (loom/utils/summary_writer.h): builds Event messages and hands them, framed,
// to the event file (event_file.h).
#include "loom/utils/summary_writer.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

#include "event.pb.h"
#include "event_file.h"
#include "hparams_plugin.pb.h"
#include "loom/core/error.h"
#include "loom/core/half.h"
#include "loom/core/warning.h"
#include "loom/ops/tensor_methods.h"
#include "png_encode.h"

namespace loom::utils {

namespace pb = loom::tensorboard;
namespace fs = std::filesystem;

namespace {

constexpr char kFileVersion[] = "brain.Event:2";
// The hparams plugin's tags and format version (TensorBoard's hparams plugin reads these).
constexpr char kHParamsPlugin[] = "hparams";
constexpr char kExperimentTag[] = "_hparams_/experiment";
constexpr char kSessionStartTag[] = "_hparams_/session_start_info";
constexpr char kSessionEndTag[] = "_hparams_/session_end_info";

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

std::string shape_str(IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) str_append(&s, i ? ", " : "", sizes[i]);
  return s + "]";
}

std::string describe(const Tensor& t) {
  return str_cat("shape ", shape_str(t.sizes()), ", dtype ", dtype_name(t.dtype()), ", device ",
                 t.device().str());
}

/// The element at offset (in elements) from base, as a double.
double read_element(const unsigned char* base, DType dtype, int64_t offset) {
  const unsigned char* p = base + offset * static_cast<int64_t>(element_size(dtype));
  switch (dtype) {
    case DType::Bool:
      return *p != 0;
    case DType::UInt8:
      return *p;
    case DType::Int8: {
      int8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case DType::Int16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::Int32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::Int64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::Float16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return half_to_float(v);
    }
    case DType::BFloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bfloat16_to_float(v);
    }
    case DType::Float32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::Float64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
  return 0;
}

/// Calls f(element as double) for every element of a CPU tensor, in row-major order, through
/// its strides: raw memory, so no op pack is needed.
template <typename F>
void for_each_element(const Tensor& t, F&& f) {
  const int64_t n = t.numel();
  if (n == 0) return;
  const int64_t dims = t.dim();
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  const auto* base = static_cast<const unsigned char*>(t.data_ptr());
  std::vector<int64_t> index(static_cast<size_t>(dims), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(read_element(base, t.dtype(), offset));
    for (int64_t d = dims - 1; d >= 0; --d) {
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (sizes[d] - 1);
      index[d] = 0;
    }
  }
}

/// The tensor on the CPU (itself when it is there).
Tensor on_cpu(const Tensor& t) { return t.device().is_cpu() ? t : t.detach().to(kCPU); }

pb::Event summary_event(int64_t step, std::optional<double> wall_time) {
  pb::Event e;
  e.set_wall_time(wall_time ? *wall_time : now_seconds());
  e.set_step(step);
  return e;
}

std::string serialize(const google::protobuf::MessageLite& m) {
  std::string out;
  m.SerializeToString(&out);
  return out;
}

/// A summary value owned by a plugin (text, hparams): its metadata names the plugin.
pb::Summary::Value* plugin_value(pb::Event& e, const std::string& tag, const std::string& plugin,
                                 const std::string& content = "") {
  pb::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  pb::SummaryMetadata::PluginData* pd = v->mutable_metadata()->mutable_plugin_data();
  pd->set_plugin_name(plugin);
  pd->set_content(content);
  return v;
}

/// The hparams plugin's event for one part of a session (experiment, start or end). Its
/// tensor is an empty float tensor, as TensorBoard's own writer leaves it: readers that index
/// tensor summaries only see values that hold one.
std::string hparams_event(const std::string& tag, const pb::hparams::HParamsPluginData& data,
                          double wall_time) {
  pb::Event e = summary_event(0, wall_time);
  pb::TensorProto* t = plugin_value(e, tag, kHParamsPlugin, serialize(data))->mutable_tensor();
  t->set_dtype(pb::DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(0);
  return serialize(e);
}

std::string default_log_dir() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return str_cat("runs/", buf, "_", hostname());
}

}  // namespace

/// The open event file and the events not yet written to it.
class SummaryWriter::File {
 public:
  File(const std::string& dir, const SummaryWriterOptions& options) : options_(options) {
    static std::atomic<uint64_t> counter{0};
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
      throw Error(str_cat("SummaryWriter: ", dir, " is a file, not a folder"));
    }
    fs::create_directories(dir, ec);
    if (ec) throw Error(str_cat("SummaryWriter: cannot make the folder ", dir, ": ", ec.message()));
    const std::string name =
        str_cat("events.out.tfevents.", static_cast<int64_t>(std::time(nullptr)), ".", hostname(),
                ".", ::getpid(), ".", counter++, options.filename_suffix);
    file_ = std::make_unique<detail::RecordFile>((fs::path(dir) / name).string());
    last_flush_ = std::chrono::steady_clock::now();
    pb::Event e;
    e.set_wall_time(now_seconds());
    e.set_file_version(kFileVersion);
    detail::append_record(buffer_, serialize(e));
    if (options.purge_step) {
      pb::Event start;
      start.set_wall_time(e.wall_time());
      start.set_step(*options.purge_step);
      start.mutable_session_log()->set_status(pb::SessionLog::START);
      detail::append_record(buffer_, serialize(start));
    }
    write_buffer();  // the file is a valid, readable event file from the start
  }

  void add(const std::string& event, const char* function) {
    if (!file_->is_open()) {
      throw Error(
          str_cat("SummaryWriter::", function, ": the writer of ", file_->path(), " is closed"));
    }
    detail::append_record(buffer_, event);
    ++queued_;
    const auto now = std::chrono::steady_clock::now();
    if (queued_ >= std::max<int64_t>(options_.max_queue, 1) ||
        std::chrono::duration<double>(now - last_flush_).count() >= options_.flush_secs) {
      write_buffer();
    }
  }

  void write_buffer() {
    if (!buffer_.empty() && file_->is_open()) {
      std::string pending;
      pending.swap(buffer_);
      queued_ = 0;
      file_->write(pending);  // on failure the events are dropped: the next call starts clean
    }
    last_flush_ = std::chrono::steady_clock::now();
  }

  void close() {
    if (!file_->is_open()) return;
    try {
      write_buffer();
    } catch (...) {
      try {
        file_->close();
      } catch (...) {
      }
      throw;
    }
    file_->close();
  }

  const std::string& path() const { return file_->path(); }

 private:
  SummaryWriterOptions options_;
  std::unique_ptr<detail::RecordFile> file_;
  std::string buffer_;
  int64_t queued_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
};

SummaryWriter::SummaryWriter(std::string log_dir, SummaryWriterOptions options)
    : log_dir_(log_dir.empty() ? default_log_dir() : std::move(log_dir)),
      options_(std::move(options)),
      file_(std::make_unique<File>(log_dir_, options_)) {}

SummaryWriter::~SummaryWriter() {
  try {
    close();
  } catch (const std::exception& e) {
    loom::warn(str_cat("SummaryWriter: events lost when closing: ", e.what()));
  }
}

const std::string& SummaryWriter::file_path() const { return file_->path(); }

void SummaryWriter::add_event(const std::string& event, const char* function) {
  std::lock_guard<std::mutex> lock(mutex_);
  file_->add(event, function);
}

SummaryWriter& SummaryWriter::child(const std::string& subdir) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<SummaryWriter>& w = children_[subdir];
  if (!w) w = std::make_unique<SummaryWriter>((fs::path(log_dir_) / subdir).string(), options_);
  return *w;
}

void SummaryWriter::add_scalar(const std::string& tag, double value, int64_t step,
                               std::optional<double> wall_time) {
  pb::Event e = summary_event(step, wall_time);
  pb::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  add_event(serialize(e), "add_scalar");
}

void SummaryWriter::add_scalars(const std::string& main_tag,
                                const std::map<std::string, double>& values, int64_t step,
                                std::optional<double> wall_time) {
  const double when = wall_time ? *wall_time : now_seconds();
  for (const auto& [key, value] : values) {
    std::string subdir = main_tag + "_" + key;
    std::replace(subdir.begin(), subdir.end(), '/', '_');
    child(subdir).add_scalar(main_tag, value, step, when);
  }
}

void SummaryWriter::add_histogram(const std::string& tag, const Tensor& values, int64_t step,
                                  int64_t bins, std::optional<double> wall_time) {
  LOOM_CHECK(values.defined(), "SummaryWriter::add_histogram: values (tag '", tag,
             "') is an undefined tensor");
  LOOM_CHECK(bins >= 1, "SummaryWriter::add_histogram: bins must be >= 1, got ", bins);
  LOOM_CHECK(values.numel() > 0, "SummaryWriter::add_histogram: values (tag '", tag,
             "') has no elements (", describe(values), ")");
  const Tensor cpu = on_cpu(values);
  std::vector<double> v;
  v.reserve(static_cast<size_t>(cpu.numel()));
  int64_t non_finite = 0;
  for_each_element(cpu, [&](double x) {
    non_finite += !std::isfinite(x);
    v.push_back(x);
  });
  LOOM_CHECK(non_finite == 0, "SummaryWriter::add_histogram: values (tag '", tag, "', ",
             describe(values), ") holds ", non_finite, " NaN or infinite element(s)");
  const auto [lo_it, hi_it] = std::minmax_element(v.begin(), v.end());
  const double lo = *lo_it, hi = *hi_it;
  // Equal-width buckets over [lo, hi]; a constant tensor gets one bucket.
  const int64_t n_bins = hi > lo ? bins : 1;
  const double width = (hi - lo) / static_cast<double>(n_bins);
  std::vector<double> counts(static_cast<size_t>(n_bins), 0);
  double sum = 0, sum_squares = 0;
  for (double x : v) {
    int64_t b = width > 0 ? static_cast<int64_t>((x - lo) / width) : 0;
    b = std::clamp<int64_t>(b, 0, n_bins - 1);
    counts[static_cast<size_t>(b)] += 1;
    sum += x;
    sum_squares += x * x;
  }
  pb::Event e = summary_event(step, wall_time);
  pb::Summary::Value* value = e.mutable_summary()->add_value();
  value->set_tag(tag);
  pb::HistogramProto* h = value->mutable_histo();
  h->set_min(lo);
  h->set_max(hi);
  h->set_num(static_cast<double>(v.size()));
  h->set_sum(sum);
  h->set_sum_squares(sum_squares);
  for (int64_t b = 0; b < n_bins; ++b) {
    // The right edge of each bucket; the last is hi exactly.
    h->add_bucket_limit(b + 1 == n_bins ? hi : lo + width * static_cast<double>(b + 1));
    h->add_bucket(counts[static_cast<size_t>(b)]);
  }
  add_event(serialize(e), "add_histogram");
}

void SummaryWriter::add_image(const std::string& tag, const Tensor& img, int64_t step,
                              std::string_view dataformats, std::optional<double> wall_time) {
  constexpr const char* fn = "SummaryWriter::add_image";
  LOOM_CHECK(img.defined(), fn, ": img (tag '", tag, "') is an undefined tensor");
  LOOM_CHECK(dataformats == "CHW" || dataformats == "HWC" || dataformats == "HW", fn,
             ": dataformats must be \"CHW\", \"HWC\" or \"HW\", got \"", dataformats, "\"");
  const DType dt = img.dtype();
  LOOM_CHECK_T(TypeError, dt == DType::Float32 || dt == DType::Float64 || dt == DType::UInt8, fn,
               ": img (tag '", tag, "') must be float32 or float64 in [0, 1] or uint8, got ",
               describe(img));
  LOOM_CHECK(img.dim() == static_cast<int64_t>(dataformats.size()), fn, ": img (tag '", tag,
             "') must have ", dataformats.size(), " dimensions (", dataformats, "), got ",
             describe(img));
  int64_t c = 1, h = 0, w = 0;
  if (dataformats == "CHW") {
    c = img.size(0), h = img.size(1), w = img.size(2);
  } else if (dataformats == "HWC") {
    h = img.size(0), w = img.size(1), c = img.size(2);
  } else {
    h = img.size(0), w = img.size(1);
  }
  LOOM_CHECK(c == 1 || c == 3 || c == 4, fn, ": img (tag '", tag, "', ", dataformats,
             ") must have 1, 3 or 4 channels, got ", describe(img));
  LOOM_CHECK(h > 0 && w > 0 && h <= INT32_MAX && w <= INT32_MAX, fn, ": img (tag '", tag, "', ",
             dataformats, ") must have at least one pixel, got ", describe(img));
  // To HWC uint8, the layout PNG stores, through the strides of the given layout.
  const Tensor cpu = on_cpu(img);
  const int64_t sc = dataformats == "CHW"   ? cpu.stride(0)
                     : dataformats == "HWC" ? cpu.stride(2)
                                            : 0;
  const int64_t sh = cpu.stride(dataformats == "CHW" ? 1 : 0);
  const int64_t sw = cpu.stride(dataformats == "CHW" ? 2 : 1);
  const auto* base = static_cast<const unsigned char*>(cpu.data_ptr());
  std::vector<uint8_t> pixels;
  pixels.reserve(static_cast<size_t>(h * w * c));
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t ch = 0; ch < c; ++ch) {
        double v = read_element(base, dt, y * sh + x * sw + ch * sc);
        if (dt != DType::UInt8)
          v = std::isnan(v) ? 0.0 : std::round(std::clamp(v, 0.0, 1.0) * 255.0);
        pixels.push_back(static_cast<uint8_t>(v));
      }
    }
  }
  pb::Event e = summary_event(step, wall_time);
  pb::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  pb::Summary::Image* image = v->mutable_image();
  image->set_height(static_cast<int32_t>(h));
  image->set_width(static_cast<int32_t>(w));
  image->set_colorspace(static_cast<int32_t>(c));
  image->set_encoded_image_string(detail::encode_png(pixels.data(), h, w, static_cast<int>(c)));
  add_event(serialize(e), "add_image");
}

void SummaryWriter::add_text(const std::string& tag, const std::string& text, int64_t step,
                             std::optional<double> wall_time) {
  pb::Event e = summary_event(step, wall_time);
  pb::TensorProto* t = plugin_value(e, tag, "text")->mutable_tensor();
  t->set_dtype(pb::DT_STRING);
  t->mutable_tensor_shape()->add_dim()->set_size(1);
  t->add_string_val(text);
  add_event(serialize(e), "add_text");
}

void SummaryWriter::add_hparams(const std::map<std::string, HParamValue>& hparams,
                                const std::map<std::string, double>& metrics,
                                const std::string& run_name) {
  LOOM_CHECK(!hparams.empty(),
             "SummaryWriter::add_hparams: hparams is empty (give at least one "
             "hyperparameter)");
  if (!run_name.empty()) {
    child(run_name).add_hparams(hparams, metrics);
    return;
  }
  const double now = now_seconds();
  pb::hparams::HParamsPluginData experiment, start, end;
  pb::hparams::Experiment* ex = experiment.mutable_experiment();
  ex->set_time_created_secs(now);
  pb::hparams::SessionStartInfo* ssi = start.mutable_session_start_info();
  ssi->set_start_time_secs(now);
  for (const auto& [name, value] : hparams) {
    pb::hparams::HParamInfo* info = ex->add_hparam_infos();
    info->set_name(name);
    google::protobuf::Value& v = (*ssi->mutable_hparams())[name];
    switch (value.kind()) {
      case HParamValue::Kind::Number:
        info->set_type(pb::hparams::DATA_TYPE_FLOAT64);
        v.set_number_value(value.number());
        break;
      case HParamValue::Kind::String:
        info->set_type(pb::hparams::DATA_TYPE_STRING);
        v.set_string_value(value.text());
        break;
      case HParamValue::Kind::Bool:
        info->set_type(pb::hparams::DATA_TYPE_BOOL);
        v.set_bool_value(value.flag());
        break;
    }
  }
  for (const auto& [name, value] : metrics) {
    ex->add_metric_infos()->mutable_name()->set_tag(name);
  }
  pb::hparams::SessionEndInfo* sei = end.mutable_session_end_info();
  sei->set_status(pb::hparams::STATUS_SUCCESS);
  sei->set_end_time_secs(now);
  add_event(hparams_event(kExperimentTag, experiment, now), "add_hparams");
  add_event(hparams_event(kSessionStartTag, start, now), "add_hparams");
  for (const auto& [name, value] : metrics) add_scalar(name, value, 0, now);
  add_event(hparams_event(kSessionEndTag, end, now), "add_hparams");
}

void SummaryWriter::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  file_->write_buffer();
  for (auto& [dir, w] : children_) w->flush();
}

void SummaryWriter::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string first_error;
  for (auto& [dir, w] : children_) {
    try {
      w->close();
    } catch (const std::exception& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  file_->close();
  if (!first_error.empty()) throw Error(first_error);
}

namespace detail {

std::string event_text(std::string_view payload) {
  pb::Event e;
  if (!e.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    throw Error(
        str_cat("event_text: a record of ", payload.size(), " bytes is not an Event message"));
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(e, &text);
  return text;
}

}  // namespace detail
}  // namespace loom::utils
