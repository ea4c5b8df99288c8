// Generated C++ built by the system compiler and kept in a disk cache (code_cache.h).
#include "code_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "logs.h"
#include "loom/core/cpu_isa.h"
#include "loom/core/str_cat.h"
#include "loom/core/warning.h"

extern char** environ;

namespace loom::graph::detail {
namespace fs = std::filesystem;
namespace {

// Bump when generated code or its flags change meaning: old entries then miss.
constexpr int kCodegenVersion = 1;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

/// A positive number from the environment; fallback, with one warning, where it is not one.
double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end != v && *end == '\0' && x > 0) return x;
  warn(str_cat("loom::compile: ", name, "='", v, "' is not a positive number; using ", fallback));
  return fallback;
}

/// 128 bits of FNV-1a (two bases) as hex: the cache key's hash and the `.so` checksum. Not a
/// defence against forgery (the cache folder is the user's own); collisions are caught by
/// comparing the whole key text.
std::string digest(std::string_view bytes) {
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  for (unsigned char c : bytes) {
    h1 = (h1 ^ c) * 0x100000001b3ull;
    h2 = (h2 ^ c) * 0x100000001b3ull;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return buf;
}

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes bytes to a temporary name beside p, then renames it to p (atomic on one file
/// system: a reader sees the old file or the whole new one).
bool write_atomically(const fs::path& p, std::string_view bytes, const std::string& tag) {
  const fs::path tmp = p.string() + "." + tag + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) return false;
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

struct ProcessResult {
  int status = -1;  // the exit status; -1: did not start, or was killed
  bool timed_out = false;
};

/// Runs argv[0] (a path) with its output in log, killing it after timeout.
ProcessResult run_process(const std::vector<std::string>& argv, const fs::path& log,
                          std::chrono::seconds timeout) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ProcessResult result;
  if (rc != 0) return result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) return result;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

/// The compiler a name resolves to, and its `--version` line (the key holds both).
struct Compiler {
  std::string path;     // empty: none found
  std::vector<std::string> words;  // further words of the setting ("ccache g++": "g++")
  std::string version;  // first line of `--version`
  std::string problem;  // why there is none
};

Compiler find_compiler(const std::string& setting, const fs::path& scratch) {
  Compiler c;
  // A setting may hold words, as CXX often does ("ccache g++", "g++ -m64"): the first is the
  // program, the others its first arguments.
  std::istringstream words(setting);
  std::string name;
  words >> name;
  for (std::string w; words >> w;) c.words.push_back(w);
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) c.path = name;
  } else if (!name.empty()) {
    std::istringstream path(env_or("PATH", "/usr/bin:/bin"));
    for (std::string dir; std::getline(path, dir, ':');) {
      const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
      if (access(p.c_str(), X_OK) == 0 && !fs::is_directory(p)) {
        c.path = p.string();
        break;
      }
    }
  }
  if (c.path.empty()) {
    c.problem = str_cat("no C++ compiler found ('", name,
                        "' is not an executable file or on PATH; set LOOM_CXX)");
    return c;
  }
  const fs::path log = scratch / str_cat("version.", getpid(), ".log");
  std::vector<std::string> argv = {c.path};
  argv.insert(argv.end(), c.words.begin(), c.words.end());
  argv.push_back("--version");
  const ProcessResult r = run_process(argv, log, std::chrono::seconds(30));
  const std::string text = read_file(log).value_or("");
  std::error_code ec;
  fs::remove(log, ec);
  if (r.status != 0) {
    c.problem = str_cat("the C++ compiler '", c.path, "' failed to report its version");
    c.path.clear();
    return c;
  }
  c.version = text.substr(0, text.find('\n'));
  return c;
}

/// The compiler for LOOM_CXX / CXX / c++, found once per name.
Compiler compiler(const fs::path& scratch) {
  static std::mutex mu;
  static absl::flat_hash_map<std::string, Compiler> found;
  const std::string name = env_or("LOOM_CXX", env_or("CXX", "c++"));
  std::lock_guard<std::mutex> lock(mu);
  auto it = found.find(name);
  if (it == found.end()) it = found.emplace(name, find_compiler(name, scratch)).first;
  return it->second;
}

/// The flags of cmake/LoomIsa.cmake for the level the eager kernels use.
std::vector<std::string> flags() {
  std::vector<std::string> f = {"-O3",      "-std=c++17",        "-fPIC",          "-shared",
                                "-fopenmp", "-ffp-contract=off", "-fno-math-errno"};
  switch (cpu::isa()) {
    case cpu::Isa::avx512:
      for (const char* x : {"-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma",
                            "-mf16c", "-mprefer-vector-width=512"}) {
        f.push_back(x);
      }
      break;
    case cpu::Isa::avx2:
      for (const char* x : {"-mavx2", "-mfma", "-mf16c"}) f.push_back(x);
      break;
    case cpu::Isa::baseline:
      break;
  }
  return f;
}

/// The cache folder, made if missing; a private temporary folder (with one warning) when it
/// cannot be made or written.
fs::path cache_dir() {
  fs::path root;
  if (const char* d = std::getenv("LOOM_CACHE_DIR"); d != nullptr && *d != '\0') {
    root = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    root = fs::path(x) / "loom";
  } else {
    root = fs::path(env_or("HOME", "/tmp")) / ".cache" / "loom";
  }
  const fs::path dir = root / "compile";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && access(dir.c_str(), W_OK) == 0) return dir;
  static std::once_flag once;
  static fs::path fallback;
  std::call_once(once, [&] {
    fallback = fs::temp_directory_path() / str_cat("loom-compile-", getpid());
    fs::create_directories(fallback, ec);
    warn(str_cat("loom::compile: the cache folder ", dir.string(),
                 " cannot be written; compiled code goes to ", fallback.string(),
                 " for this process (set LOOM_CACHE_DIR)"));
  });
  return fallback;
}

std::string unique_tag() {
  static std::atomic<int> counter{0};
  return str_cat(getpid(), ".", counter.fetch_add(1));
}

/// Deletes least recently used entries (by `.meta` time) while the `.so` files pass the
/// limit; `keep` is the entry just written. Under a lock file, so that two processes do not
/// count each other's deletions twice; readers take no lock (a mapped `.so` stays valid).
void prune(const fs::path& dir, const fs::path& keep) {
  const double limit_mb = env_number("LOOM_CACHE_MAX_MB", 1024);
  const int lock = open((dir / ".lock").c_str(), O_RDWR | O_CREAT, 0644);
  if (lock < 0) return;
  flock(lock, LOCK_EX);
  struct Entry {
    fs::file_time_type used;
    fs::path meta, so;
    uintmax_t bytes;
  };
  std::vector<Entry> entries;
  uintmax_t total = 0;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    if (f.path().extension() != ".so") continue;
    Entry e{{}, fs::path(f.path()).replace_extension(".meta"), f.path(), f.file_size(ec)};
    e.used = fs::last_write_time(e.meta, ec);
    total += e.bytes;
    entries.push_back(e);
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (static_cast<double>(total) <= limit_mb * 1024 * 1024) break;
    if (e.so == keep) continue;
    fs::remove(e.meta, ec);
    fs::remove(e.so, ec);
    total -= e.bytes;
  }
  flock(lock, LOCK_UN);
  close(lock);
}

std::shared_ptr<CodeLibrary> load(const fs::path& so, std::string* error) {
  try {
    auto lib = std::make_shared<CodeLibrary>();
    lib->library.load(so, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    lib->path = so.string();
    return lib;
  } catch (const std::exception& e) {
    *error = str_cat("cannot load ", so.string(), ": ", e.what());
    return nullptr;
  }
}

/// The first n lines of text.
std::string first_lines(const std::string& text, int n) {
  size_t end = 0;
  for (int i = 0; i < n && end != std::string::npos; ++i) {
    end = text.find('\n', end == 0 ? 0 : end + 1);
  }
  return end == std::string::npos ? text : text.substr(0, end);
}

}  // namespace

CodeBuild build_or_load(const std::string& source) {
  CodeBuild out;
  const fs::path dir = cache_dir();
  const Compiler cxx = compiler(dir);
  if (cxx.path.empty()) {
    out.no_compiler = true;
    out.error = cxx.problem;
    return out;
  }
  const std::vector<std::string> f = flags();
  std::string key = str_cat("loom-compile ", kCodegenVersion, "\nloom ", LOOM_VERSION_STRING,
                            "\ncompiler ", cxx.path, "\nversion ", cxx.version, "\nflags");
  for (const std::string& x : cxx.words) key = str_cat(key, " ", x);  // before the flags
  for (const std::string& x : f) key += " " + x;
  key += "\n--\n" + source;
  const std::string hash = digest(key);
  const fs::path so = dir / (hash + ".so"), meta = dir / (hash + ".meta");

  // A hit: the key text matches and the library's size and checksum are the recorded ones.
  if (const auto m = read_file(meta)) {
    std::istringstream in(*m);
    std::string header, size_line, sum_line;
    std::getline(in, header);
    std::getline(in, size_line);
    std::getline(in, sum_line);
    const std::string rest = m->substr(std::min(m->size(), static_cast<size_t>(in.tellg())));
    const auto bytes = read_file(so);
    std::string why;
    if (header != "loom-compile-cache 1" || rest != key) {
      why = "its key differs";
    } else if (!bytes) {
      why = "its library is missing";
    } else if (size_line != str_cat("size ", bytes->size()) ||
               sum_line != str_cat("checksum ", digest(*bytes))) {
      why = "its library's size or checksum differs";
    }
    if (why.empty()) {
      std::error_code ec;
      fs::last_write_time(meta, fs::file_time_type::clock::now(), ec);  // recently used
      out.library = load(so, &out.error);
      out.cache_hit = out.library != nullptr;
      if (out.library) return out;
    } else {
      std::fprintf(stderr, "[loom compile] cache entry %s is stale or corrupt (%s); rebuilding\n",
                   hash.c_str(), why.c_str());
    }
    std::error_code ec;
    fs::remove(meta, ec);
  }

  // A miss: compile beside the entry, then rename the library in and commit with the meta.
  const std::string tag = unique_tag();
  const fs::path src = dir / str_cat(hash, ".", tag, ".cpp");
  const fs::path tmp_so = dir / str_cat(hash, ".", tag, ".so.tmp");
  const fs::path log = dir / str_cat(hash, ".", tag, ".log");
  if (!write_atomically(src, source, tag)) {
    out.error = str_cat("cannot write ", src.string());
    return out;
  }
  std::vector<std::string> argv = {cxx.path};
  argv.insert(argv.end(), cxx.words.begin(), cxx.words.end());
  argv.insert(argv.end(), f.begin(), f.end());
  argv.insert(argv.end(), {"-o", tmp_so.string(), src.string()});
  const auto timeout =
      std::chrono::seconds(static_cast<int64_t>(env_number("LOOM_COMPILE_TIMEOUT", 120)));
  const ProcessResult r = run_process(argv, log, timeout);
  std::error_code ec;
  if (r.status != 0) {
    const fs::path kept = dir / (hash + ".failed.cpp");
    fs::rename(src, kept, ec);
    out.error = r.timed_out ? str_cat("the C++ compiler ran past ", timeout.count(),
                                      " s (LOOM_COMPILE_TIMEOUT) on ", kept.string())
                            : str_cat("the C++ compiler failed (exit status ", r.status, ") on ",
                                      kept.string(), "; its first lines:\n",
                                      first_lines(read_file(log).value_or(""), 20));
    fs::remove(log, ec);
    fs::remove(tmp_so, ec);
    return out;
  }
  fs::remove(src, ec);
  fs::remove(log, ec);
  const auto bytes = read_file(tmp_so);
  if (!bytes) {
    out.error = str_cat("the C++ compiler wrote no ", tmp_so.string());
    return out;
  }
  fs::rename(tmp_so, so, ec);
  if (ec || !write_atomically(meta,
                              str_cat("loom-compile-cache 1\nsize ", bytes->size(), "\nchecksum ",
                                      digest(*bytes), "\n", key),
                              tag)) {
    fs::remove(tmp_so, ec);
    out.error = str_cat("cannot write the cache entry ", so.string());
    return out;
  }
  prune(dir, so);
  out.library = load(so, &out.error);
  return out;
}

bool compiler_found() { return !compiler(cache_dir()).path.empty(); }

}  // namespace loom::graph::detail
