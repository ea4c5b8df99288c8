// Profiling a program from outside (Note [Profiling a program from outside] in
// loom/profiler/profiler.h): LOOM_PROFILE=<folder> starts a profiler as libloom_core loads,
// a thread rewrites the trace from a snapshot every LOOM_PROFILE_FLUSH_SECONDS, and an exit
// handler writes the final trace and tables. `loom profile -- CMD` sets the variables.

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "loom/core/warning.h"
#include "loom/profiler/profiler.h"

namespace loom::profiler {

// report.cpp: writes text to path through a temporary file renamed into place.
void write_text_atomically(const std::string& path, const std::string& text);

namespace {

struct EnvironmentProfiler {
  std::string dir;
  double interval = 1.0;
  bool shapes = false;  // LOOM_PROFILE_SHAPES=1
  std::thread flusher;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

EnvironmentProfiler* g_env = nullptr;

std::string tables(const Profile& p, bool shapes) {
  std::string out = "By op:\n" + p.table(GroupBy::Op, 40) + "\nBy op and provider:\n" +
                    p.table(GroupBy::Provider, 40);
  if (shapes) out += "\nBy op and input shapes:\n" + p.table(GroupBy::OpAndShapes, 40);
  return out;
}

void flush_loop(EnvironmentProfiler* env) {
  std::unique_lock<std::mutex> lock(env->mu);
  while (!env->done) {
    env->cv.wait_for(lock, std::chrono::duration<double>(env->interval));
    if (env->done) break;
    lock.unlock();
    try {
      if (is_recording()) snapshot().export_chrome_trace(env->dir + "/trace.json");
    } catch (const std::exception&) {
      // Best effort: the final write at exit reports a failure.
    }
    lock.lock();
  }
}

void finish_at_exit() {
  EnvironmentProfiler* env = g_env;
  if (env == nullptr) return;
  if (env->flusher.joinable()) {
    {
      std::lock_guard<std::mutex> lock(env->mu);
      env->done = true;
    }
    env->cv.notify_all();
    env->flusher.join();
  }
  try {
    if (!is_recording()) return;
    const Profile p = stop();
    p.export_chrome_trace(env->dir + "/trace.json");
    write_text_atomically(env->dir + "/profile.txt", tables(p, env->shapes));
  } catch (const std::exception& e) {
    warn(std::string("LOOM_PROFILE: ") + e.what());
  }
}

void start_from_environment() {
  const char* dir = std::getenv("LOOM_PROFILE");
  if (dir == nullptr || *dir == '\0') return;
  auto* env = new EnvironmentProfiler;  // lives until exit
  env->dir = dir;
  if (const char* s = std::getenv("LOOM_PROFILE_FLUSH_SECONDS")) {
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    if (end != s && v >= 0) env->interval = v;
  }
  std::error_code ec;
  std::filesystem::create_directories(env->dir, ec);
  if (ec) {
    warn("LOOM_PROFILE=" + env->dir + ": cannot make the folder: " + ec.message() +
         "; not profiling");
    return;
  }
  try {
    const char* shapes = std::getenv("LOOM_PROFILE_SHAPES");
    env->shapes = shapes != nullptr && std::string(shapes) == "1";
    start(ProfilerOptions{.record_shapes = env->shapes});
  } catch (const std::exception& e) {
    warn(std::string("LOOM_PROFILE: ") + e.what());
    return;
  }
  g_env = env;
  std::atexit(&finish_at_exit);
  if (env->interval > 0) env->flusher = std::thread(&flush_loop, env);
}

// As libloom_core loads (Note [Profiling a program from outside]).
const bool g_started = (start_from_environment(), true);

}  // namespace

std::string environment_profile_dir() { return g_env != nullptr ? g_env->dir : std::string(); }

}  // namespace loom::profiler
