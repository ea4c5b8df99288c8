// The profiler's reports: self times and forward-backward links (finish_profile), the
// key_averages table, the Chrome trace.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "loom/core/error.h"
#include "loom/profiler/profiler.h"

namespace loom::profiler {

namespace {

// The highest value of a series over index ranges (a segment tree: memory events can number
// in the millions, and every op asks for its span).
class RangeMax {
 public:
  explicit RangeMax(const std::vector<int64_t>& v) : n_(v.size()), t_(2 * v.size()) {
    for (size_t i = 0; i < n_; ++i) t_[n_ + i] = v[i];
    for (size_t i = n_; i-- > 1;) t_[i] = std::max(t_[2 * i], t_[2 * i + 1]);
  }
  // max over [lo, hi); INT64_MIN if empty.
  int64_t query(size_t lo, size_t hi) const {
    int64_t m = INT64_MIN;
    for (lo += n_, hi += n_; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) m = std::max(m, t_[lo++]);
      if (hi & 1) m = std::max(m, t_[--hi]);
    }
    return m;
  }

 private:
  size_t n_;
  std::vector<int64_t> t_;
};

// Memory: running totals per device, and each event's peak (the process's total, all devices,
// at its start or at any allocation during it).
void finish_memory(std::vector<Event>& events, std::vector<MemoryEvent>& memory) {
  if (memory.empty()) return;
  std::stable_sort(memory.begin(), memory.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.time_ns < b.time_ns; });
  std::map<std::string, int64_t> per_device;
  std::vector<int64_t> all(memory.size());
  std::vector<int64_t> times(memory.size());
  int64_t total = 0;
  for (size_t i = 0; i < memory.size(); ++i) {
    memory[i].total_bytes = per_device[memory[i].device] += memory[i].bytes;
    total += memory[i].bytes;
    all[i] = total;
    times[i] = memory[i].time_ns;
  }
  const RangeMax peaks(all);
  for (Event& e : events) {
    const size_t lo = std::lower_bound(times.begin(), times.end(), e.start_ns) - times.begin();
    const size_t hi = std::upper_bound(times.begin(), times.end(), e.end_ns) - times.begin();
    const int64_t before = lo > 0 ? all[lo - 1] : 0;
    e.peak_memory_bytes = std::max(before, peaks.query(lo, hi));
  }
}

}  // namespace

void finish_profile(std::vector<Event>& events, std::vector<MemoryEvent>& memory) {
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.thread, a.start_ns, a.depth) < std::tie(b.thread, b.start_ns, b.depth);
  });
  // Per thread, the enclosing event is the nearest earlier one a level up (depths are exact:
  // the open stack's size when the event opened).
  std::vector<int64_t> children(events.size(), 0);
  std::vector<size_t> stack;
  int64_t thread = -1;
  for (size_t i = 0; i < events.size(); ++i) {
    Event& e = events[i];
    if (e.thread != thread) {
      stack.clear();
      thread = e.thread;
    }
    while (!stack.empty() && events[stack.back()].depth >= e.depth) stack.pop_back();
    if (!stack.empty()) {
      Event& parent = events[stack.back()];
      children[stack.back()] += e.end_ns - e.start_ns;
      // Note [Linking forward and backward]: an op that made a node meanwhile keeps the number
      // only if no op inside it made that node (the innermost one did).
      if (e.kind == Event::Kind::Op && e.sequence_nr >= 0 && parent.kind == Event::Kind::Op &&
          parent.sequence_nr == e.sequence_nr) {
        parent.sequence_nr = -1;
      }
    }
    stack.push_back(i);
  }
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].self_ns = std::max<int64_t>(0, events[i].end_ns - events[i].start_ns - children[i]);
  }
  finish_memory(events, memory);
}

std::vector<EventStats> Profile::key_averages(GroupBy by) const {
  std::vector<EventStats> rows;
  absl::flat_hash_map<std::string, size_t> index;
  std::vector<std::set<std::string>> providers;
  for (const Event& e : events_) {
    std::string key = e.name;
    if (by == GroupBy::OpAndShapes) key += '\0' + e.shapes;
    if (by == GroupBy::Provider) key += '\0' + e.provider;
    auto [it, fresh] = index.try_emplace(key, rows.size());
    if (fresh) {
      EventStats s;
      s.name = e.name;
      if (by == GroupBy::OpAndShapes) s.shapes = e.shapes;
      if (by == GroupBy::Provider) s.provider = e.provider;
      rows.push_back(std::move(s));
      providers.emplace_back();
    }
    EventStats& s = rows[it->second];
    ++s.calls;
    s.self_ns += e.self_ns;
    s.total_ns += e.end_ns - e.start_ns;
    s.self_memory_bytes += e.self_memory_bytes;
    s.peak_memory_bytes = std::max(s.peak_memory_bytes, e.peak_memory_bytes);
    if (e.device_ns > 0) s.device_ns += e.device_ns;
    if (by != GroupBy::Provider && !e.provider.empty()) providers[it->second].insert(e.provider);
  }
  if (by != GroupBy::Provider) {
    for (size_t i = 0; i < rows.size(); ++i) {
      std::string joined;
      for (const std::string& p : providers[i]) joined += (joined.empty() ? "" : "/") + p;
      rows[i].provider = std::move(joined);
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const EventStats& a, const EventStats& b) {
    return a.self_ns > b.self_ns;
  });
  return rows;
}

namespace {

// "812.000us", "1.234ms", "2.500s", as PyTorch's table prints times.
std::string format_time(int64_t ns) {
  if (ns < 1000000) return absl::StrFormat("%.3fus", static_cast<double>(ns) / 1e3);
  if (ns < 1000000000) return absl::StrFormat("%.3fms", static_cast<double>(ns) / 1e6);
  return absl::StrFormat("%.3fs", static_cast<double>(ns) / 1e9);
}

// "1.50 MB", "-512 B", as PyTorch's table prints memory.
std::string format_bytes(int64_t b) {
  const double a = static_cast<double>(b < 0 ? -b : b);
  if (a >= 1e9) return absl::StrFormat("%.2f GB", static_cast<double>(b) / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.2f MB", static_cast<double>(b) / 1e6);
  if (a >= 1e3) return absl::StrFormat("%.2f KB", static_cast<double>(b) / 1e3);
  return absl::StrFormat("%d B", b);
}

std::string clip(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 3) + "...";
}

// JSON string literal of s.
void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace

std::string Profile::table(GroupBy by, size_t row_limit) const {
  const std::vector<EventStats> rows = key_averages(by);
  int64_t all_self = 0;
  for (const EventStats& r : rows) all_self += r.self_ns;
  const double denom = all_self > 0 ? static_cast<double>(all_self) : 1.0;
  size_t name_w = 4;
  for (size_t i = 0; i < rows.size() && i < row_limit; ++i) {
    name_w = std::max(name_w, std::min<size_t>(rows[i].name.size(), 48));
  }
  const char* extra_title = by == GroupBy::OpAndShapes ? "Input shapes" : "Provider";
  const size_t extra_w = by == GroupBy::OpAndShapes ? 48 : 20;
  const bool mem = !memory_.empty();
  const bool device = std::any_of(events_.begin(), events_.end(),
                                  [](const Event& e) { return e.device_ns >= 0; });
  std::ostringstream os;
  auto line = [&] {
    os << std::string(name_w + extra_w + 2 + 10 * 2 + 12 * 3 + 8 + (mem ? 24 : 0) +
                          (device ? 12 : 0),
                      '-')
       << "\n";
  };
  line();
  os << absl::StrFormat("%-*s  %-*s%10s%12s%10s%12s%12s%8s", static_cast<int>(name_w), "Name",
                        static_cast<int>(extra_w), extra_title, "Self %", "Self", "Total %",
                        "Total", "Avg", "Calls");
  if (mem) os << absl::StrFormat("%12s%12s", "Self Mem", "Peak Mem");
  if (device) os << absl::StrFormat("%12s", "Device");
  os << "\n";
  line();
  for (size_t i = 0; i < rows.size() && i < row_limit; ++i) {
    const EventStats& r = rows[i];
    const std::string extra = by == GroupBy::OpAndShapes ? r.shapes : r.provider;
    os << absl::StrFormat(
        "%-*s  %-*s%9.2f%%%12s%9.2f%%%12s%12s%8d", static_cast<int>(name_w),
        clip(r.name, name_w), static_cast<int>(extra_w), clip(extra, extra_w - 1),
        100.0 * static_cast<double>(r.self_ns) / denom, format_time(r.self_ns),
        100.0 * static_cast<double>(r.total_ns) / denom, format_time(r.total_ns),
        format_time(r.calls ? r.total_ns / r.calls : 0), r.calls);
    if (mem) {
      os << absl::StrFormat("%12s%12s", format_bytes(r.self_memory_bytes),
                            format_bytes(r.peak_memory_bytes));
    }
    if (device) os << absl::StrFormat("%12s", r.device_ns > 0 ? format_time(r.device_ns) : "-");
    os << "\n";
  }
  line();
  os << "Self time total: " << format_time(all_self) << " over " << events_.size()
     << " events";
  if (dropped_ > 0) os << " (" << dropped_ << " older events dropped: max_events was reached)";
  os << "\n";
  return os.str();
}

std::string Profile::chrome_trace() const {
  const int pid = static_cast<int>(::getpid());
  std::string out;
  out.reserve(events_.size() * 160 + 256);
  out += "{\"traceEvents\":[\n";
  out += absl::StrFormat(
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"loom\"}}",
      pid);
  std::set<int64_t> threads;
  for (const Event& e : events_) threads.insert(e.thread);
  for (const int64_t t : threads) {
    out += absl::StrFormat(
        ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
        "\"args\":{\"name\":\"thread %d\"}}",
        pid, t, t);
  }
  auto us = [&](int64_t ns) { return static_cast<double>(ns - start_ns_) / 1e3; };
  // Forward ops by (thread, sequence number), for the flow arrows to their backward nodes.
  std::map<std::pair<int64_t, int64_t>, const Event*> forward;
  for (const Event& e : events_) {
    if (e.kind == Event::Kind::Op && e.sequence_nr >= 0) forward[{e.thread, e.sequence_nr}] = &e;
  }
  int64_t flow_id = 0;
  for (const Event& e : events_) {
    const char* cat = e.kind == Event::Kind::Op      ? "op"
                      : e.kind == Event::Kind::Range ? "user_range"
                                                     : "backward";
    out += ",\n{\"ph\":\"X\",\"cat\":\"";
    out += cat;
    out += "\",\"name\":";
    json_string(out, e.name);
    out += absl::StrFormat(",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{", pid,
                           e.thread, us(e.start_ns), static_cast<double>(e.end_ns - e.start_ns) / 1e3);
    bool first = true;
    auto arg = [&](const char* key, const std::string& value) {
      if (value.empty()) return;
      out += first ? "\"" : ",\"";
      first = false;
      out += key;
      out += "\":";
      json_string(out, value);
    };
    arg("provider", e.provider);
    arg("plugin", e.plugin);
    arg("input_shapes", e.shapes);
    if (e.sequence_nr >= 0) {
      out += absl::StrFormat("%s\"sequence_nr\":%d", first ? "" : ",", e.sequence_nr);
      first = false;
    }
    if (e.device_ns >= 0) {
      out += absl::StrFormat("%s\"device_us\":%.3f", first ? "" : ",",
                             static_cast<double>(e.device_ns) / 1e3);
    }
    out += "}}";
    if (e.kind == Event::Kind::Backward && e.sequence_nr >= 0) {
      auto it = forward.find({e.thread, e.sequence_nr});
      if (it != forward.end()) {
        const Event& f = *it->second;
        ++flow_id;
        out += absl::StrFormat(
            ",\n{\"ph\":\"s\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"id\":%d,\"pid\":%d,"
            "\"tid\":%d,\"ts\":%.3f}",
            flow_id, pid, f.thread, us(f.start_ns));
        out += absl::StrFormat(
            ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"id\":%d,"
            "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
            flow_id, pid, e.thread, us(e.start_ns));
      }
    }
  }
  for (const MemoryEvent& m : memory_) {
    out += ",\n{\"ph\":\"C\",\"name\":";
    json_string(out, "memory " + m.device);
    out += absl::StrFormat(",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"args\":{\"bytes\":%d}}", pid,
                           m.thread, us(m.time_ns), m.total_bytes);
  }
  out += absl::StrFormat("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":%d}}\n",
                         dropped_);
  return out;
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    LOOM_THROW(Error, "profiler: cannot write '", path, "': ", std::strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      LOOM_THROW(Error, "profiler: cannot write '", path, "': ", std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    LOOM_THROW(Error, "profiler: cannot write '", path, "': ", std::strerror(err));
  }
}

void Profile::export_chrome_trace(const std::string& path) const {
  write_text_atomically(path, chrome_trace());
}

}  // namespace loom::profiler
