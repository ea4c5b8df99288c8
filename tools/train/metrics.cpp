// Metrics and the run's outputs (metrics.h).
#include "metrics.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "loom/data/safetensors.h"

namespace loom::train {

void ConfusionMatrix::add(int64_t truth, int64_t predicted) {
  if (truth < 0 || truth >= n_ || predicted < 0 || predicted >= n_) {
    throw std::out_of_range("ConfusionMatrix::add: class out of range [0, " + std::to_string(n_) +
                            "): truth " + std::to_string(truth) + ", predicted " +
                            std::to_string(predicted));
  }
  ++counts_[truth * n_ + predicted];
}

int64_t ConfusionMatrix::total() const {
  int64_t t = 0;
  for (int64_t c : counts_) t += c;
  return t;
}

double ConfusionMatrix::accuracy() const {
  int64_t right = 0;
  for (int64_t c = 0; c < n_; ++c) right += at(c, c);
  const int64_t t = total();
  return t ? static_cast<double>(right) / static_cast<double>(t) : 0;
}

double ConfusionMatrix::precision(int64_t c) const {
  int64_t predicted = 0;
  for (int64_t t = 0; t < n_; ++t) predicted += at(t, c);
  return predicted ? static_cast<double>(at(c, c)) / static_cast<double>(predicted) : 0;
}

double ConfusionMatrix::recall(int64_t c) const {
  int64_t actual = 0;
  for (int64_t p = 0; p < n_; ++p) actual += at(c, p);
  return actual ? static_cast<double>(at(c, c)) / static_cast<double>(actual) : 0;
}

double ConfusionMatrix::f1(int64_t c) const {
  const double p = precision(c), r = recall(c);
  return p + r > 0 ? 2 * p * r / (p + r) : 0;
}

std::string ConfusionMatrix::str(const std::vector<std::string>& names) const {
  std::ostringstream os;
  auto name = [&](int64_t c) {
    return c < static_cast<int64_t>(names.size()) ? names[c] : std::to_string(c);
  };
  os << "class          precision  recall     f1\n";
  for (int64_t c = 0; c < n_; ++c) {
    os << std::left << std::setw(15) << name(c) << std::fixed << std::setprecision(4)
       << std::setw(11) << precision(c) << std::setw(11) << recall(c) << f1(c) << "\n";
  }
  os << "confusion matrix (rows: true class, columns: predicted)\n";
  for (int64_t t = 0; t < n_; ++t) {
    for (int64_t p = 0; p < n_; ++p) os << std::right << std::setw(6) << at(t, p);
    os << "   " << name(t) << "\n";
  }
  return os.str();
}

double seconds_since_process_start() {
  std::ifstream stat("/proc/self/stat"), uptime("/proc/uptime");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  double up = 0;
  uptime >> up;
  // Field 22 (starttime, clock ticks since boot) comes after the ')' closing the name.
  const size_t close = text.rfind(')');
  if (close == std::string::npos || up <= 0) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  for (int i = 3; i < 22 && (rest >> field); ++i) {
  }
  long long start_ticks = 0;
  if (!(rest >> start_ticks)) return 0;
  return up - static_cast<double>(start_ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double peak_rss_mib() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  // Named as safetensors' saves name theirs (Note [Atomic save] in loom/data/safetensors.h),
  // so that a crash's leftover is recognised and removed at the next start.
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp =
      target.parent_path() /
      data::safetensors::temporary_name(target.filename().string(), ::getpid(), counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
  }
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error(what + ": " + why);
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail("cannot write " + tmp.string());
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("cannot write " + tmp.string());
  }
  if (::close(fd) != 0) fail("cannot write " + tmp.string());
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    fail("cannot rename " + tmp.string() + " to " + path);
  }
}

std::string metrics_csv(const std::vector<EpochRow>& rows) {
  std::ostringstream os;
  os << "epoch,train_loss,train_accuracy,val_loss,val_accuracy,test_loss,test_accuracy,lr,"
        "seconds,samples_per_second\n";
  os << std::setprecision(6);
  for (const EpochRow& r : rows) {
    os << r.epoch << "," << r.train_loss << "," << r.train_accuracy << ",";
    if (r.val_loss >= 0) {
      os << r.val_loss << "," << r.val_accuracy;
    } else {
      os << ",";
    }
    os << "," << r.test_loss << "," << r.test_accuracy << "," << r.lr << "," << r.seconds << ","
       << r.samples_per_second << "\n";
  }
  return os.str();
}

std::string steps_csv(const std::vector<StepRow>& rows) {
  std::string out = "step,epoch,loss,lr,samples_per_sec\n";
  char line[160];
  for (const StepRow& r : rows) {
    std::snprintf(line, sizeof line, "%lld,%lld,%.9g,%.9g,%.6g\n", static_cast<long long>(r.step),
                  static_cast<long long>(r.epoch), r.loss, r.lr, r.samples_per_sec);
    out += line;
  }
  return out;
}

std::vector<StepRow> parse_steps_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<StepRow> rows;
  int64_t number = 0;
  while (std::getline(in, line)) {
    if (++number == 1) {
      if (line != "step,epoch,loss,lr,samples_per_sec") {
        throw std::runtime_error("line 1 is not steps.csv's header");
      }
      continue;
    }
    StepRow r;
    long long step = 0, epoch = 0;
    int used = 0;
    if (std::sscanf(line.c_str(), "%lld,%lld,%lf,%lf,%lf%n", &step, &epoch, &r.loss, &r.lr,
                    &r.samples_per_sec, &used) != 5 ||
        used != static_cast<int>(line.size()) || step < 1 ||
        (!rows.empty() && step <= rows.back().step)) {
      throw std::runtime_error("line " + std::to_string(number) + " is not a step row: " + line);
    }
    r.step = step;
    r.epoch = epoch;
    rows.push_back(r);
  }
  return rows;
}

namespace {

/// A panel's title, frame and five labelled ticks of the value axis (lo..hi); y maps a value
/// to its height.
template <typename YMap>
void panel_frame(std::ostringstream& os, const std::string& title, double left, double right,
                 double top, double bottom, double y0, double lo, double hi, YMap y) {
  os << "<text x='" << (left + right) / 2 << "' y='" << y0 + 18
     << "' text-anchor='middle' font-size='14'>" << title << "</text>\n";
  os << "<rect x='" << left << "' y='" << top << "' width='" << right - left << "' height='"
     << bottom - top << "' fill='none' stroke='#888'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = lo + (hi - lo) * i / 4;
    os << "<text x='" << left - 5 << "' y='" << y(v) + 4 << "' text-anchor='end' font-size='10'>"
       << std::setprecision(3) << v << "</text>\n";
  }
}

/// The per-step panel: each step's loss (thin, every k-th step past ~1500 points) and its
/// exponential moving average (TensorBoard's smoothing, weight 0.9, bias-corrected), against
/// the step; a dashed line where each epoch ends.
void step_panel(std::ostringstream& os, double x0, double y0, double w, double h,
                const std::vector<StepRow>& steps) {
  double lo = 1e300, hi = -1e300;
  for (const StepRow& s : steps) {
    if (!std::isfinite(s.loss)) continue;
    lo = std::min(lo, s.loss);
    hi = std::max(hi, s.loss);
  }
  if (lo > hi) lo = 0, hi = 1;
  if (hi - lo < 1e-9) hi = lo + 1;
  const double pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
  const double first = static_cast<double>(steps.front().step);
  const double last = static_cast<double>(steps.back().step);
  const double left = x0 + 55, right = x0 + w - 10, top = y0 + 30, bottom = y0 + h - 35;
  auto X = [&](double s) {
    return last <= first ? (left + right) / 2
                         : left + (right - left) * (s - first) / (last - first);
  };
  auto Y = [&](double v) {
    return bottom - (bottom - top) * (std::clamp(v, lo, hi) - lo) / (hi - lo);
  };
  panel_frame(os, "training loss per step", left, right, top, bottom, y0, lo, hi, Y);
  for (int i = 0; i <= 4; ++i) {
    const double s = std::round(first + (last - first) * i / 4);
    os << "<text x='" << X(s) << "' y='" << bottom + 14 << "' text-anchor='middle' font-size='10'>"
       << static_cast<long long>(s) << "</text>\n";
  }
  os << "<text x='" << (left + right) / 2 << "' y='" << bottom + 28
     << "' text-anchor='middle' font-size='11'>step</text>\n";
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    if (steps[i].epoch == steps[i + 1].epoch) continue;
    const double x = X(static_cast<double>(steps[i].step));
    os << "<line x1='" << x << "' y1='" << top << "' x2='" << x << "' y2='" << bottom
       << "' stroke='#bbb' stroke-dasharray='4,3'/>\n";
  }
  const size_t every = std::max<size_t>(1, (steps.size() + 1499) / 1500);
  os << "<polyline fill='none' stroke-width='1' stroke='#9ecae1' points='";
  for (size_t i = 0; i < steps.size(); i += every) {
    if (std::isfinite(steps[i].loss))
      os << X(static_cast<double>(steps[i].step)) << "," << Y(steps[i].loss) << " ";
  }
  os << "'/>\n";
  os << "<polyline fill='none' stroke-width='2' stroke='#1f77b4' points='";
  double ema = 0, weight = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!std::isfinite(steps[i].loss)) continue;
    ema = 0.9 * ema + 0.1 * steps[i].loss;
    weight = 0.9 * weight + 0.1;
    if (i % every == 0 || i + 1 == steps.size())
      os << X(static_cast<double>(steps[i].step)) << "," << Y(ema / weight) << " ";
  }
  os << "'/>\n";
  os << "<text x='" << right - 8 << "' y='" << top + 12
     << "' text-anchor='end' font-size='11' fill='#9ecae1'>each step</text>\n";
  os << "<text x='" << right - 8 << "' y='" << top + 26
     << "' text-anchor='end' font-size='11' fill='#1f77b4'>smoothed</text>\n";
}

/// One SVG panel: series of (epoch, value) with axes and a legend.
struct Series {
  std::string name, color;
  std::vector<double> values;
};

void panel(std::ostringstream& os, double x0, double y0, double w, double h,
           const std::string& title, const std::vector<Series>& series, int64_t epochs) {
  double lo = 1e300, hi = -1e300;
  for (const Series& s : series) {
    for (double v : s.values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (lo > hi) lo = 0, hi = 1;
  if (hi - lo < 1e-9) hi = lo + 1;
  const double pad = (hi - lo) * 0.08;
  lo -= pad;
  hi += pad;
  const double left = x0 + 55, right = x0 + w - 10, top = y0 + 30, bottom = y0 + h - 35;
  auto X = [&](double e) {
    return epochs <= 1 ? (left + right) / 2 : left + (right - left) * (e - 1) / (epochs - 1);
  };
  auto Y = [&](double v) { return bottom - (bottom - top) * (v - lo) / (hi - lo); };
  panel_frame(os, title, left, right, top, bottom, y0, lo, hi, Y);
  for (int64_t e = 1; e <= epochs; ++e) {
    os << "<text x='" << X(static_cast<double>(e)) << "' y='" << bottom + 14
       << "' text-anchor='middle' font-size='10'>" << e << "</text>\n";
  }
  os << "<text x='" << (left + right) / 2 << "' y='" << bottom + 28
     << "' text-anchor='middle' font-size='11'>epoch</text>\n";
  double ly = top + 12;
  for (const Series& s : series) {
    if (s.values.empty()) continue;
    os << "<polyline fill='none' stroke-width='2' stroke='" << s.color << "' points='";
    for (size_t i = 0; i < s.values.size(); ++i) {
      os << X(static_cast<double>(i + 1)) << "," << Y(s.values[i]) << " ";
    }
    os << "'/>\n";
    for (size_t i = 0; i < s.values.size(); ++i) {
      os << "<circle r='3' fill='" << s.color << "' cx='" << X(static_cast<double>(i + 1))
         << "' cy='" << Y(s.values[i]) << "'/>\n";
    }
    os << "<text x='" << right - 8 << "' y='" << ly << "' text-anchor='end' font-size='11' fill='"
       << s.color << "'>" << s.name << "</text>\n";
    ly += 14;
  }
}

}  // namespace

std::string metrics_svg(const std::vector<EpochRow>& rows, const std::string& title,
                        const std::vector<StepRow>& steps) {
  std::vector<double> train_loss, test_loss, val_loss, train_acc, test_acc, val_acc;
  for (const EpochRow& r : rows) {
    train_loss.push_back(r.train_loss);
    test_loss.push_back(r.test_loss);
    train_acc.push_back(r.train_accuracy);
    test_acc.push_back(r.test_accuracy);
    if (r.val_loss >= 0) {
      val_loss.push_back(r.val_loss);
      val_acc.push_back(r.val_accuracy);
    }
  }
  const int64_t epochs = rows.empty() ? 1 : rows.back().epoch;
  std::ostringstream os;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='900' height='"
     << (steps.empty() ? 380 : 700)
     << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  os << "<text x='450' y='16' text-anchor='middle' font-size='15'>" << title << "</text>\n";
  panel(os, 0, 20, 450, 360, "loss",
        {{"train", "#1f77b4", train_loss},
         {"validation", "#2ca02c", val_loss},
         {"test", "#d62728", test_loss}},
        epochs);
  panel(os, 450, 20, 450, 360, "accuracy",
        {{"train", "#1f77b4", train_acc},
         {"validation", "#2ca02c", val_acc},
         {"test", "#d62728", test_acc}},
        epochs);
  if (!steps.empty()) step_panel(os, 0, 380, 900, 320, steps);
  os << "</svg>\n";
  return os.str();
}

Progress::Progress(std::string mode, int64_t epoch, int64_t epochs, int64_t steps)
    : mode_(std::move(mode)),
      epoch_(epoch),
      epochs_(epochs),
      steps_(std::max<int64_t>(steps, 1)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::update(int64_t step, double loss, int64_t samples) {
  if (mode_ == "none") return;
  const auto now = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? static_cast<double>(samples) / secs : 0;
  if (mode_ == "bar") {
    if (step != steps_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const int width = 30;
    const int filled = static_cast<int>(width * step / steps_);
    std::printf("\repoch %lld/%lld [%s%s] %lld/%lld loss %.4f %.0f samples/s",
                static_cast<long long>(epoch_), static_cast<long long>(epochs_),
                std::string(static_cast<size_t>(filled), '#').c_str(),
                std::string(static_cast<size_t>(width - filled), '.').c_str(),
                static_cast<long long>(step), static_cast<long long>(steps_), loss, rate);
    std::fflush(stdout);
    return;
  }
  // lines: at each tenth of the epoch
  if (step * 10 < next_line_ * steps_ && step != steps_) return;
  next_line_ = step * 10 / steps_ + 1;
  std::printf("epoch %lld/%lld step %lld/%lld loss %.4f %.0f samples/s\n",
              static_cast<long long>(epoch_), static_cast<long long>(epochs_),
              static_cast<long long>(step), static_cast<long long>(steps_), loss, rate);
  std::fflush(stdout);
}

bool Progress::due(int64_t step) const {
  if (mode_ == "none") return false;
  if (step == steps_) return true;
  if (mode_ == "bar") {
    return std::chrono::steady_clock::now() - last_draw_ >= std::chrono::milliseconds(100);
  }
  return step * 10 >= next_line_ * steps_;
}

void Progress::finish() {
  if (mode_ == "bar") std::printf("\n");
  std::fflush(stdout);
}

}  // namespace loom::train
