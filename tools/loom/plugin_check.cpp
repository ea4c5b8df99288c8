// `loom plugin check PATH`: what one plugin would register, or why it is refused.
//
// The plugin is loaded in a forked child, which writes a JSON report to a pipe and exits
// without running any destructor. Whatever the plugin does while it loads (crash in a static
// initialiser, call exit(), hang) ends only the child; this process reports it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "loom/core/error.h"
#include "loom/core/str_cat.h"
#include "loom/dispatcher/plugin_abi.h"
#include "loom/dispatcher/plugin_loader.h"
#include "paths.h"
#include "table.h"

namespace loom::cli {
namespace {

// Ordered, so that --json prints the fields in the order a person reads them.
using json = nlohmann::ordered_json;

json to_json(const PluginInfo& p) {
  return json{{"name", p.name},
              {"version", p.version},
              {"description", p.description},
              {"path", display_path(p.path)},
              {"build_info", p.build_info},
              {"abi", str_cat(p.abi_major, ".", p.abi_minor)},
              {"dependencies", p.dependencies},
              {"registrations", p.registrations}};
}

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent went away; nothing left to tell
    done += static_cast<size_t>(n);
  }
}

// Runs in the child: load, describe, and leave through _exit so that no static destructor
// of the plugin (or of Loom) can still run and spoil the verdict.
[[noreturn]] void check_in_child(const std::string& path, int report_fd) {
  ::dup2(STDERR_FILENO, STDOUT_FILENO);  // the plugin's own output must not mix with the report
  json report;
  try {
    PluginLoader& loader = PluginLoader::instance();
    const PluginInfo info = loader.load(path);
    report = {{"ok", true}, {"plugin", to_json(info)}};
    json also = json::array();
    for (const PluginInfo& p : loader.loaded()) {
      if (p.name != info.name) also.push_back({{"name", p.name}, {"path", display_path(p.path)}});
    }
    report["also_loaded"] = also;
  } catch (const std::exception& e) {
    report = {{"ok", false}, {"reason", e.what()}};
  } catch (...) {
    report = {{"ok", false}, {"reason", "loading threw an exception that is not a std::exception"}};
  }
  write_all(report_fd, report.dump(-1, ' ', false, json::error_handler_t::replace));
  std::fflush(nullptr);
  ::_exit(0);
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return str_cat("signal ", sig, ": ", abbrev ? str_cat("SIG", abbrev) : std::string("unknown"));
}

// The child's verdict: its report, or a report made up from how it ended.
json run_check(const std::string& path, int timeout_s) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(str_cat("plugin check: cannot create a pipe: ", std::strerror(errno)));
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(str_cat("plugin check: cannot fork the checking process: ", std::strerror(err)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    check_in_child(path, fds[1]);
  }
  ::close(fds[1]);

  std::string data;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;  // the deadline check above ends the loop
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child is done (or dead)
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  if (timed_out) {
    return {{"ok", false},
            {"reason", str_cat("the plugin did not finish loading within ", timeout_s,
                               " s; the checking process was killed (use --timeout to wait "
                               "longer)")}};
  }
  if (WIFSIGNALED(status)) {
    return {{"ok", false},
            {"crashed", true},
            {"signal", WTERMSIG(status)},
            {"reason",
             str_cat("the plugin crashed the checking process (", signal_text(WTERMSIG(status)),
                     "); loading it into a program would crash that program")}};
  }
  if (data.empty()) {
    return {{"ok", false},
            {"reason", str_cat("the checking process ended with exit status ",
                               WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                               " before it could report: the plugin exits the process while it "
                               "loads")}};
  }
  json report = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded() || !report.is_object() || !report.contains("ok")) {
    return {{"ok", false}, {"reason", "the checking process sent an unreadable report"}};
  }
  return report;
}

std::string joined(const json& list, std::string_view none) {
  std::string out;
  for (const auto& item : list) str_append(&out, out.empty() ? "" : ", ", item.get<std::string>());
  return out.empty() ? std::string(none) : out;
}

void print_report(const std::string& path, const json& report) {
  if (!report["ok"].get<bool>()) {
    std::cout << "REFUSED " << path << "\n  " << report["reason"].get<std::string>() << "\n";
    return;
  }
  const json& p = report["plugin"];
  std::cout << "OK plugin '" << p["name"].get<std::string>() << "' "
            << p["version"].get<std::string>() << " can be loaded\n";
  Table t;
  t.add({"path", p["path"]});
  t.add({"description", p["description"].get<std::string>().empty() ? "-" : p["description"]});
  t.add({"ABI", str_cat(p["abi"].get<std::string>(), " (this Loom: ", LOOM_PLUGIN_ABI_MAJOR, ".",
                        LOOM_PLUGIN_ABI_MINOR, ")")});
  t.add({"build", p["build_info"].get<std::string>().empty() ? "-" : p["build_info"]});
  t.add({"depends on", joined(p["dependencies"], "nothing")});
  std::string also;
  for (const auto& a : report["also_loaded"]) {
    str_append(&also, also.empty() ? "" : ", ", a["name"].get<std::string>(), " (",
               a["path"].get<std::string>(), ")");
  }
  if (!also.empty()) t.add({"loaded first", also});
  t.add({"registrations", str_cat(p["registrations"].size())});
  t.print(std::cout);
  for (const auto& r : p["registrations"]) std::cout << "    " << r.get<std::string>() << "\n";
}

}  // namespace

int run_plugin_check(Args& args) {
  const bool as_json = args.take_flag("--json");
  const std::optional<std::string> timeout = args.take_option("--timeout");
  int timeout_s = 60;
  if (timeout) {
    try {
      size_t used = 0;
      timeout_s = std::stoi(*timeout, &used);
      if (used != timeout->size() || timeout_s <= 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw UsageError(
          str_cat("--timeout expects a positive number of seconds, got '", *timeout, "'"));
    }
  }
  const std::string path = args.positionals(1, 1)[0];
  json report = run_check(path, timeout_s);
  if (as_json) {
    json out = {{"checked", path}};
    for (const auto& [key, value] : report.items()) out[key] = value;
    report = std::move(out);
    std::cout << report.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    print_report(path, report);
  }
  return report["ok"].get<bool>() ? kExitOk : kExitFailure;
}

}  // namespace loom::cli
