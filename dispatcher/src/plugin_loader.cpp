#include "loom/dispatcher/plugin_loader.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "loom/autograd/derivative.h"
#include "loom/dispatcher/plugin.h"

namespace loom {
namespace detail {
PluginContext* exchange_opening_plugin(PluginContext* ctx);
}

namespace fs = std::filesystem;

namespace {
struct LoadedPlugin {
  PluginInfo info;
  const LoomPluginManifest* manifest = nullptr;
  boost::dll::shared_library lib;
  std::unique_ptr<PluginContext> ctx;  // declared after lib, so destroyed before it: its
                                       // registrations hold code that lives in lib
};

bool valid_plugin_name(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

// How the loader describes a throw of something that is not a std::exception (an int, a
// plugin's own type) from plugin code: all it can know.
constexpr const char* kNonStandardException =
    "a non-standard exception (not derived from std::exception)";

bool is_explicit_path(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.ends_with(".so");
}

// Note [Resident plugin files]: dlclose does not always unmap a file. A plugin that
// defines a GNU unique symbol (g++ emits them for function-local statics of inline
// std:: templates; std::to_string is enough) or was linked with -z nodelete stays in
// memory after its last dlclose, and the next dlopen of it returns the resident copy
// without running its static initialisers again. Those initialisers are what queue the
// plugin's LOOM_LIBRARY blocks and on-load hooks (Note [Deferred plugin registration]),
// so a reload would register nothing and still report success. The loader therefore
// remembers, per file, what its initialisers queued when they did run, and replays that
// when it opens a file that was already resident. The block and hook pointers stay valid
// because the file never left memory. A file resident without such a record was loaded
// outside the loader (its blocks ran as static registrations), and is refused.

// True if the file is mapped into the process right now (dlopen would not initialise it).
bool is_resident(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

// What a file's static initialisers queued (Note [Resident plugin files]).
struct DeferredRegistrations {
  std::vector<detail::LibraryBlock> blocks;
  std::vector<void (*)(PluginContext&)> on_load;
};
using DeferredByFile = std::map<std::string, DeferredRegistrations>;

// Drops a plugin (unloaded, or whose load failed): registrations first, then its retired
// kernels, then the file. Forgets what the file queued once it has really left memory, as
// its block pointers would dangle and a later dlopen runs its initialisers afresh.
// Note [Unload keeps code mapped]: unloading a plugin that loaded successfully undoes its
// registrations but keeps its file mapped until exit. Objects it made may outlive its
// registrations (a tensor whose memory has a deleter in the plugin, a generator, autograd
// metadata), and closing the file would turn them into dangling code pointers: a crash in
// the host, which a plugin must never cause. A refused load, which registered nothing that
// survived, is closed at once. Reloading a parked file replays its queued registrations
// (Note [Resident plugin files]).
void discard(std::unique_ptr<PluginContext>& ctx, boost::dll::shared_library& lib,
             const std::string& name, const std::string& path, DeferredByFile& deferred,
             std::vector<boost::dll::shared_library>* park = nullptr) {
  if (ctx) ctx->clear();
  if (!name.empty()) Dispatcher::instance().release_retired(name);
  ctx.reset();
  if (park) {
    park->push_back(std::move(lib));
    return;
  }
  lib.unload();
  if (!is_resident(path)) deferred.erase(path);
}

// Note [Checking a plugin file before dlopen]: the dynamic linker trusts the file it maps.
// A truncated library (a copy cut short, a full disk during an install) still has a valid
// ELF header, but its segments reach past the end of the file; dlopen maps them anyway, and
// the first touch of a page past the end (applying relocations, inside dlopen) raises
// SIGBUS, which ends the process before anyone can say which file did it. Other files named
// like a plugin fail less violently but unhelpfully: a FIFO blocks in open, a directory or a
// library for another machine gets the linker's terse words. So before dlopen the loader
// reads the ELF header and the program headers itself, with pread (an mmap of the file would
// fault the same way), and refuses, with the reason, what dlopen could not map safely: both
// header tables and every segment's bytes must lie inside the file. What the linker checks
// beyond that (dynamic section, symbol versions) fails with an error, not a signal. A file
// cut short between this check and dlopen is not caught: that is a race with whoever writes
// the plugin folder, which no reader can close.

// This process's ELF identity, fixed when Loom is compiled.
constexpr unsigned kHostClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
constexpr unsigned kHostData =
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
#if defined(__x86_64__)
constexpr unsigned kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kHostMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr unsigned kHostMachine = EM_PPC64;
#elif defined(__riscv)
constexpr unsigned kHostMachine = EM_RISCV;
#elif defined(__s390x__)
constexpr unsigned kHostMachine = EM_S390;
#elif defined(__i386__)
constexpr unsigned kHostMachine = EM_386;
#elif defined(__arm__)
constexpr unsigned kHostMachine = EM_ARM;
#else
constexpr unsigned kHostMachine = EM_NONE;  // not known here: dlopen judges the machine
#endif
using Ehdr = std::conditional_t<kHostClass == ELFCLASS64, Elf64_Ehdr, Elf32_Ehdr>;
using Phdr = std::conditional_t<kHostClass == ELFCLASS64, Elf64_Phdr, Elf32_Phdr>;
using Shdr = std::conditional_t<kHostClass == ELFCLASS64, Elf64_Shdr, Elf32_Shdr>;

std::string machine_name(unsigned machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_AARCH64:
      return "AArch64";
    case EM_386:
      return "32-bit x86";
    case EM_ARM:
      return "32-bit ARM";
    case EM_PPC64:
      return "64-bit PowerPC";
    case EM_RISCV:
      return "RISC-V";
    case EM_S390:
      return "IBM Z";
    case EM_CUDA:
      return "an NVIDIA GPU";
    default:
      return "an unknown machine";
  }
}

std::string elf_type_name(unsigned type) {
  switch (type) {
    case ET_REL:
      return "a relocatable object file (.o)";
    case ET_EXEC:
      return "an executable";
    case ET_CORE:
      return "a core dump";
    default:
      return loom::str_cat("an ELF file of type ", type);
  }
}

std::string segment_name(size_t index, unsigned type) {
  const char* name = type == PT_LOAD      ? "PT_LOAD"
                     : type == PT_DYNAMIC ? "PT_DYNAMIC"
                     : type == PT_INTERP  ? "PT_INTERP"
                     : type == PT_NOTE    ? "PT_NOTE"
                                          : nullptr;
  return name ? loom::str_cat("segment ", index, " (", name, ")")
              : loom::str_cat("segment ", index, " (type 0x", absl::Hex(type), ")");
}

// What check_plugin_file() found. Broken files are refused. A folder scan passes over the
// other two without counting them as failures: a folder is no plugin, and a library for
// another machine (in a plugin folder shared by several kinds of machine) is some other
// machine's plugin; a later folder of the search path may hold this machine's file.
struct FileCheck {
  enum class Verdict { Loadable, NotAFile, OtherMachine, Broken };
  Verdict verdict = Verdict::Loadable;
  std::string reason;  // empty when Loadable

  bool loadable() const { return verdict == Verdict::Loadable; }
  bool passed_over() const {
    return verdict == Verdict::NotAFile || verdict == Verdict::OtherMachine;
  }
};

FileCheck broken(std::string why) { return {FileCheck::Verdict::Broken, std::move(why)}; }
FileCheck other_machine(std::string why) {
  return {FileCheck::Verdict::OtherMachine, std::move(why)};
}

// Reads n bytes at offset, fewer at the end of the file; -1 (errno set) on an I/O error.
ssize_t read_at(int fd, void* buffer, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got =
        ::pread(fd, static_cast<char*>(buffer) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return static_cast<ssize_t>(done);
}

template <typename T>
bool read_struct(int fd, T* out, uint64_t offset) {
  return read_at(fd, out, sizeof(T), offset) == static_cast<ssize_t>(sizeof(T));
}

// True if count entries of entry_size bytes from offset lie inside a file of size bytes.
bool inside(uint64_t offset, uint64_t count, uint64_t entry_size, uint64_t size) {
  return offset <= size && (entry_size == 0 || count <= (size - offset) / entry_size);
}

FileCheck truncated(uint64_t size, std::string_view what, uint64_t offset, uint64_t length) {
  return broken(loom::str_cat("it is truncated: ", what, " takes bytes ", offset, " to ",
                              offset + length, ", but the file has only ", size,
                              " (loading it would kill the process with SIGBUS)"));
}

FileCheck unreadable(std::string_view what) {
  return broken(loom::str_cat("its ", what, " cannot be read: ", std::strerror(errno)));
}

// The identification bytes: an ELF file of this process's class and byte order.
FileCheck check_elf_ident(int fd, uint64_t size) {
  unsigned char ident[EI_NIDENT] = {};
  const ssize_t n = read_at(fd, ident, sizeof(ident), 0);
  if (n < 0) return unreadable("first bytes");
  if (n < SELFMAG || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return broken("it is not a shared library (no ELF header)");
  }
  if (static_cast<uint64_t>(n) < sizeof(ident)) {
    return truncated(size, "the ELF identification", 0, sizeof(ident));
  }
  const auto bits = [](unsigned c) -> std::string {
    return c == ELFCLASS64 ? "64-bit" : c == ELFCLASS32 ? "32-bit" : "";
  };
  const auto order = [](unsigned d) -> std::string {
    return d == ELFDATA2LSB ? "little-endian" : d == ELFDATA2MSB ? "big-endian" : "";
  };
  const unsigned cls = ident[EI_CLASS], data = ident[EI_DATA], version = ident[EI_VERSION];
  if (bits(cls).empty()) {
    return broken(loom::str_cat("its ELF header is invalid (class ", cls, ")"));
  }
  if (cls != kHostClass) {
    return other_machine(
        loom::str_cat("it is a ", bits(cls), " library, and this process is ", bits(kHostClass)));
  }
  if (order(data).empty()) {
    return broken(loom::str_cat("its ELF header is invalid (data encoding ", data, ")"));
  }
  if (data != kHostData) {
    return other_machine(
        loom::str_cat("it is a ", order(data), " library, and this process is ", order(kHostData)));
  }
  if (version != EV_CURRENT) {
    return broken(loom::str_cat("its ELF header is invalid (version ", version, ")"));
  }
  return {};
}

// The header tables and segments of Note [Checking a plugin file before dlopen], in a file
// whose identification bytes check_elf_ident() accepted.
FileCheck check_elf_layout(int fd, uint64_t size) {
  Ehdr eh;
  if (size < sizeof(eh)) return truncated(size, "the ELF header", 0, sizeof(eh));
  if (!read_struct(fd, &eh, 0)) return unreadable("ELF header");
  if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine) {
    return other_machine(loom::str_cat("it is built for ", machine_name(eh.e_machine),
                                       " (e_machine ", eh.e_machine, "), and this process runs on ",
                                       machine_name(kHostMachine), " (e_machine ", kHostMachine,
                                       ")"));
  }
  if (eh.e_type != ET_DYN) {
    return broken(loom::str_cat("it is ", elf_type_name(eh.e_type), ", not a shared library"));
  }
  uint64_t segment_count = eh.e_phnum;
  uint64_t section_count = eh.e_shnum;
  if (eh.e_shoff != 0 && eh.e_shentsize != sizeof(Shdr)) {
    return broken(loom::str_cat("its ELF header is invalid (section header size ", eh.e_shentsize,
                                ", expected ", sizeof(Shdr), ")"));
  }
  // Counts too large for the ELF header live in the first section header.
  if (eh.e_shoff != 0 && (segment_count == PN_XNUM || section_count == 0)) {
    if (!inside(eh.e_shoff, 1, sizeof(Shdr), size)) {
      return truncated(size, "the section header table", eh.e_shoff, sizeof(Shdr));
    }
    Shdr first;
    if (!read_struct(fd, &first, eh.e_shoff)) return unreadable("section headers");
    if (segment_count == PN_XNUM) segment_count = first.sh_info;
    if (section_count == 0) section_count = first.sh_size;
  }
  // Program headers and segments: what dlopen maps, hence what would raise SIGBUS.
  if (segment_count == 0) return broken("it has no program headers (nothing to load)");
  if (eh.e_phentsize != sizeof(Phdr)) {
    return broken(loom::str_cat("its ELF header is invalid (program header size ", eh.e_phentsize,
                                ", expected ", sizeof(Phdr), ")"));
  }
  if (!inside(eh.e_phoff, segment_count, sizeof(Phdr), size)) {
    return truncated(size, "the program header table", eh.e_phoff, segment_count * sizeof(Phdr));
  }
  for (uint64_t i = 0; i < segment_count; ++i) {
    Phdr ph;
    if (!read_struct(fd, &ph, eh.e_phoff + i * sizeof(Phdr))) return unreadable("program headers");
    if (ph.p_filesz != 0 && !inside(ph.p_offset, ph.p_filesz, 1, size)) {
      return truncated(size, segment_name(i, ph.p_type), ph.p_offset, ph.p_filesz);
    }
  }
  // The section header table: the linker never reads it, but a file cut anywhere before its
  // end is a damaged copy, and a damaged copy is not loaded.
  if (eh.e_shoff != 0 && !inside(eh.e_shoff, section_count, sizeof(Shdr), size)) {
    return truncated(size, "the section header table", eh.e_shoff, section_count * sizeof(Shdr));
  }
  return {};
}

std::string file_kind(fs::file_type type) {
  switch (type) {
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::character:
      return "a character device";
    default:
      return "not a regular file";
  }
}

// Whether path is a file dlopen can open safely, and if not, why (Note [Checking a plugin
// file before dlopen]).
FileCheck check_plugin_file(const fs::path& path) {
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(path, ec);
  if (!fs::exists(link)) return broken("no such file");
  const fs::file_status target = fs::status(path, ec);
  if (fs::is_symlink(link) && !fs::exists(target)) {
    const fs::path to = fs::read_symlink(path, ec);
    return broken(
        loom::str_cat("it is a symbolic link to '", to.string(), "', which does not exist"));
  }
  if (fs::is_directory(target)) {
    return {FileCheck::Verdict::NotAFile, "it is a directory, not a plugin file"};
  }
  if (!fs::is_regular_file(target)) {
    return {FileCheck::Verdict::NotAFile,
            loom::str_cat("it is ", file_kind(target.type()), ", not a plugin file")};
  }
  // O_NONBLOCK: should the path have become a FIFO since the status above, open must not
  // wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return broken(loom::str_cat("it cannot be read: ", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st = {};
  if (::fstat(fd, &st) != 0) {
    return broken(loom::str_cat("it cannot be read: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return {FileCheck::Verdict::NotAFile, "it is not a regular file"};
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return broken("it is empty (0 bytes)");
  if (FileCheck c = check_elf_ident(fd, size); !c.loadable()) return c;
  return check_elf_layout(fd, size);
}

// The file of the plugin named name: libloom_<name>.so in the first folder of dirs that has
// one this process can load. Folders and other machines' libraries of that name are passed
// over (and named if nothing else is found); a broken file is taken, so that loading it
// says what is wrong with it rather than quietly finding an older copy further on.
fs::path find_plugin_file(std::string_view name, const std::vector<std::string>& dirs) {
  const std::string file = loom::str_cat("libloom_", name, ".so");
  std::string passed_over;
  for (const auto& d : dirs) {
    const fs::path candidate = fs::path(d) / file;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(candidate, ec))) continue;
    const FileCheck check = check_plugin_file(candidate);
    if (!check.passed_over()) return candidate;
    loom::str_append(&passed_over, "; passed over '", candidate.string(), "': ", check.reason);
  }
  LOOM_THROW(PluginError, "cannot find plugin '", name, "': no ", file,
             " in the plugin search path (", absl::StrJoin(dirs, ":"),
             "); set LOOM_PLUGIN_PATH or give a path", passed_over);
}
}  // namespace

// Boost.DLL reports a failed dlopen with a generic system error ("Bad file descriptor");
// the dynamic linker's own words say what is wrong (a missing library, an undefined symbol).
std::string why_not_loadable(const std::string& path, const std::exception& boost_error) {
  if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(h);  // loadable after all: keep Boost's reason
    return boost_error.what();
  }
  const char* err = ::dlerror();
  return err ? std::string(err) : std::string(boost_error.what());
}

struct PluginLoader::Impl {
  mutable std::recursive_mutex mu;
  std::vector<std::unique_ptr<LoadedPlugin>> plugins;  // load order
  std::set<std::string> loading;                       // cycle detection
  DeferredByFile deferred_by_file;                     // Note [Resident plugin files]
  std::vector<boost::dll::shared_library> parked;      // Note [Unload keeps code mapped]
  std::map<std::string, std::string> failed_init;      // files whose initialisers threw
  std::vector<std::string> dependent_dirs;             // folders of plugins loading their deps

  LoadedPlugin* find(std::string_view name) {
    for (auto& p : plugins) {
      if (p->info.name == name) return p.get();
    }
    return nullptr;
  }
};

PluginLoader::PluginLoader() : impl_(new Impl()) {}
PluginLoader::~PluginLoader() = default;  // leaked singleton; never runs

PluginLoader& PluginLoader::instance() {
  static auto* loader = new PluginLoader();  // leaked: plugins stay loaded until exit
  return *loader;
}

std::string PluginLoader::default_plugin_dir() {
  const fs::path core = boost::dll::this_line_location().string();
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(core.parent_path() / "loom" / "plugins", ec);
  return ec ? (core.parent_path() / "loom" / "plugins").string() : dir.string();
}

std::vector<std::string> PluginLoader::search_path() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  // While a plugin's dependencies load, its own folder comes first: a set of plugins
  // shipped together in one folder finds its members without LOOM_PLUGIN_PATH.
  std::vector<std::string> dirs(impl_->dependent_dirs.rbegin(), impl_->dependent_dirs.rend());
  if (const char* env = std::getenv("LOOM_PLUGIN_PATH")) {
    for (absl::string_view d : absl::StrSplit(env, ':', absl::SkipEmpty())) dirs.emplace_back(d);
  }
  dirs.push_back(default_plugin_dir());
  return dirs;
}

PluginInfo PluginLoader::load(std::string_view name_or_path) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  fs::path path;
  const bool by_name = !is_explicit_path(name_or_path);
  // A search for plugin N that finds libloom_N.so holding another plugin found nothing.
  auto wrong_plugin = [&](const std::string& file, const std::string& actual) {
    return loom::str_cat("cannot load plugin '", name_or_path, "': the file found for it, '", file,
                         "', is plugin '", actual, "'");
  };
  if (!by_name) {
    path = fs::path(name_or_path);
    std::error_code ec;
    // Anything there (a dangling link included) is checked below, with a reason of its own.
    LOOM_CHECK_T(PluginError, fs::exists(fs::symlink_status(path, ec)), "cannot load plugin '",
                 name_or_path, "': no such file");
  } else {
    if (LoadedPlugin* p = impl_->find(name_or_path)) return p->info;
    path = find_plugin_file(name_or_path, search_path());
  }
  // One file, one identity: "dir/./libloom_x.so", "../d/libloom_x.so" and a symlink all name
  // the file dlopen would hand back again without running its initialisers, so they must
  // find the plugin already loaded from it rather than open it a second time.
  {
    std::error_code ec;
    fs::path canonical = fs::canonical(path, ec);
    path = ec ? fs::absolute(path).lexically_normal() : std::move(canonical);
  }
  const std::string where = path.string();
  for (auto& p : impl_->plugins) {
    if (p->info.path != where) continue;
    LOOM_CHECK_T(PluginError, !by_name || p->info.name == name_or_path,
                 wrong_plugin(where, p->info.name));
    return p->info;
  }
  // Note [Checking a plugin file before dlopen]: a file that would crash dlopen never gets there.
  if (const FileCheck check = check_plugin_file(path); !check.loadable()) {
    LOOM_THROW(PluginError, "cannot load plugin file '", where, "': ", check.reason);
  }

  auto ctx = std::make_unique<PluginContext>("");
  boost::dll::shared_library lib;
  const bool was_resident = is_resident(where);
  {
    // Static initialisers of the plugin run inside this call and only queue their blocks
    // (Note [Deferred plugin registration]).
    PluginContext* previous = detail::exchange_opening_plugin(ctx.get());
    if (auto f = impl_->failed_init.find(where); f != impl_->failed_init.end()) {
      detail::exchange_opening_plugin(previous);
      LOOM_THROW(PluginError, "cannot load plugin file '", where,
                 "': its static initialisers threw when it was first opened (", f->second,
                 "), which leaves a half-initialised copy in this process; restart the "
                 "process to load it again");
    }
    try {
      lib.load(where, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::system_error& e) {
      detail::exchange_opening_plugin(previous);
      LOOM_THROW(PluginError, "cannot load plugin file '", where,
                 "': ", why_not_loadable(where, e));
    } catch (const std::exception& e) {
      // Not the dynamic linker: one of the plugin's own static initialisers threw.
      detail::exchange_opening_plugin(previous);
      impl_->failed_init[where] = e.what();
      LOOM_THROW(PluginError, "cannot load plugin file '", where,
                 "': one of its static initialisers threw: ", e.what());
    } catch (...) {
      detail::exchange_opening_plugin(previous);
      impl_->failed_init[where] = "a non-standard exception";
      LOOM_THROW(PluginError, "cannot load plugin file '", where,
                 "': one of its static initialisers threw ", kNonStandardException);
    }
    detail::exchange_opening_plugin(previous);
  }
  // A parked copy of this file (unloaded earlier) is superseded by the new handle.
  std::erase_if(impl_->parked, [&](const boost::dll::shared_library& l) {
    return l.is_loaded() && l.location().string() == where;
  });
  // A failure leaves no trace: the plugin's own registrations and file go first, then the
  // dependencies this call loaded for it (newest first), which nothing else asked for.
  const size_t loaded_before = impl_->plugins.size();
  auto fail = [&](const std::string& name, std::string why) -> PluginError {
    discard(ctx, lib, name, where, impl_->deferred_by_file);
    while (impl_->plugins.size() > loaded_before) {
      const std::string dep = impl_->plugins.back()->info.name;
      try {
        unload(dep);
      } catch (const std::exception& e) {
        loom::str_append(&why, "; plugin '", dep, "', loaded for it, stays loaded: ", e.what());
        break;
      }
    }
    return PluginError(why);
  };
  // Note [Resident plugin files]: record what the initialisers queued, or replay it.
  bool loaded_elsewhere = false;
  if (!was_resident) {
    impl_->deferred_by_file[where] =
        DeferredRegistrations{ctx->pending_blocks, ctx->pending_on_load};
  } else if (auto it = impl_->deferred_by_file.find(where); it != impl_->deferred_by_file.end()) {
    ctx->pending_blocks = it->second.blocks;
    ctx->pending_on_load = it->second.on_load;
  } else {
    loaded_elsewhere = true;
  }

  if (!lib.has(LOOM_PLUGIN_ENTRY_POINT)) {
    throw fail("", loom::str_cat("'", where,
                                 "' is not a Loom plugin: it does not export the entry "
                                 "point '",
                                 LOOM_PLUGIN_ENTRY_POINT, "'"));
  }
  const LoomPluginManifest* m = nullptr;
  try {
    m = lib.get<const LoomPluginManifest*()>(LOOM_PLUGIN_ENTRY_POINT)();
  } catch (const std::exception& e) {
    throw fail("", loom::str_cat("plugin '", where, "': its entry point threw: ", e.what()));
  } catch (...) {
    throw fail(
        "", loom::str_cat("plugin '", where, "': its entry point threw ", kNonStandardException));
  }
  if (m == nullptr) {
    throw fail("", loom::str_cat("plugin '", where, "': its entry point returned no manifest"));
  }
  if (m->struct_size < offsetof(LoomPluginManifest, abi_minor) + sizeof(uint32_t)) {
    throw fail("", loom::str_cat("plugin '", where, "': its manifest is truncated (struct_size ",
                                 m->struct_size, ")"));
  }
  if (m->abi_major != LOOM_PLUGIN_ABI_MAJOR || m->abi_minor > LOOM_PLUGIN_ABI_MINOR) {
    throw fail("", loom::str_cat("plugin '", where,
                                 "': incompatible plugin ABI version (plugin: ", m->abi_major, ".",
                                 m->abi_minor, ", current: ", LOOM_PLUGIN_ABI_MAJOR, ".",
                                 LOOM_PLUGIN_ABI_MINOR, ")"));
  }
  if (m->struct_size < sizeof(LoomPluginManifest)) {
    throw fail("", loom::str_cat("plugin '", where, "': its manifest is truncated (struct_size ",
                                 m->struct_size, ", expected ", sizeof(LoomPluginManifest), ")"));
  }
  const std::string name = m->name ? m->name : "";
  if (!valid_plugin_name(name)) {
    throw fail("", loom::str_cat("plugin '", where, "': invalid plugin name '", name,
                                 "' in its manifest (letters, digits, '_', '-', '.')"));
  }
  if (by_name && name != name_or_path) throw fail("", wrong_plugin(where, name));
  if (LoadedPlugin* other = impl_->find(name)) {
    throw fail("", loom::str_cat("plugin '", where, "': a plugin named '", name,
                                 "' is already loaded from '", other->info.path, "'"));
  }
  if (loaded_elsewhere) {
    throw fail("", loom::str_cat("plugin '", name, "' (", where,
                                 "): the file is already in the "
                                 "process without having been loaded as a plugin (linked in, or "
                                 "opened with dlopen directly), so its registrations ran at "
                                 "start-up and cannot be managed by the plugin loader"));
  }
  if (m->register_plugin == nullptr) {
    throw fail("", loom::str_cat("plugin '", name, "' (", where,
                                 "): its manifest has no register function"));
  }

  PluginInfo info;
  info.name = name;
  info.version = m->version ? m->version : "";
  info.description = m->description ? m->description : "";
  info.path = where;
  info.build_info = m->build_info ? m->build_info : "";
  info.abi_major = m->abi_major;
  info.abi_minor = m->abi_minor;
  for (const char* const* d = m->dependencies; d && *d; ++d) {
    // A dependency is a plugin name: a path here would load a file whose name nobody checks,
    // and unload() could not see that the dependency is still needed.
    if (!valid_plugin_name(*d) || is_explicit_path(*d)) {
      throw fail("", loom::str_cat("plugin '", name, "' (", where, "): invalid dependency '", *d,
                                   "' in its manifest (a plugin name, not a file: letters, "
                                   "digits, '_', '-', '.')"));
    }
    info.dependencies.emplace_back(*d);
  }

  if (impl_->loading.count(name)) {
    throw fail("", loom::str_cat("plugin '", name, "': circular dependency"));
  }
  {
    impl_->loading.insert(name);
    struct Done {
      std::set<std::string>& loading;
      const std::string& name;
      ~Done() { loading.erase(name); }
    } done{impl_->loading, name};
    for (const std::string& dep : info.dependencies) {
      if (impl_->find(dep)) continue;
      impl_->dependent_dirs.push_back(path.parent_path().string());
      try {
        load(dep);  // by name: what it loads is named dep
        impl_->dependent_dirs.pop_back();
      } catch (const std::exception& e) {
        impl_->dependent_dirs.pop_back();
        throw fail("", loom::str_cat("plugin '", name, "' (", where, ") requires plugin '", dep,
                                     "', which is not loaded and could not be loaded: ", e.what()));
      }
    }
  }

  // Register; a failure rolls everything back.
  ctx = [&] {
    auto named = std::make_unique<PluginContext>(name);
    named->pending_blocks = std::move(ctx->pending_blocks);
    named->pending_on_load = std::move(ctx->pending_on_load);
    return named;
  }();
  char error[4096] = {0};
  int rc = 0;
  try {
    rc = m->register_plugin(reinterpret_cast<LoomPluginContext*>(ctx.get()), error, sizeof(error));
  } catch (const std::exception& e) {
    rc = 1;
    std::snprintf(error, sizeof(error), "%s", e.what());
  } catch (...) {
    rc = 1;
    std::snprintf(error, sizeof(error), "its register function threw %s", kNonStandardException);
  }
  error[sizeof(error) - 1] = '\0';  // a C plugin may fill the buffer without terminating it
  if (rc != 0) {
    throw fail(name, loom::str_cat("plugin '", name, "' (", where,
                                   ") failed to register, and everything it registered was "
                                   "rolled back: ",
                                   error[0] ? error : "no reason given"));
  }
  info.registrations = ctx->log();
  auto rec = std::make_unique<LoadedPlugin>();
  rec->info = info;
  rec->manifest = m;
  rec->ctx = std::move(ctx);
  rec->lib = std::move(lib);
  impl_->plugins.push_back(std::move(rec));
  return info;
}

std::vector<PluginFailure> PluginLoader::load_all(std::vector<PluginFailure>* skipped) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  std::vector<PluginFailure> failures;
  auto skip = [&](const fs::path& entry, std::string why) {
    if (skipped) skipped->push_back(PluginFailure{entry.string(), std::move(why)});
  };
  std::map<std::string, std::string> taken;  // plugin name -> the file that provides it
  for (const auto& dir : search_path()) {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      entries.push_back(it->path());
    }
    std::sort(entries.begin(), entries.end());
    for (const fs::path& entry : entries) {
      const std::string file = entry.filename().string();
      if (!file.starts_with("libloom_") || !file.ends_with(".so") || file.size() <= 11) {
        skip(entry, fs::is_directory(entry, ec)
                        ? "a folder: plugin folders are not searched into"
                        : "not a plugin file name (plugins are named libloom_<name>.so)");
        continue;
      }
      // Note [Checking a plugin file before dlopen]: folders and other machines' libraries
      // are no plugin for this process, and leave the name to a later folder.
      if (const FileCheck check = check_plugin_file(entry); check.passed_over()) {
        skip(entry, check.reason);
        continue;
      }
      const std::string name = file.substr(8, file.size() - 11);
      if (auto first = taken.find(name); first != taken.end()) {
        skip(entry, loom::str_cat("plugin '", name, "' is taken from '", first->second,
                                  "', earlier in the search path"));
        continue;
      }
      taken.emplace(name, entry.string());
      if (const LoadedPlugin* p = impl_->find(name)) {
        const fs::path canonical = fs::canonical(entry, ec);
        if (ec || canonical.string() != p->info.path) {
          skip(entry,
               loom::str_cat("plugin '", name, "' is already loaded, from '", p->info.path, "'"));
        }
        continue;
      }
      // One file's failure, whatever it throws, never stops the others.
      try {
        load(entry.string());
      } catch (const std::exception& e) {
        failures.push_back(PluginFailure{entry.string(), e.what()});
      } catch (...) {
        failures.push_back(PluginFailure{
            entry.string(), loom::str_cat("loading it threw ", kNonStandardException)});
      }
    }
  }
  return failures;
}

std::vector<PluginFailure> PluginLoader::load_all() { return load_all(nullptr); }

void PluginLoader::load_if_driver(std::string_view plugin, std::string_view device_type,
                                  const char* driver_library,
                                  std::string_view driver_name) noexcept {
  try {
    if (is_loaded(plugin)) return;
    void* driver = ::dlopen(driver_library, RTLD_LAZY | RTLD_LOCAL);
    if (driver == nullptr) {
      DeviceType::set_missing_reason(
          device_type,
          loom::str_cat("found no ", driver_name, " on this system (", driver_library,
                        " cannot be opened), so the ", plugin,
                        " plugin was not loaded; install the driver, or load the plugin with "
                        "PluginLoader::instance().load(\"",
                        plugin, "\")"));
      return;
    }
    ::dlclose(driver);
    try {
      load(plugin);
    } catch (const std::exception& e) {
      DeviceType::set_missing_reason(
          device_type, loom::str_cat("the ", plugin, " plugin could not be loaded: ", e.what()));
    }
  } catch (...) {
    // Recording a reason failed (out of memory): the device type just stays unknown.
  }
}

void PluginLoader::unload(std::string_view name) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  auto it = std::find_if(impl_->plugins.begin(), impl_->plugins.end(),
                         [&](const auto& p) { return p->info.name == name; });
  LOOM_CHECK_T(PluginError, it != impl_->plugins.end(), "cannot unload plugin '", name,
               "': it is not loaded");
  LoadedPlugin& p = **it;
  for (const auto& other : impl_->plugins) {
    const auto& deps = other->info.dependencies;
    LOOM_CHECK_T(PluginError, std::find(deps.begin(), deps.end(), name) == deps.end(),
                 "cannot unload plugin '", name, "': plugin '", other->info.name,
                 "' depends on it; unload '", other->info.name, "' first");
  }
  for (Allocator* a : p.ctx->allocators()) {
    const AllocatorStats s = a->stats();
    LOOM_CHECK_T(PluginError, s.live_blocks == 0, "cannot unload plugin '", name,
                 "': ", s.live_blocks, s.live_blocks == 1 ? " memory block (" : " memory blocks (",
                 s.allocated_bytes, " bytes) of its allocator '", a->name(), "' for device type '",
                 DeviceType{a->device_type()}.name(),
                 "' are still held by live tensors; release them first");
  }
  // Note [Graphs keep their plugin] (core/src/autograd/derivative.cpp).
  const std::string in_graphs = autograd::live_graph_nodes_of(std::string(name));
  LOOM_CHECK_T(PluginError, in_graphs.empty(), "cannot unload plugin '", name, "': ", in_graphs,
               " still use its derivative formulas; run backward and release the tensors that "
               "hold these graphs (outputs, losses) first");
  if (p.manifest->unregister_plugin) {
    try {
      p.manifest->unregister_plugin(reinterpret_cast<LoomPluginContext*>(p.ctx.get()));
    } catch (...) {
      // The plugin's own hook failed, with whatever it threw; its registrations are still
      // undone below, so the unload itself succeeds.
    }
  }
  const std::string plugin_name = p.info.name;
  std::unique_ptr<LoadedPlugin> doomed = std::move(*it);
  impl_->plugins.erase(it);
  discard(doomed->ctx, doomed->lib, plugin_name, doomed->info.path, impl_->deferred_by_file,
          &impl_->parked);
}

std::vector<PluginInfo> PluginLoader::loaded() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  std::vector<PluginInfo> out;
  for (const auto& p : impl_->plugins) out.push_back(p->info);
  return out;
}

bool PluginLoader::is_loaded(std::string_view name) const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mu);
  return impl_->find(name) != nullptr;
}

}  // namespace loom
