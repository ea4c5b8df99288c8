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

void finish_profile(std::vector<Event>& events) {
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
  std::ostringstream os;
  auto line = [&] {
    os << std::string(name_w + extra_w + 2 + 10 * 2 + 12 * 3 + 8, '-') << "\n";
  };
  line();
  os << absl::StrFormat("%-*s  %-*s%10s%12s%10s%12s%12s%8s\n", static_cast<int>(name_w), "Name",
                        static_cast<int>(extra_w), extra_title, "Self %", "Self", "Total %",
                        "Total", "Avg", "Calls");
  line();
  for (size_t i = 0; i < rows.size() && i < row_limit; ++i) {
    const EventStats& r = rows[i];
    const std::string extra = by == GroupBy::OpAndShapes ? r.shapes : r.provider;
    os << absl::StrFormat(
        "%-*s  %-*s%9.2f%%%12s%9.2f%%%12s%12s%8d\n", static_cast<int>(name_w),
        clip(r.name, name_w), static_cast<int>(extra_w), clip(extra, extra_w - 1),
        100.0 * static_cast<double>(r.self_ns) / denom, format_time(r.self_ns),
        100.0 * static_cast<double>(r.total_ns) / denom, format_time(r.total_ns),
        format_time(r.calls ? r.total_ns / r.calls : 0), r.calls);
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
  out += absl::StrFormat("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":%d}}\n",
                         dropped_);
  return out;
}

void Profile::export_chrome_trace(const std::string& path) const {
  const std::string text = chrome_trace();
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    LOOM_THROW(Error, "profiler: cannot write the trace '", path, "': ", std::strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      LOOM_THROW(Error, "profiler: cannot write the trace '", path, "': ", std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    LOOM_THROW(Error, "profiler: cannot write the trace '", path, "': ", std::strerror(err));
  }
}

}  // namespace loom::profiler
